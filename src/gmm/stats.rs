//! [`GmmStats`]: what one E-step pass over some rows gives, in a form that merges, and the
//! M-step from such sums (shared with the resident fit).
//!
//! For fixed parameters θ = (π, μ, Σ), an E-step over rows x gives each row its
//! responsibilities rᵢₖ and log-density log p(xᵢ). EM's M-step needs, per component,
//!
//! ```text
//! Nₖ = Σᵢ rᵢₖ,     mₖ = Σᵢ rᵢₖ xᵢ / Nₖ,     Mₖ = Σᵢ rᵢₖ (xᵢ − mₖ)(xᵢ − mₖ)ᵀ
//! ```
//!
//! (Mₖ full D x D for `Full` and `Tied`, its diagonal for `Diag` and `Spherical`), and the
//! lower bound needs Σᵢ log p(xᵢ) and the row count. A [`GmmStats`] holds exactly these for
//! the rows it has seen, together with the θ they were computed for.
//!
//! **Merging** is Chan, Golub & LeVeque's pairwise update of centred scatters, per
//! component: for disjoint row sets a and b,
//!
//! ```text
//! N = Nₐ + N_b,   δ = m_b − mₐ,   m = mₐ + δ N_b / N,   M = Mₐ + M_b + δ δᵀ Nₐ N_b / N
//! ```
//!
//! (with δⱼ² for the diagonal types; a side with N = 0 contributes nothing). It is exact in
//! exact arithmetic and, unlike sums about one common shift s, never forms
//! Σ r (x − s)(x − s)ᵀ − N (m − s)(m − s)ᵀ, which cancels badly when a component's rows sit
//! far from s (early iterations, when the means still move a lot, or partitions of very
//! different content). Each piece's Mₖ is centred on the piece's own mₖ, as the resident
//! fit centres on the new means: moved there in f64 from the one-pass sums about the E-step
//! means where that loses at most a digit, else taken on the device about mₖ (`moments`),
//! so no f32 sum is ever used about a far-off point. The log-likelihood sums and row counts
//! add.
//!
//! **M-step** from merged statistics (the resident fit's, `reg_covar` included): with the
//! E-step means sₖ (the shift the resident fit uses), N′ₖ = Nₖ + 10 ε and T = Σₖ N′ₖ,
//!
//! ```text
//! πₖ = N′ₖ / T,   μₖ = sₖ + (mₖ − sₖ) Nₖ / N′ₖ   (= sₖ + Σ r (x − sₖ) / N′ₖ)
//! Sₖ = Mₖ + Nₖ (mₖ − μₖ)(mₖ − μₖ)ᵀ                (the scatter about μₖ)
//! Full: Σₖ = Sₖ / N′ₖ + reg·I     Tied: Σ = Σₖ Sₖ / T + reg·I
//! Diag: σₖⱼ² = Sₖⱼⱼ / N′ₖ + reg   Spherical: σₖ² = (1/D) Σⱼ σₖⱼ²
//! ```
//!
//! A component without weight keeps its E-step mean and gets reg·I, as in the resident fit.

use super::em::Parameters;
use super::math::precision_cholesky_quoting;
use super::CovarianceType;
use crate::error::{Error, Result};

/// Weights, means and covariances of a mixture (layouts in [`math`](super::math)).
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

