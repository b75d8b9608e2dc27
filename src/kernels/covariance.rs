//! Per-block cross products of centred data over rows (`shaders/covariance.wgsl`).

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, covariance as wgsl};
use crate::gpu::Gpu;

/// Output tile edge (`TILE` in the shader).
const TILE: usize = wgsl::TILE as usize;

/// Twin of `GramParams` in shaders/covariance.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct GramParams {
    n_rows: u32,
    a_offset: u32,
    b_offset: u32,
    a_cols: u32,
    b_cols: u32,
    block_rows: u32,
    block_offset: u32,
    n_blocks: u32,
    n_tiles_a: u32,
    n_tiles_b: u32,
    upper_only: u32,
    grid_x: u32,
}

const _: () = check_params::<GramParams>(wgsl::ENTRY_POINTS);

/// One operand of [`gram_partials`]: rows bound from a buffer range, and a per-column shift.
pub(crate) struct Operand<'a> {
    /// The rows (a data chunk, or a per-chunk buffer of our own).
    pub bind: Bind<'a>,
    /// Index of the first value of the chunk inside the binding.
    pub offset: u32,
    /// Values per row.
    pub cols: usize,
    /// Subtracted from every row (length `cols`).
    pub shift: &'a wgpu::Buffer,
}

/// Records the per-block partials of (A − a)ᵀ(B − b) over the `n_rows` rows of a chunk, in
/// blocks of `block_rows` numbered from `block_offset`, into `partials`
/// ([block][a.cols][b.cols]). With `upper_only` (A = B) only tiles on or above the diagonal
/// are written; the partial buffer must be cleared first so the rest reads as zero.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gram_partials(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    n_rows: usize,
    a: &Operand<'_>,
    b: &Operand<'_>,
    block_rows: usize,
    block_offset: usize,
    upper_only: bool,
    partials: &wgpu::Buffer,
) -> Result<()> {
    let n_tiles_a = a.cols.div_ceil(TILE);
    let n_tiles_b = b.cols.div_ceil(TILE);
    let n_pairs = if upper_only {
        n_tiles_a * (n_tiles_a + 1) / 2
    } else {
        n_tiles_a * n_tiles_b
    };
    let n_blocks = n_rows.div_ceil(block_rows);
    let grid = gpu.grid((n_pairs * n_blocks) as u64)?;
    let params = GramParams {
        n_rows: n_rows as u32,
        a_offset: a.offset,
        b_offset: b.offset,
        a_cols: a.cols as u32,
        b_cols: b.cols as u32,
        block_rows: block_rows as u32,
        block_offset: block_offset as u32,
        n_blocks: n_blocks as u32,
        n_tiles_a: n_tiles_a as u32,
        n_tiles_b: n_tiles_b as u32,
        upper_only: upper_only as u32,
        grid_x: grid.x,
    };
    batch.dispatch(
        wgsl::GRAM_PARTIALS,
        &[],
        &params,
        &[
            ("a", a.bind),
            ("b", b.bind),
            ("a_shift", Bind::Whole(a.shift)),
            ("b_shift", Bind::Whole(b.shift)),
            ("partials", Bind::Whole(partials)),
        ],
        grid,
        // The products actually needed (the upper triangle for a symmetric product), and the
        // shifts' subtractions; operands read once, every block's partial written.
        Work::f32s(
            n_rows as f64
                * if upper_only {
                    (a.cols * (a.cols + 1) + 2 * a.cols) as f64
                } else {
                    (2 * a.cols * b.cols + a.cols + b.cols) as f64
                },
            (n_rows * (a.cols + if upper_only { 0 } else { b.cols }) + n_blocks * a.cols * b.cols)
                as f64,
        ),
    )
}
