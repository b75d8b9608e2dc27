//! Small dense host algebra in f64 on row-major slices, via `nalgebra`.
//!
//! The GPU does the O(N·D²) work (covariance, S·V products); what is left for the host is
//! small: D x D, M x M or K x D matrices. Those are handled here in f64 whatever the GPU
//! precision, so that the host steps add no error of their own worth speaking of.
//!
//! All matrices are flat row-major slices with their sizes passed alongside, the layout the
//! GPU buffers use; `nalgebra` (column-major) is only an implementation detail.
//!
//! * [`symmetric_eigen`]: A = Q Λ Qᵀ for a symmetric A (of (A + Aᵀ)/2, so that rounding
//!   asymmetry from a GPU reduction does not matter), eigenvalues λ₁ ≥ λ₂ ≥ … and the
//!   eigenvectors as rows.
//! * [`orthonormalize_rows`]: Householder QR of Vᵀ = Q R; the rows of Qᵀ span the same space
//!   as the rows of V and are orthonormal (the re-orthogonalisation step of block power
//!   iteration).
//! * [`rayleigh_ritz`]: given orthonormal rows V (m x n) and W = S·V (row i = S vᵢ), the
//!   projected matrix H = V S Vᵀ = V Wᵀ (m x m) is decomposed as H = Y Θ Yᵀ; the Ritz values
//!   θᵢ approximate the eigenvalues of S and the Ritz vectors U = Yᵀ V its eigenvectors. When
//!   the rows of V span an invariant subspace of S the Ritz pairs are exact eigenpairs.
//! * `projected_ritz`: the same Ritz pairs and their residuals from the p x p matrices a
//!   device reduces a d x p block to (H = QᵀSQ, G = QᵀQ, and the Gram matrix of the part of
//!   S·Q outside the block), for a block orthonormal only to f32 rounding.
//! * [`cholesky_lower`]: A = L Lᵀ with L lower triangular, for positive definite A.
//! * [`flip_signs`]: the sign convention of scikit-learn's `svd_flip` for components.
//! * `SolverSettings`: what the iterative eigen-solvers (PCA's power iteration, spectral
//!   clustering's LOBPCG) run for.
//!
//! No function panics on bad input: wrong lengths, non-finite values and failed
//! factorisations are [`Error`]s.

use nalgebra::DMatrix;

use crate::error::{Error, Result};
use crate::progress::{Algorithm, OnIteration};

mod projected;
mod subspace;

pub(crate) use projected::projected_ritz;

pub use subspace::{orthonormalize_rows, rayleigh_ritz};
pub(crate) use subspace::{orthonormalize_rows_with_gram, ritz_step};

/// What an iterative eigen-solver runs for (PCA's block power iteration, spectral
/// clustering's LOBPCG).
pub(crate) struct SolverSettings<'a> {
    /// Stop when every wanted residual ‖S·u − θu‖ ≤ tol·|θ₁|.
    pub tol: f64,
    /// Iteration cap (not converging is [`Error::NotConverged`]).
    pub max_iter: usize,
    /// Seed of the random start.
    pub seed: u64,
    /// Whose iterations these are, for the progress events.
    pub algorithm: Algorithm,
    /// The progress callback.
    pub on_iteration: Option<&'a OnIteration>,
    /// What did not converge, for the error.
    pub what: &'static str,
}

/// Checks that a flat matrix has `rows * cols` values, all finite.
fn check_matrix(name: &'static str, a: &[f64], rows: usize, cols: usize) -> Result<()> {
    let expected = rows.checked_mul(cols);
    if expected != Some(a.len()) {
        return Err(Error::invalid(
            name,
            format!(
                "expected a {rows} x {cols} row-major matrix ({} values), got {} values",
                expected.map_or_else(|| "too many".to_string(), |e| e.to_string()),
                a.len()
            ),
        ));
    }
    if cols > 0 {
        crate::data::check_finite(a, cols)?;
    }
    Ok(())
}

/// The symmetric part (A + Aᵀ)/2 of a row-major n x n matrix, as an nalgebra matrix.
fn symmetric_part(a: &[f64], n: usize) -> DMatrix<f64> {
    DMatrix::from_fn(n, n, |i, j| 0.5 * (a[i * n + j] + a[j * n + i]))
}

