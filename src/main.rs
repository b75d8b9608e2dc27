//! `wgpu-unsupervised`: K-Means, PCA and Gaussian mixtures on the GPU from the command line.
//!
//! Commands:
//!
//! * `wgpu-unsupervised kmeans --input X.{npy,csv} --k 8 [--n-init N] [--max-iter N]
//!   [--tol F] [--seed N] [--init k-means++|random] [--output labels.npy]
//!   [--model model.json] [--json]`
//!
//!   Fits K-Means on the matrix in `--input` (one row per sample), then writes the training
//!   labels as a 1-D `u4` `.npy` array to `--output` and the fitted model as JSON to
//!   `--model`, when given. Parameters left out keep the library's defaults (see
//!   [`wgpu_unsupervised::KMeans`]).
//! * `wgpu-unsupervised gmm --input X --k 5 [--covariance full|tied|diag|spherical]
//!   [--n-init N] [--max-iter N] [--tol F] [--reg-covar F] [--seed N]
//!   [--init kmeans|kmeans++|random] [--output labels.npy] [--proba P.npy] [--model m.json]
//!   [--json]`
//!
//!   Fits a Gaussian mixture by EM (see [`wgpu_unsupervised::GaussianMixture`]), then writes
//!   the training labels (most probable component, `u4`) to `--output`, the N x K
//!   responsibilities p(k | xᵢ) (`f4`, rows summing to 1) to `--proba` and the model to
//!   `--model`, when given. The report gives the mean log-likelihood of the training rows
//!   under the fitted model, the BIC and (human report) the AIC.
//! * `wgpu-unsupervised pca --input X --components 50|0.95 [--whiten] [--no-center]
//!   [--standardize] [--solver auto|full|power|matrix-free] [--tol F] [--max-iter N]
//!   [--seed N] [--ddof 0|1] [--output Z.npy] [--model m.json] [--plot spectrum.svg] [--json]`
//!
//!   Fits PCA (see [`wgpu_unsupervised::Pca`]), then writes the N x M projections of the
//!   training rows as a 2-D `f4` `.npy` array to `--output` and the model to `--model`.
//!   `--components` written as an integer (`50`) keeps exactly that many components; written
//!   with a decimal point or an exponent (`0.95`, `1.0`, `5e-1`) it is a fraction of the
//!   variance in (0, 1]: the fewest components whose cumulative explained-variance ratio
//!   exceeds it (`1.0` keeps all min(N, D)). `--plot` draws the explained-variance ratio of
//!   the kept components and its cumulative sum as SVG.
//! * `wgpu-unsupervised transform --model m.json --input X --output Z.npy [--inverse] [--json]`
//!
//!   Projects every row of `--input` with a saved PCA model (N x M, `f4`); with `--inverse`,
//!   reconstructs N x D rows from N x M projections.
//! * `wgpu-unsupervised predict --model model.json --input X --output out.npy [--proba P.npy]
//!   [--json]`
//!
//!   Applies a saved model: a K-Means model assigns every row to its nearest centroid
//!   (labels, `u4`); a Gaussian-mixture model assigns it to its most probable component
//!   (labels, `u4`) and, with `--proba`, writes the N x K responsibilities (`f4`; `--proba`
//!   is refused for other models); a PCA model projects the rows, as `transform` does.
//! * `wgpu-unsupervised evaluate --input X --labels y.npy [--truth t.npy] [--sample-size N]
//!   [--seed N] [--json]`
//!
//!   Judges a labelling of `--input` (one integer label per row, `.npy` 1-D or `.csv`, read
//!   by [`wgpu_unsupervised::io::read_labels`]) with
//!   [`wgpu_unsupervised::metrics::evaluate`]: the silhouette (on the GPU; on a random
//!   sample of `--sample-size` rows drawn with `--seed` when given), Calinski–Harabasz,
//!   Davies–Bouldin and the inertia around the clusters' means, and with `--truth` the Rand
//!   and adjusted Rand indices. The labels need 2 ≤ clusters ≤ N − 1. `--json` keys: `n`,
//!   `d`, `k`, `silhouette`, `calinski_harabasz`, `davies_bouldin`, `inertia`,
//!   (`rand_index`, `adjusted_rand_index` with `--truth`), `silhouette_rows`, `seconds`,
//!   `adapter`.
//! * `wgpu-unsupervised select-k --input X --algorithm kmeans|gmm [--k-min 1] [--k-max 15]
//!   [--criterion elbow|gap|bic|aic] [--covariance full|tied|diag|spherical] [--n-refs B]
//!   [--n-init N] [--max-iter N] [--seed N] [--plot curve.svg] [--json]`
//!
//!   Fits the model for every k in `--k-min..=--k-max` (data uploaded once; K-Means with 3
//!   restarts per fit unless `--n-init` says otherwise, as one poor local optimum can bend
//!   a curve) and prints the
//!   curve and the suggested k (see [`wgpu_unsupervised::selection`]): for `kmeans` the gap
//!   statistic (default; `--n-refs` uniform reference sets, default 10: the smallest k with
//!   Gap(k) ≥ Gap(k+1) − s_{k+1}) or the elbow (the largest second difference of
//!   log inertia); for `gmm` the BIC (default) or AIC (lowest wins). `--plot` draws the curve
//!   and the suggested k as SVG. `--json` keys: `algorithm`, `criterion`, `n`, `d`, `k`
//!   (array), `values` (array: inertia for elbow and gap, BIC or AIC), with gap also `gap`,
//!   `s_k` (arrays) and `n_refs`, then `suggested_k`, `seconds`, `adapter`.
//! * `wgpu-unsupervised info [--json]`
//!
//!   Prints the adapter the program would use (name, backend, device type, driver) and the
//!   device limits that matter to the crate.
//!
//! Inputs are read by [`wgpu_unsupervised::io::read_matrix`]: `.npy` (2-D, C order, float or
//! integer dtype) or numeric `.csv` with an optional header line. Every value must be finite.
//!
//! With `--json` a command prints exactly one line of JSON on stdout and nothing else;
//! without it, a short human report. Outputs are written only once the computation has
//! succeeded, each atomically (a temporary file renamed over the target), so a failure never
//! leaves a partial file.
//!
//! A model file is a JSON envelope `{"format":..,"version":1,"model":{..}}` around the serde
//! form of the model: format `wgpu-unsupervised/kmeans` for
//! [`wgpu_unsupervised::KMeansModel`], `wgpu-unsupervised/pca` for
//! [`wgpu_unsupervised::PcaModel`], `wgpu-unsupervised/gmm` for
//! [`wgpu_unsupervised::GaussianMixtureModel`]. `predict` and `transform` refuse other
//! formats, other versions and models whose parts do not fit together (for a mixture:
//! array sizes against K, D and the covariance type, finite values, weights summing to 1,
//! positive-definite covariances and precision factors that match them).
//!
//! Exit status: 0 on success; 2 for usage errors, invalid parameters and unreadable or
//! invalid input files (data or model), and for a mixture whose covariance stops being
//! positive definite (raise `--reg-covar`); 1 for runtime failures (no adapter, GPU errors,
//! device lost, out of memory, a power iteration that did not converge, outputs that cannot
//! be written). Errors are reported as one line, `error: <message>`, on stderr.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};
use wgpu_unsupervised::io::{self, Dataset};
use wgpu_unsupervised::{
    metrics, plot, selection, Components, CovarianceType, Criterion, Error, GaussianMixture,
    GaussianMixtureModel, GmmInit, Gpu, GpuInfo, GpuMatrix, KMeans, KMeansInit, KMeansModel,
    Matrix, Pca, PcaModel, PcaSolver,
};

/// The `format` field of a K-Means model file.
const KMEANS_FORMAT: &str = "wgpu-unsupervised/kmeans";

/// The `format` field of a PCA model file.
const PCA_FORMAT: &str = "wgpu-unsupervised/pca";

/// The `format` field of a Gaussian-mixture model file.
const GMM_FORMAT: &str = "wgpu-unsupervised/gmm";

/// The `version` field of a model file written by this program (the only one it reads).
const MODEL_VERSION: u64 = 1;

/// Exit status for invalid parameters and unreadable or invalid inputs (clap uses it too).
const EXIT_INVALID: u8 = 2;

/// Exit status for runtime failures (GPU, device, writing outputs).
const EXIT_RUNTIME: u8 = 1;

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(
    name = "wgpu-unsupervised",
    version,
    about = "K-Means clustering, PCA and Gaussian mixtures on any GPU through wgpu",
    long_about = "K-Means clustering, PCA and Gaussian mixtures on any GPU through wgpu \
                  (Vulkan, Metal, DX12, GL or the lavapipe software driver).\n\nExit status: \
                  0 success, 2 invalid arguments or input files, 1 runtime failure (GPU, a \
                  power iteration that did not converge, writing outputs)."
)]
struct Cli {
    /// The command to run.
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Fit K-Means on a matrix; optionally save the labels and the model.
    Kmeans(KmeansArgs),
    /// Fit a Gaussian mixture by EM; optionally save the labels, the responsibilities and the
    /// model.
    Gmm(GmmArgs),
    /// Apply a saved model: K-Means or Gaussian-mixture labels (and mixture
    /// responsibilities), or PCA projections.
    Predict(PredictArgs),
    /// Fit PCA on a matrix; optionally save the projections and the model.
    Pca(PcaArgs),
    /// Project a matrix with a saved PCA model (or reconstruct it with --inverse).
    Transform(TransformArgs),
    /// Show the GPU adapter and its limits.
    Info(InfoArgs),
    /// Judge a labelling of a matrix: silhouette, Calinski–Harabasz, Davies–Bouldin,
    /// inertia, and the (adjusted) Rand index against true labels.
    Evaluate(EvaluateArgs),
    /// Choose the number of clusters or components: elbow or gap statistic for K-Means,
    /// BIC or AIC for Gaussian mixtures, over a range of k.
    SelectK(SelectKArgs),
}

