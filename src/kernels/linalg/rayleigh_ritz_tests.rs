//! The device's projection of a block held against f64 sums of the same f32 values: H and G
//! symmetric bit for bit and close to f64, and E (the Gram matrix of W − Q·H) accurate to its
//! own scale where W lies almost inside the block, the case the iteration stops at.

use super::cholesky_qr_tests::cross;
use super::rayleigh_ritz::{project_block, ProjectionScratch};
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::tests::{gpu, random};

/// The largest |a − b| over the largest |b|.
fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let worst = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    worst / scale
}

#[test]
fn projections_match_f64_and_keep_the_residual_part_to_its_own_scale() {
    let gpu = gpu();
    // `outside`: how much of W lies outside the block (1: a random W; 1e-3: nearly invariant).
    for (d, p, outside, seed) in [
        (7, 3, 1.0, 1u64),
        (301, 24, 1.0, 2),
        (784, 100, 1e-3, 3),
        (300, 40, 1e-4, 4),
    ] {
        let q: Vec<f32> = random(d * p, seed).iter().map(|v| v - 0.5).collect();
        let mix: Vec<f32> = random(p * p, seed + 1)
            .iter()
            .map(|v| 4.0 * v - 2.0)
            .collect();
        let noise = random(d * p, seed + 2);
        // W = Q·M + outside·N: its part outside the block is about `outside` of its length.
        let w: Vec<f32> = (0..d * p)
            .map(|e| {
                let (j, s) = (e / p, e % p);
                let inside: f32 = (0..p).map(|t| q[j * p + t] * mix[t * p + s]).sum();
                inside + outside as f32 * (noise[e] - 0.5)
            })
            .collect();
        let q_buf = DeviceBuffer::from_slice(&gpu, "Q", &q);
        let w_buf = DeviceBuffer::from_slice(&gpu, "W", &w);
        let scratch = ProjectionScratch::new(&gpu, d, p);
        let mut batch = Batch::new(&gpu, "projection test");
        let handles = project_block(&gpu, &mut batch, &q_buf, &w_buf, &scratch).unwrap();
        let back = batch.finish().unwrap();
        let got = handles.take(&back);

        let q64: Vec<f64> = q.iter().map(|&v| v as f64).collect();
        let w64: Vec<f64> = w.iter().map(|&v| v as f64).collect();
        let qw = cross(&q64, &w64, d, p);
        let h: Vec<f64> = (0..p * p)
            .map(|e| 0.5 * (qw[e] + qw[(e % p) * p + e / p]))
            .collect();
        let g = cross(&q64, &q64, d, p);
        // R' = W − Q·H with the device's own H (the shader subtracts Q·H of that H).
        let outside_part: Vec<f64> = (0..d * p)
            .map(|e| {
                let (j, s) = (e / p, e % p);
                w64[e]
                    - (0..p)
                        .map(|t| q64[j * p + t] * got.h[t * p + s])
                        .sum::<f64>()
            })
            .collect();
        let e = cross(&outside_part, &outside_part, d, p);
        for (what, m) in [("H", &got.h), ("G", &got.g), ("E", &got.e)] {
            for r in 0..p {
                for s in 0..r {
                    assert_eq!(m[r * p + s], m[s * p + r], "{what} ({r}, {s})");
                }
            }
        }
        let (eh, eg, ee) = (
            rel_err(&got.h, &h),
            rel_err(&got.g, &g),
            rel_err(&got.e, &e),
        );
        assert!(eh < 1e-5, "d {d} p {p}: H {eh:e}");
        assert!(eg < 1e-5, "d {d} p {p}: G {eg:e}");
        // E's entries are outside² of W's. Formed from W − Q·H itself they keep about 1e-6
        // of their own scale even where the difference cancels four digits; from
        // WᵀW − 2H² + HGH in f32 nothing of them would be left at outside = 1e-4.
        assert!(ee < 1e-4, "d {d} p {p} outside {outside}: E {ee:e}");
    }
}
