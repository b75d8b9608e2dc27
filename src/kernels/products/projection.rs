//! Row-wise affine products `(in − in_shift)·W + out_shift` (`shaders/products/projection.wgsl`).

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, products::projection as wgsl};
use crate::gpu::Gpu;
use crate::kernels::primitives::gemm::{vec4_view, GemmConfig};

/// Twin of `AffineParams` in shaders/products/projection.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct AffineParams {
    n_rows: u32,
    in_offset: u32,
    in_cols: u32,
    out_cols: u32,
    n_col_tiles: u32,
    grid_x: u32,
    in_vec4: u32,
    w_vec4: u32,
}

const _: () = check_params::<AffineParams>(wgsl::ENTRY_POINTS);

/// The affine map y = (x − in_shift)·W + out_shift of rows of `in_cols` values.
pub(crate) struct AffineMap<'a> {
    /// Values per input row.
    pub in_cols: usize,
    /// Values per output row.
    pub out_cols: usize,
    /// Subtracted from every input row (`in_cols`).
    pub in_shift: &'a DeviceBuffer<f32>,
    /// W, `in_cols x out_cols` row-major.
    pub weights: &'a DeviceBuffer<f32>,
    /// Added to every output row (`out_cols`).
    pub out_shift: &'a DeviceBuffer<f32>,
}

/// Records `output = map(input)` for `n_rows` rows starting at value `in_offset` of the
/// `input` binding; `output` is `n_rows x map.out_cols`.
pub(crate) fn affine_matmul(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    input: Bind<'_>,
    in_offset: u32,
    n_rows: usize,
    map: &AffineMap<'_>,
    output: &DeviceBuffer<f32>,
) -> Result<()> {
    let config = GemmConfig::for_shape(n_rows, map.out_cols);
    affine_matmul_with(gpu, batch, (input, in_offset), n_rows, map, output, config)
}

/// [`affine_matmul`] on the tile core's `config` (any of [`GemmConfig::ALL`]; the tests run
/// each).
pub(crate) fn affine_matmul_with(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    (input, in_offset): (Bind<'_>, u32),
    n_rows: usize,
    map: &AffineMap<'_>,
    output: &DeviceBuffer<f32>,
    config: GemmConfig,
) -> Result<()> {
    let (in_cols, out_cols) = (map.in_cols, map.out_cols);
    let n_col_tiles = out_cols.div_ceil(config.tile_n());
    let grid = gpu.grid((n_rows.div_ceil(config.tile_m()) * n_col_tiles) as u64)?;
    let params = AffineParams {
        n_rows: n_rows as u32,
        in_offset,
        in_cols: in_cols as u32,
        out_cols: out_cols as u32,
        n_col_tiles: n_col_tiles as u32,
        grid_x: grid.x,
        in_vec4: (in_cols.is_multiple_of(4) && in_offset.is_multiple_of(4)) as u32,
        w_vec4: out_cols.is_multiple_of(4) as u32,
    };
    let placeholder = DeviceBuffer::zeroed(gpu, "vec4 placeholder", 4);
    batch.dispatch(
        wgsl::AFFINE_MATMUL,
        &config.overrides(),
        &params,
        &[
            ("input", input),
            ("in_shift", map.in_shift.bind()),
            ("weights", map.weights.bind()),
            ("out_shift", map.out_shift.bind()),
            ("output", output.bind()),
            ("input4", vec4_view(input, &placeholder)),
            ("weights4", vec4_view(map.weights.bind(), &placeholder)),
        ],
        grid,
        Work::f32s(
            2.0 * (n_rows * in_cols * out_cols) as f64,
            (n_rows * (in_cols + out_cols) + in_cols * out_cols) as f64,
        ),
    )
}
