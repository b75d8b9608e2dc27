//! K-Means clustering (Lloyd's algorithm) with the heavy work on the GPU.
//!
//! K-Means minimises the within-cluster sum of squares (the inertia)
//!
//! ```text
//! J(c, μ) = Σᵢ ‖xᵢ − μ_{c(i)}‖²
//! ```
//!
//! by alternating the two exact minimisations of Lloyd (1982):
//! 1. **assignment**: c(i) = argminₖ ‖xᵢ − μₖ‖² (`shaders/assign.wgsl`, one invocation per
//!    row, centroid tiles in workgroup memory);
//! 2. **update**: μₖ = mean of the rows with c(i) = k (`shaders/centroid_update.wgsl` then
//!    `shaders/reduce.wgsl`: per-block partial sums in a fixed order, folded on the device,
//!    so only K x D statistics and a few scalars come back each iteration).
//!
//! J never increases. Iteration stops when no label changes, when the total squared centroid
//! shift Σₖ‖μₖ⁽ᵗ⁺¹⁾ − μₖ⁽ᵗ⁾‖² falls to `tol` times the mean per-feature variance
//! (scikit-learn's rule), or after `max_iter` iterations; then a last assignment gives labels
//! consistent with the final centroids. A cluster that loses every member is re-seeded at the
//! row farthest from its centroid (never taken from a singleton cluster), so centroids are
//! never NaN.
//!
//! Seeding is greedy k-means++ (Arthur & Vassilvitskii 2007, scikit-learn's variant): each new
//! centre is the best of `2 + ln k` candidates drawn with probability ∝ D(x)², the squared
//! distance to the nearest centre so far, "best" meaning the smallest resulting potential
//! Σᵢ min(D(xᵢ)², ‖xᵢ − c‖²). D² and the candidates' potentials are computed on the device
//! (`shaders/kmeans_pp.wgsl`); the host draws the samples from block sums.
//!
//! Host algebra (centroid = old centroid + mean deviation, shifts, inertia) is f64. Every
//! device sum has a fixed order, so the same seed on the same adapter gives bitwise the same
//! model. The f64 CPU oracle of the same algorithm is the `kmeans` module of
//! [`reference`](crate::reference).

//!
//! **Sample weights** ([`KMeans::fit_weighted`]): with a weight wᵢ per row the objective is
//! J = Σᵢ wᵢ‖xᵢ − μ_{c(i)}‖², the update is the weighted mean μₖ = Σw·x/Σw, k-means++ draws ∝
//! w·D² (its first centre ∝ w), random init ∝ w, and `tol` is relative to the weighted
//! variance, so an integer weight is exactly the row repeated. **Data larger than the GPU**:
//! [`KMeans::fit_source`] streams a [`RowSource`](crate::source::RowSource) (module `stream`),
//! [`KMeans::fit_partitions`] splits rows across devices, [`KMeansStats`] merge, and
//! [`MiniBatchKMeans`] learns from batches.
//!
//! **Spherical K-Means** ([`Metric::Cosine`], module `metric`): rows normalised on the
//! device (`normalize_rows` in `shaders/rows.wgsl`), unit centroids, assignment by the
//! largest cosine, inertia Σ(1 − cos).
//!
//! Layout: this module holds the parameters ([`KMeans`], [`KMeansInit`]); `fit` the device
//! workspace and the seeding; `lloyd` the loop over resident, streamed or partitioned rows
//! and the resident fits; `model` the fitted [`KMeansModel`]; `stats`, `stream`,
//! `partitions` and `minibatch` as above.

use crate::error::{Error, Result};
use crate::names::parse_choice;
use crate::progress::OnIteration;

mod fit;
mod lloyd;
mod metric;
mod minibatch;
mod model;
mod parallel;
mod partial;
mod partitions;
mod remote;
mod stats;
mod stream;

pub use crate::gpu::GpuInput;
pub(crate) use fit::weighted_plus_plus_seeds;
pub(crate) use metric::normalize_centroids;
pub use metric::Metric;
pub use minibatch::MiniBatchKMeans;
pub use model::KMeansModel;
#[cfg(feature = "io")]
pub(crate) use model::KMeansModelFields;
pub use partial::MiniBatchKMeansFit;
pub(crate) use remote::{remote_plus_plus_seeds, remote_rows};
pub use remote::{seed_candidates, KMeansPartition, KMeansReply, KMeansRequest, RemoteKMeans};
pub use stats::KMeansStats;
pub(crate) use stream::plus_plus_sample_size;

