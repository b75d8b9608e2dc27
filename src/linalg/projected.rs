//! Rayleigh–Ritz from the p x p matrices a device reduces its block to
//! (`kernels::linalg::rayleigh_ritz`), in f64: for a block Q, orthonormal only to the device's
//! rounding, and its image W = S·Q,
//!
//! - H = ½(QᵀW + WᵀQ), G = QᵀQ, E = R'ᵀR' with R' = W − Q·H (all p x p);
//! - the Ritz pairs of the pencil: H·yₖ = θₖ·G·yₖ, with L·Lᵀ = G, C = L⁻¹·H·L⁻ᵀ = X·Θ·Xᵀ
//!   and yₖ = L⁻ᵀ·xₖ, so that the Ritz vectors uₖ = Q·yₖ are orthonormal (YᵀGY = I);
//! - their residuals S·uₖ − θₖuₖ = R'·yₖ + θₖ·Q·F·yₖ with F = G − I (W = R' + Q·H and
//!   H·yₖ = θₖ·G·yₖ), whose squared length is
//!   yₖᵀEyₖ − 2θₖ·yₖᵀ·H·F²·yₖ + θₖ²·yₖᵀ·F·G·F·yₖ (R'ᵀQ = H − H·G = −H·F).
//!
//! E comes from R' itself, not from WᵀW − 2H² + HGH, which would cancel to the f32 rounding
//! of θ₁² (module docs of the shader). The f64 work is O(p³), independent of the length d.

use nalgebra::DMatrix;

use super::subspace::orthonormalizing_transform;
use super::{check_matrix, symmetric_eigen};
use crate::error::Result;

/// The Ritz pairs of a projected block (module docs).
pub(crate) struct ProjectedRitz {
    /// θ, descending.
    pub theta: Vec<f64>,
    /// Column k is yₖ, the coordinates of the k-th Ritz vector in the block (p x p).
    y: DMatrix<f64>,
    /// H, G, F = G − I and E, for the residuals.
    h: DMatrix<f64>,
    g: DMatrix<f64>,
    f: DMatrix<f64>,
    e: DMatrix<f64>,
}

/// The Ritz pairs of the pencil (H, G) (module docs) from the row-major p x p matrices `h`,
/// `g` and `e`. `Ok(None)` when G is not positive definite enough to trust (a pivot of its
/// Cholesky factor below 10⁻³ of its column's length: the device's block was far from
/// orthonormal).
///
/// Errors: a matrix of the wrong length, a non-finite value.
pub(crate) fn projected_ritz(
    h: &[f64],
    g: &[f64],
    e: &[f64],
    p: usize,
) -> Result<Option<ProjectedRitz>> {
    check_matrix("projected operator", h, p, p)?;
    check_matrix("block Gram matrix", g, p, p)?;
    check_matrix("residual Gram matrix", e, p, p)?;
    // Each is symmetric (bit for bit from the device); row- or column-major alike.
    let h = DMatrix::from_column_slice(p, p, h);
    let g = DMatrix::from_column_slice(p, p, g);
    let e = DMatrix::from_column_slice(p, p, e);
    let Some(l_inv_t) = orthonormalizing_transform(g.clone(), 1e-3) else {
        return Ok(None);
    };
    let l_inv = l_inv_t.transpose();
    let c = &l_inv * &h * l_inv.transpose();
    // Column-major C is row-major Cᵀ = C (symmetrised by symmetric_eigen).
    let (theta, x_rows) = symmetric_eigen(c.as_slice(), p)?;
    // Row k of `x_rows` is xₖ: as a column-major matrix that is X (column k = xₖ).
    let x = DMatrix::from_column_slice(p, p, &x_rows);
    let y = l_inv.transpose() * x;
    let f = &g - DMatrix::<f64>::identity(p, p);
    Ok(Some(ProjectedRitz {
        theta,
        y,
        h,
        g,
        f,
        e,
    }))
}

impl ProjectedRitz {
    /// ‖S·uₖ − θₖuₖ‖ for the first `count` Ritz pairs (module docs), by products of p x p
    /// matrices with vectors: yᵀEy − 2θ·(Hy)ᵀ(F·Fy) + θ²·(Fy)ᵀG(Fy).
    pub(crate) fn residuals(&self, count: usize) -> Vec<f64> {
        (0..count)
            .map(|k| {
                let y = self.y.column(k);
                let t = self.theta[k];
                let fy = &self.f * y;
                let outside = y.dot(&(&self.e * y));
                let cross = (&self.h * y).dot(&(&self.f * &fy));
                let off_block = fy.dot(&(&self.g * &fy));
                (outside - 2.0 * t * cross + t * t * off_block)
                    .max(0.0)
                    .sqrt()
            })
            .collect()
    }