/// Arguments of `kmeans`.
#[derive(Debug, clap::Args)]
struct KmeansArgs {
    /// Input matrix, one row per sample: .npy (2-D, C order) or .csv (optional header).
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Number of clusters.
    #[arg(long, value_name = "K")]
    k: usize,
    /// Independent restarts; the lowest inertia wins [default: 1].
    #[arg(long, value_name = "N")]
    n_init: Option<usize>,
    /// Maximum Lloyd iterations per restart [default: 300].
    #[arg(long, value_name = "N")]
    max_iter: Option<usize>,
    /// Convergence tolerance, relative to the mean feature variance [default: 1e-4].
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    tol: Option<f64>,
    /// Random seed; the same seed gives the same result on the same adapter [default: 0].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Initialisation method [default: k-means++].
    #[arg(long, value_enum, value_name = "METHOD")]
    init: Option<InitArg>,
    /// Write the training labels here (.npy, dtype u4).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write the fitted model here (JSON).
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// Arguments of `gmm`.
#[derive(Debug, clap::Args)]
struct GmmArgs {
    /// Input matrix, one row per sample: .npy (2-D, C order) or .csv (optional header).
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Number of mixture components.
    #[arg(long, value_name = "K")]
    k: usize,
    /// Shape of the component covariances [default: full].
    #[arg(long, value_enum, value_name = "TYPE")]
    covariance: Option<CovarianceArg>,
    /// Independent initialisations; the highest final log-likelihood bound wins
    /// [default: 1].
    #[arg(long, value_name = "N")]
    n_init: Option<usize>,
    /// Maximum EM iterations per initialisation [default: 100].
    #[arg(long, value_name = "N")]
    max_iter: Option<usize>,
    /// Convergence threshold on the change of the mean per-sample log-likelihood bound
    /// [default: 1e-3].
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    tol: Option<f64>,
    /// Added to every covariance diagonal, keeping it positive definite [default: 1e-6].
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    reg_covar: Option<f64>,
    /// Random seed; the same seed gives the same result on the same adapter [default: 0].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Initial responsibilities [default: kmeans].
    #[arg(long, value_enum, value_name = "METHOD")]
    init: Option<GmmInitArg>,
    /// Write the training labels (most probable component) here (.npy, dtype u4).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write the N x K responsibilities p(k | x) of the training rows here (.npy, dtype f4).
    #[arg(long, value_name = "FILE")]
    proba: Option<PathBuf>,
    /// Write the fitted model here (JSON).
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// Arguments of `predict`.
#[derive(Debug, clap::Args)]
struct PredictArgs {
    /// Model file written by `kmeans --model`, `gmm --model` or `pca --model`.
    #[arg(long, value_name = "FILE")]
    model: PathBuf,
    /// Input matrix with the model's number of features: .npy or .csv.
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Write the result here (.npy): labels (u4) for K-Means and Gaussian mixtures, N x M
    /// projections (f4) for PCA.
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
    /// Gaussian-mixture models only: also write the N x K responsibilities p(k | x) here
    /// (.npy, dtype f4).
    #[arg(long, value_name = "FILE")]
    proba: Option<PathBuf>,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// Arguments of `pca`.
#[derive(Debug, clap::Args)]
struct PcaArgs {
    /// Input matrix, one row per sample: .npy (2-D, C order) or .csv (optional header).
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Components to keep. An integer M (no decimal point, e.g. 50) keeps exactly M, in
    /// 1..=min(N, D). A number with a decimal point or an exponent (e.g. 0.95, 1.0, 5e-1) is a
    /// fraction of the variance in (0, 1]: the fewest components whose cumulative
    /// explained-variance ratio exceeds it; 1.0 keeps all min(N, D). Fractions need the full
    /// solver (auto picks it).
    #[arg(long, value_name = "M|F", allow_negative_numbers = true)]
    components: String,
    /// Scale the projections to unit variance (divide by the square root of each
    /// component's variance).
    #[arg(long)]
    whiten: bool,
    /// Do not subtract the column means (analyses XᵀX/(N − ddof) instead of the covariance).
    #[arg(long)]
    no_center: bool,
    /// Divide every feature by its standard deviation first.
    #[arg(long)]
    standardize: bool,
    /// Eigen-solver [default: auto].
    #[arg(long, value_enum, value_name = "SOLVER")]
    solver: Option<SolverArg>,
    /// Power iteration: stop when every residual ‖S·v − λv‖ ≤ tol·λ₁ [default: 1e-5].
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    tol: Option<f64>,
    /// Power iteration: iteration cap; not converging is an error (exit 1) [default: 1000].
    #[arg(long, value_name = "N")]
    max_iter: Option<usize>,
    /// Seed of the power iteration's random start [default: 0].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Covariance divisor N − ddof: 0 or 1 [default: 1].
    #[arg(long, value_name = "0|1")]
    ddof: Option<usize>,
    /// Write the N x M projections of the input here (.npy, dtype f4).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write the fitted model here (JSON).
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Draw the explained-variance ratio of the kept components and its cumulative sum
    /// here (.svg).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// Arguments of `evaluate`.
#[derive(Debug, clap::Args)]
struct EvaluateArgs {
    /// Input matrix, one row per sample: .npy (2-D, C order) or .csv (optional header).
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// The labelling to judge, one integer label per row (.npy 1-D integer, or .csv).
    #[arg(long, value_name = "FILE")]
    labels: PathBuf,
    /// True labels, one per row: adds the Rand index and the adjusted Rand index.
    #[arg(long, value_name = "FILE")]
    truth: Option<PathBuf>,
    /// Silhouette on a random sample of this many rows (at least 2) instead of all rows.
    #[arg(long, value_name = "N")]
    sample_size: Option<usize>,
    /// Seed of the silhouette's random sample [default: 0].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// Arguments of `select-k`.
#[derive(Debug, clap::Args)]
struct SelectKArgs {
    /// Input matrix, one row per sample: .npy (2-D, C order) or .csv (optional header).
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// The model fitted for each k.
    #[arg(long, value_enum, value_name = "ALGORITHM")]
    algorithm: AlgorithmArg,
    /// Smallest k tried.
    #[arg(long, value_name = "K", default_value_t = 1)]
    k_min: usize,
    /// Largest k tried (at most the number of rows).
    #[arg(long, value_name = "K", default_value_t = 15)]
    k_max: usize,
    /// Criterion: elbow or gap for kmeans, bic or aic for gmm [default: gap for kmeans, bic
    /// for gmm].
    #[arg(long, value_enum, value_name = "CRITERION")]
    criterion: Option<CriterionArg>,
    /// gmm only: shape of the component covariances [default: full].
    #[arg(long, value_enum, value_name = "TYPE")]
    covariance: Option<CovarianceArg>,
    /// gap only: number B of uniform reference data sets [default: 10].
    #[arg(long, value_name = "B")]
    n_refs: Option<usize>,
    /// Restarts (kmeans) or initialisations (gmm) of every fit [default: 3 for kmeans, whose
    /// curves a poor local optimum at one k can mislead; 1 for gmm].
    #[arg(long, value_name = "N")]
    n_init: Option<usize>,
    /// Iteration cap of every fit [default: 300 for kmeans, 100 for gmm].
    #[arg(long, value_name = "N")]
    max_iter: Option<usize>,
    /// Seed of the fits and of the gap statistic's reference sets [default: 0].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Draw the curve and the suggested k here (.svg).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// The `select-k --algorithm` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AlgorithmArg {
    /// K-Means (criteria elbow, gap).
    Kmeans,
    /// Gaussian mixtures (criteria bic, aic).
    Gmm,
}

/// The `select-k --criterion` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CriterionArg {
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
    fn to_criterion(self) -> Criterion {
        match self {
            CriterionArg::Elbow => Criterion::Elbow,
            CriterionArg::Gap => Criterion::Gap,
            CriterionArg::Bic => Criterion::Bic,
            CriterionArg::Aic => Criterion::Aic,
        }
    }
}

/// Arguments of `transform`.
#[derive(Debug, clap::Args)]
struct TransformArgs {
    /// Model file written by `pca --model`.
    #[arg(long, value_name = "FILE")]
    model: PathBuf,
    /// Input matrix: N x D rows (N x M projections with --inverse), .npy or .csv.
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Write the projections (reconstructions with --inverse) here (.npy, dtype f4).
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
    /// Reconstruct N x D rows from N x M projections instead of projecting.
    #[arg(long)]
    inverse: bool,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// Arguments of `info`.
#[derive(Debug, clap::Args)]
struct InfoArgs {
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// The `--init` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum InitArg {
    /// Greedy k-means++ seeding.
    #[value(name = "k-means++", alias = "kmeans++")]
    KMeansPlusPlus,
    /// K distinct rows chosen uniformly at random.
    Random,
}

impl InitArg {
    /// The library's initialisation for this choice.
    fn to_init(self) -> KMeansInit {
        match self {
            InitArg::KMeansPlusPlus => KMeansInit::KMeansPlusPlus,
            InitArg::Random => KMeansInit::Random,
        }
    }
}

/// The `gmm --covariance` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CovarianceArg {
    /// Each component has its own full D x D covariance.
    Full,
    /// All components share one full D x D covariance.
    Tied,
    /// Each component has its own diagonal covariance (D variances).
    Diag,
    /// Each component has a single variance (σ² I).
    Spherical,
}

impl CovarianceArg {
    /// The library's covariance type for this choice.
    fn to_type(self) -> CovarianceType {
        match self {
            CovarianceArg::Full => CovarianceType::Full,
            CovarianceArg::Tied => CovarianceType::Tied,
            CovarianceArg::Diag => CovarianceType::Diag,
            CovarianceArg::Spherical => CovarianceType::Spherical,
        }
    }
}

/// The `gmm --init` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum GmmInitArg {
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
    fn to_init(self) -> GmmInit {
        match self {
            GmmInitArg::KMeans => GmmInit::KMeans,
            GmmInitArg::KMeansPlusPlus => GmmInit::KMeansPlusPlus,
            GmmInitArg::Random => GmmInit::Random,
        }
    }
}

/// The `--solver` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SolverArg {
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
    fn to_solver(self) -> PcaSolver {
        match self {
            SolverArg::Auto => PcaSolver::Auto,
            SolverArg::Full => PcaSolver::Full,
            SolverArg::Power => PcaSolver::Power,
            SolverArg::MatrixFree => PcaSolver::MatrixFree,
        }
    }
}

/// A failed command: the message for stderr and the exit status.
#[derive(Debug)]
struct Failure {
    /// What went wrong (may span lines; [`main`] joins them).
    message: String,
    /// The exit status, [`EXIT_INVALID`] or [`EXIT_RUNTIME`].
    code: u8,
}

impl Failure {
    /// A failure caused by the user's parameters or input files (exit 2).
    fn invalid(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: EXIT_INVALID,
        }
    }

