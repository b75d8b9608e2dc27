//! Principal component analysis in plain f64: the oracle the GPU implementation is checked
//! against.
//!
//! For N samples x_i ∈ ℝ^D (rows of X) PCA finds the orthonormal directions u_1, u_2, … of
//! largest variance. With the column means μ (or μ = 0 when `center` is off) and, when
//! `standardize` is on, the population standard deviations σ (else σ = 1), the data is
//! first mapped to X̃ = (X − μ) / σ column by column, and
//!
//! ```text
//! S = X̃ᵀ X̃ / (N − ddof)                  (D x D, symmetric, positive semi-definite)
//! S u_k = λ_k u_k,   λ_1 ≥ λ_2 ≥ … ≥ 0
//! ```
//!
//! The covariance is computed in two passes (means first, then the sum of centred products)
//! because the one-pass formula Σ x xᵀ / N − μ μᵀ cancels catastrophically when the mean is
//! large against the spread.
//!
//! The components are the first M eigenvectors, found by one of two independent routes:
//!
//! * the full symmetric eigendecomposition of S ([`linalg::symmetric_eigen`]);
//! * the classic **power iteration with deflation** ([`power_iteration_deflation`]):
//!   v ← S v / ‖S v‖ from a seeded random start until the residual ‖S v − λ v‖ with
//!   λ = vᵀ S v falls to `tol · λ₁`, then S ← S − λ v vᵀ removes the pair found and the next
//!   component is the leading eigenvector of what is left.
//!
//! (The GPU's block power iteration W = S V with QR and Rayleigh–Ritz,
//! [`crate::linalg::rayleigh_ritz`], is a third route; the test suites compare all of them.)
//!
//! What is reported follows scikit-learn's `PCA`: `explained_variance` λ_k,
//! `explained_variance_ratio` λ_k / tr S (tr S = Σ of all eigenvalues, the total variance),
//! `singular_values` √(λ_k (N − ddof)) (the singular values of X̃), `noise_variance` the mean
//! of the eigenvalues M+1 ..= min(N, D) that were left out (probabilistic PCA's σ²), and
//! each component's sign fixed by [`linalg::flip_signs`] (largest |entry| positive).
//! The projection is z = ((x − μ) / σ) Uᵀ, divided by √λ_k per component when whitening,
//! so that the projected data has identity covariance.
//!
//! Everything is written for clarity, not speed.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::pca::{Components, Pca, PcaSolver};
use crate::reference::linalg;

pub mod probabilistic;
#[cfg(test)]
mod tests;

/// The outcome of one reference PCA fit.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferencePca {
    /// Principal axes, M x D row-major: orthonormal rows, descending variance, signs fixed
    /// so that each row's largest |entry| is positive.
    pub components: Vec<f64>,
    /// Variance along each component, λ_k (M values, clamped at 0).
    pub explained_variance: Vec<f64>,
    /// λ_k / tr S (M values).
    pub explained_variance_ratio: Vec<f64>,
    /// √(λ_k (N − ddof)), the singular values of the centred (and scaled) data (M values).
    pub singular_values: Vec<f64>,
    /// Column means subtracted before the analysis (zeros when `center` is off).
    pub mean: Vec<f64>,
    /// Per-feature divisors (population standard deviations when `standardize` is on, a
    /// constant feature getting 1; otherwise all 1.0).
    pub scale: Vec<f64>,
    /// Mean of the eigenvalues left out among the first min(N, D), 0 when none are.
    pub noise_variance: f64,
    /// Number of components kept, M.
    pub n_components: usize,
    /// Number of samples fitted, N.
    pub n_samples: usize,
}

/// Column means of row-major `x` (`d` values per row); empty when `d` is 0, NaN for no rows.
pub fn column_means(x: &[f64], d: usize) -> Vec<f64> {
    if d == 0 {
        return Vec::new();
    }
    let n = x.len() / d;
    let mut sums = vec![0.0; d];
    for row in x.chunks_exact(d) {
        for (s, v) in sums.iter_mut().zip(row) {
            *s += v;
        }
    }
    sums.iter().map(|s| s / n as f64).collect()
}

