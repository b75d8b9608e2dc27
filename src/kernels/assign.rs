//! Nearest-centroid assignment and point-to-centroid distances (`shaders/assign.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::ROW_WG_SIZE;
use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::buffer::Chunk;
use crate::gpu::shaders::{assign as wgsl, check_params};
use crate::gpu::Gpu;

/// Rows per workgroup of the tiled entry points (`TILE` in the shader).
const ROWS_PER_WORKGROUP: u64 = wgsl::TILE as u64;

/// Largest K for the untiled kernel (`SMALL_K` in the shader).
pub(crate) const SMALL_K: usize = wgsl::SMALL_K as usize;

/// Twin of `AssignParams` in shaders/assign.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct AssignParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    k: u32,
    grid_x: u32,
    sqrt_output: u32,
    _pad0: u32,
    _pad1: u32,
}

const _: () = check_params::<AssignParams>(wgsl::ENTRY_POINTS);

/// Records the assignment of every row of `chunk` to its nearest of the `k` centroids:
/// writes `labels` and `min_sq_dist` (one per chunk row) and adds the number of changed
/// labels to the u32 at `changed`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn assign_nearest_centroid(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    k: usize,
    centroids: &wgpu::Buffer,
    labels: &wgpu::Buffer,
    min_sq_dist: &wgpu::Buffer,
    changed: &wgpu::Buffer,
) -> Result<()> {
    // Few centroids: one invocation per row, no tiling (see the shader).
    let (entry, rows_per_group) = if k <= SMALL_K {
        (wgsl::ASSIGN_NEAREST_CENTROID_SMALL_K, ROW_WG_SIZE as u64)
    } else {
        (wgsl::ASSIGN_NEAREST_CENTROID, ROWS_PER_WORKGROUP)
    };
    let grid = gpu.grid((chunk.n_rows as u64).div_ceil(rows_per_group))?;
    let params = AssignParams {
        n_rows: chunk.n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        k: k as u32,
        grid_x: grid.x,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        entry,
        &[],
        &params,
        &[
            ("x", chunk.bind()),
            ("centroids", Bind::Whole(centroids)),
            ("labels", Bind::Whole(labels)),
            ("min_sq_dist", Bind::Whole(min_sq_dist)),
            ("changed", Bind::Whole(changed)),
        ],
        grid,
    )
}

/// Records the distances from rows `first_row .. first_row + n_rows` of `chunk` to each of
/// the `k` centroids into `out` (row-major n_rows x k), Euclidean if `sqrt`, else squared.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pairwise_distances(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    first_row: usize,
    n_rows: usize,
    d: usize,
    k: usize,
    centroids: &wgpu::Buffer,
    out: &wgpu::Buffer,
    sqrt: bool,
) -> Result<()> {
    let grid = gpu.grid((n_rows as u64).div_ceil(ROWS_PER_WORKGROUP))?;
    let params = AssignParams {
        n_rows: n_rows as u32,
        x_offset: chunk.x_offset + (first_row * d) as u32,
        d: d as u32,
        k: k as u32,
        grid_x: grid.x,
        sqrt_output: sqrt as u32,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        wgsl::PAIRWISE_DISTANCES,
        &[],
        &params,
        &[
            ("x", chunk.bind()),
            ("centroids", Bind::Whole(centroids)),
            ("distances", Bind::Whole(out)),
        ],
        grid,
    )
}