    /// A failure of the machine rather than of the input (exit 1).
    fn runtime(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: EXIT_RUNTIME,
        }
    }

    /// A library error from reading an input file: always the input's fault (exit 2).
    fn input(e: Error) -> Self {
        Self::invalid(e.to_string())
    }

    /// A library error from writing an output: always a runtime failure (exit 1).
    fn output(e: Error) -> Self {
        Self::runtime(e.to_string())
    }
}

impl From<Error> for Failure {
    /// Classifies a library error by its kind: bad data or parameters exit 2, anything the
    /// GPU, the device or the file system did exits 1.
    fn from(e: Error) -> Self {
        let code = match e {
            Error::InvalidParameter { .. }
            | Error::TooFewSamples { .. }
            | Error::EmptyData { .. }
            | Error::Shape { .. }
            | Error::NonFinite { .. }
            | Error::FeatureMismatch { .. }
            | Error::Format { .. } => EXIT_INVALID,
            _ => EXIT_RUNTIME,
        };
        Self {
            message: e.to_string(),
            code,
        }
    }
}

/// Shorthand for the commands' results.
type CliResult<T = ()> = Result<T, Failure>;

/// The model file: a format envelope around the serialized model (borrowed for writing).
#[derive(Serialize)]
struct ModelFileOut<'a, M> {
    /// [`KMEANS_FORMAT`], [`PCA_FORMAT`] or [`GMM_FORMAT`].
    format: &'static str,
    /// Always [`MODEL_VERSION`].
    version: u64,
    /// The fitted model.
    model: &'a M,
}

/// The envelope of a model file as read, before its fields are checked.
#[derive(Deserialize)]
struct ModelFileIn {
    /// Must be [`KMEANS_FORMAT`], [`PCA_FORMAT`] or [`GMM_FORMAT`].
    format: Option<serde_json::Value>,
    /// Must be [`MODEL_VERSION`].
    version: Option<serde_json::Value>,
    /// The model, deserialized once the envelope is accepted.
    model: Option<serde_json::Value>,
}

/// The one-line `--json` report of `kmeans`.
#[derive(Serialize)]
struct FitReport<'a> {
    /// Always "kmeans".
    algorithm: &'static str,
    /// Rows of the input.
    n: usize,
    /// Features of the input.
    d: usize,
    /// Number of clusters.
    k: usize,
    /// Final within-cluster sum of squares.
    inertia: f64,
    /// Lloyd iterations of the kept restart.
    n_iter: usize,
    /// Whether the kept restart converged before `max_iter`.
    converged: bool,
    /// Wall time of the fit (data upload included, GPU start-up and file I/O excluded).
    fit_seconds: f64,
    /// Adapter name.
    adapter: &'a str,
}

/// The one-line `--json` report of `gmm`.
#[derive(Serialize)]
struct GmmReport<'a> {
    /// Always "gmm".
    algorithm: &'static str,
    /// Rows of the input.
    n: usize,
    /// Features of the input.
    d: usize,
    /// Number of components.
    k: usize,
    /// "full", "tied", "diag" or "spherical".
    covariance: &'static str,
    /// Mean per-sample log-likelihood (1/N) Σᵢ log p(xᵢ) of the training rows under the
    /// fitted model.
    log_likelihood: f64,
    /// Bayesian information criterion −2 log L + p log N on the training rows.
    bic: f64,
    /// EM iterations of the kept initialisation.
    n_iter: usize,
    /// Whether the kept initialisation converged before `max_iter`.
    converged: bool,
    /// Wall time of the fit (data upload included, GPU start-up, scoring and file I/O
    /// excluded).
    fit_seconds: f64,
    /// Adapter name.
    adapter: &'a str,
}

/// The one-line `--json` report of `predict` with a K-Means or Gaussian-mixture model.
#[derive(Serialize)]
struct PredictReport<'a> {
    /// "kmeans" or "gmm".
    algorithm: &'static str,
    /// Always "predict".
    command: &'static str,
    /// Rows of the input.
    n: usize,
    /// Features of the input.
    d: usize,
    /// Number of clusters (components) of the model.
    k: usize,
    /// Adapter name.
    adapter: &'a str,
    /// Wall time of the prediction (upload and readback included).
    seconds: f64,
}

/// The one-line `--json` report of `pca`.
#[derive(Serialize)]
struct PcaReport<'a> {
    /// Always "pca".
    algorithm: &'static str,
    /// Rows of the input.
    n: usize,
    /// Features of the input.
    d: usize,
    /// Components kept, M.
    n_components: usize,
    /// Explained-variance ratio of each kept component (descending).
    explained_variance_ratio: &'a [f64],
    /// The solver that ran: "full", "power" or "matrix-free".
    solver: &'static str,
    /// Power-iteration steps (0 for the full eigendecomposition).
    n_iter: usize,
    /// Wall time of the fit (data upload included, GPU start-up, projections and file I/O
    /// excluded).
    fit_seconds: f64,
    /// Adapter name.
    adapter: &'a str,
}

/// The one-line `--json` report of `transform`, and of `predict` with a PCA model.
#[derive(Serialize)]
struct TransformReport<'a> {
    /// Always "pca".
    algorithm: &'static str,
    /// "transform" or "predict".
    command: &'static str,
    /// Whether the rows were reconstructed (`--inverse`) rather than projected.
    inverse: bool,
    /// Rows of the input.
    n: usize,
    /// Columns of the input (D, or M with `--inverse`).
    d: usize,
    /// Components of the model, M.
    n_components: usize,
    /// Features of the model, D.
    n_features: usize,
    /// Adapter name.
    adapter: &'a str,
    /// Wall time of the projection (upload and readback included).
    seconds: f64,
}

/// A model file's content, by format.
enum LoadedModel {
    /// Format [`KMEANS_FORMAT`].
    KMeans(KMeansModel),
    /// Format [`PCA_FORMAT`].
    Pca(Box<PcaModel>),
    /// Format [`GMM_FORMAT`].
    Gmm(Box<GaussianMixtureModel>),
}

/// Parses the arguments, runs the command and turns any failure into one line on stderr.
fn main() -> ExitCode {
    let cli = Cli::parse();
    // A panic would be a bug, but it should still end as one `error:` line and exit 1.
    std::panic::set_hook(Box::new(|info| {
        let message = one_line(&format!("internal error (a bug, please report it): {info}"));
        let _ = writeln!(std::io::stderr(), "error: {message}");
    }));
    let outcome = std::panic::catch_unwind(|| run(cli));
    match outcome {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(failure)) => {
            let _ = writeln!(std::io::stderr(), "error: {}", one_line(&failure.message));
            ExitCode::from(failure.code)
        }
        Err(_) => ExitCode::from(EXIT_RUNTIME),
    }
}

/// Runs one command.
fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Kmeans(args) => kmeans(args),
        Command::Gmm(args) => gmm(args),
        Command::Predict(args) => predict(args),
        Command::Pca(args) => pca(args),
        Command::Transform(args) => transform(args),
        Command::Info(args) => info(args),
        Command::Evaluate(args) => evaluate(args),
        Command::SelectK(args) => select_k(args),
    }
}

/// Joins the lines of a (possibly multi-line, e.g. wgpu validation) message into one.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes `text` and a newline to stdout, reporting a closed or failing stdout.
fn emit(text: &str) -> CliResult {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| Failure::runtime(format!("cannot write to stdout: {e}")))
}

/// Serializes a report as one line of JSON and prints it.
fn emit_json(report: &impl Serialize) -> CliResult {
    let line = serde_json::to_string(report)
        .map_err(|e| Failure::runtime(format!("cannot serialize the report: {e}")))?;
    emit(&line)
}

/// Opens the best adapter (exit 1 when there is none).
fn open_gpu() -> CliResult<Gpu> {
    Gpu::new().map_err(Failure::from)
}

/// One `.npy` output of a fit: its flag, its path when given, and what it holds.
struct NpyOutput<'a> {
    /// The option that names it, e.g. `--output`.
    flag: &'static str,
    /// The path, when the option was given.
    path: Option<&'a Path>,
    /// What it holds (labels, projections, responsibilities), for the messages.
    what: &'static str,
}

impl<'a> NpyOutput<'a> {
    /// The `--output` file of a fit, holding `what`.
    fn output(path: Option<&'a Path>, what: &'static str) -> Self {
        Self {
            flag: "--output",
            path,
            what,
        }
    }
}

