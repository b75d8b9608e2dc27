//! Gaussian mixtures fitted by expectation–maximisation, with the per-point work on the GPU.
//!
//! The model is the density
//!
//! ```text
//! p(x) = Σₖ πₖ N(x | μₖ, Σₖ),     πₖ ≥ 0,  Σₖ πₖ = 1
//! ```
//!
//! fitted by EM (Dempster, Laird & Rubin 1977; Bishop, *PRML* §9.2). Every formula, layout
//! and convention is the one of the f64 reference [`crate::reference::gmm`] (itself
//! scikit-learn's `GaussianMixture`); this module runs the same algorithm with the N-sized
//! work in WGSL and everything K- or D-sized in f64 on the host.
//!
//! **E-step** (`shaders/gmm_estep.wgsl`). Each component is evaluated through the Cholesky
//! factor Uₖ of its precision (Σₖ⁻¹ = Uₖ Uₖᵀ, computed on the host in f64):
//!
//! ```text
//! log N(x | μₖ, Σₖ) = −½ D log 2π + log det Uₖ − ½ ‖(x − μₖ)ᵀ Uₖ‖²
//! log p(xᵢ) = mᵢ + log Σₖ exp(aᵢₖ − mᵢ),   aᵢₖ = log πₖ + log N(xᵢ | μₖ, Σₖ),  mᵢ = maxₖ aᵢₖ
//! rᵢₖ = exp(aᵢₖ − mᵢ) / Σⱼ exp(aᵢⱼ − mᵢ)       (= exp(aᵢₖ − log p(xᵢ)), but summing to 1 in f32)
//! ```
//!
//! The squared Mahalanobis norms are a tiled GEMM on the device: for `Full`/`Tied` the
//! difference x − μₖ is formed while staging the tile (no expansion, so no cancellation for
//! data far from the origin) and multiplied by the upper-triangular Uₖ; for
//! `Diag`/`Spherical` the kernel accumulates Σⱼ ((xⱼ − μₖⱼ) pₖⱼ)² with no D x D work. A second
//! kernel does the log-sum-exp per point (log space throughout, so a point far from every
//! component gets finite responsibilities that sum to one), writes the responsibilities
//! (N x K, kept on the device), log p(xᵢ) and the most probable component, and sums log p
//! per block of 256 rows; the host adds the blocks in f64 for the mean log-likelihood.
//!
//! **M-step** (`shaders/gmm_mstep.wgsl`), with Nₖ = Σᵢ rᵢₖ + 10 ε:
//!
//! ```text
//! μₖ = sₖ + Σᵢ rᵢₖ (xᵢ − sₖ) / Nₖ                  (sₖ: the previous mean, a shift)
//! πₖ = Nₖ / Σⱼ Nⱼ
//! Full:       Σₖ = Σᵢ rᵢₖ (xᵢ − μₖ)(xᵢ − μₖ)ᵀ / Nₖ + reg·I
//! Tied:       Σ  = Σₖ Σᵢ rᵢₖ (xᵢ − μₖ)(xᵢ − μₖ)ᵀ / Σₖ Nₖ + reg·I
//! Diag:       σₖⱼ² = Σᵢ rᵢₖ (xᵢⱼ − μₖⱼ)² / Nₖ + reg
//! Spherical:  σₖ² = (1/D) Σⱼ σₖⱼ²
//! ```
//!
//! Two passes: the first (fused into the E-step's submission) gives Nₖ and the shifted first
//! moments, the host forms μₖ, and the second accumulates the **centred** scatter around the
//! new μₖ, never E[x xᵀ] − μ μᵀ. Diag and Spherical accumulate only the D diagonal terms.
//! Every device sum covers one bounded block of rows; blocks are folded on the device in a
//! fixed order (Kahan) and finished in f64, so a fit is bitwise repeatable on one adapter.
//!
//! Shifting by the previous mean (rather than the reference's plain Σ rᵢₖ xᵢ / Nₖ) keeps the
//! f32 sums small; the two agree to rounding except for a component with no weight at all,
//! which here keeps its previous mean (the reference moves it toward the origin). Its
//! covariance becomes reg·I and its weight about 10 ε / N, exactly as in the reference;
//! nothing becomes NaN. With `reg_covar = 0` such a component is not positive definite and
//! the fit stops with [`Error::InvalidParameter`] naming the component and `reg_covar`.
//!
//! **Convergence, restarts, initialisation and labels** are the reference's: the lower bound
//! of an iteration is the mean log-likelihood of its E-step; EM stops when it changes by less
//! than `tol`; of `n_init` restarts the highest final bound wins; the returned labels come
//! from a final E-step. The initial responsibilities are drawn with the same ChaCha8 stream
//! as the reference for `Random` (so both start from the same point), and come from the GPU
//! K-Means / k-means++ for `KMeans` / `KMeansPlusPlus`.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::gpu::GpuInput;
use crate::gpu::{Gpu, GpuMatrix, GpuVector};
use crate::names::parse_choice;
use crate::reference::gmm::ReferenceGmm;

