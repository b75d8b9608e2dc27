//! What the pair kernels share (`shaders/shared/pair_params.wgsl`, `pair_rows.wgsl`): the
//! parameters of a dispatch over a run of query rows against a run of data rows, and the rows
//! padded to whole vec4s for the uniform slices that CPU-like adapters read. The pair kernels
//! are the RBF product ([`products::affinity`](crate::kernels::products::affinity)) and the
//! neighbour search ([`neighbors`](crate::kernels::neighbors)).

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::shaders::{self, check_params, shared::pair_params as wgsl};
use crate::gpu::Gpu;

/// Block columns per pass of the uniform RBF product and of the sparse product.
pub(crate) const BLOCK_COLS: usize = wgsl::BLOCK_COLS as usize;
/// The override that fixes the uniform kernels' vec4s per padded row (`PAIR_D4`).
pub(crate) const PAIR_D4: &str = "PAIR_D4";
/// Values of one uniform slice (`PAIR_SLICE_VEC4S` vec4s in the shader).
pub(crate) const SLICE_VALUES: usize = 4 * wgsl::PAIR_SLICE_VEC4S as usize;
/// Largest D of the uniform kernels (the query row in registers).
pub(crate) const UNIFORM_MAX_D: usize = 4 * wgsl::UNIFORM_MAX_D4 as usize;

/// Twin of `PairParams` in shaders/shared/pair_params.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct PairParams {
    pub n_queries: u32,
    pub q_offset: u32,
    pub n_data: u32,
    pub x_offset: u32,
    pub d: u32,
    pub q_row0: u32,
    pub x_row0: u32,
    pub m: u32,
    pub col0: u32,
    pub n_cols: u32,
    pub accumulate: u32,
    pub k: u32,
    pub gamma: f32,
    pub grid_x: u32,
    pub v_vec4s: u32,
    pub x_vec4: u32,
}

const _: () = {
    check_params::<PairParams>(shaders::products::affinity::ENTRY_POINTS);
    check_params::<PairParams>(shaders::neighbors::knn::ENTRY_POINTS);
    check_params::<PairParams>(shaders::neighbors::csr::ENTRY_POINTS);
    check_params::<PairParams>(shaders::neighbors::range::ENTRY_POINTS);
};

impl PairParams {
    /// The pairs of the query chunk `q` and `rows` data rows of `data` from its row `first`
    /// (the other fields zero).
    pub(crate) fn pairs(
        (q, data): (&Chunk, &Chunk),
        (first, rows): (usize, usize),
        d: usize,
        grid_x: u32,
    ) -> Self {
        Self {
            n_queries: q.n_rows as u32,
            q_offset: q.x_offset,
            n_data: rows as u32,
            x_offset: data.x_offset + (first * d) as u32,
            d: d as u32,
            q_row0: q.row_start as u32,
            x_row0: (data.row_start + first) as u32,
            grid_x,
            ..Zeroable::zeroed()
        }
    }
}

/// Rows of `cols` values padded to whole vec4s on the device, for the uniform slices.
pub(crate) struct PaddedRows {
    rows: DeviceBuffer<f32>,
    /// vec4s per padded row.
    pub vec4s: usize,
}

impl PaddedRows {
    /// Records the padding of `n_rows` rows of `cols` values from value `offset` of `bind`.
    pub(crate) fn record(
        gpu: &Gpu,
        batch: &mut Batch<'_>,
        (bind, offset): (Bind<'_>, u32),
        n_rows: usize,
        cols: usize,
    ) -> Result<Self> {
        let vec4s = cols.div_ceil(4);
        let rows = DeviceBuffer::zeroed(gpu, "padded rows", n_rows * 4 * vec4s);
        super::rows::pad_rows(gpu, batch, (bind, offset), (n_rows, cols, 4 * vec4s), &rows)?;
        Ok(Self { rows, vec4s })
    }

    /// Records the copy of `n` rows from row `first` into the uniform `slice`.
    pub(crate) fn copy_to_slice(
        &self,
        batch: &mut Batch<'_>,
        slice: &wgpu::Buffer,
        first: usize,
        n: usize,
    ) {
        let bytes = 16 * self.vec4s as u64;
        batch.copy(
            self.rows.raw(),
            first as u64 * bytes,
            slice,
            0,
            n as u64 * bytes,
        );
    }
}

/// A uniform slice buffer for the pair kernels (`x_slice`, `v_slice`).
pub(crate) fn slice_buffer(gpu: &Gpu, label: &str) -> wgpu::Buffer {
    gpu.uniform_buffer(label, 4 * SLICE_VALUES as u64)
}

/// A whole uniform slice buffer as a binding.
pub(crate) fn slice_bind(slice: &wgpu::Buffer) -> Bind<'_> {
    Bind::Range(slice, 0, 4 * SLICE_VALUES as u64)
}
