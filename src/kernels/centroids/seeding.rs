//! Greedy k-means++ seeding kernels (`shaders/centroids/seeding.wgsl`): D² sampling, the candidates'
//! potentials and the running D², each step recorded without a readback.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{centroids::seeding as wgsl, check_params};
use crate::gpu::Gpu;

/// Rows per block sum: `PP_ROWS` in the shader (one workgroup scores one block).
pub(crate) const KMEANSPP_BLOCK_ROWS: usize = wgsl::PP_ROWS as usize;

/// Candidates one potentials dispatch scores: `PP_MAX_TRIALS` in the shader.
pub(crate) const KMEANSPP_MAX_TRIALS: usize = wgsl::PP_MAX_TRIALS as usize;

/// Twin of `KmeansPpParams` in shaders/centroids/seeding.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, Pod, Zeroable)]
pub(crate) struct KmeansPpParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    n_candidates: u32,
    first_candidate: u32,
    n_columns: u32,
    block_offset: u32,
    grid_x: u32,
    first: u32,
    weighted: u32,
    row_start: u32,
    step: u32,
    n_blocks: u32,
    n_total: u32,
    n_trials: u32,
    _pad: u32,
}

const _: () = check_params::<KmeansPpParams>(wgsl::ENTRY_POINTS);

/// Blocks of [`KMEANSPP_BLOCK_ROWS`] rows in a chunk.
pub(crate) fn blocks_in(chunk: &Chunk) -> usize {
    chunk.n_rows.div_ceil(KMEANSPP_BLOCK_ROWS)
}

/// One chunk's rows in the seeding: their running D², weights and place among all blocks.
pub(crate) struct SeedingRows<'a> {
    /// The rows.
    pub chunk: &'a Chunk,
    /// Features per row.
    pub d: usize,
    /// D² of every row of the chunk: the squared distance to the nearest centre so far.
    pub min_sq_dist: &'a DeviceBuffer<f32>,
    /// The rows' sample weights, when weighted.
    pub weights: Option<&'a DeviceBuffer<f32>>,
    /// The chunk's first global block.
    pub block_offset: usize,
}

impl SeedingRows<'_> {
    /// The parameters every kernel reads of the chunk.
    fn params(&self) -> KmeansPpParams {
        KmeansPpParams {
            n_rows: self.chunk.n_rows as u32,
            x_offset: self.chunk.x_offset,
            d: self.d as u32,
            block_offset: self.block_offset as u32,
            weighted: self.weights.is_some() as u32,
            row_start: self.chunk.row_start as u32,
            ..KmeansPpParams::default()
        }
    }
}

/// The buffers of one seeding's steps, shared by all chunks.
pub(crate) struct StepBuffers<'a> {
    /// T x D candidates of the step (row 0 alone holds the first centre).
    pub candidates: &'a DeviceBuffer<f32>,
    /// Per block and trial, the partial potentials: `[block][trial]`.
    pub trial_sums: &'a DeviceBuffer<f32>,
    /// The T potentials of the step's candidates.
    pub potentials: &'a DeviceBuffer<f32>,
    /// Per block, Σ w·D².
    pub d2_sums: &'a DeviceBuffer<f32>,
    /// Per trial, the draw: block, remainder, row (shader docs).
    pub samples: &'a DeviceBuffer<u32>,
    /// The chosen rows, by step.
    pub chosen: &'a DeviceBuffer<u32>,
    /// T uniform draws per step.
    pub draws: &'a DeviceBuffer<f32>,
    /// Trials per step (T).
    pub n_trials: usize,
}

/// Records step `step`'s D² sampling: for each trial, the block of all `n_blocks` blocks
/// (of `n_total` rows) its draw falls in.
pub(crate) fn kmeanspp_sample(
    batch: &mut Batch<'_>,
    buffers: &StepBuffers<'_>,
    step: usize,
    (n_blocks, n_total): (usize, usize),
) -> Result<()> {
    let params = KmeansPpParams {
        step: step as u32,
        n_blocks: n_blocks as u32,
        n_total: n_total as u32,
        n_trials: buffers.n_trials as u32,
        ..KmeansPpParams::default()
    };
    batch.dispatch(
        wgsl::KMEANSPP_SAMPLE,
        &[],
        &params,
        &[
            ("d2_block_sums", buffers.d2_sums.bind()),
            ("draws", buffers.draws.bind()),
            ("samples", buffers.samples.bind()),
        ],
        crate::gpu::batch::Grid { x: 1, y: 1 },
        Work::f32s(n_blocks as f64, n_blocks as f64),
    )
}

