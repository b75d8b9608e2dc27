//! The eigen-solver of spectral clustering: LOBPCG (Knyazev 2001, "Toward the optimal
//! preconditioned eigensolver: locally optimal block preconditioned conjugate gradient
//! method", SIAM J. Sci. Comput. 23(2)), without a preconditioner, for the `p` largest
//! eigenpairs of a symmetric operator M that the caller applies (on the device).
//!
//! Each iteration takes the Rayleigh–Ritz pairs of M on the span of three blocks:
//! - X, the current Ritz vectors (N x p, orthonormal), and AX = M·X;
//! - W, the residuals R = AX − XΘ of the columns not yet converged ("soft locking": a
//!   converged column stays in X and in the Rayleigh–Ritz, but stops adding search
//!   directions, as scipy's `lobpcg` does), made orthonormal against X, P and themselves
//!   (classical Gram–Schmidt twice; a column with nothing left is dropped); AW = M·W is the
//!   one operator product of the iteration;
//! - P, the previous step's implicit direction: the part of the new Ritz vectors that came
//!   from W and P, orthonormalised against the new X in the small coefficient space.
//!   AP is carried by the same linear combinations, never recomputed.
//!
//! The projected problem SᵀMS c = θ SᵀS c (S = [X W P], at most 3p columns) is solved in f64
//! on the host through the Cholesky factor of the Gram matrix SᵀS (which is I up to rounding);
//! should that factor not exist (the basis lost its independence), the iteration drops P and
//! retries with [X W], as scipy's implementation restarts. The convergence rate of the k-th
//! wanted pair then depends on roughly √((θₖ − θₚ₊₁)/(θ₁ − θ_min)) per operator product, the
//! conjugate-gradient rate, where block power iteration has (θₚ₊₁/θₖ) (Knyazev & Neymeyr 2003):
//! on the two moons at 5000 points the Laplacian gap is about 1e-4, 3000 power steps are too
//! few, LOBPCG needs a few hundred.
//!
//! **Stopping** (the crate's `tol`/`max_iter` semantics, as for PCA's power iteration): every
//! wanted residual ‖M·uᵢ − θᵢuᵢ‖ ≤ tol·|θ₁|, with ‖uᵢ‖ = 1. AX is carried through linear
//! combinations between products, so before claiming convergence the solver applies M to X
//! afresh and checks the residuals of that product; not converging in `max_iter` iterations is
//! [`Error::NotConverged`], never a silently unconverged answer.

use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::linalg::symmetric_eigen;
use crate::linalg::SolverSettings;
use crate::progress::{fit_done, Progress};

/// A column whose norm falls below this fraction of its norm before orthogonalisation has
/// nothing independent left and is dropped.
const DROP: f64 = 1e-10;

/// The solution: the `k` largest Ritz values (descending), their vectors (N x k, columns)
/// and the iterations taken.
pub(crate) struct Eigenpairs {
    pub values: Vec<f64>,
    pub vectors: DMatrix<f64>,
    pub n_iter: usize,
}

/// AᵀB for tall A and B (N x a, N x b) through nalgebra's blocked product (matrixmultiply):
/// its `tr_mul` takes one dot product per entry, several times slower at these shapes, and
/// was a quarter of a spectral fit's time on a 5000-point graph.
fn t_mul(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    a.transpose() * b
}

/// Removes from the columns of `w` their components along the orthonormal columns of each
/// block in `against` (twice, classical Gram–Schmidt), then makes them orthonormal among
/// themselves, dropping the dependent ones. Returns the kept columns.
fn orthonormal_complement(w: &DMatrix<f64>, against: &[&DMatrix<f64>]) -> DMatrix<f64> {
    let before: Vec<f64> = w.column_iter().map(|c| c.norm()).collect();
    let mut w = w.clone();
    for _ in 0..2 {
        for b in against {
            if b.ncols() > 0 {
                let coef = t_mul(b, &w);
                w -= *b * coef;
            }
        }
    }
    let mut kept: Vec<nalgebra::DVector<f64>> = Vec::new();
    for (j, col) in w.column_iter().enumerate() {
        let mut v = col.into_owned();
        for _ in 0..2 {
            for q in &kept {
                let c = q.dot(&v);
                v.axpy(-c, q, 1.0);
            }
        }
        let norm = v.norm();
        if norm.is_finite() && norm > DROP * before[j] && norm > 0.0 {
            kept.push(v / norm);
        }
    }
    if kept.is_empty() {
        // nalgebra builds no matrix from zero columns.
        return DMatrix::zeros(w.nrows(), 0);
    }
    DMatrix::from_columns(&kept)
}

