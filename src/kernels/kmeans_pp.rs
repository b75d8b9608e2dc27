//! k-means++ seeding kernels (`shaders/kmeans_pp.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::ROW_WG_SIZE;
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, kmeans_pp as wgsl};
use crate::gpu::Gpu;

/// Rows per block: `BLOCK_ROWS` in the shader (one invocation sums one block).
pub(crate) const KMEANSPP_BLOCK_ROWS: usize = wgsl::BLOCK_ROWS as usize;

/// Twin of `KmeansPpParams` in shaders/kmeans_pp.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct KmeansPpParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    n_candidates: u32,
    block_offset: u32,
    grid_x: u32,
    first: u32,
    weighted: u32,
}

const _: () = check_params::<KmeansPpParams>(wgsl::ENTRY_POINTS);

/// Blocks of [`KMEANSPP_BLOCK_ROWS`] rows in a chunk.
pub(crate) fn blocks_in(chunk: &Chunk) -> usize {
    chunk.n_rows.div_ceil(KMEANSPP_BLOCK_ROWS)
}

/// One chunk's rows in the k-means++ seeding: their running D², weights and block sums.
pub(crate) struct SeedingRows<'a> {
    /// The rows.
    pub chunk: &'a Chunk,
    /// Features per row.
    pub d: usize,
    /// D² of every row of the chunk: the squared distance to the nearest centre so far.
    pub min_sq_dist: &'a DeviceBuffer<f32>,
    /// The rows' sample weights, when weighted.
    pub weights: Option<&'a DeviceBuffer<f32>>,
    /// Per-block sums (of all chunks); this chunk's start at block `block_offset`.
    pub block_sums: &'a DeviceBuffer<f32>,
    /// The chunk's first global block.
    pub block_offset: usize,
}

/// Records D² ← min(D², ‖x − c‖²) for the centre `c` (first row of `centre`), or D² ← ‖x − c‖²
/// when `first`, and the block sums of D² (of w·D² with weights) from the chunk's first
/// block on.
pub(crate) fn kmeanspp_update_min_distance(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    rows: &SeedingRows<'_>,
    centre: &DeviceBuffer<f32>,
    first: bool,
) -> Result<()> {
    let (chunk, d) = (rows.chunk, rows.d);
    let grid = gpu.grid((blocks_in(chunk) as u64).div_ceil(ROW_WG_SIZE as u64))?;
    let params = KmeansPpParams {
        n_rows: chunk.n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        n_candidates: 1,
        block_offset: rows.block_offset as u32,
        grid_x: grid.x,
        first: first as u32,
        weighted: rows.weights.is_some() as u32,
    };
    batch.dispatch(
        wgsl::KMEANSPP_UPDATE_MIN_DISTANCE,
        &[],
        &params,
        &[
            ("x", chunk.bind()),
            ("candidates", centre.bind()),
            ("min_sq_dist", rows.min_sq_dist.bind()),
            ("block_sums", rows.block_sums.bind()),
            // Unweighted: never read; the centre stands in (read-only, no allocation).
            ("weights", rows.weights.unwrap_or(centre).bind()),
        ],
        grid,
        // A difference and an FMA per value; rows read, D² read and written.
        Work::f32s(
            3.0 * (chunk.n_rows * d) as f64,
            (chunk.n_rows * (d + 2) + d + blocks_in(chunk)) as f64,
        ),
    )
}

/// Records, for each of the first `n_candidates` rows of `candidates`, the block sums of
/// min(D², ‖x − c_t‖²) (times w with weights) into
/// `block_sums[(block_offset + b) * n_candidates + t]`.
pub(crate) fn kmeanspp_trial_potentials(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    rows: &SeedingRows<'_>,
    candidates: &DeviceBuffer<f32>,
    n_candidates: usize,
) -> Result<()> {
    let (chunk, d) = (rows.chunk, rows.d);
    let grid = gpu.grid((blocks_in(chunk) as u64).div_ceil(ROW_WG_SIZE as u64))?;
    let params = KmeansPpParams {
        n_rows: chunk.n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        n_candidates: n_candidates as u32,
        block_offset: rows.block_offset as u32,
        grid_x: grid.x,
        first: 0,
        weighted: rows.weights.is_some() as u32,
    };
    batch.dispatch(
        wgsl::KMEANSPP_TRIAL_POTENTIALS,
        &[],
        &params,
        &[
            ("x", chunk.bind()),
            ("candidates", candidates.bind()),
            ("min_sq_dist", rows.min_sq_dist.bind()),
            ("block_sums", rows.block_sums.bind()),
            ("weights", rows.weights.unwrap_or(candidates).bind()),
        ],
        grid,
        Work::f32s(
            3.0 * (chunk.n_rows * d * n_candidates) as f64,
            (chunk.n_rows * (d + 1) + (d + blocks_in(chunk)) * n_candidates) as f64,
        ),
    )
}