/// Per-component sums of one E-step pass over some rows for fixed parameters (module docs);
/// merge with [`GmmStats::merge`], turn into the next parameters with
/// [`GmmStats::next_parameters`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GmmStats {
    /// Covariance shape of the mixture (the layout of `scatter`).
    pub covariance_type: CovarianceType,
    /// Features D.
    pub n_features: usize,
    /// Mixing weights of the E-step (K; empty for statistics of given responsibilities, as
    /// at initialisation).
    pub weights: Vec<f64>,
    /// Means of the E-step, K x D: the shifts sₖ of the M-step.
    pub means: Vec<f64>,
    /// Precision Cholesky factors of the E-step (layout of
    /// [`GaussianMixtureModel::precisions_cholesky`](crate::GaussianMixtureModel::precisions_cholesky);
    /// empty like `weights`).
    pub precisions_cholesky: Vec<f64>,
    /// Rows seen.
    pub n_rows: u64,
    /// Σᵢ wᵢ over the rows seen (their number without sample weights).
    pub weight_total: f64,
    /// Σᵢ wᵢ·log p(xᵢ) over the rows seen (wᵢ = 1 without sample weights).
    pub log_likelihood: f64,
    /// Nₖ = Σᵢ rᵢₖ (K).
    pub resp_sums: Vec<f64>,
    /// mₖ = Σᵢ rᵢₖ xᵢ / Nₖ, K x D (the E-step mean where Nₖ = 0).
    pub component_means: Vec<f64>,
    /// Mₖ = Σᵢ rᵢₖ (xᵢ − mₖ)(xᵢ − mₖ)ᵀ: K x D x D (symmetric) for `Full` and `Tied`, its
    /// diagonal K x D for `Diag` and `Spherical`.
    pub scatter: Vec<f64>,
}

impl GmmStats {
    /// Empty statistics for an E-step with `p` (what merging starts from).
    pub(super) fn empty(covariance_type: CovarianceType, d: usize, p: &Parameters) -> Self {
        let (weights, factors) = (p.weights.clone(), p.precisions_cholesky.clone());
        Self::about(covariance_type, d, p.means.clone(), weights, factors)
    }

    /// Empty statistics about the shifts `means` (K x D) for an E-step with `weights` and
    /// `precisions_cholesky` (both empty for given responsibilities).
    pub(super) fn about(
        covariance_type: CovarianceType,
        d: usize,
        means: Vec<f64>,
        weights: Vec<f64>,
        precisions_cholesky: Vec<f64>,
    ) -> Self {
        let k = means.len() / d;
        let per = if full(covariance_type) { d * d } else { d };
        Self {
            covariance_type,
            n_features: d,
            weights,
            precisions_cholesky,
            n_rows: 0,
            weight_total: 0.0,
            log_likelihood: 0.0,
            resp_sums: vec![0.0; k],
            component_means: means.clone(),
            scatter: vec![0.0; k * per],
            means,
        }
    }

    /// Number of components K.
    pub fn k(&self) -> usize {
        self.resp_sums.len()
    }

    /// The mean log-likelihood Σᵢ wᵢ·log p(xᵢ) / Σᵢ wᵢ of the rows seen (1/N Σ log p
    /// without weights: the lower bound of the E-step's parameters; NaN when no rows were
    /// seen).
    pub fn mean_log_likelihood(&self) -> f64 {
        self.log_likelihood / self.weight_total
    }

    /// Adds the statistics of other rows, computed for the same parameters (module docs).
    ///
    /// Errors: [`Error::InvalidParameter`] named `stats` when the covariance type, shapes or
    /// E-step parameters differ: sums for different parameters do not add up to anything.
    pub fn merge(&mut self, other: &GmmStats) -> Result<()> {
        self.check()?;
        other.check()?;
        let same_shape = other.covariance_type == self.covariance_type
            && other.n_features == self.n_features
            && other.resp_sums.len() == self.resp_sums.len()
            && other.component_means.len() == self.component_means.len()
            && other.scatter.len() == self.scatter.len();
        if !same_shape
            || other.weights != self.weights
            || other.means != self.means
            || other.precisions_cholesky != self.precisions_cholesky
        {
            return Err(Error::invalid(
                "stats",
                "statistics computed for different parameters or shapes cannot be merged",
            ));
        }
        let d = self.n_features;
        let per = self.scatter.len() / self.k().max(1);
        for c in 0..self.k() {
            let (na, nb) = (self.resp_sums[c], other.resp_sums[c]);
            if nb <= 0.0 {
                continue;
            }
            let (ma, mb) = (c * d..(c + 1) * d, c * per..(c + 1) * per);
            if na <= 0.0 {
                self.resp_sums[c] = nb;
                self.component_means[ma.clone()].copy_from_slice(&other.component_means[ma]);
                self.scatter[mb.clone()].copy_from_slice(&other.scatter[mb]);
                continue;
            }
            let n = na + nb;
            let delta: Vec<f64> = (0..d)
                .map(|j| other.component_means[c * d + j] - self.component_means[c * d + j])
                .collect();
            let w = na * nb / n;
            let own = &mut self.scatter[mb.clone()];
            for (e, (a, b)) in own.iter_mut().zip(&other.scatter[mb]).enumerate() {
                let (i, j) = if per == d { (e, e) } else { (e / d, e % d) };
                *a += b + delta[i] * delta[j] * w;
            }
            for (j, m) in self.component_means[ma].iter_mut().enumerate() {
                *m += delta[j] * nb / n;
            }
            self.resp_sums[c] = n;
        }
        self.n_rows += other.n_rows;
        self.weight_total += other.weight_total;
        self.log_likelihood += other.log_likelihood;
        Ok(())
    }

