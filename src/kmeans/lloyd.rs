//! The Lloyd loop, the empty-cluster repair, the tolerance scale and the restarts, written
//! once over [`LloydData`]: rows that are all on the device, streamed piece by piece, or
//! split across devices; and the resident fits, [`KMeans::fit`] and [`KMeans::fit_weighted`].

use std::borrow::Cow;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::fit::Workspace;
use super::{normalize_centroids, KMeans, KMeansInit, KMeansModel, KMeansStats, Metric};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, GpuInput, GpuMatrix};
use crate::progress::{fit_done, Algorithm, Progress};

/// What the Lloyd loop needs of the data.
pub(super) trait LloydData {
    /// Rows and features.
    fn shape(&self) -> (usize, usize);
    /// One assignment pass against `centroids` (K x D): the merged statistics, with the
    /// number of labels that changed. The rows' labels and distances are kept for
    /// [`LloydData::labels_and_distances`].
    fn pass(&mut self, centroids: &[f32]) -> Result<KMeansStats>;
    /// Every row's label and squared distance from the last pass.
    fn labels_and_distances(&mut self) -> Result<(Vec<u32>, Vec<f32>)>;
    /// The rows `indices`, row-major, in that order.
    fn rows(&mut self, indices: &[usize]) -> Result<Vec<f32>>;
    /// Every row's sample weight, when the rows are weighted.
    fn row_weights(&self) -> Option<&[f32]>;
}

/// One restart's result.
pub(super) struct Run {
    pub(super) centroids: Vec<f32>,
    pub(super) inertia: f64,
    pub(super) n_iter: usize,
    pub(super) converged: bool,
    pub(super) history: Vec<f64>,
    /// The progress callback asked to stop.
    pub(super) stopped: bool,
}

/// Mean over features of the (weighted) population variance, from one pass with a single
/// "centroid" s (the first row): Σᵢwᵢ‖xᵢ − μ‖² = Σᵢwᵢ‖xᵢ − s‖² − W‖μ − s‖², W = Σw (N
/// unweighted). Weighted, so that integer weights and repeated rows get the same tolerance.
pub(super) fn mean_variance(data: &mut impl LloydData) -> Result<f64> {
    let (_, d) = data.shape();
    let shift = data.rows(&[0])?;
    let stats = data.pass(&shift)?;
    let n = stats.weights[0];
    let offset_sq: f64 = stats.deviation_sums[..d]
        .iter()
        .map(|&s| (s / n).powi(2))
        .sum();
    Ok(((stats.inertia() - n * offset_sq) / (n * d as f64)).max(0.0))
}

/// Moves each empty cluster (no weight) onto the row farthest from its centroid, taking rows
/// only from clusters with more than one member and updating the donors' (weighted) means.
fn repair_empty_clusters(
    data: &mut impl LloydData,
    centroids: &mut [f64],
    counts: &mut [u64],
    weights: &mut [f64],
) -> Result<()> {
    let (_, d) = data.shape();
    let (labels, dists) = data.labels_and_distances()?;
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by(|&a, &b| dists[b].total_cmp(&dists[a]).then(a.cmp(&b)));
    let mut far = order.into_iter();
    for empty in 0..counts.len() {
        if weights[empty] > 0.0 {
            continue;
        }
        let Some(row) = far.by_ref().find(|&r| counts[labels[r] as usize] > 1) else {
            break;
        };
        let donor = labels[row] as usize;
        let w = data.row_weights().map_or(1.0, |wt| wt[row] as f64);
        let x = data.rows(&[row])?;
        let m = weights[donor];
        for j in 0..d {
            let xj = x[j] as f64;
            // A donor left without weight keeps its centroid.
            if m - w > 0.0 {
                centroids[donor * d + j] = (centroids[donor * d + j] * m - w * xj) / (m - w);
            }
            centroids[empty * d + j] = xj;
        }
        counts[donor] -= 1;
        counts[empty] = 1;
        weights[donor] -= w;
        weights[empty] = w;
    }
    Ok(())
}