/// Records, for the draws that fall in this chunk, the row drawn and its copy into the
/// candidates.
pub(crate) fn kmeanspp_gather_candidates(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    rows: &SeedingRows<'_>,
    buffers: &StepBuffers<'_>,
) -> Result<()> {
    let params = KmeansPpParams {
        n_trials: buffers.n_trials as u32,
        ..rows.params()
    };
    let grid = gpu.grid(buffers.n_trials as u64)?;
    batch.dispatch(
        wgsl::KMEANSPP_GATHER_CANDIDATES,
        &[],
        &params,
        &[
            ("x", rows.chunk.bind()),
            ("samples", buffers.samples.bind()),
            ("min_sq_dist", rows.min_sq_dist.bind()),
            // Unweighted: never read; the draws stand in (read-only, no allocation).
            ("weights", rows.weights.unwrap_or(buffers.draws).bind()),
            ("candidates_out", buffers.candidates.bind()),
        ],
        grid,
        Work::f32s(
            0.0,
            (buffers.n_trials * (rows.d + KMEANSPP_BLOCK_ROWS)) as f64,
        ),
    )
}

/// Records, for every trial, the block sums of w·min(D², ‖x − c_t‖²) into
/// `trial_sums[block][t]`, in dispatches of at most [`KMEANSPP_MAX_TRIALS`] candidates.
pub(crate) fn kmeanspp_trial_potentials(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    rows: &SeedingRows<'_>,
    buffers: &StepBuffers<'_>,
) -> Result<()> {
    let (chunk, d, t) = (rows.chunk, rows.d, buffers.n_trials);
    let grid = gpu.grid(blocks_in(chunk) as u64)?;
    for first in (0..t).step_by(KMEANSPP_MAX_TRIALS) {
        let count = (t - first).min(KMEANSPP_MAX_TRIALS);
        let params = KmeansPpParams {
            n_candidates: count as u32,
            first_candidate: first as u32,
            n_columns: t as u32,
            grid_x: grid.x,
            ..rows.params()
        };
        batch.dispatch(
            wgsl::KMEANSPP_TRIAL_POTENTIALS,
            &[],
            &params,
            &[
                ("x", chunk.bind()),
                ("candidates", buffers.candidates.bind()),
                ("min_sq_dist", rows.min_sq_dist.bind()),
                ("block_sums", buffers.trial_sums.bind()),
                ("weights", rows.weights.unwrap_or(buffers.candidates).bind()),
            ],
            grid,
            // A difference and an FMA per value and candidate; rows read once.
            Work::f32s(
                3.0 * (chunk.n_rows * d * count) as f64,
                (chunk.n_rows * (d + 2) + (d + blocks_in(chunk)) * count) as f64,
            ),
        )?;
    }
    Ok(())
}

/// Records D² ← min(D², ‖x − c‖²) for the step's best candidate c (the one with the smallest
/// potential; candidate 0 and D² ← ‖x − c‖² when `first`), the block sums of w·D², and the
/// chosen row as `chosen[step]` (not when `first`: the host writes that one).
pub(crate) fn kmeanspp_update_min_distance(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    rows: &SeedingRows<'_>,
    buffers: &StepBuffers<'_>,
    (step, first): (usize, bool),
) -> Result<()> {
    let (chunk, d) = (rows.chunk, rows.d);
    let grid = gpu.grid(blocks_in(chunk) as u64)?;
    let params = KmeansPpParams {
        grid_x: grid.x,
        first: first as u32,
        step: step as u32,
        n_trials: buffers.n_trials as u32,
        ..rows.params()
    };
    batch.dispatch(
        wgsl::KMEANSPP_UPDATE_MIN_DISTANCE,
        &[],
        &params,
        &[
            ("x", chunk.bind()),
            ("candidates", buffers.candidates.bind()),
            ("min_sq_dist", rows.min_sq_dist.bind()),
            ("block_sums", buffers.d2_sums.bind()),
            ("weights", rows.weights.unwrap_or(buffers.candidates).bind()),
            ("potentials", buffers.potentials.bind()),
            ("samples", buffers.samples.bind()),
            ("chosen", buffers.chosen.bind()),
        ],
        grid,
        Work::f32s(
            3.0 * (chunk.n_rows * d) as f64,
            (chunk.n_rows * (d + 2) + d + blocks_in(chunk)) as f64,
        ),
    )
}
