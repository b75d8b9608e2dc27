//! The recheck (`recheck.rs`) against the one-row variant it must match bit for bit, on rows
//! that all go to the list (their nearest centroid comes in three equal copies, which no bound
//! can tell apart), with the centroids in one run and in runs that split the copies, in one
//! chunk and several.

use super::recheck::with_run_cap;
use super::{record_assign, AssignScratch, AssignVariant, Assignment};
use crate::data::Matrix;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::tests::{gpu, random};
use crate::gpu::GpuMatrix;
use crate::kernels::primitives::gemm::GemmConfig;

/// Labels, distances (bits) and changed count of `variant` over every chunk of `xg`, and how
/// many rows went to the recheck list.
fn run(
    gpu: &crate::gpu::Gpu,
    xg: &GpuMatrix,
    c: &[f32],
    (d, k): (usize, usize),
    variant: AssignVariant,
) -> (Vec<u32>, Vec<u32>, u32, u32) {
    let centroids = DeviceBuffer::from_slice(gpu, "centroids", c);
    let changed = DeviceBuffer::<u32>::zeroed(gpu, "changed", 1);
    let mut batch = Batch::new(gpu, "recheck test");
    let mut handles = Vec::new();
    let mut keep = Vec::new();
    for chunk in xg.chunks() {
        let labels = DeviceBuffer::<u32>::zeroed(gpu, "labels", chunk.n_rows);
        let dist = DeviceBuffer::<f32>::zeroed(gpu, "dist", chunk.n_rows);
        let scratch = AssignScratch::new(gpu, chunk.n_rows, d, k);
        let to = Assignment {
            centroids: &centroids,
            k,
            labels: &labels,
            min_sq_dist: &dist,
            changed: &changed,
        };
        record_assign(
            gpu,
            &mut batch,
            variant,
            chunk,
            chunk.n_rows,
            d,
            &to,
            &scratch,
        )
        .unwrap();
        handles.push((
            batch.read_all(&labels),
            batch.read_all(&dist),
            scratch.read_rechecked(&mut batch),
        ));
        keep.push((labels, dist, scratch));
    }
    let h_changed = batch.read_all(&changed);
    let back = batch.finish().unwrap();
    let (mut labels, mut dist, mut listed) = (Vec::new(), Vec::new(), 0);
    for (l, m, r) in handles {
        labels.extend(back.u32s(l));
        dist.extend(back.u32s(m));
        listed += back.u32s(r)[0];
    }
    (labels, dist, back.u32s(h_changed)[0], listed)
}

#[test]
fn the_recheck_gives_the_one_row_kernels_bits_in_any_split_of_the_centroids() {
    let gpu = gpu();
    // 64 distinct: the three copies of a centroid are RECHECK_WG apart, so one invocation
    // walks all three at once in the lanes of its vec4 and must keep the first.
    for (n, d, distinct, seed) in [(300, 20, 40, 1u64), (257, 7, 23, 2), (200, 5, 64, 3)] {
        // Each distinct centroid three times, far apart in the list (k = 3 x distinct), and
        // rows near the distinct centroids: every row's nearest comes as three equal copies.
        let base = random(distinct * d, seed);
        let c: Vec<f32> = (0..3).flat_map(|_| base.iter().copied()).collect();
        let k = 3 * distinct;
        let noise = random(n * d, seed + 10);
        let x: Vec<f32> = (0..n * d)
            .map(|e| base[(e / d % distinct) * d + e % d] + 0.01 * noise[e])
            .collect();
        for chunk_rows in [None, Some(100)] {
            gpu.set_max_chunk_bytes(chunk_rows.map_or(u64::MAX, |r| (r * d * 4) as u64));
            let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
            let want = run(&gpu, &xg, &c, (d, k), AssignVariant::Registers);
            let tiled = AssignVariant::Tiled(GemmConfig::SMALL);
            for cap in [k, 7, 1] {
                let got = with_run_cap(cap, || run(&gpu, &xg, &c, (d, k), tiled));
                let what = format!("n {n} d {d} k {k} chunk {chunk_rows:?} cap {cap}");
                assert_eq!(got.3 as usize, n, "{what}: every row should be rechecked");
                assert_eq!(got.0, want.0, "{what}: labels");
                assert_eq!(got.1, want.1, "{what}: distances");
                assert_eq!(got.2, want.2, "{what}: changed");
                // The lowest of the three copies wins.
                assert!(got.0.iter().all(|&l| (l as usize) < distinct), "{what}");
            }
        }
    }
}
