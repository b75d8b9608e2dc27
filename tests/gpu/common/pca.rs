//! PCA test data and comparisons shared by the resident and streamed PCA tests.

use super::{random_matrix, to_f64};

/// N x D data with a decaying, well-separated spectrum: uniform noise scaled by `scales`
/// along a random rotation, plus `offset`.
pub fn spectrum_data(n: usize, scales: &[f32], seed: u64, offset: f32) -> Vec<f32> {
    let d = scales.len();
    let z = random_matrix(n, d, seed, -1.0, 1.0);
    // A random orthonormal basis from the reference's own algebra.
    let mut q = to_f64(&random_matrix(d, d, seed + 1, -1.0, 1.0));
    wgpu_unsupervised::linalg::orthonormalize_rows(&mut q, d, d).unwrap();
    let mut x = vec![0.0f32; n * d];
    for r in 0..n {
        for j in 0..d {
            let mut v = 0.0f64;
            for k in 0..d {
                v += (z[r * d + k] * scales[k]) as f64 * q[k * d + j];
            }
            x[r * d + j] = v as f32 + offset;
        }
    }
    x
}

/// Largest principal angle (radians) between the row spaces of a and b (m x d, orthonormal).
pub fn subspace_angle(a: &[f64], b: &[f64], m: usize, d: usize) -> f64 {
    let mut prod = vec![0.0; m * m];
    for i in 0..m {
        for j in 0..m {
            prod[i * m + j] = (0..d).map(|k| a[i * d + k] * b[j * d + k]).sum();
        }
    }
    let sv = nalgebra::DMatrix::from_row_slice(m, m, &prod).singular_values();
    sv.min().clamp(-1.0, 1.0).acos()
}
