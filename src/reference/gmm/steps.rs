//! The building blocks of the oracle's EM: precision Cholesky factors (and covariances of
//! given precisions), log-densities through them, the log-sum-exp E-step and the centred
//! M-step (formulas in the parent module).

use super::{cov_len, model_k, weighted_log_prob, ReferenceGmm};
use crate::error::{Error, Result};
use crate::gmm::{CovarianceType, InitialParameters};
use crate::reference::linalg;

/// Computes the Cholesky factors of the precisions from covariances (layouts in the module
/// docs): scikit-learn's `_compute_precision_cholesky`.
///
/// `k` is the number of components and `d` the number of features; `covariances` must hold
/// K·D² (Full), D² (Tied), K·D (Diag) or K (Spherical) finite values.
///
/// Errors: [`Error::InvalidParameter`] named `reg_covar` when a covariance is not positive
/// definite (a failed Cholesky pivot or a variance ≤ 0), naming the component (the tied
/// covariance for `Tied`); [`Error::InvalidParameter`] named `covariances` for a wrong
/// length or a non-finite value, `n_features` for d = 0. The result is never NaN.
pub fn compute_precision_cholesky(
    covariances: &[f64],
    covariance_type: CovarianceType,
    k: usize,
    d: usize,
) -> Result<Vec<f64>> {
    precision_cholesky_impl(covariances, covariance_type, k, d, None)
}

/// [`compute_precision_cholesky`], quoting the `reg_covar` in use in the error message.
pub(crate) fn precision_cholesky_impl(
    covariances: &[f64],
    covariance_type: CovarianceType,
    k: usize,
    d: usize,
    reg_covar: Option<f64>,
) -> Result<Vec<f64>> {
    if d == 0 {
        return Err(Error::invalid("n_features", "must be at least 1"));
    }
    let expected = cov_len(covariance_type, k, d);
    if covariances.len() != expected {
        return Err(Error::invalid(
            "covariances",
            format!(
                "expected {expected} values for {covariance_type:?} covariances of {k} \
                 components and {d} features, got {}",
                covariances.len()
            ),
        ));
    }
    if let Some(i) = covariances.iter().position(|v| !v.is_finite()) {
        return Err(Error::invalid(
            "covariances",
            format!("non-finite value {} at index {i}", covariances[i]),
        ));
    }
    let not_pd = |which: String| {
        let now = reg_covar.map_or_else(String::new, |r| format!(" (now {r:e})"));
        Error::invalid(
            "reg_covar",
            format!("{which} is not positive definite; increase reg_covar{now}"),
        )
    };
    let component = |c: usize| match covariance_type {
        CovarianceType::Tied => "tied covariance (shared by all components)".to_string(),
        _ => format!("covariance of component {c}"),
    };

    let mut out = Vec::with_capacity(expected);
    match covariance_type {
        CovarianceType::Full | CovarianceType::Tied => {
            for (c, block) in covariances.chunks_exact(d * d).enumerate() {
                let l = linalg::cholesky_lower(block, d).ok_or_else(|| not_pd(component(c)))?;
                let u = linalg::transpose(&linalg::lower_inverse(&l, d), d);
                // A pivot so small that its reciprocal overflows is as good as zero.
                if u.iter().any(|v| !v.is_finite()) {
                    return Err(not_pd(component(c)));
                }
                out.extend(u);
            }
        }
        CovarianceType::Diag | CovarianceType::Spherical => {
            let per = if covariance_type == CovarianceType::Diag {
                d
            } else {
                1
            };
            for (i, &v) in covariances.iter().enumerate() {
                let p = 1.0 / v.sqrt();
                if !(v > 0.0 && p.is_finite()) {
                    return Err(not_pd(component(i / per)));
                }
                out.push(p);
            }
        }
    }
    Ok(out)
}

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
        || precisions_cholesky.len() != cov_len(covariance_type, k, d)
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

/// The covariances of given precisions (inverted per component), in the same layout.
pub fn covariances_from_precisions(
    p: &InitialParameters,
    covariance_type: CovarianceType,
    d: usize,
) -> Result<Vec<f64>> {
    let bad = |c: usize| {
        Error::invalid(
            "init",
            match covariance_type {
                CovarianceType::Tied => "the given tied precision is not positive definite".into(),
                _ => format!("the given precision of component {c} is not positive definite"),
            },
        )
    };
    match covariance_type {
        CovarianceType::Full | CovarianceType::Tied => {
            let mut out = Vec::with_capacity(p.precisions.len());
            for (c, block) in p.precisions.chunks_exact(d * d).enumerate() {
                // P = C Cᵀ, so Σ = P⁻¹ = C⁻ᵀ C⁻¹ = V Vᵀ with V = (C⁻¹)ᵀ.
                let chol = linalg::cholesky_lower(block, d).ok_or_else(|| bad(c))?;
                let v = linalg::transpose(&linalg::lower_inverse(&chol, d), d);
                for i in 0..d {
                    for j in 0..d {
                        out.push((0..d).map(|t| v[i * d + t] * v[j * d + t]).sum());
                    }
                }
            }
            if out.iter().any(|v: &f64| !v.is_finite()) {
                return Err(bad(0));
            }
            Ok(out)
        }
        CovarianceType::Diag | CovarianceType::Spherical => {
            let per = if covariance_type == CovarianceType::Diag {
                d
            } else {
                1
            };
            p.precisions
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    let s = 1.0 / v;
                    if v > 0.0 && s.is_finite() {
                        Ok(s)
                    } else {
                        Err(bad(i / per))
                    }
                })
                .collect()
        }
    }
}
