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

/// Makes the m rows (length n, row-major) of `v` orthonormal, keeping their span.
///
/// Householder QR of the n x m matrix Vᵀ = Q R; the columns of the thin Q replace the rows.
/// Each new row is then turned so that it points the way of the old row it comes from
/// (R's diagonal made positive), so the result is what Gram–Schmidt would give in exact
/// arithmetic and an already orthonormal V comes back unchanged up to rounding: without this,
/// a power iteration would see its vectors flip sign between steps.
///
/// Errors: [`Error::InvalidParameter`] when `v` does not hold m·n values, when m > n, or
/// when the rows are (numerically) linearly dependent: row i has nothing left after removing
/// its projection on rows 0..i (|R_ii| < 1e-12 · ‖v_i‖, or v_i = 0); [`Error::NonFinite`].
pub fn orthonormalize_rows(v: &mut [f64], m: usize, n: usize) -> Result<()> {
    check_matrix("vectors", v, m, n)?;
    if m > n {
        return Err(Error::invalid(
            "vectors",
            format!("cannot orthonormalise {m} vectors of length {n} (at most {n})"),
        ));
    }
    if m == 0 {
        return Ok(());
    }
    // Vᵀ: column i of `vt` is row i of `v`.
    let vt = DMatrix::from_column_slice(n, m, v);
    let norms: Vec<f64> = (0..m).map(|i| vt.column(i).norm()).collect();
    let qr = vt.qr();
    let r = qr.r();
    for (i, &norm) in norms.iter().enumerate() {
        let rii = r[(i, i)];
        // Relative test: what survives the projection compared with the row's own length.
        if norm == 0.0 || rii.abs() < 1e-12 * norm {
            return Err(Error::invalid(
                "vectors",
                format!(
                    "rank deficient: vector {i} lies in the span of the previous ones \
                     (residual {:e} of norm {norm:e})",
                    rii.abs()
                ),
            ));
        }
    }
    let q = qr.q();
    for i in 0..m {
        let sign = if r[(i, i)] < 0.0 { -1.0 } else { 1.0 };
        for (dst, src) in v[i * n..(i + 1) * n].iter_mut().zip(q.column(i).iter()) {
            *dst = sign * src;
        }
    }
    Ok(())
}

