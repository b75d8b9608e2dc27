//! Per-block cross products of centred data over rows (`shaders/covariance.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::ROW_WG_SIZE;

use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, covariance as wgsl};
use crate::gpu::tuning::TuneKey;
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

const _: () = check_params::<GramParams>(&[wgsl::GRAM_PARTIALS]);

/// Twin of `GramSliceParams` in shaders/covariance.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct GramSliceParams {
    slice_rows: u32,
    b_offset: u32,
    a_cols: u32,
    b_cols: u32,
    block: u32,
    first_slice: u32,
    upper_only: u32,
    n_iblocks: u32,
    n_jgroups: u32,
    grid_x: u32,
    _pad0: u32,
    _pad1: u32,
}

const _: () = check_params::<GramSliceParams>(&[wgsl::GRAM_PARTIALS_UNIFORM]);

/// Values of A in one uniform slice (`SLICE_VALUES` in the shader).
const SLICE_VALUES: usize = wgsl::SLICE_VALUES as usize;

/// A columns per invocation of the sliced kernel (`GRAM_IB` in the shader).
const GRAM_IB: usize = wgsl::GRAM_IB as usize;

/// The Gram kernels, which give the same bits (see the shader).
pub(super) const GRAM_VARIANTS: [&str; 2] =
    [wgsl::GRAM_PARTIALS.name, wgsl::GRAM_PARTIALS_UNIFORM.name];

/// Rows the autotuner times each variant on.
const TRIAL_ROWS: usize = 2048;

/// One operand of [`gram_partials`]: rows bound from a buffer range, and a per-column shift.
pub(crate) struct Operand<'a> {
    /// The rows (a data chunk, or a per-chunk buffer of our own).
    pub bind: Bind<'a>,
    /// Index of the first value of the chunk inside the binding.
    pub offset: u32,
    /// Values per row.
    pub cols: usize,
    /// Subtracted from every row (length `cols`).
    pub shift: &'a DeviceBuffer<f32>,
}

/// Where the per-block partials of a Gram product go: blocks of `block_rows` rows numbered
/// from `block_offset`, [block][a.cols][b.cols].
pub(crate) struct GramBlocks<'a> {
    /// Rows per block.
    pub block_rows: usize,
    /// The first block's global number.
    pub block_offset: usize,
    /// A = B: only tiles on or above the diagonal are written (the buffer must be cleared
    /// first so that the rest reads as zero).
    pub upper_only: bool,
    /// The partials.
    pub partials: &'a DeviceBuffer<f32>,
}

/// Records the per-block partials of (A − a)ᵀ(B − b) over the `n_rows` rows of a chunk into
/// `out`.
pub(crate) fn gram_partials(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    n_rows: usize,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: &GramBlocks<'_>,
) -> Result<()> {
    let variant = gram_variant(gpu, n_rows, a, b, out.block_rows, out.upper_only)?;
    record_gram(gpu, batch, variant, n_rows, a, b, out)
}

/// The buffer behind a binding and the byte offset the binding starts at.
fn buffer_of<'a>(bind: Bind<'a>) -> Option<(&'a wgpu::Buffer, u64)> {
    match bind {
        Bind::Whole(buffer) => Some((buffer, 0)),
        Bind::Range(buffer, offset, _) => Some((buffer, offset)),
        Bind::Texture(_) => None,
    }
}

/// The variant for this shape: the tiled kernel alone when the sliced one cannot run (rows
/// wider than a slice, or an A the host may not copy from), else the autotuner's choice,
/// timed on the first rows with scratch partials.
fn gram_variant(
    gpu: &Gpu,
    n_rows: usize,
    a: &Operand<'_>,
    b: &Operand<'_>,
    block_rows: usize,
    upper_only: bool,
) -> Result<&'static str> {
    let copyable =
        buffer_of(a.bind).is_some_and(|(b, _)| b.usage().contains(wgpu::BufferUsages::COPY_SRC));
    if a.cols > SLICE_VALUES || !copyable {
        return Ok(wgsl::GRAM_PARTIALS.name);
    }
    let key = TuneKey::new(
        if upper_only { "gram-symmetric" } else { "gram" },
        a.cols,
        b.cols,
    );
    if let Some(c) = gpu.tuned_choice(&key) {
        return Ok(c);
    }
    let rows = n_rows.min(TRIAL_ROWS);
    let scratch = DeviceBuffer::zeroed(
        gpu,
        "gram trial partials",
        rows.div_ceil(block_rows) * a.cols * b.cols,
    );
    let out = GramBlocks {
        block_rows,
        block_offset: 0,
        upper_only,
        partials: &scratch,
    };
    gpu.tuned(key, &GRAM_VARIANTS, |variant| {
        gpu.time_trial(
            |batch| record_gram(gpu, batch, variant, rows, a, b, &out),
            &scratch,
        )
    })
}

