//! Block power (subspace) iteration with Rayleigh–Ritz: V ← orth(S·V), with the Ritz pairs of
//! VᵀSV, until every wanted residual ‖S·uᵢ − θᵢuᵢ‖ ≤ tol·|θ₁| (parent module docs). S is an
//! operator the caller applies (a dense device matrix, or matrix-free Xsᵀ(Xs·V), module
//! `workspace`); spectral clustering runs the same iteration on its normalised affinity
//! ([`subspace_iteration`]). A leaf of its folder: it imports nothing else from `pca/`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::linalg;
use crate::linalg::SolverSettings;
use crate::progress::{fit_done, Progress};

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
    let p = d.min((2 * m).max(m + 8));
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let mut v = random_orthonormal(&mut rng, p, d)?;
    let mut residual = f64::INFINITY;
    let progress = Progress::new(params.algorithm, 0, params.on_iteration);
    let began = std::time::Instant::now();
    let mut previous_top = f64::NAN;
    for it in 1..=params.max_iter {
        let mut w = apply(&v, p)?;
        // The Ritz values and the residuals from p x p matrices (V has orthonormal rows);
        // the Ritz vectors only once they are the answer.
        let step = linalg::ritz_step(&v, &w, p, d)?;
        let theta = &step.theta;
        let scale = theta[0].abs().max(f64::MIN_POSITIVE);
        residual = step.residuals(m).into_iter().fold(0.0f64, f64::max) / scale;
        let flow = progress.iteration(it, residual, theta[0] - previous_top);
        previous_top = theta[0];
        if residual <= params.tol || flow.is_break() {
            fit_done(params.algorithm, 0, d, it, residual <= params.tol, began);
            return Ok((theta[..m].to_vec(), step.vectors(&v, m, d), it));
        }
        orthonormalize_or_refill(&mut w, step.gram(), p, d, &mut rng)?;
        v = w;
    }
    Err(Error::NotConverged {
        what: params.what,
        residual,
        iterations: params.max_iter,
    })
}
