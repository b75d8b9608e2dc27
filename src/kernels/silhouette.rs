//! Sums of distances from query rows to a run of data rows (`shaders/silhouette.wgsl`), the
//! O(N²) part of the silhouette coefficient.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, silhouette as wgsl};
use crate::gpu::Gpu;

/// Queries per workgroup (`TILE` in the shader).
const TILE: usize = wgsl::TILE as usize;

/// Twin of `DistanceSumParams` in shaders/silhouette.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct DistanceSumParams {
    n_queries: u32,
    q_offset: u32,
    n_data: u32,
    x_offset: u32,
    d: u32,
    out_offset: u32,
    grid_x: u32,
    _pad0: u32,
}

const _: () = check_params::<DistanceSumParams>(wgsl::ENTRY_POINTS);

/// Rows `first .. first + n_rows` of a chunk.
pub(crate) struct Rows<'a> {
    pub chunk: &'a Chunk,
    pub first: usize,
    pub n_rows: usize,
}

/// Records `sums[out_offset + q] = Σ_j ‖query_q − data_j‖` for every query row q.
pub(crate) fn cluster_distance_sums(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    d: usize,
    queries: &Rows<'_>,
    data: &Rows<'_>,
    sums: &DeviceBuffer<f32>,
    out_offset: usize,
) -> Result<()> {
    let grid = gpu.grid(queries.n_rows.div_ceil(TILE) as u64)?;
    let params = DistanceSumParams {
        n_queries: queries.n_rows as u32,
        q_offset: queries.chunk.x_offset + (queries.first * d) as u32,
        n_data: data.n_rows as u32,
        x_offset: data.chunk.x_offset + (data.first * d) as u32,
        d: d as u32,
        out_offset: out_offset as u32,
        grid_x: grid.x,
        _pad0: 0,
    };
    batch.dispatch(
        wgsl::CLUSTER_DISTANCE_SUMS,
        &[],
        &params,
        &[
            ("queries", queries.chunk.bind()),
            ("data", data.chunk.bind()),
            ("sums", sums.bind()),
        ],
        grid,
        // A difference and an FMA per feature of each pair, a square root and a sum per pair.
        Work::f32s(
            (queries.n_rows * data.n_rows) as f64 * (3 * d + 2) as f64,
            ((queries.n_rows + data.n_rows) * d + queries.n_rows) as f64,
        ),
    )
}
