//! Row-wise affine products `(in − in_shift)·W + out_shift` (`shaders/projection.wgsl`).

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::kernel::{Batch, Bind, Shader};
use crate::gpu::Gpu;

/// Workgroup size: the shader's 16 x 16 layout needs exactly 256.
const AFFINE_WG_SIZE: u32 = 256;
/// Output tile edge (`TILE` in the shader).
const TILE: usize = 64;

/// Twin of `AffineParams` in shaders/projection.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct AffineParams {
    n_rows: u32,
    in_offset: u32,
    in_cols: u32,
    out_cols: u32,
    n_col_tiles: u32,
    grid_x: u32,
    _pad0: u32,
    _pad1: u32,
}

/// Records `output = (input − in_shift)·weights + out_shift` for `n_rows` rows of `in_cols`
/// values starting at value `in_offset` of the `input` binding; `weights` is
/// `in_cols x out_cols` row-major, `output` is `n_rows x out_cols`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn affine_matmul(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    input: Bind<'_>,
    in_offset: u32,
    n_rows: usize,
    in_cols: usize,
    out_cols: usize,
    in_shift: &wgpu::Buffer,
    weights: &wgpu::Buffer,
    out_shift: &wgpu::Buffer,
    output: &wgpu::Buffer,
) -> Result<()> {
    let n_col_tiles = out_cols.div_ceil(TILE);
    let grid = gpu.grid((n_rows.div_ceil(TILE) * n_col_tiles) as u64)?;
    let params = AffineParams {
        n_rows: n_rows as u32,
        in_offset,
        in_cols: in_cols as u32,
        out_cols: out_cols as u32,
        n_col_tiles: n_col_tiles as u32,
        grid_x: grid.x,
        _pad0: 0,
        _pad1: 0,
    };
    batch.dispatch(
        Shader::Projection,
        "affine_matmul",
        AFFINE_WG_SIZE,
        &params,
        &[
            (1, input),
            (2, Bind::Whole(in_shift)),
            (3, Bind::Whole(weights)),
            (4, Bind::Whole(out_shift)),
            (5, Bind::Whole(output)),
        ],
        grid,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn params_match_the_wgsl_layout() {
        let size = super::super::layout::wgsl_struct_size(
            include_str!("../../shaders/projection.wgsl"),
            "AffineParams",
        );
        assert_eq!(size as usize, std::mem::size_of::<super::AffineParams>());
    }
}
