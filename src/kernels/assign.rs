//! Nearest-centroid assignment and point-to-centroid distances (`shaders/assign.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::ROW_WG_SIZE;
use crate::error::Result;
use crate::gpu::buffer::Chunk;
use crate::gpu::kernel::{Batch, Bind, Shader};
use crate::gpu::Gpu;

/// Workgroup size: a multiple of 16 up to 256 (see the shader); 256 gives 64-row tiles.
pub(crate) const ASSIGN_WG_SIZE: u32 = 256;

// The shader lays the workgroup out as 16 invocations along the centroids by WG_SIZE / 16
// (at most 16) along the rows.
const _: () = assert!(ASSIGN_WG_SIZE.is_multiple_of(16) && ASSIGN_WG_SIZE <= 256);

/// Rows per workgroup tile: `WG_SIZE / 4` in the shader.
const ROWS_PER_WORKGROUP: u64 = ASSIGN_WG_SIZE as u64 / 4;

/// Largest K for the untiled kernel: `SMALL_K` in the shader.
pub(crate) const SMALL_K: usize = 16;

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
    let (entry, wg_size, rows_per_group) = if k <= SMALL_K {
        (
            "assign_nearest_centroid_small_k",
            ROW_WG_SIZE,
            ROW_WG_SIZE as u64,
        )
    } else {
        (
            "assign_nearest_centroid",
            ASSIGN_WG_SIZE,
            ROWS_PER_WORKGROUP,
        )
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
        Shader::Assign,
        entry,
        wg_size,
        &params,
        &[
            (1, chunk.bind()),
            (2, Bind::Whole(centroids)),
            (3, Bind::Whole(labels)),
            (4, Bind::Whole(min_sq_dist)),
            (5, Bind::Whole(changed)),
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
        Shader::Assign,
        "pairwise_distances",
        ASSIGN_WG_SIZE,
        &params,
        &[
            (1, chunk.bind()),
            (2, Bind::Whole(centroids)),
            (6, Bind::Whole(out)),
        ],
        grid,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn constants_match_the_shader() {
        let src = include_str!("../../shaders/assign.wgsl");
        assert!(src.contains(&format!("const SMALL_K: u32 = {}u;", super::SMALL_K)));
    }

    #[test]
    fn params_match_the_wgsl_layout() {
        let size = super::super::layout::wgsl_struct_size(
            include_str!("../../shaders/assign.wgsl"),
            "AssignParams",
        );
        assert_eq!(size as usize, std::mem::size_of::<super::AssignParams>());
    }
}