/// The shape of the component covariances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum CovarianceType {
    /// Each component has its own full D x D covariance.
    #[default]
    Full,
    /// All components share one full D x D covariance.
    Tied,
    /// Each component has its own diagonal covariance (D variances).
    Diag,
    /// Each component has a single variance σₖ² I.
    Spherical,
}

impl CovarianceType {
    /// All four types, in the order Full, Tied, Diag, Spherical.
    pub const ALL: [CovarianceType; 4] = [
        CovarianceType::Full,
        CovarianceType::Tied,
        CovarianceType::Diag,
        CovarianceType::Spherical,
    ];

    /// The lower-case name scikit-learn uses: "full", "tied", "diag" or "spherical".
    pub fn name(self) -> &'static str {
        match self {
            CovarianceType::Full => "full",
            CovarianceType::Tied => "tied",
            CovarianceType::Diag => "diag",
            CovarianceType::Spherical => "spherical",
        }
    }
}

impl std::fmt::Display for CovarianceType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for CovarianceType {
    type Err = Error;

    /// Parses a [`CovarianceType::name`], ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self> {
        let no_aliases = |_: &CovarianceType| -> &'static [&'static str] { &[] };
        parse_choice(
            "covariance_type",
            "covariance type",
            s,
            &CovarianceType::ALL,
            |t| t.name(),
            no_aliases,
        )
    }
}

/// Number of covariance (and precision-factor) values of a mixture of `k` components of `d`
/// features, or `None` when it overflows (a model file can claim any sizes).
fn covariance_len(covariance_type: CovarianceType, k: usize, d: usize) -> Option<usize> {
    match covariance_type {
        CovarianceType::Full => k.checked_mul(d)?.checked_mul(d),
        CovarianceType::Tied => d.checked_mul(d),
        CovarianceType::Diag => k.checked_mul(d),
        CovarianceType::Spherical => Some(k),
    }
}

/// Starting parameters given by the caller (or a previous fit: warm start).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct InitialParameters {
    /// Mixing weights πₖ (K values, positive, summing to 1).
    pub weights: Vec<f64>,
    /// Means μₖ, K x D row-major.
    pub means: Vec<f64>,
    /// Precision matrices Σₖ⁻¹ in the layout of the covariance type: Full K x D x D,
    /// Tied D x D, Diag K x D, Spherical K.
    pub precisions: Vec<f64>,
}

/// How EM starts.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum GmmInit {
    /// Hard responsibilities from a K-Means fit (scikit-learn's default).
    #[default]
    KMeans,
    /// Hard responsibilities from the nearest k-means++ seed.
    KMeansPlusPlus,
    /// Random responsibilities, normalised per sample.
    Random,
    /// Given weights, means and precisions.
    Given(InitialParameters),
}

impl GmmInit {
    /// The initialisations that can be named (all but [`GmmInit::Given`]), in the order
    /// KMeans, KMeansPlusPlus, Random.
    pub const ALL: [GmmInit; 3] = [GmmInit::KMeans, GmmInit::KMeansPlusPlus, GmmInit::Random];

    /// The name the CLI uses: "kmeans", "kmeans++" or "random"; "given parameters" for
    /// [`GmmInit::Given`], which cannot be parsed.
    pub fn name(&self) -> &'static str {
        match self {
            GmmInit::KMeans => "kmeans",
            GmmInit::KMeansPlusPlus => "kmeans++",
            GmmInit::Random => "random",
            GmmInit::Given(_) => "given parameters",
        }
    }

    /// Other spellings [`FromStr`](std::str::FromStr) accepts.
    fn aliases(&self) -> &'static [&'static str] {
        match self {
            GmmInit::KMeans => &["k-means"],
            GmmInit::KMeansPlusPlus => &["k-means++"],
            GmmInit::Random | GmmInit::Given(_) => &[],
        }
    }
}

impl std::fmt::Display for GmmInit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for GmmInit {
    type Err = Error;

    /// Parses "kmeans" (or "k-means"), "kmeans++" (or "k-means++") or "random", ignoring
    /// ASCII case.
    fn from_str(s: &str) -> Result<Self> {
        parse_choice(
            "init",
            "mixture initialisation",
            s,
            &GmmInit::ALL,
            GmmInit::name,
            GmmInit::aliases,
        )
    }
}

/// Gaussian-mixture parameters (a builder); validated when fitting.
///
/// Defaults follow scikit-learn: `covariance_type = Full`, `reg_covar = 1e-6` (added to the
/// covariance diagonals), `n_init = 1`, `max_iter = 100`, `tol = 1e-3` on the change of the
/// mean per-sample log-likelihood lower bound, `seed = 0`, `init = KMeans`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GaussianMixture {
    /// Number of components K.
    pub k: usize,
    /// Covariance shape.
    pub covariance_type: CovarianceType,
    /// Added to every covariance diagonal, keeping it positive definite.
    pub reg_covar: f64,
    /// Independent initialisations; the best lower bound wins.
    pub n_init: usize,
    /// EM iterations per initialisation.
    pub max_iter: usize,
    /// Convergence threshold on the change of the mean log-likelihood lower bound.
    pub tol: f64,
    /// Seed (ChaCha8).
    pub seed: u64,
    /// Initialisation.
    pub init: GmmInit,
}