/// Population standard deviation of each column (two-pass, divisor N), with a constant
/// column given 1.0 so that dividing by it leaves the column alone.
///
/// "Constant" uses scikit-learn's `StandardScaler` test: the variance is within the rounding
/// of its own computation, var ≤ N·ε·var + (N·|μ|·ε)². A column of equal values need not
/// come out with an exact 0 (the mean of 0.1 repeated is not exactly 0.1), and dividing its
/// rounding noise by a tiny σ would blow the noise up to ±1.
pub fn column_std(x: &[f64], d: usize) -> Vec<f64> {
    if d == 0 {
        return Vec::new();
    }
    let n = (x.len() / d) as f64;
    let mean = column_means(x, d);
    let mut sq = vec![0.0; d];
    for row in x.chunks_exact(d) {
        for ((s, v), m) in sq.iter_mut().zip(row).zip(&mean) {
            *s += (v - m) * (v - m);
        }
    }
    sq.iter()
        .zip(&mean)
        .map(|(s, m)| {
            let var = s / n;
            let eps = f64::EPSILON;
            let bound = n * eps * var + (n * m.abs() * eps).powi(2);
            if var <= bound {
                1.0
            } else {
                var.sqrt()
            }
        })
        .collect()
}

/// Covariance (D x D, row-major) of row-major `x` with `d` features.
///
/// S = Σ_i (x_i − μ)(x_i − μ)ᵀ / (N − ddof), where μ is `mean` (usually [`column_means`],
/// computed in a first pass) or 0 when `mean` is `None` (the uncentred second-moment matrix
/// XᵀX / (N − ddof), for data that is already centred or for `center = false`). The matrix
/// is exactly symmetric: the upper triangle is summed and mirrored.
///
/// With N ≤ ddof the divisor is zero or negative and the entries are not meaningful
/// (NaN or ±inf, as NumPy gives); [`fit`] never asks for that.
///
/// # Panics
///
/// If `mean` holds fewer than `d` values.
pub fn covariance(x: &[f64], d: usize, mean: Option<&[f64]>, ddof: usize) -> Vec<f64> {
    if d == 0 {
        return Vec::new();
    }
    let n = x.len() / d;
    let zeros = vec![0.0; d];
    let mu = mean.unwrap_or(&zeros);
    let mut s = vec![0.0; d * d];
    let mut centred = vec![0.0; d];
    for row in x.chunks_exact(d) {
        for j in 0..d {
            centred[j] = row[j] - mu[j];
        }
        for a in 0..d {
            let ca = centred[a];
            for b in a..d {
                s[a * d + b] += ca * centred[b];
            }
        }
    }
    let divisor = n as f64 - ddof as f64;
    for a in 0..d {
        for b in a..d {
            let v = s[a * d + b] / divisor;
            s[a * d + b] = v;
            s[b * d + a] = v;
        }
    }
    s
}

