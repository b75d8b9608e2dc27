//! The dense power solver's device side: S (d x d, f32) on the device (uploaded, or formed
//! there from a co-moment that never left it); one product S·V a round trip where the host
//! checks after every product ([`apply_dense`]), else rounds of products with the block
//! orthonormalised on the device between them and reduced there to the p x p matrices of the
//! host's check ([`DenseRounds`], module docs of `power`).

use super::power::{Projected, ProjectedRounds, MAX_STEPS_PER_CHECK};
use super::workspace::{transpose_f32, transpose_f64};
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::Gpu;
use crate::kernels::fits_loop_budget;
use crate::kernels::linalg::cholesky_qr::{self, CholeskyQrScratch};
use crate::kernels::linalg::rayleigh_ritz::{self, Projection, ProjectionScratch};
use crate::kernels::products::projection::{self, AffineMap};

/// W = S·V on the device for S (d x d, f32) already there; V rows p x d.
pub(super) fn apply_dense(
    gpu: &Gpu,
    s: &DeviceBuffer<f32>,
    d: usize,
    v: &[f64],
    p: usize,
) -> Result<Vec<f64>> {
    let w = gpu.scoped("PCA power iteration", || {
        let weights = DeviceBuffer::from_slice(gpu, "V transposed", &transpose_f32(v, p, d));
        let map = AffineMap {
            in_cols: d,
            out_cols: p,
            in_shift: &DeviceBuffer::zeroed(gpu, "no shift", d),
            weights: &weights,
            out_shift: &DeviceBuffer::zeroed(gpu, "no shift", p),
        };
        let out = DeviceBuffer::zeroed(gpu, "S·V", d * p);
        let mut batch = Batch::new(gpu, "S·V");
        projection::affine_matmul(gpu, &mut batch, s.bind(), 0, d, &map, &out)?;
        let h = batch.read_all(&out);
        Ok(batch.finish()?.f32s(h))
    })?;
    Ok(transpose_f64(&w, d, p))
}

/// The products the dense solver may take on the device between two checks for a block of
/// `p` of `d`-vectors: [`MAX_STEPS_PER_CHECK`] where the adapter runs the factorisation's
/// loops (`kernels::linalg::cholesky_qr`) and the projection's d-row sums
/// (`kernels::linalg::rayleigh_ritz`) within its loop budget, else 1 (the host's check after
/// every product, as the matrix-free solver).
pub(super) fn dense_steps_per_check(gpu: &Gpu, d: usize, p: usize) -> usize {
    let fits = fits_loop_budget(gpu, cholesky_qr::factor_back_edges(p))
        && fits_loop_budget(gpu, rayleigh_ritz::projection_back_edges(d));
    if fits {
        MAX_STEPS_PER_CHECK
    } else {
        1
    }
}

/// The dense solver's rounds on the device (module docs of `power`): S (d x d, f32) there,
/// and the block Q, its image W = S·Q and the Ritz images kept there between checks, d x p
/// each (column r the r-th vector). A round is one submission and one round trip, whatever
/// its products; it reads back 3p² values.
pub(super) struct DenseRounds<'g> {
    gpu: &'g Gpu,
    s: &'g DeviceBuffer<f32>,
    d: usize,
    p: usize,
    block: DeviceBuffer<f32>,
    image: DeviceBuffer<f32>,
    ritz_images: DeviceBuffer<f32>,
    coordinates: DeviceBuffer<f32>,
    orthonormalize: CholeskyQrScratch,
    projection: ProjectionScratch,
    zeros_d: DeviceBuffer<f32>,
    zeros_p: DeviceBuffer<f32>,
}

impl<'g> DenseRounds<'g> {
    /// The buffers of blocks of `p` vectors for S (`s`, d x d) on the device.
    pub(super) fn new(gpu: &'g Gpu, s: &'g DeviceBuffer<f32>, d: usize, p: usize) -> Self {
        Self {
            gpu,
            s,
            d,
            p,
            block: DeviceBuffer::zeroed(gpu, "power iteration block", d * p),
            image: DeviceBuffer::zeroed(gpu, "S·V", d * p),
            ritz_images: DeviceBuffer::zeroed(gpu, "Ritz images", d * p),
            coordinates: DeviceBuffer::zeroed(gpu, "Ritz coordinates", p * p),
            orthonormalize: CholeskyQrScratch::new(gpu, p),
            projection: ProjectionScratch::new(gpu, d, p),
            zeros_d: DeviceBuffer::zeroed(gpu, "no shift", d),
            zeros_p: DeviceBuffer::zeroed(gpu, "no shift", p),
        }
    }

