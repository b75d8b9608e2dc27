//! One row per invocation, centroids from storage (`shaders/assign/registers.wgsl`):
//! SMALL_K centroids at a time into register accumulators, no workgroup memory or barrier
//! (CPU-like adapters).

use super::args::{params, Assignment, SMALL_K};
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::profile::Work;
use crate::gpu::shaders::assign::registers as wgsl;
use crate::gpu::Gpu;
use crate::kernels::ROW_WG_SIZE;

/// Loop back-edges one invocation takes at D x K (about ⌈K/16⌉(D + 19)): the kernel walks
/// all K centroids in one dispatch.
pub(crate) fn back_edges(d: usize, k: usize) -> usize {
    k.div_ceil(SMALL_K) * (d + 19) + 1
}

/// Records `assign_nearest_centroid_registers` over the first `n_rows` rows of `chunk`.
pub(crate) fn record_registers(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    n_rows: usize,
    d: usize,
    to: &Assignment<'_>,
    work: Work,
) -> Result<()> {
    let grid = gpu.grid(n_rows.div_ceil(ROW_WG_SIZE as usize) as u64)?;
    batch.dispatch(
        wgsl::ASSIGN_NEAREST_CENTROID_REGISTERS,
        &[],
        &params(chunk, n_rows, d, to.k, grid.x),
        &[
            ("x", chunk.bind()),
            ("centroids", to.centroids.bind()),
            ("labels", to.labels.bind()),
            ("min_sq_dist", to.min_sq_dist.bind()),
            ("changed", to.changed.bind()),
        ],
        grid,
        work,
    )
}