/// Rayleigh–Ritz on the subspace spanned by the orthonormal rows of `v`.
///
/// `v` holds m orthonormal rows of length n and `w` the rows S·vᵢ for a symmetric n x n S
/// (both m x n, row-major). Forms H = V Wᵀ = V S Vᵀ (m x m), symmetrised because W comes
/// with rounding, decomposes H = Y Θ Yᵀ with [`symmetric_eigen`] and returns the Ritz values
/// θ (descending) and the Ritz vectors U = Yᵀ V as m rows of length n (row k ↔ θ_k).
///
/// Only the subspace of V matters: any orthonormal basis of it gives the same Ritz pairs
/// (up to signs), and when it is invariant under S they are exact eigenpairs of S.
///
/// Errors: [`Error::InvalidParameter`] when a slice does not hold m·n values;
/// [`Error::NonFinite`]. Orthonormality of `v` is the caller's promise, not checked.
pub fn rayleigh_ritz(v: &[f64], w: &[f64], m: usize, n: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    check_matrix("vectors", v, m, n)?;
    check_matrix("products", w, m, n)?;
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let mut h = vec![0.0; m * m];
    for i in 0..m {
        for j in 0..m {
            h[i * m + j] = dot(&v[i * n..(i + 1) * n], &w[j * n..(j + 1) * n]);
        }
    }
    // symmetric_eigen symmetrises H = V Wᵀ, which is V S Vᵀ only up to rounding.
    let (theta, y_rows) = symmetric_eigen(&h, m)?;
    // Row k of y_rows is the eigenvector y_k of H; U's row k is Σ_i y_k[i] · v_i.
    let mut u = vec![0.0; m * n];
    for k in 0..m {
        let uk = &mut u[k * n..(k + 1) * n];
        for i in 0..m {
            let c = y_rows[k * m + i];
            for (dst, src) in uk.iter_mut().zip(&v[i * n..(i + 1) * n]) {
                *dst += c * src;
            }
        }
    }
    Ok((theta, u))
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
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_matrix(rows: usize, cols: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
        (0..rows * cols)
            .map(|_| rng.random_range(-1.0..1.0))
            .collect()
    }

    fn random_symmetric(n: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
        let b = random_matrix(n, n, rng);
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] = b[i * n + j] + b[j * n + i];
            }
        }
        a
    }

    fn matvec(a: &[f64], n: usize, v: &[f64]) -> Vec<f64> {
        a.chunks_exact(n)
            .map(|row| row.iter().zip(v).map(|(x, y)| x * y).sum())
            .collect()
    }

    fn frobenius(a: &[f64]) -> f64 {
        a.iter().map(|x| x * x).sum::<f64>().sqrt()
    }

    /// max |R Rᵀ − I| over the m rows of length n.
    fn orthonormality_error(r: &[f64], m: usize, n: usize) -> f64 {
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
    fn orthonormalize_keeps_span_and_direction() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for (m, n) in [(1, 1), (1, 5), (3, 3), (4, 10), (16, 64)] {
            let original = random_matrix(m, n, &mut rng);
            let mut v = original.clone();
            orthonormalize_rows(&mut v, m, n).unwrap();
            assert!(
                orthonormality_error(&v, m, n) < 1e-13 * n as f64,
                "{m} x {n}"
            );
            // Span kept: each original row equals its projection on the new rows.
            for i in 0..m {
                let x = &original[i * n..(i + 1) * n];
                let mut proj = vec![0.0; n];
                for k in 0..m {
                    let q = &v[k * n..(k + 1) * n];
                    let c: f64 = x.iter().zip(q).map(|(a, b)| a * b).sum();
                    for (p, qv) in proj.iter_mut().zip(q) {
                        *p += c * qv;
                    }
                }
                let err = x
                    .iter()
                    .zip(&proj)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max);
                assert!(err < 1e-12, "{m} x {n}: row {i} left the span ({err:e})");
                // Gram–Schmidt orientation: new row i points along old row i.
                let c: f64 = x
                    .iter()
                    .zip(&v[i * n..(i + 1) * n])
                    .map(|(a, b)| a * b)
                    .sum();
                assert!(c > 0.0);
            }
        }
        // An orthonormal input comes back unchanged.
        let mut e = vec![0.0, 1.0, 0.0, 0.0, 0.0, -1.0];
        orthonormalize_rows(&mut e, 2, 3).unwrap();
        let expected = [0.0, 1.0, 0.0, 0.0, 0.0, -1.0];
        assert!(e.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-15));
    }

    #[test]
    fn orthonormalize_rejects_rank_deficiency_and_bad_shapes() {
        // Third row = first + second.
        let mut v = vec![1.0, 0.0, 2.0, 0.0, 1.0, 1.0, 1.0, 1.0, 3.0];
        assert!(matches!(
            orthonormalize_rows(&mut v, 3, 3),
            Err(Error::InvalidParameter {
                name: "vectors",
                ..
            })
        ));
        let mut zero = vec![1.0, 0.0, 0.0, 0.0];
        assert!(orthonormalize_rows(&mut zero, 2, 2).is_err());
        let mut tall = vec![1.0, 2.0, 3.0];
        assert!(orthonormalize_rows(&mut tall, 3, 1).is_err());
        let mut short = vec![1.0, 2.0, 3.0];
        assert!(orthonormalize_rows(&mut short, 2, 2).is_err());
        let mut nan = vec![f64::NAN, 1.0];
        assert!(matches!(
            orthonormalize_rows(&mut nan, 1, 2),
            Err(Error::NonFinite { .. })
        ));
        let mut empty: Vec<f64> = vec![];
        orthonormalize_rows(&mut empty, 0, 4).unwrap();
    }

    #[test]
    fn rayleigh_ritz_on_an_invariant_subspace_is_exact() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let n = 12;
        let a = random_symmetric(n, &mut rng);
        let (values, vectors) = symmetric_eigen(&a, n).unwrap();
        // A mixed (rotated) basis of the span of eigenvectors 0, 3 and 7.
        let picked = [0usize, 3, 7];
        let m = picked.len();
        let mix = random_matrix(m, m, &mut rng);
        let mut v = vec![0.0; m * n];
        for r in 0..m {
            for (c, &k) in picked.iter().enumerate() {
                for j in 0..n {
                    v[r * n + j] += mix[r * m + c] * vectors[k * n + j];
                }
            }
        }
        orthonormalize_rows(&mut v, m, n).unwrap();
        let w: Vec<f64> = v
            .chunks_exact(n)
            .flat_map(|row| matvec(&a, n, row))
            .collect();
        let (theta, u) = rayleigh_ritz(&v, &w, m, n).unwrap();
        let scale = frobenius(&a);
        for (r, &k) in picked.iter().enumerate() {
            assert!(
                (theta[r] - values[k]).abs() < 1e-12 * scale,
                "θ_{r} vs λ_{k}"
            );
            // Same vector up to sign.
            let dot: f64 = (0..n).map(|j| u[r * n + j] * vectors[k * n + j]).sum();
            assert!(
                (dot.abs() - 1.0).abs() < 1e-12,
                "Ritz vector {r}: |cos| = {}",
                dot.abs()
            );
            let au = matvec(&a, n, &u[r * n..(r + 1) * n]);
            let res = (0..n)
                .map(|j| (au[j] - theta[r] * u[r * n + j]).abs())
                .fold(0.0, f64::max);
            assert!(res < 1e-12 * scale);
        }
        assert!(orthonormality_error(&u, m, n) < 1e-13);
        assert!(rayleigh_ritz(&v, &w[1..], m, n).is_err());
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