/// How the initial centroids are chosen.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum KMeansInit {
    /// Greedy k-means++ (Arthur & Vassilvitskii 2007) with `2 + ln k` local trials per step,
    /// as scikit-learn does: each new centroid is the best of several D²-sampled candidates.
    KMeansPlusPlus,
    /// K distinct rows chosen uniformly at random.
    Random,
    /// Given centroids, row-major K x D (f64). With these, `n_init` is ignored (one run).
    Centroids(Vec<f64>),
    /// k-means‖ (Bahmani et al. 2012, "Scalable K-Means++"): `rounds` passes each sample
    /// every row independently with probability min(1, ℓ·w·D²/φ), ℓ = `oversampling`·K, then
    /// weighted greedy k-means++ picks K of the candidates. For large K, where k-means++
    /// needs K passes (module `parallel`).
    KMeansParallel {
        /// ℓ / K: candidates expected per round, per cluster (the paper's ℓ = 2K: 2.0).
        oversampling: f64,
        /// Sampling rounds (the paper finds 5 enough).
        rounds: usize,
    },
}

impl KMeansInit {
    /// The initialisations that can be named (all but [`KMeansInit::Centroids`]), k-means‖
    /// with its defaults.
    pub const ALL: [KMeansInit; 3] = [
        KMeansInit::KMeansPlusPlus,
        KMeansInit::Random,
        KMeansInit::PARALLEL,
    ];

    /// k-means‖ with the paper's defaults: ℓ = 2K, 5 rounds.
    pub const PARALLEL: KMeansInit = KMeansInit::KMeansParallel {
        oversampling: 2.0,
        rounds: 5,
    };

    /// The name the CLI uses: "k-means++" or "random"; "given centroids" for
    /// [`KMeansInit::Centroids`], which cannot be parsed.
    pub fn name(&self) -> &'static str {
        match self {
            KMeansInit::KMeansPlusPlus => "k-means++",
            KMeansInit::Random => "random",
            KMeansInit::Centroids(_) => "given centroids",
            KMeansInit::KMeansParallel { .. } => "k-means||",
        }
    }

    /// Other spellings [`FromStr`](std::str::FromStr) accepts.
    fn aliases(&self) -> &'static [&'static str] {
        match self {
            KMeansInit::KMeansPlusPlus => &["kmeans++"],
            KMeansInit::KMeansParallel { .. } => {
                &["kmeans||", "kmeans-parallel", "k-means-parallel"]
            }
            KMeansInit::Random | KMeansInit::Centroids(_) => &[],
        }
    }
}

impl std::fmt::Display for KMeansInit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for KMeansInit {
    type Err = Error;

    /// Parses "k-means++" (or "kmeans++"), "random" or "k-means||" (or "kmeans||",
    /// "kmeans-parallel"), ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self> {
        parse_choice(
            "init",
            "K-Means initialisation",
            s,
            &KMeansInit::ALL,
            KMeansInit::name,
            KMeansInit::aliases,
        )
    }
}

/// K-Means parameters (a builder); validated when fitting.
///
/// Defaults follow scikit-learn: `n_init = 1` with k-means++ (sklearn's "auto"),
/// `max_iter = 300`, `tol = 1e-4`, `seed = 0`.
///
/// ```
/// use wgpu_unsupervised::{datasets, metrics, Gpu, KMeans, Matrix};
///
/// let gpu = Gpu::new()?;
/// let (rows, truth, _) = datasets::make_blobs(600, 3, 4, 0.5, (-10.0, 10.0), 1)?;
/// let x = Matrix::new(&rows, 3)?;
/// let model = KMeans::new(4).n_init(3).seed(1).fit(&gpu, &x)?;
/// assert_eq!(model.centroids().len(), 4 * 3);
/// assert_eq!(metrics::adjusted_rand_index(model.labels(), &truth)?, 1.0);
/// assert_eq!(model.predict(&gpu, &x)?, model.labels());
/// # Ok::<(), wgpu_unsupervised::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct KMeans {
    /// Number of clusters K.
    pub k: usize,
    /// Independent restarts; the run with the lowest inertia is kept.
    pub n_init: usize,
    /// Maximum Lloyd iterations per restart.
    pub max_iter: usize,
    /// Convergence tolerance on the total squared centroid shift, relative to the mean
    /// per-feature variance of the data (scikit-learn's convention).
    pub tol: f64,
    /// Seed of the random generator (ChaCha8); the same seed gives the same result.
    pub seed: u64,
    /// Initialisation method.
    pub init: KMeansInit,
    /// The distance: Euclidean (default) or cosine (spherical K-Means, see [`Metric`]).
    /// Model files written before it existed read back as Euclidean.
    #[cfg_attr(feature = "serde", serde(default))]
    pub metric: Metric,
    /// Called after every Lloyd iteration (see [`crate::progress`]); never serialized, and
    /// not kept in the fitted model's parameters.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub on_iteration: Option<OnIteration>,
}

