//! The small-K assignment with the Lloyd update's partials in its epilogue
//! (`assign_rows_update`, `shaders/assign/fused.wgsl`).
//!
//! The Lloyd update sets c_k = Σ_{i∈k} w_i x_i / Σ_{i∈k} w_i, computed as
//! old c_k + Σ_{i∈k} w_i (x_i − old c_k) / Σ_{i∈k} w_i from per-block partials: sums of
//! w·(x − old c) per (block, cluster, feature), counts, and sums of w·d̂ and w per (block,
//! cluster). Unfused, the assignment (`assign_stream` on GPUs for K ≤ [`SMALL_K`]) writes the
//! labels and the update ([`accumulate_cluster_partials`]) reads them back with every row a
//! second time. Fused, a workgroup owns one block of rows, assigns it tile by tile (the same
//! labels, distances and changed count as every variant of the assignment) and adds each
//! tile's rows, still in workgroup memory, to the block's sums in registers, written once at
//! the end: the partials of the sliced update ([`UpdatePath::Sliced`]), bit for bit (the same
//! sums in the same order), without the update's second read of X and of the labels,
//! distances and weights. (The GPU design's unfused update sorts the rows by label instead,
//! [`sorted`], and sums in its own order.)
//!
//! It is the assignment's variant [`AssignVariant::RowsUpdate`](super::AssignVariant): where
//! the GPU design would run `assign_stream` and the caller wants the update's partials (not
//! on CPU-like adapters, which have their own update: [`accumulate_cluster_partials`]), and
//! the shape fits the kernel: D ≤ [`FUSED_MAX_D`] (one feature per invocation of the
//! workgroup of 64, and the tile's features in at most two staged pieces, one of them copied
//! aside: about 20 KiB of workgroup memory in all), blocks a whole number of tiles, the
//! adapter's storage-buffer and loop limits.
//!
//! [`accumulate_cluster_partials`]: crate::kernels::centroids::update::accumulate_cluster_partials
//! [`UpdatePath::Sliced`]: crate::kernels::centroids::update::UpdatePath::Sliced
//! [`sorted`]: crate::kernels::centroids::sorted

use super::args::{params, Assignment, SMALL_K};
use crate::error::{Error, Result};
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::assign::fused as wgsl;
use crate::gpu::Gpu;
use crate::kernels::centroids::update::ClusterPartials;
use crate::kernels::primitives::gemm::{rows_vec4, vec4_placeholder};

/// Most features of the fused kernel (`FUSED_MAX_D` in the shader): one per invocation.
pub(crate) const FUSED_MAX_D: usize = wgsl::FUSED_MAX_D as usize;

/// Rows of one tile (`ROWS_WG` in the shader): a block must be a whole number of them.
pub(crate) const TILE_ROWS: usize = wgsl::ROWS_WG as usize;

/// Features of one staged piece (`ROWS_PIECE`).
const ROWS_PIECE: usize = wgsl::ROWS_PIECE as usize;

// add_deviation in the shader picks a cluster's register with one case per cluster.
const _: () = assert!(
    SMALL_K == 16,
    "assign_rows_update has a switch case per register"
);

/// Storage buffers the kernel binds: x, x4, centroids, labels, min_sq_dist, changed,
/// weights and the three partials (more than the 8 WebGPU guarantees).
const STORAGE_BUFFERS: u32 = 10;

/// Bytes of workgroup memory the kernel declares: two staged pieces of rows, a piece of the
/// centroids, the tile's labels, weights and distances, the changed count. More than the
/// 16 KiB WebGPU guarantees (a caller's device made with `Limits::default()` has no more),
/// so the host checks the device's limit.
const WORKGROUP_BYTES: u32 = 4
    * (2 * wgsl::ROWS_PIECE * wgsl::ROWS_PIECE_STRIDE
        + wgsl::SMALL_K * wgsl::ROWS_PIECE
        + 3 * wgsl::ROWS_WG
        + 1);

/// Whether the fused kernel can run on `chunk` (`d` features, `k` clusters, blocks of
/// `block_rows`) on this adapter, whatever the design.
pub(crate) fn fits(gpu: &Gpu, chunk: &Chunk, d: usize, k: usize, block_rows: usize) -> bool {
    let tiles = block_rows.min(chunk.n_rows).div_ceil(TILE_ROWS);
    // Per tile: each piece's staging loops (ROWS_PIECE / 4 vec4s and SMALL_K·ROWS_PIECE /
    // ROWS_WG centroid values an invocation) and fma loop (ROWS_PIECE features), the copy
    // of the first piece and the epilogue (ROWS_WG rows each), the nearest search; then the
    // old centroids' and the partials' loops. An upper bound: some of these unroll.
    let back_edges =
        tiles * (d.div_ceil(ROWS_PIECE) * (2 * ROWS_PIECE + 8) + 2 * TILE_ROWS + 24) + 2 * SMALL_K;
    (1..=SMALL_K).contains(&k)
        && (1..=FUSED_MAX_D).contains(&d)
        && block_rows.is_multiple_of(TILE_ROWS)
        && block_rows > 0
        && gpu.device().limits().max_storage_buffers_per_shader_stage >= STORAGE_BUFFERS
        && gpu.device().limits().max_compute_workgroup_storage_size >= WORKGROUP_BYTES
        && crate::kernels::fits_loop_budget(gpu, back_edges)
}

/// Records `assign_rows_update` over `chunk` (the tests run it on CPU-like adapters too):
/// the labels, distances and changed count of `to`, and the partials of `out` for the
/// chunk's blocks, each row weighted by `weights` when given.
pub(crate) fn record_assign_rows_update(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    to: &Assignment<'_>,
    weights: Option<&DeviceBuffer<f32>>,
    out: &ClusterPartials<'_>,
) -> Result<()> {
    let (k, n, block_rows) = (to.k, chunk.n_rows, out.block_rows);
    if !fits(gpu, chunk, d, k, block_rows) {
        return Err(Error::Gpu(format!(
            "assign_rows_update does not fit D = {d}, K = {k}, blocks of {block_rows}"
        )));
    }
    let n_blocks = n.div_ceil(block_rows);
    let grid = gpu.grid(n_blocks as u64)?;
    let p = params(chunk, n, d, k, grid.x).blocks(block_rows, out.block_offset, weights.is_some());
    let placeholder = vec4_placeholder(gpu, chunk);
    // The assignment's loads and flops (record_assign's model) and the update's arithmetic
    // (w·(x − c) + sum per value), plus the weights and every block's partials written once:
    // the update's read of the rows, labels and distances is what fusing saves.
    let weighted = weights.is_some() as usize;
    let work = Work::f32s(
        2.0 * (n * d * k) as f64 + 2.0 * (n * d) as f64,
        (n * (d + 2 + weighted) + k * d + n_blocks * k * (d + 3)) as f64,
    );
    batch.dispatch(
        wgsl::ASSIGN_ROWS_UPDATE,
        &[],
        &p,
        &[
            ("x", chunk.bind()),
            ("x4", rows_vec4(chunk, &placeholder)),
            ("centroids", to.centroids.bind()),
            ("labels", to.labels.bind()),
            ("min_sq_dist", to.min_sq_dist.bind()),
            ("changed", to.changed.bind()),
            // Unweighted: never read; the centroids stand in (read-only here, no allocation).
            ("weights", weights.unwrap_or(to.centroids).bind()),
            ("partial_sums", out.sums.bind()),
            ("partial_counts", out.counts.bind()),
            ("partial_sq_dist", out.sq_dist.bind()),
        ],
        grid,
        work,
    )
}
