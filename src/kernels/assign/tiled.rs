//! The GEMM form on the staged tile core (`shaders/assign/tiled.wgsl`, GPUs, K > SMALL_K):
//! each row's candidate through ‖x − s‖² − 2 (x − s)·(c − s) + ‖c − s‖², proved exact by the
//! bound ([`bound`](super::bound)) or put on the recheck list.

use super::args::{params, Assignment};
use super::scratch::AssignScratch;
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::profile::Work;
use crate::gpu::shaders::assign::tiled as wgsl;
use crate::gpu::shaders::EntryPoint;
use crate::gpu::Gpu;
use crate::kernels::primitives::gemm::{rows_vec4, vec4_placeholder, GemmConfig};

/// Records `assign_tiled` in `config`'s tiles over the first `n_rows` rows of `chunk` (the
/// centroid side prepared, the recheck list cleared).
pub(crate) fn record_tiled(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    config: GemmConfig,
    rows: (&Chunk, usize, usize),
    to: &Assignment<'_>,
    scratch: &AssignScratch,
    work: Work,
) -> Result<()> {
    record_tiled_entry(
        gpu,
        batch,
        wgsl::ASSIGN_TILED,
        config,
        rows,
        to,
        scratch,
        work,
    )
}

/// Records `entry`, `assign_tiled` or its subgroup twin (the same body, parameters and
/// bindings: `shaders/assign/shared/tiled_core.wgsl`).
#[allow(clippy::too_many_arguments)]
pub(super) fn record_tiled_entry(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    entry: &'static EntryPoint,
    config: GemmConfig,
    (chunk, n_rows, d): (&Chunk, usize, usize),
    to: &Assignment<'_>,
    scratch: &AssignScratch,
    work: Work,
) -> Result<()> {
    let grid = gpu.grid(n_rows.div_ceil(config.tile_m()) as u64)?;
    let placeholder = vec4_placeholder(gpu, chunk);
    batch.dispatch(
        entry,
        &config.overrides(),
        &params(chunk, n_rows, d, to.k, grid.x),
        &[
            ("x", chunk.bind()),
            ("x4", rows_vec4(chunk, &placeholder)),
            ("centroids", to.centroids.bind()),
            ("prepared", scratch.prepared.bind()),
            ("labels", to.labels.bind()),
            ("min_sq_dist", to.min_sq_dist.bind()),
            ("changed", to.changed.bind()),
            ("recheck", scratch.recheck.bind()),
        ],
        grid,
        work,
    )
}
