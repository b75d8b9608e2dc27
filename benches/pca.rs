//! Criterion benchmarks for PCA: the covariance pass and whole fits per solver. Sizes are
//! modest so the suite also runs on a software adapter; the full grid is
//! `benches/pca_table.rs`.

use criterion::{criterion_group, criterion_main, Criterion};
use wgpu_unsupervised::{datasets, pca, Components, Gpu, GpuMatrix, Matrix, Pca, PcaSolver};

fn gpu() -> Gpu {
    Gpu::new().unwrap_or_else(|e| panic!("benchmarks need a GPU adapter: {e}"))
}

/// N x D data with a geometric spectrum (λ_j ∝ 0.97^(2j)), so power iteration converges.
fn data(n: usize, d: usize) -> Vec<f32> {
    let mut x = datasets::uniform(n, d, 3);
    for (i, v) in x.iter_mut().enumerate() {
        *v = (*v - 0.5) * 0.97f32.powi((i % d) as i32) + 10.0;
    }
    x
}

fn benches(c: &mut Criterion) {
    let gpu = gpu();
    let mut group = c.benchmark_group(format!("pca/{}", gpu.info().name));
    group.sample_size(10);
    for d in [64usize, 256] {
        let n = 20_000;
        let x = data(n, d);
        let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        group.bench_function(format!("covariance_n{n}_d{d}"), |b| {
            b.iter(|| pca::covariance(&gpu, &xg, 1).unwrap())
        });
        for solver in [PcaSolver::Full, PcaSolver::Power, PcaSolver::MatrixFree] {
            let params = Pca::new(Components::Count(16)).solver(solver);
            group.bench_function(format!("fit_{solver:?}_n{n}_d{d}_m16"), |b| {
                b.iter(|| params.fit(&gpu, &xg).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(pca_benches, benches);
criterion_main!(pca_benches);
