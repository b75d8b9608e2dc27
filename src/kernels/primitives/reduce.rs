//! Deterministic column sums of per-block partials (`shaders/primitives/reduce.wgsl`).

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, primitives::reduce as wgsl, EntryPoint};
use crate::gpu::Gpu;
use crate::kernels::{feature_wg_size, FEATURE_WG_SIZE, ROW_WG_SIZE};

/// Twin of `ColumnSumParams` in shaders/primitives/reduce.wgsl.
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

/// A value type the column sums add: f32 (Kahan-compensated) or u32 (exact), each with its
/// entry point and buffer names.
pub(crate) trait ColumnSum: Pod {
    /// The entry point that sums columns of this type.
    const ENTRY: &'static EntryPoint;
    /// The WGSL names of its partials and totals buffers.
    const NAMES: (&'static str, &'static str);
}

impl ColumnSum for f32 {
    const ENTRY: &'static EntryPoint = wgsl::SUM_PARTIAL_COLUMNS_F32;
    const NAMES: (&'static str, &'static str) = ("partials_f32", "totals_f32");
}

impl ColumnSum for u32 {
    const ENTRY: &'static EntryPoint = wgsl::SUM_PARTIAL_COLUMNS_U32;
    const NAMES: (&'static str, &'static str) = ("partials_u32", "totals_u32");
}

/// Records `totals[c] = Σ_b partials[b][c]` for the first `n_cols` columns of `n_blocks`
/// blocks, blocks in order (f32 Kahan-compensated, u32 exact).
pub(crate) fn sum_partial_columns<T: ColumnSum>(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    partials: &DeviceBuffer<T>,
    n_blocks: usize,
    n_cols: usize,
    totals: &DeviceBuffer<T>,
) -> Result<()> {
    let grid = gpu.grid((n_cols as u64).div_ceil(ROW_WG_SIZE as u64))?;
    let params = ColumnSumParams {
        n_blocks: n_blocks as u32,
        n_cols: n_cols as u32,
        grid_x: grid.x,
        _pad0: 0,
    };
    batch.dispatch(
        T::ENTRY,
        &[],
        &params,
        &[(T::NAMES.0, partials.bind()), (T::NAMES.1, totals.bind())],
        grid,
        Work::f32s((n_blocks * n_cols) as f64, ((n_blocks + 1) * n_cols) as f64),
    )
}

/// Twin of `MeanParams` in shaders/primitives/reduce.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct MeanParams {
    n_blocks: u32,
    n_cols: u32,
    grid_x: u32,
    inv_n: f32,
}

const _: () = check_params::<MeanParams>(&[wgsl::MEAN_OF_PARTIAL_COLUMNS]);

/// Records `means[j] = shift[j] + Σ_b partials[b][j] / n_rows` for the `n_cols` columns of
/// `n_blocks` blocks of per-block sums of x − shift (as [`column_moments`] writes them), the
/// blocks folded in order (Kahan-compensated): a centre for later products in the same
/// submission.
pub(crate) fn mean_of_partial_columns(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    (partials, n_blocks, n_cols): (&DeviceBuffer<f32>, usize, usize),
    shift: &DeviceBuffer<f32>,
    n_rows: usize,
    means: &DeviceBuffer<f32>,
) -> Result<()> {
    let grid = gpu.grid((n_cols as u64).div_ceil(ROW_WG_SIZE as u64))?;
    let params = MeanParams {
        n_blocks: n_blocks as u32,
        n_cols: n_cols as u32,
        grid_x: grid.x,
        inv_n: 1.0 / n_rows as f32,
    };
    batch.dispatch(
        wgsl::MEAN_OF_PARTIAL_COLUMNS,
        &[],
        &params,
        &[
            ("partials_f32", partials.bind()),
            ("shift", shift.bind()),
            ("means", means.bind()),
        ],
        grid,
        Work::f32s((n_blocks * n_cols) as f64, ((n_blocks + 2) * n_cols) as f64),
    )
}

/// Twin of `MomentParams` in shaders/primitives/reduce.wgsl.
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

