//! k-means++ seeding kernels (`shaders/kmeans_pp.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::ROW_WG_SIZE;
use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::buffer::Chunk;
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

/// Records D² ← min(D², ‖x − c‖²) for the centre `c` (first row of `centre`), or D² ← ‖x − c‖²
/// when `first`, and the block sums of D² (of w·D² with `weights`) into
/// `block_sums[block_offset ..]`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn kmeanspp_update_min_distance(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    centre: &wgpu::Buffer,
    min_sq_dist: &wgpu::Buffer,
    block_sums: &wgpu::Buffer,
    block_offset: usize,
    first: bool,
    weights: Option<&wgpu::Buffer>,
) -> Result<()> {
    let grid = gpu.grid((blocks_in(chunk) as u64).div_ceil(ROW_WG_SIZE as u64))?;
    let params = KmeansPpParams {
        n_rows: chunk.n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        n_candidates: 1,
        block_offset: block_offset as u32,
        grid_x: grid.x,
        first: first as u32,
        weighted: weights.is_some() as u32,
    };
    batch.dispatch(
        wgsl::KMEANSPP_UPDATE_MIN_DISTANCE,
        &[],
        &params,
        &[
            ("x", chunk.bind()),
            ("candidates", Bind::Whole(centre)),
            ("min_sq_dist", Bind::Whole(min_sq_dist)),
            ("block_sums", Bind::Whole(block_sums)),
            // Unweighted: never read; the centre stands in (read-only, no allocation).
            ("weights", Bind::Whole(weights.unwrap_or(centre))),
        ],
        grid,
        // A difference and an FMA per value; rows read, D² read and written.
        Work::f32s(
            3.0 * (chunk.n_rows * d) as f64,
            (chunk.n_rows * (d + 2) + d + blocks_in(chunk)) as f64,
        ),
    )
}

/// Records, for each of `n_candidates` rows of `candidates`, the block sums of
/// min(D², ‖x − c_t‖²) (times w with `weights`) into
/// `block_sums[(block_offset + b) * n_candidates + t]`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn kmeanspp_trial_potentials(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    candidates: &wgpu::Buffer,
    n_candidates: usize,
    min_sq_dist: &wgpu::Buffer,
    block_sums: &wgpu::Buffer,
    block_offset: usize,
    weights: Option<&wgpu::Buffer>,
) -> Result<()> {
    let grid = gpu.grid((blocks_in(chunk) as u64).div_ceil(ROW_WG_SIZE as u64))?;
    let params = KmeansPpParams {
        n_rows: chunk.n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        n_candidates: n_candidates as u32,
        block_offset: block_offset as u32,
        grid_x: grid.x,
        first: 0,
        weighted: weights.is_some() as u32,
    };
    batch.dispatch(
        wgsl::KMEANSPP_TRIAL_POTENTIALS,
        &[],
        &params,
        &[
            ("x", chunk.bind()),
            ("candidates", Bind::Whole(candidates)),
            ("min_sq_dist", Bind::Whole(min_sq_dist)),
            ("block_sums", Bind::Whole(block_sums)),
            ("weights", Bind::Whole(weights.unwrap_or(candidates))),
        ],
        grid,
        Work::f32s(
            3.0 * (chunk.n_rows * d * n_candidates) as f64,
            (chunk.n_rows * (d + 1) + (d + blocks_in(chunk)) * n_candidates) as f64,
        ),
    )
}
