//! PCA's pass over rows streamed from a source ([`DeviceRows`]): each piece's moments in one
//! submission (the column moments about its first row, its f32 mean c folded on the device,
//! the cross products about c; without the cross products, the column moments again about
//! c, where they do not cancel), the next piece uploaded and submitted before this one's are
//! collected ([`DeviceRows::pass_ahead`]), so the GPU has it queued when it finishes. On the
//! host, M_μ = M_c − n(μ − c)(μ − c)ᵀ moves a piece's cross products from c to its f64 mean
//! μ, and the pieces merge exactly (module docs of `stats`). Rows all on the device are one
//! piece ([`moments_of`]): a resident fit's moments and covariance are one round trip. A
//! resident power-iteration fit leaves the co-moment on the device and forms S there
//! ([`moments_on_device`]); only the column moments, the centre and the co-moment's diagonal
//! come back.

use super::stats::PcaMoments;
use super::workspace::GramOperands;
use super::workspace::{
    record_centre, record_column_moments, record_column_moments_about, record_comoment,
    submit_gram_rounds, ColumnMoments, GramInFlight,
};
use crate::error::Result;
use crate::gpu::batch::{Batch, ReadHandle};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::readback::PendingReadback;
use crate::gpu::stream::{DeviceRows, PieceWork};
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::products::covariance::{comoment_diagonal, covariance_from_comoment};
use crate::source::RowSource;

/// The merged moments of every piece of `rows` (one pass; D x D co-moment when `full`, else
/// only its diagonal).
pub(super) fn pass_moments<S: RowSource + ?Sized>(
    gpu: &Gpu,
    rows: &DeviceRows<'_, S>,
    full: bool,
) -> Result<PcaMoments> {
    let mut work = PieceMoments {
        gpu,
        full,
        total: None,
    };
    rows.pass_ahead(gpu, &mut work)?;
    Ok(work.total.expect("a source has rows"))
}

/// The moments of rows all on the device, as one piece: one submission (D x D co-moment when
/// `full`, else only its diagonal).
pub(super) fn moments_of(gpu: &Gpu, x: &GpuMatrix, full: bool) -> Result<PcaMoments> {
    let mut work = PieceMoments {
        gpu,
        full,
        total: None,
    };
    let submitted = work.submit(x, 0)?;
    work.collect(submitted)?;
    Ok(work.total.expect("a piece's moments"))
}

/// The co-moment of resident rows, left on the device: Σ (x − c)(x − c)ᵀ about the device's
/// f32 centre c, upper triangle.
pub(super) struct DeviceComoment {
    comoment: DeviceBuffer<f32>,
    centre: Vec<f32>,
}

/// The moments of rows all on the device with the co-moment left there, in one submission:
/// the moments' co-moment holds only its diagonal (read back alone and moved to the f64
/// mean as [`moments_of`] moves the whole), the D x D co-moment stays on the device. `None` when the co-moment's blocks need several
/// rounds (their totals are added on the host: [`moments_of`]).
pub(super) fn moments_on_device(
    gpu: &Gpu,
    x: &GpuMatrix,
) -> Result<Option<(PcaMoments, DeviceComoment)>> {
    let (n, d) = (x.n_rows(), x.n_features());
    let mut batch = Batch::new(gpu, "PCA moments");
    let columns = gpu.scoped("PCA moments", || record_column_moments(gpu, &mut batch, x))?;
    let centre = DeviceBuffer::zeroed(gpu, "moment centre", d);
    gpu.scoped("PCA centre", || {
        columns.record_means(gpu, &mut batch, &centre)
    })?;
    let Some(comoment) = record_comoment(gpu, &mut batch, x, &centre)? else {
        return Ok(None);
    };
    let diagonal = DeviceBuffer::zeroed(gpu, "co-moment diagonal", d);
    comoment_diagonal(gpu, &mut batch, &comoment, &diagonal)?;
    let centre_read = batch.read_all(&centre);
    let diagonal_read = batch.read_all(&diagonal);
    let back = gpu.scoped("PCA moments", || batch.finish())?;
    let m = columns.moments(&back);
    let centre = back.f32s(centre_read);
    let nf = n as f64;
    let diagonal = back.f32s(diagonal_read);
    let about_mean = (0..d).map(|j| {
        let off = m.mean[j] - centre[j] as f64;
        diagonal[j] as f64 - nf * off * off
    });
    let moments = PcaMoments {
        n: n as u64,
        n_features: d,
        comoment: about_mean.collect(),
        mean: m.mean,
    };
    Ok(Some((moments, DeviceComoment { comoment, centre })))
}