/// Checks a fit's output paths (`.npy` data outputs, all distinct from each other and from
/// the model file, all writable) and reads its input matrix: all before the GPU starts.
fn read_fit_input(
    input: &Path,
    outputs: &[NpyOutput<'_>],
    model: Option<&Path>,
) -> Result<Dataset, Failure> {
    for output in outputs {
        if let Some(path) = output.path {
            check_npy_extension_of(path, output.what, output.flag)?;
        }
    }
    let mut named: Vec<(&str, Option<&Path>)> = outputs.iter().map(|o| (o.flag, o.path)).collect();
    named.push(("--model", model));
    check_distinct_outputs(&named)?;
    let data = read_input(input)?;
    for (_, path) in named {
        if let Some(path) = path {
            check_writable(path)?;
        }
    }
    Ok(data)
}

/// Reads the input matrix (any failure is the input's: exit 2).
fn read_input(path: &Path) -> CliResult<Dataset> {
    io::read_matrix(path).map_err(Failure::input)
}

/// Checks an `--output` path for `what` (labels, projections) before any work: it must end
/// in `.npy` (exit 2).
fn check_npy_extension(path: &Path, what: &str) -> CliResult {
    check_npy_extension_of(path, what, "--output")
}

/// Checks the path given to `flag` for `what` before any work: it must end in `.npy`
/// (exit 2).
fn check_npy_extension_of(path: &Path, what: &str, flag: &str) -> CliResult {
    let is_npy = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"));
    if is_npy {
        Ok(())
    } else {
        Err(Failure::invalid(format!(
            "{}: {what} are written as NumPy arrays; give {flag} a .npy file name",
            path.display()
        )))
    }
}

/// Checks, before the computation, that an output can be created where asked: its directory
/// exists and the path is not a directory (exit 1 otherwise, as a failed write would).
fn check_writable(path: &Path) -> CliResult {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(Failure::runtime(format!(
            "{}: cannot write: directory {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    if path.is_dir() {
        return Err(Failure::runtime(format!(
            "{}: cannot write: it is a directory",
            path.display()
        )));
    }
    Ok(())
}

/// Refuses two outputs (flag, path when given) naming the same file, e.g. `--output` and
/// `--model` (exit 2).
fn check_distinct_outputs(outputs: &[(&str, Option<&Path>)]) -> CliResult {
    for (i, (flag, path)) in outputs.iter().enumerate() {
        let Some(path) = path else { continue };
        for (other_flag, other) in &outputs[i + 1..] {
            if *other == Some(*path) {
                return Err(Failure::invalid(format!(
                    "{flag} and {other_flag} name the same file ({})",
                    path.display()
                )));
            }
        }
    }
    Ok(())
}

/// Writes `model` in its envelope to `path`, atomically (exit 1 on failure).
fn write_model<M: Serialize>(path: &Path, format: &'static str, model: &M) -> CliResult {
    let file = ModelFileOut {
        format,
        version: MODEL_VERSION,
        model,
    };
    let text = serde_json::to_string(&file)
        .map_err(|e| Failure::runtime(format!("cannot serialize the model: {e}")))?;
    io::write_string(path, &(text + "\n")).map_err(Failure::output)
}

/// The human-readable name of an initialisation.
fn init_name(init: &KMeansInit) -> &'static str {
    match init {
        KMeansInit::KMeansPlusPlus => "k-means++",
        KMeansInit::Random => "random",
        KMeansInit::Centroids(_) => "given centroids",
    }
}

/// `kmeans`: read, validate, fit, then write the outputs and report.
fn kmeans(args: KmeansArgs) -> CliResult {
    let mut params = KMeans::new(args.k);
    if let Some(n_init) = args.n_init {
        params = params.n_init(n_init);
    }
    if let Some(max_iter) = args.max_iter {
        params = params.max_iter(max_iter);
    }
    if let Some(tol) = args.tol {
        params = params.tol(tol);
    }
    if let Some(seed) = args.seed {
        params = params.seed(seed);
    }
    if let Some(init) = args.init {
        params = params.init(init.to_init());
    }
    // Everything the user can get wrong is checked before the (slow) GPU start-up.
    let data = read_fit_input(
        &args.input,
        &[NpyOutput::output(args.output.as_deref(), "labels")],
        args.model.as_deref(),
    )?;
    let x = Matrix::new(&data.data, data.n_features).map_err(Failure::input)?;
    params.validate(data.n_rows, data.n_features)?;

    let gpu = open_gpu()?;
    let start = Instant::now();
    let model = params.fit(&gpu, &x)?;
    let fit_seconds = start.elapsed().as_secs_f64();

    // Outputs only after a successful fit; each write is atomic.
    if let Some(path) = &args.model {
        write_model(path, KMEANS_FORMAT, &model)?;
    }
    if let Some(path) = &args.output {
        io::write_npy_u32(path, model.labels()).map_err(Failure::output)?;
    }

    let info = gpu.info();
    if args.json {
        return emit_json(&FitReport {
            algorithm: "kmeans",
            n: data.n_rows,
            d: data.n_features,
            k: model.k(),
            inertia: model.inertia(),
            n_iter: model.n_iter(),
            converged: model.converged(),
            fit_seconds,
            adapter: &info.name,
        });
    }
    let mut report = vec![
        format!("adapter:    {info}"),
        format!(
            "input:      {} ({} rows x {} features)",
            args.input.display(),
            data.n_rows,
            data.n_features
        ),
        format!(
            "k-means:    k = {}, init {}, n_init {}, max_iter {}, tol {}, seed {}",
            params.k,
            init_name(&params.init),
            params.n_init,
            params.max_iter,
            params.tol,
            params.seed
        ),
        format!("inertia:    {}", model.inertia()),
        format!(
            "iterations: {} ({})",
            model.n_iter(),
            if model.converged() {
                "converged"
            } else {
                "not converged: max_iter reached"
            }
        ),
        format!("fit time:   {fit_seconds:.3} s"),
    ];
    report.push(match &args.output {
        Some(p) => format!("labels:     {}", p.display()),
        None => "labels:     not written (use --output FILE.npy)".to_string(),
    });
    report.push(match &args.model {
        Some(p) => format!("model:      {}", p.display()),
        None => "model:      not written (use --model FILE.json)".to_string(),
    });
    emit(&report.join("\n"))
}

/// The command-line name of a mixture initialisation.
fn gmm_init_name(init: &GmmInit) -> &'static str {
    match init {
        GmmInit::KMeans => "kmeans",
        GmmInit::KMeansPlusPlus => "kmeans++",
        GmmInit::Random => "random",
        GmmInit::Given(_) => "given parameters",
    }
}

/// `gmm`: read, validate, fit, score, then write the outputs and report.
fn gmm(args: GmmArgs) -> CliResult {
    let mut params = GaussianMixture::new(args.k);
    if let Some(covariance) = args.covariance {
        params = params.covariance(covariance.to_type());
    }
    if let Some(n_init) = args.n_init {
        params = params.n_init(n_init);
    }
    if let Some(max_iter) = args.max_iter {
        params = params.max_iter(max_iter);
    }
    if let Some(tol) = args.tol {
        params = params.tol(tol);
    }
    if let Some(reg_covar) = args.reg_covar {
        params = params.reg_covar(reg_covar);
    }
    if let Some(seed) = args.seed {
        params = params.seed(seed);
    }
    if let Some(init) = args.init {
        params = params.init(init.to_init());
    }
    // Everything the user can get wrong is checked before the (slow) GPU start-up.
    let data = read_fit_input(
        &args.input,
        &[
            NpyOutput::output(args.output.as_deref(), "labels"),
            NpyOutput {
                flag: "--proba",
                path: args.proba.as_deref(),
                what: "responsibilities",
            },
        ],
        args.model.as_deref(),
    )?;
    let x = Matrix::new(&data.data, data.n_features).map_err(Failure::input)?;
    let (n, d) = (data.n_rows, data.n_features);
    params.validate(n, d)?;

    let gpu = open_gpu()?;
    let start = Instant::now();
    let xg = GpuMatrix::upload(&gpu, &x)?;
    let model = params.fit(&gpu, &xg)?;
    let fit_seconds = start.elapsed().as_secs_f64();

    // One E-step with the final parameters gives the mean log-likelihood of the training
    // rows (`model.score`), hence BIC and AIC, and the responsibilities (`predict_proba`).
    let start = Instant::now();
    let evaluation = model.evaluate_gpu(&gpu, &xg)?;
    let log_likelihood = evaluation.mean_log_likelihood;
    let (bic, aic) = model.information_criteria(log_likelihood, n);
    let k = model.k();
    let proba = match &args.proba {
        Some(_) => Some(evaluation.responsibilities.to_host(&gpu)?),
        None => None,
    };
    let score_seconds = start.elapsed().as_secs_f64();

    // Outputs only after the fit and the scoring succeeded; each write is atomic.
    if let Some(path) = &args.model {
        write_model(path, GMM_FORMAT, &model)?;
    }
    if let Some(path) = &args.output {
        io::write_npy_u32(path, model.labels()).map_err(Failure::output)?;
    }
    if let (Some(path), Some(proba)) = (&args.proba, &proba) {
        io::write_npy_f32(path, proba, &[n as u64, k as u64]).map_err(Failure::output)?;
    }

    let info = gpu.info();
    let covariance = model.covariance_type().name();
    if args.json {
        return emit_json(&GmmReport {
            algorithm: "gmm",
            n,
            d,
            k,
            covariance,
            log_likelihood,
            bic,
            n_iter: model.n_iter(),
            converged: model.converged(),
            fit_seconds,
            adapter: &info.name,
        });
    }
    let weights: Vec<String> = model
        .weights()
        .iter()
        .take(8)
        .map(|w| format!("{w:.4}"))
        .collect();
    let more = if k > weights.len() { ", …" } else { "" };
    let mut report = vec![
        format!("adapter:        {info}"),
        format!(
            "input:          {} ({n} rows x {d} features)",
            args.input.display()
        ),
        format!(
            "gmm:            k = {}, covariance {covariance}, init {}, n_init {}, max_iter {}, \
             tol {}, reg_covar {:e}, seed {}",
            params.k,
            gmm_init_name(&params.init),
            params.n_init,
            params.max_iter,
            params.tol,
            params.reg_covar,
            params.seed
        ),
        format!(
            "iterations:     {} ({})",
            model.n_iter(),
            if model.converged() {
                "converged"
            } else {
                "not converged: max_iter reached"
            }
        ),
        format!("log-likelihood: {log_likelihood} per sample (mean over the {n} training rows)"),
        format!(
            "BIC:            {bic} ({} free parameters)",
            model.n_parameters()
        ),
        format!("AIC:            {aic}"),
        format!("weights:        {}{more}", weights.join(", ")),
        format!("fit time:       {fit_seconds:.3} s (scoring {score_seconds:.3} s)"),
    ];
    report.push(match &args.output {
        Some(p) => format!("labels:         {}", p.display()),
        None => "labels:         not written (use --output FILE.npy)".to_string(),
    });
    report.push(match &args.proba {
        Some(p) => format!("proba:          {} ({n} x {k})", p.display()),
        None => "proba:          not written (use --proba FILE.npy)".to_string(),
    });
    report.push(match &args.model {
        Some(p) => format!("model:          {}", p.display()),
        None => "model:          not written (use --model FILE.json)".to_string(),
    });
    emit(&report.join("\n"))
}

/// Parses `--components`: digits only are a count, any other finite number a fraction of the
/// variance (exit 2 for anything else, naming the rule).
fn parse_components(text: &str) -> CliResult<Components> {
    let text = text.trim();
    let rule = "an integer count M >= 1, or a fraction of the variance in (0, 1] written \
                with a decimal point (e.g. 0.95)";
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return match text.parse::<usize>() {
            Ok(0) => Err(Failure::invalid(format!(
                "invalid --components 0: keep at least one component ({rule})"
            ))),
            Ok(m) => Ok(Components::Count(m)),
            Err(_) => Err(Failure::invalid(format!(
                "invalid --components {text}: too large ({rule})"
            ))),
        };
    }
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 && f <= 1.0 => Ok(Components::Fraction(f)),
        Ok(f) if f.is_finite() && f > 1.0 => Err(Failure::invalid(format!(
            "invalid --components {text}: a number with a decimal point is a fraction of the \
             variance and must be in (0, 1]; write an integer for a count"
        ))),
        _ => Err(Failure::invalid(format!(
            "invalid --components {text:?}: expected {rule}"
        ))),
    }
}

