//! Comparison table: the GPU silhouette coefficient against the f64 CPU reference over the
//! grid N ∈ {1e4, 1e5}, D ∈ {16, 128} (8 blob clusters), plus the sampled estimate.
//!
//! ```text
//! cargo bench --bench silhouette_table                       # default grid for this adapter
//! cargo bench --bench silhouette_table -- --max-n 100000 --max-ref-cost 2e11
//! ```
//!
//! Options: `--min-n N`, `--max-n N` (default 1e5); `--max-full-n N` (default 1e5, but 1e4 on
//! a software adapter such as lavapipe): above it only the sampled estimate runs, the full
//! O(N²) pass is "not run"; `--max-ref-cost C` (default 2e10): the O(N² D) reference is
//! skipped, and its cells read "skipped", when N²·D exceeds C; `--sample S` (default 10000):
//! the size of the sampled silhouette of the last columns (`silhouette(.., Some(S), seed)`).
//!
//! Columns: the full GPU silhouette in seconds (data already uploaded, pipelines warm), the
//! reference in seconds, the speed-up, the largest |s_gpu(i) − s_ref(i)| over the points, and
//! the time of the sampled estimate with its difference from the full score.

use std::time::Instant;

use wgpu_unsupervised::reference::metrics as refm;
use wgpu_unsupervised::{datasets, metrics, Gpu, GpuMatrix, Matrix};

struct Options {
    min_n: usize,
    max_n: Option<usize>,
    max_ref_cost: f64,
    sample: usize,
    max_full_n: Option<usize>,
}

fn options() -> Options {
    let mut o = Options {
        min_n: 0,
        max_n: None,
        max_ref_cost: 2e10,
        sample: 10_000,
        max_full_n: None,
    };
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < args.len() {
        let value = || args.get(i + 1).and_then(|v| v.parse::<f64>().ok());
        match args[i].as_str() {
            "--min-n" => o.min_n = value().unwrap_or(0.0) as usize,
            "--max-n" => o.max_n = value().map(|v| v as usize),
            "--max-ref-cost" => o.max_ref_cost = value().unwrap_or(o.max_ref_cost),
            "--sample" => o.sample = value().unwrap_or(o.sample as f64).max(2.0) as usize,
            "--max-full-n" => o.max_full_n = value().map(|v| v as usize),
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    o
}

fn main() {
    let opts = options();
    let gpu = Gpu::new().unwrap_or_else(|e| panic!("the benchmark needs a GPU adapter: {e}"));
    let software = gpu.info().device_type == "Cpu";
    let max_n = opts.max_n.unwrap_or(100_000);
    let max_full_n = opts
        .max_full_n
        .unwrap_or(if software { 10_000 } else { 100_000 });
    println!("adapter: {}", gpu.info());
    println!(
        "reference: f64, 1 thread, skipped when N²·D > {:.0e}; sampled: {} rows",
        opts.max_ref_cost, opts.sample
    );
    println!();
    println!(
        "| N | D | GPU s | reference s | speed-up | max abs diff | sampled GPU s | sampled − full |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &n in &[10_000usize, 100_000] {
        if n > max_n || n < opts.min_n {
            continue;
        }
        for &d in &[16usize, 128] {
            let (x, labels, _) = datasets::make_blobs(n, d, 8, 4.0, (-10.0, 10.0), 7).unwrap();
            let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
            // Warm-up: pipelines compiled once.
            let _ = metrics::silhouette(&gpu, &xg, &labels, Some(256), 0).unwrap();
            let t = Instant::now();
            let sampled = metrics::silhouette(&gpu, &xg, &labels, Some(opts.sample), 1).unwrap();
            let sampled_s = t.elapsed().as_secs_f64();
            if n > max_full_n {
                // Only the sampled estimate: the full O(N²) pass is out of this adapter's reach.
                println!(
                    "| {n} | {d} | not run | not run | – | – | {sampled_s:.3} | – (score {:.4}) |",
                    sampled.score
                );
                continue;
            }
            let t = Instant::now();
            let full = metrics::silhouette(&gpu, &xg, &labels, None, 0).unwrap();
            let gpu_s = t.elapsed().as_secs_f64();
            let cost = (n * n * d) as f64;
            let (ref_cell, speed, diff) = if cost <= opts.max_ref_cost {
                let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
                let t = Instant::now();
                let want = refm::silhouette_samples(&x64, d, &labels).unwrap();
                let ref_s = t.elapsed().as_secs_f64();
                let diff = full
                    .samples
                    .iter()
                    .zip(&want)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max);
                (
                    format!("{ref_s:.3}"),
                    format!("{:.2}x", ref_s / gpu_s),
                    format!("{diff:.1e}"),
                )
            } else {
                ("skipped".into(), "–".into(), "–".into())
            };
            println!(
                "| {n} | {d} | {gpu_s:.3} | {ref_cell} | {speed} | {diff} | {sampled_s:.3} | {:+.4} |",
                sampled.score - full.score
            );
        }
    }
}
