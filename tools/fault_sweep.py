#!/usr/bin/env python3
"""Fault-injection sweeps over whole programs (src/platform/fault.c).

Each program (an example, or one test of the suite run in its own process)
is built with BLITZ_FAULT_INJECT under ASan+UBSan+LSan. A traced run lists
the allocation and system-call sites it reaches; then, per site, one run
fails the k-th call there (allocations: k = 1..--depth; system calls: the
first, with each errno that call can really give, and cut short for reads
and writes). Each program is also run once for every N with its N-th
allocation failing, until a run makes fewer than N. A run passes when it ends: success, an error reported, or a
test's own check failing on the error it was given. It fails (a finding)
on a sanitizer report (crash, leak, undefined behaviour), a library
assertion, any other signal, or a hang past its time limit.

  fault_sweep.py --tests BIN --examples DIR [--quick] [--depth K] [--jobs J]
"""
import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys
import time

# The tests swept: whole-program paths of every layer, each backend.
TESTS = """
spawn_join_mt2 spawn_join_ct join_in_task_mt4 cancel_running_mt2 detach_running_mt2
fanout_tree_mt4 shutdown_everything_mt2 time_timeout_mt2 time_interval_ct
sync_mutex_basics sync_sem_basics sync_rwlock_writer_priority
chan_try_basics chan_close_hands_back_mt2 oneshot_basics broadcast_basics
watch_basics op_combinators_mt2 op_group_order_mt2 op_reader_writer
pool_runs_jobs_mt2 pool_await_in_task_ct
io_echo_ct_uring io_echo_ct_epoll io_echo_ct_poll
io_echo_mt4_uring io_echo_mt4_epoll io_echo_mt4_poll
io_udp_uring io_udp_epoll io_unix_uring io_unix_epoll io_half_close_uring io_half_close_epoll
io_ms_messages io_ms_eof_after_data io_recv_exact_uring io_recv_exact_poll
io_recv_buf_edges_uring io_recv_buf_edges_epoll
io_connect_refused_uring io_connect_refused_epoll io_connect_host_uring
io_serve_uring io_serve_epoll io_connect_limit_ok_uring
stream_copy_uring_mt2 stream_copy_epoll_ct stream_lines_uring_ct
stream_lines_poll_mt2 stream_sendfile_uring_mt2 stream_sendfile_epoll_ct
fs_roundtrip_mt2 fs_errors fs_ext_roundtrip_ct fs_ext_tree_ct fs_native_both_paths_ct
dns_resolve_mt2 process_output process_pipes_mt2
signal_each_listener_mt2 metrics_scrape_mt2 observe_dump_sites_mt2 observe_stall_mt2
io_uring_cancel_after_completion task_join_waker_kinds trim_after_burst_mt2
lifo_slot_task_rescued_mt2
""".split()
QUICK_TESTS = "spawn_join_mt2 chan_try_basics io_echo_ct_uring io_echo_ct_epoll".split()

# Examples that end by themselves, with their arguments (and environment).
EXAMPLES = {
    "hello": [],
    "hello BLITZ_LEAK_REPORT=1": [],
    "fanout": [],
    "file_copy": ["examples/file_copy.c", "{tmp}/file_copy.out"],
    "udp_echo": [],
    "process_pipeline": ["2000"],
}
QUICK_EXAMPLES = ["hello", "udp_echo"]

# The errnos a call can really give, by the name at its site. No EAGAIN
# from a socket's read or write: with edge-triggered readiness the kernel
# says EAGAIN only when an edge will follow, and an injected one would
# wait for an edge that never comes (a state the kernel never produces).
ERRNOS = [
    (r"\bio_uring_enter\b", ["EBUSY", "EAGAIN", "EINTR"]),
    (r"\baccept", ["EMFILE", "ENOMEM", "ECONNRESET", "EINTR"]),
    (r"\bconnect\(", ["ECONNRESET", "ENOMEM", "EINTR"]),
    (r"\b(socket|pipe2)\b", ["EMFILE", "ENOMEM"]),
    (r"\bopen\(", ["EMFILE", "ENOMEM", "EINTR"]),
    (r"\b(epoll_wait|ppoll)\b", ["EINTR", "ENOMEM"]),
    (r"\b(recv|recvmsg|read|pread)\(", ["ECONNRESET", "ENOMEM", "EINTR"]),
    (r"\b(send_nosig|sendmsg_nosig|write|pwrite)\(", ["ECONNRESET", "ENOMEM", "EINTR"]),
]
# Reads and writes that may be cut short. Not a socket receive: TCP
# returns less than asked only once its queue is empty, and the readiness
# backends rely on that (src/io/readiness.c), so a cut receive is a state
# the kernel never produces.
SHORTABLE = r"BLITZ__SYS_LEN"
NOT_SHORTABLE = r"\brecv\("

