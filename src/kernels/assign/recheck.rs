//! The exact recheck of the rows the GEMM form left undecided (`shaders/assign/recheck.wgsl`,
//! GPUs): every centroid in the difference form for the rows on the list, a workgroup per
//! listed row with its invocations splitting the centroids (a row's K x D walk is not one
//! invocation's latency), in runs of centroids that keep each invocation within the loop
//! budget, the running best passed between runs in increasing centroid order.
//!
//! Cost model: a listed row costs its workgroup the dependent fma steps of one invocation's
//! walk, D per pass over the row; each pass takes four centroids (the lanes of a vec4). On an
//! H200 at Fashion-MNIST, k = 256, the scalar walk (four centroids one after the other,
//! 4·784 steps) took 0.16 ms a call whatever the list's length, 13.7% of the assignment's
//! time (benches/results/2026-11-28-nvidia-h200-3.jsonl); a quarter of the steps predicts
//! about 0.04 ms, 3-4% (issue 36's target is 10%). To be measured on the next GPU run.

use super::args::{params, Assignment, FIRST_SLICE, LAST_SLICE};
use super::scratch::AssignScratch;
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::assign::recheck as wgsl;
use crate::gpu::Gpu;
use crate::kernels::items_within_loop_budget;

/// Invocations per workgroup (`RECHECK_WG`): the centroids of a listed row are split this many
/// ways.
const RECHECK_WG: usize = wgsl::RECHECK_WG as usize;

/// Workgroups of a recheck dispatch where loops are unbounded: they stride over the list, so
/// an empty or short list costs a few thousand early exits, and a long one runs every
/// multiprocessor of a large GPU many times over.
const MAX_GROUPS: usize = 8192;

#[cfg(test)]
thread_local! {
    /// The tests' cap on centroids per run (runs are otherwise split only past the loop
    /// budget), to check that the split changes nothing.
    static RUN_CAP: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with at most `cap` centroids per recheck run on this thread.
#[cfg(test)]
pub(crate) fn with_run_cap<R>(cap: usize, f: impl FnOnce() -> R) -> R {
    let was = RUN_CAP.replace(Some(cap));
    let out = f();
    RUN_CAP.set(was);
    out
}

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
    // Under a loop budget each workgroup takes one row (no second trip through the list) and
    // each invocation at most the centroids the budget allows it, D + 2 back-edges each.
    let bounded = gpu.info().loop_back_edge_budget().is_some();
    let groups = if bounded {
        n_rows.max(1)
    } else {
        n_rows.clamp(1, MAX_GROUPS)
    };
    let per_invocation = items_within_loop_budget(gpu, k.div_ceil(RECHECK_WG), d + 2, 32);
    let per_run = (per_invocation * RECHECK_WG).min(k);
    #[cfg(test)]
    let per_run = RUN_CAP.get().map_or(per_run, |cap| cap.clamp(1, per_run));
    let n_runs = k.div_ceil(per_run);
    let grid = gpu.grid(groups as u64)?;
    let running: DeviceBuffer<u32> = DeviceBuffer::zeroed(
        gpu,
        "recheck running labels",
        if n_runs > 1 { n_rows } else { 1 },
    );
    for run in 0..n_runs {
        let first = run * per_run;
        let flags =
            (u32::from(run == 0) * FIRST_SLICE) | (u32::from(run + 1 == n_runs) * LAST_SLICE);
        let mut p = params(chunk, n_rows, d, k, grid.x).slice(first, per_run.min(k - first), flags);
        p.n_groups = groups as u32;
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
