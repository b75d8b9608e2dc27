//! Sums of distances from query rows to a run of data rows (`shaders/products/silhouette.wgsl`), the
//! O(N²) part of the silhouette coefficient.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, products::silhouette as wgsl};
use crate::gpu::Gpu;
use crate::kernels::primitives::gemm::{vec4_view, GemmConfig};

/// Twin of `DistanceSumParams` in shaders/products/silhouette.wgsl.
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
    q_vec4: u32,
    x_vec4: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
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
    // Queries are the tile's rows, the piece's rows its columns.
    let config = GemmConfig::for_shape(queries.n_rows, data.n_rows);
    cluster_distance_sums_with(gpu, batch, d, (queries, data), (sums, out_offset), config)
}

/// [`cluster_distance_sums`] on the tile core's `config` (any of [`GemmConfig::ALL`]; the
/// tests run each).
pub(crate) fn cluster_distance_sums_with(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    d: usize,
    (queries, data): (&Rows<'_>, &Rows<'_>),
    (sums, out_offset): (&DeviceBuffer<f32>, usize),
    config: GemmConfig,
) -> Result<()> {
    let grid = gpu.grid(queries.n_rows.div_ceil(config.tile_m()) as u64)?;
    let q_offset = queries.chunk.x_offset + (queries.first * d) as u32;
    let x_offset = data.chunk.x_offset + (data.first * d) as u32;
    let vec4s = |offset: u32| (d.is_multiple_of(4) && offset.is_multiple_of(4)) as u32;
    let params = DistanceSumParams {
        n_queries: queries.n_rows as u32,
        q_offset,
        n_data: data.n_rows as u32,
        x_offset,
        d: d as u32,
        out_offset: out_offset as u32,
        grid_x: grid.x,
        q_vec4: vec4s(q_offset),
        x_vec4: vec4s(x_offset),
        ..Zeroable::zeroed()
    };
    let placeholder = DeviceBuffer::zeroed(gpu, "vec4 placeholder", 4);
    batch.dispatch(
        wgsl::CLUSTER_DISTANCE_SUMS,
        &config.overrides(),
        &params,
        &[
            ("queries", queries.chunk.bind()),
            ("data", data.chunk.bind()),
            ("sums", sums.bind()),
            ("queries4", vec4_view(queries.chunk.bind(), &placeholder)),
            ("data4", vec4_view(data.chunk.bind(), &placeholder)),
        ],
        grid,
        // A difference and an FMA per feature of each pair, a square root and a sum per pair.
        Work::f32s(
            (queries.n_rows * data.n_rows) as f64 * (3 * d + 2) as f64,
            ((queries.n_rows + data.n_rows) * d + queries.n_rows) as f64,
        ),
    )
}