impl GaussianMixture {
    /// Parameters for `k` components with the defaults above.
    pub fn new(k: usize) -> Self {
        Self {
            k,
            covariance_type: CovarianceType::Full,
            reg_covar: 1e-6,
            n_init: 1,
            max_iter: 100,
            tol: 1e-3,
            seed: 0,
            init: GmmInit::KMeans,
        }
    }

    /// Sets the covariance type.
    pub fn covariance(mut self, covariance_type: CovarianceType) -> Self {
        self.covariance_type = covariance_type;
        self
    }

    /// Sets the diagonal regularisation.
    pub fn reg_covar(mut self, reg_covar: f64) -> Self {
        self.reg_covar = reg_covar;
        self
    }

    /// Sets the number of initialisations.
    pub fn n_init(mut self, n_init: usize) -> Self {
        self.n_init = n_init;
        self
    }

    /// Sets the iteration cap.
    pub fn max_iter(mut self, max_iter: usize) -> Self {
        self.max_iter = max_iter;
        self
    }

    /// Sets the tolerance.
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
    pub fn init(mut self, init: GmmInit) -> Self {
        self.init = init;
        self
    }

    /// Number of values of the precisions (and covariances) for this type, K components and
    /// D features.
    pub fn precision_len(&self, d: usize) -> usize {
        match self.covariance_type {
            CovarianceType::Full => self.k * d * d,
            CovarianceType::Tied => d * d,
            CovarianceType::Diag => self.k * d,
            CovarianceType::Spherical => self.k,
        }
    }

    /// Checks the parameters against data of `n` rows and `d` features.
    pub fn validate(&self, n: usize, d: usize) -> Result<()> {
        Error::require_count("k", self.k)?;
        if self.k > n {
            return Err(Error::TooFewSamples { k: self.k, n });
        }
        self.validate_for_features(d)
    }

    /// The checks of [`GaussianMixture::validate`] that do not need the number of rows
    /// (those a fitted model's parameters must pass too).
    fn validate_for_features(&self, d: usize) -> Result<()> {
        Error::require_count("k", self.k)?;
        Error::require_non_negative("reg_covar", self.reg_covar)?;
        Error::require_count("n_init", self.n_init)?;
        Error::require_count("max_iter", self.max_iter)?;
        Error::require_non_negative("tol", self.tol)?;
        if let GmmInit::Given(p) = &self.init {
            if p.weights.len() != self.k
                || p.means.len() != self.k * d
                || p.precisions.len() != self.precision_len(d)
            {
                return Err(Error::invalid(
                    "init",
                    format!(
                        "given parameters have {} weights, {} mean values, {} precision values; \
                         expected {}, {} and {}",
                        p.weights.len(),
                        p.means.len(),
                        p.precisions.len(),
                        self.k,
                        self.k * d,
                        self.precision_len(d)
                    ),
                ));
            }
            crate::data::check_finite(&p.means, d)?;
            let sum: f64 = p.weights.iter().sum();
            if p.weights.iter().any(|&w| !(w.is_finite() && w >= 0.0)) || (sum - 1.0).abs() > 1e-6 {
                return Err(Error::invalid(
                    "init",
                    "weights must be finite, non-negative and sum to 1",
                ));
            }
            if p.precisions.iter().any(|v| !v.is_finite()) {
                return Err(Error::invalid("init", "precisions must be finite"));
            }
        }
        Ok(())
    }
}

mod workspace;

use workspace::{Parameters, Workspace};

impl GaussianMixture {
    /// Starts the next fit from a fitted model's parameters (scikit-learn's `warm_start`):
    /// sets `init` to [`GmmInit::Given`] with the model's weights, means and precisions, and
    /// the covariance type to the model's.
    pub fn warm_start(mut self, model: &GaussianMixtureModel) -> Self {
        self.covariance_type = model.covariance_type();
        self.init = GmmInit::Given(model.initial_parameters());
        self
    }

