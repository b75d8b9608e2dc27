//! Block power (subspace) iteration with Rayleigh–Ritz: V ← orth(S·V), with the Ritz pairs of
//! VᵀSV, until every wanted residual ‖S·uᵢ − θᵢuᵢ‖ ≤ tol·|θ₁| (parent module docs). S is an
//! operator the caller applies (a dense device matrix, or matrix-free Xsᵀ(Xs·V), module
//! `workspace`); spectral clustering runs the same iteration on its normalised affinity
//! ([`subspace_iteration`]). A leaf of its folder: it imports nothing else from `pca/`.
//!
//! **Steps on the device between checks** ([`subspace_iteration_ahead`]). A check is a
//! round trip and a few p x p x d products on the host; a product S·V at d = 784, p = 100 is
//! tens of microseconds on a GPU. An operator that can orthonormalise on the device (Cholesky
//! QR, `kernels::linalg::cholesky_qr`) therefore takes several products per check: as many
//! as the Ritz values say the slowest wanted pair needs to reach `tol`, at the rate
//! θ_p/θ_k per product (the convergence rate λ_{p+1}/λ_k of subspace iteration, estimated
//! from above), half as many again and one for the estimate's sake, at most [`MAX_STEPS_PER_CHECK`].
//! The block it hands the device is in the Ritz basis (the images S·uₖ, orthonormalised on
//! the host), where the columns the device orthonormalises are nearly orthogonal already
//! (their Gram matrix is Θ² plus the residuals' products), so f32 Cholesky QR loses nothing
//! that matters; in that basis each further step keeps them so, since orthonormalising in
//! order converges the block vector by vector. The check orthonormalises the device's block in
//! f64 and moves its images with it (S is linear), so its Ritz pairs are those of the block
//! the device multiplied. A breakdown on the device (a column it could not orthonormalise:
//! S of rank below p) discards the steps, and the iteration goes on one product per check,
//! refilling such directions on the host.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::linalg;
use crate::linalg::SolverSettings;
use crate::progress::{fit_done, Progress};

/// The most products the device takes between two checks.
pub(crate) const MAX_STEPS_PER_CHECK: usize = 64;

/// What an operator gives back for `steps` products from an orthonormal block V.
pub(crate) struct Advanced {
    /// The block the last product multiplied, p rows of d, when it is not V (steps > 1):
    /// orthonormal only to the device's rounding.
    pub basis: Option<Vec<f64>>,
    /// Its image S·(basis), p rows of d.
    pub image: Vec<f64>,
    /// The device met a column it could not orthonormalise: discard this result.
    pub breakdown: bool,
}

/// The block the iteration runs for `m` wanted vectors of length `d`: twice as many, at least
/// 8 more, at most d (the extra vectors set the convergence rate λ_{p+1}/λ_m).
pub(crate) fn block_size(d: usize, m: usize) -> usize {
    d.min((2 * m).max(m + 8))
}

/// Fresh random rows in [−1, 1), made orthonormal.
fn random_orthonormal(rng: &mut ChaCha8Rng, p: usize, d: usize) -> Result<Vec<f64>> {
    let mut v: Vec<f64> = (0..p * d).map(|_| rng.random_range(-1.0..1.0)).collect();
    linalg::orthonormalize_rows(&mut v, p, d)?;
    Ok(v)
}

/// Orthonormalises `w` (p rows of d, whose Gram matrix W Wᵀ is `gram`) in place;
/// directions S annihilates (rank below p) are refilled with random ones, which leaves the
/// wanted leading subspace untouched.
fn orthonormalize_or_refill(
    w: &mut [f64],
    gram: &nalgebra::DMatrix<f64>,
    p: usize,
    d: usize,
    rng: &mut ChaCha8Rng,
) -> Result<()> {
    if linalg::orthonormalize_rows_with_gram(w, gram, p, d).is_ok() {
        return Ok(());
    }
    let norm = w.iter().map(|v| v * v).sum::<f64>().sqrt().max(1.0);
    for v in w.iter_mut() {
        *v += 1e-6 * norm * rng.random_range(-1.0..1.0);
    }
    linalg::orthonormalize_rows(w, p, d)
}

/// Block power iteration with Rayleigh–Ritz. `apply` maps p row vectors V (p x d) to the
/// rows of S·V (p x d). Returns the top `m` Ritz values, vectors (m x d) and iterations.
pub(crate) fn subspace_iteration(
    d: usize,
    m: usize,
    params: &SolverSettings<'_>,
    mut apply: impl FnMut(&[f64], usize) -> Result<Vec<f64>>,
) -> Result<(Vec<f64>, Vec<f64>, usize)> {
    subspace_iteration_ahead(d, m, params, 1, |v, p, _| {
        Ok(Advanced {
            basis: None,
            image: apply(v, p)?,
            breakdown: false,
        })
    })
}

