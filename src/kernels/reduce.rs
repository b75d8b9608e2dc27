//! Deterministic column sums of per-block partials (`shaders/reduce.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::ROW_WG_SIZE;
use crate::error::Result;
use crate::gpu::kernel::{Batch, Bind, Shader};
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

#[allow(clippy::too_many_arguments)]
fn sum_columns(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    entry: &'static str,
    bindings: (u32, u32),
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
        Shader::Reduce,
        entry,
        ROW_WG_SIZE,
        &params,
        &[
            (bindings.0, Bind::Whole(partials)),
            (bindings.1, Bind::Whole(totals)),
        ],
        grid,
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
        "sum_partial_columns_f32",
        (1, 2),
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
        "sum_partial_columns_u32",
        (3, 4),
        partials,
        n_blocks,
        n_cols,
        totals,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn params_match_the_wgsl_layout() {
        let size = super::super::layout::wgsl_struct_size(
            include_str!("../../shaders/reduce.wgsl"),
            "ColumnSumParams",
        );
        assert_eq!(size as usize, std::mem::size_of::<super::ColumnSumParams>());
    }
}
