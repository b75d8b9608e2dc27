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
//! precision, Σₖ⁻¹ = Uₖ Uₖᵀ, never through Σₖ⁻¹ itself. The factors (and the covariances of
//! given precisions) come from [`crate::gmm::math`], the neutral module the GPU path uses too;
//! the oracle does not check that shared code, `tests/gmm_math.rs` does, by identities. Layout:
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
//!   with `KMeans::new(k).n_init(1)` drawing from the mixture's generator (scikit-learn's:
//!   a mixture seeded s starts from the labels of `KMeans::new(k).seed(s)`);
//! * `KMeansPlusPlus`: one-hot responsibilities of the nearest greedy k-means++ seed
//!   ([`crate::reference::kmeans::kmeans_plus_plus`]). (scikit-learn's "k-means++" instead
//!   gives each component only its own seed point; the nearest-seed rule used here is the one
//!   documented for [`GmmInit::KMeansPlusPlus`].)
//! * `Random`: uniform [0, 1) responsibilities normalised per row;
//! * `Given`: the weights, means and precisions as given (covariances by inverting the
//!   precisions, precision factors from those covariances); nothing is random, so `n_init`
//!   is ignored and EM starts from these parameters with an E-step.
//!
//! **Model selection.** With p free parameters (scikit-learn's `_n_parameters`, from
//! [`crate::gmm::math::n_parameters`]: the covariance values per type, Full K·D(D+1)/2, Tied
//! D(D+1)/2, Diag K·D, Spherical K, plus K·D means and K − 1 weights) and
//! log L = Σᵢ log p(xᵢ):
//!
//! ```text
//! BIC = −2 log L + p log N,     AIC = −2 log L + 2 p
//! ```
//!
//! Sampling from a mixture is [`crate::gmm::math::sample`] (the tests draw their data with
//! it).
//!
//! Everything is written for clarity, not speed.
//!
//! Files: this module holds the fit, prediction and scores; `steps` the log-densities, E- and
//! M-steps.
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::gmm::{math, CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit};
use crate::kmeans::KMeans;

mod steps;
#[cfg(test)]
mod tests;

pub use steps::{estep, estimate_log_gaussian_prob, mstep};

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

impl ReferenceGmm {
    /// The parameters and fit statistics of a GPU-fitted (or loaded) model, to evaluate on
    /// the CPU with this module's functions.
    pub fn from_model(model: &GaussianMixtureModel) -> Self {
        ReferenceGmm {
            weights: model.weights().to_vec(),
            means: model.means().to_vec(),
            covariances: model.covariances().to_vec(),
            precisions_cholesky: model.precisions_cholesky().to_vec(),
            covariance_type: model.covariance_type(),
            converged: model.converged(),
            n_iter: model.n_iter(),
            lower_bound: model.lower_bound(),
            lower_bound_history: model.lower_bound_history().to_vec(),
            labels: model.labels().to_vec(),
        }
    }
}

/// The number of components of a model whose shapes fit `d` features, else `None`.
pub(super) fn model_k(model: &ReferenceGmm, d: usize) -> Option<usize> {
    let k = model.weights.len();
    (d > 0
        && k > 0
        && model.means.len() == k.saturating_mul(d)
        && math::covariance_len(model.covariance_type, k, d)
            == Some(model.precisions_cholesky.len()))
    .then_some(k)
}

/// log πₖ + log N(xᵢ | μₖ, Σₖ), N x K; empty when the shapes do not fit.
pub(super) fn weighted_log_prob(x: &[f64], d: usize, model: &ReferenceGmm) -> Vec<f64> {
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
    unfitted(weights, means, covariances, params, d)
}

/// A model of these parameters with its precision factors; the fit fields are left at their
/// "not fitted" values.
fn unfitted(
    weights: Vec<f64>,
    means: Vec<f64>,
    covariances: Vec<f64>,
    params: &GaussianMixture,
    d: usize,
) -> Result<ReferenceGmm> {
    let precisions_cholesky = math::precision_cholesky_quoting(
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
            let km = crate::reference::kmeans::fit_with(x, d, &KMeans::new(k).n_init(1), rng)?;
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
            return given_start(p.weights.clone(), p.means.clone(), &p.precisions, params, d);
        }
    };
    // scikit-learn: each part given in weights_init, means_init or precisions_init replaces
    // the one computed from the responsibilities.
    let mut model = model_from_resp(x, d, &resp, params)?;
    let o = &params.init_overrides;
    if let Some(w) = &o.weights {
        model.weights = w.clone();
    }
    if let Some(m) = &o.means {
        model.means = m.clone();
    }
    if let Some(p) = &o.precisions {
        let given = given_start(model.weights.clone(), model.means.clone(), p, params, d)?;
        model.covariances = given.covariances;
        model.precisions_cholesky = given.precisions_cholesky;
    }
    Ok(model)
}

/// The starting model of given weights, means and precisions.
fn given_start(
    weights: Vec<f64>,
    means: Vec<f64>,
    precisions: &[f64],
    params: &GaussianMixture,
    d: usize,
) -> Result<ReferenceGmm> {
    let covariances = math::covariances_from_precisions(precisions, params.covariance_type, d)?;
    unfitted(weights, means, covariances, params, d)
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

    // All three parts given: the initialisation method is not needed, one run is made.
    let o = &params.init_overrides;
    let resolved;
    let params = match (&o.weights, &o.means, &o.precisions) {
        (Some(w), Some(m), Some(p)) => {
            resolved = GaussianMixture {
                init: GmmInit::Given(crate::gmm::InitialParameters {
                    weights: w.clone(),
                    means: m.clone(),
                    precisions: p.clone(),
                }),
                init_overrides: Default::default(),
                on_iteration: None,
                ..params.clone()
            };
            &resolved
        }
        _ => params,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let runs = match params.init {
        GmmInit::Given(_) => 1,
        _ => params.n_init,
    };

    let mut best: Option<ReferenceGmm> = None;
    for _ in 0..runs {
        let mut model = initialize(x, d, params, &mut rng)?;
        // A warm start measures the first change from the bound of the fit it continues.
        let mut lower_bound = params.warm_lower_bound.unwrap_or(f64::NEG_INFINITY);
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

/// The log-likelihood Σᵢ log p(xᵢ) and N, or NaN and 0 for data that does not fit.
fn total_log_likelihood(model: &ReferenceGmm, x: &[f64], d: usize) -> (f64, usize) {
    let s = score_samples(model, x, d);
    if s.is_empty() {
        return (f64::NAN, 0);
    }
    (s.iter().sum(), s.len())
}

/// The free parameters of `model` with `d` features (K = the number of weights).
fn parameter_count(model: &ReferenceGmm, d: usize) -> usize {
    math::n_parameters(model.covariance_type, model.weights.len(), d)
}

/// Bayesian information criterion −2 log L + p log N on `x` (lower is better). NaN when `x`
/// has no rows or does not fit the model.
pub fn bic(model: &ReferenceGmm, x: &[f64], d: usize) -> f64 {
    let (ll, n) = total_log_likelihood(model, x, d);
    -2.0 * ll + parameter_count(model, d) as f64 * (n as f64).ln()
}

/// Akaike information criterion −2 log L + 2p on `x` (lower is better). NaN when `x` has no
/// rows or does not fit the model.
pub fn aic(model: &ReferenceGmm, x: &[f64], d: usize) -> f64 {
    let (ll, _) = total_log_likelihood(model, x, d);
    -2.0 * ll + 2.0 * parameter_count(model, d) as f64
}
