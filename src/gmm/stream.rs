//! EM over a [`RowSource`]: data that need not fit on the device.
//!
//! The resident fit keeps the N x K responsibilities on the device between the E-step and
//! the M-step; a streamed fit cannot, so it needs statistics that merge. Every EM iteration
//! is **one pass** over the source; for each piece of rows on the device, the same kernels
//! as the resident fit run:
//!
//! 1. the E-step for the current parameters θ, fused with Σ r, Σ r (x − sₖ) and
//!    Σ r (x − sₖ)(x − sₖ)ᵀ (its diagonal for Diag and Spherical) about the E-step means sₖ,
//!    and the per-block sums of log p, in one submission (as the resident fit, `moments`);
//! 2. on the host, the piece's component means mₖ = sₖ + Σ r (x − sₖ) / Σ r (sₖ where the
//!    piece gives a component no weight), and the scatter Σ r (x − mₖ)(x − mₖ)ᵀ about them
//!    by moving the centre in f64 (`moments` module docs); where that would cancel too
//!    much, a second pass takes it on the device, making the piece's responsibilities again
//!    where its window did not hold them all (`passes`).
//!
//! The piece's [`GmmStats`] merge into the pass's by Chan's pairwise formulas (module docs of
//! `stats`), and the M-step takes the merged statistics. The model is the resident one
//! within f32 rounding: the sums run in the same kernels, only cut at other row boundaries,
//! and the merge is exact in f64. Each piece runs one device submission and one readback
//! (two where the centring falls back), as the resident fit does for the whole data.
//!
//! An EM pass runs a piece ahead (`DeviceRows::pass_ahead`): piece i + 1 is copied to the
//! device and its E-step submitted before piece i's moments are collected, so the GPU has
//! the next piece queued while the host merges the last. Piece i's second pass, where its
//! centring falls back, then makes its responsibilities again: the window holds piece
//! i + 1's by then.
//!
//! Training labels come from a last pass with the returned parameters, kept on the host
//! (4 bytes a row).

use std::borrow::Cow;

use rand_chacha::ChaCha8Rng;

use super::em::{check_lower_bound, EmData, Parameters};
use super::math::covariance_len;
use super::moments::{EStepInFlight, Moments};
use super::passes::Fill;
use super::stats::{full, GmmStats};
use super::window::window_bytes;
use super::workspace::{sum_log_density, Purpose, Workspace};
use super::CovarianceType;
use crate::error::Result;
use crate::gpu::stream::{DeviceRows, PieceWork};
use crate::gpu::{Gpu, GpuMatrix};
use crate::kmeans::KMeansModel;
use crate::source::{check_shape, RowSource};

/// Device bytes per row besides the row: log p and the label, and (rounded up) its share
/// of the per-block log p sums. The responsibilities live in a window (`workspace`), counted
/// in [`fixed_bytes`].
const ROW_EXTRA_BYTES: u64 = 9;

/// The initial responsibilities of a streamed fit, piece by piece.
pub(super) enum StreamFill<'l> {
    /// One label per row of the source (one-hot).
    Labels(&'l [u32]),
    /// The nearest of these seeds, found for each piece (one-hot).
    Nearest(&'l KMeansModel),
    /// The oracle's random draws, in row order over the pieces (the generator advances).
    Random(&'l mut ChaCha8Rng),
}

/// Device bytes a fit needs besides the rows: the window of responsibilities, per-block
/// M-step sums (at most 64 MiB, see the workspace), their totals and the parameters.
fn fixed_bytes(gpu: &Gpu, n: usize, d: usize, k: usize, covariance_type: CovarianceType) -> u64 {
    let (k64, d64) = (k as u64, d as u64);
    // The one-pass moments (`moments`): the augmented (D + 1)² scatter, or 2D + 1 sums.
    let outputs = if full(covariance_type) {
        k64.saturating_mul((d64 + 1).saturating_mul(d64 + 1))
    } else {
        k64.saturating_mul(2 * d64 + 1)
    };
    let partials = (n.div_ceil(256) as u64)
        .saturating_mul(outputs.saturating_mul(4))
        .min(64 << 20);
    let covariances = covariance_len(covariance_type, k, d).unwrap_or(usize::MAX) as u64;
    let parameters = (3 * k64)
        .saturating_mul(d64)
        .saturating_add(covariances)
        .saturating_add(k64);
    let window = window_bytes(gpu, n, k, d, covariance_type);
    partials
        .saturating_add(window)
        .saturating_add(outputs.saturating_mul(4))
        .saturating_add(parameters.saturating_mul(4))
        .saturating_add(1024)
}

/// How the rows of `source` live on the device for a mixture of K components (resident when
/// they fit the budget next to a window of responsibilities, streamed otherwise): the one
/// place a mixture fit decides it.
pub(super) fn device_rows<'s, S: RowSource + ?Sized>(
    gpu: &Gpu,
    source: &'s S,
    k: usize,
    covariance_type: CovarianceType,
) -> Result<DeviceRows<'s, S>> {
    let (n, d) = check_shape(source)?;
    let fixed = fixed_bytes(gpu, n, d, k, covariance_type);
    DeviceRows::new(gpu, source, ROW_EXTRA_BYTES, fixed)
}

