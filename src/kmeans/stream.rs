//! K-Means over rows streamed from a [`RowSource`] that does not fit on the device.
//!
//! Each Lloyd iteration is one pass over the source. Every piece of rows goes through the
//! same kernels as a resident fit (assignment, per-cluster sums in a fixed order), its
//! [`KMeansStats`] come back and merge in f64, and the update uses the merged sums, so the
//! model equals the resident one within f32 rounding (exactly, when one piece holds all
//! rows). Labels and distances of the rows live on the host (8 bytes a row); each piece's
//! previous labels go up with it, so that the kernel counts the changed labels as it does
//! for resident data. Seeding draws from a sample (module `seeding`).

use rand_chacha::ChaCha8Rng;

use super::lloyd::LloydData;
use super::workspace::{ahead_bytes, fixed_bytes, row_extra_bytes, StepInFlight, Workspace};
use super::{KMeans, KMeansStats};
use crate::error::Result;
use crate::gpu::stream::{DeviceRows, PieceWork};
use crate::gpu::{Gpu, GpuMatrix};
use crate::source::{check_shape, RowSource};

/// How the rows of `source` (a shape its caller checked) live on the device for `k` clusters
/// (resident when they fit the budget, streamed otherwise): the one place a K-Means fit
/// decides it.
pub(super) fn device_rows<'s, S: RowSource + ?Sized>(
    gpu: &Gpu,
    source: &'s S,
    k: usize,
    weighted: bool,
) -> Result<DeviceRows<'s, S>> {
    let (n, d) = source.shape();
    let (extra, fixed) = (row_extra_bytes(gpu, weighted), fixed_bytes(gpu, n, d, k));
    DeviceRows::with_resident_extra(gpu, source, extra, fixed, ahead_bytes(n, d, k))
}

/// Rows on the device (streamed, or resident for the one-pass statistics), one workspace
/// sized for a piece, and the rows' labels and distances.
pub(super) struct Streamed<'a, S: RowSource + ?Sized> {
    gpu: &'a Gpu,
    source: &'a S,
    rows: DeviceRows<'a, S>,
    ws: Workspace<'a>,
    labels: Vec<u32>,
    dists: Vec<f32>,
}

impl<'a, S: RowSource + ?Sized> Streamed<'a, S> {
    pub(super) fn new(
        gpu: &'a Gpu,
        source: &'a S,
        rows: DeviceRows<'a, S>,
        k: usize,
        weights: Option<&'a [f32]>,
    ) -> Result<Self> {
        let (n, _) = source.shape();
        let ws = Workspace::weighted(gpu, &rows.capacity_view(), k, weights)?;
        Ok(Self {
            gpu,
            source,
            rows,
            ws,
            labels: vec![0; n],
            dists: vec![0.0; n],
        })
    }

    /// The rows of `source` on `gpu` under its budget, for `k` clusters of `weights`'
    /// rows.
    pub(super) fn open(
        gpu: &'a Gpu,
        source: &'a S,
        k: usize,
        weights: Option<&'a [f32]>,
    ) -> Result<Self> {
        let rows = device_rows(gpu, source, k, weights.is_some())?;
        Self::new(gpu, source, rows, k, weights)
    }

    /// The rows' source.
    pub(super) fn source(&self) -> &'a S {
        self.source
    }

    /// Initial centroids for one restart (module `seeding`).
    pub(super) fn start(&self, params: &KMeans, rng: &mut ChaCha8Rng) -> Result<Vec<f32>> {
        let capacity = self.rows.capacity();
        super::seeding::host_start(
            self.gpu,
            self.source.shape(),
            |idx| self.source.gather(idx),
            self.ws.host_weights(),
            (params, capacity),
            rng,
        )
    }

    /// One pass against `centroids`: the merged statistics of every piece (each piece
    /// submitted before the previous one's results are collected).
    pub(super) fn stats(&mut self, centroids: &[f32]) -> Result<KMeansStats> {
        let (_, d) = self.source.shape();
        let mut pass = PiecePass {
            stats: KMeansStats::empty(centroids, d)?,
            ws: &mut self.ws,
            labels: &mut self.labels,
            dists: &mut self.dists,
        };
        self.rows.pass_ahead(self.gpu, &mut pass)?;
        Ok(pass.stats)
    }

    /// The rows' labels from the last pass.
    pub(super) fn take_labels(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.labels)
    }
}

/// One pass's work on each piece: its step submitted with the piece's previous labels, then
/// its statistics merged and its rows' labels and distances kept.
struct PiecePass<'p, 'a> {
    stats: KMeansStats,
    ws: &'p mut Workspace<'a>,
    labels: &'p mut [u32],
    dists: &'p mut [f32],
}

impl<'a> PieceWork for PiecePass<'_, 'a> {
    /// The step in flight and its rows.
    type Submitted = (StepInFlight<'a>, std::ops::Range<usize>);

    fn submit(&mut self, piece: &GpuMatrix, first_row: usize) -> Result<Self::Submitted> {
        let span = first_row..first_row + piece.n_rows();
        // Queue writes: they follow the piece in flight, whose labels are read back already.
        self.ws.use_piece(piece);
        self.ws.set_previous_labels(&self.labels[span.clone()]);
        self.ws.set_piece_weights(first_row);
        Ok((self.ws.submit_step(&self.stats.centroids, true)?, span))
    }

    fn collect(&mut self, (step, span): Self::Submitted) -> Result<()> {
        let rows = (&mut self.labels[span.clone()], &mut self.dists[span]);
        step.collect(&mut self.stats, Some(rows))
    }
}

impl<S: RowSource + ?Sized> LloydData for Streamed<'_, S> {
    fn shape(&self) -> (usize, usize) {
        self.source.shape()
    }

    fn pass(&mut self, centroids: &[f32]) -> Result<KMeansStats> {
        self.stats(centroids)
    }

    fn labels_and_distances(&mut self) -> Result<(Vec<u32>, Vec<f32>)> {
        Ok((self.labels.clone(), self.dists.clone()))
    }

    fn row_weights(&self) -> Option<&[f32]> {
        self.ws.host_weights()
    }

    fn rows(&mut self, indices: &[usize]) -> Result<Vec<f32>> {
        self.source.gather(indices)
    }
}

/// Labels and inertia of every row of `source` against `centroids` (K x D): one pass.
pub(super) fn labels_and_inertia(
    gpu: &Gpu,
    source: &(impl RowSource + ?Sized),
    centroids: &[f32],
    weights: Option<&[f32]>,
) -> Result<(Vec<u32>, f64)> {
    let (_, d) = check_shape(source)?;
    let mut data = Streamed::open(gpu, source, centroids.len() / d, weights)?;
    let inertia = data.stats(centroids)?.inertia();
    Ok((data.take_labels(), inertia))
}

/// The mean feature variance of `source` (what `tol` is relative to): one pass.
pub(super) fn mean_variance(
    gpu: &Gpu,
    source: &(impl RowSource + ?Sized),
    k: usize,
    weights: Option<&[f32]>,
) -> Result<f64> {
    let mut data = Streamed::open(gpu, source, k, weights)?;
    super::lloyd::mean_variance(&mut data)
}