    /// The parameters of the M-step from these statistics, with `reg_covar` on the
    /// covariance diagonals (module docs; the resident fit's M-step).
    ///
    /// Errors: [`Error::InvalidParameter`] named `reg_covar` for a negative or non-finite
    /// value or when a covariance is not positive definite (naming the component).
    pub fn next_parameters(&self, reg_covar: f64) -> Result<GaussianParameters> {
        Error::require_non_negative("reg_covar", reg_covar)?;
        let p = self.next(reg_covar)?;
        Ok(GaussianParameters {
            weights: p.weights,
            means: p.means,
            covariances: p.covariances,
        })
    }

    /// Checks that the parts fit together (statistics may come from another machine):
    /// K components of D features, the E-step parameters empty or of the right sizes, every
    /// value finite except a log-likelihood of −∞.
    ///
    /// Errors: [`Error::InvalidParameter`] named `stats`, saying which part is wrong.
    pub fn check(&self) -> Result<()> {
        let (k, d) = (self.k(), self.n_features);
        let bad = |what: &str| {
            Err(Error::invalid(
                "stats",
                format!("mixture statistics: {what}"),
            ))
        };
        if k == 0 || d == 0 {
            return bad("no components or no features");
        }
        let per = if full(self.covariance_type) { d * d } else { d };
        let factors = match self.covariance_type {
            CovarianceType::Full => k * d * d,
            CovarianceType::Tied => d * d,
            CovarianceType::Diag => k * d,
            CovarianceType::Spherical => k,
        };
        if self.means.len() != k * d
            || self.component_means.len() != k * d
            || self.scatter.len() != k * per
            || !(self.weights.is_empty() || self.weights.len() == k)
            || !(self.precisions_cholesky.is_empty() || self.precisions_cholesky.len() == factors)
        {
            return bad("array lengths do not match K and D");
        }
        let finite = [
            &self.means,
            &self.component_means,
            &self.scatter,
            &self.weights,
            &self.precisions_cholesky,
            &self.resp_sums,
        ]
        .iter()
        .all(|v| v.iter().all(|x| x.is_finite()));
        if !finite || !self.weight_total.is_finite() || self.log_likelihood.is_nan() {
            return bad("values that are not finite");
        }
        Ok(())
    }

    /// [`GmmStats::next_parameters`] with the precision factors.
    pub(super) fn next(&self, reg_covar: f64) -> Result<Parameters> {
        self.check()?;
        let (k, d) = (self.k(), self.n_features);
        let (nk, weights) = weights_of(&self.resp_sums);
        let means: Vec<f64> = (0..k * d)
            .map(|e| {
                let c = e / d;
                let s = self.means[e];
                s + (self.component_means[e] - s) * (self.resp_sums[c] / nk[c])
            })
            .collect();
        let per = self.scatter.len() / k.max(1);
        // The scatter about μₖ rather than about mₖ (they differ only for tiny Nₖ).
        let mu = means.clone();
        let scatter = |c: usize, i: usize, j: usize| {
            let off = |t: usize| self.component_means[c * d + t] - mu[c * d + t];
            let m = if per == d {
                self.scatter[c * d + j]
            } else {
                self.scatter[c * d * d + i * d + j]
            };
            m + self.resp_sums[c] * off(i) * off(j)
        };
        parameters_from_sums(
            self.covariance_type,
            d,
            nk,
            weights,
            means,
            scatter,
            reg_covar,
        )
    }
}

