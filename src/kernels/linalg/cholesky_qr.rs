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
/// invocation with the most columns of L⁻¹ to solve (the first: columns 0, 256, …), plus p
/// for the copy of its column that the workgroup-memory form adds.
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
    scaling + elimination + inverse + p
}

/// The override that sizes `cholesky_inverse_shared`'s packed triangles: p(p+1)/2.
pub(crate) const TRI_LEN: &str = "TRI_LEN";

/// Whether `cholesky_inverse_shared` takes blocks of `p` columns on this device: one column
/// of L⁻¹ an invocation, and both packed triangles (2·p(p+1)/2 f32) in its workgroup memory
/// (p up to 110 in an H200's 48 KiB). It gives the global form's bits, faster: every step of
/// the factorisation and of the substitution reads workgroup memory, not global memory it
/// has just written.
pub(crate) fn shared_fits(gpu: &Gpu, p: usize) -> bool {
    #[cfg(test)]
    if GLOBAL_ONLY.get() {
        return false;
    }
    let bytes = (p * (p + 1) / 2) as u64 * 2 * 4;
    p <= CHOLESKY_INVOCATIONS
        && bytes <= u64::from(gpu.device().limits().max_compute_workgroup_storage_size)
}

#[cfg(test)]
thread_local! {
    /// The tests' switch to the global form wherever the shared one would run.
    static GLOBAL_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the factorisation in its global form on this thread.
#[cfg(test)]
pub(crate) fn with_global_factor<R>(f: impl FnOnce() -> R) -> R {
    let was = GLOBAL_ONLY.replace(true);
    let out = f();
    GLOBAL_ONLY.set(was);
    out
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
    let shared = shared_fits(gpu, p);
    let tri_len = [(TRI_LEN, (p * (p + 1) / 2) as u32)];
    batch.dispatch(
        if shared {
            wgsl::CHOLESKY_INVERSE_SHARED
        } else {
            wgsl::CHOLESKY_INVERSE
        },
        if shared { &tri_len } else { &[] },
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
