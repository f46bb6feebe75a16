//! The fs group of blitz's `make bench-compare` on Tokio: the workloads of
//! bench/files.c (see its top comment) with tokio::fs on the 2-worker
//! multi-thread runtime, one line per benchmark in the anchor's format.
//!
//!   fs-tokio DIR [FILTER...]
//!
//! Files go in a fresh directory under DIR, removed at the end. tokio::fs
//! The runtime has its I/O and time drivers, as the anchor's (blitz's
//! always has its I/O driver). tokio::fs has no positional read, so the random reads are what tokio::fs does
//! for every call (spawn_blocking of the std call, here `read_at`); the
//! copy is tokio::fs::copy, the small files tokio::fs::write / read /
//! remove_file, the stats tokio::fs::metadata.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

const READ_BYTES: u64 = 256 << 20;
const COPY_BYTES: u64 = 1 << 30;
const BLOCK: usize = 4096;
const READS_QD1: usize = 20000;
const READS_QD64: usize = 1000;
const NFILES: usize = 10000;
const SMALL: usize = 1024;
const RUNS: usize = 5;
const COPY_RUNS: usize = 3;
const FILE_RUNS: usize = 3;

fn emit(name: &str, value: f64, unit: &str) {
    println!("bench={} value={:.4} unit={} impl=tokio", name, value, unit);
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn report(name: &str, samples: &[f64], ops: usize) {
    let s: Vec<String> = samples.iter().map(|v| format!("{:.3}", v)).collect();
    eprintln!("# {} run_ns=[{}]", name, s.join(","));
    if ops == 0 {
        emit(name, median(samples) / 1e6, "ms");
    } else {
        emit(name, median(samples) / ops as f64, "ns/op");
    }
}

fn lcg_offset(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 33) % (READ_BYTES / BLOCK as u64)) * BLOCK as u64
}

fn fill_file(path: &Path, bytes: u64) {
    let chunk: Vec<u8> = (0..1usize << 20).map(|i| (i * 131) as u8).collect();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .expect("create");
    let mut done = 0u64;
    while done < bytes {
        f.write_all_at(&chunk, done).expect("write");
        done += chunk.len() as u64;
    }
    let mut buf = vec![0u8; 1 << 20];
    done = 0;
    while done < bytes {
        f.read_exact_at(&mut buf, done).expect("read");
        done += buf.len() as u64;
    }
}

async fn reader(file: Arc<std::fs::File>, n: usize, mut seed: u64) {
    let mut buf = vec![0u8; BLOCK];
    for _ in 0..n {
        let off = lcg_offset(&mut seed);
        let f = file.clone();
        let (b, r) = tokio::task::spawn_blocking(move || {
            let r = f.read_at(&mut buf, off);
            (buf, r)
        })
        .await
        .unwrap();
        buf = b;
        assert_eq!(r.unwrap(), BLOCK);
    }
}

async fn reads(file: &Arc<std::fs::File>, tasks: usize, n: usize) -> f64 {
    let start = Instant::now();
    let hs: Vec<_> = (0..tasks)
        .map(|i| {
            let seed = (i as u64).wrapping_mul(0x9e3779b97f4a7c15).wrapping_add(1);
            tokio::spawn(reader(file.clone(), n, seed))
        })
        .collect();
    for h in hs {
        h.await.unwrap();
    }
    start.elapsed().as_nanos() as f64
}

fn small_path(dir: &Path, sub: &str, i: usize) -> PathBuf {
    dir.join(format!("{}{}", sub, i))
}

async fn smalls(dir: &Path, data: &[u8]) -> f64 {
    let start = Instant::now();
    for i in 0..NFILES {
        tokio::fs::write(small_path(dir, "s", i), data).await.unwrap();
    }
    for i in 0..NFILES {
        let got = tokio::fs::read(small_path(dir, "s", i)).await.unwrap();
        assert!(got == data);
    }
    for i in 0..NFILES {
        tokio::fs::remove_file(small_path(dir, "s", i)).await.unwrap();
    }
    start.elapsed().as_nanos() as f64
}

async fn stats(dir: &Path) -> f64 {
    let start = Instant::now();
    for i in 0..NFILES {
        let md = tokio::fs::metadata(small_path(dir, "t", i)).await.unwrap();
        assert_eq!(md.len(), 0);
    }
    start.elapsed().as_nanos() as f64
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parent = args.first().cloned().unwrap_or_else(|| "/tmp".to_string());
    let filters: Vec<String> = args.iter().skip(1).cloned().collect();
    let wanted = |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()));
    let dir = PathBuf::from(parent).join(format!("tokio_fsbench_{}", std::process::id()));
    std::fs::create_dir(&dir).expect("mkdir");
    let read = dir.join("read.dat");
    let src = dir.join("copy.src");
    let dst = dir.join("copy.dst");
    let data: Vec<u8> = (0..SMALL).map(|i| b'a' + (i % 26) as u8).collect();
    fill_file(&read, READ_BYTES);
    if wanted("fs_copy_1g") {
        fill_file(&src, COPY_BYTES);
    }
    for i in 0..NFILES {
        std::fs::File::create(small_path(&dir, "t", i)).expect("create");
    }
    let file = Arc::new(std::fs::File::open(&read).expect("open"));

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all() // as the anchor, and as #[tokio::main]
        .build()
        .unwrap();
    rt.block_on(async {
        for &(name, tasks, n) in &[("fs_read4k_qd1", 1, READS_QD1), ("fs_read4k_qd64", 64, READS_QD64)] {
            if wanted(name) {
                reads(&file, tasks, n).await;
                let mut s = Vec::new();
                for _ in 0..RUNS {
                    s.push(reads(&file, tasks, n).await);
                }
                report(name, &s, tasks * n);
            }
        }
        if wanted("fs_copy_1g") {
            let mut s = Vec::new();
            for _ in 0..COPY_RUNS {
                let _ = std::fs::remove_file(&dst);
                let start = Instant::now();
                let n = tokio::fs::copy(&src, &dst).await.unwrap();
                s.push(start.elapsed().as_nanos() as f64);
                assert_eq!(n, COPY_BYTES);
                // Untimed: the copy written back before whatever runs next.
                std::fs::File::open(&dst).unwrap().sync_all().unwrap();
            }
            report("fs_copy_1g", &s, 0);
        }
        if wanted("fs_small_files_10k") {
            let mut s = Vec::new();
            for _ in 0..FILE_RUNS {
                s.push(smalls(&dir, &data).await);
            }
            report("fs_small_files_10k", &s, NFILES);
        }
        if wanted("fs_stat_10k") {
            stats(&dir).await;
            let mut s = Vec::new();
            for _ in 0..RUNS {
                s.push(stats(&dir).await);
            }
            report("fs_stat_10k", &s, NFILES);
        }
    });
    drop(rt);
    std::fs::remove_dir_all(&dir).expect("remove the directory");
}
