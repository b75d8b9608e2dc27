//! The Lloyd update on GPUs from the rows sorted by label (`shaders/centroids/sorted.wgsl`):
//! a stable counting sort of the chunk's rows by label (histogram per tile, scans, scatter),
//! then a workgroup per (piece of a cluster's run, cluster, feature slice) sums its rows'
//! deviations from the old centroid, the rows read as vec4s, once. It writes the partials
//! of [`accumulate_cluster_partials`](super::update::accumulate_cluster_partials) (a block
//! there is a piece here), so the column sums and the readback are unchanged.
//!
//! # Cost (per chunk of N rows, D features, K clusters; a reviewer's prediction)
//!
//! Five dispatches. Bytes (R = ⌈K / 2048⌉ ranges of clusters, 1 up to K = 2048; T tiles):
//!
//! | pass | reads | writes | bound |
//! |---|---|---|---|
//! | `sort_count` | labels 4N·R | counts 4TK | labels, coalesced |
//! | `sort_scan_tiles` | counts 4TK | counts 4TK, piece counts | one workgroup per cluster |
//! | `sort_scan_clusters` | 4K | 4K | one workgroup, negligible |
//! | `sort_scatter` | labels 4N·R, distances 4N, counts 4TK | entries 8N | the rank walk |
//! | `segment_partials` | rows 4ND, entries 8N per slice, weights 4N | partials | HBM |
//!
//! T·K stays under N/4 + K values when N is large (tiles of about 4K rows) and under
//! N + K when N is small ([`SortShape::for_shape`]). So the unweighted update moves about
//! 4ND + 28N bytes where any implementation moves 4ND + 8N (X, labels, distances): at
//! D = 64 284 against 264 bytes a row (+8%), at D = 784 3164 against 3144 (+1%).
//!
//! Where it falls short of the copy rate, by pass:
//! - `segment_partials` reads each row once, whole, its vec4s side by side across
//!   invocations (a 256-byte row at D = 64 is two full 128-byte lines), but in label order:
//!   a gather of 4D-byte rows, which HBM serves at nearly the streaming rate from D ≈ 16
//!   (64-byte rows) up; below D = 8 each row is under one 32-byte sector and the pass reads
//!   more than it uses. The weights are gathered too (a 32-byte sector for 4 bytes: weighted
//!   fits read about 28 bytes a row more than they need). Each row's load waits on its
//!   sorted entry's, so the next two entries are loaded a trip ahead; a workgroup keeps
//!   2 · 256 / lanes rows in flight, thousands of workgroups in a large chunk.
//! - `sort_scatter`: a row's rank among the rows of its label in its group of 64 is a walk
//!   over the labels before it, about 9 warp instructions a row: ~0.17 ms at 20M rows on an
//!   H200 (~1e12 warp instructions/s), against ~1.1 ms to read X at D = 64 (5.1 GB at
//!   4.8 TB/s). Its 8-byte writes land at K cursors per tile: with K in the hundreds and
//!   more, one row per cursor per group, so the writes are partial sectors (merged in L2
//!   where the cursors' lines stay there).
//! - Each tile is one workgroup's serial walk (64 rows a step, three barriers each), so the
//!   tiles are many where N is small: 274 tiles of 256 rows at 70,000 rows (Fashion-MNIST).
//! - Pieces: every cluster's run is cut into the same number of pieces,
//!   N / (K · 16 · row lanes) up to the chunk's blocks. While they outnumber the workgroups
//!   a GPU holds at once (~1000 on an H200), even a cluster of half the rows is spread over
//!   the whole GPU; with fewer (K in the hundreds and more, or a small chunk) a cluster far
//!   above the mean is summed by few workgroups and sets the pass's tail: at 20M x 64,
//!   K = 1000, 78 pieces, so a cluster of half the rows is 78 workgroups of 33 MB each,
//!   ~10 GB/s apiece, ~2.5x the pass's ideal time. The assignment then costs ~30x the
//!   update.
//!
//! Prediction on an H200 (~4.1 TB/s measured copy): 20M x 64, K = 1000: ~5.7 GB, the sort
//! ~0.3 ms and the sums ~1.3 ms, about 80% of the copy ceiling for the bytes any update
//! must move (the sliced update measured 18 GB/s, under 1%); 70,000 x 784, K = 10: 220 MB
//! of rows (~55 µs) and ~10-15 µs of sort and dispatch gaps, about 75%.

