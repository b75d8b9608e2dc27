//! The building blocks of the oracle's EM: log-densities through the precision Cholesky
//! factors, the log-sum-exp E-step and the centred M-step (formulas in the parent module).
//! The factors themselves come from the neutral [`crate::gmm::math`].

use super::{model_k, weighted_log_prob, ReferenceGmm};
use crate::error::{Error, Result};
use crate::gmm::{math, CovarianceType};

/// log N(xᵢ | μₖ, Σₖ) for every row of `x` and every component: N x K row-major
/// (scikit-learn's `_estimate_log_gaussian_prob`), from the precision factors.
///
/// `means` is K x D, `precisions_cholesky` in the layout of `covariance_type` (module docs).
/// Returns an empty vector when the shapes do not fit (d = 0, `x.len()` not a multiple of d,
/// or `means`/`precisions_cholesky` not of K components of d features).
pub fn estimate_log_gaussian_prob(
    x: &[f64],
    d: usize,
    means: &[f64],
    precisions_cholesky: &[f64],
    covariance_type: CovarianceType,
    k: usize,
) -> Vec<f64> {
    if d == 0
        || !x.len().is_multiple_of(d)
        || means.len() != k.saturating_mul(d)
        || math::covariance_len(covariance_type, k, d) != Some(precisions_cholesky.len())
    {
        return Vec::new();
    }
    let n = x.len() / d;
    let half_log_2pi_d = 0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln();

    // The factor block of component c and its log-determinant.
    let block = |c: usize| -> &[f64] {
        match covariance_type {
            CovarianceType::Full => &precisions_cholesky[c * d * d..(c + 1) * d * d],
            CovarianceType::Tied => precisions_cholesky,
            CovarianceType::Diag => &precisions_cholesky[c * d..(c + 1) * d],
            CovarianceType::Spherical => &precisions_cholesky[c..c + 1],
        }
    };
    let log_det: Vec<f64> = (0..k)
        .map(|c| {
            let u = block(c);
            match covariance_type {
                CovarianceType::Full | CovarianceType::Tied => {
                    (0..d).map(|j| u[j * d + j].ln()).sum()
                }
                CovarianceType::Diag => u.iter().map(|p| p.ln()).sum(),
                CovarianceType::Spherical => d as f64 * u[0].ln(),
            }
        })
        .collect();

    let mut out = Vec::with_capacity(n * k);
    let mut diff = vec![0.0; d];
    for row in x.chunks_exact(d) {
        for c in 0..k {
            let mu = &means[c * d..(c + 1) * d];
            for ((t, xv), m) in diff.iter_mut().zip(row).zip(mu) {
                *t = xv - m;
            }
            let u = block(c);
            let sq: f64 = match covariance_type {
                CovarianceType::Full | CovarianceType::Tied => (0..d)
                    .map(|j| {
                        // y_j = Σ_i diff_i U_ij; U is upper triangular (U_ij = 0 for i > j).
                        let y: f64 = (0..=j).map(|i| diff[i] * u[i * d + j]).sum();
                        y * y
                    })
                    .sum(),
                CovarianceType::Diag => diff.iter().zip(u).map(|(t, p)| (t * p).powi(2)).sum(),
                CovarianceType::Spherical => u[0] * u[0] * diff.iter().map(|t| t * t).sum::<f64>(),
            };
            out.push(-half_log_2pi_d - 0.5 * sq + log_det[c]);
        }
    }
    out
}

/// The E-step: log responsibilities log rᵢₖ (N x K) and log p(xᵢ) per sample, by
/// max-shifted log-sum-exp (scikit-learn's `_estimate_log_prob_resp`).
///
/// A point far from every mean gets finite values. A row whose weighted log-probabilities
/// are all −∞ (only possible with zero weights) gets log p = −∞ and uniform
/// responsibilities. Returns empty vectors when `x` or `d` does not fit the model (d = 0,
/// `x.len()` not a multiple of d, means of another feature count).
pub fn estep(x: &[f64], d: usize, model: &ReferenceGmm) -> (Vec<f64>, Vec<f64>) {
    let Some(k) = model_k(model, d) else {
        return (Vec::new(), Vec::new());
    };
    let mut log_resp = weighted_log_prob(x, d, model);
    let mut log_norm = Vec::with_capacity(log_resp.len() / k);
    for row in log_resp.chunks_exact_mut(k) {
        let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if m == f64::NEG_INFINITY {
            row.fill(-(k as f64).ln());
            log_norm.push(f64::NEG_INFINITY);
            continue;
        }
        let lse = m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        for v in row.iter_mut() {
            *v -= lse;
        }
        log_norm.push(lse);
    }
    (log_resp, log_norm)
}

