#!/usr/bin/env python3
"""Shows that each model check catches a planted bug.

tests/model/mutants.txt lists the mutants, one a line:

    check ;; file under src/ ;; anchor ;; original text ;; mutated text ;; what

For each, src/ is copied to BUILD/model/mutants/N/src, the first
appearance of the original text after the anchor (a text that names the
place, usually the function's signature; "-" for the file's start) is
replaced, the
check is built against the copy and run. A mutant passes when the check
fails; this program passes only when every mutant does (and a mutant whose
text is no longer in the file is an error, so the list cannot go stale).
"""
import os
import shutil
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.environ.get("BUILD", "build")
CXX = os.environ.get("MODEL_CXX", "g++")
FLAGS = os.environ.get("MODEL_FLAGS", "-std=c++17 -O1 -w").split()


def parse(path):
    mutants = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = [p.strip() for p in line.split(" ;; ")]
            if len(parts) != 6:
                sys.exit(f"{path}:{lineno}: expected 6 fields separated by ' ;; '")
            mutants.append((lineno, *parts))
    return mutants


def main():
    os.chdir(ROOT)
    only = sys.argv[1:]
    mutants = parse("tests/model/mutants.txt")
    failures = 0
    for n, (lineno, check, file, anchor, old, new, what) in enumerate(mutants, 1):
        if only and check not in only:
            continue
        work = os.path.join(BUILD, "model", "mutants", str(n))
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree("src", os.path.join(work, "src"))
        target = os.path.join(work, "src", file)
        with open(target) as f:
            text = f.read()
        pos = 0 if anchor == "-" else text.find(anchor)
        if pos >= 0:
            pos = text.find(old, pos)
        label = f"mutant {n} ({check}: {what})"
        if pos < 0:
            print(f"not ok - {label}: text not found in src/{file} (mutants.txt:{lineno})")
            failures += 1
            continue
        with open(target, "w") as f:
            f.write(text[:pos] + new + text[pos + len(old):])
        exe = os.path.join(work, check)
        build = subprocess.run(
            ["nice", CXX, *FLAGS, "-Itests/model", "-I" + os.path.join(work, "src"),
             f"tests/model/{check}.cpp", "-o", exe],
            capture_output=True, text=True)
        if build.returncode != 0:
            print(f"not ok - {label}: does not build\n{build.stderr[-2000:]}")
            failures += 1
            continue
        run = subprocess.run([exe], capture_output=True, text=True, timeout=600)
        caught = [l for l in run.stdout.splitlines() if l.startswith("not ok")]
        if run.returncode != 0 and caught:
            print(f"ok - {label} caught: {caught[0][len('not ok - '):]}")
        else:
            print(f"not ok - {label} NOT caught")
            failures += 1
        shutil.rmtree(os.path.join(work, "src"), ignore_errors=True)
    print(f"{len(mutants) - failures if not only else 'selected'} mutants caught, {failures} not")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
