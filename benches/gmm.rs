//! Criterion benchmarks of Gaussian-mixture EM on the GPU: a fit of 5 EM iterations from
//! given parameters (tol = 0, so exactly 5 E- and M-steps, plus the final labelling E-step)
//! and one E-step alone (`GaussianMixtureModel::score`), for N = 10,000 points,
//! D ∈ {2, 16}, K ∈ {4, 16} and the four covariance types. The data is uploaded once
//! (`GpuMatrix`), so transfers of the input are not timed.
//!
//! ```text
//! cargo bench --bench gmm                    # everything
//! cargo bench --bench gmm -- gmm_score       # the E-step group only
//! cargo bench --bench gmm -- 'diag|spherical' # some covariance types only
//! ```
//!
//! Sizes are modest so that the suite also runs on a software adapter: about 10 minutes on
//! lavapipe with 2 cores, most of it in the full and tied fits with K = 16 (3 to 5 s per fit
//! there, so criterion stretches its 2 s measurement window). The comparison with the f64
//! reference over a larger grid is `benches/gmm_table.rs`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
#[path = "common/gmm_start.rs"]
mod gmm_start;

use gmm_start::start;
use wgpu_unsupervised::{
    datasets, CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit, Gpu, GpuMatrix,
    Matrix,
};

/// Rows of the benchmark data.
const N: usize = 10_000;
/// Feature counts.
const DS: [usize; 2] = [2, 16];
/// Component counts.
const KS: [usize; 2] = [4, 16];
/// EM iterations per timed fit.
const ITERS: usize = 5;
fn gpu() -> Gpu {
    Gpu::new().unwrap_or_else(|e| panic!("benchmarks need a GPU adapter: {e}"))
}

/// Blob data (16 interleaved clusters), on the host and uploaded.
fn data(gpu: &Gpu, d: usize) -> (Vec<f32>, GpuMatrix) {
    let (x, _, _) = datasets::make_blobs(N, d, 16, 1.0, (-10.0, 10.0), 11).unwrap();
    let xg = GpuMatrix::upload(gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    (x, xg)
}

/// A fit of `ITERS` EM iterations from given parameters.
fn fit(c: &mut Criterion) {
    let gpu = gpu();
    let mut group = c.benchmark_group(format!("gmm_fit_{ITERS}iter/{}", gpu.info().name));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    for d in DS {
        let (x, xg) = data(&gpu, d);
        for k in KS {
            for t in CovarianceType::ALL {
                let (given, _) = start(&x, d, k, t);
                let params = GaussianMixture::new(k)
                    .covariance(t)
                    .max_iter(ITERS)
                    .tol(0.0)
                    .init(GmmInit::Given(given));
                group.bench_with_input(
                    BenchmarkId::new(format!("{}_n{N}_d{d}", t.name()), k),
                    &k,
                    |b, _| b.iter(|| params.fit(&gpu, &xg).unwrap()),
                );
            }
        }
    }
    group.finish();
}

/// One E-step: responsibilities, log-densities, labels and the mean log-likelihood.
fn score(c: &mut Criterion) {
    let gpu = gpu();
    let mut group = c.benchmark_group(format!("gmm_score/{}", gpu.info().name));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(N as u64));
    for d in DS {
        let (x, xg) = data(&gpu, d);
        for k in KS {
            for t in CovarianceType::ALL {
                let (given, covariances) = start(&x, d, k, t);
                let model = GaussianMixtureModel::from_parameters(
                    t,
                    given.weights,
                    given.means,
                    covariances,
                )
                .unwrap();
                group.bench_with_input(
                    BenchmarkId::new(format!("{}_n{N}_d{d}", t.name()), k),
                    &k,
                    |b, _| b.iter(|| model.score(&gpu, &xg).unwrap()),
                );
            }
        }
    }
    group.finish();
}

criterion_group!(benches, score, fit);
criterion_main!(benches);
