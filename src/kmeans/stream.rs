//! K-Means over a [`RowSource`]: data that need not fit on the device.
//!
//! Each Lloyd iteration is one pass over the source. Every piece of rows goes through the
//! same kernels as a resident fit (assignment, per-cluster sums in a fixed order), its
//! [`KMeansStats`] come back and merge in f64, and the update uses the merged sums, so the
//! model equals the resident one within f32 rounding (exactly, when one piece holds all
//! rows). Labels and distances of the rows live on the host (8 bytes a row); each piece's
//! previous labels go up with it, so that the kernel counts the changed labels as it does
//! for resident data.
//!
//! Seeding: random and given centroids are as in a resident fit (the same rows for the same
//! seed). Greedy k-means++ runs on the device over a uniform sample of
//! `max(10 000, 256·K)` rows (all rows when they fit in one piece), drawn in one pass;
//! FAISS trains on at most 256 rows per centroid for the same reason.

use rand_chacha::ChaCha8Rng;

use super::fit::{random_rows, Workspace};
use super::lloyd::{fit_restarts, LloydData};
use super::{KMeans, KMeansInit, KMeansModel, KMeansStats};
use crate::data::Matrix;
use crate::error::Result;
use crate::gpu::stream::DeviceRows;
use crate::gpu::{Gpu, GpuMatrix};
use crate::source::{check_shape, RowSource};

/// Rows per cluster of the k-means++ sample of a streamed fit, and its least size.
const PLUS_PLUS_SAMPLE_PER_CLUSTER: usize = 256;
const PLUS_PLUS_SAMPLE_MIN: usize = 10_000;

/// Rows of the k-means++ sample: `max(10 000, 256·K)`, at most N and what one piece holds,
/// at least K.
pub(crate) fn plus_plus_sample_size(n: usize, capacity: usize, k: usize) -> usize {
    n.min(capacity)
        .min(PLUS_PLUS_SAMPLE_MIN.max(PLUS_PLUS_SAMPLE_PER_CLUSTER * k))
        .max(k)
}

/// Device bytes a fit needs besides the rows: per-block partial sums (at most 64 MiB, see
/// the workspace), centroids and per-cluster sums.
fn fixed_bytes(n: usize, d: usize, k: usize) -> u64 {
    let kd = (k * d) as u64;
    let partials = (n.div_ceil(256) as u64 * (kd + 2 * k as u64) * 4).min(3 * (64 << 20));
    partials + 4 * kd * 4 + 16 * k as u64 + 1024
}

/// Device bytes per row besides the row: its label and its squared distance.
const ROW_EXTRA_BYTES: u64 = 8;

/// True when host data of `n` x `d` must stream to stay within the memory budget.
pub(super) fn must_stream(gpu: &Gpu, n: usize, d: usize, k: usize) -> bool {
    let need = n as u64 * (d as u64 * 4 + ROW_EXTRA_BYTES) + fixed_bytes(n, d, k);
    need > gpu.memory_budget()
}

/// Streamed rows, one workspace sized for a piece, and the rows' labels and distances.
pub(super) struct Streamed<'a, S: RowSource + ?Sized> {
    gpu: &'a Gpu,
    source: &'a S,
    rows: DeviceRows<'a, S>,
    ws: Workspace<'a>,
    labels: Vec<u32>,
    dists: Vec<f32>,
}

impl<'a, S: RowSource + ?Sized> Streamed<'a, S> {
    fn new(
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

    /// The rows of `source` on `gpu` under its budget (uploaded once when they fit), for
    /// `k` clusters.
    pub(super) fn open(gpu: &'a Gpu, source: &'a S, k: usize) -> Result<Self> {
        let (n, d) = check_shape(source)?;
        let rows = DeviceRows::new(gpu, source, ROW_EXTRA_BYTES, fixed_bytes(n, d, k))?;
        Self::new(gpu, source, rows, k, None)
    }

    /// The rows' source.
    pub(super) fn source(&self) -> &'a S {
        self.source
    }