/// The command-line name of a solver.
fn solver_name(solver: PcaSolver) -> &'static str {
    match solver {
        PcaSolver::Auto => "auto",
        PcaSolver::Full => "full",
        PcaSolver::Power => "power",
        PcaSolver::MatrixFree => "matrix-free",
    }
}

/// `pca`: read, validate, fit, project, then write the outputs and report.
fn pca(args: PcaArgs) -> CliResult {
    let components = parse_components(&args.components)?;
    let mut params = Pca::new(components)
        .whiten(args.whiten)
        .center(!args.no_center)
        .standardize(args.standardize);
    if let Some(solver) = args.solver {
        params = params.solver(solver.to_solver());
    }
    if let Some(tol) = args.tol {
        params = params.tol(tol);
    }
    if let Some(max_iter) = args.max_iter {
        params = params.max_iter(max_iter);
    }
    if let Some(seed) = args.seed {
        params = params.seed(seed);
    }
    if let Some(ddof) = args.ddof {
        params = params.ddof(ddof);
    }
    if let Components::Fraction(f) = components {
        if matches!(params.solver, PcaSolver::Power | PcaSolver::MatrixFree) {
            return Err(Failure::invalid(format!(
                "--components {f} is a fraction of the variance, which needs the whole \
                 spectrum: use --solver full (or auto), or give an integer count for --solver {}",
                solver_name(params.solver)
            )));
        }
    }
    // Everything the user can get wrong is checked before the (slow) GPU start-up.
    if let Some(plot) = &args.plot {
        check_svg_extension(plot)?;
        check_distinct_outputs(&[
            ("--plot", Some(plot)),
            ("--output", args.output.as_deref()),
            ("--model", args.model.as_deref()),
        ])?;
        check_writable(plot)?;
    }
    let data = read_fit_input(
        &args.input,
        &[NpyOutput::output(args.output.as_deref(), "projections")],
        args.model.as_deref(),
    )?;
    let x = Matrix::new(&data.data, data.n_features).map_err(Failure::input)?;
    params.validate(data.n_rows, data.n_features)?;

    let gpu = open_gpu()?;
    let start = Instant::now();
    let xg = GpuMatrix::upload(&gpu, &x)?;
    let model = params.fit(&gpu, &xg)?;
    let fit_seconds = start.elapsed().as_secs_f64();
    let projected = match &args.output {
        Some(_) => {
            let start = Instant::now();
            let z = model.transform(&gpu, &xg)?;
            Some((z, start.elapsed().as_secs_f64()))
        }
        None => None,
    };
    let (n, d, m) = (data.n_rows, data.n_features, model.n_components());

    // Outputs only after the fit and the projections succeeded; each write is atomic.
    if let Some(path) = &args.model {
        write_model(path, PCA_FORMAT, &model)?;
    }
    if let (Some(path), Some((z, _))) = (&args.output, &projected) {
        io::write_npy_f32(path, z, &[n as u64, m as u64]).map_err(Failure::output)?;
    }
    if let Some(path) = &args.plot {
        plot::write_spectrum(path, &selection::pca_spectrum(&model)).map_err(Failure::output)?;
    }

    let info = gpu.info();
    if args.json {
        return emit_json(&PcaReport {
            algorithm: "pca",
            n,
            d,
            n_components: m,
            explained_variance_ratio: model.explained_variance_ratio(),
            solver: solver_name(model.solver()),
            n_iter: model.n_iter(),
            fit_seconds,
            adapter: &info.name,
        });
    }
    let ratios = model.explained_variance_ratio();
    let cumulative: f64 = ratios.iter().sum();
    let shown: Vec<String> = ratios
        .iter()
        .take(8)
        .map(|r| format!("{:.2}%", 100.0 * r))
        .collect();
    let more = if ratios.len() > shown.len() {
        ", …"
    } else {
        ""
    };
    let requested = match components {
        Components::Count(c) => format!("{c} requested"),
        Components::Fraction(f) => format!("fraction {f} of the variance requested"),
    };
    let mut options = vec![if params.center {
        "centred"
    } else {
        "not centred"
    }];
    if params.standardize {
        options.push("standardised");
    }
    if params.whiten {
        options.push("whitened");
    }
    let solver = match model.solver() {
        PcaSolver::Power | PcaSolver::MatrixFree => format!(
            "{} ({} iterations, tol {}, seed {})",
            solver_name(model.solver()),
            model.n_iter(),
            params.tol,
            params.seed
        ),
        other => format!("{} (eigendecomposition)", solver_name(other)),
    };
    let mut report = vec![
        format!("adapter:     {info}"),
        format!(
            "input:       {} ({n} rows x {d} features)",
            args.input.display()
        ),
        format!("pca:         {}, ddof {}", options.join(", "), params.ddof),
        format!("components:  {m} of {d} kept ({requested})"),
        format!(
            "explained:   {:.2}% cumulative ({}{more})",
            100.0 * cumulative,
            shown.join(", ")
        ),
        format!("solver:      {solver}"),
        format!("fit time:    {fit_seconds:.3} s"),
    ];
    report.push(match (&args.output, &projected) {
        (Some(p), Some((_, seconds))) => {
            format!("projections: {} ({n} x {m}, {seconds:.3} s)", p.display())
        }
        _ => "projections: not written (use --output FILE.npy)".to_string(),
    });
    report.push(match &args.model {
        Some(p) => format!("model:       {}", p.display()),
        None => "model:       not written (use --model FILE.json)".to_string(),
    });
    if let Some(p) = &args.plot {
        report.push(format!("plot:        {}", p.display()));
    }
    emit(&report.join("\n"))
}

/// Reads and checks a model file: envelope, format, version, then the model's consistency.
/// Every failure is the file's fault (exit 2) and names the file.
fn load_model(path: &Path) -> CliResult<LoadedModel> {
    let bad = |reason: String| {
        Failure::from(Error::Format {
            path: path.to_path_buf(),
            reason,
        })
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::input(match e.kind() {
            std::io::ErrorKind::InvalidData => Error::Format {
                path: path.to_path_buf(),
                reason: "not a model file: not UTF-8 text".into(),
            },
            _ => Error::Io {
                path: path.to_path_buf(),
                source: e,
            },
        })
    })?;
    let envelope: ModelFileIn = serde_json::from_str(&text)
        .map_err(|e| bad(format!("not a model file: invalid JSON object ({e})")))?;
    let expected = format!("expected \"{KMEANS_FORMAT}\", \"{PCA_FORMAT}\" or \"{GMM_FORMAT}\"");
    let format = match &envelope.format {
        Some(serde_json::Value::String(f))
            if f == KMEANS_FORMAT || f == PCA_FORMAT || f == GMM_FORMAT =>
        {
            f.clone()
        }
        Some(other) => {
            return Err(bad(format!(
                "not a model of this program: format is {other}, {expected}"
            )))
        }
        None => {
            return Err(bad(format!(
                "not a model file: no \"format\" field ({expected})"
            )))
        }
    };
    match &envelope.version {
        Some(v) if v.as_u64() == Some(MODEL_VERSION) => {}
        Some(v) => {
            return Err(bad(format!(
                "unsupported model version {v}: this program reads version {MODEL_VERSION}"
            )))
        }
        None => return Err(bad("not a model file: no \"version\" field".into())),
    }
    let value = envelope
        .model
        .ok_or_else(|| bad("not a model file: no \"model\" field".into()))?;

    if format == PCA_FORMAT {
        let model: PcaModel =
            serde_json::from_value(value).map_err(|e| bad(format!("invalid PCA model: {e}")))?;
        check_pca_model(&model).map_err(|reason| bad(format!("inconsistent model: {reason}")))?;
        return Ok(LoadedModel::Pca(Box::new(model)));
    }
    if format == GMM_FORMAT {
        let model: GaussianMixtureModel = serde_json::from_value(value)
            .map_err(|e| bad(format!("invalid Gaussian-mixture model: {e}")))?;
        check_gmm_model(&model).map_err(|reason| bad(format!("inconsistent model: {reason}")))?;
        return Ok(LoadedModel::Gmm(Box::new(model)));
    }
    let model: KMeansModel =
        serde_json::from_value(value).map_err(|e| bad(format!("invalid model: {e}")))?;

    // The serde form is not validated on the way in: check the parts fit together.
    let (k, d) = (model.k(), model.n_features());
    if k == 0 || d == 0 || k.checked_mul(d) != Some(model.centroids().len()) {
        return Err(bad(format!(
            "inconsistent model: {} centroid values for k = {k} clusters of d = {d} features",
            model.centroids().len()
        )));
    }
    KMeansModel::from_centroids(model.centroids().to_vec(), d)
        .map_err(|e| bad(format!("inconsistent model: {e}")))?;
    Ok(LoadedModel::KMeans(model))
}

