//! The product-shaped kernels on the tile core (`shaders/shared/gemm.wgsl`) at every shape the
//! host may give the core ([`GemmConfig::ALL`]), held against the same products computed here
//! in f64: edges that are not multiples of a tile or of 4 (scalar loads), edges that are
//! (vec4 loads), offsets inside a binding, and values away from the origin.

use crate::data::Matrix;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::tests::{gpu, random};
use crate::gpu::GpuMatrix;
use crate::kernels::primitives::gemm::GemmConfig;
use crate::kernels::products::projection::{affine_matmul_with, AffineMap};
use crate::kernels::products::silhouette::{cluster_distance_sums_with, Rows};

/// Values in [−1, 1) plus `offset`.
fn centred(len: usize, seed: u64, offset: f32) -> Vec<f32> {
    random(len, seed)
        .into_iter()
        .map(|v| 2.0 * v - 1.0 + offset)
        .collect()
}

/// Largest |gpu − host| over the largest |host| (relative to the result's scale).
fn relative_error(gpu: &[f32], host: &[f64]) -> f64 {
    assert_eq!(gpu.len(), host.len());
    let scale = host.iter().fold(1e-30f64, |m, v| m.max(v.abs()));
    gpu.iter()
        .zip(host)
        .map(|(&g, &h)| (g as f64 - h).abs() / scale)
        .fold(0.0, f64::max)
}

#[test]
fn affine_products_match_f64_at_every_tile_shape() {
    let gpu = gpu();
    // (rows, in_cols, out_cols, offset rows before the input, seed): K and C below, at and
    // past a stage (8) and a tile, not multiples of 4 (scalar loads) and multiples (vec4
    // loads), an input that starts mid-buffer (one row in: aligned iff K is a multiple of 4).
    for (n, kin, c, skip, seed) in [
        (1, 1, 1, 0, 1),
        (37, 5, 3, 1, 2),
        (130, 16, 50, 0, 3),
        (200, 28, 32, 1, 4),
        (129, 784, 12, 0, 5),
        (70, 60, 129, 2, 6),
    ] {
        let input = centred((n + skip) * kin, seed, 3.0);
        let in_shift = centred(kin, seed + 10, 3.0);
        let weights = centred(kin * c, seed + 20, 0.0);
        let out_shift = centred(c, seed + 30, 0.0);
        let mut want = vec![0.0f64; n * c];
        for r in 0..n {
            for j in 0..c {
                let mut s = out_shift[j] as f64;
                for k in 0..kin {
                    let xs = (input[(skip + r) * kin + k] - in_shift[k]) as f64;
                    s += xs * weights[k * c + j] as f64;
                }
                want[r * c + j] = s;
            }
        }
        let buf = |name, v: &[f32]| DeviceBuffer::from_slice(&gpu, name, v);
        let (input_b, in_shift_b) = (buf("input", &input), buf("in shift", &in_shift));
        let (weights_b, out_shift_b) = (buf("weights", &weights), buf("out shift", &out_shift));
        let map = AffineMap {
            in_cols: kin,
            out_cols: c,
            in_shift: &in_shift_b,
            weights: &weights_b,
            out_shift: &out_shift_b,
        };
        for config in GemmConfig::ALL {
            let out = DeviceBuffer::<f32>::zeroed(&gpu, "output", n * c);
            let mut batch = Batch::new(&gpu, "affine");
            let at = (input_b.bind(), (skip * kin) as u32);
            affine_matmul_with(&gpu, &mut batch, at, n, &map, &out, config).unwrap();
            let h = batch.read_all(&out);
            let got = batch.finish().unwrap().f32s(h);
            let err = relative_error(&got, &want);
            assert!(
                err < 2e-6 * (kin as f64).sqrt().max(1.0),
                "{config:?} n {n} in {kin} out {c} skip {skip}: relative error {err:e}"
            );
        }
    }
}