    /// Initial centroids for one restart (see the module docs).
    fn initial_centroids(&mut self, params: &KMeans, rng: &mut ChaCha8Rng) -> Result<Vec<f32>> {
        let (n, d) = self.source.shape();
        match &params.init {
            KMeansInit::Centroids(c) => Ok(c.iter().map(|&v| v as f32).collect()),
            KMeansInit::Random => {
                let idx = random_rows(rng, n, params.k, self.ws.host_weights())?;
                self.source.gather(&idx)
            }
            KMeansInit::KMeansPlusPlus | KMeansInit::KMeansParallel { .. } => {
                // A uniform sample; its rows keep their weights, so D² sampling stays ∝ w·D².
                let m = plus_plus_sample_size(n, self.rows.capacity(), params.k);
                let mut idx = rand::seq::index::sample(rng, n, m).into_vec();
                idx.sort_unstable();
                let rows = self.source.gather(&idx)?;
                let weights: Option<Vec<f32>> = self
                    .ws
                    .host_weights()
                    .map(|w| idx.iter().map(|&i| w[i]).collect());
                let sample = GpuMatrix::upload(self.gpu, &Matrix::new(&rows, d)?)?;
                super::parallel::device_seeds(
                    self.gpu,
                    &sample,
                    params.k,
                    weights.as_deref(),
                    &params.init,
                    rng,
                )
            }
        }
    }
}

