//! Gaussian mixtures fitted by expectation–maximisation, with the per-point work on the GPU.
//!
//! The model is the density
//!
//! ```text
//! p(x) = Σₖ πₖ N(x | μₖ, Σₖ),     πₖ ≥ 0,  Σₖ πₖ = 1
//! ```
//!
//! fitted by EM (Dempster, Laird & Rubin 1977; Bishop, *PRML* §9.2). Every formula, layout
//! and convention is the one of the f64 CPU oracle (the `gmm` module of
//! [`reference`](crate::reference), itself scikit-learn's `GaussianMixture`); this module runs the same algorithm with the N-sized
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

//!
//! **Data that do not fit on the device** ([`GaussianMixture::fit_source`], and
//! [`GaussianMixture::fit`] of host data over the memory budget) are streamed piece by piece;
//! each EM iteration is one pass whose pieces give mergeable [`GmmStats`] (`stream` and
//! `stats` module docs, with the merge formulas). [`GaussianMixture::pass_stats`] is that
//! pass on its own, for drivers that spread the rows over devices or machines.
//!
//! Layout: this module holds the parameters ([`GaussianMixture`], [`CovarianceType`],
//! [`GmmInit`]) and the GPU M-step on its own ([`estimate_gaussian_parameters`]); [`math`]
//! the host algebra (precision factors, parameter counts, sampling); `workspace` the device
//! buffers and passes; `fit` the EM loop and its initialisations; `stats` the mergeable
//! statistics and the M-step from sums; `stream` EM over a [`RowSource`](crate::RowSource);
//! `model` the fitted [`GaussianMixtureModel`].

use crate::error::{Error, Result};
use crate::gpu::{Gpu, GpuInput};
use crate::names::parse_choice;
use crate::progress::OnIteration;

mod fit;
mod init;
pub mod math;
mod model;
mod remote;
mod stats;
mod stream;
mod workspace;

pub use init::InitOverrides;
#[cfg(feature = "io")]
pub(crate) use model::GaussianMixtureModelFields;
pub use model::{GaussianMixtureModel, GmmEvaluation};
pub use remote::{
    GmmPartition, GmmReply, GmmRequest, GmmStart, MixtureParameters, RemoteGaussianMixture,
};
pub use stats::GmmStats;

use workspace::Workspace;

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
///
/// ```
/// use wgpu_unsupervised::{datasets, metrics, CovarianceType, GaussianMixture, Gpu, Matrix};
///
/// let gpu = Gpu::new()?;
/// let (rows, truth, _) = datasets::make_blobs(600, 2, 3, 0.6, (-10.0, 10.0), 4)?;
/// let x = Matrix::new(&rows, 2)?;
/// let model = GaussianMixture::new(3).covariance(CovarianceType::Diag).seed(4).fit(&gpu, &x)?;
/// assert!(model.converged());
/// assert!(metrics::adjusted_rand_index(model.labels(), &truth)? > 0.99);
/// let proba = model.predict_proba(&gpu, &x)?; // 600 x 3, rows sum to 1
/// assert!((proba[..3].iter().sum::<f32>() - 1.0).abs() < 1e-5);
/// # Ok::<(), wgpu_unsupervised::Error>(())
/// ```
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
    /// Given weights, means or precisions that replace those `init` computes (scikit-learn's
    /// `weights_init`, `means_init`, `precisions_init`; module `init`).
    #[cfg_attr(feature = "serde", serde(default))]
    pub init_overrides: InitOverrides,
    /// Called after every EM iteration (see [`crate::progress`]); never serialized, and not
    /// kept in the fitted model's parameters.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub on_iteration: Option<OnIteration>,
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
            init_overrides: InitOverrides::default(),
            on_iteration: None,
        }
    }

    /// Calls `f` after every EM iteration with its [`Iteration`](crate::Iteration)
    /// (initialisation, iteration, lower bound, its change, elapsed time);
    /// `ControlFlow::Break(())` stops the fit there: the model is returned as it stands,
    /// `converged() == false`, and later initialisations are skipped.
    pub fn on_iteration(
        mut self,
        f: impl Fn(&crate::Iteration) -> std::ops::ControlFlow<()> + Send + Sync + 'static,
    ) -> Self {
        self.on_iteration = Some(OnIteration::new(f));
        self
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
    /// D features ([`usize::MAX`] when that overflows).
    pub fn precision_len(&self, d: usize) -> usize {
        math::covariance_len(self.covariance_type, self.k, d).unwrap_or(usize::MAX)
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
        self.check_given_start(d)?;
        Ok(())
    }
}

impl GaussianMixture {
    /// Starts the next fit from a fitted model's parameters (scikit-learn's `warm_start`):
    /// sets `init` to [`GmmInit::Given`] with the model's weights, means and precisions, and
    /// the covariance type to the model's.
    pub fn warm_start(mut self, model: &GaussianMixtureModel) -> Self {
        self.covariance_type = model.covariance_type();
        self.init = GmmInit::Given(model.initial_parameters());
        self
    }
}

/// Weights, means and covariances of a mixture (layouts in [`math`]).
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
/// of the GPU M-step).
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