use std::cell::{Ref, RefCell};

use bytemuck::{Pod, Zeroable};

use super::partials::{Assigned, ClusterPartials};
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{centroids::sorted as wgsl, check_params};
use crate::gpu::Gpu;
use crate::kernels::fits_loop_budget;
use crate::kernels::primitives::gemm::{rows_vec4, vec4_placeholder};

/// Twin of `SortParams` in shaders/centroids/sorted.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct SortParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    k: u32,
    grid_x: u32,
    tile_rows: u32,
    n_tiles: u32,
    range_k: u32,
    n_pieces: u32,
    block_offset: u32,
    weighted: u32,
    x_vec4: u32,
    slice_vec4: u32,
    n_slices: u32,
    lanes: u32,
    _pad0: u32,
}

const _: () = check_params::<SortParams>(wgsl::ENTRY_POINTS);

/// Invocations of the counting and scanning kernels (`SORT_WG`).
const SORT_WG: usize = wgsl::SORT_WG as usize;
/// Invocations of `sort_scatter` (`SCATTER_WG`): rows of one scatter group.
const SCATTER_WG: usize = wgsl::SCATTER_WG as usize;
/// Most clusters of one range of the histogram and cursors (`SORT_CLUSTERS`).
const SORT_CLUSTERS: usize = wgsl::SORT_CLUSTERS as usize;
/// Invocations of `segment_partials` (`SEGMENT_WG`).
const SEGMENT_WG: usize = wgsl::SEGMENT_WG as usize;
/// Most vec4s of one feature slice (`SEGMENT_MAX_VEC4`).
const SEGMENT_MAX_VEC4: usize = wgsl::SEGMENT_MAX_VEC4 as usize;

/// Rows each row lane of `segment_partials` sums in an average piece: enough to amortise a
/// workgroup's start (the old centroid, the piece's bounds) and its fold, few enough that a
/// chunk has pieces for every SM.
const ROWS_PER_LANE: usize = 16;

/// Tiles the count and the scatter aim for: about 8 workgroups per SM of a 132-SM GPU, so
/// that a chunk of 70,000 rows (Fashion-MNIST) is not 69 serial walks of 1024 rows.
const TILES_TARGET: usize = 1024;

/// How the host cuts the sorted update: every choice gives the same sorted order, and the
/// same bits for the same lanes and pieces (the tests pick small ones to reach every loop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SortShape {
    /// Rows per tile of the histogram and the scatter (a multiple of `SORT_WG`).
    pub tile_rows: usize,
    /// Clusters per range (at most `SORT_CLUSTERS`).
    pub range_k: usize,
    /// vec4s per feature slice (at most `SEGMENT_MAX_VEC4`).
    pub slice_vec4: usize,
    /// Pieces per cluster (at most the chunk's blocks).
    pub n_pieces: usize,
}