    /// The coordinates of the first `count` Ritz vectors in the block, p rows of `count`
    /// (row-major, column k = yₖ): the weights that map the block's rows to the vectors'.
    pub(crate) fn coordinates(&self, count: usize) -> Vec<f64> {
        let p = self.y.nrows();
        let mut out = Vec::with_capacity(p * count);
        for i in 0..p {
            out.extend((0..count).map(|k| self.y[(i, k)]));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::random_symmetric;
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Q·M for Q (d x p, row-major) and M (p x q, row-major).
    fn times(q: &[f64], m: &[f64], d: usize, p: usize, cols: usize) -> Vec<f64> {
        let mut out = vec![0.0; d * cols];
        for j in 0..d {
            for t in 0..p {
                for k in 0..cols {
                    out[j * cols + k] += q[j * p + t] * m[t * cols + k];
                }
            }
        }
        out
    }

    /// AᵀB for d x p blocks.
    fn cross(a: &[f64], b: &[f64], d: usize, p: usize) -> Vec<f64> {
        let mut out = vec![0.0; p * p];
        for j in 0..d {
            for r in 0..p {
                for s in 0..p {
                    out[r * p + s] += a[j * p + r] * b[j * p + s];
                }
            }
        }
        out
    }

    #[test]
    fn pairs_and_residuals_equal_those_of_the_ritz_vectors_themselves() {
        for (d, p, skew, seed) in [(30, 4, 0.0, 1u64), (50, 8, 1e-3, 2), (40, 6, 3e-2, 3)] {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let s = random_symmetric(d, &mut rng);
            // An orthonormal block, then pushed off orthonormal by `skew` (as f32 leaves it).
            let mut rows: Vec<f64> = (0..p * d).map(|_| rng.random_range(-1.0..1.0)).collect();
            super::super::orthonormalize_rows(&mut rows, p, d).unwrap();
            let mut q = vec![0.0; d * p];
            for r in 0..p {
                for j in 0..d {
                    q[j * p + r] = rows[r * d + j] * (1.0 + skew * rng.random_range(-1.0..1.0));
                }
            }
            let w = times(&s, &q, d, d, p);
            let qw = cross(&q, &w, d, p);
            let h: Vec<f64> = (0..p * p)
                .map(|e| 0.5 * (qw[e] + qw[(e % p) * p + e / p]))
                .collect();
            let g = cross(&q, &q, d, p);
            let r: Vec<f64> = w
                .iter()
                .zip(times(&q, &h, d, p, p))
                .map(|(a, b)| a - b)
                .collect();
            let e = cross(&r, &r, d, p);
            let ritz = projected_ritz(&h, &g, &e, p).unwrap().unwrap();
            assert!(ritz.theta.windows(2).all(|t| t[0] >= t[1]));
            let u = times(&q, &ritz.coordinates(p), d, p, p);
            let su = times(&s, &u, d, d, p);
            let residuals = ritz.residuals(p);
            for k in 0..p {
                let norm_sq: f64 = (0..d).map(|j| u[j * p + k] * u[j * p + k]).sum();
                assert!((norm_sq - 1.0).abs() < 1e-10, "{k}: |u|² {norm_sq}");
                let rayleigh: f64 = (0..d).map(|j| u[j * p + k] * su[j * p + k]).sum();
                assert!((rayleigh - ritz.theta[k]).abs() < 1e-10, "{k}: θ");
                let direct: f64 = (0..d)
                    .map(|j| (su[j * p + k] - ritz.theta[k] * u[j * p + k]).powi(2))
                    .sum::<f64>()
                    .sqrt();
                assert!(
                    (residuals[k] - direct).abs() < 1e-9 * (1.0 + direct),
                    "d {d} p {p} skew {skew} pair {k}: {} vs {direct}",
                    residuals[k]
                );
            }
        }
    }

    #[test]
    fn a_block_far_from_orthonormal_is_refused() {
        let p = 3;
        // Columns 0 and 1 nearly parallel: G's second pivot is 1e-4 of its column.
        let g = [1.0, 1.0 - 5e-9, 0.0, 1.0 - 5e-9, 1.0, 0.0, 0.0, 0.0, 1.0];
        let h = [2.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.5];
        assert!(projected_ritz(&h, &g, &[0.0; 9], p).unwrap().is_none());
        let identity = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
        let ritz = projected_ritz(&h, &identity, &[0.0; 9], p)
            .unwrap()
            .unwrap();
        assert_eq!(ritz.theta, vec![2.0, 1.0, 0.5]);
        assert_eq!(ritz.residuals(3), vec![0.0; 3]);
        assert!(projected_ritz(&h, &[f64::NAN; 9], &[0.0; 9], p).is_err());
    }
}