/// Checks that the parts of a deserialized PCA model fit together (the serde form is not
/// validated on the way in): sizes, finite values, positive scales, and variances that
/// whitening can divide by.
fn check_pca_model(model: &PcaModel) -> Result<(), String> {
    let (m, d, n) = (model.n_components(), model.n_features(), model.n_samples());
    if d == 0 || m == 0 || m > d || n < 2 || m > n {
        return Err(format!(
            "{m} components of {d} features fitted on {n} samples"
        ));
    }
    let lengths = [
        ("components", model.components().len(), m * d),
        ("explained_variance", model.explained_variance().len(), m),
        (
            "explained_variance_ratio",
            model.explained_variance_ratio().len(),
            m,
        ),
        ("mean", model.mean().len(), d),
        ("scale", model.scale().len(), d),
    ];
    for (name, found, expected) in lengths {
        if found != expected {
            return Err(format!(
                "{name} has {found} values, expected {expected} for {m} components of {d} features"
            ));
        }
    }
    let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
    if !finite(model.components()) || !finite(model.mean()) {
        return Err("non-finite components or mean".into());
    }
    if !model.scale().iter().all(|s| s.is_finite() && *s > 0.0) {
        return Err("scale values must be finite and > 0".into());
    }
    if !model
        .explained_variance()
        .iter()
        .all(|v| v.is_finite() && *v >= 0.0)
    {
        return Err("explained variances must be finite and >= 0".into());
    }
    if model.params().whiten && model.explained_variance().iter().any(|v| *v <= 0.0) {
        return Err("a whitening model with a zero-variance component".into());
    }
    Ok(())
}

/// Number of covariance (and precision-factor) values of a mixture of `k` components of `d`
/// features, or `None` when it overflows (a model file can claim any sizes).
fn gmm_covariance_len(covariance_type: CovarianceType, k: usize, d: usize) -> Option<usize> {
    match covariance_type {
        CovarianceType::Full => k.checked_mul(d)?.checked_mul(d),
        CovarianceType::Tied => d.checked_mul(d),
        CovarianceType::Diag => k.checked_mul(d),
        CovarianceType::Spherical => Some(k),
    }
}

/// Checks that the parts of a deserialized Gaussian-mixture model fit together (the serde
/// form is not validated on the way in): array sizes against K, D and the covariance type,
/// finite values, non-negative weights summing to 1, positive-definite covariances (rebuilt
/// with [`GaussianMixtureModel::from_parameters`]) and stored precision factors that agree
/// with the covariances.
fn check_gmm_model(model: &GaussianMixtureModel) -> Result<(), String> {
    let (k, d, covariance_type) = (model.k(), model.n_features(), model.covariance_type());
    let kind = covariance_type.name();
    if k == 0 || d == 0 {
        return Err(format!("{k} components of {d} features"));
    }
    if model.params().k != k {
        return Err(format!(
            "fitted with k = {} but has {k} weights",
            model.params().k
        ));
    }
    let means = k.checked_mul(d);
    let covariances = gmm_covariance_len(covariance_type, k, d);
    let (Some(means), Some(covariances)) = (means, covariances) else {
        return Err(format!("{k} components of {d} features: too large"));
    };
    let lengths = [
        ("means", model.means().len(), means),
        ("covariances", model.covariances().len(), covariances),
        (
            "precisions_cholesky",
            model.precisions_cholesky().len(),
            covariances,
        ),
    ];
    for (name, found, expected) in lengths {
        if found != expected {
            return Err(format!(
                "{name} has {found} values, expected {expected} for {k} components of {d} \
                 features with {kind} covariances"
            ));
        }
    }
    let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
    for (name, values) in [
        ("weights", model.weights()),
        ("means", model.means()),
        ("covariances", model.covariances()),
        ("precisions_cholesky", model.precisions_cholesky()),
    ] {
        if !finite(values) {
            return Err(format!("non-finite {name}"));
        }
    }
    let sum: f64 = model.weights().iter().sum();
    if model.weights().iter().any(|w| *w < 0.0) || (sum - 1.0).abs() > 1e-6 {
        return Err(format!(
            "weights must be non-negative and sum to 1 (they sum to {sum})"
        ));
    }
    if let Some(label) = model.labels().iter().find(|&&l| l as usize >= k) {
        return Err(format!(
            "training label {label} out of range for {k} components"
        ));
    }
    // Rebuilding validates the covariances (positive definite) and recomputes their
    // precision factors, which must match the stored ones (the ones predictions use).
    let rebuilt = GaussianMixtureModel::from_parameters(
        covariance_type,
        model.weights().to_vec(),
        model.means().to_vec(),
        model.covariances().to_vec(),
    )
    .map_err(|e| e.to_string())?;
    let block = match covariance_type {
        CovarianceType::Full | CovarianceType::Tied => d * d,
        CovarianceType::Diag => d,
        CovarianceType::Spherical => 1,
    };
    let stored = model.precisions_cholesky().chunks_exact(block);
    for (c, (stored, expected)) in stored
        .zip(rebuilt.precisions_cholesky().chunks_exact(block))
        .enumerate()
    {
        // Relative to the block's largest factor: rounding in an ill-conditioned Cholesky
        // is far below this, an edited value is not.
        let scale = expected.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if stored
            .iter()
            .zip(expected)
            .any(|(a, b)| (a - b).abs() > 1e-4 * scale)
        {
            let which = match covariance_type {
                CovarianceType::Tied => "the tied covariance".to_string(),
                _ => format!("component {c}"),
            };
            return Err(format!(
                "precisions_cholesky of {which} do not match its covariance"
            ));
        }
    }
    Ok(())
}

/// `predict`: load the model, then labels (K-Means, Gaussian mixture) or projections (PCA).
fn predict(args: PredictArgs) -> CliResult {
    let loaded = load_model(&args.model)?;
    if let (Some(_), LoadedModel::KMeans(_) | LoadedModel::Pca(_)) = (&args.proba, &loaded) {
        let (kind, format) = match &loaded {
            LoadedModel::KMeans(_) => ("a K-Means model", KMEANS_FORMAT),
            _ => ("a PCA model", PCA_FORMAT),
        };
        return Err(Failure::invalid(format!(
            "{}: {kind} (format \"{format}\"); --proba writes the responsibilities of a \
             Gaussian-mixture model (format \"{GMM_FORMAT}\", written by `gmm --model`)",
            args.model.display()
        )));
    }
    let model = match loaded {
        LoadedModel::KMeans(model) => model,
        LoadedModel::Gmm(model) => return predict_gmm(&model, &args),
        LoadedModel::Pca(model) => {
            check_npy_extension(&args.output, "projections")?;
            return apply_pca(
                &model,
                &args.model,
                &args.input,
                &args.output,
                false,
                args.json,
                "predict",
            );
        }
    };
    check_npy_extension(&args.output, "labels")?;
    let data = read_input(&args.input)?;
    let x = Matrix::new(&data.data, data.n_features).map_err(Failure::input)?;
    if data.n_features != model.n_features() {
        return Err(Failure::from(Error::FeatureMismatch {
            expected: model.n_features(),
            found: data.n_features,
        }));
    }
    check_writable(&args.output)?;

    let gpu = open_gpu()?;
    let start = Instant::now();
    let labels = model.predict(&gpu, &x)?;
    let seconds = start.elapsed().as_secs_f64();
    io::write_npy_u32(&args.output, &labels).map_err(Failure::output)?;

    let info = gpu.info();
    if args.json {
        return emit_json(&PredictReport {
            algorithm: "kmeans",
            command: "predict",
            n: data.n_rows,
            d: data.n_features,
            k: model.k(),
            adapter: &info.name,
            seconds,
        });
    }
    emit(
        &[
            format!("adapter:    {info}"),
            format!(
                "model:      {} (k = {}, d = {})",
                args.model.display(),
                model.k(),
                model.n_features()
            ),
            format!(
                "input:      {} ({} rows x {} features)",
                args.input.display(),
                data.n_rows,
                data.n_features
            ),
            format!("time:       {seconds:.3} s"),
            format!("labels:     {}", args.output.display()),
        ]
        .join("\n"),
    )
}