/// One Lloyd run from `init`; with the cosine metric the updated centroids are put back on
/// the unit sphere.
fn lloyd(
    data: &mut impl LloydData,
    init: Vec<f32>,
    max_iter: usize,
    tol_abs: f64,
    metric: Metric,
    progress: &Progress<'_>,
) -> Result<Run> {
    let mut centroids = init;
    let mut history = Vec::new();
    let mut converged = false;
    let mut stopped = false;
    let mut n_iter = 0;
    let scale = metric.objective_scale();
    for it in 0..max_iter {
        let stats = data.pass(&centroids)?;
        history.push(stats.inertia());
        n_iter = it + 1;
        // The count compares with the previous iteration's labels (or a previous restart's,
        // or zeros): meaningless on the first iteration of a run.
        if it > 0 && stats.changed == 0 {
            converged = true;
            let _ = progress.iteration(n_iter, stats.inertia() * scale, 0.0);
            break;
        }
        let mut counts = stats.counts.clone();
        let mut weights = stats.weights.clone();
        let mut next = stats.next_centroids();
        if weights.iter().any(|&w| w <= 0.0) {
            repair_empty_clusters(data, &mut next, &mut counts, &mut weights)?;
        }
        if metric.is_spherical() {
            normalize_centroids(&mut next, data.shape().1, Some(&centroids))?;
        }
        let next32: Vec<f32> = next.iter().map(|&v| v as f32).collect();
        let shift: f64 = next32
            .iter()
            .zip(&centroids)
            .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
            .sum();
        centroids = next32;
        if shift <= tol_abs {
            converged = true;
            let _ = progress.iteration(n_iter, stats.inertia() * scale, shift);
            break;
        }
        if progress
            .iteration(n_iter, stats.inertia() * scale, shift)
            .is_break()
        {
            stopped = true;
            break;
        }
    }
    // Labels and inertia consistent with the final centroids.
    let last = data.pass(&centroids)?;
    Ok(Run {
        centroids,
        inertia: last.inertia() * scale,
        n_iter,
        converged,
        history: history.into_iter().map(|j| j * scale).collect(),
        stopped,
    })
}

/// The restarts of a fit: `init` draws each restart's centroids; the run with the lowest
/// inertia is kept, with its labels.
pub(super) fn fit_restarts<D: LloydData>(
    params: &KMeans,
    data: &mut D,
    mut init: impl FnMut(&mut D, &mut ChaCha8Rng) -> Result<Vec<f32>>,
) -> Result<KMeansModel> {
    let (n, d) = data.shape();
    let began = std::time::Instant::now();
    let tol_abs = if params.tol > 0.0 {
        params.tol * mean_variance(data)?
    } else {
        0.0
    };
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let runs = match params.init {
        KMeansInit::Centroids(_) => 1,
        _ => params.n_init,
    };
    let mut best: Option<(Run, Vec<u32>)> = None;
    let mut init_seconds = 0.0;
    for r in 0..runs {
        let progress = Progress::new(Algorithm::KMeans, r, params.on_iteration.as_ref());
        let init_began = std::time::Instant::now();
        let mut start = init(data, &mut rng)?;
        if params.metric.is_spherical() {
            // Rows drawn from unit data are unit already; given centroids may not be.
            let mut unit: Vec<f64> = start.iter().map(|&v| v as f64).collect();
            normalize_centroids(&mut unit, d, None)?;
            start = unit.iter().map(|&v| v as f32).collect();
        }
        init_seconds += init_began.elapsed().as_secs_f64();
        let run = lloyd(
            data,
            start,
            params.max_iter,
            tol_abs,
            params.metric,
            &progress,
        )?;
        let stopped = run.stopped;
        if best.as_ref().is_none_or(|(b, _)| run.inertia < b.inertia) {
            let labels = data.labels_and_distances()?.0;
            best = Some((run, labels));
        }
        if stopped {
            break;
        }
    }
    let (run, labels) = best.expect("at least one restart ran");
    fit_done(Algorithm::KMeans, n, d, run.n_iter, run.converged, began);
    Ok(KMeansModel {
        params: KMeans {
            on_iteration: None,
            ..params.clone()
        },
        n_features: d,
        centroids: run.centroids,
        labels,
        inertia: run.inertia,
        n_iter: run.n_iter,
        converged: run.converged,
        inertia_history: run.history,
        init_seconds: super::model::Elapsed(init_seconds),
    })
}