/// [`subspace_iteration`] with up to `max_steps` products between checks (module docs):
/// `advance(V, p, steps)` takes `steps` products from the orthonormal rows V, orthonormalising
/// between them, and returns the last block it multiplied with its image. With
/// `max_steps` = 1 this is the plain iteration, one product and one check each.
pub(crate) fn subspace_iteration_ahead(
    d: usize,
    m: usize,
    params: &SolverSettings<'_>,
    max_steps: usize,
    mut advance: impl FnMut(&[f64], usize, usize) -> Result<Advanced>,
) -> Result<(Vec<f64>, Vec<f64>, usize)> {
    let p = block_size(d, m);
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let mut v = random_orthonormal(&mut rng, p, d)?;
    let mut residual = f64::INFINITY;
    let progress = Progress::new(params.algorithm, 0, params.on_iteration);
    let began = std::time::Instant::now();
    let mut previous_top = f64::NAN;
    let (mut it, mut steps, mut max_steps) = (0, 1, max_steps.max(1));
    while it < params.max_iter {
        let got = advance(&v, p, steps)?;
        let (basis, mut image) = match got.basis {
            None => (v, got.image),
            Some(mut q) => {
                let mut image = got.image;
                let finite = q.iter().chain(&image).all(|v| v.is_finite());
                if got.breakdown
                    || !finite
                    || !linalg::orthonormalize_with_images(&mut q, &mut image, p, d)?
                {
                    // S has directions the device cannot orthonormalise (or f32 overflowed
                    // there): one product per check from here, the host refilling them.
                    (steps, max_steps) = (1, 1);
                    continue;
                }
                (q, image)
            }
        };
        it += steps;
        // The Ritz values and the residuals from p x p matrices (the block has orthonormal
        // rows); the Ritz vectors only once they are the answer.
        let step = linalg::ritz_step(&basis, &image, p, d)?;
        let theta = &step.theta;
        let scale = theta[0].abs().max(f64::MIN_POSITIVE);
        let residuals: Vec<f64> = step.residuals(m).iter().map(|r| r / scale).collect();
        residual = residuals.iter().copied().fold(0.0f64, f64::max);
        let flow = progress.iteration(it, residual, theta[0] - previous_top);
        previous_top = theta[0];
        if residual <= params.tol || flow.is_break() {
            fit_done(params.algorithm, 0, d, it, residual <= params.tol, began);
            return Ok((theta[..m].to_vec(), step.vectors(&basis, m, d), it));
        }
        if max_steps > 1 {
            // The next block in the Ritz basis: images S·uₖ, nearly orthogonal already.
            let (mut z, gram) = step.ritz_images(&image, d);
            orthonormalize_or_refill(&mut z, &gram, p, d, &mut rng)?;
            v = z;
            steps =
                planned_steps(theta, &residuals, params.tol, max_steps).min(params.max_iter - it);
        } else {
            orthonormalize_or_refill(&mut image, step.gram(), p, d, &mut rng)?;
            v = image;
        }
    }
    Err(Error::NotConverged {
        what: params.what,
        residual,
        iterations: params.max_iter,
    })
}