/// The `m` leading eigenpairs of the symmetric d x d matrix `s` (row-major) by power
/// iteration with deflation, the classic textbook route.
///
/// For each component in turn: start from a random vector (ChaCha8 seeded with `seed`; all
/// components draw from the one generator), projected away from the vectors already found so
/// that a component of a zero eigenvalue still comes out orthogonal to them; then repeat
///
/// ```text
/// w = S v,   λ = vᵀ w,   r = ‖w − λ v‖;   stop if r ≤ tol · max(λ₁, tiny);   v = w / ‖w‖
/// ```
///
/// at most `max_iter` times (λ₁ is the first component's eigenvalue, or the current estimate
/// while the first component is being found; `tiny` is the smallest positive f64, so that a
/// zero matrix converges at once). The pair found is then removed: S ← S − λ v vᵀ.
///
/// Convergence is linear with rate λ_{k+1}/λ_k, so close eigenvalues need many iterations.
/// Returns the eigenvalues (in the order found, which is descending for a positive
/// semi-definite S) and the unit eigenvectors as m rows of length d, with the signs the
/// iteration gives.
///
/// Errors: [`Error::NotConverged`] (with the relative residual) when a component is not
/// within tolerance after `max_iter` iterations; [`Error::InvalidParameter`]
/// for a wrong length, m > d, a `tol` that is not finite and positive, or `max_iter` = 0;
/// [`Error::NonFinite`].
pub fn power_iteration_deflation(
    s: &[f64],
    d: usize,
    m: usize,
    tol: f64,
    max_iter: usize,
    seed: u64,
) -> Result<(Vec<f64>, Vec<f64>)> {
    if d.checked_mul(d) != Some(s.len()) {
        return Err(Error::invalid(
            "matrix",
            format!(
                "expected a {d} x {d} row-major matrix, got {} values",
                s.len()
            ),
        ));
    }
    if d > 0 {
        crate::data::check_finite(s, d)?;
    }
    if m > d {
        return Err(Error::invalid(
            "components",
            format!("cannot find {m} eigenpairs of a {d} x {d} matrix"),
        ));
    }
    if !(tol.is_finite() && tol > 0.0) {
        return Err(Error::invalid(
            "tol",
            format!("must be finite and > 0, got {tol}"),
        ));
    }
    if max_iter == 0 {
        return Err(Error::invalid("max_iter", "must be at least 1"));
    }

    let mut a = s.to_vec();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut values = Vec::with_capacity(m);
    let mut vectors: Vec<f64> = Vec::with_capacity(m * d);
    let mut lambda1: Option<f64> = None;

    for _ in 0..m {
        let mut v = random_start(&vectors, d, &mut rng);
        let mut found = None;
        let mut residual = f64::INFINITY;
        for _ in 0..max_iter {
            let w = matvec(&a, d, &v);
            let lambda = dot(&v, &w);
            residual = w
                .iter()
                .zip(&v)
                .map(|(wi, vi)| (wi - lambda * vi).powi(2))
                .sum::<f64>()
                .sqrt();
            let reference = lambda1.unwrap_or(lambda).max(f64::MIN_POSITIVE);
            if residual <= tol * reference {
                found = Some(lambda);
                break;
            }
            // ‖w‖ > 0 here: w = 0 would have given λ = 0 and r = 0, which converged above.
            let norm = dot(&w, &w).sqrt();
            v = w.iter().map(|wi| wi / norm).collect();
        }
        let Some(lambda) = found else {
            return Err(Error::NotConverged {
                what: "reference power iteration",
                residual: residual / lambda1.unwrap_or(1.0).abs().max(f64::MIN_POSITIVE),
                iterations: max_iter,
            });
        };
        if lambda1.is_none() {
            lambda1 = Some(lambda);
        }
        // Deflation: S ← S − λ v vᵀ leaves v with eigenvalue 0 and every other pair as it was.
        for i in 0..d {
            for j in 0..d {
                a[i * d + j] -= lambda * v[i] * v[j];
            }
        }
        values.push(lambda);
        vectors.extend_from_slice(&v);
    }
    Ok((values, vectors))
}

/// A unit random start orthogonal to the rows of `found` (k x d, orthonormal, k < d).
fn random_start(found: &[f64], d: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    let mut v: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..1.0)).collect();
    project_out(&mut v, found, d);
    let norm = dot(&v, &v).sqrt();
    if norm > 1e-8 {
        return v.iter().map(|x| x / norm).collect();
    }
    // Practically never: the draw fell (almost) inside the span of `found`. Fall back on the
    // basis vector with the most left after projection, which is at least √((d − k)/d).
    let mut best = Vec::new();
    let mut best_norm = -1.0;
    for j in 0..d {
        let mut e = vec![0.0; d];
        e[j] = 1.0;
        project_out(&mut e, found, d);
        let n = dot(&e, &e).sqrt();
        if n > best_norm {
            best_norm = n;
            best = e;
        }
    }
    best.iter().map(|x| x / best_norm).collect()
}

