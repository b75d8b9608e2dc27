//! Cholesky QR of a d x p block on the device (`shaders/linalg/cholesky_qr.wgsl`): the Gram
//! matrix G = Wᵀ·W, the factor L·Lᵀ = D·G·D with D = diag(G)^(−1/2), and Q = W·T with
//! T = D·L⁻ᵀ (one Cholesky QR pass, columns scaled first: Q spans what each leading set of
//! W's columns spans, as Gram–Schmidt would give). The factor is one workgroup's sequential
//! work (p steps, each a barrier apart): cheap at the block sizes of a power iteration
//! (p ≤ a few hundred), and no round trip.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::{Batch, Grid};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, linalg::cholesky_qr as wgsl};
use crate::gpu::Gpu;
use crate::kernels::products::projection::{affine_matmul, AffineMap};
use crate::kernels::ROW_WG_SIZE;

/// Twin of `CholeskyQrParams` in shaders/linalg/cholesky_qr.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct CholeskyQrParams {
    d: u32,
    p: u32,
    grid_x: u32,
    _pad0: u32,
}

const _: () = check_params::<CholeskyQrParams>(wgsl::ENTRY_POINTS);

/// Invocations of the one workgroup that factors G (`CHOLESKY_WG_SIZE` in the shader).
const CHOLESKY_INVOCATIONS: usize = wgsl::CHOLESKY_WG_SIZE as usize;

/// The most loop back-edges one invocation of the factorisation takes for a block of `p`
/// columns: the scaling, the p elimination steps (column, trailing triangle) and the
/// invocation with the most columns of L⁻¹ to solve (the first: columns 0, 256, …).
pub(crate) fn factor_back_edges(p: usize) -> usize {
    let per = |n: usize| n.div_ceil(CHOLESKY_INVOCATIONS);
    let scaling = per(p) + per(p * p);
    let elimination: usize = (0..p)
        .map(|k| 1 + per(p - k) + per((p - k) * (p - k)))
        .sum();
    let inverse: usize = (0..p)
        .step_by(CHOLESKY_INVOCATIONS)
        .map(|c| c + (p - c) * (p - c + 1) / 2 + (p - c))
        .sum();
    scaling + elimination + inverse
}

/// The device buffers of one block's Cholesky QR, sized for `p` columns, reused by every
/// pass.
pub(crate) struct CholeskyQrScratch {
    p: usize,
    gram: DeviceBuffer<f32>,
    col_scale: DeviceBuffer<f32>,
    transform: DeviceBuffer<f32>,
    zeros: DeviceBuffer<f32>,
    /// 1 once any pass met a column it could not orthonormalise (kept until cleared).
    pub(crate) breakdown: DeviceBuffer<u32>,
}

impl CholeskyQrScratch {
    /// Buffers for blocks of `p` columns, the breakdown flag clear.
    pub(crate) fn new(gpu: &Gpu, p: usize) -> Self {
        Self {
            p,
            gram: DeviceBuffer::zeroed(gpu, "block Gram matrix", p * p),
            col_scale: DeviceBuffer::zeroed(gpu, "block column scales", p),
            transform: DeviceBuffer::zeroed(gpu, "block orthonormalising transform", p * p),
            zeros: DeviceBuffer::zeroed(gpu, "no shift", p),
            breakdown: DeviceBuffer::zeroed(gpu, "Cholesky QR breakdown", 1),
        }
    }
}

/// Records Q = W·D·L⁻ᵀ into `q` for the `d` x p block `w` (row-major, column r the r-th
/// vector): Q's columns orthonormal to f32 rounding where W's are independent enough
/// (module docs), `scratch.breakdown` set where they are not. `q` must not be `w`.
pub(crate) fn orthonormalize_columns(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    w: &DeviceBuffer<f32>,
    d: usize,
    scratch: &CholeskyQrScratch,
    q: &DeviceBuffer<f32>,
) -> Result<()> {
    let p = scratch.p;
    let entries = (p * p) as u64;
    let grid = gpu.grid(entries.div_ceil(ROW_WG_SIZE as u64))?;
    let params = CholeskyQrParams {
        d: d as u32,
        p: p as u32,
        grid_x: grid.x,
        _pad0: 0,
    };
    batch.dispatch(
        wgsl::GRAM_COLUMNS,
        &[],
        &params,
        &[("columns", w.bind()), ("gram", scratch.gram.bind())],
        grid,
        Work::f32s(2.0 * (d * p * p) as f64, (2 * d * p * p + p * p) as f64),
    )?;
    let cube = (p * p * p) as f64;
    batch.dispatch(
        wgsl::CHOLESKY_INVERSE,
        &[],
        &CholeskyQrParams {
            grid_x: 1,
            ..params
        },
        &[
            ("gram", scratch.gram.bind()),
            ("col_scale", scratch.col_scale.bind()),
            ("transform", scratch.transform.bind()),
            ("breakdown", scratch.breakdown.bind()),
        ],
        Grid { x: 1, y: 1 },
        Work::f32s(cube, 3.0 * (p * p) as f64),
    )?;
    let map = AffineMap {
        in_cols: p,
        out_cols: p,
        in_shift: &scratch.zeros,
        weights: &scratch.transform,
        out_shift: &scratch.zeros,
    };
    affine_matmul(gpu, batch, w.bind(), 0, d, &map, q)
}
