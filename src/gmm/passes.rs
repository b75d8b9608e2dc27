//! One pass over a mixture's rows on the device: each segment's responsibilities made in the
//! window (the E-step, one-hot labels, host values or the oracle's random draws), weighed,
//! and its per-block moment sums taken before the next segment overwrites the window
//! (`workspace` module docs); then the blocks folded and read back, once.
//!
//! A fit's iteration is one such pass with the E-step fill (one submission, one readback);
//! the initial M-step and the scatter's fallback (`moments`) make their responsibilities
//! again with the same fill, which gives the same values: the E-step of the same
//! parameters, the same labels or host values, or the same draws (a random fill keeps the
//! generator's state before its draws and hands back the state after them).

use std::borrow::Cow;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::window::join_split;
use super::workspace::Workspace;
use crate::error::Result;
use crate::gpu::batch::{Batch, PendingReadback, ReadHandle};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::kernels::mixture::estep;
use crate::kernels::mixture::mstep::Moment;

/// Where the responsibilities of a pass come from (module docs). Every pass makes the same
/// values from the same fill.
pub(super) enum Fill<'f> {
    /// The E-step of the parameters last written ([`Workspace::write_parameters`]).
    EStep,
    /// One-hot responsibilities of one label per row in use.
    Labels(Cow<'f, [u32]>),
    /// Values given on the host: rows in use x K, row-major.
    Host(&'f [f32]),
    /// Uniform random responsibilities, each row normalised, drawn in row order from a copy
    /// of this generator (the oracle's stream: [`random_rows`]); boxed, as the generator's
    /// state is ten times the other variants.
    Random(Box<ChaCha8Rng>),
}

/// `rows` x K uniform random responsibilities from `rng`, each row normalised in f64: the CPU
/// oracle's draws, row by row, so both start from the same point.
pub(super) fn random_rows(rng: &mut ChaCha8Rng, rows: usize, k: usize) -> Vec<f32> {
    let mut resp = Vec::with_capacity(rows * k);
    for _ in 0..rows {
        let row: Vec<f64> = (0..k).map(|_| rng.random::<f64>()).collect();
        let sum: f64 = row.iter().sum();
        resp.extend(row.iter().map(|v| {
            if sum > 0.0 {
                (v / sum) as f32
            } else {
                1.0 / k as f32
            }
        }));
    }
    resp
}

/// What one pass brings back.
pub(super) struct PassOut {
    /// The per-block sums of log p (E-step fills; else empty).
    pub log_blocks: Vec<f32>,
    /// The folded sums of the pass's moment (empty without one).
    pub sums: Vec<f32>,
    /// A random fill's generator after its draws (the next rows' draws start there).
    pub rng_after: Option<ChaCha8Rng>,
}

impl<'a> Workspace<'a> {
    /// One pass over the rows in use (module docs): each segment's responsibilities from
    /// `fill` (unless `refill` is false, where they are all still on the device,
    /// [`Workspace::responsibilities_kept`]), weighed, then its per-block sums of `moment`
    /// about the shifts last written; the sums folded and read back with the per-block sums
    /// of log p of an E-step. One submission, or one per segment for fills written from the
    /// host (a segment's values may reach the window only once the previous segment's sums
    /// have read it).
    pub(super) fn pass(
        &self,
        fill: &Fill<'_>,
        moment: Option<Moment>,
        refill: bool,
    ) -> Result<PassOut> {
        self.submit_pass(fill, moment, refill)?.collect()
    }

    /// [`Workspace::pass`]'s first half: the pass recorded and submitted, its sums on their
    /// way back ([`PassInFlight::collect`]). Until then, later submissions may reuse the
    /// workspace: the sums are copied out at the end of this pass's own submission.
    pub(super) fn submit_pass(
        &self,
        fill: &Fill<'_>,
        moment: Option<Moment>,
        refill: bool,
    ) -> Result<PassInFlight<'a>> {
        let (gpu, k) = (self.gpu, self.k);
        gpu.scoped("mixture pass", || {
            let mut rng = match fill {
                Fill::Random(r) => Some((**r).clone()),
                _ => None,
            };
            let host = refill && matches!(fill, Fill::Host(_) | Fill::Random(_));
            let mut batch = Batch::new(gpu, "mixture pass");
            if let Some(m) = moment {
                self.record_clear(&mut batch, m);
            }
            let mut at = 0;
            for s in self.active_segments() {
                let rows = s.n_rows;
                if refill {
                    let window = self.segment(s).resp;
                    match fill {
                        Fill::EStep => self.record_estep(&mut batch, s)?,
                        Fill::Labels(labels) => {
                            let mine = &labels[at..at + rows];
                            let part = DeviceBuffer::from_slice(gpu, "initial labels", mine);
                            let seg = self.segment(s);
                            estep::responsibilities_from_labels(gpu, &mut batch, &seg, k, &part)?;
                        }
                        Fill::Host(values) => window.write(gpu, &values[at * k..(at + rows) * k]),
                        Fill::Random(_) => {
                            let r = rng.as_mut().expect("a random fill's generator");
                            window.write(gpu, &random_rows(r, rows, k));
                        }
                    }
                    self.record_weighing(&mut batch, s)?;
                }
                if let Some(m) = moment {
                    self.record_sums(&mut batch, s, m)?;
                }
                if host {
                    std::mem::replace(&mut batch, Batch::new(gpu, "mixture pass")).finish()?;
                }
                at += rows;
            }
            let sums = moment
                .map(|m| self.record_fold(&mut batch, m))
                .transpose()?;
            let log_blocks =
                (refill && matches!(fill, Fill::EStep)).then(|| self.read_log_blocks(&mut batch));
            Ok(PassInFlight {
                pending: batch.submit()?,
                sums,
                log_blocks,
                rng_after: rng,
                k,
                d: self.d,
            })
        })
    }
}

/// A pass submitted ([`Workspace::submit_pass`]), its results in flight.
pub(super) struct PassInFlight<'a> {
    pending: PendingReadback<'a>,
    /// The folded sums (one read, or two halves of a split fold).
    sums: Option<(ReadHandle, Option<ReadHandle>)>,
    log_blocks: Option<ReadHandle>,
    rng_after: Option<ChaCha8Rng>,
    k: usize,
    d: usize,
}

impl PassInFlight<'_> {
    /// Waits for the pass and returns what it brought back.
    pub(super) fn collect(self) -> Result<PassOut> {
        let back = self.pending.wait()?;
        let sums = match self.sums {
            None => Vec::new(),
            Some((h, None)) => back.f32s(h),
            Some((h, Some(h2))) => join_split(self.k, self.d, &back.f32s(h), &back.f32s(h2)),
        };
        Ok(PassOut {
            log_blocks: self.log_blocks.map(|h| back.f32s(h)).unwrap_or_default(),
            sums,
            rng_after: self.rng_after,
        })
    }
}
