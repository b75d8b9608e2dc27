//! The sorted update (`sorted.wgsl`) against sums computed here in f64 on awkward shapes (up
//! to K = 1000 on thousands of rows, empty clusters, one cluster holding half the rows,
//! weighted rows): the sorted order exactly (a stable sort by label), each piece's sums
//! within the f32 rounding of its summation order, its counts exactly; the same bits
//! whatever the tiles and cluster ranges, and again on the same labels; blocks outside its
//! pieces untouched. Whole fits through it: `kmeans/workspace_tests.rs`.

use super::partials::{Assigned, ClusterPartials};
use super::sorted::{
    fits, fixed_bytes, record_sorted, scratch_bytes, SortCache, SortShape, ROW_BYTES,
};
use crate::data::Matrix;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::tests::{gpu, random};
use crate::gpu::{Gpu, GpuMatrix};

/// What one run gives back: the sorted entries, then the partials of every block.
struct Run {
    sorted: Vec<u32>,
    sums: Vec<f32>,
    counts: Vec<u32>,
    sq_dist: Vec<f32>,
}

/// One test case: N rows of D features, K clusters, labels, weights or none.
struct Case {
    n: usize,
    d: usize,
    k: usize,
    x: Vec<f32>,
    labels: Vec<u32>,
    sq: Vec<f32>,
    old: Vec<f32>,
    weights: Option<Vec<f32>>,
}

/// How a case's labels fall.
#[derive(Clone, Copy, Debug)]
enum Spread {
    /// Round the clusters, leaving those from K / 2 + 1 to K − 2 empty when K > 4, so
    /// empty runs sit between full ones.
    Even,
    /// Half the rows in cluster 1, the rest falling as K·u³ for u uniform (most of them in
    /// the first clusters, one or two rows in the last ones, many of those empty).
    Skewed,
}

impl Case {
    /// Random rows and distances, labels spread as `spread`.
    fn new(n: usize, d: usize, k: usize, weighted: bool, spread: Spread, seed: u64) -> Self {
        let skip = |c: usize| k > 4 && c > k / 2 && c + 2 < k;
        let u = random(n, seed + 4);
        let labels = (0..n)
            .map(|r| match spread {
                Spread::Even => {
                    let mut c = (r * 7 + r / 3 + seed as usize) % k;
                    while skip(c) {
                        c = (c + 1) % k;
                    }
                    c as u32
                }
                Spread::Skewed if r % 2 == 0 => 1.min(k - 1) as u32,
                Spread::Skewed => ((k as f32 * u[r].powi(3)) as usize).min(k - 1) as u32,
            })
            .collect();
        Self {
            n,
            d,
            k,
            x: random(n * d, seed),
            labels,
            sq: random(n, seed + 1),
            old: random(k * d, seed + 2),
            weights: weighted.then(|| random(n, seed + 3).iter().map(|w| 2.0 * w).collect()),
        }
    }

    /// The host's sorted order: row indices grouped by label, in row order.
    fn order(&self) -> Vec<usize> {
        let mut rows: Vec<usize> = (0..self.n).collect();
        rows.sort_by_key(|&r| self.labels[r]);
        rows
    }

    /// The runs its `pieces` pieces cover, per (piece, cluster): the sorted rows.
    fn pieces(&self, pieces: usize) -> Vec<Vec<usize>> {
        let order = self.order();
        let mut out = vec![Vec::new(); pieces * self.k];
        let mut start = 0;
        for c in 0..self.k {
            let n_c = self.labels.iter().filter(|&&l| l as usize == c).count();
            let (q, rem) = (n_c / pieces, n_c % pieces);
            for p in 0..pieces {
                let first = start + p * q + p.min(rem);
                let len = q + usize::from(p < rem);
                out[p * self.k + c] = order[first..first + len].to_vec();
            }
            start += n_c;
        }
        out
    }

