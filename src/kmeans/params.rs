//! The parameters of K-Means ([`KMeans`], [`KMeansInit`], [`Metric`]) and of mini-batch
//! K-Means ([`MiniBatchKMeans`]): builders with scikit-learn's defaults, and their
//! validation against the data (one check per parameter, an [`Error`] naming it).

use crate::error::{Error, Result};
use crate::names::parse_choice;
use crate::progress::OnIteration;

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
    /// needs K passes (module `seeding`).
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

    /// The least K from which [`KMeans::new`] starts with k-means‖ rather than greedy
    /// k-means++: greedy k-means++ makes K passes over the data, each scoring `2 + ln K`
    /// candidates, while k-means‖ makes `rounds` passes (its cost grows with the ≈ 2·K·rounds
    /// candidates, not with K passes). Below it the greedy seeding is cheap and is
    /// scikit-learn's choice, so results match scikit-learn's defaults there.
    pub const PARALLEL_FROM_K: usize = 256;

    /// The default start for `k` clusters: [`KMeansInit::PARALLEL`] from
    /// [`KMeansInit::PARALLEL_FROM_K`] clusters on, greedy k-means++ below.
    pub fn default_for(k: usize) -> KMeansInit {
        if k >= Self::PARALLEL_FROM_K {
            Self::PARALLEL
        } else {
            KMeansInit::KMeansPlusPlus
        }
    }

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

    /// The runs (restarts) a fit makes with this start for `n_init`: one for given centroids,
    /// which no restart could change. Asking for more with given centroids draws a `tracing`
    /// warning (scikit-learn's), which the CLI prints.
    pub(super) fn runs(&self, n_init: usize) -> usize {
        match self {
            KMeansInit::Centroids(_) => {
                if n_init > 1 {
                    tracing::warn!(
                        target: "wgpu_unsupervised::kmeans",
                        "explicit initial centroids were given: performing one run instead of n_init = {n_init}"
                    );
                }
                1
            }
            _ => n_init,
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
/// `max_iter = 300`, `tol = 1e-4`, `seed = 0`, `fixed_iterations = false`; except that from
/// K = 256 on ([`KMeansInit::PARALLEL_FROM_K`]) the start is k-means‖ ([`KMeansInit::default_for`]),
/// where scikit-learn keeps greedy k-means++: greedy seeding costs K passes over the data.
/// [`KMeans::init`] chooses either explicitly.
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
    /// Run exactly `max_iter` Lloyd iterations per restart: no tolerance test and no stop
    /// when no label changes (FAISS's `niter`; a fixed budget, or a benchmark's loop). Rows
    /// on one device then run the iterations back to back, several submissions ahead of the
    /// host, which reads each one's few words without the GPU waiting for it (one ahead, as
    /// without it, when an `on_iteration` callback could stop the loop); the fit also skips
    /// the pass that scales `tol`. `converged()` is then `false`: nothing was tested.
    /// Model files written before it existed read back as `false`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub fixed_iterations: bool,
    /// Called after every Lloyd iteration (see [`crate::progress`]); never serialized, and
    /// not kept in the fitted model's parameters.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub on_iteration: Option<OnIteration>,
}

impl KMeans {
    /// Parameters for `k` clusters with the defaults above (the start by
    /// [`KMeansInit::default_for`]).
    pub fn new(k: usize) -> Self {
        Self {
            k,
            n_init: 1,
            max_iter: 300,
            tol: 1e-4,
            seed: 0,
            init: KMeansInit::default_for(k),
            metric: Metric::Euclidean,
            fixed_iterations: false,
            on_iteration: None,
        }
    }

    /// Runs exactly `max_iter` iterations per restart, with no convergence test (see the
    /// field [`KMeans::fixed_iterations`]).
    pub fn fixed_iterations(mut self, fixed: bool) -> Self {
        self.fixed_iterations = fixed;
        self
    }

    /// Calls `f` after every Lloyd iteration with its [`Iteration`](crate::progress::Iteration)
    /// (restart, iteration, inertia, squared centroid shift, elapsed time);
    /// `ControlFlow::Break(())` stops the fit there: the model is returned as it stands,
    /// `converged() == false`, and later restarts are skipped.
    pub fn on_iteration(
        mut self,
        f: impl Fn(&crate::progress::Iteration) -> std::ops::ControlFlow<()> + Send + Sync + 'static,
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
    pub(super) fn validate_for_features(&self, d: usize) -> Result<()> {
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

    /// Refuses the cosine metric where the rows are not all on one device (streamed or
    /// partitioned fits and their statistics), which spherical K-Means does not support yet.
    pub(super) fn require_euclidean(&self, what: &str) -> Result<()> {
        if self.metric.is_spherical() {
            return Err(Error::invalid(
                "metric",
                format!("{what} supports the Euclidean metric only; fit cosine K-Means with `fit` on data that fit on the device"),
            ));
        }
        Ok(())
    }

    /// Number of local trials of greedy k-means++: `2 + floor(ln k)` (scikit-learn).
    pub fn n_local_trials(&self) -> usize {
        2 + (self.k as f64).ln().floor() as usize
    }
}

/// The distance K-Means uses to assign rows to centroids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Metric {
    /// Squared Euclidean distance: Lloyd's K-Means, inertia Σ‖x − c‖².
    #[default]
    Euclidean,
    /// Cosine similarity: spherical K-Means on unit rows and centroids, inertia
    /// Σ(1 − cos(x, c)). Rows of zeros are refused.
    Cosine,
}

impl Metric {
    /// Every metric, for the CLI's choices.
    pub const ALL: [Metric; 2] = [Metric::Euclidean, Metric::Cosine];

    /// The name the CLI uses: "euclidean" or "cosine".
    pub fn name(&self) -> &'static str {
        match self {
            Metric::Euclidean => "euclidean",
            Metric::Cosine => "cosine",
        }
    }

    /// Whether rows and centroids live on the unit sphere.
    pub(crate) fn is_spherical(self) -> bool {
        self == Metric::Cosine
    }

    /// The factor from the summed squared distances the kernels compute to the reported
    /// objective: 1, or ½ for cosine (Σ‖x̂ − ĉ‖² = 2Σ(1 − cos)).
    pub(crate) fn objective_scale(self) -> f64 {
        match self {
            Metric::Euclidean => 1.0,
            Metric::Cosine => 0.5,
        }
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Metric {
    type Err = Error;

    /// Parses "euclidean" or "cosine", ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self> {
        parse_choice(
            "metric",
            "K-Means metric",
            s,
            &Metric::ALL,
            Metric::name,
            |_| &[],
        )
    }
}

/// Mini-batch K-Means parameters (a builder); validated when fitting.
///
/// Defaults follow scikit-learn: `batch_size = 1024`, `max_iter = 100` epochs,
/// `max_no_improvement = Some(10)`, `reassignment_ratio = 0.01`, `tol = 0` (off),
/// `n_init = 1` with k-means++ (sklearn's "auto"), `init_size = 3·batch_size`, `seed = 0`.
/// The start stays greedy k-means++ at every K (unlike [`KMeans::new`]): it seeds on the
/// `init_size` sample only, where K passes are cheap.
///
/// ```
/// use wgpu_unsupervised::{datasets, metrics, Gpu, Matrix, MiniBatchKMeans};
///
/// let gpu = Gpu::new()?;
/// let (rows, truth, _) = datasets::make_blobs(2000, 2, 3, 0.4, (-10.0, 10.0), 2)?;
/// let x = Matrix::new(&rows, 2)?;
/// let model = MiniBatchKMeans::new(3).batch_size(256).seed(2).fit(&gpu, &x)?;
/// assert!(metrics::adjusted_rand_index(model.labels(), &truth)? > 0.99);
/// # Ok::<(), wgpu_unsupervised::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MiniBatchKMeans {
    /// Number of clusters K.
    pub k: usize,
    /// Rows per step.
    pub batch_size: usize,
    /// Epochs: the step cap is `max_iter·N / batch_size`.
    pub max_iter: usize,
    /// Stop after this many steps without improvement of the smoothed batch inertia.
    pub max_no_improvement: Option<usize>,
    /// Clusters with fewer than this fraction of the largest count are re-seeded.
    pub reassignment_ratio: f64,
    /// Stop when a step's squared centroid shift is at most `tol` times the mean feature
    /// variance (0 turns it off and saves the pass that measures the variance).
    pub tol: f64,
    /// Initialisation candidates, the best on a validation batch kept.
    pub n_init: usize,
    /// Rows the initialisation is drawn from (`None`: 3·batch_size, at least K).
    pub init_size: Option<usize>,
    /// Initialisation method.
    pub init: KMeansInit,
    /// Seed of the random generator (ChaCha8).
    pub seed: u64,
    /// Called after every step (see [`crate::progress`]); never serialized.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub on_iteration: Option<OnIteration>,
}

impl MiniBatchKMeans {
    /// Parameters for `k` clusters with the defaults above.
    pub fn new(k: usize) -> Self {
        Self {
            k,
            batch_size: 1024,
            max_iter: 100,
            max_no_improvement: Some(10),
            reassignment_ratio: 0.01,
            tol: 0.0,
            n_init: 1,
            init_size: None,
            init: KMeansInit::KMeansPlusPlus,
            seed: 0,
            on_iteration: None,
        }
    }

    /// Calls `f` after every step with its [`Iteration`](crate::progress::Iteration): the step number,
    /// the batch's inertia, the squared centroid shift, the elapsed time;
    /// `ControlFlow::Break(())` stops the fit there (`converged() == false`).
    pub fn on_iteration(
        mut self,
        f: impl Fn(&crate::progress::Iteration) -> std::ops::ControlFlow<()> + Send + Sync + 'static,
    ) -> Self {
        self.on_iteration = Some(OnIteration::new(f));
        self
    }

    /// Sets the batch size.
    pub fn batch_size(mut self, rows: usize) -> Self {
        self.batch_size = rows;
        self
    }

    /// Sets the epoch cap.
    pub fn max_iter(mut self, epochs: usize) -> Self {
        self.max_iter = epochs;
        self
    }

    /// Sets (or, with `None`, turns off) the early stop on no improvement.
    pub fn max_no_improvement(mut self, steps: Option<usize>) -> Self {
        self.max_no_improvement = steps;
        self
    }

    /// Sets the reassignment ratio (0 turns reassignment off).
    pub fn reassignment_ratio(mut self, ratio: f64) -> Self {
        self.reassignment_ratio = ratio;
        self
    }

    /// Sets the relative tolerance on the centroid shift.
    pub fn tol(mut self, tol: f64) -> Self {
        self.tol = tol;
        self
    }

    /// Sets the number of initialisation candidates.
    pub fn n_init(mut self, n_init: usize) -> Self {
        self.n_init = n_init;
        self
    }

    /// Sets the size of the initialisation sample.
    pub fn init_size(mut self, rows: Option<usize>) -> Self {
        self.init_size = rows;
        self
    }

    /// Sets the initialisation.
    pub fn init(mut self, init: KMeansInit) -> Self {
        self.init = init;
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The Lloyd parameters these share (what the fitted model reports).
    pub(super) fn as_kmeans(&self) -> KMeans {
        KMeans::new(self.k)
            .n_init(self.n_init.max(1))
            .max_iter(self.max_iter.max(1))
            .tol(self.tol)
            .seed(self.seed)
            .init(self.init.clone())
    }

    /// Checks the parameters against data of `n` rows and `d` features.
    pub fn validate(&self, n: usize, d: usize) -> Result<()> {
        self.as_kmeans().validate(n, d)?;
        Error::require_count("batch_size", self.batch_size)?;
        Error::require_count("max_iter", self.max_iter)?;
        Error::require_count("n_init", self.n_init)?;
        if self.max_no_improvement == Some(0) {
            return Err(Error::invalid(
                "max_no_improvement",
                "must be at least 1 (or None)",
            ));
        }
        if !(0.0..=1.0).contains(&self.reassignment_ratio) {
            return Err(Error::invalid("reassignment_ratio", "must be in [0, 1]"));
        }
        if self.init_size == Some(0) {
            return Err(Error::invalid("init_size", "must be at least 1"));
        }
        Ok(())
    }

    /// The parameters a fit on `n` rows runs with: scikit-learn's `_batch_size =
    /// min(batch_size, n)` (100 rows with the default batch of 1024 make 100-row batches, so
    /// `max_iter` epochs are `max_iter` steps), and its initialisation sample: `init_size`,
    /// else 3·batch, raised to 3·K when below K, at most N.
    pub fn resolved_for(&self, n: usize) -> MiniBatchKMeans {
        let batch_size = self.batch_size.min(n).max(1);
        let mut init_size = self.init_size.unwrap_or(3 * batch_size);
        if init_size < self.k {
            init_size = 3 * self.k;
        }
        MiniBatchKMeans {
            batch_size,
            init_size: Some(init_size.min(n)),
            ..self.clone()
        }
    }

    /// Rows of the initialisation sample (of parameters [`MiniBatchKMeans::resolved_for`]
    /// made).
    pub(super) fn sample_size(&self, n: usize) -> usize {
        self.init_size.unwrap_or(3 * self.batch_size).min(n)
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
        assert_eq!(KMeans::new(255).init, KMeansInit::KMeansPlusPlus);
        assert_eq!(KMeans::new(256).init, KMeansInit::PARALLEL);
        assert_eq!(MiniBatchKMeans::new(1024).init, KMeansInit::KMeansPlusPlus);
        let e = "given centroids".parse::<KMeansInit>().unwrap_err();
        assert!(
            matches!(e, Error::InvalidParameter { name: "init", .. }),
            "{e}"
        );
    }
}
