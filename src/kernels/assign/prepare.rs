//! The centroid side of the GEMM form, once per pass (`shaders/assign/prepare.wgsl`): the
//! shift s (the mean of the centroids), then c′ = c − s with ‖c′‖² and its slack β‖c′‖².

use super::args::{params, Assignment};
use super::scratch::AssignScratch;
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::profile::Work;
use crate::gpu::shaders::assign::prepare as wgsl;
use crate::gpu::Gpu;
use crate::kernels::ROW_WG_SIZE;

/// Records the centroid side of the GEMM form into the scratch's `prepared`.
pub(crate) fn record_prepare(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    to: &Assignment<'_>,
    scratch: &AssignScratch,
) -> Result<()> {
    let k = to.k;
    let binds = [
        ("centroids", to.centroids.bind()),
        ("prepared", scratch.prepared.bind()),
    ];
    let grid = gpu.grid((4 * d.div_ceil(4)).div_ceil(ROW_WG_SIZE as usize) as u64)?;
    batch.dispatch(
        wgsl::CENTROID_SHIFT,
        &[],
        &params(chunk, 0, d, k, grid.x),
        &binds,
        grid,
        Work::f32s((k * d) as f64, (k * d + d) as f64),
    )?;
    let grid = gpu.grid(k.div_ceil(ROW_WG_SIZE as usize) as u64)?;
    batch.dispatch(
        wgsl::CENTROID_PREP,
        &[],
        &params(chunk, 0, d, k, grid.x),
        &binds,
        grid,
        Work::f32s((3 * k * d) as f64, (2 * k * d + d + 2 * k) as f64),
    )
}
