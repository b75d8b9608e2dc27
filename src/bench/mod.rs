//! Benchmarks: the hot kernels and the end-to-end fits, timed on the adapter in use and held
//! against its measured [`Ceilings`] (what `wgpu-unsupervised bench` prints).
//!
//! # Kernels
//!
//! Each [`KernelBench`] runs a public operation under the [profiler](crate::gpu::profile)
//! and sums the GPU time of the entry points that make up that step, so the kernels are
//! measured where they really run (same data layout, same batches):
//!
//! | bench | operation profiled | entry points |
//! |---|---|---|
//! | `assign` | `KMeansModel::predict` | `assign_*`, `centroid_shift`, `centroid_prep` |
//! | `centroid-update` | a one-iteration fit (two passes) | `accumulate_*`, the segments, their folds |
//! | `covariance` | `Pca::fit`, full solver | column moments, `gram_*`, their folds |
//! | `gmm-estep` | `GaussianMixtureModel::score` | `mahalanobis_*`, `normalize_responsibilities*` |
//! | `gmm-mstep` | one EM iteration | `weighted_*`, their folds |
//!
//! The first run warms the pipelines up; the figure is the median of the timed runs.
//!
//! # Cost model
//!
//! Efficiencies use the least work the step or fit must do ([`cost`]), the same formulas the
//! peers' script (`benches/peers/peers.py`) uses, so a faster figure is faster work, never a
//! different count: a Lloyd iteration is 2·n·d·k FLOPs over one read of X (4·n·d bytes), a
//! covariance n·d·(d+1) FLOPs (the upper triangle of XᵀX) over one read, an EM iteration
//! 7·n·k·d (diagonal) or n·k·(2d² + 5d) (full) FLOPs over one read. The seedings alone
//! (`kmeans-plusplus`, `kmeans-parallel`, which report the potential Σ min‖x − c‖² of their
//! seeds) count the distances they must take: greedy k-means++ 2·n·d per row and candidate
//! over K·(3 + ⌊ln K⌋) passes, k-means‖ 2·n·d per row against its ≈ 1 + 10·K candidates. The
//! efficiency is the roofline's bound time over the measured time (see
//! [`Work::roofline`](crate::gpu::profile::Work::roofline)).

use std::time::Instant;

use crate::error::{Error, Result};
use crate::gpu::profile::{Profile, ProfileClock};
use crate::gpu::{Ceilings, Gpu, GpuInput, GpuMatrix};
use crate::{
    Components, CovarianceType, GaussianMixture, GmmInit, KMeans, KMeansInit, KMeansModel, Matrix,
    Pca, PcaSolver,
};

mod measurement;

pub use measurement::{cost, Measurement};

/// The `impl` of this crate's measurements.
pub const IMPLEMENTATION: &str = "wgpu-unsupervised";

/// A kernel (one step of an algorithm) to benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelBench {
    /// Nearest-centroid assignment.
    Assign,
    /// The Lloyd centroid update (per-cluster sums, counts and their folds).
    CentroidUpdate,
    /// The covariance (column moments and the Gram product).
    Covariance,
    /// The EM E-step (Mahalanobis distances and normalised responsibilities).
    GmmEstep,
    /// The EM M-step's weighted statistics.
    GmmMstep,
}

impl KernelBench {
    /// Every kernel bench, in the order `bench` runs them.
    pub const ALL: [KernelBench; 5] = [
        KernelBench::Assign,
        KernelBench::CentroidUpdate,
        KernelBench::Covariance,
        KernelBench::GmmEstep,
        KernelBench::GmmMstep,
    ];

