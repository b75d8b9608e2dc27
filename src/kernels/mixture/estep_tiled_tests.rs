//! The one-kernel E-step of diagonal factors (`estep_diag_tiled`) must give the bits of the
//! two kernels it replaces on GPUs (`mahalanobis_diag`, then `normalize_responsibilities`),
//! whatever its tile shape: the responsibilities, log p, labels and block sums of log p.

use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::shaders::mixture::estep as wgsl;
use crate::gpu::tests::{gpu, random};
use crate::gpu::GpuMatrix;
use crate::kernels::mixture::estep::{
    record_mahalanobis, record_normalize, Components, RowOutputs, Segment, NORMALIZE_ROWS,
};
use crate::kernels::mixture::estep_tiled;

#[test]
fn the_tiled_estep_gives_the_bits_of_the_two_kernels() {
    let gpu = gpu();
    // (rows, D, K, first row of the segment in its chunk, components of weight zero, seed):
    // rows past one and several workgroups and not a multiple of a row tile, D = 1, D not a
    // multiple of a stage (8) and past several, K = 1, K past one component tile of each
    // shape (16, 32, 64) and not a multiple of 4, a segment starting inside its chunk, a
    // component of weight zero and every component of weight zero (log p = −∞).
    for (n, d, k, first, zero_weights, seed) in [
        (300, 5, 3, 0, 0, 41),
        (700, 1, 1, 37, 0, 42),
        (513, 30, 17, 0, 1, 43),
        (260, 13, 70, 5, 0, 44),
        (90, 64, 50, 0, 0, 45),
        (257, 9, 33, 0, 0, 46),
        (40, 3, 4, 2, 4, 47),
    ] {
        let total = first + n;
        let x: Vec<f32> = random(total * d, seed)
            .iter()
            .map(|v| 6.0 * v - 3.0)
            .collect();
        let xg = GpuMatrix::upload(&gpu, &crate::data::Matrix::new(&x, d).unwrap()).unwrap();
        let means = DeviceBuffer::from_slice(&gpu, "means", &random(k * d, seed + 1));
        let factors: Vec<f32> = random(k * d, seed + 2).iter().map(|v| v + 0.3).collect();
        let precisions = DeviceBuffer::from_slice(&gpu, "precisions", &factors);
        let mut log_const: Vec<f32> = random(k, seed + 3).iter().map(|v| v - 2.0).collect();
        for c in log_const.iter_mut().take(zero_weights) {
            *c = f32::NEG_INFINITY;
        }
        let log_const = DeviceBuffer::from_slice(&gpu, "log_const", &log_const);
        let comps = Components {
            means: &means,
            precisions: &precisions,
            prec_stride: d,
            full: false,
        };
        // The segment's block sums start at block 3 of the buffer, its per-row outputs at
        // its first row inside the chunk.
        let blocks = 3 + n.div_ceil(NORMALIZE_ROWS);
        let run = |tiled: Option<u32>| {
            let resp = DeviceBuffer::<f32>::zeroed(&gpu, "resp", n * k);
            let log_density = DeviceBuffer::<f32>::zeroed(&gpu, "log p", total);
            let labels = DeviceBuffer::<u32>::zeroed(&gpu, "labels", total);
            let block_sums = DeviceBuffer::<f32>::zeroed(&gpu, "blocks", blocks);
            let seg = Segment {
                chunk: &xg.chunks()[0],
                first,
                n_rows: n,
                resp: &resp,
            };
            let out = RowOutputs {
                log_density: &log_density,
                labels: &labels,
                block_log_density: &block_sums,
                block_offset: 3,
            };
            let mut batch = Batch::new(&gpu, "tiled estep");
            match tiled {
                Some(lanes) => {
                    let dk = (d, k);
                    estep_tiled::record(&gpu, &mut batch, &seg, dk, &comps, &log_const, &out, lanes)
                        .unwrap()
                }
                None => {
                    let native = wgsl::MAHALANOBIS_DIAG;
                    record_mahalanobis(&gpu, &mut batch, native, &seg, d, k, &comps).unwrap();
                    record_normalize(&gpu, &mut batch, &seg, k, &log_const, &out, false).unwrap();
                }
            }
            let h = [
                batch.read_all(&resp),
                batch.read_all(&log_density),
                batch.read_all(&labels),
                batch.read_all(&block_sums),
            ];
            let back = batch.finish().unwrap();
            h.map(|h| back.u32s(h))
        };
        let want = run(None);
        if zero_weights < k {
            // Responsibilities that sum to one: the exp path ran.
            let r = &want[0];
            assert!((0..n).all(|i| {
                let s: f32 = r[i * k..(i + 1) * k]
                    .iter()
                    .map(|&v| f32::from_bits(v))
                    .sum();
                (s - 1.0).abs() < 1e-5
            }));
        }
        for lanes in [4, 8, 16] {
            let got = run(Some(lanes));
            for (what, (a, b)) in ["resp", "log p", "labels", "block sums"]
                .iter()
                .zip(want.iter().zip(&got))
            {
                assert!(
                    a == b,
                    "{what}: n {n} d {d} k {k} first {first} lanes {lanes}: tiled differs"
                );
            }
        }
        assert_eq!(
            estep_tiled::lanes_c(k),
            [4, 8, 16][(k > 16) as usize + (k > 32) as usize]
        );
    }
}