/// The same orthonormalisation on small coefficient columns `z` against the orthonormal
/// columns of `c`, returning the kept columns (the coefficient space has the Euclidean inner
/// product because the basis S is orthonormal).
fn complement_coefficients(z: &DMatrix<f64>, c: &DMatrix<f64>) -> DMatrix<f64> {
    orthonormal_complement(z, &[c])
}

/// Side-by-side concatenation of blocks with the same number of rows.
fn hcat(blocks: &[&DMatrix<f64>]) -> DMatrix<f64> {
    let n = blocks[0].nrows();
    let cols: usize = blocks.iter().map(|b| b.ncols()).sum();
    let mut out = DMatrix::zeros(n, cols);
    let mut at = 0;
    for b in blocks {
        out.columns_mut(at, b.ncols()).copy_from(b);
        at += b.ncols();
    }
    out
}

/// Rayleigh–Ritz on the basis S with images AS: the top `p` pairs of SᵀAS c = θ SᵀS c,
/// descending, as (θ, C) with C (cols(S) x p) SᵀS-orthonormal. `None` when SᵀS has no
/// Cholesky factor (the basis is numerically dependent).
fn rayleigh_ritz(
    s: &DMatrix<f64>,
    a_s: &DMatrix<f64>,
    p: usize,
) -> Result<Option<(Vec<f64>, DMatrix<f64>)>> {
    let m = s.ncols();
    let gram = t_mul(s, s);
    let h = t_mul(s, a_s);
    let h = (&h + h.transpose()) * 0.5;
    let Some(chol) = nalgebra::Cholesky::new(gram) else {
        return Ok(None);
    };
    let l = chol.l();
    // H' = L⁻¹ H L⁻ᵀ = L⁻¹ (L⁻¹ H)ᵀ for symmetric H.
    let Some(t) = l.solve_lower_triangular(&h) else {
        return Ok(None);
    };
    let Some(hp) = l.solve_lower_triangular(&t.transpose()) else {
        return Ok(None);
    };
    let hp = (&hp + hp.transpose()) * 0.5;
    if hp.iter().any(|v| !v.is_finite()) {
        return Ok(None);
    }
    // Column-major storage of a symmetric matrix is its row-major storage.
    let (values, vectors) = symmetric_eigen(hp.as_slice(), m)?;
    let y = DMatrix::from_fn(m, p, |i, j| vectors[j * m + i]);
    let Some(c) = l.tr_solve_lower_triangular(&y) else {
        return Ok(None);
    };
    Ok(Some((values[..p].to_vec(), c)))
}

/// The residual norms ‖AX_j − θ_j X_j‖ of every column.
fn residual_norms(x: &DMatrix<f64>, ax: &DMatrix<f64>, theta: &[f64]) -> (DMatrix<f64>, Vec<f64>) {
    let mut r = ax.clone();
    for (j, t) in theta.iter().enumerate() {
        r.column_mut(j).axpy(-t, &x.column(j), 1.0);
    }
    let norms = r.column_iter().map(|c| c.norm()).collect();
    (r, norms)
}

