//! Temporary: copies of library enums for clap, until the library's own `FromStr` and names
//! land (then [`crate::choices`] parses the library enums directly and this file goes).

use clap::ValueEnum;
use wgpu_unsupervised::{Criterion, GmmInit, KMeansInit, PcaSolver};

/// The `select-k --criterion` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CriterionArg {
    /// K-Means inertia; the suggested k maximises the second difference of log inertia.
    Elbow,
    /// Gap statistic (Tibshirani, Walther & Hastie 2001).
    Gap,
    /// Bayesian information criterion of a Gaussian mixture.
    Bic,
    /// Akaike information criterion of a Gaussian mixture.
    Aic,
}

impl CriterionArg {
    /// The library's criterion for this choice.
    pub fn to_criterion(self) -> Criterion {
        match self {
            CriterionArg::Elbow => Criterion::Elbow,
            CriterionArg::Gap => Criterion::Gap,
            CriterionArg::Bic => Criterion::Bic,
            CriterionArg::Aic => Criterion::Aic,
        }
    }
}

/// The `--init` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InitArg {
    /// Greedy k-means++ seeding.
    #[value(name = "k-means++", alias = "kmeans++")]
    KMeansPlusPlus,
    /// K distinct rows chosen uniformly at random.
    Random,
}

impl InitArg {
    /// The library's initialisation for this choice.
    pub fn to_init(self) -> KMeansInit {
        match self {
            InitArg::KMeansPlusPlus => KMeansInit::KMeansPlusPlus,
            InitArg::Random => KMeansInit::Random,
        }
    }
}

/// The `gmm --init` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GmmInitArg {
    /// Hard responsibilities from a K-Means fit.
    #[value(name = "kmeans", alias = "k-means")]
    KMeans,
    /// Hard responsibilities from the nearest k-means++ seed.
    #[value(name = "kmeans++", alias = "k-means++")]
    KMeansPlusPlus,
    /// Random responsibilities, normalised per sample.
    Random,
}

impl GmmInitArg {
    /// The library's initialisation for this choice.
    pub fn to_init(self) -> GmmInit {
        match self {
            GmmInitArg::KMeans => GmmInit::KMeans,
            GmmInitArg::KMeansPlusPlus => GmmInit::KMeansPlusPlus,
            GmmInitArg::Random => GmmInit::Random,
        }
    }
}

/// The `--solver` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SolverArg {
    /// Full below a few hundred features or for many components, power iteration
    /// otherwise, matrix-free when the D x D covariance does not fit on the device.
    Auto,
    /// Covariance on the GPU, full eigendecomposition on the host.
    Full,
    /// Block power iteration on the covariance.
    Power,
    /// Power iteration without forming the covariance.
    MatrixFree,
}

impl SolverArg {
    /// The library's solver for this choice.
    pub fn to_solver(self) -> PcaSolver {
        match self {
            SolverArg::Auto => PcaSolver::Auto,
            SolverArg::Full => PcaSolver::Full,
            SolverArg::Power => PcaSolver::Power,
            SolverArg::MatrixFree => PcaSolver::MatrixFree,
        }
    }
}

/// The human-readable name of an initialisation.
pub fn init_name(init: &KMeansInit) -> &'static str {
    match init {
        KMeansInit::KMeansPlusPlus => "k-means++",
        KMeansInit::Random => "random",
        KMeansInit::Centroids(_) => "given centroids",
    }
}

/// The command-line name of a mixture initialisation.
pub fn gmm_init_name(init: &GmmInit) -> &'static str {
    match init {
        GmmInit::KMeans => "kmeans",
        GmmInit::KMeansPlusPlus => "kmeans++",
        GmmInit::Random => "random",
        GmmInit::Given(_) => "given parameters",
    }
}

/// The command-line name of a solver.
pub fn solver_name(solver: PcaSolver) -> &'static str {
    match solver {
        PcaSolver::Auto => "auto",
        PcaSolver::Full => "full",
        PcaSolver::Power => "power",
        PcaSolver::MatrixFree => "matrix-free",
    }
}