    /// Fits a mixture to host or device data by EM (module docs), `n_init` times, keeping
    /// the highest final lower bound.
    ///
    /// Not converging within `max_iter` is not an error: the model comes back with
    /// `converged() == false`.
    ///
    /// Errors: the parameter errors of [`GaussianMixture::validate`] (k > n is
    /// [`Error::TooFewSamples`]); [`Error::InvalidParameter`] named `reg_covar` when a
    /// covariance stops being positive definite (naming the component), `init` for given
    /// precisions that are not positive definite, `x` when the log-likelihood is not finite
    /// (data of extreme scale); [`Error::NonFinite`] for NaN/inf in host data; the GPU errors
    /// of the upload and the kernels.
    pub fn fit(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<GaussianMixtureModel> {
        let (n, d) = x.shape();
        self.validate(n, d)?;
        let xg = x.on_gpu(gpu)?;
        let ws = Workspace::new(gpu, &xg, self.k, self.covariance_type, true)?;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let runs = match self.init {
            GmmInit::Given(_) => 1,
            _ => self.n_init,
        };
        let mut best: Option<workspace::Run> = None;
        for _ in 0..runs {
            let start = ws.initial_parameters(self, &mut rng)?;
            let run = ws.em(start, self)?;
            // Strictly higher, so that among equal runs the earliest wins (as the reference).
            if best
                .as_ref()
                .is_none_or(|b| run.lower_bound > b.lower_bound)
            {
                best = Some(run);
            }
        }
        let run = best.expect("at least one initialisation ran");
        // The final E-step: labels that agree with the returned parameters.
        let labels = ws.labels(&run.parameters)?;
        let p = run.parameters;
        Ok(GaussianMixtureModel {
            params: self.clone(),
            n_features: d,
            weights: p.weights,
            means: p.means,
            covariances: p.covariances,
            precisions_cholesky: p.precisions_cholesky,
            converged: run.converged,
            n_iter: run.n_iter,
            lower_bound: run.lower_bound,
            lower_bound_history: run.history,
            labels,
        })
    }
}

/// Weights, means and covariances of a mixture (layouts of [`crate::reference::gmm`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GaussianParameters {
    /// Mixing weights πₖ, summing to 1.
    pub weights: Vec<f64>,
    /// Means, K x D row-major.
    pub means: Vec<f64>,
    /// Covariances with `reg_covar` on the diagonal: Full K x D x D, Tied D x D, Diag K x D,
    /// Spherical K.
    pub covariances: Vec<f64>,
}

/// The M-step on the GPU: the weights, means and (centred) covariances of soft assignments
/// `resp` (N x K row-major, non-negative, finite) of the rows of `x`, with `reg_covar` added
/// to the diagonals (scikit-learn's `_estimate_gaussian_parameters` plus the weight
/// normalisation). Useful on its own, e.g. for class-conditional Gaussians of given labels.
///
/// Errors: [`Error::InvalidParameter`] for k = 0, `resp` of the wrong length or with
/// negative or non-finite values, a negative or non-finite `reg_covar`; the errors of the
/// upload and the kernels.
pub fn estimate_gaussian_parameters(
    gpu: &Gpu,
    x: &impl GpuInput,
    resp: &[f32],
    k: usize,
    covariance_type: CovarianceType,
    reg_covar: f64,
) -> Result<GaussianParameters> {
    let (n, _) = x.shape();
    Error::require_count("k", k)?;
    Error::require_non_negative("reg_covar", reg_covar)?;
    check_responsibilities(resp, n, k)?;
    let xg = x.on_gpu(gpu)?;
    let ws = Workspace::new(gpu, &xg, k, covariance_type, true)?;
    ws.upload_responsibilities(resp)?;
    let p = ws.mstep(None, reg_covar)?;
    Ok(GaussianParameters {
        weights: p.weights,
        means: p.means,
        covariances: p.covariances,
    })
}

/// Checks that `resp` holds N x K finite, non-negative responsibilities (f32 from the caller
/// of the GPU M-step, f64 in the reference).
pub(crate) fn check_responsibilities<T: Copy + Into<f64>>(
    resp: &[T],
    n: usize,
    k: usize,
) -> Result<()> {
    if resp.len() != n.saturating_mul(k) {
        return Err(Error::invalid(
            "resp",
            format!(
                "expected {n} x {k} responsibilities, got {} values",
                resp.len()
            ),
        ));
    }
    if resp.iter().any(|&r| {
        let r: f64 = r.into();
        !(r.is_finite() && r >= 0.0)
    }) {
        return Err(Error::invalid(
            "resp",
            "responsibilities must be finite and >= 0",
        ));
    }
    Ok(())
}

/// A fitted Gaussian mixture. Parameters are kept in f64 (the host algebra's precision) and
/// sent to the device as f32 for each evaluation.
///
/// Every value of this type is consistent ([`GaussianMixtureModel::validate`]):
/// [`GaussianMixture::fit`] and [`GaussianMixtureModel::from_parameters`] build valid models,
/// and deserializing (feature `serde`) runs `validate`, so an edited file gives an error,
/// never a model that panics or evaluates garbage later. The serialized form leaves out the
/// training labels (`labels()` of a deserialized model is empty).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(try_from = "GaussianMixtureModelFields")
)]
pub struct GaussianMixtureModel {
    params: GaussianMixture,
    n_features: usize,
    weights: Vec<f64>,
    means: Vec<f64>,
    covariances: Vec<f64>,
    precisions_cholesky: Vec<f64>,
    converged: bool,
    n_iter: usize,
    lower_bound: f64,
    lower_bound_history: Vec<f64>,
    /// Training labels: not serialized (a model file is for predicting, and N labels
    /// would dwarf the parameters).
    #[cfg_attr(feature = "serde", serde(skip))]
    labels: Vec<u32>,
}

/// The serialized fields of a [`GaussianMixtureModel`], before
/// [`GaussianMixtureModel::validate`] accepts them. An unknown lower bound (NaN, written as
/// `null` by JSON) reads back as NaN; the `labels` of files written before they were left
/// out are ignored.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
pub(crate) struct GaussianMixtureModelFields {
    params: GaussianMixture,
    n_features: usize,
    weights: Vec<f64>,
    means: Vec<f64>,
    covariances: Vec<f64>,
    precisions_cholesky: Vec<f64>,
    converged: bool,
    n_iter: usize,
    lower_bound: Option<f64>,
    lower_bound_history: Vec<f64>,
}