/// Products until the next check (module docs): for each wanted pair k still above `tol`,
/// ln(tol/rₖ)/ln(θ_p/θₖ) at the rate the Ritz values give; the most of them, half as many
/// again and one (a product costs the GPU far less than a check costs the host), within
/// 1..=`max_steps`.
fn planned_steps(theta: &[f64], residuals: &[f64], tol: f64, max_steps: usize) -> usize {
    let slowest = theta.last().map_or(0.0, |t| t.abs());
    let mut need = 0.0f64;
    for (&t, &r) in theta.iter().zip(residuals) {
        if r <= tol {
            continue;
        }
        let rate = slowest / t.abs();
        let products = if rate < 1.0 {
            (tol / r).ln() / rate.ln()
        } else {
            f64::INFINITY
        };
        need = need.max(products);
    }
    let planned = (need * 1.5).ceil() + 1.0;
    if planned.is_finite() {
        (planned as usize).clamp(1, max_steps)
    } else {
        max_steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Algorithm;

    /// S = Eᵀ·diag(λ)·E (d x d) for orthonormal rows E and λᵢ = 0.97^i: known eigenpairs,
    /// close enough that the iteration needs tens of products.
    fn known_spectrum(d: usize, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let e = random_orthonormal(&mut rng, d, d).unwrap();
        let lambda: Vec<f64> = (0..d).map(|i| 0.97f64.powi(i as i32)).collect();
        let mut s = vec![0.0; d * d];
        for (k, &l) in lambda.iter().enumerate() {
            let row = &e[k * d..(k + 1) * d];
            for i in 0..d {
                for j in 0..d {
                    s[i * d + j] += l * row[i] * row[j];
                }
            }
        }
        (s, lambda, e)
    }

    /// Rows S·vᵢ.
    fn product(s: &[f64], v: &[f64], p: usize, d: usize) -> Vec<f64> {
        let mut w = vec![0.0; p * d];
        for r in 0..p {
            for i in 0..d {
                w[r * d + i] = (0..d).map(|j| s[i * d + j] * v[r * d + j]).sum();
            }
        }
        w
    }

    fn settings() -> SolverSettings<'static> {
        SolverSettings {
            tol: 1e-7,
            max_iter: 2000,
            seed: 3,
            algorithm: Algorithm::Pca,
            on_iteration: None,
            what: "test power iteration",
        }
    }

    /// How the stand-in for the device fails its rounds of more than one product.
    #[derive(Clone, Copy, PartialEq)]
    enum Fails {
        Never,
        /// It reports a breakdown.
        Flagged,
        /// Its image overflows to infinity, unreported.
        Overflows,
    }

    /// Runs the iteration with a host stand-in for the device: `steps` products, the block
    /// orthonormalised between them (slightly off orthonormal, as f32 would leave it),
    /// failing as `fails` says. Returns the result and the steps of every round.
    #[allow(clippy::type_complexity)]
    fn run(
        s: &[f64],
        d: usize,
        m: usize,
        max_steps: usize,
        fails: Fails,
    ) -> ((Vec<f64>, Vec<f64>, usize), Vec<usize>) {
        let mut rounds = Vec::new();
        let out = subspace_iteration_ahead(d, m, &settings(), max_steps, |v, p, steps| {
            rounds.push(steps);
            let mut q = v.to_vec();
            let mut w = product(s, &q, p, d);
            for _ in 1..steps {
                linalg::orthonormalize_rows(&mut w, p, d)?;
                q = w
                    .iter()
                    .enumerate()
                    .map(|(e, x)| x * (1.0 + 1e-9 * ((e % 7) as f64 - 3.0)))
                    .collect();
                w = product(s, &q, p, d);
            }
            if fails == Fails::Overflows && steps > 1 {
                w[0] = f64::INFINITY;
            }
            Ok(Advanced {
                basis: (steps > 1).then_some(q),
                image: w,
                breakdown: fails == Fails::Flagged && steps > 1,
            })
        })
        .unwrap();
        (out, rounds)
    }

    #[test]
    fn steps_between_checks_find_the_eigenpairs_with_few_checks() {
        for (d, m, seed) in [(30, 3, 1), (40, 6, 2)] {
            let (s, lambda, e) = known_spectrum(d, seed);
            let ((plain_values, _, plain_it), plain_rounds) = run(&s, d, m, 1, Fails::Never);
            let ((values, vectors, it), rounds) = run(&s, d, m, MAX_STEPS_PER_CHECK, Fails::Never);
            assert_eq!(plain_rounds.len(), plain_it);
            assert_eq!(rounds.iter().sum::<usize>(), it);
            assert!(
                rounds.len() * 4 <= plain_rounds.len(),
                "{rounds:?} vs {plain_it}"
            );
            for k in 0..m {
                assert!((values[k] - lambda[k]).abs() < 1e-8, "{k}: {}", values[k]);
                assert!((plain_values[k] - lambda[k]).abs() < 1e-8);
                let cos: f64 = (0..d).map(|j| vectors[k * d + j] * e[k * d + j]).sum();
                assert!((cos.abs() - 1.0).abs() < 1e-7, "{k}: cos {cos}");
            }
        }
    }

    #[test]
    fn a_breakdown_on_the_device_falls_back_to_a_product_per_check() {
        let d = 30;
        let (s, lambda, _) = known_spectrum(d, 4);
        for fails in [Fails::Flagged, Fails::Overflows] {
            let ((values, _, it), rounds) = run(&s, d, 3, MAX_STEPS_PER_CHECK, fails);
            // The first round is one product; the second asks for more, fails and is
            // discarded; every round after is one product.
            assert_eq!(rounds[0], 1);
            assert!(rounds[1] > 1, "{rounds:?}");
            assert!(rounds[2..].iter().all(|&s| s == 1), "{rounds:?}");
            assert_eq!(it, rounds.len() - 1);
            for k in 0..3 {
                assert!((values[k] - lambda[k]).abs() < 1e-8);
            }
        }
    }

    #[test]
    fn planned_steps_follow_the_ritz_rate_within_bounds() {
        // θ_p/θ_k = 0.5 for the first pair, residual 1e-1 to reach 1e-5: ln(1e-4)/ln(0.5) =
        // 13.3 products, half as many again and one: 21.
        assert_eq!(planned_steps(&[2.0, 1.9, 1.0], &[1e-1, 1e-6], 1e-5, 64), 21);
        // Every pair below tol already (a check the caller would have ended): one.
        assert_eq!(planned_steps(&[2.0, 1.0], &[1e-6], 1e-5, 64), 1);
        // No gap (θ_p = θ_k): the cap.
        assert_eq!(planned_steps(&[1.0, 1.0], &[1e-2], 1e-5, 64), 64);
        assert_eq!(planned_steps(&[1.0, 1.0], &[1e-2], 1e-5, 7), 7);
        // An exhausted spectrum past the block (θ_p = 0) converges in one product.
        assert_eq!(planned_steps(&[3.0, 0.0], &[1e-1], 1e-5, 64), 1);
    }
}
