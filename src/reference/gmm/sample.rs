//! Model size and sampling in the oracle: the free-parameter count of the BIC/AIC and draws
//! from a fitted mixture (parent module docs).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{cov_len, precision_cholesky_impl, ReferenceGmm};
use crate::error::{Error, Result};
use crate::gmm::CovarianceType;
use crate::reference::linalg;

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
                    linalg::cholesky_lower(&model.covariances[c * d * d..(c + 1) * d * d], d)
                        .ok_or_else(|| Error::invalid("reg_covar", "not positive definite"))?
                }
                CovarianceType::Tied => linalg::cholesky_lower(&model.covariances, d)
                    .ok_or_else(|| Error::invalid("reg_covar", "not positive definite"))?,
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