impl DeviceComoment {
    /// S = (M + n(μ − a)(μ − a)ᵀ)/((n − ddof)·σᵢσⱼ) about `center` a with `scale` σ (as
    /// `PcaMoments::covariance`), formed on the device in f32 for the `moments` this came
    /// with: one submission, returned with what its wait gives (nothing to read: the work
    /// after it queues behind it; the wait only collects a profile's timestamps).
    pub(super) fn covariance<'g>(
        &self,
        gpu: &'g Gpu,
        moments: &PcaMoments,
        (center, scale): (&[f64], &[f64]),
        ddof: usize,
    ) -> Result<(DeviceBuffer<f32>, PendingReadback<'g>)> {
        let d = moments.n_features;
        let n = moments.n as f64;
        let denom = (n - ddof as f64).sqrt();
        let mean = &moments.mean;
        let corrections: Vec<f32> = (0..d)
            .map(|j| (mean[j] - self.centre[j] as f64) as f32)
            .chain((0..d).map(|j| (mean[j] - center[j]) as f32))
            .chain((0..d).map(|j| (1.0 / (scale[j] * denom)) as f32))
            .collect();
        gpu.scoped("PCA covariance", || {
            let corrections = DeviceBuffer::from_slice(gpu, "covariance corrections", &corrections);
            let s = DeviceBuffer::zeroed(gpu, "covariance", d * d);
            let mut batch = Batch::new(gpu, "covariance from the co-moment");
            let n = moments.n as usize;
            covariance_from_comoment(gpu, &mut batch, &self.comoment, &corrections, n, &s)?;
            Ok((s, batch.submit()?))
        })
    }
}

/// The pass's work on a piece, and the moments merged so far.
struct PieceMoments<'g> {
    gpu: &'g Gpu,
    full: bool,
    total: Option<PcaMoments>,
}

/// A piece's moments, submitted.
enum PieceInFlight<'g> {
    /// The column moments only (the co-moment's diagonal).
    Columns {
        n: usize,
        columns: ColumnMoments,
        pending: PendingReadback<'g>,
    },
    /// The column moments, the device's centre c and the cross products about it.
    Full {
        n: usize,
        columns: ColumnMoments,
        centre: ReadHandle,
        gram: GramInFlight<'g>,
    },
}

impl<'g> PieceWork for PieceMoments<'g> {
    type Submitted = PieceInFlight<'g>;