/// Full D x D scatters (Full, Tied) rather than diagonals (Diag, Spherical).
pub(super) fn full(covariance_type: CovarianceType) -> bool {
    matches!(covariance_type, CovarianceType::Full | CovarianceType::Tied)
}

/// N′ₖ = max(Nₖ, 0) + 10 ε and the weights N′ₖ / Σⱼ N′ⱼ (parent module docs).
pub(super) fn weights_of(resp_sums: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let nk: Vec<f64> = resp_sums
        .iter()
        .map(|v| v.max(0.0) + 10.0 * f64::EPSILON)
        .collect();
    let total: f64 = nk.iter().sum();
    let weights = nk.iter().map(|v| v / total).collect();
    (nk, weights)
}

/// The M-step's covariances and precision factors from N′ₖ (`nk`), the weights, the new
/// means and the scatter about them (`scatter(c, i, j)`: Σ rᵢ (x − μₖ)ᵢ (x − μₖ)ⱼ of
/// component c; only i = j is asked for Diag and Spherical), with `reg_covar` added to
/// the diagonals. One piece of code for the resident and the streamed fit.
pub(super) fn parameters_from_sums(
    covariance_type: CovarianceType,
    d: usize,
    nk: Vec<f64>,
    weights: Vec<f64>,
    means: Vec<f64>,
    scatter: impl Fn(usize, usize, usize) -> f64,
    reg_covar: f64,
) -> Result<Parameters> {
    let k = nk.len();
    let total: f64 = nk.iter().sum();
    let covariances = match covariance_type {
        CovarianceType::Full => {
            let mut cov = Vec::with_capacity(k * d * d);
            for (c, n) in nk.iter().enumerate() {
                for i in 0..d {
                    for j in 0..d {
                        let reg = if i == j { reg_covar } else { 0.0 };
                        cov.push(scatter(c, i, j) / n + reg);
                    }
                }
            }
            cov
        }
        CovarianceType::Tied => {
            let mut cov = Vec::with_capacity(d * d);
            for i in 0..d {
                for j in 0..d {
                    let s: f64 = (0..k).map(|c| scatter(c, i, j)).sum();
                    let reg = if i == j { reg_covar } else { 0.0 };
                    cov.push(s / total + reg);
                }
            }
            cov
        }
        CovarianceType::Diag | CovarianceType::Spherical => {
            let var = |c: usize, j: usize| scatter(c, j, j) / nk[c] + reg_covar;
            if covariance_type == CovarianceType::Diag {
                (0..k * d).map(|e| var(e / d, e % d)).collect()
            } else {
                (0..k)
                    .map(|c| (0..d).map(|j| var(c, j)).sum::<f64>() / d as f64)
                    .collect()
            }
        }
    };
    let precisions_cholesky =
        precision_cholesky_quoting(&covariances, covariance_type, k, d, Some(reg_covar))?;
    Ok(Parameters {
        weights,
        means,
        covariances,
        precisions_cholesky,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Statistics of rows `x` (D features) with responsibilities `r` (N x K), in f64 on the
    /// host, about `shift`.
    fn host_stats(t: CovarianceType, x: &[f64], r: &[f64], d: usize, shift: &[f64]) -> GmmStats {
        let k = shift.len() / d;
        let mut s = GmmStats::about(t, d, shift.to_vec(), vec![0.5; k], Vec::new());
        let rows = || x.chunks_exact(d).zip(r.chunks_exact(k));
        for c in 0..k {
            let n: f64 = rows().map(|(_, r)| r[c]).sum();
            if n == 0.0 {
                continue;
            }
            s.resp_sums[c] = n;
            for j in 0..d {
                s.component_means[c * d + j] = rows().map(|(x, r)| r[c] * x[j]).sum::<f64>() / n;
            }
            let m = &s.component_means[c * d..(c + 1) * d];
            let per = s.scatter.len() / k;
            for e in 0..per {
                let (i, j) = if per == d { (e, e) } else { (e / d, e % d) };
                s.scatter[c * per + e] = rows()
                    .map(|(x, r)| r[c] * (x[i] - m[i]) * (x[j] - m[j]))
                    .sum();
            }
        }
        s.n_rows = (x.len() / d) as u64;
        s.weight_total = s.n_rows as f64;
        s.log_likelihood = -(x.len() as f64);
        s
    }

    #[test]
    fn chan_merging_equals_the_statistics_of_the_union() {
        let d = 3;
        let x: Vec<f64> = (0..30)
            .map(|i| ((i * 7919) % 23) as f64 * 0.5 - 3.0 + i as f64)
            .collect();
        let r: Vec<f64> = (0..20)
            .map(|i| {
                if i % 2 == 0 {
                    (i % 5) as f64 / 4.0
                } else {
                    1.0 - ((i - 1) % 5) as f64 / 4.0
                }
            })
            .collect();
        // Row 0 belongs to component 0 alone.
        let r = [&[1.0, 0.0][..], &r[2..]].concat();
        let shift = [1.0, 2.0, 3.0, -1.0, 0.0, 1.0];
        for t in CovarianceType::ALL {
            let whole = host_stats(t, &x, &r, d, &shift);
            // Uneven parts, one of which gives component 1 no weight at all.
            let mut merged = host_stats(t, &x[..3], &r[..2], d, &shift);
            for (a, b) in [(1, 4), (4, 7), (7, 10)] {
                merged
                    .merge(&host_stats(
                        t,
                        &x[a * d..b * d],
                        &r[a * 2..b * 2],
                        d,
                        &shift,
                    ))
                    .unwrap();
            }
            let mut first = host_stats(t, &x[..3], &r[..2], d, &shift);
            first
                .merge(&host_stats(t, &x[3..], &r[2..], d, &shift))
                .unwrap();
            for s in [&merged, &first] {
                assert_eq!(s.n_rows, 10);
                let close = |a: &[f64], b: &[f64]| {
                    a.iter()
                        .zip(b)
                        .all(|(p, q)| (p - q).abs() <= 1e-9 * (1.0 + q.abs()))
                };
                assert!(close(&s.resp_sums, &whole.resp_sums), "{t}");
                assert!(close(&s.component_means, &whole.component_means), "{t}");
                assert!(
                    close(&s.scatter, &whole.scatter),
                    "{t}: {:?} {:?}",
                    s.scatter,
                    whole.scatter
                );
                assert_eq!(s.log_likelihood, -30.0);
            }
            // The next parameters: weights from Nₖ, the means, reg on the diagonal.
            let p = whole.next(0.0).unwrap();
            let total: f64 = whole.resp_sums.iter().sum();
            assert!((p.weights[0] - whole.resp_sums[0] / total).abs() < 1e-12);
            assert!((p.means[4] - whole.component_means[4]).abs() < 1e-12);
            let mut other = whole.clone();
            other.means[0] += 1.0;
            assert!(merged.merge(&other).is_err());
        }
    }

    #[test]
    fn a_component_without_weight_keeps_its_mean_and_gets_reg_covar() {
        let shift = [5.0, -5.0];
        let s = GmmStats::about(
            CovarianceType::Full,
            2,
            shift.to_vec(),
            vec![1.0],
            vec![1.0; 4],
        );
        let p = s.next(0.5).unwrap();
        assert_eq!(p.means, shift);
        assert_eq!(p.covariances, vec![0.5, 0.0, 0.0, 0.5]);
        assert_eq!(p.weights, vec![1.0]);
        assert!(s.next_parameters(-1.0).is_err());
        assert!(s.next(0.0).is_err(), "not positive definite");
    }
}
