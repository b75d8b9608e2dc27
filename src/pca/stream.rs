//! PCA's pass over rows streamed from a source ([`DeviceRows`]): each piece's moments in one
//! submission (the column moments about its first row, its f32 mean c folded on the device,
//! the cross products about c), the next piece uploaded and submitted before this one's are
//! collected ([`DeviceRows::pass_ahead`]), so the GPU has it queued when it finishes. On the
//! host, M_μ = M_c − n(μ − c)(μ − c)ᵀ moves a piece's cross products from c to its f64 mean
//! μ, and the pieces merge exactly (module docs of `stats`). Rows all on the device are one
//! piece ([`moments_of`]): a resident fit's moments and covariance are one round trip.

use super::stats::PcaMoments;
use super::workspace::GramOperands;
use super::workspace::{record_column_moments, submit_gram_rounds, ColumnMoments, GramInFlight};
use crate::error::Result;
use crate::gpu::batch::{Batch, ReadHandle};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::readback::PendingReadback;
use crate::gpu::stream::{DeviceRows, PieceWork};
use crate::gpu::{Gpu, GpuMatrix};
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
        let columns = gpu.scoped("PCA piece moments", || {
            record_column_moments(gpu, &mut batch, piece)
        })?;
        if !self.full {
            let pending = gpu.scoped("PCA piece moments", || batch.submit())?;
            return Ok(PieceInFlight::Columns {
                n,
                columns,
                pending,
            });
        }
        let centre = DeviceBuffer::zeroed(gpu, "moment centre", d);
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
