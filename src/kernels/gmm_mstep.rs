//! M-step sums of a Gaussian mixture (`shaders/gmm_mstep.wgsl`): per block of rows, the
//! responsibility-weighted deviations Σ r (x − s)^p with Σ r, and the centred scatter
//! Σ r (x − s)(x − s)ᵀ (upper triangle); or, in one pass over x and r, both moments at
//! once (`DiagonalMoments`, and `AugmentedScatter`, the scatter of the row (x − s, 1), whose
//! last column is Σ r (x − s) and whose corner is Σ r).

use bytemuck::{Pod, Zeroable};

use super::gmm_estep::Segment;
use super::ROW_WG_SIZE;
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, gmm_mstep as wgsl};
use crate::gpu::Gpu;

/// From this many features on, the scatter runs as a tiled GEMM (`weighted_scatter_tiled`):
/// below it most of a 64-wide tile would be padding, and the per-output loop is cheaper.
pub(crate) const TILED_SCATTER_MIN_D: usize = 24;
/// Output tile edge of `weighted_scatter_tiled` (`TILE` in the shader).
const TILE: usize = wgsl::TILE as usize;

/// Twin of `MstepParams` in shaders/gmm_mstep.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct MstepParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    k: u32,
    block_rows: u32,
    block_offset: u32,
    n_blocks: u32,
    n_outputs: u32,
    power: u32,
    grid_x: u32,
    augmented: u32,
    _pad1: u32,
}

const _: () = check_params::<MstepParams>(wgsl::ENTRY_POINTS);

/// Where the per-block sums of a segment go.
pub(crate) struct Blocks<'a> {
    /// Rows per block.
    pub block_rows: usize,
    /// Global index of the segment's first block.
    pub block_offset: usize,
    /// [block][outputs] partial sums.
    pub partials: &'a DeviceBuffer<f32>,
}

/// The weighted sums a pass computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Moment {
    /// Σ r (x − s) and Σ r: K (D + 1) outputs per block.
    First,
    /// Σ r (x − s)² (per feature) and Σ r: K (D + 1) outputs per block.
    SecondDiagonal,
    /// Σ r (x − s)(x − s)ᵀ, upper triangle: K D² outputs per block.
    Scatter,
    /// Σ r (x − s) (D), Σ r, then Σ r (x − s)² (D) per component: K (2D + 1) outputs per
    /// block, from one read of x and r.
    DiagonalMoments,
    /// The scatter of the augmented row (x − s, 1), upper triangle: K (D + 1)² outputs per
    /// block; [D][D] is Σ r and [j][D] is Σ r (x − s)ⱼ.
    AugmentedScatter,
}

impl Moment {
    /// Outputs per block for K components of D features.
    pub(crate) fn outputs(self, k: usize, d: usize) -> usize {
        match self {
            Moment::First | Moment::SecondDiagonal => k * (d + 1),
            Moment::Scatter => k * d * d,
            Moment::DiagonalMoments => k * (2 * d + 1),
            Moment::AugmentedScatter => k * (d + 1) * (d + 1),
        }
    }

    /// The features of the scatter's rows: D, or D + 1 augmented (0 for the diagonal
    /// sums, which have no scatter).
    fn scatter_dim(self, d: usize) -> usize {
        match self {
            Moment::Scatter => d,
            Moment::AugmentedScatter => d + 1,
            _ => 0,
        }
    }
}

/// Which sums a pass takes, and about which points.
pub(crate) struct Sums<'a> {
    /// The moment.
    pub moment: Moment,
    /// K x D shifts sₖ the deviations are taken from.
    pub shift: &'a DeviceBuffer<f32>,
}

/// Records the per-block sums of `sums` over the rows of `seg` into `blocks`.
pub(crate) fn weighted_sums(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    seg: &Segment<'_>,
    (d, k): (usize, usize),
    sums: &Sums<'_>,
    blocks: &Blocks<'_>,
) -> Result<()> {
    let (moment, shift) = (sums.moment, sums.shift);
    let n_blocks = seg.n_rows.div_ceil(blocks.block_rows);
    let n_outputs = moment.outputs(k, d);
    let de = moment.scatter_dim(d);
    let per_output = ((n_blocks * n_outputs) as u64).div_ceil(ROW_WG_SIZE as u64);
    let (entry, groups) = match moment {
        Moment::First | Moment::SecondDiagonal => (wgsl::WEIGHTED_DEVIATION_SUMS, per_output),
        // One invocation per feature writes both of its moments.
        Moment::DiagonalMoments => (
            wgsl::WEIGHTED_MOMENTS_DIAG,
            ((n_blocks * k * (d + 1)) as u64).div_ceil(ROW_WG_SIZE as u64),
        ),
        Moment::Scatter | Moment::AugmentedScatter if d >= TILED_SCATTER_MIN_D => {
            let tiles = de.div_ceil(TILE);
            let pairs = tiles * (tiles + 1) / 2;
            (wgsl::WEIGHTED_SCATTER_TILED, (n_blocks * k * pairs) as u64)
        }
        Moment::Scatter | Moment::AugmentedScatter => (wgsl::WEIGHTED_SCATTER, per_output),
    };
    let grid = gpu.grid(groups)?;
    let params = MstepParams {
        n_rows: seg.n_rows as u32,
        x_offset: seg.chunk.x_offset + (seg.first * d) as u32,
        d: d as u32,
        k: k as u32,
        block_rows: blocks.block_rows as u32,
        block_offset: blocks.block_offset as u32,
        n_blocks: n_blocks as u32,
        n_outputs: n_outputs as u32,
        power: if moment == Moment::SecondDiagonal {
            2
        } else {
            1
        },
        grid_x: grid.x,
        augmented: u32::from(moment == Moment::AugmentedScatter),
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        entry,
        &[],
        &params,
        &[
            ("x", seg.chunk.bind()),
            ("resp", seg.resp.bind()),
            ("shift", shift.bind()),
            ("partials", blocks.partials.bind()),
        ],
        grid,
        Work::f32s(
            (seg.n_rows * k) as f64
                * match moment {
                    // (x − s) and an FMA per feature, or its square too.
                    Moment::First => 3.0 * d as f64,
                    Moment::SecondDiagonal => 4.0 * d as f64,
                    Moment::DiagonalMoments => 5.0 * d as f64,
                    // (x − s), then the upper triangle of r·(x − s)(x − s)ᵀ.
                    Moment::Scatter | Moment::AugmentedScatter => (de * de + 2 * de) as f64,
                },
            (seg.n_rows * (d + k) + k * d + n_blocks * n_outputs) as f64,
        ),
    )
}
