//! Gaussian mixtures fitted by expectation–maximisation in plain f64: the oracle the GPU
//! implementation is checked against.
//!
//! The model is a density over x ∈ ℝ^D with K components,
//!
//! ```text
//! p(x) = Σₖ πₖ N(x | μₖ, Σₖ),     πₖ ≥ 0,  Σₖ πₖ = 1
//! ```
//!
//! and everything follows scikit-learn's `GaussianMixture`
//! (`sklearn/mixture/_gaussian_mixture.py`): the same formulas, the same precision-Cholesky
//! parametrisation, the same convergence rule and the same reported quantities.
//!
//! **Precision Cholesky factors.** Each component is evaluated through a factor Uₖ of its
//! precision, Σₖ⁻¹ = Uₖ Uₖᵀ, never through Σₖ⁻¹ itself:
//!
//! * `Full`: with Σₖ = Lₖ Lₖᵀ (lower Cholesky factor), Uₖ = (Lₖ⁻¹)ᵀ, which is **upper**
//!   triangular. `precisions_cholesky` holds the K blocks Uₖ, each D x D row-major
//!   (element (i, j) at `k·D² + i·D + j`), i.e. exactly scikit-learn's C-ordered
//!   `precisions_cholesky_` array;
//! * `Tied`: one such D x D block U shared by all components;
//! * `Diag`: K x D values 1/σₖⱼ (σₖⱼ² the variances);
//! * `Spherical`: K values 1/σₖ.
//!
//! The covariances use the same layouts (Full K x D x D, Tied D x D, Diag K x D,
//! Spherical K).
//!
//! **Log-density.** With y = (x − μₖ)ᵀ Uₖ (a row vector),
//!
//! ```text
//! log N(x | μₖ, Σₖ) = −½ D log 2π + log det Uₖ − ½ ‖y‖²,    log det Uₖ = Σⱼ log (Uₖ)ⱼⱼ
//! ```
//!
//! (for `Spherical`, log det = D log(1/σₖ)). The difference x − μₖ is formed first, rather
//! than scikit-learn's expanded x U − μ U for `Full` or x²·p − 2 x·μ·p + μ²·p for `Diag`,
//! which is the same quantity with less cancellation.
//!
//! **E-step.** The weighted log-probabilities aᵢₖ = log πₖ + log N(xᵢ | μₖ, Σₖ) are
//! normalised by log-sum-exp shifted by the row maximum,
//!
//! ```text
//! log p(xᵢ) = mᵢ + log Σₖ exp(aᵢₖ − mᵢ),   mᵢ = maxₖ aᵢₖ
//! log rᵢₖ   = aᵢₖ − log p(xᵢ)
//! ```
//!
//! so that a point far from every mean (all aᵢₖ ≈ −10¹²) still gets finite values and
//! responsibilities that sum to one.
//!
//! **M-step.** With the responsibilities rᵢₖ = exp(log rᵢₖ):
//!
//! ```text
//! Nₖ = Σᵢ rᵢₖ + 10 ε            (ε = f64::EPSILON, as scikit-learn adds)
//! πₖ = Nₖ / Σⱼ Nⱼ               (= Nₖ / N up to the 10 ε terms)
//! μₖ = Σᵢ rᵢₖ xᵢ / Nₖ
//! Full:       Σₖ = Σᵢ rᵢₖ (xᵢ − μₖ)(xᵢ − μₖ)ᵀ / Nₖ + reg·I
//! Tied:       Σ  = Σₖ Σᵢ rᵢₖ (xᵢ − μₖ)(xᵢ − μₖ)ᵀ / Σₖ Nₖ + reg·I
//! Diag:       σₖⱼ² = Σᵢ rᵢₖ (xᵢⱼ − μₖⱼ)² / Nₖ + reg
//! Spherical:  σₖ² = (1/D) Σⱼ σₖⱼ²          (the mean of the Diag variances, reg included)
//! ```
//!
//! The second moments are always centred (two passes: means first), never
//! E[x xᵀ] − μ μᵀ, which cancels catastrophically when the means are large against the
//! spread. A component that loses all its weight (Σᵢ rᵢₖ = 0) keeps Nₖ = 10 ε, exactly as in
//! scikit-learn: its mean is a finite (shrunk) weighted mean, its covariance reg·I, its
//! weight about 10 ε / N > 0 — nothing becomes NaN or −∞. With `reg_covar = 0` such a
//! covariance is not positive definite and the fit stops with an error naming the component.
//!
//! **Lower bound and convergence.** The bound reported for an iteration is the mean
//! per-sample log-likelihood (1/N) Σᵢ log p(xᵢ) computed in that iteration's E-step, i.e. for
//! the parameters *before* its M-step (scikit-learn's `lower_bound_`). EM stops when the bound
//! changed by less than `tol` in absolute value (`converged = true`), or after `max_iter`
//! iterations. Reaching `max_iter` is **not** an error for a mixture (unlike the reference
//! PCA's power iteration): as scikit-learn, which only warns, the fit is returned with
//! `converged = false`. With `n_init` restarts the one with the highest final bound wins (the
//! earliest on ties); all restarts draw from one ChaCha8 generator seeded with `seed`. After the
//! loop a final E-step with the returned parameters gives the labels, so that they agree with
//! [`predict`] (scikit-learn's `fit_predict` does the same).
//!
//! **Initialisation** (responsibilities, then one M-step):
//!
//! * `KMeans`: one-hot responsibilities from the labels of [`crate::reference::kmeans::fit`]
//!   with `KMeans::new(k).n_init(1).seed(s)`, s a `u64` drawn from the generator;
//! * `KMeansPlusPlus`: one-hot responsibilities of the nearest greedy k-means++ seed
//!   ([`crate::reference::kmeans::kmeans_plus_plus`]). (scikit-learn's "k-means++" instead
//!   gives each component only its own seed point; the nearest-seed rule used here is the one
//!   documented for [`GmmInit::KMeansPlusPlus`].)
//! * `Random`: uniform [0, 1) responsibilities normalised per row;
//! * `Given`: the weights, means and precisions as given (covariances by inverting the
//!   precisions, precision factors from those covariances); nothing is random, so `n_init`
//!   is ignored and EM starts from these parameters with an E-step.
//!
//! **Model selection.** With p free parameters (scikit-learn's `_n_parameters`: the
//! covariance values per type, Full K·D(D+1)/2, Tied D(D+1)/2, Diag K·D, Spherical K, plus
//! K·D means and K − 1 weights) and log L = Σᵢ log p(xᵢ):
//!
//! ```text
//! BIC = −2 log L + p log N,     AIC = −2 log L + 2 p
//! ```
//!
//! **Sampling** draws each sample's component from the categorical distribution on π (so the
//! counts are multinomial), then x = μₖ + Lₖ z with Lₖ the lower Cholesky factor of Σₖ (σ
//! times z for Diag/Spherical) and z standard normal by Box–Muller. As scikit-learn, the
//! samples come grouped by component (component 0 first).
//!
//! Everything is written for clarity, not speed.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::gmm::{CovarianceType, GaussianMixture, GmmInit, InitialParameters};
use crate::kmeans::KMeans;
use crate::linalg;

