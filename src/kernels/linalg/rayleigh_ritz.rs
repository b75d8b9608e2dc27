//! Rayleigh–Ritz of a d x p block reduced to p x p matrices on the device
//! (`shaders/linalg/rayleigh_ritz.wgsl`): for the block Q (orthonormal to f32 rounding) and its
//! image W = S·Q, the projected operator H = ½(QᵀW + WᵀQ), the Gram matrix G = QᵀQ and the
//! Gram matrix E = R'ᵀR' of the part R' = W − Q·H of W outside the block. The Ritz pairs of
//! the pencil (H, G) and the lengths of their residuals follow from these three in f64 on the
//! host (`linalg::projected_ritz`), which reads 3p² values where it read 2dp and works in p³
//! where it worked in dp².

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::{Batch, ReadHandle};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::readback::Readback;
use crate::gpu::shaders::{check_params, linalg::rayleigh_ritz as wgsl};
use crate::gpu::Gpu;
use crate::kernels::products::projection::{affine_matmul, AffineMap};
use crate::kernels::ROW_WG_SIZE;

/// Twin of `RayleighRitzParams` in shaders/linalg/rayleigh_ritz.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct RayleighRitzParams {
    d: u32,
    p: u32,
    grid_x: u32,
    _pad0: u32,
}

const _: () = check_params::<RayleighRitzParams>(wgsl::ENTRY_POINTS);

/// The most loop back-edges one invocation takes for blocks of `d` rows (`project_block`'s
/// loop over the rows; `residual_gram` takes half as many).
pub(crate) fn projection_back_edges(d: usize) -> usize {
    d + 1
}

/// The device buffers of one block's projection, sized for d x p blocks, reused by every
/// check.
pub(crate) struct ProjectionScratch {
    d: usize,
    p: usize,
    /// H = ½(QᵀW + WᵀQ), p x p.
    pub(crate) projected: DeviceBuffer<f32>,
    /// G = QᵀQ, p x p.
    pub(crate) gram: DeviceBuffer<f32>,
    /// E = R'ᵀR', p x p.
    pub(crate) residual_gram: DeviceBuffer<f32>,
    /// T = Q·H, d x p.
    projection: DeviceBuffer<f32>,
    zeros: DeviceBuffer<f32>,
}

impl ProjectionScratch {
    /// Buffers for blocks of `d` rows and `p` columns.
    pub(crate) fn new(gpu: &Gpu, d: usize, p: usize) -> Self {
        Self {
            d,
            p,
            projected: DeviceBuffer::zeroed(gpu, "projected operator", p * p),
            gram: DeviceBuffer::zeroed(gpu, "block Gram matrix", p * p),
            residual_gram: DeviceBuffer::zeroed(gpu, "residual Gram matrix", p * p),
            projection: DeviceBuffer::zeroed(gpu, "block times projected operator", d * p),
            zeros: DeviceBuffer::zeroed(gpu, "no shift", p),
        }
    }
}

/// The three p x p matrices of a projection, in f64, row-major.
pub(crate) struct Projection {
    /// H = ½(QᵀW + WᵀQ).
    pub h: Vec<f64>,
    /// G = QᵀQ.
    pub g: Vec<f64>,
    /// E = R'ᵀR', R' = W − Q·H.
    pub e: Vec<f64>,
}

/// Where a batch will hand back a [`Projection`].
pub(crate) struct ProjectionHandles([ReadHandle; 3]);

impl ProjectionHandles {
    /// The projection, once the batch is finished.
    pub(crate) fn take(self, back: &Readback) -> Projection {
        let [h, g, e] = self
            .0
            .map(|h| back.f32s(h).into_iter().map(f64::from).collect());
        Projection { h, g, e }
    }
}

/// Records the projection of the `d` x p block `block` (row-major, column r the r-th vector)
/// and its image `image` = S·block into `scratch`, and the reads of H, G and E.
pub(crate) fn project_block(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    block: &DeviceBuffer<f32>,
    image: &DeviceBuffer<f32>,
    scratch: &ProjectionScratch,
) -> Result<ProjectionHandles> {
    let (d, p) = (scratch.d, scratch.p);
    let grid = gpu.grid(((p * p) as u64).div_ceil(ROW_WG_SIZE as u64))?;
    let params = RayleighRitzParams {
        d: d as u32,
        p: p as u32,
        grid_x: grid.x,
        _pad0: 0,
    };
    let entries = (p * p) as f64;
    batch.dispatch(
        wgsl::PROJECT_BLOCK,
        &[],
        &params,
        &[
            ("block", block.bind()),
            ("image", image.bind()),
            ("projected", scratch.projected.bind()),
            ("gram", scratch.gram.bind()),
        ],
        grid,
        Work::f32s(
            6.0 * entries * d as f64,
            4.0 * entries * d as f64 + 2.0 * entries,
        ),
    )?;
    let map = AffineMap {
        in_cols: p,
        out_cols: p,
        in_shift: &scratch.zeros,
        weights: &scratch.projected,
        out_shift: &scratch.zeros,
    };
    affine_matmul(gpu, batch, block.bind(), 0, d, &map, &scratch.projection)?;
    batch.dispatch(
        wgsl::RESIDUAL_GRAM,
        &[],
        &params,
        &[
            ("image", image.bind()),
            ("projection", scratch.projection.bind()),
            ("residual_gram_out", scratch.residual_gram.bind()),
        ],
        grid,
        Work::f32s(4.0 * entries * d as f64, 4.0 * entries * d as f64 + entries),
    )?;
    Ok(ProjectionHandles([
        batch.read_all(&scratch.projected),
        batch.read_all(&scratch.gram),
        batch.read_all(&scratch.residual_gram),
    ]))
}
