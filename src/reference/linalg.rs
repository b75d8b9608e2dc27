//! The oracle's own small dense algebra, written apart from the production
//! [`crate::linalg`] and Gaussian-mixture math so that a bug there cannot hide in a
//! comparison with the oracle: the textbook Cholesky–Banachiewicz factorisation, the inverse
//! of a triangular factor by substitution, and the sign convention of PCA components. The
//! full symmetric eigendecomposition calls nalgebra's implicit QR directly (no reference
//! implementation could be both independent and fast enough for D = 784), ordering and
//! laying out its output here.
//!
//! Matrices are row-major `&[f64]` with their sizes alongside, as everywhere in the crate.

/// The lower Cholesky factor L of a symmetric positive-definite n x n matrix (A = L Lᵀ), or
/// `None` when a pivot is not positive (or not finite). Only the lower triangle of `a` is
/// read.
pub fn cholesky_lower(a: &[f64], n: usize) -> Option<Vec<f64>> {
    if a.len() != n * n {
        return None;
    }
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = a[i * n + j];
            for t in 0..j {
                s -= l[i * n + t] * l[j * n + t];
            }
            if i == j {
                if !(s > 0.0 && s.is_finite()) {
                    return None;
                }
                l[i * n + i] = s.sqrt();
            } else {
                l[i * n + j] = s / l[j * n + j];
            }
        }
    }
    Some(l)
}

/// The inverse of a non-singular lower-triangular n x n matrix L, by forward substitution
/// on L X = I one column at a time (X is lower triangular).
pub fn lower_inverse(l: &[f64], n: usize) -> Vec<f64> {
    let mut x = vec![0.0; n * n];
    for col in 0..n {
        for i in col..n {
            let mut s = if i == col { 1.0 } else { 0.0 };
            for t in col..i {
                s -= l[i * n + t] * x[t * n + col];
            }
            x[i * n + col] = s / l[i * n + i];
        }
    }
    x
}

/// The transpose of a row-major n x n matrix.
pub fn transpose(a: &[f64], n: usize) -> Vec<f64> {
    (0..n * n).map(|e| a[(e % n) * n + e / n]).collect()
}

/// Eigenvalues of a symmetric n x n matrix in descending order, and the unit eigenvectors as
/// the rows of an n x n matrix, from (A + Aᵀ)/2; `None` when nalgebra's iteration does not
/// converge.
pub fn symmetric_eigen(a: &[f64], n: usize) -> Option<(Vec<f64>, Vec<f64>)> {
    if a.len() != n * n {
        return None;
    }
    if n == 0 {
        return Some((Vec::new(), Vec::new()));
    }
    let sym = nalgebra::DMatrix::from_fn(n, n, |i, j| 0.5 * (a[i * n + j] + a[j * n + i]));
    let eig = nalgebra::SymmetricEigen::try_new(sym, f64::EPSILON, 1000 + 100 * n)?;
    let mut pairs: Vec<(f64, Vec<f64>)> = (0..n)
        .map(|k| {
            let v = eig.eigenvectors.column(k).iter().copied().collect();
            (eig.eigenvalues[k], v)
        })
        .collect();
    pairs.sort_by(|p, q| q.0.total_cmp(&p.0));
    let values = pairs.iter().map(|p| p.0).collect();
    let vectors = pairs.into_iter().flat_map(|p| p.1).collect();
    Some((values, vectors))
}

/// Flips each of the rows (length n) of `rows` so that its entry of largest magnitude (the
/// first such) is positive: scikit-learn's `svd_flip` convention for components.
pub fn flip_signs(rows: &mut [f64], n: usize) {
    if n == 0 {
        return;
    }
    for row in rows.chunks_exact_mut(n) {
        let mut largest = 0;
        for j in 1..n {
            if row[j].abs() > row[largest].abs() {
                largest = j;
            }
        }
        if row[largest] < 0.0 {
            row.iter_mut().for_each(|v| *v = -*v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
        (0..n * n)
            .map(|e| (0..n).map(|t| a[(e / n) * n + t] * b[t * n + e % n]).sum())
            .collect()
    }

    #[test]
    fn cholesky_and_triangular_inverse_of_a_known_matrix() {
        // A = L Lᵀ with L = [[2, 0, 0], [1, 3, 0], [-1, 0.5, 1]].
        let l_true = [2.0, 0.0, 0.0, 1.0, 3.0, 0.0, -1.0, 0.5, 1.0];
        let a = product(&l_true, &transpose(&l_true, 3), 3);
        let l = cholesky_lower(&a, 3).unwrap();
        for (x, y) in l.iter().zip(l_true) {
            assert!((x - y).abs() < 1e-14, "{l:?}");
        }
        let identity = product(&l, &lower_inverse(&l, 3), 3);
        for (e, v) in identity.iter().enumerate() {
            let want = if e % 4 == 0 { 1.0 } else { 0.0 };
            assert!((v - want).abs() < 1e-14, "{identity:?}");
        }
        assert!(cholesky_lower(&[1.0, 2.0, 2.0, 1.0], 2).is_none());
        assert!(cholesky_lower(&[1.0, 0.0, 0.0, f64::NAN], 2).is_none());
        assert!(cholesky_lower(&[1.0], 2).is_none());
    }

    #[test]
    fn eigen_of_a_known_matrix_and_the_sign_rule() {
        let (values, vectors) = symmetric_eigen(&[2.0, 1.0, 1.0, 2.0], 2).unwrap();
        assert!((values[0] - 3.0).abs() < 1e-14 && (values[1] - 1.0).abs() < 1e-14);
        let mut v = vectors;
        flip_signs(&mut v, 2);
        let h = 0.5f64.sqrt();
        // First: (h, h); second: ±(h, −h), its first entry wins the tie and is positive.
        for (x, y) in v.iter().zip([h, h, h, -h]) {
            assert!((x - y).abs() < 1e-14, "{v:?}");
        }
        assert!(symmetric_eigen(&[1.0, 2.0], 2).is_none());
    }
}
