//! The oracle's own small dense algebra, written apart from the production
//! [`crate::linalg`] so that a bug there cannot hide in a comparison with the oracle: the
//! ordering of a symmetric eigendecomposition and the sign convention of PCA components. The
//! decomposition itself calls nalgebra's implicit QR directly (no reference implementation
//! could be both independent and fast enough for D = 784), ordering and laying out its
//! output here. (The Gaussian mixtures' Cholesky factors are the neutral
//! [`crate::gmm::math`]'s, shared with the GPU path and checked by `tests/gmm_math.rs`.)
//!
//! Matrices are row-major `&[f64]` with their sizes alongside, as everywhere in the crate.

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