#[test]
fn distance_sums_match_f64_at_every_tile_shape() {
    let gpu = gpu();
    // (queries, piece rows, D, first query, first data row, seed): D not a multiple of 4
    // (scalar loads) and a multiple (vec4 loads, from an aligned and an unaligned start),
    // pieces shorter and longer than a tile, and values away from the origin.
    for (nq, nd, d, q0, x0, seed) in [
        (1, 1, 1, 0, 0, 1),
        (70, 45, 3, 5, 2, 2),
        (130, 200, 16, 0, 1, 3),
        (33, 129, 36, 3, 4, 4),
        (200, 140, 130, 1, 0, 5),
    ] {
        let n = (q0 + nq).max(x0 + nd);
        let x = centred(n * d, seed, 50.0);
        let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let chunk = &xg.chunks()[0];
        let want: Vec<f64> = (0..nq)
            .map(|q| {
                (0..nd)
                    .map(|j| {
                        let (a, b) = (&x[(q0 + q) * d..][..d], &x[(x0 + j) * d..][..d]);
                        let s: f64 = a
                            .iter()
                            .zip(b)
                            .map(|(&u, &v)| (u as f64 - v as f64).powi(2))
                            .sum();
                        s.sqrt()
                    })
                    .sum()
            })
            .collect();
        let queries = Rows {
            chunk,
            first: q0,
            n_rows: nq,
        };
        let data = Rows {
            chunk,
            first: x0,
            n_rows: nd,
        };
        for config in GemmConfig::ALL {
            let sums = DeviceBuffer::<f32>::zeroed(&gpu, "sums", nq + 3);
            let mut batch = Batch::new(&gpu, "distance sums");
            let out = (&sums, 3);
            cluster_distance_sums_with(&gpu, &mut batch, d, (&queries, &data), out, config)
                .unwrap();
            let h = batch.read_all(&sums);
            let got = batch.finish().unwrap().f32s(h);
            assert!(
                got[..3].iter().all(|&v| v == 0.0),
                "{config:?}: wrote before out_offset"
            );
            let err = relative_error(&got[3..], &want);
            assert!(
                err < 1e-5,
                "{config:?} queries {nq} data {nd} d {d}: relative error {err:e}"
            );
        }
    }
}

#[test]
fn full_mahalanobis_norms_match_f64_past_the_uniform_twin() {
    use crate::kernels::mixture::estep::{record_mahalanobis, Components, Segment};
    let gpu = gpu();
    // D past the uniform twin's 64 (the tile by the output's shape: 64 x 64 below 128 rows or
    // columns, 128 x 128 from there), rows not a multiple of a tile, data away from the means'
    // origin.
    for (n, d, k, seed) in [(150, 65, 2, 1), (260, 130, 3, 2)] {
        let x = centred(n * d, seed, 5.0);
        let means = centred(k * d, seed + 1, 5.0);
        let mut prec = centred(k * d * d, seed + 2, 0.0);
        for (e, v) in prec.iter_mut().enumerate() {
            if (e % (d * d)) / d > e % d {
                *v = 0.0; // upper triangular, as the host sends the factors
            }
        }
        let want: Vec<f64> = (0..n)
            .flat_map(|r| (0..k).map(move |c| (r, c)))
            .map(|(r, c)| {
                (0..d)
                    .map(|j| {
                        let y: f64 = (0..=j)
                            .map(|i| {
                                let diff = x[r * d + i] as f64 - means[c * d + i] as f64;
                                diff * prec[c * d * d + i * d + j] as f64
                            })
                            .sum();
                        y * y
                    })
                    .sum()
            })
            .collect();
        let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let means_b = DeviceBuffer::from_slice(&gpu, "means", &means);
        let prec_b = DeviceBuffer::from_slice(&gpu, "precisions", &prec);
        let comps = Components {
            means: &means_b,
            precisions: &prec_b,
            prec_stride: d * d,
            full: true,
        };
        let resp = DeviceBuffer::<f32>::zeroed(&gpu, "resp", n * k);
        let seg = Segment {
            chunk: &xg.chunks()[0],
            first: 0,
            n_rows: n,
            resp: &resp,
        };
        let mut batch = Batch::new(&gpu, "mahalanobis");
        let full = crate::gpu::shaders::mixture::estep::MAHALANOBIS_FULL;
        record_mahalanobis(&gpu, &mut batch, full, &seg, d, k, &comps).unwrap();
        let h = batch.read_all(&resp);
        let got = batch.finish().unwrap().f32s(h);
        for (e, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let err = (g as f64 - w).abs() / w;
            assert!(
                err < 1e-4,
                "n {n} d {d} k {k}: q[{e}] = {g} against {w} ({err:e})"
            );
        }
    }
}
