//! The kernels whose workgroup size the host picks (`FEATURE_WG_SIZE`), run at
//! every value it may pick and held against sums computed here on the host, for D below, at
//! and above each size (so invocations both idle and stride), on every path of the centroid
//! update.

use crate::data::Matrix;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::tests::{gpu, random};
use crate::gpu::texture::FlatTexture;
use crate::gpu::GpuMatrix;
use crate::kernels::centroids::update::{
    accumulate_cluster_partials_at, Assigned, ClusterPartials, Slicing, UpdatePath, UpdateTextures,
};
use crate::kernels::primitives::reduce::{
    column_moments, column_moments_at, mean_of_partial_columns, MomentBlocks,
};
use crate::kernels::{feature_wg_size, feature_wg_sizes};

const FEATURE_COUNTS: [usize; 6] = [1, 5, 33, 100, 257, 300];

#[test]
fn feature_wg_size_picks_only_the_values_the_tests_run() {
    let values: Vec<u32> = feature_wg_sizes().collect();
    assert_eq!(values, [32, 64, 128, 256]);
    for d in (1..=4096).chain([1 << 20, usize::MAX]) {
        let wg = feature_wg_size(d);
        assert!(values.contains(&wg), "d = {d}: {wg}");
        assert!(wg as usize >= d.min(256), "d = {d}: {wg} does not cover it");
    }
}

fn assert_close(what: &str, gpu: &[f32], host: &[f64]) {
    assert_eq!(gpu.len(), host.len(), "{what}");
    for (i, (&g, &h)) in gpu.iter().zip(host).enumerate() {
        let tol = 1e-5 * h.abs().max(1.0);
        assert!((g as f64 - h).abs() <= tol, "{what}[{i}]: {g} vs {h}");
    }
}

#[test]
fn centroid_partials_are_right_at_every_feature_workgroup_size() {
    let gpu = gpu();
    let (n, block_rows) = (150usize, 40);
    let n_blocks = n.div_ceil(block_rows);
    // k = 9 at D >= 257: several clusters per range with several slices.
    for (d, k) in FEATURE_COUNTS
        .iter()
        .map(|&d| (d, if d >= 257 { 9 } else { 3 }))
    {
        let x = random(n * d, d as u64);
        let old = random(k * d, 100 + d as u64);
        let labels: Vec<u32> = (0..n).map(|r| ((r * 7 + r / 5) % k) as u32).collect();
        let sq: Vec<f32> = random(n, 200 + d as u64);
        let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let labels_b = DeviceBuffer::from_slice(&gpu, "labels", &labels);
        let sq_b = DeviceBuffer::from_slice(&gpu, "sq", &sq);
        let old_b = DeviceBuffer::from_slice(&gpu, "old", &old);
        // Weights in [0, 2), or none (every weight 1).
        let w: Vec<f32> = random(n, 250 + d as u64)
            .iter()
            .map(|v| v.abs() * 2.0)
            .collect();
        let w_b = DeviceBuffer::from_slice(&gpu, "weights", &w);
        for weighted in [false, true] {
            let weight = |r: usize| if weighted { w[r] as f64 } else { 1.0 };
            // Host: per block, cluster and feature, in row order.
            let mut sums = vec![0.0f64; n_blocks * k * d];
            let mut counts = vec![0u32; n_blocks * k];
            let mut sq_dist = vec![0.0f64; n_blocks * k * 2];
            for r in 0..n {
                let (b, c) = (r / block_rows, labels[r] as usize);
                for j in 0..d {
                    sums[(b * k + c) * d + j] += weight(r) * (x[r * d + j] - old[c * d + j]) as f64;
                }
                counts[b * k + c] += 1;
                sq_dist[2 * (b * k + c)] += weight(r) * sq[r] as f64;
                sq_dist[2 * (b * k + c) + 1] += weight(r);
            }
            // (slicing, workgroup size, from textures): the shape's own slicing at every
            // size, and narrow slices and ranges that cut D and K into several workgroups.
            let mut runs: Vec<(UpdatePath, bool)> = feature_wg_sizes()
                .map(|wg| {
                    (
                        UpdatePath::Sliced(Slicing::for_shape(d, k, false), wg),
                        false,
                    )
                })
                .collect();
            let narrow = |w: usize| Slicing {
                slice_width: w,
                range_k: 2,
            };
            runs.push((UpdatePath::Sliced(narrow(3), 32), false));
            runs.push((UpdatePath::Segments, false));
            if d.is_multiple_of(4) {
                for wg in feature_wg_sizes() {
                    runs.push((UpdatePath::Sliced(Slicing::for_shape(d, k, true), wg), true));
                }
                runs.push((UpdatePath::Sliced(narrow(8), 32), true));
                runs.push((UpdatePath::Segments, true));
            }
            let mut first_bits: Option<Vec<f32>> = None;
            for (path, texels) in runs {
                let out_sums = DeviceBuffer::zeroed(&gpu, "sums", n_blocks * k * d);
                let out_counts = DeviceBuffer::zeroed(&gpu, "counts", n_blocks * k);
                let out_sq = DeviceBuffer::zeroed(&gpu, "sq_dist", n_blocks * k * 2);
                let out = ClusterPartials {
                    block_rows,
                    block_offset: 0,
                    sums: &out_sums,
                    counts: &out_counts,
                    sq_dist: &out_sq,
                };
                let rows = Assigned {
                    d,
                    k,
                    labels: &labels_b,
                    min_sq_dist: &sq_b,
                    weights: weighted.then_some(&w_b),
                    old_centroids: &old_b,
                };
                let mut batch = Batch::new(&gpu, "partials");
                let chunk = &xg.chunks()[0];
                let textures = texels.then(|| {
                    let rows_t = FlatTexture::new(&gpu, "rows", n * d).unwrap();
                    let cent_t = FlatTexture::new(&gpu, "centroids", k * d).unwrap();
                    let start = chunk.bind_offset + 4 * chunk.x_offset as u64;
                    batch.copy_to_texture(&chunk.buffer, start, &rows_t);
                    batch.copy_to_texture(old_b.raw(), 0, &cent_t);
                    (rows_t, cent_t)
                });
                let t = textures.as_ref().map(|(r, c)| UpdateTextures {
                    rows: r,
                    centroids: c,
                });
                accumulate_cluster_partials_at(
                    &gpu,
                    &mut batch,
                    chunk,
                    &rows,
                    &out,
                    path,
                    t.as_ref(),
                )
                .unwrap();
                let hs = batch.read_all(&out_sums);
                let hc = batch.read_all(&out_counts);
                let hq = batch.read_all(&out_sq);
                let back = batch.finish().unwrap();
                let what =
                    format!("D = {d}, K = {k}, {path:?}, textures {texels}, weighted {weighted}");
                let got = back.f32s(hs);
                assert_close(&format!("sums, {what}"), &got, &sums);
                assert_eq!(back.u32s(hc), counts, "counts, {what}");
                assert_close(&format!("sq_dist, {what}"), &back.f32s(hq), &sq_dist);
                // One summation order everywhere: the same bits from every run.
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                match &first_bits {
                    Some(f) => assert_eq!(bits(f), bits(&got), "bits, {what}"),
                    None => first_bits = Some(got),
                }
            }
        }
    }
}