/// The M-step: weights, means (K x D) and covariances (layout of `covariance_type`, with
/// `reg_covar` added to the diagonal) from responsibilities `resp` (N x K), with centred
/// second moments (scikit-learn's `_estimate_gaussian_parameters` followed by the weight
/// normalisation of `_m_step`). Nₖ gets 10 ε added, so a component without weight gets a
/// finite mean, covariance reg·I and a tiny positive weight (module docs).
///
/// Errors: [`Error::EmptyData`], [`Error::Shape`], [`Error::NonFinite`] for bad `x`;
/// [`Error::InvalidParameter`] for k = 0, `resp` not N x K or with negative or non-finite
/// values, or `reg_covar` negative or non-finite.
pub fn mstep(
    x: &[f64],
    d: usize,
    resp: &[f64],
    k: usize,
    covariance_type: CovarianceType,
    reg_covar: f64,
) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    crate::data::validate_row_major(x, d)?;
    let n = x.len() / d;
    if k == 0 {
        return Err(Error::invalid("k", "must be at least 1"));
    }
    if resp.len() != n * k || resp.iter().any(|r| !(r.is_finite() && *r >= 0.0)) {
        return Err(Error::invalid(
            "resp",
            format!("expected {n} x {k} finite responsibilities >= 0"),
        ));
    }
    if !(reg_covar.is_finite() && reg_covar >= 0.0) {
        return Err(Error::invalid(
            "reg_covar",
            format!("must be finite and >= 0, got {reg_covar}"),
        ));
    }
    let rows = || x.chunks_exact(d).zip(resp.chunks_exact(k));

    // Nₖ and μₖ.
    let mut nk = vec![10.0 * f64::EPSILON; k];
    let mut means = vec![0.0; k * d];
    for (row, r) in rows() {
        for c in 0..k {
            nk[c] += r[c];
            for (m, v) in means[c * d..(c + 1) * d].iter_mut().zip(row) {
                *m += r[c] * v;
            }
        }
    }
    for c in 0..k {
        for m in &mut means[c * d..(c + 1) * d] {
            *m /= nk[c];
        }
    }
    let total: f64 = nk.iter().sum();
    let weights: Vec<f64> = nk.iter().map(|v| v / total).collect();

    // Centred (weighted) scatter of component c: full D x D or its diagonal.
    let scatter_full = |c: usize| {
        let mu = &means[c * d..(c + 1) * d];
        let mut s = vec![0.0; d * d];
        let mut diff = vec![0.0; d];
        for (row, r) in rows() {
            for ((t, xv), m) in diff.iter_mut().zip(row).zip(mu) {
                *t = xv - m;
            }
            for i in 0..d {
                for j in 0..d {
                    s[i * d + j] += r[c] * diff[i] * diff[j];
                }
            }
        }
        s
    };
    let scatter_diag = |c: usize| {
        let mu = &means[c * d..(c + 1) * d];
        let mut s = vec![0.0; d];
        for (row, r) in rows() {
            for ((sv, xv), m) in s.iter_mut().zip(row).zip(mu) {
                *sv += r[c] * (xv - m) * (xv - m);
            }
        }
        s
    };

    let covariances = match covariance_type {
        CovarianceType::Full => {
            let mut cov = Vec::with_capacity(k * d * d);
            for (c, &nkc) in nk.iter().enumerate() {
                let mut s = scatter_full(c);
                for v in &mut s {
                    *v /= nkc;
                }
                for j in 0..d {
                    s[j * d + j] += reg_covar;
                }
                cov.extend(s);
            }
            cov
        }
        CovarianceType::Tied => {
            let mut s = vec![0.0; d * d];
            for c in 0..k {
                for (a, b) in s.iter_mut().zip(scatter_full(c)) {
                    *a += b;
                }
            }
            for v in &mut s {
                *v /= total;
            }
            for j in 0..d {
                s[j * d + j] += reg_covar;
            }
            s
        }
        CovarianceType::Diag | CovarianceType::Spherical => {
            let mut cov = Vec::with_capacity(k * d);
            for (c, &nkc) in nk.iter().enumerate() {
                let s = scatter_diag(c);
                let var = s.iter().map(|v| v / nkc + reg_covar);
                if covariance_type == CovarianceType::Diag {
                    cov.extend(var);
                } else {
                    cov.push(var.sum::<f64>() / d as f64);
                }
            }
            cov
        }
    };
    Ok((weights, means, covariances))
}