/// The `k` largest eigenpairs of the symmetric N x N operator `apply` (which maps an N x m
/// block V to M·V), iterating a block of `p ≥ k` vectors (the extra ones guard the k-th
/// eigenvalue's convergence). See the module docs for the method and the stopping rule.
///
/// Errors: [`Error::NotConverged`] after `max_iter` iterations (or when the basis cannot be
/// repaired); whatever `apply` returns.
#[cfg(test)]
pub(crate) fn lobpcg(
    n: usize,
    k: usize,
    p: usize,
    settings: &SolverSettings<'_>,
    apply: impl FnMut(&DMatrix<f64>) -> Result<DMatrix<f64>>,
) -> Result<Eigenpairs> {
    lobpcg_from(n, k, p, settings, &DMatrix::zeros(n, 0), apply)
}

/// [`lobpcg`] starting from the columns of `known` (N x c, vectors believed to be
/// eigenvectors or near them; at most p are used), completed with random columns from the
/// seed. With no known columns the start is the random block alone.
pub(crate) fn lobpcg_from(
    n: usize,
    k: usize,
    p: usize,
    settings: &SolverSettings<'_>,
    known: &DMatrix<f64>,
    mut apply: impl FnMut(&DMatrix<f64>) -> Result<DMatrix<f64>>,
) -> Result<Eigenpairs> {
    let p = p.clamp(k, n);
    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
    let given = known.ncols().min(p);
    let start = DMatrix::from_fn(n, p, |i, j| {
        if j < given {
            known[(i, j)]
        } else {
            rng.random_range(-1.0..1.0)
        }
    });
    let empty = DMatrix::<f64>::zeros(n, 0);
    let mut x = orthonormal_complement(&start, &[]);
    if x.ncols() < p {
        return Err(Error::invalid(
            "data",
            "the random start block is degenerate",
        ));
    }
    let mut ax = apply(&x)?;
    let (mut theta, c) =
        rayleigh_ritz(&x, &ax, p)?.ok_or_else(|| not_converged(settings, f64::NAN, 0))?;
    x = &x * &c;
    ax = &ax * &c;
    let (mut p_dir, mut ap) = (empty.clone(), empty.clone());
    let progress = Progress::new(settings.algorithm, 0, settings.on_iteration);
    let began = std::time::Instant::now();
    let mut previous_top = f64::NAN;
    let mut residual = f64::INFINITY;
    for it in 1..=settings.max_iter {
        let scale = theta[0].abs().max(f64::MIN_POSITIVE);
        let (mut r, mut norms) = residual_norms(&x, &ax, &theta);
        residual = norms[..k].iter().fold(0.0f64, |m, v| m.max(v / scale));
        if residual.is_nan() {
            return Err(not_converged(settings, residual, it));
        }
        if residual <= settings.tol {
            // AX was carried by linear combinations: confirm with a fresh product.
            ax = apply(&x)?;
            (r, norms) = residual_norms(&x, &ax, &theta);
            residual = norms[..k].iter().fold(0.0f64, |m, v| m.max(v / scale));
        }
        let flow = progress.iteration(it, residual, theta[0] - previous_top);
        previous_top = theta[0];
        if residual <= settings.tol || flow.is_break() {
            fit_done(
                settings.algorithm,
                n,
                0,
                it,
                residual <= settings.tol,
                began,
            );
            return Ok(Eigenpairs {
                values: theta[..k].to_vec(),
                vectors: x.columns(0, k).into_owned(),
                n_iter: it,
            });
        }
        // Soft locking: only the columns not yet converged search further.
        let active: Vec<usize> = (0..p)
            .filter(|&j| norms[j] / scale > settings.tol)
            .collect();
        let r_active = r.select_columns(&active);
        let w = orthonormal_complement(&r_active, &[&x, &p_dir]);
        let aw = if w.ncols() > 0 {
            apply(&w)?
        } else {
            empty.clone()
        };
        let mut solved = None;
        for with_p in [true, false] {
            let (s, a_s) = if with_p {
                (hcat(&[&x, &w, &p_dir]), hcat(&[&ax, &aw, &ap]))
            } else {
                let w = orthonormal_complement(&r_active, &[&x]);
                let aw = if w.ncols() > 0 {
                    apply(&w)?
                } else {
                    empty.clone()
                };
                (hcat(&[&x, &w]), hcat(&[&ax, &aw]))
            };
            if let Some(found) = rayleigh_ritz(&s, &a_s, p)? {
                solved = Some((s, a_s, found));
                break;
            }
        }
        let Some((s, a_s, (values, c))) = solved else {
            return Err(not_converged(settings, residual, it));
        };
        theta = values;
        x = &s * &c;
        ax = &a_s * &c;
        // P: the new vectors' W and P parts for the active columns, orthonormal to the new X.
        let mut z = c.select_columns(&active);
        z.rows_mut(0, p).fill(0.0);
        let z = complement_coefficients(&z, &c);
        p_dir = &s * &z;
        ap = &a_s * &z;
    }
    Err(not_converged(settings, residual, settings.max_iter))
}