#[cfg(feature = "serde")]
impl TryFrom<GaussianMixtureModelFields> for GaussianMixtureModel {
    type Error = Error;

    fn try_from(f: GaussianMixtureModelFields) -> Result<Self> {
        let model = GaussianMixtureModel {
            params: f.params,
            n_features: f.n_features,
            weights: f.weights,
            means: f.means,
            covariances: f.covariances,
            precisions_cholesky: f.precisions_cholesky,
            converged: f.converged,
            n_iter: f.n_iter,
            lower_bound: f.lower_bound.unwrap_or(f64::NAN),
            lower_bound_history: f.lower_bound_history,
            labels: Vec::new(),
        };
        model.validate()?;
        Ok(model)
    }
}

/// Everything one E-step pass gives for a set of rows, left on the device.
#[derive(Debug, Clone)]
pub struct GmmEvaluation {
    /// Responsibilities p(k | xᵢ), N x K, each row summing to 1.
    pub responsibilities: GpuMatrix,
    /// log p(xᵢ) per row.
    pub log_density: GpuVector<f32>,
    /// Most probable component per row (lowest index on ties).
    pub labels: GpuVector<u32>,
    /// (1/N) Σᵢ log p(xᵢ), summed in f64 from bounded blocks.
    pub mean_log_likelihood: f64,
}

impl GaussianMixtureModel {
    /// A model from known parameters (e.g. computed elsewhere), to evaluate and sample with:
    /// weights (K, finite, non-negative, summing to 1 within 1e-6), means (K x D) and
    /// covariances in the layout of `covariance_type` (Full K x D x D, Tied D x D, Diag K x D,
    /// Spherical K). It has no training labels and a lower bound of NaN.
    ///
    /// Errors: [`Error::EmptyData`] for no weights, [`Error::Shape`] for means that are not
    /// K rows, [`Error::NonFinite`] for non-finite means, [`Error::InvalidParameter`] for bad
    /// weights, covariances of the wrong length, or covariances that are not positive
    /// definite (naming the component).
    pub fn from_parameters(
        covariance_type: CovarianceType,
        weights: Vec<f64>,
        means: Vec<f64>,
        covariances: Vec<f64>,
    ) -> Result<Self> {
        let k = weights.len();
        if k == 0 || means.is_empty() {
            return Err(Error::EmptyData {
                what: "mixture parameters",
                missing: "components",
            });
        }
        if !means.len().is_multiple_of(k) {
            return Err(Error::Shape {
                len: means.len(),
                n_features: k,
            });
        }
        let d = means.len() / k;
        crate::data::check_finite(&means, d)?;
        let sum: f64 = weights.iter().sum();
        if weights.iter().any(|&w| !(w.is_finite() && w >= 0.0)) || (sum - 1.0).abs() > 1e-6 {
            return Err(Error::invalid(
                "weights",
                "weights must be finite, non-negative and sum to 1",
            ));
        }
        let precisions_cholesky =
            crate::reference::gmm::compute_precision_cholesky(&covariances, covariance_type, k, d)?;
        Ok(Self {
            params: GaussianMixture::new(k).covariance(covariance_type),
            n_features: d,
            weights,
            means,
            covariances,
            precisions_cholesky,
            converged: false,
            n_iter: 0,
            lower_bound: f64::NAN,
            lower_bound_history: Vec::new(),
            labels: Vec::new(),
        })
    }

    /// Number of components K.
    pub fn k(&self) -> usize {
        self.weights.len()
    }

    /// Number of features D.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// Covariance shape.
    pub fn covariance_type(&self) -> CovarianceType {
        self.params.covariance_type
    }

    /// The parameters the model was fitted with.
    pub fn params(&self) -> &GaussianMixture {
        &self.params
    }

    /// Mixing weights πₖ (K, summing to 1).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// Means μₖ, K x D row-major.
    pub fn means(&self) -> &[f64] {
        &self.means
    }

    /// Covariances (`reg_covar` included): Full K x D x D, Tied D x D, Diag K x D, Spherical K.
    pub fn covariances(&self) -> &[f64] {
        &self.covariances
    }

    /// Cholesky factors of the precisions in the layout of [`crate::reference::gmm`]: upper
    /// triangular Uₖ with Σₖ⁻¹ = Uₖ Uₖᵀ (Full, Tied), reciprocal standard deviations (Diag,
    /// Spherical); scikit-learn's `precisions_cholesky_`.
    pub fn precisions_cholesky(&self) -> &[f64] {
        &self.precisions_cholesky
    }

    /// The precision matrices Σₖ⁻¹ (Full K x D x D, Tied D x D) or values 1/σ² (Diag K x D,
    /// Spherical K).
    pub fn precisions(&self) -> Vec<f64> {
        let d = self.n_features;
        match self.covariance_type() {
            CovarianceType::Full | CovarianceType::Tied => self
                .precisions_cholesky
                .chunks_exact(d * d)
                .flat_map(|u| {
                    (0..d * d).map(move |e| {
                        let (i, j) = (e / d, e % d);
                        (0..d).map(|t| u[i * d + t] * u[j * d + t]).sum::<f64>()
                    })
                })
                .collect(),
            CovarianceType::Diag | CovarianceType::Spherical => {
                self.precisions_cholesky.iter().map(|p| p * p).collect()
            }
        }
    }