/// `predict` with a Gaussian-mixture model: labels, and responsibilities with `--proba`.
fn predict_gmm(model: &GaussianMixtureModel, args: &PredictArgs) -> CliResult {
    check_npy_extension(&args.output, "labels")?;
    if let Some(proba) = &args.proba {
        check_npy_extension_of(proba, "responsibilities", "--proba")?;
    }
    check_distinct_outputs(&[
        ("--output", Some(args.output.as_path())),
        ("--proba", args.proba.as_deref()),
    ])?;
    let data = read_input(&args.input)?;
    let x = Matrix::new(&data.data, data.n_features).map_err(Failure::input)?;
    if data.n_features != model.n_features() {
        return Err(Failure::from(Error::FeatureMismatch {
            expected: model.n_features(),
            found: data.n_features,
        }));
    }
    check_writable(&args.output)?;
    if let Some(proba) = &args.proba {
        check_writable(proba)?;
    }

    let gpu = open_gpu()?;
    let start = Instant::now();
    // One E-step gives both the labels (`predict`) and the responsibilities (`predict_proba`).
    let evaluation = model.evaluate_gpu(&gpu, &x)?;
    let labels = evaluation.labels.to_host(&gpu)?;
    let proba = match &args.proba {
        Some(_) => Some(evaluation.responsibilities.to_host(&gpu)?),
        None => None,
    };
    let seconds = start.elapsed().as_secs_f64();
    let (n, k) = (data.n_rows, model.k());
    io::write_npy_u32(&args.output, &labels).map_err(Failure::output)?;
    if let (Some(path), Some(proba)) = (&args.proba, &proba) {
        io::write_npy_f32(path, proba, &[n as u64, k as u64]).map_err(Failure::output)?;
    }

    let info = gpu.info();
    if args.json {
        return emit_json(&PredictReport {
            algorithm: "gmm",
            command: "predict",
            n,
            d: data.n_features,
            k,
            adapter: &info.name,
            seconds,
        });
    }
    let mut report = vec![
        format!("adapter:    {info}"),
        format!(
            "model:      {} (Gaussian mixture, k = {k}, d = {}, {} covariances)",
            args.model.display(),
            model.n_features(),
            model.covariance_type().name()
        ),
        format!(
            "input:      {} ({n} rows x {} features)",
            args.input.display(),
            data.n_features
        ),
        format!("time:       {seconds:.3} s"),
        format!("labels:     {}", args.output.display()),
    ];
    if let Some(p) = &args.proba {
        report.push(format!("proba:      {} ({n} x {k})", p.display()));
    }
    emit(&report.join("\n"))
}

/// `transform`: load a PCA model, then project (or reconstruct) the input.
fn transform(args: TransformArgs) -> CliResult {
    let what = if args.inverse {
        "reconstructions"
    } else {
        "projections"
    };
    check_npy_extension(&args.output, what)?;
    let model = match load_model(&args.model)? {
        LoadedModel::Pca(model) => model,
        LoadedModel::KMeans(_) => {
            return Err(Failure::invalid(format!(
                "{}: a K-Means model (format \"{KMEANS_FORMAT}\"); transform needs a PCA model \
                 (format \"{PCA_FORMAT}\", written by `pca --model`); use predict for labels",
                args.model.display()
            )))
        }
        LoadedModel::Gmm(_) => {
            return Err(Failure::invalid(format!(
                "{}: a Gaussian-mixture model (format \"{GMM_FORMAT}\"); transform needs a PCA \
                 model (format \"{PCA_FORMAT}\", written by `pca --model`); use predict for \
                 labels and responsibilities",
                args.model.display()
            )))
        }
    };
    apply_pca(
        &model,
        &args.model,
        &args.input,
        &args.output,
        args.inverse,
        args.json,
        "transform",
    )
}

/// Projects (or, with `inverse`, reconstructs) the rows of `input` with a PCA model, writes
/// them to `output` as a 2-D f32 .npy and reports as `command`.
fn apply_pca(
    model: &PcaModel,
    model_path: &Path,
    input: &Path,
    output: &Path,
    inverse: bool,
    json: bool,
    command: &'static str,
) -> CliResult {
    let (m, d) = (model.n_components(), model.n_features());
    let data = read_input(input)?;
    let x = Matrix::new(&data.data, data.n_features).map_err(Failure::input)?;
    if inverse && data.n_features != m {
        return Err(Failure::invalid(format!(
            "feature count mismatch: --inverse reads N x M projections and the model has \
             M = {m} components, the data has {} columns",
            data.n_features
        )));
    }
    if !inverse && data.n_features != d {
        return Err(Failure::from(Error::FeatureMismatch {
            expected: d,
            found: data.n_features,
        }));
    }
    check_writable(output)?;

    let gpu = open_gpu()?;
    let start = Instant::now();
    let (values, cols) = if inverse {
        (model.inverse_transform(&gpu, &x)?, d)
    } else {
        (model.transform(&gpu, &x)?, m)
    };
    let seconds = start.elapsed().as_secs_f64();
    let n = data.n_rows;
    io::write_npy_f32(output, &values, &[n as u64, cols as u64]).map_err(Failure::output)?;

    let info = gpu.info();
    if json {
        return emit_json(&TransformReport {
            algorithm: "pca",
            command,
            inverse,
            n,
            d: data.n_features,
            n_components: m,
            n_features: d,
            adapter: &info.name,
            seconds,
        });
    }
    let result = if inverse {
        "reconstructions:"
    } else {
        "projections:    "
    };
    emit(
        &[
            format!("adapter:         {info}"),
            format!(
                "model:           {} (PCA, {m} components of {d} features)",
                model_path.display()
            ),
            format!(
                "input:           {} ({n} rows x {} columns)",
                input.display(),
                data.n_features
            ),
            format!("time:            {seconds:.3} s"),
            format!("{result} {} ({n} x {cols})", output.display()),
        ]
        .join("\n"),
    )
}

/// `info`: the adapter and its limits.
fn info(args: InfoArgs) -> CliResult {
    let gpu = open_gpu()?;
    let info: &GpuInfo = gpu.info();
    if args.json {
        return emit_json(info);
    }
    let driver = if info.driver.is_empty() {
        "(not reported)"
    } else {
        info.driver.as_str()
    };
    emit(
        &[
            format!("adapter:     {}", info.name),
            format!("backend:     {}", info.backend),
            format!("device type: {}", info.device_type),
            format!("driver:      {driver}"),
            "limits:".to_string(),
            format!(
                "  max_storage_buffer_binding_size:       {} bytes ({} MiB)",
                info.max_storage_buffer_binding_size,
                info.max_storage_buffer_binding_size >> 20
            ),
            format!(
                "  max_buffer_size:                       {} bytes ({} MiB)",
                info.max_buffer_size,
                info.max_buffer_size >> 20
            ),
            format!(
                "  max_compute_workgroups_per_dimension:  {}",
                info.max_compute_workgroups_per_dimension
            ),
            format!(
                "  max_compute_invocations_per_workgroup: {}",
                info.max_compute_invocations_per_workgroup
            ),
            format!(
                "  min_storage_buffer_offset_alignment:   {}",
                info.min_storage_buffer_offset_alignment
            ),
        ]
        .join("\n"),
    )
}

/// Checks a `--plot` path before any work: it must end in `.svg` (exit 2).
fn check_svg_extension(path: &Path) -> CliResult {
    let is_svg = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"));
    if is_svg {
        Ok(())
    } else {
        Err(Failure::invalid(format!(
            "{}: plots are written as SVG; give --plot a .svg file name",
            path.display()
        )))
    }
}

/// Reads a labels file given to `flag` and checks it has one label per row (exit 2).
fn read_row_labels(path: &Path, flag: &str, n: usize) -> CliResult<Vec<u32>> {
    let labels = io::read_labels(path).map_err(Failure::input)?;
    if labels.len() != n {
        return Err(Failure::invalid(format!(
            "{}: {flag} has {} labels but the input has {n} rows",
            path.display(),
            labels.len()
        )));
    }
    Ok(labels)
}

/// The one-line `--json` report of `evaluate`.
#[derive(Serialize)]
struct EvaluateReport<'a> {
    /// Rows of the input.
    n: usize,
    /// Features of the input.
    d: usize,
    /// Distinct labels in `--labels`.
    k: usize,
    /// Mean silhouette coefficient (over the sample with `--sample-size`).
    silhouette: f64,
    /// Calinski–Harabasz index (higher is better).
    calinski_harabasz: f64,
    /// Davies–Bouldin index (lower is better).
    davies_bouldin: f64,
    /// Within-cluster sum of squares around the clusters' means.
    inertia: f64,
    /// Rand index against `--truth` (only with it).
    #[serde(skip_serializing_if = "Option::is_none")]
    rand_index: Option<f64>,
    /// Adjusted Rand index against `--truth` (only with it).
    #[serde(skip_serializing_if = "Option::is_none")]
    adjusted_rand_index: Option<f64>,
    /// Rows the silhouette was computed on.
    silhouette_rows: usize,
    /// Wall time of the metrics (upload included, GPU start-up and file I/O excluded).
    seconds: f64,
    /// Adapter name.
    adapter: &'a str,
}