/// Eigendecomposition of a symmetric n x n matrix (row-major).
///
/// The matrix is symmetrised as (A + Aᵀ)/2 first: a covariance summed on the GPU need not
/// be bit-for-bit symmetric, and the decomposition assumes it is. Returns the eigenvalues
/// in descending order and the eigenvectors as the **rows** of an n x n row-major matrix
/// (row i is the unit eigenvector of eigenvalue i). The sign of each eigenvector is
/// whatever the algorithm gives; see [`flip_signs`] for a convention.
///
/// Errors: [`Error::InvalidParameter`] when `a` does not hold n² values or the iteration
/// does not converge (not seen for finite input), [`Error::NonFinite`] for a NaN or infinity.
pub fn symmetric_eigen(a: &[f64], n: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    check_matrix("matrix", a, n, n)?;
    if n == 0 {
        // nalgebra refuses an empty matrix; its decomposition is empty.
        return Ok((Vec::new(), Vec::new()));
    }
    // The implicit symmetric QR converges in a few sweeps per eigenvalue; the cap only keeps
    // a pathological input from looping forever (nalgebra's default has no cap).
    let max_sweeps = 1000 + 100 * n;
    let eig = nalgebra::SymmetricEigen::try_new(symmetric_part(a, n), f64::EPSILON, max_sweeps)
        .ok_or_else(|| {
            Error::invalid(
                "matrix",
                format!("symmetric eigendecomposition did not converge in {max_sweeps} sweeps"),
            )
        })?;

    let mut order: Vec<usize> = (0..n).collect();
    // Stable sort, so equal eigenvalues keep nalgebra's order and the result is reproducible.
    order.sort_by(|&p, &q| eig.eigenvalues[q].total_cmp(&eig.eigenvalues[p]));

    let values = order.iter().map(|&k| eig.eigenvalues[k]).collect();
    let mut vectors = Vec::with_capacity(n * n);
    for &k in &order {
        vectors.extend(eig.eigenvectors.column(k).iter());
    }
    Ok((values, vectors))
}

/// Cholesky factor of a symmetric positive definite n x n matrix (row-major): the lower
/// triangular L with A = L Lᵀ, row-major, zeros above the diagonal.
///
/// The matrix is symmetrised as (A + Aᵀ)/2 first, as in [`symmetric_eigen`].
///
/// Errors: `Error::invalid("covariance", "not positive definite ...")` when a pivot is not
/// positive (A is singular or indefinite, possibly only through rounding; a Gaussian
/// mixture would add a ridge to the diagonal and retry); [`Error::InvalidParameter`] for a
/// wrong length; [`Error::NonFinite`].
pub fn cholesky_lower(a: &[f64], n: usize) -> Result<Vec<f64>> {
    check_matrix("covariance", a, n, n)?;
    let chol = nalgebra::Cholesky::new(symmetric_part(a, n)).ok_or_else(|| {
        Error::invalid(
            "covariance",
            format!("not positive definite: the {n} x {n} Cholesky factorisation met a non-positive pivot"),
        )
    })?;
    let l = chol.l();
    let mut out = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            out[i * n + j] = l[(i, j)];
        }
    }
    Ok(out)
}

