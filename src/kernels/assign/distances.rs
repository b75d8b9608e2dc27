//! Point-to-centroid distances, the N x K matrix (`shaders/assign/distances.wgsl`): the tile
//! core with the squared difference in place of the product (exact for near points), for
//! K-Means' `transform`.

use super::args::params;
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::assign::distances as wgsl;
use crate::gpu::Gpu;
use crate::kernels::primitives::gemm::{rows_vec4, vec4_placeholder, GemmConfig};

/// The centroids a distance table is taken to and where it is written.
pub(crate) struct DistanceTable<'a> {
    /// K x D centroids, row-major.
    pub centroids: &'a DeviceBuffer<f32>,
    /// Number of centroids.
    pub k: usize,
    /// Row-major rows x K output.
    pub out: &'a DeviceBuffer<f32>,
    /// Euclidean distances when set, squared ones otherwise.
    pub sqrt: bool,
}

/// Records the distances from rows `first_row .. first_row + n_rows` of `chunk` to each
/// centroid of `table` into its output (row-major n_rows x K).
pub(crate) fn pairwise_distances(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    first_row: usize,
    n_rows: usize,
    d: usize,
    table: &DistanceTable<'_>,
) -> Result<()> {
    pairwise_distances_at(
        gpu,
        batch,
        GemmConfig::for_shape(n_rows, table.k),
        (chunk, first_row, n_rows, d),
        table,
    )
}

/// [`pairwise_distances`] with the tile configuration `config` (the tests run each).
pub(crate) fn pairwise_distances_at(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    config: GemmConfig,
    (chunk, first_row, n_rows, d): (&Chunk, usize, usize, usize),
    table: &DistanceTable<'_>,
) -> Result<()> {
    let k = table.k;
    let grid = gpu.grid(n_rows.div_ceil(config.tile_m()) as u64)?;
    let placeholder = vec4_placeholder(gpu, chunk);
    let x_offset = chunk.x_offset + (first_row * d) as u32;
    let mut params = params(chunk, n_rows, d, k, grid.x);
    params.x_offset = x_offset;
    params.x_vec4 = (d.is_multiple_of(4) && x_offset.is_multiple_of(4)) as u32;
    params.sqrt_output = table.sqrt as u32;
    batch.dispatch(
        wgsl::PAIRWISE_DISTANCES,
        &config.overrides(),
        &params,
        &[
            ("x", chunk.bind()),
            ("x4", rows_vec4(chunk, &placeholder)),
            ("centroids", table.centroids.bind()),
            ("distances", table.out.bind()),
        ],
        grid,
        Work::f32s(
            2.0 * (n_rows * d * k) as f64,
            (n_rows * (d + k) + k * d) as f64,
        ),
    )
}