fn not_converged(settings: &SolverSettings<'_>, residual: f64, iterations: usize) -> Error {
    Error::NotConverged {
        what: settings.what,
        residual,
        iterations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Algorithm;

    fn settings(tol: f64, max_iter: usize) -> SolverSettings<'static> {
        SolverSettings {
            tol,
            max_iter,
            seed: 7,
            algorithm: Algorithm::SpectralClustering,
            on_iteration: None,
            what: "test",
        }
    }

    /// A path graph's normalised adjacency: eigenvalues cos(πj/(n−1)), a gap of O(1/n²) at
    /// the top, the hard case for power iteration.
    fn path(n: usize) -> impl FnMut(&DMatrix<f64>) -> Result<DMatrix<f64>> {
        move |v: &DMatrix<f64>| {
            let deg = |i: usize| if i == 0 || i == n - 1 { 1.0 } else { 2.0f64 };
            Ok(DMatrix::from_fn(n, v.ncols(), |i, c| {
                let mut s = 0.0;
                if i > 0 {
                    s += v[(i - 1, c)] / (deg(i) * deg(i - 1)).sqrt();
                }
                if i + 1 < n {
                    s += v[(i + 1, c)] / (deg(i) * deg(i + 1)).sqrt();
                }
                s
            }))
        }
    }

    #[test]
    fn finds_the_top_of_a_path_graph_spectrum() {
        let n = 400;
        let pairs = lobpcg(n, 3, 10, &settings(1e-8, 2000), path(n)).unwrap();
        for (j, v) in pairs.values.iter().enumerate() {
            let exact = (std::f64::consts::PI * j as f64 / (n - 1) as f64).cos();
            assert!((v - exact).abs() < 1e-9, "{j}: {v} vs {exact}");
        }
        let gram = pairs.vectors.tr_mul(&pairs.vectors);
        assert!((gram - DMatrix::identity(3, 3)).amax() < 1e-10);
        let mut op = path(n);
        let mv = op(&pairs.vectors).unwrap();
        for j in 0..3 {
            let r = mv.column(j) - pairs.vectors.column(j) * pairs.values[j];
            assert!(r.norm() <= 1e-8, "{j}");
        }
    }

    #[test]
    fn too_few_iterations_is_an_error_and_the_seed_fixes_the_bits() {
        let n = 300;
        match lobpcg(n, 2, 4, &settings(1e-12, 3), path(n)) {
            Err(Error::NotConverged { iterations, .. }) => assert_eq!(iterations, 3),
            other => panic!("expected NotConverged, got {:?}", other.map(|e| e.values)),
        }
        let a = lobpcg(n, 2, 6, &settings(1e-8, 2000), path(n)).unwrap();
        let b = lobpcg(n, 2, 6, &settings(1e-8, 2000), path(n)).unwrap();
        assert_eq!(a.vectors, b.vectors);
        assert_eq!(a.n_iter, b.n_iter);
    }

    #[test]
    fn a_block_as_wide_as_the_space_is_exact() {
        let n = 6;
        let pairs = lobpcg(n, 2, 50, &settings(1e-10, 50), path(n)).unwrap();
        assert!((pairs.values[0] - 1.0).abs() < 1e-12);
        assert!(pairs.n_iter <= 2);
    }
}