/// Makes the entry of largest absolute value in each of the m rows (length n) positive.
///
/// This is scikit-learn's `svd_flip` rule for PCA components (`u_based_decision=False`):
/// an eigenvector's sign is arbitrary, and fixing it this way makes results comparable
/// across solvers and libraries. Ties go to the first entry of that magnitude; a zero row
/// is left alone. Does nothing (rather than panic) when `rows.len() != m * n`.
pub fn flip_signs(rows: &mut [f64], m: usize, n: usize) {
    if n == 0 || m.checked_mul(n) != Some(rows.len()) {
        return;
    }
    for row in rows.chunks_exact_mut(n) {
        let mut best = 0;
        for (j, x) in row.iter().enumerate() {
            // Strict `>` keeps the first of equal magnitudes.
            if x.abs() > row[best].abs() {
                best = j;
            }
        }
        if row[best] < 0.0 {
            for x in row.iter_mut() {
                *x = -*x;
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    pub(super) fn random_matrix(rows: usize, cols: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
        (0..rows * cols)
            .map(|_| rng.random_range(-1.0..1.0))
            .collect()
    }

    pub(super) fn random_symmetric(n: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
        let b = random_matrix(n, n, rng);
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] = b[i * n + j] + b[j * n + i];
            }
        }
        a
    }

    pub(super) fn matvec(a: &[f64], n: usize, v: &[f64]) -> Vec<f64> {
        a.chunks_exact(n)
            .map(|row| row.iter().zip(v).map(|(x, y)| x * y).sum())
            .collect()
    }

    pub(super) fn frobenius(a: &[f64]) -> f64 {
        a.iter().map(|x| x * x).sum::<f64>().sqrt()
    }

    /// max |R Rᵀ − I| over the m rows of length n.
    pub(super) fn orthonormality_error(r: &[f64], m: usize, n: usize) -> f64 {
        let mut worst: f64 = 0.0;
        for i in 0..m {
            for j in 0..m {
                let dot: f64 = (0..n).map(|k| r[i * n + k] * r[j * n + k]).sum();
                let target = if i == j { 1.0 } else { 0.0 };
                worst = worst.max((dot - target).abs());
            }
        }
        worst
    }

    #[test]
    fn eigen_identities_on_random_symmetric_matrices() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for n in [1, 2, 3, 5, 10, 33, 64] {
            let a = random_symmetric(n, &mut rng);
            let (values, vectors) = symmetric_eigen(&a, n).unwrap();
            assert_eq!(values.len(), n);
            assert_eq!(vectors.len(), n * n);
            assert!(values.windows(2).all(|w| w[0] >= w[1]), "not descending");
            let tol = 1e-12 * n as f64 * frobenius(&a);
            for i in 0..n {
                let v = &vectors[i * n..(i + 1) * n];
                let av = matvec(&a, n, v);
                let err = av
                    .iter()
                    .zip(v)
                    .map(|(p, q)| (p - values[i] * q).abs())
                    .fold(0.0, f64::max);
                assert!(
                    err <= tol,
                    "n = {n}, i = {i}: |Av − λv| = {err:e} > {tol:e}"
                );
            }
            assert!(orthonormality_error(&vectors, n, n) < 1e-12 * n as f64);
            let trace: f64 = (0..n).map(|i| a[i * n + i]).sum();
            let sum: f64 = values.iter().sum();
            assert!((trace - sum).abs() <= tol);
        }
    }

    #[test]
    fn eigen_symmetrises_and_handles_known_cases() {
        // Only the symmetric part [[2, 1], [1, 2]] counts: eigenvalues 3 and 1.
        let a = [2.0, 0.5, 1.5, 2.0];
        let (values, vectors) = symmetric_eigen(&a, 2).unwrap();
        assert!((values[0] - 3.0).abs() < 1e-14 && (values[1] - 1.0).abs() < 1e-14);
        let s = std::f64::consts::FRAC_1_SQRT_2;
        assert!((vectors[0].abs() - s).abs() < 1e-14);
        assert!((vectors[0] - vectors[1]).abs() < 1e-14);
        // Empty and zero matrices.
        assert_eq!(symmetric_eigen(&[], 0).unwrap(), (vec![], vec![]));
        let (values, _) = symmetric_eigen(&[0.0; 9], 3).unwrap();
        assert_eq!(values, vec![0.0; 3]);
    }

    #[test]
    fn eigen_rejects_bad_input() {
        assert!(matches!(
            symmetric_eigen(&[1.0, 2.0, 3.0], 2),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            symmetric_eigen(&[1.0, f64::NAN, 0.0, 1.0], 2),
            Err(Error::NonFinite { row: 0, col: 1, .. })
        ));
        assert!(symmetric_eigen(&[1.0], usize::MAX).is_err());
    }

    #[test]
    fn cholesky_reproduces_the_matrix() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for n in [1, 2, 4, 9, 20] {
            // B Bᵀ + n I is comfortably positive definite.
            let b = random_matrix(n, n, &mut rng);
            let mut a = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    a[i * n + j] = (0..n).map(|k| b[i * n + k] * b[j * n + k]).sum::<f64>();
                }
                a[i * n + i] += n as f64;
            }
            let l = cholesky_lower(&a, n).unwrap();
            for i in 0..n {
                for j in 0..n {
                    if j > i {
                        assert_eq!(l[i * n + j], 0.0);
                    }
                    let llt: f64 = (0..n).map(|k| l[i * n + k] * l[j * n + k]).sum();
                    assert!((llt - a[i * n + j]).abs() < 1e-12 * frobenius(&a));
                }
                assert!(l[i * n + i] > 0.0);
            }
        }
    }

    #[test]
    fn cholesky_fails_on_indefinite_or_bad_input() {
        // Eigenvalues 3 and −1.
        let err = cholesky_lower(&[1.0, 2.0, 2.0, 1.0], 2).unwrap_err();
        match err {
            Error::InvalidParameter { name, reason } => {
                assert_eq!(name, "covariance");
                assert!(reason.starts_with("not positive definite"), "{reason}");
            }
            other => panic!("unexpected error {other}"),
        }
        // Singular (positive semi-definite) is refused too.
        assert!(cholesky_lower(&[1.0, 1.0, 1.0, 1.0], 2).is_err());
        assert!(cholesky_lower(&[1.0, 0.0, 0.0], 2).is_err());
        assert!(matches!(
            cholesky_lower(&[f64::INFINITY], 1),
            Err(Error::NonFinite { .. })
        ));
    }

    #[test]
    fn flip_signs_makes_the_largest_entry_positive() {
        let mut rows = vec![
            0.1, -0.9, 0.3, // largest is negative: flipped
            0.5, -0.5, 0.0, // tie: the first (positive) wins, kept
            -0.5, 0.5, 0.0, // tie: the first (negative) wins, flipped
            0.0, 0.0, 0.0, // zero row: kept
        ];
        flip_signs(&mut rows, 4, 3);
        assert_eq!(
            rows,
            vec![-0.1, 0.9, -0.3, 0.5, -0.5, 0.0, 0.5, -0.5, -0.0, 0.0, 0.0, 0.0]
        );
        // Wrong sizes: nothing happens.
        let mut short = vec![-1.0, -2.0];
        flip_signs(&mut short, 2, 2);
        assert_eq!(short, vec![-1.0, -2.0]);
    }
}
