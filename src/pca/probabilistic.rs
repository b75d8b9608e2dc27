//! The probabilistic PCA model of a fitted [`PcaModel`] (Tipping & Bishop 1999; Bishop,
//! "Pattern Recognition and Machine Learning" §12.2): the data are Gaussian with mean μ and
//! covariance
//!
//! ```text
//! C = Uᵀ diag(λᵢ − σ²)₊ U + σ² I          (U: the M components, σ²: the noise variance)
//! C⁻¹ = Uᵀ diag(1/λ̂ᵢ − 1/σ²) U + I/σ²,  λ̂ᵢ = max(λᵢ, σ²)     (U orthonormal rows)
//! ln p(x) = −½ (x − μ)ᵀ C⁻¹ (x − μ) − ½ (D ln 2π + ln |C|),
//! ln |C| = Σᵢ ln λ̂ᵢ + (D − M) ln σ²
//! ```
//!
//! as scikit-learn's `get_covariance`, `get_precision`, `score_samples` and `score`. With
//! `standardize` the model lives in the scaled space z = (x − μ)/s; the covariance and the
//! precision are returned for x (diag(s)·C·diag(s) and its inverse) and the log-density
//! gains the Jacobian −Σⱼ ln sⱼ, so they always describe the data as given. Whitening does
//! not change the model (scikit-learn's `get_covariance` with `whiten=True` rescales the
//! components by √λ, which is not the probabilistic PCA covariance; this follows the model).
//!
//! All of it is host f64 arithmetic on D x D matrices and, for the scores, one pass over the
//! rows at O(N·D·M) using the low-rank form of C⁻¹, never a D x D product per row.

use super::PcaModel;
use crate::data::HostMatrix;
use crate::error::{Error, Result};

impl PcaModel {
    /// The eigenvalues of the model covariance in the scaled space: λ̂ᵢ for the M components
    /// and σ² for the other D − M directions, or an error when C is singular (a zero
    /// variance where no noise is left to fill it).
    fn model_spectrum(&self) -> Result<(Vec<f64>, f64)> {
        let sigma2 = self.noise_variance;
        let hat: Vec<f64> = self
            .explained_variance
            .iter()
            .map(|&v| v.max(sigma2))
            .collect();
        let singular =
            hat.iter().any(|&v| v <= 0.0) || (self.n_components < self.n_features && sigma2 <= 0.0);
        if singular {
            return Err(Error::invalid(
                "model",
                format!(
                    "the probabilistic PCA covariance is singular: {} of {} components kept and a noise variance of {sigma2:e}; it has no precision or density",
                    self.n_components, self.n_features
                ),
            ));
        }
        Ok((hat, sigma2))
    }

    /// The model covariance of the data, D x D row-major (module docs; scikit-learn's
    /// `get_covariance`). Defined for every model, singular ones included.
    pub fn covariance(&self) -> Vec<f64> {
        let sigma2 = self.noise_variance;
        let w: Vec<f64> = self.explained_variance[..self.n_components]
            .iter()
            .map(|&v| (v - sigma2).max(0.0))
            .collect();
        self.low_rank_plus_diagonal(&w, sigma2, |s| s)
    }

    /// The inverse of [`PcaModel::covariance`], D x D row-major, by its closed form for
    /// orthonormal components (module docs; scikit-learn's `get_precision`).
    ///
    /// Errors: [`Error::InvalidParameter`] when the covariance is singular (all
    /// min(N, D) < D components kept, so no noise variance, or a zero variance).
    pub fn precision(&self) -> Result<Vec<f64>> {
        let (hat, sigma2) = self.model_spectrum()?;
        let base = if self.n_components < self.n_features {
            1.0 / sigma2
        } else {
            0.0
        };
        let w: Vec<f64> = hat.iter().map(|&h| 1.0 / h - base).collect();
        Ok(self.low_rank_plus_diagonal(&w, base, |s| 1.0 / s))
    }

    /// Σᵢ wᵢ uᵢuᵢᵀ + diag·I over the first components uᵢ, entry (a, b) then multiplied by
    /// factor(scale_a · scale_b): the one form of the covariance (factor s) and of the
    /// precision (factor 1/s) in the original units of standardised data.
    fn low_rank_plus_diagonal(
        &self,
        w: &[f64],
        diag: f64,
        factor: impl Fn(f64) -> f64,
    ) -> Vec<f64> {
        let d = self.n_features;
        let mut c = vec![0.0f64; d * d];
        for (i, &wi) in w.iter().enumerate() {
            let u = &self.components[i * d..(i + 1) * d];
            for a in 0..d {
                for b in 0..d {
                    c[a * d + b] += wi * u[a] * u[b];
                }
            }
        }
        for a in 0..d {
            c[a * d + a] += diag;
            for b in 0..d {
                c[a * d + b] *= factor(self.scale[a] * self.scale[b]);
            }
        }
        c
    }

    /// The log-likelihood ln p(x) of every row of `x` under the model (module docs;
    /// scikit-learn's `score_samples`), in f64 on the host.
    ///
    /// Errors: [`Error::FeatureMismatch`], and a singular model covariance as for
    /// [`PcaModel::precision`].
    pub fn score_samples(&self, x: &impl HostMatrix) -> Result<Vec<f64>> {
        let (d, m) = (self.n_features, self.n_components);
        if x.n_features() != d {
            return Err(Error::FeatureMismatch {
                expected: d,
                found: x.n_features(),
            });
        }
        let (hat, sigma2) = self.model_spectrum()?;
        let noise = m < d;
        let log_det = hat.iter().map(|v| v.ln()).sum::<f64>()
            + if noise {
                (d - m) as f64 * sigma2.ln()
            } else {
                0.0
            }
            + 2.0 * self.scale.iter().map(|s| s.ln()).sum::<f64>();
        let constant = -0.5 * (d as f64 * (2.0 * std::f64::consts::PI).ln() + log_det);
        let mut z = vec![0.0f64; d];
        Ok((0..x.n_rows())
            .map(|r| {
                for ((zj, &v), (mu, s)) in z
                    .iter_mut()
                    .zip(x.values_of_row(r))
                    .zip(self.mean.iter().zip(&self.scale))
                {
                    *zj = (v.into() - mu) / s;
                }
                // zᵀC⁻¹z = ‖z − UᵀUz‖²/σ² + Σᵢ (uᵢ·z)²/λ̂ᵢ: the residual is summed directly,
                // not as ‖z‖² − ‖Uz‖², so no cancellation when σ² is small.
                let mut quad = 0.0;
                let mut residual = z.clone();
                for (i, &h) in hat.iter().enumerate() {
                    let u = &self.components[i * d..(i + 1) * d];
                    let p: f64 = u.iter().zip(&z).map(|(a, b)| a * b).sum();
                    quad += p * p / h;
                    for (rj, uj) in residual.iter_mut().zip(u) {
                        *rj -= p * uj;
                    }
                }
                if noise {
                    quad += residual.iter().map(|v| v * v).sum::<f64>() / sigma2;
                }
                constant - 0.5 * quad
            })
            .collect())
    }

    /// The mean of [`PcaModel::score_samples`] (scikit-learn's `score`).
    ///
    /// Errors: those of [`PcaModel::score_samples`], and an empty `x`.
    pub fn score(&self, x: &impl HostMatrix) -> Result<f64> {
        let ll = self.score_samples(x)?;
        if ll.is_empty() {
            return Err(Error::EmptyData {
                what: "data",
                missing: "rows",
            });
        }
        Ok(ll.iter().sum::<f64>() / ll.len() as f64)
    }
}
