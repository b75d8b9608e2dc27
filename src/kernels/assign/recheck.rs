//! The exact recheck of the rows the GEMM form left undecided (`shaders/assign/recheck.wgsl`,
//! GPUs): every centroid in the difference form for the rows on the list, in runs of
//! centroids that keep each invocation within the loop budget (D + 2 back-edges a centroid),
//! the running best passed between runs in increasing centroid order.

use super::args::{params, Assignment, FIRST_SLICE, LAST_SLICE};
use super::scratch::AssignScratch;
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::assign::recheck as wgsl;
use crate::gpu::Gpu;
use crate::kernels::{items_within_loop_budget, ROW_WG_SIZE};

/// Records `assign_recheck` for the rows on the scratch's recheck list (at most `n_rows`).
pub(crate) fn record_recheck(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    n_rows: usize,
    d: usize,
    to: &Assignment<'_>,
    scratch: &AssignScratch,
) -> Result<()> {
    let k = to.k;
    let grid = gpu.grid(n_rows.div_ceil(ROW_WG_SIZE as usize) as u64)?;
    let per_run = items_within_loop_budget(gpu, k, d + 2, 16);
    let n_runs = k.div_ceil(per_run);
    let running: DeviceBuffer<u32> = DeviceBuffer::zeroed(
        gpu,
        "recheck running labels",
        if n_runs > 1 { n_rows } else { 1 },
    );
    for run in 0..n_runs {
        let first = run * per_run;
        let flags =
            (u32::from(run == 0) * FIRST_SLICE) | (u32::from(run + 1 == n_runs) * LAST_SLICE);
        let p = params(chunk, n_rows, d, k, grid.x).slice(first, per_run.min(k - first), flags);
        batch.dispatch(
            wgsl::ASSIGN_RECHECK,
            &[],
            &p,
            &[
                ("x", chunk.bind()),
                ("centroids", to.centroids.bind()),
                ("labels", to.labels.bind()),
                ("min_sq_dist", to.min_sq_dist.bind()),
                ("changed", to.changed.bind()),
                ("recheck", scratch.recheck.bind()),
                ("running_labels", running.bind()),
            ],
            grid,
            // Reads the list's length; the rows on it cost 3·K·D each, unknown when recorded.
            Work::f32s(0.0, 1.0),
        )?;
    }
    Ok(())
}