    /// The name `bench --kernel` takes.
    pub fn name(self) -> &'static str {
        match self {
            KernelBench::Assign => "assign",
            KernelBench::CentroidUpdate => "centroid-update",
            KernelBench::Covariance => "covariance",
            KernelBench::GmmEstep => "gmm-estep",
            KernelBench::GmmMstep => "gmm-mstep",
        }
    }

    /// The shape (n, d, k) the targets name.
    pub fn default_shape(self) -> (usize, usize, usize) {
        match self {
            KernelBench::Assign | KernelBench::CentroidUpdate => (100_000, 128, 256),
            KernelBench::Covariance => (70_000, 784, 0),
            KernelBench::GmmEstep | KernelBench::GmmMstep => (70_000, 50, 10),
        }
    }

    /// Whether an entry point belongs to this step.
    fn owns(self, entry: &str) -> bool {
        match self {
            KernelBench::Assign => {
                entry.starts_with("assign_")
                    || entry == "centroid_shift"
                    || entry == "centroid_prep"
            }
            KernelBench::CentroidUpdate => {
                entry.starts_with("accumulate_")
                    || entry == "label_segments"
                    || entry == "segment_scalars"
                    || entry.starts_with("sum_partial_columns")
            }
            KernelBench::Covariance => {
                entry == "column_moments"
                    || entry.starts_with("gram_")
                    || entry.starts_with("sum_partial_columns")
            }
            KernelBench::GmmEstep => {
                entry.starts_with("mahalanobis") || entry.starts_with("normalize_responsibilities")
            }
            KernelBench::GmmMstep => {
                entry.starts_with("weighted_") || entry.starts_with("sum_partial_columns")
            }
        }
    }
}

/// An end-to-end fit to benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FitBench {
    /// K-Means, Lloyd from the first k rows, fixed iterations.
    KMeans,
    /// PCA with k components (the library's default solver).
    Pca,
    /// EM with diagonal covariances, fixed iterations.
    GmmDiag,
    /// EM with full covariances, fixed iterations.
    GmmFull,
    /// Greedy k-means++ seeding alone (`KMeans::kmeans_plusplus`).
    KMeansPlusPlus,
    /// k-means‖ seeding alone, the paper's ℓ = 2K and 5 rounds ([`KMeansInit::PARALLEL`]).
    KMeansParallel,
}

impl FitBench {
    /// Every fit bench, in the order `bench` runs them.
    pub const ALL: [FitBench; 6] = [
        FitBench::KMeans,
        FitBench::Pca,
        FitBench::GmmDiag,
        FitBench::GmmFull,
        FitBench::KMeansPlusPlus,
        FitBench::KMeansParallel,
    ];

    /// The name `bench --fit` takes.
    pub fn name(self) -> &'static str {
        match self {
            FitBench::KMeans => "kmeans",
            FitBench::Pca => "pca",
            FitBench::GmmDiag => "gmm-diag",
            FitBench::GmmFull => "gmm-full",
            FitBench::KMeansPlusPlus => "kmeans-plusplus",
            FitBench::KMeansParallel => "kmeans-parallel",
        }
    }
}

macro_rules! parse_by_name {
    ($t:ty) => {
        impl std::str::FromStr for $t {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                Self::ALL
                    .into_iter()
                    .find(|b| b.name() == s)
                    .ok_or_else(|| Error::InvalidParameter {
                        name: "bench",
                        reason: format!(
                            "unknown name `{s}` (expected one of: {})",
                            Self::ALL.map(|b| b.name()).join(", ")
                        ),
                    })
            }
        }
    };
}
parse_by_name!(KernelBench);
parse_by_name!(FitBench);

/// Data to benchmark on: the rows and a name for the report.
pub struct BenchData<'a> {
    /// The matrix.
    pub x: Matrix<'a>,
    /// `blobs`, a file name, ...
    pub name: String,
}

/// Checks a planned kernel bench on n x d data with `k` before any GPU work: the errors the
/// run itself would give, up front.
pub fn check_kernel(bench: KernelBench, n: usize, d: usize, k: usize) -> Result<()> {
    match bench {
        KernelBench::Covariance => Pca::new(Components::Count(1)).validate(n, d),
        KernelBench::GmmEstep | KernelBench::GmmMstep => GaussianMixture::new(k).validate(n, d),
        KernelBench::Assign | KernelBench::CentroidUpdate => KMeans::new(k).validate(n, d),
    }
}

/// Checks a planned fit bench on n x d data with `k` before any GPU work.
pub fn check_fit(bench: FitBench, n: usize, d: usize, k: usize) -> Result<()> {
    match bench {
        FitBench::KMeans | FitBench::KMeansPlusPlus | FitBench::KMeansParallel => {
            KMeans::new(k).validate(n, d)
        }
        FitBench::Pca => Pca::new(Components::Count(k)).validate(n, d),
        FitBench::GmmDiag | FitBench::GmmFull => GaussianMixture::new(k).validate(n, d),
    }
}

