//! The E-step of diagonal factors (Diag, Spherical) on GPUs in one kernel
//! (`shaders/mixture/estep_tiled.wgsl`): squared norms qᵢₖ = Σⱼ ((xᵢⱼ − μₖⱼ) pₖⱼ)² as a
//! register-blocked outer product over the features, then the log-sum-exp normalisation of
//! the same rows (responsibilities, log p, labels, block sums of log p). The same bits as
//! [`estep::squared_mahalanobis`](super::estep::squared_mahalanobis)'s `mahalanobis_diag`
//! followed by [`estep::normalize_responsibilities`](super::estep::normalize_responsibilities),
//! which CPU-like adapters keep (their uniform-slice twins are faster there).

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, mixture::estep_tiled as wgsl};
use crate::gpu::Gpu;
use crate::kernels::mixture::estep::{Components, RowOutputs, Segment, NORMALIZE_ROWS};

/// Twin of `EstepTiledParams` in shaders/mixture/estep_tiled.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct EstepTiledParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    k: u32,
    grid_x: u32,
    row_offset: u32,
    block_offset: u32,
    _pad: u32,
}

const _: () = check_params::<EstepTiledParams>(wgsl::ENTRY_POINTS);
const _: () = assert!(
    wgsl::ESTEP_TILED_WG as usize == NORMALIZE_ROWS,
    "a workgroup's rows are one block of log p sums, as normalize_responsibilities'"
);

/// The override that sets the invocations along the components.
pub(crate) const ET_LANES_C: &str = "ET_LANES_C";

/// `ET_LANES_C` for K components: the narrowest component tile (16, 32 or 64 wide) that
/// holds them all, else 64 (the tallest row tiles for small K, so few lanes idle). Every
/// shape gives the same bits.
pub(crate) fn lanes_c(k: usize) -> u32 {
    [4u32, 8, 16]
        .into_iter()
        .find(|&l| 4 * l as usize >= k)
        .unwrap_or(16)
}

/// Records the E-step of diagonal factors `comps` for the rows of `seg` (responsibilities
/// into `seg.resp`, per-row outputs into `out`), with `ET_LANES_C` = `lanes` (tests run each;
/// the workspace passes [`lanes_c`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn record(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    seg: &Segment<'_>,
    (d, k): (usize, usize),
    comps: &Components<'_>,
    log_const: &DeviceBuffer<f32>,
    out: &RowOutputs<'_>,
    lanes: u32,
) -> Result<()> {
    debug_assert!(!comps.full, "the tiled E-step takes diagonal factors");
    let grid = gpu.grid((seg.n_rows as u64).div_ceil(NORMALIZE_ROWS as u64))?;
    let params = EstepTiledParams {
        n_rows: seg.n_rows as u32,
        x_offset: seg.chunk.x_offset + (seg.first * d) as u32,
        d: d as u32,
        k: k as u32,
        grid_x: grid.x,
        row_offset: seg.first as u32,
        block_offset: out.block_offset as u32,
        _pad: 0,
    };
    let (n, kd) = (seg.n_rows as f64, (k * d) as f64);
    batch.dispatch(
        wgsl::ESTEP_DIAG_TILED,
        &[(ET_LANES_C, lanes)],
        &params,
        &[
            ("x", seg.chunk.bind()),
            ("means", comps.means.bind()),
            ("precisions", comps.precisions.bind()),
            ("resp", seg.resp.bind()),
            ("log_const", log_const.bind()),
            ("log_density", out.log_density.bind()),
            ("labels", out.labels.bind()),
            ("block_log_density", out.block_log_density.bind()),
        ],
        grid,
        // Per row and component a subtraction, a product and an FMA per feature, then a max,
        // an exp and a sum; the rows read once, the parameters once, r and the per-row
        // outputs written.
        Work::f32s(
            n * kd * 3.0 + 4.0 * n * k as f64,
            n * (d + k + 2) as f64 + 2.0 * kd,
        ),
    )
}