    /// Runs the sorted update cut as `shape` into blocks from 1 (block 0 must stay as the
    /// NaN it is filled with), on a chunk of the rows whose values start at an offset.
    fn run(&self, gpu: &Gpu, shape: SortShape) -> Run {
        let (n, d, k) = (self.n, self.d, self.k);
        assert!(fits(gpu, n, d, k, shape), "{shape:?}");
        // One row before the chunk's rows: x_offset = D (rows read as vec4s when D is a
        // multiple of 4).
        let padded: Vec<f32> = self.x[..d].iter().chain(&self.x).copied().collect();
        let xg = GpuMatrix::upload(gpu, &Matrix::new(&padded, d).unwrap()).unwrap();
        let mut chunk = xg.chunks()[0].clone();
        chunk.x_offset += d as u32;
        chunk.n_rows = n;
        let blocks = 1 + shape.n_pieces;
        let nan = |len| DeviceBuffer::from_slice(gpu, "partials", &vec![f32::NAN; len]);
        let (sums, sq_dist) = (nan(blocks * k * d), nan(blocks * k * 2));
        let counts = DeviceBuffer::from_slice(gpu, "counts", &vec![u32::MAX; blocks * k]);
        let labels = DeviceBuffer::from_slice(gpu, "labels", &self.labels);
        let sq = DeviceBuffer::from_slice(gpu, "sq", &self.sq);
        let old = DeviceBuffer::from_slice(gpu, "old", &self.old);
        let weights = self
            .weights
            .as_ref()
            .map(|w| DeviceBuffer::from_slice(gpu, "w", w));
        let rows = Assigned {
            d,
            k,
            labels: &labels,
            min_sq_dist: &sq,
            weights: weights.as_ref(),
            old_centroids: &old,
        };
        let out = ClusterPartials {
            block_rows: 1,
            block_offset: 1,
            sums: &sums,
            counts: &counts,
            sq_dist: &sq_dist,
        };
        let cache = SortCache::default();
        let scratch = cache.get(gpu, n, k, shape);
        let mut batch = Batch::new(gpu, "sorted update");
        record_sorted(gpu, &mut batch, &chunk, &rows, &out, shape, &scratch).unwrap();
        let h = [
            batch.read_values(scratch.sorted(), 0, 2 * n),
            batch.read_all(&sums),
            batch.read_all(&counts),
            batch.read_all(&sq_dist),
        ];
        let back = batch.finish().unwrap();
        Run {
            sorted: back.u32s(h[0]),
            sums: back.f32s(h[1]),
            counts: back.u32s(h[2]),
            sq_dist: back.f32s(h[3]),
        }
    }