impl KMeans {
    /// Fits on host or device data: `n_init` restarts, keeping the lowest inertia.
    ///
    /// Host data larger than the device-memory budget ([`Gpu::set_memory_budget`]) are
    /// streamed as by [`KMeans::fit_source`]; everything else is uploaded once.
    ///
    /// Errors: invalid parameters ([`Error::InvalidParameter`], [`Error::TooFewSamples`]),
    /// and the GPU errors of [`GpuMatrix::upload`] and of the kernels.
    pub fn fit(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<KMeansModel> {
        self.fit_maybe_weighted(gpu, x, None)
    }

    /// [`KMeans::fit`] with a weight per row (scikit-learn's `sample_weight`): the centroids
    /// are weighted means, the inertia is Σ w·‖x − c‖², k-means++ draws ∝ w·D² (its first
    /// centre ∝ w), random init ∝ w, and `tol` is relative to the weighted variance. An
    /// integer weight equals repeating the row that many times.
    ///
    /// Errors: weights that are not one per row, not finite and non-negative, or all zero
    /// ([`Error::InvalidParameter`]), and those of [`KMeans::fit`].
    pub fn fit_weighted(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
        sample_weight: &[f32],
    ) -> Result<KMeansModel> {
        crate::data::check_sample_weights(sample_weight, x.shape().0)?;
        self.fit_maybe_weighted(gpu, x, Some(sample_weight))
    }

    fn fit_maybe_weighted(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
        weights: Option<&[f32]>,
    ) -> Result<KMeansModel> {
        let (n, d) = x.shape();
        self.validate(n, d)?;
        if self.metric.is_spherical() {
            let unit = crate::kernels::rows::normalize_rows(gpu, &*x.on_gpu(gpu)?)?;
            return self.fit_resident(gpu, &unit, weights);
        }
        if let Some(source) = x.as_source() {
            if super::stream::must_stream(gpu, n, d, self.k) {
                return self.fit_source_maybe_weighted(gpu, source, weights);
            }
        }
        let x = x.on_gpu(gpu)?;
        self.fit_resident(gpu, &x, weights)
    }

    /// The rows the metric clusters: the data on the device, normalised to unit length for
    /// the cosine metric.
    fn rows_for_metric<'a>(&self, gpu: &Gpu, x: &'a impl GpuInput) -> Result<Cow<'a, GpuMatrix>> {
        let on_device = x.on_gpu(gpu)?;
        if self.metric.is_spherical() {
            let unit = crate::kernels::rows::normalize_rows(gpu, &on_device)?;
            return Ok(Cow::Owned(unit));
        }
        Ok(on_device)
    }

    /// The initial centroids of the first restart (K x D, row-major), as [`KMeans::fit`]
    /// draws them from `self.seed`: the k-means++ (scikit-learn's `kmeans_plusplus`),
    /// k-means‖ or random seeding on its own. With the cosine metric they are rows of the
    /// normalised data.
    ///
    /// Errors: those of [`KMeans::fit`] before its Lloyd iterations.
    pub fn initial_centroids(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<Vec<f32>> {
        let (n, d) = x.shape();
        self.validate(n, d)?;
        let rows = self.rows_for_metric(gpu, x)?;
        let ws = Workspace::weighted(gpu, &rows, self.k, None)?;
        ws.initial_centroids(self, &mut ChaCha8Rng::seed_from_u64(self.seed))
    }

    /// The seeds of the k-means++ initialisation and the rows they were taken from:
    /// scikit-learn's `kmeans_plusplus(X, n_clusters, sample_weight, random_state)`.
    ///
    /// Greedy k-means++ (`2 + ln K` D²-sampled candidates per step, the one lowering the
    /// potential most kept) on the device, from `self.seed`, with optional sample weights
    /// (one per row, as for [`KMeans::fit_weighted`]). The seeds are those
    /// [`KMeans::initial_centroids`] gives with `KMeansInit::KMeansPlusPlus` and the same
    /// seed; with the cosine metric they are rows of the normalised data. Returns (K x D
    /// seeds row-major, the K row indices, distinct unless rows repeat).
    ///
    /// Errors: those of [`KMeans::fit`] before its Lloyd iterations, and bad weights.
    pub fn kmeans_plusplus(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
        sample_weight: Option<&[f32]>,
    ) -> Result<(Vec<f32>, Vec<usize>)> {
        let (n, d) = x.shape();
        self.validate(n, d)?;
        if let Some(w) = sample_weight {
            crate::data::check_sample_weights(w, n)?;
        }
        let rows = self.rows_for_metric(gpu, x)?;
        let ws = Workspace::weighted(gpu, &rows, self.k, sample_weight)?;
        ws.kmeans_plus_plus(
            &mut ChaCha8Rng::seed_from_u64(self.seed),
            self.n_local_trials(),
        )
    }

    /// Refuses the cosine metric where the rows are not all on one device (streamed or
    /// partitioned fits and their statistics), which spherical K-Means does not support yet.
    pub(super) fn require_euclidean(&self, what: &str) -> Result<()> {
        if self.metric.is_spherical() {
            return Err(Error::invalid(
                "metric",
                format!("{what} supports the Euclidean metric only; fit cosine K-Means with `fit` on data that fit on the device"),
            ));
        }
        Ok(())
    }

    /// The fit on rows that are all on the device.
    pub(super) fn fit_resident(
        &self,
        gpu: &Gpu,
        x: &GpuMatrix,
        weights: Option<&[f32]>,
    ) -> Result<KMeansModel> {
        let mut ws = Workspace::weighted(gpu, x, self.k, weights)?;
        fit_restarts(self, &mut ws, |ws, rng| ws.initial_centroids(self, rng))
    }
}
