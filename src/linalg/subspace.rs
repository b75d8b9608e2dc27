//! The subspace steps of the iterative eigen-solvers, by dense products: orthonormal rows
//! (Cholesky QR2, Householder QR where the rows are nearly dependent) and Rayleigh–Ritz with
//! the images of the Ritz vectors. Matrices are row-major slices, as in the parent module.

use nalgebra::DMatrix;

use super::{check_matrix, symmetric_eigen};
use crate::error::{Error, Result};

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
    orthonormalize(v, m, n, None)
}

/// [`orthonormalize_rows`] given the rows' Gram matrix V Vᵀ (m x m), which a Rayleigh–Ritz
/// step has formed already ([`RitzStep::gram`]): the first Cholesky QR pass then needs no
/// product of its own.
pub(crate) fn orthonormalize_rows_with_gram(
    v: &mut [f64],
    gram: &DMatrix<f64>,
    m: usize,
    n: usize,
) -> Result<()> {
    orthonormalize(v, m, n, Some(gram))
}

fn orthonormalize(v: &mut [f64], m: usize, n: usize, gram: Option<&DMatrix<f64>>) -> Result<()> {
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
    if gram.is_some_and(|g| g.shape() != (m, m)) {
        return Err(Error::invalid(
            "gram",
            format!("a Gram matrix of {m} vectors is {m} x {m}"),
        ));
    }
    let first = gram.map_or_else(|| vt.transpose() * &vt, Clone::clone);
    if let Some(q) = cholesky_qr(&vt, first).and_then(|q| cholesky_qr(&q, q.transpose() * &q)) {
        v.copy_from_slice(q.as_slice());
        return Ok(());
    }
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

/// One pass of Cholesky QR: the columns of `vt` (n x m) made orthonormal as Q = Vt L⁻ᵀ with
/// L Lᵀ = `g` = Vtᵀ Vt, by dense products (fast where Householder QR runs column by column); `None`
/// when a column keeps less than 10⁻⁷ of its length past the previous ones (the Gram matrix
/// then loses too many digits: Householder QR decides). R = Lᵀ has a positive diagonal, the
/// sign convention of [`orthonormalize_rows`]; a second pass on a first pass's result (well
/// conditioned) restores orthogonality to rounding (Cholesky QR2).
fn cholesky_qr(vt: &DMatrix<f64>, g: DMatrix<f64>) -> Option<DMatrix<f64>> {
    Some(vt * orthonormalizing_transform(g, 1e-7)?)
}

/// L⁻ᵀ for the Cholesky factor L·Lᵀ = `g` of a Gram matrix: the columns of V·L⁻ᵀ are
/// orthonormal. `None` when a column keeps less than `floor` of its length past the previous
/// ones (10⁻⁷ in [`cholesky_qr`]).
pub(super) fn orthonormalizing_transform(g: DMatrix<f64>, floor: f64) -> Option<DMatrix<f64>> {
    let norms: Vec<f64> = g.diagonal().iter().map(|v| v.sqrt()).collect();
    let l = nalgebra::Cholesky::new(g)?.unpack();
    let well_conditioned = norms
        .iter()
        .enumerate()
        .all(|(i, &norm)| norm > 0.0 && l[(i, i)] > floor * norm);
    if !well_conditioned {
        return None;
    }
    let l_inv = l.solve_lower_triangular(&DMatrix::identity(l.nrows(), l.nrows()))?;
    Some(l_inv.transpose())
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
    let step = ritz_step(v, w, m, n)?;
    let u = step.vectors(v, m, n);
    Ok((step.theta, u))
}

/// One Rayleigh–Ritz step of a block power iteration, with what the iteration needs next
/// and without the Ritz vectors until it asks for them ([`RitzStep::vectors`]).
///
/// An iteration spends its host time on p x p x n products. Each one needs θ and the
/// residuals, then the orthonormal rows of W. With the Gram matrix G = W Wᵀ, the residuals
/// come from p x p matrices alone ([`RitzStep::residuals`]), and G is also the first
/// Cholesky QR pass's own product ([`orthonormalize_rows_with_gram`]). So an iteration
/// forms H, G, the first pass's Q and the second pass's Gram matrix and Q: five products,
/// where forming the vectors U = Yᵀ V and their images S·U = Yᵀ W each time made seven.
pub(crate) struct RitzStep {
    /// The Ritz values θ, descending.
    pub theta: Vec<f64>,
    /// Row k: the eigenvector yₖ of H = V Wᵀ for θₖ (uₖ = Vᵀ yₖ).
    y: Vec<f64>,
    /// G = W Wᵀ (m x m).
    gram: DMatrix<f64>,
    /// Vectors in the block.
    m: usize,
}

/// Rayleigh–Ritz on the orthonormal rows of `v` (m x n) with `w` their images S·vᵢ
/// ([`rayleigh_ritz`]): H = V Wᵀ symmetrised and decomposed as H = Y Θ Yᵀ, and G = W Wᵀ.
///
/// Errors: [`Error::InvalidParameter`] when a slice does not hold m·n values;
/// [`Error::NonFinite`].
pub(crate) fn ritz_step(v: &[f64], w: &[f64], m: usize, n: usize) -> Result<RitzStep> {
    check_matrix("vectors", v, m, n)?;
    check_matrix("products", w, m, n)?;
    // A row-major m x n matrix is the column-major n x m matrix of its transpose.
    let vt = DMatrix::from_column_slice(n, m, v);
    let wt = DMatrix::from_column_slice(n, m, w);
    // symmetric_eigen symmetrises H = V Wᵀ, which is V S Vᵀ only up to rounding.
    let h = vt.transpose() * &wt;
    let (theta, y) = symmetric_eigen(h.transpose().as_slice(), m)?;
    let gram = wt.transpose() * &wt;
    Ok(RitzStep { theta, y, gram, m })
}

impl RitzStep {
    /// The residuals ‖S·uₖ − θₖuₖ‖ of the first `count` Ritz pairs, from m x m matrices.
    ///
    /// V's rows are orthonormal, so S·uₖ = Wᵀyₖ and uₖᵀS·uₖ = yₖᵀHyₖ = θₖ. The residual is
    /// then ‖S·uₖ − θₖuₖ‖² = yₖᵀGyₖ − θₖ². In f64 this difference keeps its digits down to
    /// about 10⁻⁸·θ₁, far below the solvers' tolerances (10⁻⁵·θ₁ by default). The f32
    /// products S·V limit both forms alike.
    pub(crate) fn residuals(&self, count: usize) -> Vec<f64> {
        let m = self.m;
        self.y
            .chunks_exact(m)
            .zip(&self.theta)
            .take(count)
            .map(|(y, &t)| {
                let y = nalgebra::DVectorView::from_slice(y, m);
                let image_sq = (y.transpose() * &self.gram * y)[(0, 0)];
                (image_sq - t * t).max(0.0).sqrt()
            })
            .collect()
    }

    /// The first `count` Ritz vectors U = Yᵀ V (count rows of n) of the rows `v` this step
    /// was taken on. The product runs over all m vectors and keeps `count`: one shape of
    /// product, so the same bits whatever `count` (once a fit, so its cost does not matter).
    pub(crate) fn vectors(&self, v: &[f64], count: usize, n: usize) -> Vec<f64> {
        let vt = DMatrix::from_column_slice(n, self.m, v);
        // Column k of `y` is yₖ; column k of Vᵀ Y is uₖ, so the column-major product is U
        // row-major.
        let y = DMatrix::from_column_slice(self.m, self.m, &self.y);
        let mut u = (vt * y).as_slice().to_vec();
        u.truncate(count * n);
        u
    }

    /// G = W Wᵀ, for [`orthonormalize_rows_with_gram`] of W.
    pub(crate) fn gram(&self) -> &DMatrix<f64> {
        &self.gram
    }
}

#[cfg(test)]
mod tests {
    use super::super::symmetric_eigen;
    use super::super::tests::{
        frobenius, matvec, orthonormality_error, random_matrix, random_symmetric,
    };
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

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
    fn nearly_dependent_rows_take_the_householder_path_and_stay_orthonormal() {
        // Row 2 is row 0 plus 1e-9 of noise: Cholesky QR would lose every digit of it.
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let (m, n) = (3, 40);
        let mut v = random_matrix(m, n, &mut rng);
        let noise = random_matrix(1, n, &mut rng);
        for j in 0..n {
            v[2 * n + j] = v[j] + 1e-9 * noise[j];
        }
        let vt = DMatrix::from_column_slice(n, m, &v);
        assert!(cholesky_qr(&vt, vt.transpose() * &vt).is_none());
        orthonormalize_rows(&mut v, m, n).unwrap();
        assert!(orthonormality_error(&v, m, n) < 1e-13 * n as f64);
    }

    #[test]
    fn residuals_from_small_matrices_equal_the_residuals_of_the_ritz_vectors() {
        for (seed, m, n) in [
            (8u64, 5usize, 30usize),
            (9, 12, 40),
            (10, 1, 7),
            (12, 20, 20),
        ] {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let a = random_symmetric(n, &mut rng);
            let mut v = random_matrix(m, n, &mut rng);
            orthonormalize_rows(&mut v, m, n).unwrap();
            let apply = |x: &[f64]| -> Vec<f64> {
                x.chunks_exact(n)
                    .flat_map(|row| matvec(&a, n, row))
                    .collect()
            };
            let w = apply(&v);
            let step = ritz_step(&v, &w, m, n).unwrap();
            assert!(step.theta.windows(2).all(|t| t[0] >= t[1]));
            let u = step.vectors(&v, m, n);
            assert!(orthonormality_error(&u, m, n) < 1e-13 * n as f64);
            let su = apply(&u);
            let scale = frobenius(&a);
            let residuals = step.residuals(m);
            assert_eq!(residuals.len(), m);
            for (k, r) in residuals.iter().enumerate() {
                let direct = (0..n)
                    .map(|j| (su[k * n + j] - step.theta[k] * u[k * n + j]).powi(2))
                    .sum::<f64>()
                    .sqrt();
                assert!(
                    (r - direct).abs() < 1e-7 * scale,
                    "seed {seed}, pair {k}: {r:e} vs {direct:e}"
                );
            }
            // Fewer vectors: the leading ones, the same bits.
            let few = m.div_ceil(2);
            assert_eq!(step.vectors(&v, few, n), u[..few * n]);
            assert_eq!(step.residuals(few), residuals[..few]);
            assert_eq!(
                rayleigh_ritz(&v, &w, m, n).unwrap(),
                (step.theta.clone(), u)
            );
            // The step's Gram matrix orthonormalises W as W's own does.
            let (mut given, mut own) = (w.clone(), w.clone());
            orthonormalize_rows_with_gram(&mut given, step.gram(), m, n).unwrap();
            orthonormalize_rows(&mut own, m, n).unwrap();
            assert_eq!(given, own, "seed {seed}");
        }
        let mut w = vec![1.0, 0.0, 0.0, 1.0];
        let wrong = DMatrix::<f64>::identity(3, 3);
        assert!(orthonormalize_rows_with_gram(&mut w, &wrong, 2, 2).is_err());
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
}
