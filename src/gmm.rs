//! Gaussian mixtures fitted by expectation–maximisation: parameters.
//!
//! The model is p(x) = Σₖ πₖ N(x | μₖ, Σₖ). This module holds the parameters shared by the
//! f64 reference ([`crate::reference::gmm`], complete) and the GPU fit (the E- and M-step
//! shaders are the next milestone; until they land there is no GPU `fit` here).

use crate::error::{Error, Result};

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