SITE_RE = re.compile(r"^blitz fault: site (\w+) (\S+)$", re.M)
INJECT_RE = re.compile(r"^blitz fault: inject (\w+) (\S+) #\d+$", re.M)


def site_line(site):
    path, _, line = site.rpartition(":")
    try:
        with open(path) as f:
            lines = f.readlines()
        n = int(line)
        return "".join(lines[n - 1:n + 1])
    except (OSError, ValueError, IndexError):
        return ""


def sys_faults(site):
    text = site_line(site)
    for pattern, errs in ERRNOS:
        if re.search(pattern, text):
            faults = list(errs)
            break
    else:
        faults = ["EINTR", "ENOMEM"]
    if re.search(SHORTABLE, text) and not re.search(NOT_SHORTABLE, text):
        faults.append("SHORT")
    return faults


ALLOC_CALL = re.compile(r"\bblitz__(malloc|calloc|alloc_aligned)\(")


def source_sites():
    """FILE:LINE of every allocation call in src/ (the line its macro
    names: the one the call's closing parenthesis is on)."""
    sites = set()
    for d, _, files in os.walk("src"):
        for f in files:
            if not f.endswith(".c") or f == "alloc.c":
                continue
            path = os.path.join(d, f)
            text = open(path).read()
            for m in ALLOC_CALL.finditer(text):
                depth, i = 0, m.end() - 1
                while i < len(text):
                    depth += {"(": 1, ")": -1}.get(text[i], 0)
                    if depth == 0:
                        break
                    i += 1
                sites.add("%s:%d" % (path, text.count("\n", 0, i) + 1))
    return sites


def site_key(site):
    path, _, line = site.rpartition(":")
    return (path, int(line))


class Program:
    def __init__(self, name, argv, timeout, env=None):
        self.name, self.argv, self.timeout, self.env = name, argv, timeout, env or {}


def run(prog, env_extra):
    env = dict(os.environ)
    env.update({"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
                "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
                "BLITZ_TEST_SCALE": "4", "BLITZ_TEST_TIMEOUT_MULT": "4"})
    env.update(prog.env)
    env.update(env_extra)
    t0 = time.time()
    try:
        p = subprocess.run(prog.argv, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=prog.timeout)
    except subprocess.TimeoutExpired as e:
        err = (e.stderr or b"").decode(errors="replace")
        return "hang", err, time.time() - t0
    err = p.stderr.decode(errors="replace")
    return classify(p.returncode, err), err, time.time() - t0


def classify(rc, err):
    if "LeakSanitizer" in err:
        return "leak"
    if "AddressSanitizer" in err or "runtime error:" in err or "ThreadSanitizer" in err:
        return "crash"
    if "Assertion" in err and "failed" in err:
        return "assert"
    if rc == 0:
        return "ok"
    if rc < 0 and rc != -6:
        return "crash"
    if "check failed" in err or rc > 0:
        return "error"  # the program or the test saw the failure and said so
    return "crash"


def sweep_every_n(prog, pool, res, limit):
    """Fails the N-th allocation of the whole program for N = 1, 2, ...
    until a run ends before making N allocations."""
    n, jobs = 1, pool._max_workers
    while n <= limit:
        batch = [(k, pool.submit(run, prog, {"BLITZ_FAULT_ALLOC": str(k)}))
                 for k in range(n, min(n + 4 * jobs, limit + 1))]
        done = False
        for k, fut in batch:
            kind, err, _ = fut.result()
            m = INJECT_RE.search(err)
            if not m and kind in ("ok", "error"):
                done = True
                continue
            if m:
                res["hit_sites"].add(("alloc", m.group(2)))
            res["outcomes"][("alloc", kind)] += 1
            res["every_n"] = k
            if kind not in ("ok", "error"):
                res["findings"].append("%s %s: alloc #%d\n    BLITZ_FAULT_ALLOC=%d %s\n%s" % (
                    prog.name, kind, k, k, " ".join(prog.argv),
                    "\n".join("      " + line for line in err.strip().splitlines()[-12:])))
        if done:
            return
        n += len(batch)


