//! Comparison table: GPU PCA against the f64 CPU reference over the grid
//! N ∈ {1e4, 1e5, 1e6}, D ∈ {64, 256, 784}, M ∈ {2, 16, 64}.
//!
//! ```text
//! cargo bench --bench pca_table                       # default grid for this adapter
//! cargo bench --bench pca_table -- --max-n 1000000 --max-work 1e13
//! ```
//!
//! The data have a geometric spectrum (feature j scaled by 0.97^j around an offset of 10), so
//! the power iteration converges in a few steps and the offset exercises the centring.
//! Columns: the covariance pass on each side; the GPU fit with the solver `Auto` picks (data
//! already uploaded); the reference fit (covariance + full f64 eigendecomposition, the same
//! for every M); the speed-up of the fit; the largest relative eigenvalue difference.
//! Sizes whose reference covariance would exceed `--max-work` multiply-adds (N·D²/2) are
//! skipped; on a software adapter the default keeps the run to minutes.

use std::time::Instant;

use wgpu_unsupervised::reference::pca as refp;
use wgpu_unsupervised::{datasets, pca, Components, Gpu, GpuMatrix, Matrix, Pca};

fn data(n: usize, d: usize) -> Vec<f32> {
    let mut x = datasets::uniform(n, d, 3);
    for (i, v) in x.iter_mut().enumerate() {
        *v = (*v - 0.5) * 0.97f32.powi((i % d) as i32) + 10.0;
    }
    x
}

fn arg(name: &str) -> Option<f64> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
}

fn main() {
    let gpu = Gpu::new().unwrap_or_else(|e| panic!("the benchmark needs a GPU adapter: {e}"));
    let software = gpu.info().device_type == "Cpu";
    let max_n = arg("--max-n").unwrap_or(if software { 1e5 } else { 1e6 }) as usize;
    let max_work = arg("--max-work").unwrap_or(if software { 2e9 } else { 4e11 });
    println!("adapter: {}", gpu.info());
    println!("reference: f64, one thread; skipped: reference work N·D²/2 > {max_work:.0e}");
    println!();
    println!("| N | D | M | GPU cov s | ref cov s | GPU fit s (solver) | ref fit s | fit speed-up | max eig rel. diff |");
    println!("|---:|---:|---:|---:|---:|---|---:|---:|---:|");
    for &n in &[10_000usize, 100_000, 1_000_000] {
        if n > max_n {
            continue;
        }
        for &d in &[64usize, 256, 784] {
            if (n * d * d) as f64 / 2.0 > max_work {
                println!(
                    "| {n} | {d} | – | skipped (reference work {:.0e}) | | | | | |",
                    (n * d * d) as f64 / 2.0
                );
                continue;
            }
            let x = data(n, d);
            let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
            let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            // Warm-up: pipelines compiled once.
            let _ = pca::covariance(&gpu, &xg, 1).unwrap();
            let t = Instant::now();
            let _ = pca::covariance(&gpu, &xg, 1).unwrap();
            let gpu_cov = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let mean = refp::column_means(&x64, d);
            let _ = refp::covariance(&x64, d, Some(&mean), 1);
            let ref_cov = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let want = refp::fit(&x64, d, &Pca::new(Components::Count(64.min(d)))).unwrap();
            let ref_fit = t.elapsed().as_secs_f64();
            for &m in &[2usize, 16, 64] {
                let params = Pca::new(Components::Count(m));
                let t = Instant::now();
                let model = params.fit(&gpu, &xg).unwrap();
                let gpu_fit = t.elapsed().as_secs_f64();
                let diff = model
                    .explained_variance()
                    .iter()
                    .zip(&want.explained_variance)
                    .map(|(a, b)| (a - b).abs() / b)
                    .fold(0.0f64, f64::max);
                println!(
                    "| {n} | {d} | {m} | {gpu_cov:.3} | {ref_cov:.3} | {gpu_fit:.3} ({:?}, {} it) | {ref_fit:.3} | {:.1}x | {diff:.1e} |",
                    model.solver(),
                    model.n_iter(),
                    ref_fit / gpu_fit
                );
            }
        }
    }
}