    /// Checks `run` against the host's sort and sums in f64.
    fn check(&self, run: &Run, shape: SortShape, what: &str) {
        let (d, k) = (self.d, self.k);
        let rows: Vec<usize> = run.sorted.chunks(2).map(|e| e[0] as usize).collect();
        assert_eq!(rows, self.order(), "{what}: sorted rows");
        for (e, &r) in run.sorted.chunks(2).zip(&rows) {
            assert_eq!(e[1], self.sq[r].to_bits(), "{what}: distance of row {r}");
        }
        // Block 0 is outside the pieces: untouched.
        assert!(run.sums[..k * d].iter().all(|v| v.is_nan()), "{what}");
        assert!(run.counts[..k].iter().all(|&c| c == u32::MAX), "{what}");
        let w = |r: usize| self.weights.as_ref().map_or(1.0, |w| w[r] as f64);
        // Each lane of a piece sums its rows in order, then the lanes are added in a tree:
        // a sum's rounding error is at most (depth + 2) u Σ|terms| (the terms' own rounding
        // included), u = 2⁻²⁴. A row left out or summed twice moves a sum by a whole term.
        let row_lanes = 256 / shape.slice_vec4.next_power_of_two().min(256);
        for (pc, members) in self.pieces(shape.n_pieces).iter().enumerate() {
            let (at, c) = (k + pc, pc % k);
            assert_eq!(run.counts[at] as usize, members.len(), "{what}: count {pc}");
            let depth = members.len().div_ceil(row_lanes) + row_lanes.ilog2() as usize + 2;
            let close = |got: f32, terms: &mut dyn Iterator<Item = f64>, name: &str| {
                let (want, size) = terms.fold((0.0, 0.0), |(s, a), t| (s + t, a + t.abs()));
                let tol = depth as f64 * f32::EPSILON as f64 / 2.0 * size;
                assert!(
                    (got as f64 - want).abs() <= tol,
                    "{what}: {name} of piece {} cluster {c}: {got} vs {want} (tolerance {tol})",
                    pc / k
                );
            };
            for j in 0..d {
                let terms = members
                    .iter()
                    .map(|&r| w(r) * (self.x[r * d + j] - self.old[c * d + j]) as f64);
                close(run.sums[at * d + j], &mut terms.clone(), "sum");
            }
            let sq = members.iter().map(|&r| w(r) * self.sq[r] as f64);
            close(run.sq_dist[2 * at], &mut sq.clone(), "Σ w·d²");
            close(
                run.sq_dist[2 * at + 1],
                &mut members.iter().map(|&r| w(r)),
                "Σ w",
            );
        }
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

#[test]
fn sorted_update_matches_host_sums_and_is_the_same_whatever_the_tiles() {
    let gpu = gpu();
    // (N, D, K, weighted, spread): N past several tiles and not a multiple of a group;
    // D = 1, odd, 257 (slices), a multiple of 4 (vec4 loads); K = 1, K > 256, K = 1000 on
    // thousands of rows; empty clusters between full ones; half the rows in one cluster.
    for (i, &(n, d, k, weighted, spread)) in [
        (1000, 5, 3, false, Spread::Even),
        (777, 1, 1, true, Spread::Even),
        (600, 257, 300, false, Spread::Even),
        (513, 36, 10, true, Spread::Even),
        (300, 8, 2, false, Spread::Even),
        (6000, 12, 1000, true, Spread::Skewed),
        (5001, 64, 1000, false, Spread::Even),
        (4099, 20, 37, false, Spread::Skewed),
    ]
    .iter()
    .enumerate()
    {
        let case = Case::new(n, d, k, weighted, spread, 40 + i as u64);
        let default = SortShape::for_shape(n, d, k, 3);
        // The host's shape; then longer tiles (fewer would be more than N + K counts) and
        // small ranges, narrow slices, and more pieces than some clusters have rows.
        let other = SortShape {
            tile_rows: 2 * default.tile_rows,
            // Several ranges, the last one partial (a few ranges only at K = 1000: llvmpipe's
            // loop budget counts the scatter's walks once per range).
            range_k: if k > 100 { k / 3 } else { 7.min(k) },
            ..default
        };
        let shapes = [
            default,
            other,
            SortShape {
                slice_vec4: 3.min(d.div_ceil(4)),
                n_pieces: 5,
                ..other
            },
            SortShape {
                n_pieces: 1,
                ..default
            },
        ];
        let runs: Vec<Run> = shapes.iter().map(|&s| case.run(&gpu, s)).collect();
        for (run, shape) in runs.iter().zip(&shapes) {
            let what = format!("N {n} D {d} K {k} weighted {weighted} {spread:?} {shape:?}");
            case.check(run, *shape, &what);
        }
        // Tiles and ranges change how the sort runs, not its order, so not the sums.
        let what = format!("N {n} D {d} K {k}: tiles and ranges");
        assert_eq!(bits(&runs[0].sums), bits(&runs[1].sums), "{what}");
        assert_eq!(bits(&runs[0].sq_dist), bits(&runs[1].sq_dist), "{what}");
        // And the same labels give the same bits again.
        let again = case.run(&gpu, other);
        assert_eq!(bits(&again.sums), bits(&runs[1].sums), "{what}");
        assert_eq!(bits(&again.sq_dist), bits(&runs[1].sq_dist), "{what}");
    }
}

#[test]
fn sorted_shapes_fit_the_shaders_and_the_blocks() {
    // (N, D, K, blocks, the tile rows expected): few rows, many tiles of 256 (Fashion-MNIST);
    // many rows, tiles of about 4K rows (at least 1024); never under K rows.
    for (n, d, k, blocks, tile_rows) in [
        (1, 1, 1, 1, 256),
        (70_000, 784, 10, 274, 256),
        (200_000, 64, 1000, 261, 1024),
        (2_000_000, 128, 16, 7813, 1024),
        (20_000_000, 64, 1000, 80, 4096),
        (1_000_000, 256, 4096, 300, 4096),
        (5000, 5000, 100_000, 2, 65536),
    ] {
        let s = SortShape::for_shape(n, d, k, blocks);
        assert_eq!(s.tile_rows, tile_rows, "N {n} K {k}");
        assert!(s.n_pieces >= 1 && s.n_pieces <= blocks, "{s:?}");
        assert!(s.slice_vec4 * d.div_ceil(4).div_ceil(s.slice_vec4) >= d.div_ceil(4));
        // The tile counts stay under N + K values, and under N / 4 + K for many rows; the
        // scratch within the workspace's budget for it.
        let counts = n.div_ceil(s.tile_rows) * k;
        assert!(counts <= n + k, "{s:?}");
        assert!(n < 1 << 20 || counts <= n / 4 + k, "{s:?}");
        let budget = n as u64 * ROW_BYTES + fixed_bytes(k);
        assert!(scratch_bytes(n, k, s) <= budget, "{s:?}");
    }
}