/// Where the column moments of a chunk go: per block of `block_rows` rows (numbered from
/// `block_offset`), [block][d] sums.
pub(crate) struct MomentBlocks<'a> {
    /// Rows per block.
    pub block_rows: usize,
    /// The chunk's first global block.
    pub block_offset: usize,
    /// Σ (x − shift_j) per block and column.
    pub partial_sum: &'a DeviceBuffer<f32>,
    /// Σ (x − shift_j)² per block and column.
    pub partial_sum_sq: &'a DeviceBuffer<f32>,
}

/// Records, per block of rows of `chunk` and per column j, Σ (x − shift_j) and
/// Σ (x − shift_j)² into `blocks`.
pub(crate) fn column_moments(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    shift: &DeviceBuffer<f32>,
    blocks: &MomentBlocks<'_>,
) -> Result<()> {
    column_moments_at(gpu, batch, chunk, d, shift, blocks, feature_wg_size(d))
}

/// [`column_moments`] with workgroups of `wg`, any of
/// [`feature_wg_sizes`](crate::kernels::feature_wg_sizes): the tests run each.
pub(crate) fn column_moments_at(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    shift: &DeviceBuffer<f32>,
    blocks: &MomentBlocks<'_>,
    wg: u32,
) -> Result<()> {
    let block_rows = blocks.block_rows;
    let n_col_groups = d.div_ceil(wg as usize);
    let n_blocks = chunk.n_rows.div_ceil(block_rows);
    let grid = gpu.grid((n_blocks * n_col_groups) as u64)?;
    let params = MomentParams {
        n_rows: chunk.n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        block_rows: block_rows as u32,
        block_offset: blocks.block_offset as u32,
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
            ("shift", shift.bind()),
            ("partial_sum", blocks.partial_sum.bind()),
            ("partial_sum_sq", blocks.partial_sum_sq.bind()),
        ],
        grid,
        // x − shift, then a sum and a sum of squares per value.
        Work::f32s(
            4.0 * (chunk.n_rows * d) as f64,
            (chunk.n_rows * d + 2 * n_blocks * d) as f64,
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::tests::{gpu, random};

    #[test]
    fn column_sums_take_every_block_once_eight_loads_at_a_time() {
        let gpu = gpu();
        let n_cols = 5;
        // Around and far past the eight blocks loaded at once; values of mixed magnitudes,
        // where the order of a Kahan fold shows in the last bits.
        for n_blocks in [1usize, 7, 8, 9, 16, 23, 1001] {
            let r = random(n_blocks * n_cols, n_blocks as u64);
            let f: Vec<f32> = r
                .iter()
                .enumerate()
                .map(|(e, v)| (v - 0.5) * 10f32.powi((e % 7) as i32))
                .collect();
            let u: Vec<u32> = r.iter().map(|v| (v * 4e9) as u32).collect();
            let (pf, pu) = (
                DeviceBuffer::from_slice(&gpu, "partials", &f),
                DeviceBuffer::from_slice(&gpu, "partials", &u),
            );
            let (tf, tu) = (
                DeviceBuffer::<f32>::zeroed(&gpu, "totals", n_cols),
                DeviceBuffer::<u32>::zeroed(&gpu, "totals", n_cols),
            );
            let mut batch = Batch::new(&gpu, "column sums test");
            sum_partial_columns(&gpu, &mut batch, &pf, n_blocks, n_cols, &tf).unwrap();
            sum_partial_columns(&gpu, &mut batch, &pu, n_blocks, n_cols, &tu).unwrap();
            let (hf, hu) = (batch.read_all(&tf), batch.read_all(&tu));
            let back = batch.finish().unwrap();
            for c in 0..n_cols {
                // Every block once: within Kahan's bound (a few ulps of Σ|v|, whatever the
                // number of blocks) of the exact sum; a block missed or added is far out.
                let column = (0..n_blocks).map(|b| f[b * n_cols + c] as f64);
                let exact: f64 = column.clone().sum();
                let magnitude: f64 = column.map(f64::abs).sum();
                let got = back.f32s(hf)[c] as f64;
                assert!(
                    (got - exact).abs() <= 3.0 * f32::EPSILON as f64 * magnitude,
                    "{n_blocks} blocks, col {c}: {got} against {exact}"
                );
                let count = (0..n_blocks).fold(0u32, |a, b| a.wrapping_add(u[b * n_cols + c]));
                assert_eq!(back.u32s(hu)[c], count, "{n_blocks} blocks, col {c}");
            }
        }
    }
}