/// The outcome of one reference Gaussian-mixture fit.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceGmm {
    /// Mixing weights πₖ (K values summing to 1).
    pub weights: Vec<f64>,
    /// Means μₖ, K x D row-major.
    pub means: Vec<f64>,
    /// Covariances, by type: Full K x D x D, Tied D x D, Diag K x D (variances),
    /// Spherical K (variances); `reg_covar` included.
    pub covariances: Vec<f64>,
    /// Cholesky factors of the precisions in the same layout (see the module docs): Full
    /// and Tied hold upper-triangular Uₖ = (Lₖ⁻¹)ᵀ with Σₖ⁻¹ = Uₖ Uₖᵀ, Diag and Spherical
    /// the reciprocal standard deviations.
    pub precisions_cholesky: Vec<f64>,
    /// Covariance shape.
    pub covariance_type: CovarianceType,
    /// Whether the change of the lower bound fell below `tol` before `max_iter` ran out.
    pub converged: bool,
    /// EM iterations run by the returned initialisation.
    pub n_iter: usize,
    /// Mean per-sample log-likelihood from the last E-step (of the parameters before the last
    /// M-step, scikit-learn's `lower_bound_`).
    pub lower_bound: f64,
    /// The lower bound of every iteration of the returned initialisation.
    pub lower_bound_history: Vec<f64>,
    /// Labels of the training points from a final E-step with the returned parameters (the
    /// component of largest responsibility, lowest index on ties), equal to [`predict`] on
    /// the training data.
    pub labels: Vec<u32>,
}

/// The number of covariance (and precision-factor) values for a type.
fn cov_len(covariance_type: CovarianceType, k: usize, d: usize) -> usize {
    match covariance_type {
        CovarianceType::Full => k.saturating_mul(d).saturating_mul(d),
        CovarianceType::Tied => d.saturating_mul(d),
        CovarianceType::Diag => k.saturating_mul(d),
        CovarianceType::Spherical => k,
    }
}

/// (L⁻¹)ᵀ for a lower-triangular, non-singular d x d row-major L (upper triangular).
fn inverse_lower_transposed(l: &[f64], d: usize) -> Vec<f64> {
    let mut u = vec![0.0; d * d];
    let mut y = vec![0.0; d];
    for col in 0..d {
        // Column `col` of L⁻¹ by forward substitution on L y = e_col; y_i = 0 for i < col.
        for i in col..d {
            let mut s = if i == col { 1.0 } else { 0.0 };
            for j in col..i {
                s -= l[i * d + j] * y[j];
            }
            y[i] = s / l[i * d + i];
        }
        // (L⁻¹)[i][col] = y_i, so the transpose holds it at [col][i].
        for i in col..d {
            u[col * d + i] = y[i];
        }
    }
    u
}

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
                let l = linalg::cholesky_lower(block, d).map_err(|_| not_pd(component(c)))?;
                let u = inverse_lower_transposed(&l, d);
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

/// The number of components of a model whose shapes fit `d` features, else `None`.
fn model_k(model: &ReferenceGmm, d: usize) -> Option<usize> {
    let k = model.weights.len();
    (d > 0
        && k > 0
        && model.means.len() == k.saturating_mul(d)
        && model.precisions_cholesky.len() == cov_len(model.covariance_type, k, d))
    .then_some(k)
}