impl<S: RowSource + ?Sized> LloydData for Streamed<'_, S> {
    fn shape(&self) -> (usize, usize) {
        self.source.shape()
    }

    fn pass(&mut self, centroids: &[f32]) -> Result<KMeansStats> {
        let (_, d) = self.source.shape();
        let k = centroids.len() / d;
        let mut stats = KMeansStats::empty(centroids, d)?;
        let Self {
            gpu,
            rows,
            ws,
            labels,
            dists,
            ..
        } = self;
        rows.pass(gpu, |piece, first| {
            let span = first..first + piece.n_rows();
            ws.use_piece(piece);
            ws.set_previous_labels(&labels[span.clone()]);
            ws.set_piece_weights(first);
            let s = ws.step(centroids, k, true)?;
            let weights = ws.host_weights().map(|_| &s.weight_sums[..]);
            stats.add_device(&s.deviation_sums, &s.counts, &s.sq_dist, weights);
            stats.changed += s.changed as u64;
            labels[span.clone()].copy_from_slice(&s.labels);
            dists[span].copy_from_slice(&s.min_sq_dist);
            Ok(())
        })?;
        Ok(stats)
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

impl KMeans {
    /// Fits on a [`RowSource`]: a host [`Matrix`], [`RowChunks`](crate::source::RowChunks)
    /// or a memory-mapped `.npy` file (`io::NpyRows`), which need fit neither on the device
    /// nor in host memory.
    ///
    /// When the rows fit the device-memory budget ([`Gpu::set_memory_budget`]) they are
    /// uploaded once and the fit is that of [`KMeans::fit`]; otherwise every iteration
    /// streams them through one buffer of at most 128 MiB (see [`crate::source`]), and
    /// k-means++ seeds from a sample (module docs of `kmeans::stream`). The host keeps each
    /// row's label and distance (8 bytes a row).
    ///
    /// Errors: those of [`KMeans::fit`], and the source's ([`Error::Source`](crate::Error::Source),
    /// [`Error::NonFinite`](crate::Error::NonFinite) with the global row).
    pub fn fit_source(&self, gpu: &Gpu, source: &(impl RowSource + ?Sized)) -> Result<KMeansModel> {
        self.fit_source_maybe_weighted(gpu, source, None)
    }

    /// [`KMeans::fit_source`] with a weight per row (see [`KMeans::fit_weighted`]); the
    /// weights stay on the host and stream with their rows.
    ///
    /// Errors: those of [`KMeans::fit_weighted`] and [`KMeans::fit_source`].
    pub fn fit_source_weighted(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        sample_weight: &[f32],
    ) -> Result<KMeansModel> {
        let (n, _) = check_shape(source)?;
        crate::data::check_sample_weights(sample_weight, n)?;
        self.fit_source_maybe_weighted(gpu, source, Some(sample_weight))
    }

    pub(super) fn fit_source_maybe_weighted(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        weights: Option<&[f32]>,
    ) -> Result<KMeansModel> {
        let (n, d) = check_shape(source)?;
        self.validate(n, d)?;
        let extra = ROW_EXTRA_BYTES + 4 * weights.is_some() as u64;
        let rows = DeviceRows::new(gpu, source, extra, fixed_bytes(n, d, self.k))?;
        if let DeviceRows::Resident(x) = &rows {
            if self.metric.is_spherical() {
                let unit = crate::kernels::rows::normalize_rows(gpu, x)?;
                return self.fit_resident(gpu, &unit, weights);
            }
            return self.fit_resident(gpu, x, weights);
        }
        self.require_euclidean("a streamed fit (rows over the device-memory budget)")?;
        let mut data = Streamed::new(gpu, source, rows, self.k, weights)?;
        fit_restarts(self, &mut data, |data, rng| {
            data.initial_centroids(self, rng)
        })
    }

    /// One assignment pass of `source` against `centroids` (K x D, row-major) on the
    /// device: the per-cluster sums that merge across chunks, devices and machines (see
    /// [`KMeansStats`]). A driver runs it on each partition, merges, and takes
    /// [`KMeansStats::next_centroids`]. (`changed` is 0: a single pass has no previous
    /// labels.)
    ///
    /// Errors: centroids that are not whole rows of D features or are not finite, and the
    /// errors of [`KMeans::fit_source`].
    pub fn pass_stats(
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        centroids: &[f32],
    ) -> Result<KMeansStats> {
        Self::pass_stats_maybe_weighted(gpu, source, centroids, None)
    }

    /// [`KMeans::pass_stats`] of rows with a weight each (see [`KMeans::fit_weighted`]).
    ///
    /// Errors: those of [`KMeans::pass_stats`] and of the weights.
    pub fn pass_stats_weighted(
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        centroids: &[f32],
        sample_weight: &[f32],
    ) -> Result<KMeansStats> {
        let (n, _) = check_shape(source)?;
        crate::data::check_sample_weights(sample_weight, n)?;
        Self::pass_stats_maybe_weighted(gpu, source, centroids, Some(sample_weight))
    }

    fn pass_stats_maybe_weighted(
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        centroids: &[f32],
        weights: Option<&[f32]>,
    ) -> Result<KMeansStats> {
        let (n, d) = check_shape(source)?;
        let empty = KMeansStats::empty(centroids, d)?;
        crate::data::check_finite(centroids, d)?;
        let k = empty.k();
        let extra = ROW_EXTRA_BYTES + 4 * weights.is_some() as u64;
        let rows = DeviceRows::new(gpu, source, extra, fixed_bytes(n, d, k))?;
        let mut data = Streamed::new(gpu, source, rows, k, weights)?;
        let mut stats = data.pass(centroids)?;
        stats.changed = 0;
        Ok(stats)
    }
}

/// Labels and inertia of every row of `source` against `centroids` (K x D): one pass.
pub(super) fn labels_and_inertia(
    gpu: &Gpu,
    source: &(impl RowSource + ?Sized),
    centroids: &[f32],
    weights: Option<&[f32]>,
) -> Result<(Vec<u32>, f64)> {
    let (n, d) = check_shape(source)?;
    let k = centroids.len() / d;
    let rows = DeviceRows::new(gpu, source, ROW_EXTRA_BYTES + 4, fixed_bytes(n, d, k))?;
    let mut data = Streamed::new(gpu, source, rows, k, weights)?;
    let stats = data.pass(centroids)?;
    Ok((std::mem::take(&mut data.labels), stats.inertia()))
}

/// The mean feature variance of `source` (what `tol` is relative to): one pass.
pub(super) fn mean_variance(
    gpu: &Gpu,
    source: &(impl RowSource + ?Sized),
    k: usize,
    weights: Option<&[f32]>,
) -> Result<f64> {
    let (n, d) = check_shape(source)?;
    let rows = DeviceRows::new(gpu, source, ROW_EXTRA_BYTES + 4, fixed_bytes(n, d, k))?;
    let mut data = Streamed::new(gpu, source, rows, k, weights)?;
    super::lloyd::mean_variance(&mut data)
}