    /// Records a round: with `resume`, the Ritz images W·Y of the last round; `steps`
    /// products, each of a block orthonormalised from the Ritz images or the last image (the
    /// first of a round that does not resume multiplies the host's start); the projection.
    /// Submits it and reads the projection back.
    fn round(&mut self, resume: bool, steps: usize) -> Result<Projected> {
        let gpu = self.gpu;
        let (d, p) = (self.d, self.p);
        self.orthonormalize.breakdown.write(gpu, &[0]);
        gpu.scoped("PCA power iteration", || {
            let product = AffineMap {
                in_cols: d,
                out_cols: p,
                in_shift: &self.zeros_d,
                weights: &self.block,
                out_shift: &self.zeros_p,
            };
            let mut batch = Batch::new(gpu, "S·V round");
            if resume {
                let rotate = AffineMap {
                    in_cols: p,
                    out_cols: p,
                    in_shift: &self.zeros_p,
                    weights: &self.coordinates,
                    out_shift: &self.zeros_p,
                };
                let (images, image) = (&self.ritz_images, self.image.bind());
                projection::affine_matmul(gpu, &mut batch, image, 0, d, &rotate, images)?;
            }
            for step in 0..steps {
                let from = if step == 0 {
                    resume.then_some(&self.ritz_images)
                } else {
                    Some(&self.image)
                };
                if let Some(from) = from {
                    let (qr, block) = (&self.orthonormalize, &self.block);
                    cholesky_qr::orthonormalize_columns(gpu, &mut batch, from, d, qr, block)?;
                }
                projection::affine_matmul(
                    gpu,
                    &mut batch,
                    self.s.bind(),
                    0,
                    d,
                    &product,
                    &self.image,
                )?;
            }
            let handles = rayleigh_ritz::project_block(
                gpu,
                &mut batch,
                &self.block,
                &self.image,
                &self.projection,
            )?;
            let breakdown = batch.read_all(&self.orthonormalize.breakdown);
            let back = batch.finish()?;
            let Projection { h, g, e } = handles.take(&back);
            Ok(Projected {
                h,
                g,
                e,
                breakdown: back.u32s(breakdown)[0] != 0,
            })
        })
    }
}

impl ProjectedRounds for DenseRounds<'_> {
    fn start(&mut self, v: &[f64], p: usize, steps: usize) -> Result<Projected> {
        debug_assert_eq!(p, self.p);
        self.block.write(self.gpu, &transpose_f32(v, p, self.d));
        self.round(false, steps)
    }

    fn resume(&mut self, coordinates: &[f64], steps: usize) -> Result<Projected> {
        let y: Vec<f32> = coordinates.iter().map(|&v| v as f32).collect();
        self.coordinates.write(self.gpu, &y);
        self.round(true, steps)
    }

    fn vectors(&mut self, coordinates: &[f64], count: usize) -> Result<Vec<f64>> {
        let (gpu, d, p) = (self.gpu, self.d, self.p);
        let u = gpu.scoped("PCA Ritz vectors", || {
            let y: Vec<f32> = coordinates.iter().map(|&v| v as f32).collect();
            let weights = DeviceBuffer::from_slice(gpu, "Ritz coordinates", &y);
            let zeros = DeviceBuffer::zeroed(gpu, "no shift", count);
            let map = AffineMap {
                in_cols: p,
                out_cols: count,
                in_shift: &self.zeros_p,
                weights: &weights,
                out_shift: &zeros,
            };
            let out = DeviceBuffer::zeroed(gpu, "Ritz vectors", d * count);
            let mut batch = Batch::new(gpu, "Ritz vectors");
            projection::affine_matmul(gpu, &mut batch, self.block.bind(), 0, d, &map, &out)?;
            let h = batch.read_all(&out);
            Ok(batch.finish()?.f32s(h))
        })?;
        Ok(transpose_f64(&u, d, count))
    }
}