impl KMeans {
    /// Parameters for `k` clusters with the defaults above.
    pub fn new(k: usize) -> Self {
        Self {
            k,
            n_init: 1,
            max_iter: 300,
            tol: 1e-4,
            seed: 0,
            init: KMeansInit::KMeansPlusPlus,
            metric: Metric::Euclidean,
            on_iteration: None,
        }
    }

    /// Calls `f` after every Lloyd iteration with its [`Iteration`](crate::Iteration)
    /// (restart, iteration, inertia, squared centroid shift, elapsed time);
    /// `ControlFlow::Break(())` stops the fit there: the model is returned as it stands,
    /// `converged() == false`, and later restarts are skipped.
    pub fn on_iteration(
        mut self,
        f: impl Fn(&crate::Iteration) -> std::ops::ControlFlow<()> + Send + Sync + 'static,
    ) -> Self {
        self.on_iteration = Some(OnIteration::new(f));
        self
    }

    /// Sets the metric: [`Metric::Cosine`] for spherical K-Means.
    pub fn metric(mut self, metric: Metric) -> Self {
        self.metric = metric;
        self
    }

    /// Sets the number of restarts.
    pub fn n_init(mut self, n_init: usize) -> Self {
        self.n_init = n_init;
        self
    }

    /// Sets the iteration cap.
    pub fn max_iter(mut self, max_iter: usize) -> Self {
        self.max_iter = max_iter;
        self
    }

    /// Sets the relative tolerance.
    pub fn tol(mut self, tol: f64) -> Self {
        self.tol = tol;
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the initialisation.
    pub fn init(mut self, init: KMeansInit) -> Self {
        self.init = init;
        self
    }

    /// Checks the parameters against data of `n` rows and `d` features.
    pub fn validate(&self, n: usize, d: usize) -> Result<()> {
        Error::require_count("k", self.k)?;
        if self.k > n {
            return Err(Error::TooFewSamples { k: self.k, n });
        }
        self.validate_for_features(d)
    }

    /// The checks of [`KMeans::validate`] that do not need the number of rows (those a
    /// fitted model's parameters must pass too).
    fn validate_for_features(&self, d: usize) -> Result<()> {
        Error::require_count("k", self.k)?;
        Error::require_count("n_init", self.n_init)?;
        Error::require_count("max_iter", self.max_iter)?;
        Error::require_non_negative("tol", self.tol)?;
        if let KMeansInit::Centroids(c) = &self.init {
            if c.len() != self.k * d {
                return Err(Error::invalid(
                    "init",
                    format!(
                        "given centroids have {} values, expected k x d = {} x {d}",
                        c.len(),
                        self.k
                    ),
                ));
            }
            crate::data::check_finite(c, d)?;
        }
        if let KMeansInit::KMeansParallel {
            oversampling,
            rounds,
        } = self.init
        {
            if !(oversampling.is_finite() && oversampling > 0.0) {
                return Err(Error::invalid(
                    "oversampling",
                    format!("{oversampling}: must be a finite number > 0 (ℓ / k)"),
                ));
            }
            Error::require_count("rounds", rounds)?;
        }
        Ok(())
    }

    /// Number of local trials of greedy k-means++: `2 + floor(ln k)` (scikit-learn).
    pub fn n_local_trials(&self) -> usize {
        2 + (self.k as f64).ln().floor() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_names_round_trip() {
        for init in KMeansInit::ALL {
            assert_eq!(init.name().parse::<KMeansInit>().unwrap(), init);
            assert_eq!(init.to_string(), init.name());
        }
        assert_eq!(
            "kmeans++".parse::<KMeansInit>().unwrap(),
            KMeansInit::KMeansPlusPlus
        );
        assert_eq!("Random".parse::<KMeansInit>().unwrap(), KMeansInit::Random);
        let e = "given centroids".parse::<KMeansInit>().unwrap_err();
        assert!(
            matches!(e, Error::InvalidParameter { name: "init", .. }),
            "{e}"
        );
    }
}