/// `evaluate`: read and check the matrix and the labels, then compute the metrics.
fn evaluate(args: EvaluateArgs) -> CliResult {
    // Everything the user can get wrong is checked before the (slow) GPU start-up.
    let data = read_input(&args.input)?;
    let (n, d) = (data.n_rows, data.n_features);
    let labels = read_row_labels(&args.labels, "--labels", n)?;
    let truth = match &args.truth {
        Some(path) => Some(read_row_labels(path, "--truth", n)?),
        None => None,
    };
    let mut distinct = labels.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let k = distinct.len();
    if k < 2 || k >= n {
        return Err(Failure::invalid(format!(
            "{}: the metrics need 2 <= clusters <= N - 1; the labels have {k} clusters for N = {n}",
            args.labels.display()
        )));
    }
    if let Some(m) = args.sample_size {
        if m < 2 {
            return Err(Failure::invalid(format!(
                "--sample-size must be at least 2, got {m}"
            )));
        }
    }
    let silhouette_rows = args.sample_size.map_or(n, |m| m.min(n));
    let x = Matrix::new(&data.data, d).map_err(Failure::input)?;

    let gpu = open_gpu()?;
    let start = Instant::now();
    let e = metrics::evaluate(
        &gpu,
        &x,
        &labels,
        truth.as_deref(),
        args.sample_size,
        args.seed.unwrap_or(0),
    )?;
    let seconds = start.elapsed().as_secs_f64();

    let info = gpu.info();
    if args.json {
        return emit_json(&EvaluateReport {
            n,
            d,
            k,
            silhouette: e.silhouette,
            calinski_harabasz: e.calinski_harabasz,
            davies_bouldin: e.davies_bouldin,
            inertia: e.inertia,
            rand_index: e.rand_index,
            adjusted_rand_index: e.adjusted_rand_index,
            silhouette_rows,
            seconds,
            adapter: &info.name,
        });
    }
    let mut report = vec![
        format!("adapter:             {info}"),
        format!(
            "input:               {} ({n} rows x {d} features)",
            args.input.display()
        ),
        format!(
            "labels:              {} ({k} clusters)",
            args.labels.display()
        ),
        format!(
            "silhouette:          {} (on {silhouette_rows} of {n} rows; in [-1, 1], higher is \
             better)",
            e.silhouette
        ),
        format!(
            "calinski-harabasz:   {} (higher is better)",
            e.calinski_harabasz
        ),
        format!(
            "davies-bouldin:      {} (lower is better)",
            e.davies_bouldin
        ),
        format!("inertia:             {}", e.inertia),
    ];
    if let (Some(ri), Some(ari), Some(path)) = (e.rand_index, e.adjusted_rand_index, &args.truth) {
        report.push(format!("truth:               {}", path.display()));
        report.push(format!("rand index:          {ri}"));
        report.push(format!("adjusted rand index: {ari}"));
    }
    report.push(format!("time:                {seconds:.3} s"));
    emit(&report.join("\n"))
}

/// The one-line `--json` report of `select-k`.
#[derive(Serialize)]
struct SelectKReport<'a> {
    /// "kmeans" or "gmm".
    algorithm: &'static str,
    /// "elbow", "gap", "bic" or "aic".
    criterion: &'static str,
    /// Rows of the input.
    n: usize,
    /// Features of the input.
    d: usize,
    /// The candidate k, k_min..=k_max.
    k: &'a [usize],
    /// The curve at each k: inertia (elbow, and W_k for gap), BIC or AIC.
    values: &'a [f64],
    /// Gap(k) (gap only).
    #[serde(skip_serializing_if = "Option::is_none")]
    gap: Option<&'a [f64]>,
    /// s_k = sd_k √(1 + 1/B) (gap only).
    #[serde(skip_serializing_if = "Option::is_none")]
    s_k: Option<&'a [f64]>,
    /// Number of reference sets B (gap only).
    #[serde(skip_serializing_if = "Option::is_none")]
    n_refs: Option<usize>,
    /// The suggested k.
    suggested_k: usize,
    /// Wall time of all the fits (uploads included, GPU start-up and file I/O excluded).
    seconds: f64,
    /// Adapter name.
    adapter: &'a str,
}

/// A curve computed by `select-k`.
enum Selected {
    /// Elbow, BIC or AIC.
    Curve(selection::Curve),
    /// Gap statistic.
    Gap(selection::GapCurve),
}

/// `select-k`: check everything, fit the model for every k, then report and plot the curve.
fn select_k(args: SelectKArgs) -> CliResult {
    let algorithm = args.algorithm;
    let criterion = args
        .criterion
        .map(CriterionArg::to_criterion)
        .unwrap_or(match algorithm {
            AlgorithmArg::Kmeans => Criterion::Gap,
            AlgorithmArg::Gmm => Criterion::Bic,
        });
    let algorithm_name = match algorithm {
        AlgorithmArg::Kmeans => "kmeans",
        AlgorithmArg::Gmm => "gmm",
    };
    match (algorithm, criterion) {
        (AlgorithmArg::Kmeans, Criterion::Elbow | Criterion::Gap)
        | (AlgorithmArg::Gmm, Criterion::Bic | Criterion::Aic) => {}
        _ => {
            return Err(Failure::invalid(format!(
                "--criterion {criterion} does not apply to --algorithm {algorithm_name} \
                 (kmeans: elbow or gap; gmm: bic or aic)"
            )))
        }
    }
    if args.covariance.is_some() && algorithm != AlgorithmArg::Gmm {
        return Err(Failure::invalid(
            "--covariance applies only to --algorithm gmm",
        ));
    }
    if args.n_refs.is_some() && criterion != Criterion::Gap {
        return Err(Failure::invalid("--n-refs applies only to --criterion gap"));
    }
    let n_refs = args.n_refs.unwrap_or(10);
    if n_refs == 0 {
        return Err(Failure::invalid("--n-refs must be at least 1"));
    }
    if args.k_min == 0 {
        return Err(Failure::invalid("--k-min must be at least 1"));
    }
    if args.k_min > args.k_max {
        return Err(Failure::invalid(format!(
            "--k-min {} is larger than --k-max {}",
            args.k_min, args.k_max
        )));
    }
    if let Some(plot) = &args.plot {
        check_svg_extension(plot)?;
    }
    let seed = args.seed.unwrap_or(0);
    let mut kmeans = KMeans::new(args.k_max).seed(seed).n_init(3);
    let mut mixture = GaussianMixture::new(args.k_max).seed(seed);
    if let Some(covariance) = args.covariance {
        mixture = mixture.covariance(covariance.to_type());
    }
    if let Some(n_init) = args.n_init {
        kmeans = kmeans.n_init(n_init);
        mixture = mixture.n_init(n_init);
    }
    if let Some(max_iter) = args.max_iter {
        kmeans = kmeans.max_iter(max_iter);
        mixture = mixture.max_iter(max_iter);
    }

    let data = read_input(&args.input)?;
    let (n, d) = (data.n_rows, data.n_features);
    if args.k_max > n {
        return Err(Failure::invalid(format!(
            "--k-max {} is larger than the number of rows ({n}) of {}",
            args.k_max,
            args.input.display()
        )));
    }
    match algorithm {
        AlgorithmArg::Kmeans => kmeans.validate(n, d)?,
        AlgorithmArg::Gmm => mixture.validate(n, d)?,
    }
    if let Some(plot) = &args.plot {
        check_writable(plot)?;
    }
    let x = Matrix::new(&data.data, d).map_err(Failure::input)?;
    let ks = args.k_min..=args.k_max;

    let gpu = open_gpu()?;
    let start = Instant::now();
    let selected = match criterion {
        Criterion::Gap => Selected::Gap(selection::gap_statistic(
            &gpu, &x, ks, &kmeans, n_refs, seed,
        )?),
        Criterion::Elbow => {
            let xg = GpuMatrix::upload(&gpu, &x)?;
            Selected::Curve(selection::elbow(&gpu, &xg, ks, &kmeans)?)
        }
        Criterion::Bic | Criterion::Aic => {
            let xg = GpuMatrix::upload(&gpu, &x)?;
            Selected::Curve(selection::gmm_criterion_curve(
                &gpu, &xg, ks, &mixture, criterion,
            )?)
        }
    };
    let seconds = start.elapsed().as_secs_f64();

    if let Some(path) = &args.plot {
        match &selected {
            Selected::Curve(curve) => plot::write_curve(path, curve),
            Selected::Gap(gap) => plot::write_gap(path, gap),
        }
        .map_err(Failure::output)?;
    }

    let (k, values, suggested_k) = match &selected {
        Selected::Curve(c) => (&c.k, &c.values, c.suggested_k),
        Selected::Gap(g) => (&g.k, &g.inertia, g.suggested_k),
    };
    let gap = match &selected {
        Selected::Gap(g) => Some(g),
        Selected::Curve(_) => None,
    };
    let info = gpu.info();
    if args.json {
        return emit_json(&SelectKReport {
            algorithm: algorithm_name,
            criterion: criterion.name(),
            n,
            d,
            k,
            values,
            gap: gap.map(|g| g.gap.as_slice()),
            s_k: gap.map(|g| g.s_k.as_slice()),
            n_refs: gap.map(|g| g.n_refs),
            suggested_k,
            seconds,
            adapter: &info.name,
        });
    }
    let value_name = match criterion {
        Criterion::Elbow | Criterion::Gap => "inertia",
        Criterion::Bic => "BIC",
        Criterion::Aic => "AIC",
    };
    let rule = match criterion {
        Criterion::Elbow => "largest second difference of log inertia".to_string(),
        Criterion::Gap => {
            format!("smallest k with Gap(k) >= Gap(k+1) - s(k+1), {n_refs} uniform reference sets")
        }
        _ => format!("lowest {value_name}"),
    };
    let mut report = vec![
        format!("adapter:     {info}"),
        format!(
            "input:       {} ({n} rows x {d} features)",
            args.input.display()
        ),
        format!(
            "selection:   {algorithm_name}, criterion {criterion} ({rule}), k = {}..={}, seed \
             {seed}",
            args.k_min, args.k_max
        ),
        String::new(),
    ];
    match gap {
        Some(g) => {
            report.push(format!(
                "{:>5}  {:>16}  {:>12}  {:>12}",
                "k", value_name, "gap", "s_k"
            ));
            for i in 0..g.k.len() {
                let star = if g.k[i] == suggested_k { " *" } else { "" };
                report.push(format!(
                    "{:>5}  {:>16.6e}  {:>12.6}  {:>12.6}{star}",
                    g.k[i], g.inertia[i], g.gap[i], g.s_k[i]
                ));
            }
        }
        None => {
            report.push(format!("{:>5}  {:>16}", "k", value_name));
            for (k, v) in k.iter().zip(values) {
                let star = if *k == suggested_k { " *" } else { "" };
                report.push(format!("{k:>5}  {v:>16.6e}{star}"));
            }
        }
    }
    report.push(String::new());
    report.push(format!("suggested k: {suggested_k}"));
    report.push(format!("time:        {seconds:.3} s"));
    report.push(match &args.plot {
        Some(p) => format!("plot:        {}", p.display()),
        None => "plot:        not written (use --plot FILE.svg)".to_string(),
    });
    emit(&report.join("\n"))
}
