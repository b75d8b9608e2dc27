//! The fused assignment and update (`assign_rows_update`) against the two kernels it
//! replaces, the small-K assignment (`assign_stream`) then `accumulate_cluster_partials`
//! (sliced): the same labels, distances, changed count and per-block partials, bit for bit.
//! (A whole K-Means fit with and without it: `kmeans/workspace_tests.rs`.)

use crate::data::Matrix;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::tests::{gpu, random};
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::assign::fused::{fits, record_assign_rows_update};
use crate::kernels::assign::{record_assign, AssignScratch, AssignVariant, Assignment};
use crate::kernels::centroids::update::{
    accumulate_cluster_partials_at, Assigned, ClusterPartials, Slicing, UpdatePath,
};
use crate::kernels::feature_wg_size;

/// Values in [−3, 5): signs of both kinds, so deviations and sums cancel.
fn data(len: usize, seed: u64) -> Vec<f32> {
    random(len, seed).iter().map(|v| v * 8.0 - 3.0).collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// Everything one run writes: labels, distances, changed count, partial sums, counts and
/// the sums of w·d² and w.
#[derive(Debug, PartialEq)]
struct Written {
    labels: Vec<u32>,
    sq_dist: Vec<u32>,
    changed: u32,
    sums: Vec<u32>,
    counts: Vec<u32>,
    scalars: Vec<u32>,
}

/// One shape: rows, features, clusters, rows per block, rows per chunk.
struct Shape {
    n: usize,
    d: usize,
    k: usize,
    block_rows: usize,
    chunk_rows: usize,
}

/// Runs the fused kernel (`fused`) or assign_stream and the sliced update on every chunk of
/// `x`, from the same previous labels and with every output prefilled with the same junk
/// (so a value one run leaves unwritten shows).
fn run(gpu: &Gpu, s: &Shape, x: &[f32], c: &[f32], w: Option<&[f32]>, fused: bool) -> Written {
    let (d, k, block_rows) = (s.d, s.k, s.block_rows);
    gpu.set_max_chunk_bytes((s.chunk_rows * d * 4) as u64);
    let xg = GpuMatrix::upload(gpu, &Matrix::new(x, d).unwrap()).unwrap();
    let centroids = DeviceBuffer::from_slice(gpu, "centroids", c);
    let mut block_offsets = Vec::new();
    let mut n_blocks = 0;
    for chunk in xg.chunks() {
        block_offsets.push(n_blocks);
        n_blocks += chunk.n_rows.div_ceil(block_rows);
    }
    assert_eq!(
        xg.chunks().len() > 1,
        s.chunk_rows < s.n,
        "chunks of {}",
        s.chunk_rows
    );
    let junk = |len: usize| vec![-7.25f32; len];
    let sums = DeviceBuffer::from_slice(gpu, "sums", &junk(n_blocks * k * d));
    let counts = DeviceBuffer::from_slice(gpu, "counts", &vec![99u32; n_blocks * k]);
    let scalars = DeviceBuffer::from_slice(gpu, "sq_dist", &junk(n_blocks * k * 2));
    let changed = DeviceBuffer::zeroed(gpu, "changed", 1);
    let mut batch = Batch::new(gpu, "fused or not");
    let mut reads = Vec::new();
    for (i, chunk) in xg.chunks().iter().enumerate() {
        let rows = chunk.n_rows;
        let previous: Vec<u32> = (0..rows).map(|r| ((r * 5 + i) % k) as u32).collect();
        let labels = DeviceBuffer::from_slice(gpu, "labels", &previous);
        let min_sq_dist = DeviceBuffer::from_slice(gpu, "distances", &junk(rows));
        let weights = w.map(|w| {
            let first = chunk.row_start;
            DeviceBuffer::from_slice(gpu, "weights", &w[first..first + rows])
        });
        let to = Assignment {
            centroids: &centroids,
            k,
            labels: &labels,
            min_sq_dist: &min_sq_dist,
            changed: &changed,
        };
        let out = ClusterPartials {
            block_rows,
            block_offset: block_offsets[i],
            sums: &sums,
            counts: &counts,
            sq_dist: &scalars,
        };
        if fused {
            assert!(fits(gpu, chunk, d, k, block_rows));
            record_assign_rows_update(gpu, &mut batch, chunk, d, &to, weights.as_ref(), &out)
                .unwrap();
        } else {
            let scratch = AssignScratch::new(gpu, rows, d, k);
            let rows_variant = AssignVariant::Stream;
            record_assign(gpu, &mut batch, rows_variant, chunk, rows, d, &to, &scratch).unwrap();
            let assigned = Assigned {
                d,
                k,
                labels: &labels,
                min_sq_dist: &min_sq_dist,
                weights: weights.as_ref(),
                old_centroids: &centroids,
            };
            // The GPU design's update: slices of the storage buffers.
            let slicing = Slicing::for_shape(d, k, false);
            let path = UpdatePath::Sliced(slicing, feature_wg_size(slicing.slice_width));
            accumulate_cluster_partials_at(gpu, &mut batch, chunk, &assigned, &out, path, None)
                .unwrap();
        }
        reads.push((
            batch.read_all(&labels),
            batch.read_all(&min_sq_dist),
            labels,
            min_sq_dist,
            weights,
        ));
    }
    let (hs, hc, hq, hchanged) = (
        batch.read_all(&sums),
        batch.read_all(&counts),
        batch.read_all(&scalars),
        batch.read_all(&changed),
    );
    let back = batch.finish().unwrap();
    Written {
        labels: reads.iter().flat_map(|r| back.u32s(r.0)).collect(),
        sq_dist: reads.iter().flat_map(|r| bits(&back.f32s(r.1))).collect(),
        changed: back.u32s(hchanged)[0],
        sums: bits(&back.f32s(hs)),
        counts: back.u32s(hc),
        scalars: bits(&back.f32s(hq)),
    }
}

#[test]
fn assign_fused_gives_the_bits_of_the_assignment_and_the_sliced_update() {
    let gpu = gpu();
    // D in one piece, at its edge, in two (the second partial and full); K from 1 to SMALL_K;
    // N a multiple of neither the tile (64) nor the block; one chunk or several (the later
    // ones at offsets that are not multiples of 4, so rows load value by value).
    let shapes = [
        (1000, 1, 1, 128, 1000),
        (777, 3, 2, 192, 777),
        (515, 17, 10, 64, 200),
        (300, 32, 16, 256, 300),
        (333, 40, 5, 128, 333),
        (901, 64, 16, 192, 450),
        (130, 64, 2, 64, 61),
    ];
    for (n, d, k, block_rows, chunk_rows) in shapes {
        let s = Shape {
            n,
            d,
            k,
            block_rows,
            chunk_rows,
        };
        for seed in [1u64, 2] {
            let seed = seed + 10 * d as u64 + 1000 * k as u64;
            let x = data(n * d, seed);
            let mut c = data(k * d, seed + 1);
            // Ties: a repeated centroid (the lowest index wins) and rows on centroids.
            if k > 1 {
                c.copy_within(0..d, (k - 1) * d);
            }
            let mut x = x;
            x[..d].copy_from_slice(&c[..d]);
            let w: Vec<f32> = random(n, seed + 2).iter().map(|v| v * 2.0).collect();
            for weights in [None, Some(&w[..])] {
                let what = format!("N {n} D {d} K {k} blocks of {block_rows}, chunks of {chunk_rows}, seed {seed}, weighted {}", weights.is_some());
                let fused = run(&gpu, &s, &x, &c, weights, true);
                let apart = run(&gpu, &s, &x, &c, weights, false);
                assert!(
                    k == 1 || apart.changed > 0,
                    "{what}: the changed count is not exercised"
                );
                assert_eq!(fused.labels, apart.labels, "labels, {what}");
                assert_eq!(fused.sq_dist, apart.sq_dist, "distances, {what}");
                assert_eq!(fused.changed, apart.changed, "changed, {what}");
                assert_eq!(fused.counts, apart.counts, "counts, {what}");
                assert_eq!(fused.scalars, apart.scalars, "Σ w·d², Σ w, {what}");
                assert_eq!(fused.sums, apart.sums, "sums, {what}");
            }
        }
    }
}

#[test]
fn assign_fused_refuses_shapes_it_does_not_fit() {
    let gpu = gpu();
    let x = data(300 * 65, 5);
    let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, 65).unwrap()).unwrap();
    let chunk = &xg.chunks()[0];
    assert!(
        !fits(&gpu, chunk, 65, 4, 256),
        "D past one feature per invocation"
    );
    assert!(!fits(&gpu, chunk, 64, 17, 256), "K past SMALL_K");
    assert!(!fits(&gpu, chunk, 64, 4, 100), "blocks not whole tiles");
    assert!(fits(&gpu, chunk, 64, 16, 256));
}