fn first_rows(x: &Matrix<'_>, k: usize) -> Result<Vec<f32>> {
    if k == 0 || k > x.n_rows() {
        return Err(Error::TooFewSamples { k, n: x.n_rows() });
    }
    Ok(x.as_slice()[..k * x.n_features()].to_vec())
}

/// Given EM starting parameters: equal weights, the first k rows as means, and isotropic
/// covariances at the data's mean feature variance.
fn gmm_start(x: &Matrix<'_>, k: usize, cov: CovarianceType) -> Result<GmmInit> {
    let (n, d) = (x.n_rows(), x.n_features());
    let means: Vec<f64> = first_rows(x, k)?.into_iter().map(f64::from).collect();
    // Σⱼ Var(xⱼ), with every column's sums about its first value (no cancellation for data
    // far from the origin) in one pass over the rows in memory order: a column-by-column walk
    // reads each 20M x 64 row 128 times, seconds of host time inside every timed fit.
    let first = x.row(0);
    let (mut sum, mut sq) = (vec![0.0f64; d], vec![0.0f64; d]);
    for i in 0..n {
        for (j, &v) in x.row(i).iter().enumerate() {
            let u = v as f64 - first[j] as f64;
            sum[j] += u;
            sq[j] += u * u;
        }
    }
    let var: f64 = (0..d)
        .map(|j| (sq[j] - sum[j] * sum[j] / n as f64).max(0.0) / n as f64)
        .sum();
    let p = 1.0 / (var / d as f64).max(1e-6);
    let precisions = match cov {
        CovarianceType::Full => (0..k * d * d)
            .map(|e| if (e % (d * d)) % (d + 1) == 0 { p } else { 0.0 })
            .collect(),
        CovarianceType::Tied => (0..d * d)
            .map(|e| if e % (d + 1) == 0 { p } else { 0.0 })
            .collect(),
        CovarianceType::Diag => vec![p; k * d],
        CovarianceType::Spherical => vec![p; k],
    };
    Ok(GmmInit::Given(crate::gmm::InitialParameters {
        weights: vec![1.0 / k as f64; k],
        means,
        precisions,
    }))
}