impl SortShape {
    /// The shape for `n` rows of `d` features, `k` clusters and `blocks` blocks of partials.
    /// Tiles: a tile is one workgroup's serial walk in the count and the scatter, and each
    /// tile adds K counts, so the tiles are as many as [`TILES_TARGET`] asks (never under
    /// 256 rows) where N is small, and at most about 4K rows (from 1024 to 65,536) where it
    /// is large, but never under K rows: the counts stay under N + K values in all, and
    /// under N/4 + K where N is large. Every cluster in one range up to `SORT_CLUSTERS`;
    /// equal slices of at most `SEGMENT_MAX_VEC4` vec4s; pieces of about `ROWS_PER_LANE`
    /// rows per row lane of an average cluster, at most `blocks`.
    pub(crate) fn for_shape(n: usize, d: usize, k: usize, blocks: usize) -> Self {
        let (d4, k) = (d.div_ceil(4).max(1), k.max(1));
        let slice_vec4 = d4.div_ceil(d4.div_ceil(SEGMENT_MAX_VEC4));
        let row_lanes = SEGMENT_WG / lanes(slice_vec4);
        let n_pieces = n.div_ceil(k * ROWS_PER_LANE * row_lanes);
        let many = n.div_ceil(TILES_TARGET).next_power_of_two().max(256);
        let long = (4 * k).next_power_of_two().clamp(1024, 65536);
        Self {
            tile_rows: many.min(long).max(k.next_power_of_two()).min(65536),
            range_k: k.min(SORT_CLUSTERS),
            slice_vec4,
            n_pieces: n_pieces.clamp(1, blocks.max(1)),
        }
    }

    /// Tiles of `n` rows.
    fn n_tiles(self, n: usize) -> usize {
        n.div_ceil(self.tile_rows).max(1)
    }

    /// Whether the shaders' constants allow it.
    fn valid(self) -> bool {
        self.tile_rows >= SORT_WG
            && self.tile_rows.is_multiple_of(SORT_WG)
            && self.tile_rows.is_multiple_of(SCATTER_WG)
            && (1..=SORT_CLUSTERS).contains(&self.range_k)
            && (1..=SEGMENT_MAX_VEC4).contains(&self.slice_vec4)
            && self.n_pieces >= 1
    }
}

/// Invocations per row in `segment_partials` for slices of `slice_vec4` vec4s: the power of
/// two that covers them, so the row lanes are whole.
fn lanes(slice_vec4: usize) -> usize {
    slice_vec4.next_power_of_two().min(SEGMENT_WG)
}

/// Device scratch of the sorted update: the sorted entries (two u32 per row), the tile
/// counts and the clusters' starts.
pub(crate) struct SortScratch {
    sorted: DeviceBuffer<u32>,
    tile_counts: DeviceBuffer<u32>,
    cluster_starts: DeviceBuffer<u32>,
}

impl SortScratch {
    /// Scratch for `rows` rows, `k` clusters and `tiles` tiles.
    fn new(gpu: &Gpu, rows: usize, k: usize, tiles: usize) -> Self {
        Self {
            sorted: DeviceBuffer::zeroed(gpu, "rows sorted by label", 2 * rows.max(1)),
            tile_counts: DeviceBuffer::zeroed(gpu, "label counts per tile", tiles * k),
            cluster_starts: DeviceBuffer::zeroed(gpu, "cluster starts", k + 1),
        }
    }

    /// Whether it holds `rows` rows, `k` clusters and `tiles` tiles.
    fn holds(&self, rows: usize, k: usize, tiles: usize) -> bool {
        self.sorted.len() >= 2 * rows
            && self.tile_counts.len() >= tiles * k
            && self.cluster_starts.len() == k + 1
    }

    /// The sorted entries, (row, bits of its squared distance) per row, grouped by label in
    /// row order (the tests read them).
    #[cfg(test)]
    pub(crate) fn sorted(&self) -> &DeviceBuffer<u32> {
        &self.sorted
    }
}

/// [`SortScratch`] made on first use and kept (the K-Means workspace keeps one per chunk in
/// its assignment scratch, so iterations allocate nothing).
#[derive(Default)]
pub(crate) struct SortCache(RefCell<Option<SortScratch>>);

impl SortCache {
    /// The scratch for `rows` rows and `k` clusters cut as `shape`, made or grown here.
    pub(crate) fn get(
        &self,
        gpu: &Gpu,
        rows: usize,
        k: usize,
        shape: SortShape,
    ) -> Ref<'_, SortScratch> {
        let tiles = shape.n_tiles(rows);
        let fits = self
            .0
            .borrow()
            .as_ref()
            .is_some_and(|s| s.holds(rows, k, tiles));
        if !fits {
            *self.0.borrow_mut() = Some(SortScratch::new(gpu, rows, k, tiles));
        }
        Ref::map(self.0.borrow(), |s| s.as_ref().expect("made above"))
    }
}