/// Records `variant` (one of [`GRAM_VARIANTS`]).
pub(super) fn record_gram(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    variant: &str,
    n_rows: usize,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: &GramBlocks<'_>,
) -> Result<()> {
    if variant == wgsl::GRAM_PARTIALS_UNIFORM.name {
        return record_gram_uniform(gpu, batch, n_rows, a, b, out);
    }
    let (block_rows, upper_only) = (out.block_rows, out.upper_only);
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
        block_offset: out.block_offset as u32,
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
            ("a_shift", a.shift.bind()),
            ("b_shift", b.shift.bind()),
            ("partials", out.partials.bind()),
        ],
        grid,
        gram_work(n_rows, a.cols, b.cols, upper_only, n_blocks),
    )
}

/// Records `gram_partials_uniform`: per block, slices of whole rows of A copied into a
/// uniform buffer, one dispatch per slice (the copies and dispatches alternate in order, so
/// one slice buffer serves them all).
fn record_gram_uniform(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    n_rows: usize,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: &GramBlocks<'_>,
) -> Result<()> {
    let (block_rows, block_offset, upper_only) = (out.block_rows, out.block_offset, out.upper_only);
    let Some((a_buffer, a_base)) = buffer_of(a.bind) else {
        return Err(crate::Error::Gpu("gram operands are buffers".into()));
    };
    let slice_rows = (SLICE_VALUES / a.cols).min(block_rows).max(1);
    let slice = gpu.uniform_buffer("gram slice", 4 * SLICE_VALUES as u64);
    let n_iblocks = a.cols.div_ceil(GRAM_IB);
    let n_jgroups = b.cols.div_ceil(ROW_WG_SIZE as usize);
    let grid = gpu.grid((n_iblocks * n_jgroups) as u64)?;
    for block in 0..n_rows.div_ceil(block_rows) {
        let last = ((block + 1) * block_rows).min(n_rows);
        let mut first = block * block_rows;
        while first < last {
            let rows = slice_rows.min(last - first);
            let values = (rows * a.cols) as u64;
            let src = a_base + 4 * (a.offset as u64 + (first * a.cols) as u64);
            batch.copy(a_buffer, src, &slice, 0, 4 * values);
            let params = GramSliceParams {
                slice_rows: rows as u32,
                b_offset: b.offset + (first * b.cols) as u32,
                a_cols: a.cols as u32,
                b_cols: b.cols as u32,
                block: (block_offset + block) as u32,
                first_slice: u32::from(first == block * block_rows),
                upper_only: upper_only as u32,
                n_iblocks: n_iblocks as u32,
                n_jgroups: n_jgroups as u32,
                grid_x: grid.x,
                _pad0: 0,
                _pad1: 0,
            };
            batch.dispatch(
                wgsl::GRAM_PARTIALS_UNIFORM,
                &[],
                &params,
                &[
                    ("a_slice", Bind::Range(&slice, 0, 4 * SLICE_VALUES as u64)),
                    ("b", b.bind),
                    ("a_shift", a.shift.bind()),
                    ("b_shift", b.shift.bind()),
                    ("partials", out.partials.bind()),
                ],
                grid,
                gram_work(rows, a.cols, b.cols, upper_only, 0),
            )?;
            first += rows;
        }
    }
    Ok(())
}

/// The least work of the products over `n_rows` rows (the upper triangle for a symmetric
/// product) with the shifts' subtractions, the operands read once and `n_blocks` blocks of
/// partials written.
fn gram_work(
    n_rows: usize,
    a_cols: usize,
    b_cols: usize,
    upper_only: bool,
    n_blocks: usize,
) -> Work {
    Work::f32s(
        n_rows as f64
            * if upper_only {
                (a_cols * (a_cols + 1) + 2 * a_cols) as f64
            } else {
                (2 * a_cols * b_cols + a_cols + b_cols) as f64
            },
        (n_rows * (a_cols + if upper_only { 0 } else { b_cols }) + n_blocks * a_cols * b_cols)
            as f64,
    )
}
