//! Host math of Gaussian mixtures in f64: parameter layouts and counts, the Cholesky factors
//! of the precisions, covariances of given precisions, and sampling.
//!
//! **Layouts** (scikit-learn's): covariances and precision factors hold K·D² values (`Full`,
//! K blocks D x D row-major), D² (`Tied`), K·D (`Diag`) or K (`Spherical`).
//!
//! **Precision Cholesky factors.** Each component is evaluated through a factor Uₖ of its
//! precision, Σₖ⁻¹ = Uₖ Uₖᵀ, never through Σₖ⁻¹ itself. For `Full` and `Tied`, with the
//! lower Cholesky factor Σₖ = Lₖ Lₖᵀ, Uₖ = (Lₖ⁻¹)ᵀ is upper triangular (forward substitution
//! for the columns of Lₖ⁻¹); for `Diag` and `Spherical` the factors are the reciprocal standard
//! deviations 1/σ. A covariance that is not positive definite (a failed pivot, a variance
//! ≤ 0, or a pivot so small that its reciprocal overflows) is an error naming the component.
//!
//! **Free parameters** (scikit-learn's `_n_parameters`): covariance values (Full K·D(D+1)/2,
//! Tied D(D+1)/2, Diag K·D, Spherical K) + K·D means + K − 1 weights; the BIC and AIC count
//! them.
//!
//! **Sampling** draws each sample's component from the categorical distribution on π (so
//! the counts are multinomial), then x = μₖ + Lₖ z with z standard normal (Box–Muller), σ z
//! for Diag/Spherical. As scikit-learn, the samples come grouped by component.
//!
//! One piece of code for the GPU fit, the model and the CPU oracle (`src/reference/`)
//! alike, so it is neutral: it uses neither the GPU layer nor the oracle. As the oracle
//! cannot check what it shares, `tests/gmm_math.rs` checks these functions by identities
//! that do not reuse them (Uᵀ Σ U = I, round trips, hand-counted parameters, moments of
//! large draws).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::CovarianceType;
use crate::error::{Error, Result};
use crate::linalg;
use crate::random::StandardNormal;

/// Number of covariance (and precision-factor) values of a mixture of `k` components of `d`
/// features, or `None` when it overflows `usize` (a model file can claim any sizes).
pub fn covariance_len(covariance_type: CovarianceType, k: usize, d: usize) -> Option<usize> {
    covariance_type.values(k, d)
}

/// Values per component block of the covariances and factors: D² (Full, Tied), D (Diag) or
/// 1 (Spherical).
pub(crate) fn block_len(covariance_type: CovarianceType, d: usize) -> usize {
    match covariance_type {
        CovarianceType::Full | CovarianceType::Tied => d * d,
        CovarianceType::Diag => d,
        CovarianceType::Spherical => 1,
    }
}

