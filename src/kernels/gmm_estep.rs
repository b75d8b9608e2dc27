//! E-step of a Gaussian mixture (`shaders/gmm_estep.wgsl`): squared Mahalanobis norms
//! through the precision Cholesky factors, then log-sum-exp, responsibilities, log p and
//! labels per row, and block sums of log p.

use bytemuck::{Pod, Zeroable};

use super::ROW_WG_SIZE;
use crate::error::Result;
use crate::gpu::buffer::Chunk;
use crate::gpu::kernel::{Batch, Bind, Shader};
use crate::gpu::Gpu;

/// mahalanobis_full's workgroup: 16 x 16 invocations of 4 x 4 outputs (the shader needs 256).
const FULL_WG_SIZE: u32 = 256;
/// Rows per mahalanobis_full tile (`TILE` in the shader).
const FULL_TILE_ROWS: u64 = 64;
/// Largest D that Full/Tied evaluate one row per invocation (`SMALL_D` in the shader); above
/// it they use the tiled GEMM.
pub(crate) const SMALL_D: usize = 16;
/// Rows per normalize_responsibilities workgroup, hence per block of log p sums (a power of
/// two, at most the shader's `MAX_NORMALIZE_WG`).
pub(crate) const NORMALIZE_ROWS: usize = 256;

/// Twin of `EstepParams` in shaders/gmm_estep.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct EstepParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    k: u32,
    grid_x: u32,
    prec_stride: u32,
    row_offset: u32,
    block_offset: u32,
}

/// Rows `first .. first + n_rows` of a data chunk, with their N x K responsibilities buffer.
pub(crate) struct Segment<'a> {
    /// The data chunk.
    pub chunk: &'a Chunk,
    /// First row of the segment inside the chunk.
    pub first: usize,
    /// Rows in the segment.
    pub n_rows: usize,
    /// n_rows x K values.
    pub resp: &'a wgpu::Buffer,
}

impl Segment<'_> {
    fn x_offset(&self, d: usize) -> u32 {
        self.chunk.x_offset + (self.first * d) as u32
    }
}

/// The component parameters as the shader reads them.
pub(crate) struct Components<'a> {
    /// K x D means.
    pub means: &'a wgpu::Buffer,
    /// Precision factors: Full K x D x D, Tied D x D (upper triangular Uₖ); Diag and
    /// Spherical K x D values pₖⱼ.
    pub precisions: &'a wgpu::Buffer,
    /// Values between two components' factors: D² (Full), 0 (Tied), D (Diag, Spherical).
    pub prec_stride: usize,
    /// Whether the factors are D x D (Full, Tied) rather than diagonal.
    pub full: bool,
}

/// Per-row outputs of [`normalize_responsibilities`].
pub(crate) struct RowOutputs<'a> {
    /// log p(xᵢ), one per row of the data chunk.
    pub log_density: &'a wgpu::Buffer,
    /// Most probable component, one per row of the data chunk.
    pub labels: &'a wgpu::Buffer,
    /// Sums of log p per block of [`NORMALIZE_ROWS`] rows.
    pub block_log_density: &'a wgpu::Buffer,
    /// Global index of the segment's first block.
    pub block_offset: usize,
}

/// Records qᵢₖ = ‖(xᵢ − μₖ)ᵀ Uₖ‖² for the rows of `seg` into `seg.resp`.
pub(crate) fn squared_mahalanobis(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    seg: &Segment<'_>,
    d: usize,
    k: usize,
    comps: &Components<'_>,
) -> Result<()> {
    let (entry, wg_size, groups) = if comps.full && d <= SMALL_D {
        let groups = (seg.n_rows as u64).div_ceil(ROW_WG_SIZE as u64);
        ("mahalanobis_full_small_d", ROW_WG_SIZE, groups)
    } else if comps.full {
        let tiles = (seg.n_rows as u64).div_ceil(FULL_TILE_ROWS);
        ("mahalanobis_full", FULL_WG_SIZE, tiles * k as u64)
    } else {
        let groups = (seg.n_rows as u64).div_ceil(ROW_WG_SIZE as u64);
        ("mahalanobis_diag", ROW_WG_SIZE, groups)
    };
    let grid = gpu.grid(groups)?;
    let params = EstepParams {
        n_rows: seg.n_rows as u32,
        x_offset: seg.x_offset(d),
        d: d as u32,
        k: k as u32,
        grid_x: grid.x,
        prec_stride: comps.prec_stride as u32,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        Shader::GmmEstep,
        entry,
        wg_size,
        &params,
        &[
            (1, seg.chunk.bind()),
            (2, Bind::Whole(comps.means)),
            (3, Bind::Whole(comps.precisions)),
            (4, Bind::Whole(seg.resp)),
        ],
        grid,
    )
}

/// Records the log-sum-exp normalisation of `seg.resp` (squared norms in, responsibilities
/// out) with log p, labels and block sums of log p.
pub(crate) fn normalize_responsibilities(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    seg: &Segment<'_>,
    k: usize,
    log_const: &wgpu::Buffer,
    out: &RowOutputs<'_>,
) -> Result<()> {
    let grid = gpu.grid((seg.n_rows as u64).div_ceil(NORMALIZE_ROWS as u64))?;
    let params = EstepParams {
        n_rows: seg.n_rows as u32,
        k: k as u32,
        grid_x: grid.x,
        row_offset: seg.first as u32,
        block_offset: out.block_offset as u32,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        Shader::GmmEstep,
        "normalize_responsibilities",
        NORMALIZE_ROWS as u32,
        &params,
        &[
            (4, Bind::Whole(seg.resp)),
            (5, Bind::Whole(log_const)),
            (6, Bind::Whole(out.log_density)),
            (7, Bind::Whole(out.labels)),
            (8, Bind::Whole(out.block_log_density)),
        ],
        grid,
    )
}

/// Records one-hot responsibilities of `labels` (one per row of `seg`) into `seg.resp`.
pub(crate) fn responsibilities_from_labels(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    seg: &Segment<'_>,
    k: usize,
    labels: &wgpu::Buffer,
) -> Result<()> {
    let grid = gpu.grid((seg.n_rows as u64).div_ceil(ROW_WG_SIZE as u64))?;
    let params = EstepParams {
        n_rows: seg.n_rows as u32,
        k: k as u32,
        grid_x: grid.x,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        Shader::GmmEstep,
        "responsibilities_from_labels",
        ROW_WG_SIZE,
        &params,
        &[(4, Bind::Whole(seg.resp)), (9, Bind::Whole(labels))],
        grid,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn params_match_the_wgsl_layout() {
        let size = super::super::layout::wgsl_struct_size(
            include_str!("../../shaders/gmm_estep.wgsl"),
            "EstepParams",
        );
        assert_eq!(size as usize, std::mem::size_of::<super::EstepParams>());
    }

    #[test]
    fn constants_match_the_shader() {
        let src = include_str!("../../shaders/gmm_estep.wgsl");
        assert!(src.contains("const TILE: u32 = 64u;"));
        assert!(src.contains("const MAX_NORMALIZE_WG: u32 = 256u;"));
        assert!(src.contains(&format!("const SMALL_D: u32 = {}u;", super::SMALL_D)));
        assert!(super::NORMALIZE_ROWS.is_power_of_two() && super::NORMALIZE_ROWS <= 256);
        assert_eq!(super::FULL_TILE_ROWS, 64);
    }
}