    /// Whether the change of the lower bound fell below `tol` before `max_iter` ran out.
    pub fn converged(&self) -> bool {
        self.converged
    }

    /// EM iterations of the kept initialisation.
    pub fn n_iter(&self) -> usize {
        self.n_iter
    }

    /// Mean per-sample log-likelihood of the last E-step (scikit-learn's `lower_bound_`).
    pub fn lower_bound(&self) -> f64 {
        self.lower_bound
    }

    /// The lower bound of every iteration of the kept initialisation (never decreasing, up
    /// to rounding).
    pub fn lower_bound_history(&self) -> &[f64] {
        &self.lower_bound_history
    }

    /// Most probable component of each training row, from a final E-step with the returned
    /// parameters (empty for a model built by [`GaussianMixtureModel::from_parameters`] or
    /// deserialized: model files do not carry them).
    pub fn labels(&self) -> &[u32] {
        &self.labels
    }

    /// The model's weights, means and precisions as starting parameters (for
    /// [`GaussianMixture::warm_start`]).
    pub fn initial_parameters(&self) -> InitialParameters {
        InitialParameters {
            weights: self.weights.clone(),
            means: self.means.clone(),
            precisions: self.precisions(),
        }
    }

    /// The same model as the f64 reference's type, to evaluate on the CPU with
    /// [`crate::reference::gmm`].
    pub fn as_reference(&self) -> ReferenceGmm {
        ReferenceGmm {
            weights: self.weights.clone(),
            means: self.means.clone(),
            covariances: self.covariances.clone(),
            precisions_cholesky: self.precisions_cholesky.clone(),
            covariance_type: self.covariance_type(),
            converged: self.converged,
            n_iter: self.n_iter,
            lower_bound: self.lower_bound,
            lower_bound_history: self.lower_bound_history.clone(),
            labels: self.labels.clone(),
        }
    }