#[test]
fn column_moments_are_right_at_every_feature_workgroup_size() {
    let gpu = gpu();
    let (n, block_rows) = (130usize, 50);
    let n_blocks = n.div_ceil(block_rows);
    for d in FEATURE_COUNTS {
        let x = random(n * d, 300 + d as u64);
        let shift = x[..d].to_vec();
        let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let shift_b = DeviceBuffer::from_slice(&gpu, "shift", &shift);
        let mut s1 = vec![0.0f64; n_blocks * d];
        let mut s2 = vec![0.0f64; n_blocks * d];
        for r in 0..n {
            for j in 0..d {
                let v = (x[r * d + j] - shift[j]) as f64;
                s1[(r / block_rows) * d + j] += v;
                s2[(r / block_rows) * d + j] += v * v;
            }
        }
        for wg in feature_wg_sizes() {
            let (sum, sum_sq) = (
                DeviceBuffer::zeroed(&gpu, "s1", n_blocks * d),
                DeviceBuffer::zeroed(&gpu, "s2", n_blocks * d),
            );
            let blocks = MomentBlocks {
                block_rows,
                block_offset: 0,
                partial_sum: &sum,
                partial_sum_sq: &sum_sq,
            };
            let mut batch = Batch::new(&gpu, "moments");
            let chunk = &xg.chunks()[0];
            column_moments_at(&gpu, &mut batch, chunk, d, &shift_b, &blocks, wg).unwrap();
            let (h1, h2) = (batch.read_all(&sum), batch.read_all(&sum_sq));
            let back = batch.finish().unwrap();
            let what = format!("D = {d}, FEATURE_WG_SIZE = {wg}");
            assert_close(&format!("Σ, {what}"), &back.f32s(h1), &s1);
            assert_close(&format!("Σ², {what}"), &back.f32s(h2), &s2);
        }
    }
}

#[test]
fn column_means_fold_on_the_device_to_the_f64_means() {
    // Values far from the origin, several blocks: the device's f32 mean (the centre a PCA
    // piece's cross products take) lands on the f64 mean to f32 rounding of its size.
    let gpu = gpu();
    for (n, d, offset, seed) in [(130usize, 5usize, 500.0f32, 1u64), (1000, 33, -20.0, 2)] {
        let block_rows = 64;
        let n_blocks = n.div_ceil(block_rows);
        let x: Vec<f32> = random(n * d, seed)
            .iter()
            .map(|v| offset + 3.0 * v)
            .collect();
        let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let shift = DeviceBuffer::from_slice(&gpu, "shift", &x[..d]);
        let sum = DeviceBuffer::zeroed(&gpu, "s1", n_blocks * d);
        let sum_sq = DeviceBuffer::zeroed(&gpu, "s2", n_blocks * d);
        let means = DeviceBuffer::zeroed(&gpu, "means", d);
        let blocks = MomentBlocks {
            block_rows,
            block_offset: 0,
            partial_sum: &sum,
            partial_sum_sq: &sum_sq,
        };
        let mut batch = Batch::new(&gpu, "means");
        column_moments(&gpu, &mut batch, &xg.chunks()[0], d, &shift, &blocks).unwrap();
        mean_of_partial_columns(&gpu, &mut batch, (&sum, n_blocks, d), &shift, n, &means).unwrap();
        let h = batch.read_all(&means);
        let got = batch.finish().unwrap().f32s(h);
        for j in 0..d {
            let want = (0..n).map(|r| x[r * d + j] as f64).sum::<f64>() / n as f64;
            let err = (got[j] as f64 - want).abs();
            assert!(
                err <= 4e-7 * want.abs().max(1.0),
                "n {n} d {d} column {j}: {} vs {want}",
                got[j]
            );
        }
    }
}
