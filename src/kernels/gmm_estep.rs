//! E-step of a Gaussian mixture (`shaders/gmm_estep.wgsl`): squared Mahalanobis norms
//! through the precision Cholesky factors, then log-sum-exp, responsibilities, log p and
//! labels per row, and block sums of log p.

use bytemuck::{Pod, Zeroable};

use super::ROW_WG_SIZE;
use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::buffer::Chunk;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, gmm_estep as wgsl};
use crate::gpu::Gpu;

/// Rows per mahalanobis_full tile (`TILE` in the shader).
const FULL_TILE_ROWS: u64 = wgsl::TILE as u64;
/// Largest D that Full/Tied evaluate one row per invocation (`SMALL_D` in the shader); above
/// it they use the tiled GEMM.
pub(crate) const SMALL_D: usize = wgsl::SMALL_D as usize;
/// Rows per normalize_responsibilities workgroup, hence per block of log p sums
/// (`NORMALIZE_WG_SIZE` in the shader).
pub(crate) const NORMALIZE_ROWS: usize = wgsl::NORMALIZE_WG_SIZE as usize;

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

const _: () = check_params::<EstepParams>(wgsl::ENTRY_POINTS);

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
    let row_groups = (seg.n_rows as u64).div_ceil(ROW_WG_SIZE as u64);
    let (entry, groups) = if comps.full && d <= SMALL_D {
        (wgsl::MAHALANOBIS_FULL_SMALL_D, row_groups)
    } else if comps.full {
        let tiles = (seg.n_rows as u64).div_ceil(FULL_TILE_ROWS);
        (wgsl::MAHALANOBIS_FULL, tiles * k as u64)
    } else {
        (wgsl::MAHALANOBIS_DIAG, row_groups)
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
        entry,
        &[],
        &params,
        &[
            ("x", seg.chunk.bind()),
            ("means", Bind::Whole(comps.means)),
            ("precisions", Bind::Whole(comps.precisions)),
            ("resp", Bind::Whole(seg.resp)),
        ],
        grid,
        // Per row and component: d subtractions, then the triangular product (d(d+1)/2
        // FMAs) and the squared norm, or d scaled squares for diagonal factors.
        Work::f32s(
            (seg.n_rows * k) as f64
                * if comps.full {
                    (d * d + 3 * d) as f64
                } else {
                    3.0 * d as f64
                },
            (seg.n_rows * (d + k)
                + k * d
                + k.max(1) * comps.prec_stride.max(d * d * comps.full as usize)) as f64,
        ),
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
        wgsl::NORMALIZE_RESPONSIBILITIES,
        &[],
        &params,
        &[
            ("resp", Bind::Whole(seg.resp)),
            ("log_const", Bind::Whole(log_const)),
            ("log_density", Bind::Whole(out.log_density)),
            ("labels", Bind::Whole(out.labels)),
            ("block_log_density", Bind::Whole(out.block_log_density)),
        ],
        grid,
        // A max, an exp and a sum per value; responsibilities in and out, three per-row outputs.
        Work::f32s(
            4.0 * (seg.n_rows * k) as f64,
            (seg.n_rows * (2 * k + 3)) as f64,
        ),
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
        wgsl::RESPONSIBILITIES_FROM_LABELS,
        &[],
        &params,
        &[
            ("resp", Bind::Whole(seg.resp)),
            ("given_labels", Bind::Whole(labels)),
        ],
        grid,
        Work::f32s(0.0, (seg.n_rows * (k + 1)) as f64),
    )
}