/// log πₖ + log N(xᵢ | μₖ, Σₖ), N x K; empty when the shapes do not fit.
fn weighted_log_prob(x: &[f64], d: usize, model: &ReferenceGmm) -> Vec<f64> {
    let Some(k) = model_k(model, d) else {
        return Vec::new();
    };
    let mut w = estimate_log_gaussian_prob(
        x,
        d,
        &model.means,
        &model.precisions_cholesky,
        model.covariance_type,
        k,
    );
    for row in w.chunks_exact_mut(k) {
        for (v, pi) in row.iter_mut().zip(&model.weights) {
            *v += pi.ln();
        }
    }
    w
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
    crate::gmm::check_responsibilities(resp, n, k)?;
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

/// An M-step turned into a model (precision factors included); the fit fields are left at
/// their "not fitted" values.
fn model_from_resp(
    x: &[f64],
    d: usize,
    resp: &[f64],
    params: &GaussianMixture,
) -> Result<ReferenceGmm> {
    let (weights, means, covariances) = mstep(
        x,
        d,
        resp,
        params.k,
        params.covariance_type,
        params.reg_covar,
    )?;
    let precisions_cholesky = precision_cholesky_impl(
        &covariances,
        params.covariance_type,
        params.k,
        d,
        Some(params.reg_covar),
    )?;
    Ok(ReferenceGmm {
        weights,
        means,
        covariances,
        precisions_cholesky,
        covariance_type: params.covariance_type,
        converged: false,
        n_iter: 0,
        lower_bound: f64::NEG_INFINITY,
        lower_bound_history: Vec::new(),
        labels: Vec::new(),
    })
}

/// One-hot N x K responsibilities from labels.
fn one_hot(labels: &[u32], k: usize) -> Vec<f64> {
    let mut resp = vec![0.0; labels.len() * k];
    for (i, &l) in labels.iter().enumerate() {
        resp[i * k + l as usize] = 1.0;
    }
    resp
}

/// The covariances of given precisions (inverted per component), in the same layout.
pub(crate) fn covariances_from_precisions(
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
                let chol = linalg::cholesky_lower(block, d).map_err(|_| bad(c))?;
                let v = inverse_lower_transposed(&chol, d);
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

/// The starting model of one initialisation.
fn initialize(
    x: &[f64],
    d: usize,
    params: &GaussianMixture,
    rng: &mut ChaCha8Rng,
) -> Result<ReferenceGmm> {
    let k = params.k;
    let resp = match &params.init {
        GmmInit::KMeans => {
            let km = crate::reference::kmeans::fit(
                x,
                d,
                &KMeans::new(k).n_init(1).seed(rng.random::<u64>()),
            )?;
            one_hot(&km.labels, k)
        }
        GmmInit::KMeansPlusPlus => {
            let trials = KMeans::new(k).n_local_trials();
            let seeds = crate::reference::kmeans::kmeans_plus_plus(x, d, k, trials, rng);
            let (labels, _) = crate::reference::kmeans::assign(x, d, &seeds);
            one_hot(&labels, k)
        }
        GmmInit::Random => {
            let mut resp: Vec<f64> = (0..x.len() / d * k).map(|_| rng.random()).collect();
            for row in resp.chunks_exact_mut(k) {
                let s: f64 = row.iter().sum();
                if s > 0.0 {
                    row.iter_mut().for_each(|v| *v /= s);
                } else {
                    row.fill(1.0 / k as f64);
                }
            }
            resp
        }
        GmmInit::Given(p) => {
            let covariances = covariances_from_precisions(p, params.covariance_type, d)?;
            let precisions_cholesky = precision_cholesky_impl(
                &covariances,
                params.covariance_type,
                k,
                d,
                Some(params.reg_covar),
            )?;
            return Ok(ReferenceGmm {
                weights: p.weights.clone(),
                means: p.means.clone(),
                covariances,
                precisions_cholesky,
                covariance_type: params.covariance_type,
                converged: false,
                n_iter: 0,
                lower_bound: f64::NEG_INFINITY,
                lower_bound_history: Vec::new(),
                labels: Vec::new(),
            });
        }
    };
    model_from_resp(x, d, &resp, params)
}

/// Fits a Gaussian mixture to row-major `x` (`d` values per row) by EM, as scikit-learn's
/// `GaussianMixture.fit` (module docs: initialisation, convergence, restarts).
///
/// Not converging within `max_iter` is not an error: the model comes back with
/// `converged = false`.
///
/// Errors: [`Error::EmptyData`], [`Error::Shape`], [`Error::NonFinite`] for bad data; what
/// [`GaussianMixture::validate`] reports for the parameters; [`Error::InvalidParameter`]
/// named `reg_covar` when a covariance stops being positive definite (naming the
/// component), `init` for given precisions that are not positive definite, and `x` when the
/// log-likelihood overflows (data of extreme scale).
pub fn fit(x: &[f64], d: usize, params: &GaussianMixture) -> Result<ReferenceGmm> {
    crate::data::validate_row_major(x, d)?;
    let n = x.len() / d;
    params.validate(n, d)?;

    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let runs = match params.init {
        GmmInit::Given(_) => 1,
        _ => params.n_init,
    };

    let mut best: Option<ReferenceGmm> = None;
    for _ in 0..runs {
        let mut model = initialize(x, d, params, &mut rng)?;
        let mut lower_bound = f64::NEG_INFINITY;
        let mut history = Vec::new();
        let mut converged = false;
        let mut n_iter = 0;
        for iter in 1..=params.max_iter {
            let prev = lower_bound;
            let (log_resp, log_norm) = estep(x, d, &model);
            lower_bound = log_norm.iter().sum::<f64>() / n as f64;
            if !lower_bound.is_finite() {
                return Err(Error::invalid(
                    "x",
                    "the log-likelihood is not finite (data of extreme scale?); rescale the data",
                ));
            }
            let resp: Vec<f64> = log_resp.iter().map(|v| v.exp()).collect();
            model = model_from_resp(x, d, &resp, params)?;
            history.push(lower_bound);
            n_iter = iter;
            if (lower_bound - prev).abs() < params.tol {
                converged = true;
                break;
            }
        }
        model.converged = converged;
        model.n_iter = n_iter;
        model.lower_bound = lower_bound;
        model.lower_bound_history = history;
        // Strictly higher, so that among equal runs the earliest wins.
        if best.as_ref().is_none_or(|b| lower_bound > b.lower_bound) {
            best = Some(model);
        }
    }
    let mut best = best.ok_or_else(|| Error::invalid("n_init", "must be at least 1"))?;
    // The final E-step: labels that agree with the returned parameters.
    best.labels = predict(&best, x, d);
    Ok(best)
}

/// The most probable component of each row (argmax of log πₖ + log N(x | μₖ, Σₖ), lowest
/// index on ties). Empty when `x` or `d` does not fit the model.
pub fn predict(model: &ReferenceGmm, x: &[f64], d: usize) -> Vec<u32> {
    let Some(k) = model_k(model, d) else {
        return Vec::new();
    };
    weighted_log_prob(x, d, model)
        .chunks_exact(k)
        .map(|row| {
            let mut best = 0;
            for (c, v) in row.iter().enumerate() {
                if *v > row[best] {
                    best = c;
                }
            }
            best as u32
        })
        .collect()
}

/// Responsibilities rᵢₖ = p(k | xᵢ), N x K (rows sum to 1). Empty when `x` or `d` does not
/// fit the model.
pub fn predict_proba(model: &ReferenceGmm, x: &[f64], d: usize) -> Vec<f64> {
    estep(x, d, model).0.iter().map(|v| v.exp()).collect()
}

/// log p(xᵢ) per row. Empty when `x` or `d` does not fit the model.
pub fn score_samples(model: &ReferenceGmm, x: &[f64], d: usize) -> Vec<f64> {
    estep(x, d, model).1
}

/// The mean of [`score_samples`]: the mean per-sample log-likelihood. NaN when `x` has no
/// rows or does not fit the model.
pub fn score(model: &ReferenceGmm, x: &[f64], d: usize) -> f64 {
    let s = score_samples(model, x, d);
    if s.is_empty() {
        return f64::NAN;
    }
    s.iter().sum::<f64>() / s.len() as f64
}

/// The number of free parameters (scikit-learn's `_n_parameters`): covariance values (Full
/// K·D(D+1)/2, Tied D(D+1)/2, Diag K·D, Spherical K) + K·D means + K − 1 weights. K is the
/// number of weights of the model; 0 for a model without components.
pub fn n_parameters(model: &ReferenceGmm, d: usize) -> usize {
    let k = model.weights.len();
    if k == 0 {
        return 0;
    }
    let tri = d * (d + 1) / 2;
    let cov = match model.covariance_type {
        CovarianceType::Full => k * tri,
        CovarianceType::Tied => tri,
        CovarianceType::Diag => k * d,
        CovarianceType::Spherical => k,
    };
    cov + k * d + k - 1
}

/// The log-likelihood Σᵢ log p(xᵢ) and N, or NaN and 0 for data that does not fit.
fn total_log_likelihood(model: &ReferenceGmm, x: &[f64], d: usize) -> (f64, usize) {
    let s = score_samples(model, x, d);
    if s.is_empty() {
        return (f64::NAN, 0);
    }
    (s.iter().sum(), s.len())
}

/// Bayesian information criterion −2 log L + p log N on `x` (lower is better). NaN when `x`
/// has no rows or does not fit the model.
pub fn bic(model: &ReferenceGmm, x: &[f64], d: usize) -> f64 {
    let (ll, n) = total_log_likelihood(model, x, d);
    -2.0 * ll + n_parameters(model, d) as f64 * (n as f64).ln()
}

/// Akaike information criterion −2 log L + 2p on `x` (lower is better). NaN when `x` has no
/// rows or does not fit the model.
pub fn aic(model: &ReferenceGmm, x: &[f64], d: usize) -> f64 {
    let (ll, _) = total_log_likelihood(model, x, d);
    -2.0 * ll + 2.0 * n_parameters(model, d) as f64
}

/// Draws `n` samples from the mixture with a ChaCha8 generator seeded with `seed`.
///
/// Returns the samples (n x D row-major, D = `means.len() / weights.len()`) and their
/// components, grouped by component in increasing order (as scikit-learn). Components are
/// drawn from the categorical distribution on the weights, points as μₖ + Lₖ z (module docs).
///
/// Errors: [`Error::InvalidParameter`] for n = 0 (`n_samples`), for a model whose shapes
/// do not fit together or whose weights are not finite, non-negative with a positive sum
/// (`model`), and for a covariance that is not positive definite (`reg_covar`).
pub fn sample(model: &ReferenceGmm, n: usize, seed: u64) -> Result<(Vec<f64>, Vec<u32>)> {
    if n == 0 {
        return Err(Error::invalid("n_samples", "must be at least 1"));
    }
    let k = model.weights.len();
    let d = if k > 0 && model.means.len().is_multiple_of(k) {
        model.means.len() / k
    } else {
        0
    };
    let t = model.covariance_type;
    if d == 0 || model.covariances.len() != cov_len(t, k, d) {
        return Err(Error::invalid(
            "model",
            format!(
                "{k} weights, {} mean values and {} covariance values do not fit together",
                model.means.len(),
                model.covariances.len()
            ),
        ));
    }
    let wsum: f64 = model.weights.iter().sum();
    if model.weights.iter().any(|w| !(w.is_finite() && *w >= 0.0))
        || !(wsum > 0.0 && wsum.is_finite())
    {
        return Err(Error::invalid(
            "model",
            "weights must be finite, non-negative and have a positive sum",
        ));
    }
    // Checks positive definiteness (and finiteness) with the same error as the fit.
    precision_cholesky_impl(&model.covariances, t, k, d, None)?;

    // The per-component sampling factor: lower Cholesky factor (Full, Tied) or standard
    // deviations (Diag: D values, Spherical: 1).
    let factors: Vec<Vec<f64>> = (0..k)
        .map(|c| -> Result<Vec<f64>> {
            Ok(match t {
                CovarianceType::Full => {
                    linalg::cholesky_lower(&model.covariances[c * d * d..(c + 1) * d * d], d)?
                }
                CovarianceType::Tied => linalg::cholesky_lower(&model.covariances, d)?,
                CovarianceType::Diag => model.covariances[c * d..(c + 1) * d]
                    .iter()
                    .map(|v| v.sqrt())
                    .collect(),
                CovarianceType::Spherical => vec![model.covariances[c].sqrt()],
            })
        })
        .collect::<Result<_>>()?;

    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Categorical draws of the components: the counts are multinomial.
    let mut counts = vec![0usize; k];
    let last = model
        .weights
        .iter()
        .rposition(|w| *w > 0.0)
        .unwrap_or(k - 1);
    for _ in 0..n {
        let u = rng.random::<f64>() * wsum;
        let mut acc = 0.0;
        let mut chosen = last;
        for (c, w) in model.weights.iter().enumerate() {
            acc += w;
            if u < acc && *w > 0.0 {
                chosen = c;
                break;
            }
        }
        counts[chosen] += 1;
    }

    let mut normals = BoxMuller::default();
    let mut xs = Vec::with_capacity(n * d);
    let mut labels = Vec::with_capacity(n);
    let mut z = vec![0.0; d];
    for (c, &count) in counts.iter().enumerate() {
        let mu = &model.means[c * d..(c + 1) * d];
        let f = &factors[c];
        for _ in 0..count {
            for v in z.iter_mut() {
                *v = normals.next(&mut rng);
            }
            for i in 0..d {
                let offset = match t {
                    CovarianceType::Full | CovarianceType::Tied => {
                        (0..=i).map(|j| f[i * d + j] * z[j]).sum()
                    }
                    CovarianceType::Diag => f[i] * z[i],
                    CovarianceType::Spherical => f[0] * z[i],
                };
                xs.push(mu[i] + offset);
            }
            labels.push(c as u32);
        }
    }
    Ok((xs, labels))
}

/// Standard normal draws by the Box–Muller transform, two per pair of uniforms.
#[derive(Default)]
struct BoxMuller {
    spare: Option<f64>,
}

impl BoxMuller {
    fn next(&mut self, rng: &mut impl Rng) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        // u1 in (0, 1] so that the logarithm is finite.
        let u1 = 1.0 - rng.random::<f64>();
        let u2 = rng.random::<f64>();
        let r = (-2.0 * u1.ln()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u2;
        self.spare = Some(r * theta.sin());
        r * theta.cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model from weights, means and covariances (precision factors computed).
    fn model(
        weights: &[f64],
        means: &[f64],
        covariances: &[f64],
        t: CovarianceType,
    ) -> ReferenceGmm {
        let k = weights.len();
        let d = means.len() / k;
        ReferenceGmm {
            weights: weights.to_vec(),
            means: means.to_vec(),
            covariances: covariances.to_vec(),
            precisions_cholesky: compute_precision_cholesky(covariances, t, k, d).unwrap(),
            covariance_type: t,
            converged: true,
            n_iter: 0,
            lower_bound: 0.0,
            lower_bound_history: Vec::new(),
            labels: Vec::new(),
        }
    }

    const MEANS: [f64; 6] = [0.0, 0.0, 8.0, 1.0, 2.0, 9.0];
    const WEIGHTS: [f64; 3] = [0.5, 0.3, 0.2];

    /// A 3-component 2-D truth whose covariances have the shape of `t`.
    fn truth(t: CovarianceType) -> ReferenceGmm {
        let cov: Vec<f64> = match t {
            CovarianceType::Full => vec![
                1.0, 0.6, 0.6, 2.0, //
                0.5, -0.2, -0.2, 0.4, //
                1.5, 0.0, 0.0, 0.7,
            ],
            CovarianceType::Tied => vec![1.0, 0.4, 0.4, 0.8],
            CovarianceType::Diag => vec![1.0, 2.0, 0.5, 0.3, 1.5, 0.7],
            CovarianceType::Spherical => vec![1.0, 0.5, 2.0],
        };
        model(&WEIGHTS, &MEANS, &cov, t)
    }

    /// Variance of feature j of component c.
    fn var(m: &ReferenceGmm, c: usize, j: usize, d: usize) -> f64 {
        match m.covariance_type {
            CovarianceType::Full => m.covariances[c * d * d + j * d + j],
            CovarianceType::Tied => m.covariances[j * d + j],
            CovarianceType::Diag => m.covariances[c * d + j],
            CovarianceType::Spherical => m.covariances[c],
        }
    }

    const ALL: [CovarianceType; 4] = [
        CovarianceType::Full,
        CovarianceType::Tied,
        CovarianceType::Diag,
        CovarianceType::Spherical,
    ];

    #[test]
    fn precision_cholesky_is_an_upper_factor_of_the_precision() {
        let cov = [4.0, 2.0, 2.0, 3.0];
        let u = compute_precision_cholesky(&cov, CovarianceType::Full, 1, 2).unwrap();
        assert_eq!(u[2], 0.0, "upper triangular: {u:?}");
        // U Uᵀ Σ = I.
        let p = [
            u[0] * u[0] + u[1] * u[1],
            u[1] * u[3],
            u[3] * u[1],
            u[3] * u[3],
        ];
        let id = [
            p[0] * cov[0] + p[1] * cov[2],
            p[0] * cov[1] + p[1] * cov[3],
            p[2] * cov[0] + p[3] * cov[2],
            p[2] * cov[1] + p[3] * cov[3],
        ];
        for (a, b) in id.iter().zip([1.0, 0.0, 0.0, 1.0]) {
            assert!((a - b).abs() < 1e-12, "{id:?}");
        }
        let s = compute_precision_cholesky(&[4.0, 0.25], CovarianceType::Spherical, 2, 3).unwrap();
        assert_eq!(s, vec![0.5, 2.0]);
        // The log-density agrees with the textbook formula.
        let m = model(&[1.0], &[1.0, -1.0], &cov, CovarianceType::Full);
        let x = [2.0, 0.5];
        let lp = estimate_log_gaussian_prob(
            &x,
            2,
            &m.means,
            &m.precisions_cholesky,
            CovarianceType::Full,
            1,
        );
        let (dx, dy) = (1.0, 1.5);
        let det = 4.0 * 3.0 - 2.0 * 2.0;
        let quad = (3.0 * dx * dx - 4.0 * dx * dy + 4.0 * dy * dy) / det;
        let expect = -(2.0 * std::f64::consts::PI).ln() - 0.5 * f64::ln(det) - 0.5 * quad;
        assert!((lp[0] - expect).abs() < 1e-12, "{} vs {expect}", lp[0]);
    }

    #[test]
    fn estep_responsibilities_sum_to_one() {
        for (s, t) in ALL.into_iter().enumerate() {
            let m = truth(t);
            let (x, _) = sample(&m, 500, 10 + s as u64).unwrap();
            let (log_resp, log_norm) = estep(&x, 2, &m);
            assert_eq!((log_resp.len(), log_norm.len()), (1500, 500));
            for row in log_resp.chunks_exact(3) {
                let s: f64 = row.iter().map(|v| v.exp()).sum();
                assert!((s - 1.0).abs() < 1e-12, "{t:?}: {s}");
            }
            let p = predict_proba(&m, &x, 2);
            assert!(p.iter().all(|v| (0.0..=1.0).contains(v)));
        }
    }

    #[test]
    fn log_likelihood_never_decreases() {
        for (s, t) in ALL.into_iter().enumerate() {
            let (x, _) = sample(&truth(t), 600, 20 + s as u64).unwrap();
            for init in [GmmInit::Random, GmmInit::KMeansPlusPlus] {
                let params = GaussianMixture::new(3)
                    .covariance(t)
                    .init(init.clone())
                    .tol(0.0)
                    .max_iter(60)
                    .seed(s as u64);
                let fit = fit(&x, 2, &params).unwrap();
                assert!(!fit.converged && fit.n_iter == 60);
                for w in fit.lower_bound_history.windows(2) {
                    assert!(w[1] >= w[0] - 1e-9, "{t:?} {init:?}: {} -> {}", w[0], w[1]);
                }
            }
        }
    }

    #[test]
    fn recovers_a_known_mixture_for_each_covariance_type() {
        let n = 3000;
        for (s, t) in ALL.into_iter().enumerate() {
            let m = truth(t);
            let (x, _) = sample(&m, n, 100 + s as u64).unwrap();
            let fit = fit(&x, 2, &GaussianMixture::new(3).covariance(t).seed(1)).unwrap();
            assert!(fit.converged, "{t:?}");
            assert_eq!(fit.covariance_type, t);
            let sum: f64 = fit.weights.iter().sum();
            assert!((sum - 1.0).abs() < 1e-12);
            for c in 0..3 {
                let mu = &MEANS[c * 2..c * 2 + 2];
                // The fitted component nearest to this true mean.
                let f = (0..3)
                    .min_by(|&a, &b| {
                        let da = (fit.means[a * 2] - mu[0]).powi(2)
                            + (fit.means[a * 2 + 1] - mu[1]).powi(2);
                        let db = (fit.means[b * 2] - mu[0]).powi(2)
                            + (fit.means[b * 2 + 1] - mu[1]).powi(2);
                        da.total_cmp(&db)
                    })
                    .unwrap();
                assert!(
                    (fit.weights[f] - WEIGHTS[c]).abs() < 0.05,
                    "{t:?}: weight {} vs {}",
                    fit.weights[f],
                    WEIGHTS[c]
                );
                for (j, &muj) in mu.iter().enumerate() {
                    let se = (var(&m, c, j, 2) / (n as f64 * WEIGHTS[c])).sqrt();
                    let err = (fit.means[f * 2 + j] - muj).abs();
                    assert!(err < 4.0 * se, "{t:?}: mean {c},{j} off by {err} (se {se})");
                    let v = var(&fit, f, j, 2);
                    let vt = var(&m, c, j, 2);
                    assert!((v / vt - 1.0).abs() < 0.2, "{t:?}: variance {v} vs {vt}");
                }
            }
            // Labels from the final E-step agree with predict.
            assert_eq!(fit.labels, predict(&fit, &x, 2));
        }
    }

    #[cfg(feature = "datasets")]
    #[test]
    fn iris_full_lower_bound() {
        let (x, _) = crate::datasets::iris();
        let x: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let fit = fit(&x, 4, &GaussianMixture::new(3).seed(0)).unwrap();
        println!(
            "iris GMM(3, full): lower bound {:.6} per sample after {} iterations (converged: {})",
            fit.lower_bound, fit.n_iter, fit.converged
        );
        // scikit-learn's GaussianMixture(3, random_state=0) reaches about -1.2.
        assert!(
            (-1.3..-1.1).contains(&fit.lower_bound),
            "{}",
            fit.lower_bound
        );
        assert!(fit.converged);
        let s = score(&fit, &x, 4);
        assert!(s >= fit.lower_bound - 1e-3, "{s} vs {}", fit.lower_bound);
    }

    #[test]
    fn far_away_points_stay_finite() {
        for t in ALL {
            let m = truth(t);
            let x = [1e6, 1e6, -1e6, 1e6, 1e6, -2e6];
            let (log_resp, log_norm) = estep(&x, 2, &m);
            assert!(
                log_resp.iter().all(|v| v.is_finite()),
                "{t:?}: {log_resp:?}"
            );
            assert!(
                log_norm.iter().all(|v| v.is_finite()),
                "{t:?}: {log_norm:?}"
            );
            for row in predict_proba(&m, &x, 2).chunks_exact(3) {
                let s: f64 = row.iter().sum();
                assert!((s - 1.0).abs() < 1e-12, "{t:?}: {row:?}");
            }
            assert!(score(&m, &x, 2).is_finite());
            assert_eq!(predict(&m, &x, 2).len(), 3);
        }
    }

    #[test]
    fn sample_reproduces_mean_and_covariance() {
        let n = 200_000;
        let d = 2;
        for (s, t) in [CovarianceType::Full, CovarianceType::Diag]
            .into_iter()
            .enumerate()
        {
            let m = truth(t);
            let (x, labels) = sample(&m, n, 7 + s as u64).unwrap();
            assert_eq!((x.len(), labels.len()), (n * d, n));
            assert!(labels.windows(2).all(|w| w[0] <= w[1]), "grouped");
            // Mixture mean and covariance: μ = Σ πₖ μₖ, Σ = Σ πₖ (Σₖ + μₖ μₖᵀ) − μ μᵀ.
            let mut mu = [0.0; 2];
            let mut cov = [0.0; 4];
            for c in 0..3 {
                for i in 0..d {
                    mu[i] += WEIGHTS[c] * MEANS[c * d + i];
                    for j in 0..d {
                        let sc = match t {
                            CovarianceType::Full => m.covariances[c * 4 + i * 2 + j],
                            _ if i == j => m.covariances[c * 2 + i],
                            _ => 0.0,
                        };
                        cov[i * d + j] += WEIGHTS[c] * (sc + MEANS[c * d + i] * MEANS[c * d + j]);
                    }
                }
            }
            for i in 0..d {
                for j in 0..d {
                    cov[i * d + j] -= mu[i] * mu[j];
                }
            }
            let nf = n as f64;
            let mut smu = [0.0; 2];
            for row in x.chunks_exact(d) {
                smu[0] += row[0] / nf;
                smu[1] += row[1] / nf;
            }
            for i in 0..d {
                let se = (cov[i * d + i] / nf).sqrt();
                assert!((smu[i] - mu[i]).abs() < 3.0 * se, "{t:?}: mean {i}");
            }
            for i in 0..d {
                for j in 0..d {
                    let prods: Vec<f64> = x
                        .chunks_exact(d)
                        .map(|r| (r[i] - smu[i]) * (r[j] - smu[j]))
                        .collect();
                    let sc = prods.iter().sum::<f64>() / nf;
                    let v = prods.iter().map(|p| (p - sc).powi(2)).sum::<f64>() / nf;
                    let se = (v / nf).sqrt();
                    assert!(
                        (sc - cov[i * d + j]).abs() < 3.0 * se,
                        "{t:?}: cov {i},{j}: {sc} vs {} (se {se})",
                        cov[i * d + j]
                    );
                }
            }
            for (c, &w) in WEIGHTS.iter().enumerate() {
                let p = labels.iter().filter(|&&l| l == c as u32).count() as f64 / nf;
                let se = (w * (1.0 - w) / nf).sqrt();
                assert!((p - w).abs() < 3.0 * se, "{t:?}: weight {c}");
            }
        }
        assert!(sample(&truth(CovarianceType::Full), 0, 0).is_err());
    }

    #[test]
    fn bic_and_aic_by_hand() {
        // One 1-D component N(1.5, 1.25) on x = 0, 1, 2, 3: Σ (x − μ)² = 5, so
        // log L = −2 log(2π · 1.25) − 5 / 2.5 and p = 1 variance + 1 mean + 0 weights.
        let x = [0.0, 1.0, 2.0, 3.0];
        let m = model(&[1.0], &[1.5], &[1.25], CovarianceType::Full);
        let ll = -2.0 * (2.5 * std::f64::consts::PI).ln() - 2.0;
        assert_eq!(n_parameters(&m, 1), 2);
        assert!((bic(&m, &x, 1) - (-2.0 * ll + 2.0 * 4f64.ln())).abs() < 1e-12);
        assert!((aic(&m, &x, 1) - (-2.0 * ll + 4.0)).abs() < 1e-12);
        assert!((score(&m, &x, 1) - ll / 4.0).abs() < 1e-12);
        // Fitting finds that very model (reg_covar = 0).
        let f = fit(&x, 1, &GaussianMixture::new(1).reg_covar(0.0)).unwrap();
        assert!((f.means[0] - 1.5).abs() < 1e-12 && (f.covariances[0] - 1.25).abs() < 1e-12);
        assert!((bic(&f, &x, 1) - bic(&m, &x, 1)).abs() < 1e-9);
        // Parameter counts for K = 3, D = 2.
        let counts: Vec<usize> = ALL.iter().map(|&t| n_parameters(&truth(t), 2)).collect();
        assert_eq!(counts, vec![17, 11, 14, 11]);
    }

    #[test]
    fn not_positive_definite_names_the_component() {
        let e = compute_precision_cholesky(
            &[1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
            CovarianceType::Full,
            2,
            2,
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("component 1") && msg.contains("reg_covar"),
            "{msg}"
        );
        let e = compute_precision_cholesky(&[1.0, 1.0, 2.0, -1.0], CovarianceType::Diag, 2, 2)
            .unwrap_err();
        assert!(e.to_string().contains("component 1"), "{e}");
        let e = compute_precision_cholesky(&[1.0, 0.0, 3.0], CovarianceType::Spherical, 3, 2)
            .unwrap_err();
        assert!(e.to_string().contains("component 1"), "{e}");

        // A component sitting on duplicated points (at the origin, so its centred scatter is
        // exactly zero) with reg_covar = 0.
        let mut x = vec![0.0; 20];
        for i in 0..20 {
            x.push(10.0 + (i % 5) as f64);
            x.push(10.0 + (i % 3) as f64 * 0.7);
        }
        for t in ALL {
            let r = fit(&x, 2, &GaussianMixture::new(2).covariance(t).reg_covar(0.0));
            if t == CovarianceType::Tied {
                // The shared covariance gets the other cluster's spread: positive definite.
                assert!(r.is_ok(), "{r:?}");
                continue;
            }
            let msg = r.unwrap_err().to_string();
            assert!(
                msg.contains("reg_covar") && msg.contains("component") && msg.contains("now 0"),
                "{t:?}: {msg}"
            );
            assert!(!msg.contains("NaN"));
            // The default regularisation fixes it.
            let f = fit(&x, 2, &GaussianMixture::new(2).covariance(t)).unwrap();
            assert!(f.lower_bound.is_finite());
        }
    }

    #[test]
    fn empty_components_stay_finite() {
        let x = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
        // All the weight on component 0.
        let resp = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0];
        for t in ALL {
            let (w, m, c) = mstep(&x, 2, &resp, 2, t, 1e-6).unwrap();
            assert!(w.iter().chain(&m).chain(&c).all(|v| v.is_finite()), "{t:?}");
            assert!(w[1] > 0.0 && w[1] < 1e-14, "{w:?}");
            assert!(compute_precision_cholesky(&c, t, 2, 2).is_ok());
        }
    }

    #[test]
    fn warm_start_from_given_parameters() {
        let t = CovarianceType::Full;
        let (x, _) = sample(&truth(t), 1000, 3).unwrap();
        let first = fit(&x, 2, &GaussianMixture::new(3).tol(1e-8).max_iter(500)).unwrap();
        assert!(first.converged);
        // Precisions = inverse covariances, from the factors: P = U Uᵀ.
        let mut precisions = Vec::new();
        for u in first.precisions_cholesky.chunks_exact(4) {
            for i in 0..2 {
                for j in 0..2 {
                    precisions.push((0..2).map(|s| u[i * 2 + s] * u[j * 2 + s]).sum());
                }
            }
        }
        let given = InitialParameters {
            weights: first.weights.clone(),
            means: first.means.clone(),
            precisions,
        };
        let second = fit(&x, 2, &GaussianMixture::new(3).init(GmmInit::Given(given))).unwrap();
        assert!(second.converged && second.n_iter <= 2, "{}", second.n_iter);
        for (a, b) in second.means.iter().zip(&first.means) {
            assert!((a - b).abs() < 1e-4);
        }
        assert_eq!(second.labels, first.labels);
    }

    #[test]
    fn restarts_and_seeds_are_reproducible() {
        let (x, _) = sample(&truth(CovarianceType::Diag), 400, 5).unwrap();
        let p = GaussianMixture::new(3)
            .covariance(CovarianceType::Diag)
            .init(GmmInit::Random)
            .n_init(3)
            .seed(9);
        let a = fit(&x, 2, &p).unwrap();
        assert_eq!(a, fit(&x, 2, &p).unwrap());
        let single = fit(&x, 2, &p.clone().n_init(1)).unwrap();
        assert!(a.lower_bound >= single.lower_bound);
        // max_iter reached is not an error.
        let short = fit(&x, 2, &p.clone().max_iter(1)).unwrap();
        assert!(!short.converged && short.n_iter == 1);
    }

    #[test]
    fn invalid_input_is_an_error() {
        let x = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
        let bad = |r: Result<ReferenceGmm>, name: &str| match r {
            Err(Error::InvalidParameter { name: n, .. }) => assert_eq!(n, name),
            other => panic!("expected an error on {name}, got {other:?}"),
        };
        bad(fit(&x, 2, &GaussianMixture::new(0)), "k");
        bad(
            fit(&x, 2, &GaussianMixture::new(2).reg_covar(-1.0)),
            "reg_covar",
        );
        bad(fit(&x, 2, &GaussianMixture::new(2).n_init(0)), "n_init");
        bad(fit(&x, 2, &GaussianMixture::new(2).max_iter(0)), "max_iter");
        bad(fit(&x, 2, &GaussianMixture::new(2).tol(f64::NAN)), "tol");
        assert!(matches!(
            fit(&x, 2, &GaussianMixture::new(4)),
            Err(Error::TooFewSamples { .. })
        ));
        assert!(matches!(
            fit(&x, 0, &GaussianMixture::new(1)),
            Err(Error::EmptyData { .. })
        ));
        assert!(matches!(
            fit(&x, 4, &GaussianMixture::new(1)),
            Err(Error::Shape { .. })
        ));
        assert!(matches!(
            fit(&[0.0, f64::NAN], 1, &GaussianMixture::new(1)),
            Err(Error::NonFinite { row: 1, .. })
        ));
        let given = |precisions: Vec<f64>| {
            GaussianMixture::new(1).init(GmmInit::Given(InitialParameters {
                weights: vec![1.0],
                means: vec![0.0, 0.0],
                precisions,
            }))
        };
        bad(fit(&x, 2, &given(vec![1.0])), "init");
        bad(fit(&x, 2, &given(vec![1.0, 2.0, 2.0, 1.0])), "init");
        // Helpers with shapes that do not fit return nothing rather than panic.
        let m = truth(CovarianceType::Full);
        assert!(predict(&m, &x, 3).is_empty() && predict_proba(&m, &x, 4).is_empty());
        assert!(score(&m, &x, 0).is_nan() && bic(&m, &[], 2).is_nan());
        assert!(
            estimate_log_gaussian_prob(&x, 2, &[0.0], &[1.0], CovarianceType::Full, 1).is_empty()
        );
        assert!(mstep(&x, 2, &[1.0; 5], 1, CovarianceType::Full, 0.0).is_err());
        assert!(mstep(&x, 2, &[-1.0; 3], 1, CovarianceType::Full, 0.0).is_err());
        assert!(compute_precision_cholesky(&[1.0; 3], CovarianceType::Full, 1, 2).is_err());
        assert!(compute_precision_cholesky(&[f64::NAN], CovarianceType::Spherical, 1, 2).is_err());
    }
}
