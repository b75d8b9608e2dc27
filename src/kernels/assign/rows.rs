//! GPUs, few centroids (`shaders/assign/rows.wgsl`): a workgroup stages ROWS_WG rows a piece of
//! features at a time with coalesced vec4 loads, the centroids beside them, and sums the
//! difference form directly (with K ≤ [`SMALL_K`](super::SMALL_K) the pass is bound by reading
//! X, and the exact form costs nothing).

use super::args::{params, Assignment};
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::profile::Work;
use crate::gpu::shaders::assign::rows as wgsl;
use crate::gpu::Gpu;
use crate::kernels::primitives::gemm::{rows_vec4, vec4_placeholder};

/// Rows per workgroup of `assign_rows` (a tile of the fused kernel too).
pub(crate) const ROWS_WG: usize = wgsl::ROWS_WG as usize;

/// Records `assign_rows` over the first `n_rows` rows of `chunk`.
pub(crate) fn record_rows(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    n_rows: usize,
    d: usize,
    to: &Assignment<'_>,
    work: Work,
) -> Result<()> {
    let grid = gpu.grid(n_rows.div_ceil(ROWS_WG) as u64)?;
    let placeholder = vec4_placeholder(gpu, chunk);
    batch.dispatch(
        wgsl::ASSIGN_ROWS,
        &[],
        &params(chunk, n_rows, d, to.k, grid.x),
        &[
            ("x", chunk.bind()),
            ("x4", rows_vec4(chunk, &placeholder)),
            ("centroids", to.centroids.bind()),
            ("labels", to.labels.bind()),
            ("min_sq_dist", to.min_sq_dist.bind()),
            ("changed", to.changed.bind()),
        ],
        grid,
        work,
    )
}