/// The rows on the device (streamed, or resident for
/// [`GaussianMixture::pass_stats`](crate::GaussianMixture::pass_stats)) and one workspace
/// sized for a piece.
pub(super) struct Streamed<'a, S: RowSource + ?Sized> {
    gpu: &'a Gpu,
    source: &'a S,
    rows: DeviceRows<'a, S>,
    ws: Workspace<'a>,
}

impl<'a, S: RowSource + ?Sized> Streamed<'a, S> {
    pub(super) fn new(
        gpu: &'a Gpu,
        source: &'a S,
        rows: DeviceRows<'a, S>,
        k: usize,
        t: CovarianceType,
        weights: Option<&'a [f32]>,
    ) -> Result<Self> {
        let mut ws = Workspace::new(gpu, &rows.capacity_view(), k, t, Purpose::Fit)?;
        if let Some(w) = weights {
            ws.weigh(w);
        }
        Ok(Self {
            gpu,
            source,
            rows,
            ws,
        })
    }

    /// One pass: each piece's statistics from its first moments about `total.means` (of
    /// `p`'s E-step, or of the initial responsibilities `start` gives), merged into `total`.
    fn pass(
        &mut self,
        mut total: GmmStats,
        p: Option<&Parameters>,
        mut start: Option<&mut StreamFill<'_>>,
    ) -> Result<GmmStats> {
        let Self { gpu, rows, ws, .. } = self;
        if let Some(p) = p {
            let mut pass = EStepPass { ws, p, total };
            rows.pass_ahead(gpu, &mut pass)?;
            return Ok(pass.total);
        }
        rows.pass(gpu, |piece, first_row| {
            ws.use_piece(piece);
            ws.weigh_piece(first_row);
            let piece_stats = match start.as_deref_mut() {
                Some(start) => {
                    let n = ws.x.n_rows();
                    let fill = match start {
                        StreamFill::Labels(l) => {
                            Fill::Labels(Cow::Borrowed(&l[first_row..first_row + n]))
                        }
                        StreamFill::Nearest(seeds) => {
                            Fill::Labels(Cow::Owned(seeds.predict(gpu, &ws.x)?))
                        }
                        StreamFill::Random(rng) => Fill::Random(Box::new((**rng).clone())),
                    };
                    let (moments, drawn) = ws.first_moments(&total.means, &fill)?;
                    if let (Some(after), StreamFill::Random(rng)) = (drawn, start) {
                        **rng = after;
                    }
                    piece_stats(ws, &total, &moments, 0.0, (&fill, true))?
                }
                None => unreachable!("a pass makes its responsibilities somehow"),
            };
            total.merge(&piece_stats)
        })?;
        Ok(total)
    }

    /// The statistics of the E-step for `p` over all rows.
    pub(super) fn estep_stats(&mut self, p: &Parameters) -> Result<GmmStats> {
        let empty = GmmStats::empty(self.ws.covariance_type, self.ws.d, p);
        self.pass(empty, Some(p), None)
    }

    /// The initial M-step: the parameters of the responsibilities `start` gives each piece,
    /// about the first row (as the resident fit).
    pub(super) fn responsibility_parameters(
        &mut self,
        reg_covar: f64,
        start: &mut StreamFill<'_>,
    ) -> Result<Parameters> {
        let (k, d) = (self.ws.k, self.ws.d);
        let row = self.source.gather(&[0])?;
        let shift = (0..k).flat_map(|_| row.iter().map(|&v| v as f64)).collect();
        let empty = GmmStats::about(self.ws.covariance_type, d, shift, Vec::new(), Vec::new());
        self.pass(empty, None, Some(start))?.next(reg_covar)
    }

