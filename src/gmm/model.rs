//! The fitted Gaussian mixture: parameters and fit statistics, their validation (also run
//! when deserializing), evaluation on the device (responsibilities, log-densities, labels,
//! scores), information criteria and sampling.

use super::math;
use super::{CovarianceType, GaussianMixture, GmmInit, InitialParameters};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, GpuInput, GpuMatrix, GpuVector};
use crate::origin::{check_shift, translate_rows, Translate};

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
    pub(super) params: GaussianMixture,
    pub(super) n_features: usize,
    pub(super) weights: Vec<f64>,
    pub(super) means: Vec<f64>,
    pub(super) covariances: Vec<f64>,
    pub(super) precisions_cholesky: Vec<f64>,
    pub(super) converged: bool,
    pub(super) n_iter: usize,
    pub(super) lower_bound: f64,
    pub(super) lower_bound_history: Vec<f64>,
    /// Training labels: not serialized (a model file is for predicting, and N labels
    /// would dwarf the parameters).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(super) labels: Vec<u32>,
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
            math::model_precision_cholesky(&covariances, covariance_type, k, d)?;
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

    /// This model in units `factor` times the fit's (a power of two, so exact): means ×
    /// factor, covariances × factor², precision factors / factor, and log-likelihoods
    /// − D·ln factor (module docs of `gmm::fit`, `GaussianMixture::at_scale`).
    pub(super) fn rescaled(mut self, factor: f64) -> Self {
        let shift = self.n_features as f64 * factor.ln();
        self.means.iter_mut().for_each(|m| *m *= factor);
        self.covariances
            .iter_mut()
            .for_each(|c| *c *= factor * factor);
        self.precisions_cholesky
            .iter_mut()
            .for_each(|u| *u /= factor);
        self.lower_bound -= shift;
        self.lower_bound_history
            .iter_mut()
            .for_each(|lb| *lb -= shift);
        self
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

    /// Cholesky factors of the precisions in the layout of [`math`]: upper
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
        let covariances = math::covariance_len(covariance_type, k, d);
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
        let expected = math::model_precision_cholesky(&self.covariances, covariance_type, k, d)
            .map_err(|e| bad(e.to_string()))?;
        let block = math::block_len(covariance_type, d);
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

    /// Number of free parameters p: covariance values (Full K·D(D+1)/2, Tied D(D+1)/2,
    /// Diag K·D, Spherical K) + K·D means + K − 1 weights.
    pub fn n_parameters(&self) -> usize {
        math::n_parameters(self.covariance_type(), self.k(), self.n_features)
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
        math::sample(
            self.covariance_type(),
            &self.weights,
            &self.means,
            &self.covariances,
            n,
            seed,
        )
    }
}

impl Translate for GaussianMixtureModel {
    /// The mixture of the data moved by `by`: means and the given start moved; covariances,
    /// weights and log-likelihoods do not change.
    fn translated(mut self, by: &[f64]) -> Result<Self> {
        check_shift(by, self.n_features)?;
        translate_rows(&mut self.means, by);
        self.params = self.params.translated(by)?;
        Ok(self)
    }
}

impl Translate for GaussianMixture {
    /// The given means (a whole start or an override) moved by `by`.
    fn translated(mut self, by: &[f64]) -> Result<Self> {
        if let GmmInit::Given(p) = &mut self.init {
            translate_rows(&mut p.means, by);
        }
        if let Some(m) = &mut self.init_overrides.means {
            translate_rows(m, by);
        }
        Ok(self)
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