/// Number of free parameters of a mixture of `k` components of `d` features (module docs);
/// 0 for no components.
pub fn n_parameters(covariance_type: CovarianceType, k: usize, d: usize) -> usize {
    if k == 0 {
        return 0;
    }
    let tri = d * (d + 1) / 2;
    let cov = match covariance_type {
        CovarianceType::Full => k * tri,
        CovarianceType::Tied => tri,
        CovarianceType::Diag => k * d,
        CovarianceType::Spherical => k,
    };
    cov + k * d + k - 1
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

/// The work, in D³ units summed over the blocks, each thread must get for the factors to be
/// split over threads: a block costs about D³ / 4 ns (D = 50: 31 µs on one core), a thread
/// 20-100 µs to start and join, so a thread is worth starting only for about 0.5 ms of work.
/// Below it a fit's every M-step paid more for its threads than it saved (K = 10, D = 50: ten
/// threads for 0.3 ms of work, on every iteration).
const FACTOR_FLOPS_PER_THREAD: usize = 1 << 21;

/// Uₖ = (Lₖ⁻¹)ᵀ of every d x d block of `covariances` (Lₖ its Cholesky factor), or `None`
/// for a block that is not positive definite (or whose factor's inverse overflows).
///
/// The blocks are independent, so they are split into contiguous runs over
/// `std::thread::scope` threads; each block is computed by the same code on one thread
/// whichever thread that is, and the results are put back in component order, so the bits do
/// not depend on the number of threads or their timing.
fn factor_blocks(covariances: &[f64], d: usize) -> Vec<Option<Vec<f64>>> {
    let available = std::thread::available_parallelism().map_or(1, |n| n.get());
    let k = covariances.len() / (d * d).max(1);
    factor_blocks_on(covariances, d, factor_threads(k, d, available))
}

/// Threads for the factors of `k` blocks of d x d on a host with `available` cores: one per
/// [`FACTOR_FLOPS_PER_THREAD`] of work, at most one per block and core, at least one.
fn factor_threads(k: usize, d: usize, available: usize) -> usize {
    let flops = k.saturating_mul(d.saturating_pow(3));
    available.min(k).min(flops / FACTOR_FLOPS_PER_THREAD).max(1)
}

/// [`factor_blocks`] on `threads` threads (contiguous runs of blocks).
fn factor_blocks_on(covariances: &[f64], d: usize, threads: usize) -> Vec<Option<Vec<f64>>> {
    let factor = |block: &[f64]| {
        let l = linalg::cholesky_lower(block, d).ok()?;
        let u = inverse_lower_transposed(&l, d);
        // A pivot so small that its reciprocal overflows is as good as zero.
        u.iter().all(|v| v.is_finite()).then_some(u)
    };
    let blocks: Vec<&[f64]> = covariances.chunks_exact(d * d).collect();
    if threads <= 1 {
        return blocks.into_iter().map(factor).collect();
    }
    let per = blocks.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let runs: Vec<_> = blocks
            .chunks(per)
            .map(|run| scope.spawn(move || run.iter().map(|b| factor(b)).collect::<Vec<_>>()))
            .collect();
        runs.into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// The Cholesky factors of the precisions of `covariances` (module docs):
/// scikit-learn's `_compute_precision_cholesky`, for `k` components of `d` features.
///
/// Errors: [`Error::InvalidParameter`] named `reg_covar` when a covariance is not positive
/// definite, naming the component (the tied covariance for `Tied`); named `covariances` for
/// a wrong length or a non-finite value, `n_features` for d = 0. The result is never NaN.
pub fn precision_cholesky(
    covariances: &[f64],
    covariance_type: CovarianceType,
    k: usize,
    d: usize,
) -> Result<Vec<f64>> {
    precision_cholesky_quoting(covariances, covariance_type, k, d, None)
}

/// The factors of a model's covariances (given parameters, a model file, sampling): a
/// covariance that is not positive definite is an error named `covariances`, without the
/// fit's advice to raise `reg_covar`, which a model cannot take.
pub(crate) fn model_precision_cholesky(
    covariances: &[f64],
    covariance_type: CovarianceType,
    k: usize,
    d: usize,
) -> Result<Vec<f64>> {
    precision_cholesky_quoting(covariances, covariance_type, k, d, Some(f64::NAN))
}

/// [`precision_cholesky`], quoting the `reg_covar` in use (when given) in the error, so a
/// failing fit says how far it has already regularised (NaN: a model's covariances, see
/// [`model_precision_cholesky`]).
pub(crate) fn precision_cholesky_quoting(
    covariances: &[f64],
    covariance_type: CovarianceType,
    k: usize,
    d: usize,
    reg_covar: Option<f64>,
) -> Result<Vec<f64>> {
    if d == 0 {
        return Err(Error::invalid("n_features", "must be at least 1"));
    }
    let expected = covariance_len(covariance_type, k, d);
    if expected != Some(covariances.len()) {
        return Err(Error::invalid(
            "covariances",
            format!(
                "expected {} values for {covariance_type:?} covariances of {k} components and \
                 {d} features, got {}",
                expected.map_or("too many".to_string(), |e| e.to_string()),
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
    let not_pd = |which: String| match reg_covar {
        // A model's own covariances (not a fit's): there is no regularisation to raise.
        Some(r) if r.is_nan() => {
            Error::invalid("covariances", format!("{which} is not positive definite"))
        }
        _ => {
            let now = reg_covar.map_or_else(String::new, |r| format!(" (now {r:e})"));
            Error::invalid(
                "reg_covar",
                format!("{which} is not positive definite; increase reg_covar{now}"),
            )
        }
    };
    let component = |c: usize| match covariance_type {
        CovarianceType::Tied => "tied covariance (shared by all components)".to_string(),
        _ => format!("covariance of component {c}"),
    };

    let mut out = Vec::with_capacity(covariances.len());
    match covariance_type {
        CovarianceType::Full | CovarianceType::Tied => {
            let factors = factor_blocks(covariances, d)
                .into_iter()
                .enumerate()
                .map(|(c, u)| u.ok_or_else(|| not_pd(component(c))));
            for u in factors {
                out.extend(u?);
            }
        }
        CovarianceType::Diag | CovarianceType::Spherical => {
            let per = block_len(covariance_type, d);
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

/// What the E-step kernels read of a mixture (`shaders/mixture/estep.wgsl`), in f32: the
/// constants cₖ = log πₖ − ½ D log 2π + log det Uₖ, and the precision factors in the
/// shader's layout (K x D values for Spherical: each pₖ repeated for every feature).
pub(crate) fn estep_constants(
    weights: &[f64],
    precisions_cholesky: &[f64],
    covariance_type: CovarianceType,
    k: usize,
    d: usize,
) -> (Vec<f32>, Vec<f32>) {
    let u = precisions_cholesky;
    let log_det: Vec<f64> = (0..k)
        .map(|c| match covariance_type {
            CovarianceType::Full => (0..d).map(|j| u[c * d * d + j * d + j].ln()).sum(),
            CovarianceType::Tied => (0..d).map(|j| u[j * d + j].ln()).sum(),
            CovarianceType::Diag => u[c * d..(c + 1) * d].iter().map(|v| v.ln()).sum(),
            CovarianceType::Spherical => d as f64 * u[c].ln(),
        })
        .collect();
    let half_log_2pi_d = 0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln();
    let log_const = (0..k)
        .map(|c| (weights[c].ln() - half_log_2pi_d + log_det[c]) as f32)
        .collect();
    let prec = match covariance_type {
        CovarianceType::Spherical => u
            .iter()
            .flat_map(|&v| std::iter::repeat_n(v as f32, d))
            .collect(),
        _ => u.iter().map(|&v| v as f32).collect(),
    };
    (log_const, prec)
}

/// The covariances of given precisions (inverted per component), in the same layout, for
/// `d` features; the number of components follows from `precisions.len()`.
///
/// Errors: [`Error::InvalidParameter`] named `init` (given starting parameters are the only
/// source of precisions) for a precision that is not positive definite (or not finite),
/// naming the component, and for a length that is not whole components (D² values exactly
/// for `Tied`); named `n_features` for d = 0.
pub fn covariances_from_precisions(
    precisions: &[f64],
    covariance_type: CovarianceType,
    d: usize,
) -> Result<Vec<f64>> {
    if d == 0 {
        return Err(Error::invalid("n_features", "must be at least 1"));
    }
    let per = block_len(covariance_type, d);
    let whole = match covariance_type {
        CovarianceType::Tied => precisions.len() == per,
        _ => precisions.len().is_multiple_of(per),
    };
    if !whole {
        return Err(Error::invalid(
            "init",
            format!(
                "{} precision values are not whole {covariance_type:?} precisions of {d} \
                 features ({per} values each)",
                precisions.len()
            ),
        ));
    }
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
            let mut out = Vec::with_capacity(precisions.len());
            for (c, block) in precisions.chunks_exact(d * d).enumerate() {
                // P = C Cᵀ, so Σ = P⁻¹ = C⁻ᵀ C⁻¹ = V Vᵀ with V = (C⁻¹)ᵀ.
                let chol = linalg::cholesky_lower(block, d).map_err(|_| bad(c))?;
                let v = inverse_lower_transposed(&chol, d);
                for i in 0..d {
                    for j in 0..d {
                        out.push((0..d).map(|t| v[i * d + t] * v[j * d + t]).sum());
                    }
                }
                // A pivot so small that the inverse overflows is as good as zero.
                if out[c * d * d..].iter().any(|v: &f64| !v.is_finite()) {
                    return Err(bad(c));
                }
            }
            Ok(out)
        }
        CovarianceType::Diag | CovarianceType::Spherical => precisions
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
            .collect(),
    }
}

/// Draws `n` samples from the mixture of `weights` (K), `means` (K x D) and `covariances`
/// (layout of `covariance_type`) with a ChaCha8 generator seeded with `seed` (module docs).
///
/// Returns the samples (n x D row-major) and their components, grouped by component in
/// increasing order.
///
/// Errors: [`Error::InvalidParameter`] for n = 0 or N x D values the host cannot allocate
/// (`n_samples`), for parameters whose shapes do not fit together or whose weights are not
/// finite, non-negative with a positive sum (`model`), and for a covariance that is not
/// positive definite (`reg_covar`).
pub fn sample(
    covariance_type: CovarianceType,
    weights: &[f64],
    means: &[f64],
    covariances: &[f64],
    n: usize,
    seed: u64,
) -> Result<(Vec<f64>, Vec<u32>)> {
    if n == 0 {
        return Err(Error::invalid("n_samples", "must be at least 1"));
    }
    let k = weights.len();
    let d = if k > 0 && means.len().is_multiple_of(k) {
        means.len() / k
    } else {
        0
    };
    let t = covariance_type;
    if d == 0 || covariance_len(t, k, d) != Some(covariances.len()) {
        return Err(Error::invalid(
            "model",
            format!(
                "{k} weights, {} mean values and {} covariance values do not fit together",
                means.len(),
                covariances.len()
            ),
        ));
    }
    let wsum: f64 = weights.iter().sum();
    if weights.iter().any(|w| !(w.is_finite() && *w >= 0.0)) || !(wsum > 0.0 && wsum.is_finite()) {
        return Err(Error::invalid(
            "model",
            "weights must be finite, non-negative and have a positive sum",
        ));
    }
    // Checks positive definiteness (and finiteness) as for any model's covariances.
    model_precision_cholesky(covariances, t, k, d)?;

    // The per-component sampling factor: lower Cholesky factor (Full, Tied) or standard
    // deviations (Diag: D values, Spherical: 1).
    let factors: Vec<Vec<f64>> = (0..k)
        .map(|c| -> Result<Vec<f64>> {
            Ok(match t {
                CovarianceType::Full => {
                    linalg::cholesky_lower(&covariances[c * d * d..(c + 1) * d * d], d)?
                }
                CovarianceType::Tied => linalg::cholesky_lower(covariances, d)?,
                CovarianceType::Diag => covariances[c * d..(c + 1) * d]
                    .iter()
                    .map(|v| v.sqrt())
                    .collect(),
                CovarianceType::Spherical => vec![covariances[c].sqrt()],
            })
        })
        .collect::<Result<_>>()?;

    // A size the host cannot hold is an error before any draw, not an abort or a long
    // loop ending in one.
    let too_large = || {
        Error::invalid(
            "n_samples",
            format!("{n} x {d} values do not fit in host memory"),
        )
    };
    let mut xs = Vec::new();
    xs.try_reserve_exact(n.checked_mul(d).ok_or_else(too_large)?)
        .map_err(|_| too_large())?;
    let mut labels = Vec::new();
    labels.try_reserve_exact(n).map_err(|_| too_large())?;

    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Categorical draws of the components: the counts are multinomial.
    let mut counts = vec![0usize; k];
    let last = weights.iter().rposition(|w| *w > 0.0).unwrap_or(k - 1);
    for _ in 0..n {
        let u = rng.random::<f64>() * wsum;
        let mut acc = 0.0;
        let mut chosen = last;
        for (c, w) in weights.iter().enumerate() {
            acc += w;
            if u < acc && *w > 0.0 {
                chosen = c;
                break;
            }
        }
        counts[chosen] += 1;
    }

    let mut normals = StandardNormal::default();
    let mut z = vec![0.0; d];
    for (c, &count) in counts.iter().enumerate() {
        let mu = &means[c * d..(c + 1) * d];
        let f = &factors[c];
        for _ in 0..count {
            for v in z.iter_mut() {
                *v = normals.sample(&mut rng);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_factors_start_threads_only_for_enough_work_and_keep_their_bits_on_any_count() {
        // K = 10, D = 50 (0.3 ms of work): one thread, however many cores.
        assert_eq!(factor_threads(10, 50, 16), 1);
        // K = 50, D = 64 (the 20M-row mixtures): several, at most one per core and block.
        assert_eq!(factor_threads(50, 64, 16), 6);
        assert_eq!(factor_threads(50, 64, 2), 2);
        assert_eq!(factor_threads(3, 512, 16), 3);
        assert_eq!(factor_threads(0, 0, 16), 1);
        // The same bits on one thread and on several; a singular block stays None in place.
        let (k, d) = (7, 9);
        let mut cov = vec![0.0; k * d * d];
        for c in 0..k {
            for i in 0..d {
                for j in i..d {
                    let v = if i == j {
                        1.0 + c as f64
                    } else {
                        ((c * 31 + i * 7 + j * 3) % 11) as f64 * 0.01
                    };
                    cov[c * d * d + i * d + j] = v;
                    cov[c * d * d + j * d + i] = v;
                }
            }
        }
        cov[4 * d * d..5 * d * d].fill(0.0);
        let bits = |v: &[Option<Vec<f64>>]| -> Vec<Option<Vec<u64>>> {
            v.iter()
                .map(|b| b.as_ref().map(|b| b.iter().map(|x| x.to_bits()).collect()))
                .collect()
        };
        let one = factor_blocks_on(&cov, d, 1);
        assert!(one[4].is_none());
        assert_eq!(one.iter().filter(|b| b.is_some()).count(), k - 1);
        for threads in [2, 3, 7] {
            let many = factor_blocks_on(&cov, d, threads);
            assert_eq!(bits(&many), bits(&one), "{threads} threads");
        }
    }
}