/// Device bytes of the scratch per row of a chunk, the budget's share of it that grows with
/// the rows (the K-Means workspace counts it per device row, so that a streamed fit counts
/// its pieces, not the source): the sorted entry (8) and at most one tile count (4: [`fits`]
/// refuses more than N + K counts).
pub(crate) const ROW_BYTES: u64 = 12;

/// Device bytes of the scratch besides [`ROW_BYTES`] a row, for `k` clusters: the counts past
/// N (at most K) and the K + 1 starts.
pub(crate) fn fixed_bytes(k: usize) -> u64 {
    4 * (2 * k as u64 + 1)
}

/// Device bytes of the scratch [`SortCache::get`] makes for `n` rows and `k` clusters cut
/// as `shape`: the sorted entries, the tile counts, the starts.
#[cfg(test)]
pub(crate) fn scratch_bytes(n: usize, k: usize, shape: SortShape) -> u64 {
    4 * (2 * n.max(1) + shape.n_tiles(n) * k + k + 1) as u64
}

/// Whether the sorted update runs `n` rows of `d` features and `k` clusters cut as `shape`
/// on this adapter: the tile counts are at most N + K (the budget, [`ROW_BYTES`]), the counts
/// index in u32 and every invocation's loops stay within the adapter's budget (llvmpipe,
/// where the tests force the GPU design).
pub(crate) fn fits(gpu: &Gpu, n: usize, d: usize, k: usize, shape: SortShape) -> bool {
    let tiles = shape.n_tiles(n);
    let ranges = k.div_ceil(shape.range_k);
    let groups = shape.tile_rows / SCATTER_WG;
    let row_lanes = SEGMENT_WG / lanes(shape.slice_vec4);
    // The longest loop of each kernel: the scatter's groups, each with its rank walk; the
    // scans' runs and fold; the longest piece (at most N rows over the pieces) per row lane.
    let back_edges = [
        ranges * (groups * (SCATTER_WG + 2) + 2 * shape.range_k.div_ceil(SCATTER_WG) + 1),
        2 * tiles.div_ceil(SORT_WG) + 2 * k.div_ceil(SORT_WG) + 16 + shape.n_pieces,
        n.div_ceil(shape.n_pieces * 2 * row_lanes) + 16,
    ];
    let values = (tiles as u64 * k as u64).max((n * d) as u64 + 4);
    shape.valid()
        && tiles * k <= n + k
        && k >= 1
        && d >= 1
        && values < u32::MAX as u64
        && back_edges.iter().all(|&b| fits_loop_budget(gpu, b))
}