/// v ← v − Σ_k (u_kᵀ v) u_k over the orthonormal rows u_k of `basis` (twice, which makes
/// classical Gram–Schmidt as accurate as it needs to be here).
fn project_out(v: &mut [f64], basis: &[f64], d: usize) {
    for _ in 0..2 {
        for u in basis.chunks_exact(d) {
            let c = dot(u, v);
            for (vi, ui) in v.iter_mut().zip(u) {
                *vi -= c * ui;
            }
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn matvec(a: &[f64], d: usize, v: &[f64]) -> Vec<f64> {
    a.chunks_exact(d).map(|row| dot(row, v)).collect()
}

/// Fits PCA to row-major `x` (`d` values per row) with `params`.
///
/// Steps, in the order the GPU runs them: μ (if `center`), σ (if `standardize`, see
/// [`column_std`]), S = [`covariance`] of (X − μ)/σ with `params.ddof`, the full eigen-
/// decomposition of S (always: the explained-variance ratios and the noise variance need the
/// whole spectrum, clamped at 0 since S is positive semi-definite), M from
/// `params.components` (`Fraction(f)`: [`components_for_fraction`] over the first
/// min(N, D) ratios; `Mle`: [`probabilistic::minka_dimension`]), and the M components from the full decomposition, or from
/// [`power_iteration_deflation`] (with `tol`, `max_iter` and `seed`) when `params.solver` is
/// [`PcaSolver::Power`] (its eigenvalues then give `explained_variance`). Every other solver
/// uses the full decomposition here. Signs are fixed with [`linalg::flip_signs`].
///
/// Errors: [`Error::EmptyData`] for no rows or no features, [`Error::Shape`] when `x.len()`
/// is not a multiple of `d`, [`Error::NonFinite`] with the row and column of the first NaN or
/// infinity, whatever [`Pca::validate`] reports, and the power iteration's non-convergence.
/// Whitening accepts components of any variance (see [`transform`]).
pub fn fit(x: &[f64], d: usize, params: &Pca) -> Result<ReferencePca> {
    crate::data::validate_row_major(x, d)?;
    let n = x.len() / d;
    params.validate(n, d)?;

    let mean = if params.center {
        column_means(x, d)
    } else {
        vec![0.0; d]
    };
    let scale = if params.standardize {
        column_std(x, d)
    } else {
        vec![1.0; d]
    };
    let xs = scaled(x, d, &mean, &scale);
    // xs is already centred (or meant to stay uncentred), so no second mean here.
    let s = covariance(&xs, d, None, params.ddof);

    let (mut eigenvalues, eigenvectors) = linalg::symmetric_eigen(&s, d).ok_or_else(|| {
        Error::invalid(
            "data",
            "the covariance's eigendecomposition did not converge",
        )
    })?;
    for l in &mut eigenvalues {
        // S is positive semi-definite; a negative eigenvalue is rounding around zero.
        *l = l.max(0.0);
    }
    let total: f64 = (0..d).map(|i| s[i * d + i]).sum();
    // All-constant data has no variance to explain: ratios 0 rather than 0/0.
    let ratio = |l: f64| if total > 0.0 { l / total } else { 0.0 };
    let k_all = n.min(d);
    let all_ratios: Vec<f64> = eigenvalues[..k_all].iter().map(|&l| ratio(l)).collect();

    let m = match params.components {
        Components::Count(m) => m,
        Components::Fraction(f) => components_for_fraction(&all_ratios, f),
        Components::Mle => probabilistic::minka_dimension(&eigenvalues[..k_all], n),
    };

    let (explained_variance, mut components) = if params.solver == PcaSolver::Power {
        let (values, vectors) =
            power_iteration_deflation(&s, d, m, params.tol, params.max_iter, params.seed)?;
        (values.iter().map(|l| l.max(0.0)).collect(), vectors)
    } else {
        (eigenvalues[..m].to_vec(), eigenvectors[..m * d].to_vec())
    };
    linalg::flip_signs(&mut components, d);

    let explained_variance_ratio = explained_variance.iter().map(|&l| ratio(l)).collect();
    let dof = n as f64 - params.ddof as f64;
    let singular_values = explained_variance
        .iter()
        .map(|&l| (l * dof).sqrt())
        .collect();
    let rest = &eigenvalues[m..k_all];
    let noise_variance = if rest.is_empty() {
        0.0
    } else {
        rest.iter().sum::<f64>() / rest.len() as f64
    };

    Ok(ReferencePca {
        components,
        explained_variance,
        explained_variance_ratio,
        singular_values,
        mean,
        scale,
        noise_variance,
        n_components: m,
        n_samples: n,
    })
}

/// (x − μ) / σ column by column.
fn scaled(x: &[f64], d: usize, mean: &[f64], scale: &[f64]) -> Vec<f64> {
    x.chunks_exact(d)
        .flat_map(|row| {
            row.iter()
                .zip(mean)
                .zip(scale)
                .map(|((v, m), s)| (v - m) / s)
        })
        .collect()
}

/// Projects row-major `x` (`d` features) on the model's components: N x M row-major
/// z = ((x − μ) / σ) Uᵀ, each column divided by max(√λ_k, ε₃₂) when `whiten` (scikit-learn's
/// clip at the machine epsilon of the data's f32, so a component of zero variance gives finite
/// projections).
///
/// # Panics
///
/// If `d` is not the model's feature count.
pub fn transform(model: &ReferencePca, x: &[f64], d: usize, whiten: bool) -> Vec<f64> {
    assert_eq!(d, model.mean.len(), "feature count mismatch");
    let m = model.n_components;
    let xs = scaled(x, d, &model.mean, &model.scale);
    let mut z = Vec::with_capacity(xs.len() / d.max(1) * m);
    for row in xs.chunks_exact(d) {
        for (k, u) in model.components.chunks_exact(d).enumerate() {
            let p = dot(row, u);
            z.push(if whiten {
                p / model.explained_variance[k].sqrt().max(f32::EPSILON as f64)
            } else {
                p
            });
        }
    }
    z
}

/// Maps projections back to feature space: N x D row-major x = (z U) σ + μ, with z first
/// multiplied by √λ_k per column when `whiten` (the inverse of [`transform`] with the same
/// flag; exact when M = D, the orthogonal projection onto the component span otherwise).
pub fn inverse_transform(model: &ReferencePca, z: &[f64], whiten: bool) -> Vec<f64> {
    let m = model.n_components;
    let d = model.mean.len();
    if m == 0 {
        return Vec::new();
    }
    let mut x = Vec::with_capacity(z.len() / m * d);
    for zrow in z.chunks_exact(m) {
        let mut row = vec![0.0; d];
        for (k, u) in model.components.chunks_exact(d).enumerate() {
            let c = if whiten {
                zrow[k] * model.explained_variance[k].sqrt()
            } else {
                zrow[k]
            };
            for (r, ui) in row.iter_mut().zip(u) {
                *r += c * ui;
            }
        }
        for ((r, s), mu) in row.iter_mut().zip(&model.scale).zip(&model.mean) {
            *r = *r * s + mu;
        }
        x.extend_from_slice(&row);
    }
    x
}

/// How many components a variance fraction `f` keeps, from the explained-variance ratios of
/// all min(N, D) components (descending): scikit-learn's
/// `searchsorted(cumsum(ratios), f, side="right") + 1`, at most all of them, and all of them
/// for f ≥ 1 (100% means everything, whatever the rounding of the cumulative sum).
pub fn components_for_fraction(ratios: &[f64], f: f64) -> usize {
    if f >= 1.0 {
        return ratios.len();
    }
    let cumulative = ratios.iter().scan(0.0, |sum, r| {
        *sum += r;
        Some(*sum)
    });
    let at_or_below = cumulative.take_while(|&c| c <= f).count();
    (at_or_below + 1).min(ratios.len())
}
