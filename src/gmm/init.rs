//! Starting parameters given by the caller: all of them ([`GmmInit::Given`]) or any of the
//! weights, means and precisions on their own ([`InitOverrides`], scikit-learn's
//! `weights_init`, `means_init` and `precisions_init`).
//!
//! scikit-learn's rule for a partial start: the initialisation method runs as usual (K-Means,
//! k-means++ or random responsibilities, then one M-step), and each given part replaces the
//! part it computed. So with only `means_init` the weights and covariances still come from
//! the method's responsibilities. With all three given the method is skipped and one run is
//! made, as for [`GmmInit::Given`].

use super::math::{covariances_from_precisions, precision_cholesky_quoting};
use super::workspace::Parameters;
use super::{GaussianMixture, GmmInit, InitialParameters};
use crate::error::{Error, Result};

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

    /// `start` with the given parts put in place of those the initialisation computed.
    pub(super) fn override_start(&self, mut start: Parameters, d: usize) -> Result<Parameters> {
        let o = &self.init_overrides;
        if let Some(w) = &o.weights {
            start.weights = w.clone();
        }
        if let Some(m) = &o.means {
            start.means = m.clone();
        }
        if let Some(p) = &o.precisions {
            let t = self.covariance_type;
            start.covariances = covariances_from_precisions(p, t, d)?;
            start.precisions_cholesky =
                precision_cholesky_quoting(&start.covariances, t, self.k, d, Some(self.reg_covar))?;
        }
        Ok(start)
    }
}