/// Records the sorted update of `chunk`: its rows sorted by label into `scratch`, then the
/// partials of `out` for pieces 0 .. `shape.n_pieces` of every cluster (in blocks
/// `out.block_offset` onwards; later blocks of the chunk are left as they are: the caller
/// clears them), each row weighted by its weight when the rows are weighted.
pub(crate) fn record_sorted(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    rows: &Assigned<'_>,
    out: &ClusterPartials<'_>,
    shape: SortShape,
    scratch: &SortScratch,
) -> Result<()> {
    let (n, d, k) = (chunk.n_rows, rows.d, rows.k);
    assert!(fits(gpu, n, d, k, shape), "{shape:?} at N {n} D {d} K {k}");
    let d4 = d.div_ceil(4);
    let n_slices = d4.div_ceil(shape.slice_vec4);
    let tiles = shape.n_tiles(n);
    let ranges = k.div_ceil(shape.range_k);
    let weighted = rows.weights.is_some();
    let params = |grid_x: u32| SortParams {
        n_rows: n as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        k: k as u32,
        grid_x,
        tile_rows: shape.tile_rows as u32,
        n_tiles: tiles as u32,
        range_k: shape.range_k as u32,
        n_pieces: shape.n_pieces as u32,
        block_offset: out.block_offset as u32,
        weighted: weighted as u32,
        x_vec4: (d.is_multiple_of(4) && chunk.x_offset.is_multiple_of(4)) as u32,
        slice_vec4: shape.slice_vec4 as u32,
        n_slices: n_slices as u32,
        lanes: lanes(shape.slice_vec4) as u32,
        _pad0: 0,
    };
    let s = scratch;
    let (e, kp) = ((tiles * k) as f64, (k * shape.n_pieces) as f64);
    let grid = gpu.grid(tiles as u64)?;
    batch.dispatch(
        wgsl::SORT_COUNT,
        &[],
        &params(grid.x),
        &[
            ("labels", rows.labels.bind()),
            ("tile_counts", s.tile_counts.bind()),
        ],
        grid,
        // The labels once per range of clusters; the counts written once.
        Work::f32s(0.0, (n * ranges) as f64 + e),
    )?;
    let grid = gpu.grid(k as u64)?;
    batch.dispatch(
        wgsl::SORT_SCAN_TILES,
        &[],
        &params(grid.x),
        &[
            ("tile_counts", s.tile_counts.bind()),
            ("cluster_starts", s.cluster_starts.bind()),
            ("partial_counts", out.counts.bind()),
        ],
        grid,
        // The counts read and written, the sizes and the pieces' counts written.
        Work::f32s(e, 2.0 * e + k as f64 + kp),
    )?;
    batch.dispatch(
        wgsl::SORT_SCAN_CLUSTERS,
        &[],
        &params(1),
        // The tile counts are bound (scan_in_place names both arrays) but not read here.
        &[
            ("tile_counts", s.tile_counts.bind()),
            ("cluster_starts", s.cluster_starts.bind()),
        ],
        gpu.grid(1)?,
        Work::f32s(k as f64, (2 * k + 1) as f64),
    )?;
    let grid = gpu.grid(tiles as u64)?;
    batch.dispatch(
        wgsl::SORT_SCATTER,
        &[],
        &params(grid.x),
        &[
            ("labels", rows.labels.bind()),
            ("min_sq_dist", rows.min_sq_dist.bind()),
            ("tile_counts", s.tile_counts.bind()),
            ("cluster_starts", s.cluster_starts.bind()),
            ("sorted", s.sorted.bind()),
        ],
        grid,
        // The labels once per range, the distances and the tiles' places read once; two
        // u32 written per row.
        Work::f32s(0.0, (n * (ranges + 1) + 2 * n) as f64 + e + k as f64),
    )?;
    let placeholder = vec4_placeholder(gpu, chunk);
    let grid = gpu.grid((shape.n_pieces * k * n_slices) as u64)?;
    batch.dispatch(
        wgsl::SEGMENT_PARTIALS,
        &[],
        &params(grid.x),
        &[
            // Unweighted: never read; the distances stand in (read-only, no allocation).
            ("weights", rows.weights.unwrap_or(rows.min_sq_dist).bind()),
            ("x", chunk.bind()),
            ("x4", rows_vec4(chunk, &placeholder)),
            ("old_centroids", rows.old_centroids.bind()),
            ("cluster_starts", s.cluster_starts.bind()),
            ("sorted", s.sorted.bind()),
            ("partial_sums", out.sums.bind()),
            ("partial_sq_dist", out.sq_dist.bind()),
        ],
        grid,
        // w·(x − old c) and a sum per value; the rows read once, the sorted entries once per
        // slice, the weights once, the old centroids once; every piece's partials written.
        Work::f32s(
            2.0 * (n * d) as f64 + 4.0 * n as f64,
            (n * (d + 2 * n_slices + weighted as usize) + k * d) as f64 + kp * (d + 2) as f64,
        ),
    )
}