def sweep(prog, depth, syscalls, pool, every_n=0):
    kind, err, secs = run(prog, {"BLITZ_FAULT_TRACE": "1"})
    if kind != "ok":
        return {"prog": prog.name, "baseline": kind, "detail": err[-2000:]}
    sites = SITE_RE.findall(err)
    prog.timeout = max(prog.timeout, 10 * secs)
    plans = []
    for k, site in sites:
        if k == "alloc":
            for n in range(1, depth + 1):
                plans.append(("alloc", site, str(n),
                              {"BLITZ_FAULT_SITE": site, "BLITZ_FAULT_ALLOC": str(n)}))
        elif syscalls:
            for e in sys_faults(site):
                plans.append(("sys", site, e,
                              {"BLITZ_FAULT_SITE": site, "BLITZ_FAULT_SYSCALL": "1:" + e}))
    futures = [(p, pool.submit(run, prog, p[3])) for p in plans]
    res = {"prog": prog.name, "baseline": "ok", "sites": collections.Counter(k for k, _ in sites),
           "outcomes": collections.Counter(), "findings": [], "hit_sites": set(), "every_n": 0}
    if every_n:
        sweep_every_n(prog, pool, res, every_n)
    for (what, site, arg, envx), fut in futures:
        kind, err, _ = fut.result()
        injected = INJECT_RE.search(err) is not None
        if not injected and kind in ("ok", "error"):
            res["outcomes"]["not reached"] += 1
            continue
        if injected:
            res["hit_sites"].add((what, site))
        res["outcomes"][(what, kind)] += 1
        if kind not in ("ok", "error"):
            env = " ".join("%s=%s" % kv for kv in envx.items())
            res["findings"].append("%s %s: %s %s (%s)\n    %s %s\n%s" % (
                prog.name, kind, what, site, arg, env, " ".join(prog.argv),
                "\n".join("      " + line for line in err.strip().splitlines()[-12:])))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", required=True, help="the suite built with BLITZ_FAULT_INJECT")
    ap.add_argument("--examples", required=True, help="directory of fault-built examples")
    ap.add_argument("--quick", action="store_true", help="a small slice for make test")
    ap.add_argument("--depth", type=int, default=2, help="calls failed per allocation site")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-syscalls", action="store_true")
    ap.add_argument("--every-n-limit", type=int, default=3000,
                    help="largest N of the whole-program sweep")
    ap.add_argument("--only", default="", help="programs whose name contains this")
    a = ap.parse_args()
    tmp = os.path.dirname(os.path.abspath(a.tests))
    progs = []
    for name in (QUICK_EXAMPLES if a.quick else EXAMPLES):
        exe, *envs = name.split()
        argv = [os.path.join(a.examples, exe)] + [x.format(tmp=tmp) for x in EXAMPLES[name]]
        progs.append(Program("example " + name, argv, 30, dict(e.split("=") for e in envs)))
    for t in (QUICK_TESTS if a.quick else TESTS):
        progs.append(Program(t, [a.tests, t], 20))
    progs = [p for p in progs if a.only in p.name]
    depth = 1 if a.quick else a.depth
    t0 = time.time()
    total = collections.Counter()
    all_sites = {"alloc": set(), "sys": set()}
    findings, bad_base = [], []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for p in progs:
            every_n = 0 if a.quick else a.every_n_limit
            r = sweep(p, depth, not a.no_syscalls and not a.quick, pool, every_n)
            if r["baseline"] != "ok":
                bad_base.append("%s: unfaulted run %s\n%s" % (p.name, r["baseline"], r["detail"]))
                print("%-40s unfaulted run: %s" % (p.name, r["baseline"]), flush=True)
                continue
            for what, site in r["hit_sites"]:
                all_sites[what].add(site)
            total.update(r["outcomes"])
            findings += r["findings"]
            o = r["outcomes"]
            print("%-40s sites %3d alloc %3d sys  runs %4d  ok %4d  error %4d  findings %d"
                  % (p.name, r["sites"]["alloc"], r["sites"]["sys"], sum(o.values()),
                     sum(v for k, v in o.items() if k[1:] == ("ok",)),
                     sum(v for k, v in o.items() if k[1:] == ("error",)),
                     len(r["findings"])), flush=True)
            if r["every_n"]:
                print("%-40s every N-th allocation failed, N = 1..%d" % ("", r["every_n"]))
            for f in r["findings"]:
                print("  FINDING " + f, flush=True)
    print("\n%d programs, %.0f s" % (len(progs), time.time() - t0))
    print("distinct sites failed: %d allocation, %d system call"
          % (len(all_sites["alloc"]), len(all_sites["sys"])))
    for what in ("alloc", "sys"):
        kinds = {k[1]: v for k, v in total.items() if isinstance(k, tuple) and k[0] == what}
        print("%-5s failures injected: %d  (%s)" % (
            what, sum(kinds.values()), ", ".join("%s %d" % kv for kv in sorted(kinds.items()))))
    print("runs where the site was not reached again: %d" % total["not reached"])
    if not a.only and not a.quick:
        src = source_sites()
        missed = sorted(src - all_sites["alloc"], key=site_key)
        print("allocation sites in src/: %d, failed by the sweep: %d, not reached: %d"
              % (len(src), len(src & all_sites["alloc"]), len(missed)))
        for s in missed:
            print("  not reached: " + s)
    for f in bad_base + findings:
        print("FINDING " + f.splitlines()[0])
    if bad_base or findings:
        print("\n%d findings" % (len(bad_base) + len(findings)))
        return 1
    print("no crashes, leaks, assertions or hangs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