    /// Checks that the parts of the model fit together: K ≥ 1 components of D ≥ 1
    /// features, parameters that [`GaussianMixture::validate`] accepts for D features with
    /// the same K, array lengths against K, D and the covariance type, finite values,
    /// non-negative weights summing to 1 (within 1e-6), positive-definite covariances whose
    /// precision factors (recomputed in f64) match the stored ones to 1e-4 of the block's
    /// largest factor, a lower bound that is finite (or NaN: unknown, for a model from
    /// parameters), a finite history and training labels below K.
    ///
    /// Every model is checked when it is built or deserialized, so this only fails for
    /// [`Error::InvalidModel`] reasons found in edited serialized data.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| Error::InvalidModel {
            kind: "Gaussian mixture",
            reason,
        };
        let (k, d, covariance_type) = (self.k(), self.n_features, self.covariance_type());
        let kind = covariance_type.name();
        if k == 0 || d == 0 {
            return Err(bad(format!("{k} components of {d} features")));
        }
        if self.params.k != k {
            return Err(bad(format!(
                "fitted with k = {} but has {k} weights",
                self.params.k
            )));
        }
        self.params
            .validate_for_features(d)
            .map_err(|e| bad(format!("parameters: {e}")))?;
        let means = k.checked_mul(d);
        let covariances = covariance_len(covariance_type, k, d);
        let (Some(means), Some(covariances)) = (means, covariances) else {
            return Err(bad(format!("{k} components of {d} features: too large")));
        };
        let lengths = [
            ("means", self.means.len(), means),
            ("covariances", self.covariances.len(), covariances),
            (
                "precisions_cholesky",
                self.precisions_cholesky.len(),
                covariances,
            ),
        ];
        for (name, found, expected) in lengths {
            if found != expected {
                return Err(bad(format!(
                    "{name} has {found} values, expected {expected} for {k} components of {d} \
                     features with {kind} covariances"
                )));
            }
        }
        for (name, values) in [
            ("weights", &self.weights),
            ("means", &self.means),
            ("covariances", &self.covariances),
            ("precisions_cholesky", &self.precisions_cholesky),
            ("lower_bound_history", &self.lower_bound_history),
        ] {
            if values.iter().any(|v| !v.is_finite()) {
                return Err(bad(format!("non-finite {name}")));
            }
        }
        if self.lower_bound.is_infinite() {
            return Err(bad(format!("lower bound {}", self.lower_bound)));
        }
        let sum: f64 = self.weights.iter().sum();
        if self.weights.iter().any(|w| *w < 0.0) || (sum - 1.0).abs() > 1e-6 {
            return Err(bad(format!(
                "weights must be non-negative and sum to 1 (they sum to {sum})"
            )));
        }
        if let Some(label) = self.labels.iter().find(|&&l| l as usize >= k) {
            return Err(bad(format!(
                "training label {label} out of range for {k} components"
            )));
        }
        // The factors are recomputed from the covariances (which also proves them positive
        // definite) and must match the stored ones, which are what predictions use.
        let expected = crate::reference::gmm::compute_precision_cholesky(
            &self.covariances,
            covariance_type,
            k,
            d,
        )
        .map_err(|e| bad(e.to_string()))?;
        let block = match covariance_type {
            CovarianceType::Full | CovarianceType::Tied => d * d,
            CovarianceType::Diag => d,
            CovarianceType::Spherical => 1,
        };
        let pairs = self
            .precisions_cholesky
            .chunks_exact(block)
            .zip(expected.chunks_exact(block));
        for (c, (stored, expected)) in pairs.enumerate() {
            // Relative to the block's largest factor: rounding in an ill-conditioned
            // Cholesky is far below this, an edited value is not.
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
                return Err(bad(format!(
                    "precisions_cholesky of {which} do not match its covariance"
                )));
            }
        }
        Ok(())
    }

    /// Checks that `x` has the model's feature count; returns the parameters to evaluate.
    fn check(&self, x: &impl GpuInput) -> Result<Parameters> {
        let (_, d) = x.shape();
        if d != self.n_features {
            return Err(Error::FeatureMismatch {
                expected: self.n_features,
                found: d,
            });
        }
        Ok(Parameters {
            weights: self.weights.clone(),
            means: self.means.clone(),
            covariances: self.covariances.clone(),
            precisions_cholesky: self.precisions_cholesky.clone(),
        })
    }

    /// One E-step over `x`: responsibilities, log-densities and labels left on the device,
    /// and the mean log-likelihood.
    pub fn evaluate_gpu(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<GmmEvaluation> {
        let p = self.check(x)?;
        let xg = x.on_gpu(gpu)?;
        let ws = Workspace::new(gpu, &xg, self.k(), self.covariance_type(), false)?;
        ws.evaluate(&p)
    }

    /// Most probable component of each row, left on the device.
    pub fn predict_gpu(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<GpuVector<u32>> {
        Ok(self.evaluate_gpu(gpu, x)?.labels)
    }

    /// Most probable component of each row (argmaxₖ of log πₖ + log N(x | μₖ, Σₖ)).
    pub fn predict(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<Vec<u32>> {
        self.predict_gpu(gpu, x)?.to_host(gpu)
    }

    /// Responsibilities p(k | xᵢ), N x K, left on the device.
    pub fn predict_proba_gpu(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<GpuMatrix> {
        Ok(self.evaluate_gpu(gpu, x)?.responsibilities)
    }

    /// Responsibilities p(k | xᵢ), N x K row-major; each row sums to 1.
    pub fn predict_proba(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<Vec<f32>> {
        self.predict_proba_gpu(gpu, x)?.to_host(gpu)
    }

    /// log p(xᵢ) per row, left on the device.
    pub fn score_samples_gpu(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<GpuVector<f32>> {
        Ok(self.evaluate_gpu(gpu, x)?.log_density)
    }

    /// log p(xᵢ) per row.
    pub fn score_samples(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<Vec<f32>> {
        self.score_samples_gpu(gpu, x)?.to_host(gpu)
    }

    /// Mean log-likelihood (1/N) Σᵢ log p(xᵢ) of `x` (higher is better).
    pub fn score(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<f64> {
        Ok(self.evaluate_gpu(gpu, x)?.mean_log_likelihood)
    }

    /// Number of free parameters p: covariance values (Full K·D(D+1)/2, Tied D(D+1)/2,
    /// Diag K·D, Spherical K) + K·D means + K − 1 weights.
    pub fn n_parameters(&self) -> usize {
        crate::reference::gmm::n_parameters(&self.as_reference(), self.n_features)
    }

    /// BIC −2 log L + p log N and AIC −2 log L + 2p of N rows whose mean log-likelihood
    /// (1/N) log L is `mean_log_likelihood` (e.g. from [`GaussianMixtureModel::evaluate_gpu`],
    /// so that one E-step gives the responsibilities and both criteria).
    pub fn information_criteria(&self, mean_log_likelihood: f64, n: usize) -> (f64, f64) {
        let n = n as f64;
        let log_l = mean_log_likelihood * n;
        let p = self.n_parameters() as f64;
        (-2.0 * log_l + p * n.ln(), -2.0 * log_l + 2.0 * p)
    }

    /// Bayesian information criterion −2 log L + p log N on `x` (lower is better).
    pub fn bic(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<f64> {
        let score = self.score(gpu, x)?;
        Ok(self.information_criteria(score, x.shape().0).0)
    }

    /// Akaike information criterion −2 log L + 2p on `x` (lower is better).
    pub fn aic(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<f64> {
        let score = self.score(gpu, x)?;
        Ok(self.information_criteria(score, x.shape().0).1)
    }

    /// Draws `n` samples with a ChaCha8 generator seeded with `seed`: components from the
    /// categorical distribution on π, points as μₖ + Lₖ z (Lₖ the lower Cholesky factor of
    /// Σₖ, z standard normal). Returns the samples (n x D row-major, f64) and their
    /// components, grouped by component as scikit-learn. Runs on the host (it is O(n·D²)
    /// with no data to stream).
    ///
    /// Errors: [`Error::InvalidParameter`] for n = 0 or an inconsistent model.
    pub fn sample(&self, n: usize, seed: u64) -> Result<(Vec<f64>, Vec<u32>)> {
        crate::reference::gmm::sample(&self.as_reference(), n, seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covariance_names_round_trip() {
        for t in CovarianceType::ALL {
            assert_eq!(t.name().parse::<CovarianceType>().unwrap(), t);
            assert_eq!(
                t.to_string()
                    .to_uppercase()
                    .parse::<CovarianceType>()
                    .unwrap(),
                t
            );
        }
        assert!("banded".parse::<CovarianceType>().is_err());
    }

    /// Two full-covariance components of two features with labels: a valid model.
    fn valid() -> GaussianMixtureModel {
        let identity = [1.0, 0.0, 0.0, 1.0];
        let mut m = GaussianMixtureModel::from_parameters(
            CovarianceType::Full,
            vec![0.25, 0.75],
            vec![0.0, 0.0, 3.0, 3.0],
            [identity, identity].concat(),
        )
        .unwrap();
        m.labels = vec![0, 1, 1];
        m.lower_bound = -2.5;
        m.lower_bound_history = vec![-3.0, -2.5];
        m
    }

    /// The reason of the `InvalidModel` error of `edit` applied to a valid model.
    fn reason(edit: impl FnOnce(&mut GaussianMixtureModel)) -> String {
        let mut m = valid();
        edit(&mut m);
        match m.validate() {
            Err(Error::InvalidModel {
                kind: "Gaussian mixture",
                reason,
            }) => reason,
            other => panic!("expected an inconsistent mixture, got {other:?}"),
        }
    }

    #[test]
    fn valid_models_pass() {
        valid().validate().unwrap();
        let mut unknown_bound = valid();
        unknown_bound.lower_bound = f64::NAN;
        unknown_bound.validate().unwrap();
    }

    #[test]
    fn every_inconsistency_is_reported() {
        assert!(reason(|m| m.n_features = 0).contains("of 0 features"));
        assert!(reason(|m| {
            m.weights.clear();
            m.params.k = 0;
        })
        .contains("0 components"));
        assert!(reason(|m| m.params.k = 3).contains("fitted with k = 3"));
        assert!(reason(|m| m.params.reg_covar = -1.0).contains("parameters"));
        assert!(reason(|m| m.n_features = usize::MAX).contains("too large"));
        assert!(reason(|m| m.means.truncate(3)).contains("means has 3"));
        assert!(reason(|m| m.covariances.truncate(4)).contains("covariances has 4"));
        assert!(reason(|m| m.precisions_cholesky.push(1.0)).contains("precisions_cholesky has 9"));
        assert!(reason(|m| m.params.covariance_type = CovarianceType::Diag)
            .contains("diag covariances"));
        assert!(reason(|m| m.weights[0] = f64::NAN).contains("non-finite weights"));
        assert!(reason(|m| m.means[1] = f64::INFINITY).contains("non-finite means"));
        assert!(reason(|m| m.covariances[1] = f64::NAN).contains("non-finite covariances"));
        assert!(reason(|m| m.precisions_cholesky[0] = f64::NAN)
            .contains("non-finite precisions_cholesky"));
        assert!(reason(|m| m.lower_bound_history[1] = f64::NAN).contains("history"));
        assert!(reason(|m| m.lower_bound = f64::NEG_INFINITY).contains("lower bound"));
        assert!(reason(|m| m.weights[0] = 0.5).contains("sum to 1"));
        assert!(reason(|m| m.weights = vec![-0.25, 1.25]).contains("non-negative"));
        assert!(reason(|m| m.labels[2] = 2).contains("label 2"));
        assert!(reason(|m| m.covariances[0] = -1.0).contains("not positive definite"));
        let doubled = |m: &mut GaussianMixtureModel| m.precisions_cholesky[4] *= 2.0;
        assert!(reason(doubled).contains("component 1 do not match"));
    }

    #[test]
    fn init_names_round_trip() {
        for init in GmmInit::ALL {
            assert_eq!(init.name().parse::<GmmInit>().unwrap(), init);
            assert_eq!(init.to_string(), init.name());
        }
        assert_eq!("k-means".parse::<GmmInit>().unwrap(), GmmInit::KMeans);
        assert_eq!(
            "K-Means++".parse::<GmmInit>().unwrap(),
            GmmInit::KMeansPlusPlus
        );
        let e = "given parameters".parse::<GmmInit>().unwrap_err();
        assert!(
            matches!(e, Error::InvalidParameter { name: "init", .. }),
            "{e}"
        );
    }

    #[test]
    fn responsibilities_are_checked() {
        assert!(check_responsibilities(&[0.5f32, 0.5, 1.0, 0.0], 2, 2).is_ok());
        assert!(check_responsibilities(&[0.5f32, 0.5, 1.0], 2, 2).is_err());
        assert!(check_responsibilities(&[0.5f64, -0.1, 1.0, 0.0], 2, 2).is_err());
        assert!(check_responsibilities(&[f32::NAN, 0.5, 1.0, 0.0], 2, 2).is_err());
    }
}
