//! [`PcaMoments`]: the statistics of a set of rows that merge across pieces, devices and
//! machines, and from which [`Pca::fit_moments`](crate::Pca::fit_moments) fits.
//!
//! The moments of a set of rows are the count n, the mean μ and the co-moment
//! M = Σ(x − μ)(x − μ)ᵀ. Two sets merge by the pairwise formulas of Chan, Golub and LeVeque
//! (1979): with δ = μ_b − μ_a and n = n_a + n_b,
//!
//! ```text
//! μ = μ_a + δ·n_b/n,    M = M_a + M_b + δδᵀ·n_a·n_b/n,
//! ```
//!
//! which never subtract large second moments (no E[xxᵀ] − μμᵀ cancellation). Every piece's
//! moments come from the same device passes as a resident fit (shifted column sums, then the
//! centred cross products in bounded blocks), so a streamed or incremental fit equals the
//! resident one within f32 rounding. From the moments, the scaled covariance about any
//! centre c follows on the host: S = (M + n(μ − c)(μ − c)ᵀ)/((n − ddof)·σᵢσⱼ).
//!
//! The matrix-free solver does not form S: a streamed matrix-free fit merges only the
//! diagonal of M (the variances) and then streams every S·V = Xsᵀ(Xs·V)/(n − ddof) of the
//! block power iteration, one pass per product.

use crate::error::{Error, Result};

/// Column statistics of the data, f64.
pub(super) struct Moments {
    /// Per-feature means.
    pub(super) mean: Vec<f64>,
    /// Per-feature population variances.
    pub(super) var: Vec<f64>,
}

/// Count, mean and co-moment of a set of rows; merge with [`PcaMoments::merge`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PcaMoments {
    /// Rows n.
    pub n: u64,
    /// Features D.
    pub n_features: usize,
    /// Per-feature mean μ.
    pub mean: Vec<f64>,
    /// The co-moment M = Σ(x − μ)(x − μ)ᵀ, D x D row-major; or only its diagonal (D values)
    /// for moments gathered for the matrix-free solver.
    pub comoment: Vec<f64>,
}

impl PcaMoments {
    /// Adds the moments of other rows (Chan, Golub and LeVeque; module docs).
    ///
    /// Errors: [`Error::FeatureMismatch`], or moments of different kinds (full and diagonal).
    pub fn merge(&mut self, other: &PcaMoments) -> Result<()> {
        self.check()?;
        other.check()?;
        if other.n_features != self.n_features {
            return Err(Error::FeatureMismatch {
                expected: self.n_features,
                found: other.n_features,
            });
        }
        if other.comoment.len() != self.comoment.len() {
            return Err(Error::invalid(
                "moments",
                "full and diagonal-only moments cannot be merged",
            ));
        }
        let d = self.n_features;
        let (na, nb) = (self.n as f64, other.n as f64);
        let n = na + nb;
        let delta: Vec<f64> = (0..d).map(|j| other.mean[j] - self.mean[j]).collect();
        let w = na * nb / n;
        let full = self.comoment.len() == d * d;
        for i in 0..d {
            if full {
                for j in 0..d {
                    self.comoment[i * d + j] += other.comoment[i * d + j] + delta[i] * delta[j] * w;
                }
            } else {
                self.comoment[i] += other.comoment[i] + delta[i] * delta[i] * w;
            }
            self.mean[i] += delta[i] * nb / n;
        }
        self.n += other.n;
        Ok(())
    }

    /// Checks that the parts fit together (moments may come from another machine): at least
    /// one row, D means, a D x D or diagonal co-moment, every value finite.
    ///
    /// Errors: [`Error::InvalidParameter`] named `moments`, saying which part is wrong.
    pub fn check(&self) -> Result<()> {
        let d = self.n_features;
        let bad = |what: &str| Err(Error::invalid("moments", format!("PCA moments: {what}")));
        if d == 0 || self.n == 0 {
            return bad("no rows or no features");
        }
        if self.mean.len() != d || !(self.comoment.len() == d || self.comoment.len() == d * d) {
            return bad("array lengths do not match n_features");
        }
        if !self
            .mean
            .iter()
            .chain(&self.comoment)
            .all(|v| v.is_finite())
        {
            return bad("values that are not finite");
        }
        Ok(())
    }

    /// These moments in units `factor` times the rows': μ × factor, M × factor² (a power
    /// of two keeps them exact).
    pub(super) fn rescaled(mut self, factor: f64) -> Self {
        self.mean.iter_mut().for_each(|m| *m *= factor);
        self.comoment.iter_mut().for_each(|c| *c *= factor * factor);
        self
    }

    /// The diagonal of M.
    pub(super) fn diagonal(&self) -> Vec<f64> {
        let d = self.n_features;
        if self.comoment.len() == d * d {
            (0..d).map(|j| self.comoment[j * d + j]).collect()
        } else {
            self.comoment.clone()
        }
    }

    /// Means and population variances, as the resident fit's column moments.
    pub(super) fn column(&self) -> Moments {
        let n = self.n as f64;
        Moments {
            mean: self.mean.clone(),
            var: self.diagonal().iter().map(|&m| (m / n).max(0.0)).collect(),
        }
    }

    /// S = (M + n(μ − c)(μ − c)ᵀ)/((n − ddof)·σᵢσⱼ), D x D (needs the full co-moment).
    pub(super) fn covariance(&self, center: &[f64], scale: &[f64], ddof: usize) -> Vec<f64> {
        let d = self.n_features;
        let n = self.n as f64;
        let denom = n - ddof as f64;
        let off: Vec<f64> = (0..d).map(|j| self.mean[j] - center[j]).collect();
        let mut s = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..d {
                s[i * d + j] = (self.comoment[i * d + j] + n * off[i] * off[j])
                    / (denom * scale[i] * scale[j]);
            }
        }
        s
    }
}

impl crate::origin::Translate for PcaMoments {
    /// The moments of the rows moved by `by`: the mean moved (the co-moment is about the
    /// mean, so it does not change).
    fn translated(mut self, by: &[f64]) -> Result<Self> {
        crate::origin::check_shift(by, self.n_features)?;
        crate::origin::translate_rows(&mut self.mean, by);
        Ok(self)
    }
}
