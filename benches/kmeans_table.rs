//! Comparison table: GPU K-Means against the f64 CPU reference over the grid
//! N ∈ {1e4, 1e5, 1e6}, D ∈ {16, 128}, K ∈ {8, 256}.
//!
//! ```text
//! cargo bench --bench kmeans_table                 # default grid for this adapter
//! cargo bench --bench kmeans_table -- --max-n 1000000 --iters 10 --ref-iters 2
//! cargo bench --bench kmeans_table -- --min-n 1000000 --max-n 1000000 --iters 2 --ref-iters 1
//! ```
//!
//! Both sides start from the same centroids (the first K rows of blob data) and run a fixed
//! number of Lloyd iterations (tol = 0), so the time per iteration is comparable. The
//! reference runs fewer iterations on big sizes (`--ref-iters`); its per-iteration time is
//! what the ratio uses. "inertia rel. diff" compares the inertia after the first iteration
//! on both sides (the same labels and centroids up to f32 rounding).
//! On a software adapter (lavapipe) the grid stops at N = 1e5 unless `--max-n` says otherwise.

use std::time::Instant;

use wgpu_unsupervised::reference::kmeans as refk;
use wgpu_unsupervised::{datasets, Gpu, GpuMatrix, KMeans, KMeansInit, Matrix};

struct Options {
    min_n: usize,
    max_n: Option<usize>,
    iters: usize,
    ref_iters: usize,
}

fn options() -> Options {
    let mut o = Options {
        min_n: 0,
        max_n: None,
        iters: 10,
        ref_iters: 2,
    };
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < args.len() {
        let value = || args.get(i + 1).and_then(|v| v.parse::<usize>().ok());
        match args[i].as_str() {
            "--max-n" => o.max_n = value(),
            "--min-n" => o.min_n = value().unwrap_or(0),
            "--iters" => o.iters = value().unwrap_or(o.iters).max(1),
            "--ref-iters" => o.ref_iters = value().unwrap_or(o.ref_iters).max(1),
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
    let max_n = opts
        .max_n
        .unwrap_or(if software { 100_000 } else { 1_000_000 });
    println!("adapter: {}", gpu.info());
    println!(
        "fixed {} Lloyd iterations from the same centroids; reference (f64, 1 thread): {} iteration(s)",
        opts.iters, opts.ref_iters
    );
    println!();
    println!("| N | D | K | GPU fit s | GPU ms/iter | reference ms/iter | speed-up | inertia rel. diff |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &n in &[10_000usize, 100_000, 1_000_000] {
        if n > max_n || n < opts.min_n {
            continue;
        }
        for &d in &[16usize, 128] {
            let (x, _, _) = datasets::make_blobs(n, d, 32, 3.0, (-10.0, 10.0), 7).unwrap();
            let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
            let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            for &k in &[8usize, 256] {
                let init: Vec<f64> = x64[..k * d].to_vec();
                let params = KMeans::new(k)
                    .init(KMeansInit::Centroids(init.clone()))
                    .tol(0.0)
                    .max_iter(opts.iters);
                // Warm-up: pipelines compiled, allocations made once.
                let _ = params.clone().max_iter(1).fit(&gpu, &xg).unwrap();
                let t = Instant::now();
                let model = params.fit(&gpu, &xg).unwrap();
                let gpu_s = t.elapsed().as_secs_f64();
                // Iterations plus the final assignment pass.
                let gpu_ms_iter = gpu_s * 1e3 / (model.n_iter() + 1) as f64;

                let t = Instant::now();
                let r = refk::lloyd(&x64, d, &init, opts.ref_iters, 0.0);
                let ref_ms_iter = t.elapsed().as_secs_f64() * 1e3 / (r.n_iter + 1) as f64;
                let diff = (model.inertia_history()[0] - r.inertia_history[0]).abs()
                    / r.inertia_history[0];
                println!(
                    "| {n} | {d} | {k} | {gpu_s:.3} | {gpu_ms_iter:.2} | {ref_ms_iter:.1} | {:.1}x | {diff:.1e} |",
                    ref_ms_iter / gpu_ms_iter
                );
            }
        }
    }
}
