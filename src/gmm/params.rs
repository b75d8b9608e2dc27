//! The parameters of a Gaussian-mixture fit ([`GaussianMixture`], [`CovarianceType`],
//! [`GmmInit`], [`InitOverrides`]) and their validation against the data.
//!
//! Starting parameters given by the caller: all of them ([`GmmInit::Given`]) or any of the
//! weights, means and precisions on their own ([`InitOverrides`], scikit-learn's
//! `weights_init`, `means_init` and `precisions_init`). scikit-learn's rule for a partial
//! start: the initialisation method runs as usual (K-Means, k-means++ or random
//! responsibilities, then one M-step), and each given part replaces the part it computed. So
//! with only `means_init` the weights and covariances still come from the method's
//! responsibilities. With all three given the method is skipped and one run is made, as for
//! [`GmmInit::Given`].

use crate::error::{Error, Result};
use crate::names::parse_choice;
use crate::progress::OnIteration;

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
    /// Number of covariance (and precision-factor) values of `k` components of `d` features
    /// (`None` when it overflows; layouts in [`math`](super::math)).
    pub(crate) fn values(self, k: usize, d: usize) -> Option<usize> {
        match self {
            CovarianceType::Full => k.checked_mul(d)?.checked_mul(d),
            CovarianceType::Tied => d.checked_mul(d),
            CovarianceType::Diag => k.checked_mul(d),
            CovarianceType::Spherical => Some(k),
        }
    }

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
    /// The lower bound of the fit a warm start continues ([`GaussianMixture::warm_start`]):
    /// the first iteration's change is measured from it, as scikit-learn's `warm_start` does,
    /// so repeated short refits see convergence. `None` (−∞) otherwise.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub warm_lower_bound: Option<f64>,
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
            warm_lower_bound: None,
            on_iteration: None,
        }
    }

    /// Calls `f` after every EM iteration with its [`Iteration`](crate::progress::Iteration)
    /// (initialisation, iteration, lower bound, its change, elapsed time);
    /// `ControlFlow::Break(())` stops the fit there: the model is returned as it stands,
    /// `converged() == false`, and later initialisations are skipped.
    pub fn on_iteration(
        mut self,
        f: impl Fn(&crate::progress::Iteration) -> std::ops::ControlFlow<()> + Send + Sync + 'static,
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
        self.covariance_type.values(self.k, d).unwrap_or(usize::MAX)
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
    pub(super) fn validate_for_features(&self, d: usize) -> Result<()> {
        Error::require_count("k", self.k)?;
        Error::require_non_negative("reg_covar", self.reg_covar)?;
        Error::require_count("n_init", self.n_init)?;
        Error::require_count("max_iter", self.max_iter)?;
        Error::require_non_negative("tol", self.tol)?;
        self.check_given_start(d)?;
        Ok(())
    }
}

/// Parts of the starting parameters that replace those the initialisation computes (each
/// in the layout of [`InitialParameters`]); all `None` by default.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct InitOverrides {
    /// Mixing weights πₖ (K values, non-negative, summing to 1).
    pub weights: Option<Vec<f64>>,
    /// Means μₖ, K x D row-major.
    pub means: Option<Vec<f64>>,
    /// Precision matrices Σₖ⁻¹ in the layout of the covariance type.
    pub precisions: Option<Vec<f64>>,
}

impl InitOverrides {
    /// Whether nothing is overridden.
    pub fn is_empty(&self) -> bool {
        self.weights.is_none() && self.means.is_none() && self.precisions.is_none()
    }

    /// All three parts, when all are given.
    pub fn complete(&self) -> Option<InitialParameters> {
        Some(InitialParameters {
            weights: self.weights.clone()?,
            means: self.means.clone()?,
            precisions: self.precisions.clone()?,
        })
    }
}

impl GaussianMixture {
    /// Starts EM from these mixing weights (K values, non-negative, summing to 1);
    /// scikit-learn's `weights_init`.
    pub fn weights_init(mut self, weights: Vec<f64>) -> Self {
        self.init_overrides.weights = Some(weights);
        self
    }

    /// Starts EM from these means (K x D row-major); scikit-learn's `means_init`.
    pub fn means_init(mut self, means: Vec<f64>) -> Self {
        self.init_overrides.means = Some(means);
        self
    }

    /// Starts EM from these precision matrices (the inverse covariances, in the layout of
    /// the covariance type: Full K x D x D, Tied D x D, Diag K x D, Spherical K);
    /// scikit-learn's `precisions_init`.
    pub fn precisions_init(mut self, precisions: Vec<f64>) -> Self {
        self.init_overrides.precisions = Some(precisions);
        self
    }

    /// The parameters a fit runs with: all three parts given become [`GmmInit::Given`].
    pub(super) fn resolved_init(&self) -> GaussianMixture {
        match self.init_overrides.complete() {
            Some(given) => GaussianMixture {
                init: GmmInit::Given(given),
                init_overrides: InitOverrides::default(),
                on_iteration: self.on_iteration.clone(),
                ..self.clone()
            },
            None => self.clone(),
        }
    }

    /// Checks the given starting parts against K and D: lengths, finite values, weights
    /// that are a distribution (positive definiteness of precisions is checked when they
    /// are factorised).
    pub(super) fn check_given_start(&self, d: usize) -> Result<()> {
        let parts = match &self.init {
            GmmInit::Given(p) => [Some(&p.weights), Some(&p.means), Some(&p.precisions)],
            _ => {
                let o = &self.init_overrides;
                [o.weights.as_ref(), o.means.as_ref(), o.precisions.as_ref()]
            }
        };
        let expected = [self.k, self.k.saturating_mul(d), self.precision_len(d)];
        for ((part, want), name) in
            parts
                .iter()
                .zip(expected)
                .zip(["weights", "means", "precisions"])
        {
            if let Some(v) = part {
                if v.len() != want {
                    return Err(Error::invalid(
                        "init",
                        format!(
                            "given {name} have {} values; expected {want} for k = {} and d = {d}",
                            v.len(),
                            self.k
                        ),
                    ));
                }
                if v.iter().any(|x| !x.is_finite()) {
                    return Err(Error::invalid(
                        "init",
                        format!("given {name} must be finite"),
                    ));
                }
            }
        }
        if let Some(w) = parts[0] {
            let sum: f64 = w.iter().sum();
            if w.iter().any(|&v| v < 0.0) || (sum - 1.0).abs() > 1e-6 {
                return Err(Error::invalid(
                    "init",
                    "weights must be finite, non-negative and sum to 1",
                ));
            }
        }
        Ok(())
    }
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