fn em(k: usize, cov: CovarianceType, init: GmmInit, it: usize) -> GaussianMixture {
    GaussianMixture::new(k)
        .covariance(cov)
        .init(init)
        .tol(0.0)
        .max_iter(it)
        .reg_covar(1e-6)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times one kernel bench on `data` with `k` (ignored by the covariance) and, for the EM
/// steps, covariance type `cov`: one warm-up run, then the median of `repeats` runs.
pub fn bench_kernel(
    gpu: &Gpu,
    ceilings: &Ceilings,
    bench: KernelBench,
    data: &BenchData<'_>,
    k: usize,
    cov: CovarianceType,
    repeats: usize,
) -> Result<Measurement> {
    let x = &data.x;
    let (n, d) = (x.n_rows(), x.n_features());
    let xg = GpuMatrix::upload(gpu, x)?;
    let centroids =
        || -> Result<Vec<f64>> { Ok(first_rows(x, k)?.into_iter().map(f64::from).collect()) };
    // The E-step is timed on a model fitted beforehand: the fit is not part of the step.
    let scored_model = match bench {
        KernelBench::GmmEstep => Some(em(k, cov, gmm_start(x, k, cov)?, 1).fit(gpu, &xg)?),
        _ => None,
    };
    // Update passes per run: a one-iteration fit makes two (its own and the final one).
    let passes = std::cell::Cell::new(1);
    let run = || -> Result<()> {
        match bench {
            KernelBench::Assign => {
                KMeansModel::from_centroids(first_rows(x, k)?, d)?.predict_gpu(gpu, &xg)?;
            }
            KernelBench::CentroidUpdate => {
                let init = KMeansInit::Centroids(centroids()?);
                let model = KMeans::new(k)
                    .init(init)
                    .tol(0.0)
                    .max_iter(1)
                    .fit(gpu, &xg)?;
                passes.set(model.n_iter() + 1);
            }
            KernelBench::Covariance => {
                Pca::new(Components::Count(1))
                    .solver(PcaSolver::Full)
                    .fit(gpu, &xg)?;
            }
            KernelBench::GmmEstep => {
                if let Some(model) = &scored_model {
                    model.score(gpu, &xg)?;
                }
            }
            KernelBench::GmmMstep => {
                em(k, cov, gmm_start(x, k, cov)?, 1).fit(gpu, &xg)?;
            }
        }
        Ok(())
    };
    let mut times = Vec::with_capacity(repeats);
    let mut timing = "";
    let mut entries: Vec<&'static str> = Vec::new();
    for rep in 0..=repeats.max(1) {
        let (_, profile) = gpu.profile(ProfileClock::Auto, run)?;
        if rep > 0 {
            let owned = profile.dispatches.iter().filter(|r| bench.owns(r.kernel));
            times.push(owned.clone().map(|r| r.seconds).sum());
            timing = profile.clock.name();
            for r in owned {
                if !entries.contains(&r.kernel) {
                    entries.push(r.kernel);
                }
            }
        }
    }
    let (cost_name, detail) = match bench {
        KernelBench::GmmEstep | KernelBench::GmmMstep => {
            let c = if cov == CovarianceType::Full {
                "full"
            } else {
                "diag"
            };
            (format!("{}-{c}", bench.name()), format!("{} ", cov.name()))
        }
        _ => (bench.name().to_string(), String::new()),
    };
    // Which entry points ran (the autotuner's choice among them).
    let detail = detail + &entries.join("+");
    let work = cost(&cost_name, n, d, k, passes.get()).expect("every kernel bench has a cost");
    let k = if bench == KernelBench::Covariance {
        0
    } else {
        k
    };
    Ok(Measurement::new(
        "kernel",
        bench.name(),
        (n, d, k, 1, 1),
        median(times),
        work,
        ceilings,
        timing,
        &data.name,
        detail,
    ))
}

/// Times one end-to-end fit from host data (upload included, pipelines warm): K-Means and
/// EM run up to `iterations` iterations from the first k rows (tolerance 0); PCA keeps `k`
/// components. A one-iteration fit warms the pipelines (and the autotuner) up first.
///
/// The measurement reports the iterations **done**, and its cost model counts those: EM with
/// tolerance 0 does every iteration asked for, but K-Means also stops when no label changes
/// (the library's rule, which tolerance 0 does not turn off), so a fit asked for 5 may do 2.
/// Comparisons of iterative fits divide by the iterations done
/// ([`Measurement::seconds_per_iteration`]).
///
/// With `profile`, a second, profiled run of the same fit gives the per-kernel breakdown and
/// the fit's GPU-busy share ([`Measurement::busy`]: its kernels' GPU time over its wall time).
pub fn bench_fit(
    gpu: &Gpu,
    ceilings: &Ceilings,
    bench: FitBench,
    data: &BenchData<'_>,
    k: usize,
    iterations: usize,
    profile: bool,
) -> Result<(Measurement, Option<Profile>)> {
    let x = &data.x;
    let (n, d) = (x.n_rows(), x.n_features());
    let it = iterations.max(1);
    let run = |it: usize| fit_once(gpu, bench, x, x, k, it);
    if matches!(bench, FitBench::KMeansPlusPlus | FitBench::KMeansParallel) {
        // The seedings do not iterate: warm their pipelines up on a few rows instead.
        let few = GpuMatrix::upload(gpu, &Matrix::new(&first_rows(x, n.min(64))?, d)?)?;
        for init in [KMeansInit::KMeansPlusPlus, KMeansInit::PARALLEL] {
            KMeans::new(1).init(init).initial_centroids(gpu, &few)?;
        }
    } else {
        run(1)?;
    }
    let start = Instant::now();
    let (detail, done) = run(it)?;
    let seconds = start.elapsed().as_secs_f64();
    let profile = if profile {
        Some(gpu.profile(ProfileClock::Auto, || run(it))?.1)
    } else {
        None
    };
    let resident = resident_times(gpu, bench, x, k, it)?;
    let requested = match bench {
        FitBench::Pca | FitBench::KMeansPlusPlus | FitBench::KMeansParallel => 1,
        _ => it,
    };
    let work = cost(bench.name(), n, d, k, done).expect("every fit bench has a cost");
    let mut m = Measurement::new(
        "fit",
        bench.name(),
        (n, d, k, done, requested),
        seconds,
        work,
        ceilings,
        "fit wall-clock",
        &data.name,
        detail,
    );
    if let Some(p) = &profile {
        m = m.with_busy(p);
    }
    if let Some((upload, fit)) = resident {
        m.upload_seconds = Some(upload);
        m.resident_seconds = Some(fit);
    }
    Ok((m, profile))
}

/// One fit of up to `it` iterations on `input` (the host matrix `x` itself, or its copy on
/// the device), started from `x`'s first rows: its detail and the iterations it did.
fn fit_once(
    gpu: &Gpu,
    bench: FitBench,
    x: &Matrix<'_>,
    input: &impl GpuInput,
    k: usize,
    it: usize,
) -> Result<(String, usize)> {
    let d = x.n_features();
    let gmm = |cov| -> Result<GaussianMixture> { Ok(em(k, cov, gmm_start(x, k, cov)?, it)) };
    // The seeding alone, and the potential Σ min‖x − c‖² of its seeds.
    let seeding = |init: KMeansInit| -> Result<(String, usize)> {
        let seeds = KMeans::new(k).init(init).initial_centroids(gpu, input)?;
        let potential = -KMeansModel::from_centroids(seeds, d)?.score(gpu, input)?;
        Ok((format!("potential {potential:.6e}"), 1))
    };
    Ok(match bench {
        FitBench::KMeans => {
            let init = first_rows(x, k)?.into_iter().map(f64::from).collect();
            // Exactly `it` iterations, as the peers' loops run: per-iteration times compare
            // like with like, and the device runs them back to back.
            let m = KMeans::new(k)
                .init(KMeansInit::Centroids(init))
                .max_iter(it)
                .fixed_iterations(true)
                .fit(gpu, input)?;
            (format!("{} of {it} iterations", m.n_iter()), m.n_iter())
        }
        FitBench::Pca => {
            let m = Pca::new(Components::Count(k)).fit(gpu, input)?;
            (format!("solver {}", m.solver().name()), 1)
        }
        FitBench::GmmDiag => {
            let m = gmm(CovarianceType::Diag)?.fit(gpu, input)?;
            ("diag".into(), m.n_iter())
        }
        FitBench::GmmFull => {
            let m = gmm(CovarianceType::Full)?.fit(gpu, input)?;
            ("full".into(), m.n_iter())
        }
        FitBench::KMeansPlusPlus => seeding(KMeansInit::KMeansPlusPlus)?,
        FitBench::KMeansParallel => seeding(KMeansInit::PARALLEL)?,
    })
}

/// The upload of `x` alone (waited for) and the same fit from the device copy, when `x` fits
/// the device-memory budget with room for the fit (a third of the budget); `None` otherwise,
/// and for the seedings, which are timed from device data already. The fit from the device
/// copy is warmed up first, as the host one is.
fn resident_times(
    gpu: &Gpu,
    bench: FitBench,
    x: &Matrix<'_>,
    k: usize,
    it: usize,
) -> Result<Option<(f64, f64)>> {
    let bytes = (x.n_rows() * x.n_features() * 4) as u64;
    if matches!(bench, FitBench::KMeansPlusPlus | FitBench::KMeansParallel)
        || bytes > gpu.memory_budget() / 3
    {
        return Ok(None);
    }
    let start = Instant::now();
    let on_device = GpuMatrix::upload(gpu, x)?;
    // The writes go at the next submission; waiting for it waits for the copy.
    gpu.queue().submit([]);
    gpu.device()
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| Error::DeviceLost(format!("waiting for the upload: {e}")))?;
    let upload = start.elapsed().as_secs_f64();
    fit_once(gpu, bench, x, &on_device, k, 1)?;
    let start = Instant::now();
    fit_once(gpu, bench, x, &on_device, k, it)?;
    Ok(Some((upload, start.elapsed().as_secs_f64())))
}
