//! Cholesky QR on the device held against f64: orthonormal columns, the same leading spans
//! (R = Qᵀ·W upper triangular with a positive diagonal), the breakdown flag where a column
//! cannot be orthonormalised, and the loop budget of the factorisation.

use super::cholesky_qr::{
    factor_back_edges, orthonormalize_columns, shared_fits, with_global_factor, CholeskyQrScratch,
};
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::tests::{gpu, random};
use crate::gpu::Gpu;

/// Q and the breakdown flag for the d x p block `w`.
fn run(gpu: &Gpu, w: &[f32], d: usize, p: usize) -> (Vec<f32>, u32) {
    let w_buf = DeviceBuffer::from_slice(gpu, "W", w);
    let q_buf = DeviceBuffer::zeroed(gpu, "Q", d * p);
    let scratch = CholeskyQrScratch::new(gpu, p);
    let mut batch = Batch::new(gpu, "Cholesky QR test");
    orthonormalize_columns(gpu, &mut batch, &w_buf, d, &scratch, &q_buf).unwrap();
    let hq = batch.read_all(&q_buf);
    let hb = batch.read_all(&scratch.breakdown);
    let back = batch.finish().unwrap();
    (back.f32s(hq), back.u32s(hb)[0])
}

/// Σ_j a[j][r]·b[j][s] in f64 for d x p blocks (row-major), of f32 or f64 values.
pub(super) fn cross<T: Copy + Into<f64>>(a: &[T], b: &[T], d: usize, p: usize) -> Vec<f64> {
    let mut out = vec![0.0f64; p * p];
    for j in 0..d {
        for r in 0..p {
            for s in 0..p {
                out[r * p + s] += a[j * p + r].into() * b[j * p + s].into();
            }
        }
    }
    out
}

/// A d x p block whose columns are independent but far from orthogonal and of unequal
/// lengths: a shared direction plus noise, column r scaled by 10^(r mod 4).
fn skewed_block(d: usize, p: usize, seed: u64) -> Vec<f32> {
    let noise = random(d * p, seed);
    let shared = random(d, seed + 1);
    (0..d * p)
        .map(|e| {
            let (j, r) = (e / p, e % p);
            let scale = 10f32.powi((r % 4) as i32);
            scale * (shared[j] + 0.5 * (noise[e] - 0.5))
        })
        .collect()
}

#[test]
fn columns_come_out_orthonormal_with_the_same_leading_spans() {
    let gpu = gpu();
    for (d, p, seed) in [(9, 1, 1), (50, 7, 2), (301, 40, 3), (784, 100, 4)] {
        let w = skewed_block(d, p, seed);
        let (q, breakdown) = run(&gpu, &w, d, p);
        assert_eq!(breakdown, 0, "d {d} p {p}");
        let qtq = cross(&q, &q, d, p);
        let r = cross(&q, &w, d, p);
        let mut worst_orth = 0.0f64;
        let mut worst_lower = 0.0f64;
        for a in 0..p {
            for b in 0..p {
                let want = if a == b { 1.0 } else { 0.0 };
                worst_orth = worst_orth.max((qtq[a * p + b] - want).abs());
                if a > b {
                    // R[a][b] = q_aᵀ w_b: column b lies in the span of q_0..q_b.
                    let scale = r[b * p + b].abs();
                    worst_lower = worst_lower.max(r[a * p + b].abs() / scale);
                }
            }
            assert!(
                r[a * p + a] > 0.0,
                "d {d} p {p}: R[{a}][{a}] = {}",
                r[a * p + a]
            );
        }
        assert!(worst_orth < 2e-4, "d {d} p {p}: |QᵀQ − I| = {worst_orth:e}");
        assert!(worst_lower < 2e-4, "d {d} p {p}: lower R {worst_lower:e}");
    }
}

#[test]
fn dependent_or_empty_columns_set_the_breakdown_flag_without_nan() {
    let gpu = gpu();
    let (d, p) = (64, 6);
    let mut dependent = skewed_block(d, p, 5);
    for j in 0..d {
        dependent[j * p + 4] = dependent[j * p + 1] - 2.0 * dependent[j * p + 2];
    }
    let mut empty = skewed_block(d, p, 6);
    for j in 0..d {
        empty[j * p + 3] = 0.0;
    }
    for (what, w) in [("dependent", dependent), ("empty", empty)] {
        let (q, breakdown) = run(&gpu, &w, d, p);
        assert_eq!(breakdown, 1, "{what}");
        assert!(q.iter().all(|v| !v.is_nan()), "{what}: NaN in Q");
    }
}

#[test]
fn the_factorisation_in_workgroup_memory_gives_the_global_forms_bits() {
    let gpu = gpu();
    // Independent, dependent and empty columns (the breakdown paths too).
    let mut dependent = skewed_block(64, 6, 5);
    for j in 0..64 {
        dependent[j * 6 + 4] = dependent[j * 6 + 1] - 2.0 * dependent[j * 6 + 2];
    }
    let mut empty = skewed_block(30, 9, 6);
    for j in 0..30 {
        empty[j * 9 + 3] = 0.0;
    }
    let cases = [
        (skewed_block(9, 1, 1), 9, 1),
        (skewed_block(301, 40, 3), 301, 40),
        (skewed_block(200, 60, 7), 200, 60),
        (dependent, 64, 6),
        (empty, 30, 9),
    ];
    for (w, d, p) in cases {
        assert!(
            shared_fits(&gpu, p),
            "p {p} should fit every adapter's 16 KiB"
        );
        let shared = run(&gpu, &w, d, p);
        let global = with_global_factor(|| run(&gpu, &w, d, p));
        let bits = |q: &[f32]| q.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&shared.0), bits(&global.0), "d {d} p {p}: Q");
        assert_eq!(shared.1, global.1, "d {d} p {p}: breakdown");
    }
}

#[test]
fn the_factorisation_fits_the_loop_budget_of_a_block_power_iteration() {
    // The counts the power iteration checks against the adapter's budget: a few thousand
    // back-edges at p = 100, far past the budget only for blocks of several hundred.
    assert!(factor_back_edges(1) >= 3);
    assert!(
        factor_back_edges(100) < 10_000,
        "{}",
        factor_back_edges(100)
    );
    assert!(
        factor_back_edges(200) < 58_000,
        "{}",
        factor_back_edges(200)
    );
    assert!(factor_back_edges(400) > 65_535);
    let grows = (1..300).map(factor_back_edges).collect::<Vec<_>>();
    assert!(grows.windows(2).all(|w| w[0] <= w[1]));
}