    fn submit(&mut self, piece: &GpuMatrix, _first_row: usize) -> Result<PieceInFlight<'g>> {
        let gpu = self.gpu;
        let (n, d) = (piece.n_rows(), piece.n_features());
        let mut batch = Batch::new(gpu, "PCA piece moments");
        let centre = DeviceBuffer::zeroed(gpu, "moment centre", d);
        if !self.full {
            // Without the co-moment, whose diagonal gives the variances, the moments are
            // taken a second time, about the centre the first pass gives: no cancellation.
            let columns = gpu.scoped("PCA piece moments", || {
                record_centre(gpu, &mut batch, piece, &centre)?;
                record_column_moments_about(gpu, &mut batch, piece, centre)
            })?;
            let pending = gpu.scoped("PCA piece moments", || batch.submit())?;
            return Ok(PieceInFlight::Columns {
                n,
                columns,
                pending,
            });
        }
        let columns = gpu.scoped("PCA piece moments", || {
            record_column_moments(gpu, &mut batch, piece)
        })?;
        gpu.scoped("PCA piece centre", || {
            columns.record_means(gpu, &mut batch, &centre)
        })?;
        let centre_read = batch.read_all(&centre);
        let operands = GramOperands {
            a_shift: &centre,
            b_cols: d,
            b_rows: None,
            b_shift: &centre,
        };
        let gram = submit_gram_rounds(gpu, piece, &operands, batch)?;
        Ok(PieceInFlight::Full {
            n,
            columns,
            centre: centre_read,
            gram,
        })
    }

    fn collect(&mut self, submitted: PieceInFlight<'g>) -> Result<()> {
        let moments = match submitted {
            PieceInFlight::Columns {
                n,
                columns,
                pending,
            } => {
                let m = columns.moments(&pending.wait()?);
                let comoment = m.var.iter().map(|&v| v * n as f64).collect();
                PcaMoments {
                    n: n as u64,
                    n_features: m.mean.len(),
                    mean: m.mean,
                    comoment,
                }
            }
            PieceInFlight::Full {
                n,
                columns,
                centre,
                gram,
            } => {
                let (mut g, back) = gram.collect()?;
                let m = columns.moments(&back);
                let c = back.f32s(centre);
                let d = m.mean.len();
                let nf = n as f64;
                let off: Vec<f64> = (0..d).map(|j| m.mean[j] - c[j] as f64).collect();
                for i in 0..d {
                    for j in 0..d {
                        g[i * d + j] -= nf * off[i] * off[j];
                    }
                }
                PcaMoments {
                    n: n as u64,
                    n_features: d,
                    mean: m.mean,
                    comoment: g,
                }
            }
        };
        match self.total.as_mut() {
            None => self.total = Some(moments),
            Some(t) => t.merge(&moments)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Matrix;
    use crate::gpu::tests::{gpu, random};

    /// The moments without the co-moment (the matrix-free solver's) keep the variances of
    /// features whose first value lies far out (a pixel at 255 where the mean is 5): n·σ²
    /// within 1e-5 of the f64 sums (f32 sums of 1024 rows), where moments about the first
    /// row alone are 2.4e-3 off here.
    #[test]
    fn diagonal_moments_keep_the_variances_of_an_outlying_first_row() {
        let gpu = gpu();
        let (n, d) = (5000, 6);
        let mut values: Vec<f32> = random(n * d, 7).iter().map(|v| 5.0 + 4.0 * v).collect();
        for (j, v) in values.iter_mut().take(d).enumerate() {
            *v = 255.0 - j as f32;
        }
        let x = GpuMatrix::upload(&gpu, &Matrix::new(&values, d).unwrap()).unwrap();
        let got = moments_of(&gpu, &x, false).unwrap();
        for j in 0..d {
            let column: Vec<f64> = (0..n).map(|i| values[i * d + j] as f64).collect();
            let mean = column.iter().sum::<f64>() / n as f64;
            let m2: f64 = column.iter().map(|v| (v - mean) * (v - mean)).sum();
            let err = (got.diagonal()[j] - m2).abs() / m2;
            assert!(
                err < 1e-5,
                "feature {j}: n·σ² {} vs {m2}: {err:e}",
                got.diagonal()[j]
            );
            assert!((got.mean[j] - mean).abs() < 1e-6 * mean.abs().max(1.0));
        }
    }

    /// S formed on the device from the co-moment that stayed there equals the host's f64 S
    /// from the read-back co-moment, to f32 rounding, about the mean or the origin, scaled or
    /// not, for data far from the origin (where the centre's correction matters), and for
    /// data whose co-moment needs several rounds there is no device S (the host adds them).
    #[test]
    fn the_covariance_formed_on_the_device_equals_the_hosts() {
        let gpu = gpu();
        for (n, d, offset, seed) in [
            (500, 7, 0.0f32, 1u64),
            (3000, 40, 300.0, 2),
            (9000, 33, -50.0, 3),
        ] {
            let values: Vec<f32> = random(n * d, seed)
                .iter()
                .enumerate()
                .map(|(e, v)| offset + (1.0 + (e % d) as f32) * (v - 0.5))
                .collect();
            let x = GpuMatrix::upload(&gpu, &Matrix::new(&values, d).unwrap()).unwrap();
            let host = moments_of(&gpu, &x, true).unwrap();
            let (moments, comoment) = moments_on_device(&gpu, &x).unwrap().unwrap();
            assert_eq!(moments.mean, host.mean);
            // The diagonal is the host's, bit for bit (the same f32 sums, the same f64 move).
            assert_eq!(moments.diagonal(), host.diagonal());
            let sigma: Vec<f64> = (0..d).map(|j| 0.5 + j as f64).collect();
            for (center, scale, ddof) in [
                (moments.mean.clone(), vec![1.0; d], 1),
                (vec![0.0; d], vec![1.0; d], 0),
                (moments.mean.clone(), sigma, 1),
            ] {
                let want = host.covariance(&center, &scale, ddof);
                let (s, formed) = comoment
                    .covariance(&gpu, &moments, (&center, &scale), ddof)
                    .unwrap();
                formed.wait().unwrap();
                let mut batch = Batch::new(&gpu, "read S");
                let h = batch.read_all(&s);
                let got = batch.finish().unwrap().f32s(h);
                let largest = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                for i in 0..d {
                    for j in 0..d {
                        assert_eq!(got[i * d + j], got[j * d + i], "symmetric bit for bit");
                        let err = (got[i * d + j] as f64 - want[i * d + j]).abs() / largest;
                        assert!(err < 1e-5, "n {n} d {d} ({i}, {j}) ddof {ddof}: {err:e}");
                    }
                }
            }
        }
        // Rounds small enough that the co-moment needs several: the host's path.
        gpu.set_max_chunk_bytes(4 * 33 * 33 * 2);
        let values = random(9000 * 33, 4);
        let x = GpuMatrix::upload(&gpu, &Matrix::new(&values, 33).unwrap()).unwrap();
        assert!(moments_on_device(&gpu, &x).unwrap().is_none());
    }
}
