//! The centroid side of the GEMM form, once per pass (`shaders/assign/prepare.wgsl`): the
//! shift s (the mean of the centroids: 32 features a workgroup, each feature's sum split 8
//! ways over the centroids), then c′ = c − s with ‖c′‖² and its slack β‖c′‖².

use super::args::{params, Assignment};
use super::scratch::AssignScratch;
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::profile::Work;
use crate::gpu::shaders::assign::prepare as wgsl;
use crate::gpu::Gpu;
use crate::kernels::ROW_WG_SIZE;

/// Records the centroid side of the GEMM form into the scratch's `prepared`.
pub(crate) fn record_prepare(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    to: &Assignment<'_>,
    scratch: &AssignScratch,
) -> Result<()> {
    let k = to.k;
    let binds = [
        ("centroids", to.centroids.bind()),
        ("prepared", scratch.prepared.bind()),
    ];
    let features = wgsl::SHIFT_FEATURES as usize;
    let grid = gpu.grid((4 * d.div_ceil(4)).div_ceil(features) as u64)?;
    batch.dispatch(
        wgsl::CENTROID_SHIFT,
        &[],
        &params(chunk, 0, d, k, grid.x),
        &binds,
        grid,
        Work::f32s((k * d) as f64, (k * d + d) as f64),
    )?;
    let grid = gpu.grid(k.div_ceil(ROW_WG_SIZE as usize) as u64)?;
    batch.dispatch(
        wgsl::CENTROID_PREP,
        &[],
        &params(chunk, 0, d, k, grid.x),
        &binds,
        grid,
        Work::f32s((3 * k * d) as f64, (2 * k * d + d + 2 * k) as f64),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Matrix;
    use crate::gpu::device_buffer::DeviceBuffer;
    use crate::gpu::tests::{gpu, random};
    use crate::gpu::GpuMatrix;

    #[test]
    fn the_shift_is_the_centroids_mean_and_the_prepared_side_is_about_it() {
        let gpu = gpu();
        // k below, at and far above the 8 splits of a feature's sum; D past one workgroup's 32
        // features and not a multiple of 4 (zeros past it).
        for (k, d, seed) in [(3usize, 13usize, 1u64), (8, 5, 2), (300, 70, 3)] {
            let c: Vec<f32> = random(k * d, seed).iter().map(|v| 40.0 + 5.0 * v).collect();
            let x = GpuMatrix::upload(&gpu, &Matrix::new(&vec![0.0; d], d).unwrap()).unwrap();
            let centroids = DeviceBuffer::from_slice(&gpu, "centroids", &c);
            let (labels, dist) = (
                DeviceBuffer::<u32>::zeroed(&gpu, "labels", 1),
                DeviceBuffer::<f32>::zeroed(&gpu, "dist", 1),
            );
            let changed = DeviceBuffer::<u32>::zeroed(&gpu, "changed", 1);
            let to = Assignment {
                centroids: &centroids,
                k,
                labels: &labels,
                min_sq_dist: &dist,
                changed: &changed,
            };
            let scratch = AssignScratch::new(&gpu, 1, d, k);
            let mut batch = Batch::new(&gpu, "prepare test");
            record_prepare(&gpu, &mut batch, &x.chunks()[0], d, &to, &scratch).unwrap();
            let h = batch.read_all(&scratch.prepared);
            let prepared = batch.finish().unwrap().f32s(h);
            let d4 = d.div_ceil(4);
            let shift = &prepared[4 * (k * d4 + k)..4 * (k * d4 + k + d4)];
            for j in 0..4 * d4 {
                if j >= d {
                    assert_eq!(shift[j], 0.0, "k {k} d {d}: padding {j}");
                    continue;
                }
                let mean = (0..k).map(|i| c[i * d + j] as f64).sum::<f64>() / k as f64;
                assert!(
                    (shift[j] as f64 - mean).abs() <= 1e-6 * mean.abs(),
                    "k {k} d {d}: s_{j} = {} against {mean}",
                    shift[j]
                );
            }
            // c′ = c − s (exactly, in f32) and its squared norm.
            for i in 0..k {
                let mut norm = 0.0f64;
                for j in 0..d {
                    let v = c[i * d + j] - shift[j];
                    assert_eq!(prepared[4 * i * d4 + j], v, "k {k} d {d}: c′[{i}][{j}]");
                    norm += (v as f64) * (v as f64);
                }
                let got = prepared[4 * (k * d4 + i)] as f64;
                assert!(
                    (got - norm).abs() <= 1e-5 * norm.max(1e-30),
                    "k {k}: ‖c′_{i}‖²"
                );
            }
        }
    }
}
