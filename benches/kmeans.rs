//! Criterion benchmarks: the assignment kernel (predict) and a full fit with a fixed number
//! of Lloyd iterations. Sizes are modest so the suite also runs on a software adapter; the
//! comparison table over the full grid is `benches/kmeans_table.rs`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use wgpu_unsupervised::{datasets, Gpu, GpuMatrix, KMeans, KMeansInit, KMeansModel, Matrix};

fn gpu() -> Gpu {
    Gpu::new().unwrap_or_else(|e| panic!("benchmarks need a GPU adapter: {e}"))
}

fn assignment(c: &mut Criterion) {
    let gpu = gpu();
    let (n, d) = (100_000, 32);
    let x = datasets::uniform(n, d, 1);
    let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    let mut group = c.benchmark_group(format!("assign/{}", gpu.info().name));
    group.sample_size(10);
    group.throughput(Throughput::Elements(n as u64));
    for k in [8usize, 64] {
        let model = KMeansModel::from_centroids(x[..k * d].to_vec(), d).unwrap();
        group.bench_with_input(BenchmarkId::new(format!("n{n}_d{d}"), k), &k, |b, _| {
            b.iter(|| model.predict_gpu(&gpu, &xg).unwrap())
        });
    }
    group.finish();
}

fn fit(c: &mut Criterion) {
    let gpu = gpu();
    let (n, d, k, iters) = (50_000, 16, 16, 20);
    let (x, _, _) = datasets::make_blobs(n, d, k, 2.0, (-10.0, 10.0), 3).unwrap();
    let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    let init: Vec<f64> = x[..k * d].iter().map(|&v| v as f64).collect();
    let params = KMeans::new(k)
        .init(KMeansInit::Centroids(init))
        .tol(0.0)
        .max_iter(iters);
    let mut group = c.benchmark_group(format!("fit/{}", gpu.info().name));
    group.sample_size(10);
    group.bench_function(format!("n{n}_d{d}_k{k}_{iters}iter"), |b| {
        b.iter(|| params.fit(&gpu, &xg).unwrap())
    });
    let pp = KMeans::new(k).seed(1).max_iter(1);
    group.bench_function(format!("kmeans++_n{n}_d{d}_k{k}"), |b| {
        b.iter(|| pp.fit(&gpu, &xg).unwrap())
    });
    group.finish();
}

criterion_group!(benches, assignment, fit);
criterion_main!(benches);