    /// Rows and features.
    pub(super) fn shape(&self) -> (usize, usize) {
        self.source.shape()
    }

    /// The device.
    pub(super) fn gpu(&self) -> &'a Gpu {
        self.gpu
    }

    /// The rows' source.
    pub(super) fn source(&self) -> &'a S {
        self.source
    }

    /// The rows' host sample weights, when weighted.
    pub(super) fn host_weights(&self) -> Option<&'a [f32]> {
        self.ws.host_weights()
    }

    /// Rows one piece holds.
    pub(super) fn capacity(&self) -> usize {
        self.rows.capacity()
    }
}

/// The statistics of the piece in `ws` from its `moments` about `total.means` (of the
/// responsibilities of `fill`): its component means on the host, and the scatter about them
/// from the moments or, where those would cancel, from a second pass on the device (module
/// docs). The flag beside the fill says whether the window still holds the piece's
/// responsibilities ([`Workspace::scatter_about`]).
pub(super) fn piece_stats(
    ws: &Workspace<'_>,
    total: &GmmStats,
    moments: &Moments,
    log_likelihood: f64,
    fill: (&Fill<'_>, bool),
) -> Result<GmmStats> {
    let (k, d, t) = (ws.k, ws.d, ws.covariance_type);
    let (weights, factors) = (total.weights.clone(), total.precisions_cholesky.clone());
    let mut piece = GmmStats::about(t, d, total.means.clone(), weights, factors);
    piece.n_rows = ws.x.n_rows() as u64;
    piece.weight_total = ws.weight_total();
    piece.log_likelihood = log_likelihood;
    let mut delta = vec![0.0; k * d];
    for c in 0..k {
        let n = moments.resp_sums[c].max(0.0);
        piece.resp_sums[c] = n;
        if n > 0.0 {
            for j in 0..d {
                delta[c * d + j] = moments.first[c * d + j] / n;
                piece.component_means[c * d + j] += delta[c * d + j];
            }
        }
    }
    piece.scatter = ws.scatter_about(moments, &delta, &piece.component_means, fill)?;
    Ok(piece)
}

/// An EM pass's work on each piece: its E-step and moments submitted; collected once the
/// next piece is submitted, into the piece's statistics merged into `total`.
struct EStepPass<'p, 'a> {
    ws: &'p mut Workspace<'a>,
    p: &'p Parameters,
    total: GmmStats,
}

impl<'a> PieceWork for EStepPass<'_, 'a> {
    /// The pass in flight, its piece and the piece's first row.
    type Submitted = (EStepInFlight<'a>, GpuMatrix, usize);

    fn submit(&mut self, piece: &GpuMatrix, first_row: usize) -> Result<Self::Submitted> {
        // Queue writes (weights, parameters, shift): they follow the piece in flight.
        self.ws.use_piece(piece);
        self.ws.weigh_piece(first_row);
        let pass = self.ws.submit_estep_and_moments(self.p)?;
        Ok((pass, piece.clone(), first_row))
    }

    fn collect(&mut self, (pass, piece, first_row): Self::Submitted) -> Result<()> {
        let (blocks, moments) = pass.collect()?;
        // The statistics are the piece's (its rows and weight); a second pass, where the
        // moments would cancel, makes its responsibilities again, as the window now holds
        // the next piece's.
        let ws = &mut *self.ws;
        ws.use_piece(&piece);
        ws.weigh_piece(first_row);
        let fill = (&Fill::EStep, false);
        let stats = piece_stats(ws, &self.total, &moments, sum_log_density(&blocks), fill)?;
        self.total.merge(&stats)
    }
}

impl<S: RowSource + ?Sized> EmData for Streamed<'_, S> {
    fn step(&mut self, p: &Parameters, reg_covar: f64) -> Result<(f64, Parameters)> {
        let stats = self.estep_stats(p)?;
        let lower_bound = stats.mean_log_likelihood();
        check_lower_bound(lower_bound)?;
        Ok((lower_bound, stats.next(reg_covar)?))
    }

    fn labels(&mut self, p: &Parameters) -> Result<Vec<u32>> {
        let mut labels = Vec::with_capacity(self.source.shape().0);
        let Self { gpu, rows, ws, .. } = self;
        rows.pass(gpu, |piece, first_row| {
            ws.use_piece(piece);
            ws.weigh_piece(first_row);
            labels.extend(ws.labels(p)?);
            Ok(())
        })?;
        Ok(labels)
    }
}
