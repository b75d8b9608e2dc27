//! Deterministic column sums of per-block partials (`shaders/reduce.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::{feature_wg_size, FEATURE_WG_SIZE, ROW_WG_SIZE};
use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::buffer::Chunk;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, reduce as wgsl, EntryPoint};
use crate::gpu::Gpu;

/// Twin of `ColumnSumParams` in shaders/reduce.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct ColumnSumParams {
    n_blocks: u32,
    n_cols: u32,
    grid_x: u32,
    _pad0: u32,
}

const _: () = check_params::<ColumnSumParams>(&[
    wgsl::SUM_PARTIAL_COLUMNS_F32,
    wgsl::SUM_PARTIAL_COLUMNS_U32,
]);

/// Records `entry` over the buffers named `names` (partials, totals).
#[allow(clippy::too_many_arguments)]
fn sum_columns(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    entry: &'static EntryPoint,
    names: (&str, &str),
    partials: &wgpu::Buffer,
    n_blocks: usize,
    n_cols: usize,
    totals: &wgpu::Buffer,
) -> Result<()> {
    let grid = gpu.grid((n_cols as u64).div_ceil(ROW_WG_SIZE as u64))?;
    let params = ColumnSumParams {
        n_blocks: n_blocks as u32,
        n_cols: n_cols as u32,
        grid_x: grid.x,
        _pad0: 0,
    };
    batch.dispatch(
        entry,
        &[],
        &params,
        &[
            (names.0, Bind::Whole(partials)),
            (names.1, Bind::Whole(totals)),
        ],
        grid,
        Work::f32s((n_blocks * n_cols) as f64, ((n_blocks + 1) * n_cols) as f64),
    )
}

/// Records `totals[c] = Σ_b partials[b][c]` (f32, Kahan-compensated, blocks in order).
pub(crate) fn sum_partial_columns_f32(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    partials: &wgpu::Buffer,
    n_blocks: usize,
    n_cols: usize,
    totals: &wgpu::Buffer,
) -> Result<()> {
    sum_columns(
        gpu,
        batch,
        wgsl::SUM_PARTIAL_COLUMNS_F32,
        ("partials_f32", "totals_f32"),
        partials,
        n_blocks,
        n_cols,
        totals,
    )
}

/// Records `totals[c] = Σ_b partials[b][c]` (u32, exact).
pub(crate) fn sum_partial_columns_u32(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    partials: &wgpu::Buffer,
    n_blocks: usize,
    n_cols: usize,
    totals: &wgpu::Buffer,
) -> Result<()> {
    sum_columns(
        gpu,
        batch,
        wgsl::SUM_PARTIAL_COLUMNS_U32,
        ("partials_u32", "totals_u32"),
        partials,
        n_blocks,
        n_cols,
        totals,
    )
}

/// Twin of `MomentParams` in shaders/reduce.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct MomentParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    block_rows: u32,
    block_offset: u32,
    n_col_groups: u32,
    grid_x: u32,
    _pad0: u32,
}

const _: () = check_params::<MomentParams>(&[wgsl::COLUMN_MOMENTS]);

/// Records, per block of `block_rows` rows of `chunk` (numbered from `block_offset`) and per
/// column j, Σ (x − shift_j) into `partial_sum` and Σ (x − shift_j)² into `partial_sum_sq`
/// (both [block][d]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn column_moments(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    block_rows: usize,
    block_offset: usize,
    shift: &wgpu::Buffer,
    partial_sum: &wgpu::Buffer,
    partial_sum_sq: &wgpu::Buffer,
) -> Result<()> {
    let wg = feature_wg_size(d);
    column_moments_at(
        gpu,
        batch,
        chunk,
        d,
        block_rows,
        block_offset,
        shift,
        partial_sum,
        partial_sum_sq,
        wg,
    )
}

/// [`column_moments`] with workgroups of `wg`, any of
/// [`feature_wg_sizes`](super::feature_wg_sizes): the tests run each.
#[allow(clippy::too_many_arguments)]
pub(super) fn column_moments_at(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    block_rows: usize,
    block_offset: usize,
    shift: &wgpu::Buffer,
    partial_sum: &wgpu::Buffer,
    partial_sum_sq: &wgpu::Buffer,
    wg: u32,
) -> Result<()> {
    let n_col_groups = d.div_ceil(wg as usize);
    let n_blocks = chunk.n_rows.div_ceil(block_rows);
    let grid = gpu.grid((n_blocks * n_col_groups) as u64)?;
    let params = MomentParams {
        n_rows: chunk.n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        block_rows: block_rows as u32,
        block_offset: block_offset as u32,
        n_col_groups: n_col_groups as u32,
        grid_x: grid.x,
        _pad0: 0,
    };
    batch.dispatch(
        wgsl::COLUMN_MOMENTS,
        &[(FEATURE_WG_SIZE, wg)],
        &params,
        &[
            ("x", chunk.bind()),
            ("shift", Bind::Whole(shift)),
            ("partial_sum", Bind::Whole(partial_sum)),
            ("partial_sum_sq", Bind::Whole(partial_sum_sq)),
        ],
        grid,
        // x − shift, then a sum and a sum of squares per value.
        Work::f32s(
            4.0 * (chunk.n_rows * d) as f64,
            (chunk.n_rows * d + 2 * n_blocks * d) as f64,
        ),
    )
}
