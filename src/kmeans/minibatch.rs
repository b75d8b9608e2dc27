//! Mini-batch K-Means (Sculley 2010) with scikit-learn's `MiniBatchKMeans` semantics.
//!
//! Each step draws `batch_size` rows with replacement, assigns them to the nearest centroid
//! and moves every centroid k that received rows to the running mean of all rows it has
//! received so far:
//!
//! ```text
//! cₖ ← (cₖ·Wₖ + Σ_{batch, label k} x) / (Wₖ + nₖ) = cₖ + Σ(x − cₖ)/(Wₖ + nₖ),   Wₖ ← Wₖ + nₖ
//! ```
//!
//! (the deviation form is what the device sums: the same `assign` and `centroid_update`
//! kernels as Lloyd's, on the batch). Clusters whose count falls below
//! `reassignment_ratio · maxₖ Wₖ` are moved onto random rows of the batch (at most half a
//! batch at a time) whenever some count is 0 or `10·K` rows have passed since the last
//! reassignment, and their counts are reset to the smallest count kept. The loop stops after
//! `max_iter` epochs (`max_iter·N / batch_size` steps), when the squared centroid shift of a
//! step falls to `tol` (relative to the mean feature variance, as for Lloyd), or when the
//! exponentially weighted average of the batch inertia (weight `2·batch_size/(N + 1)`) has
//! not improved for `max_no_improvement` steps. Initialisation: `n_init` candidates from an
//! `init_size` sample (k-means++ on the device, or random rows), the one with the lowest
//! inertia on a validation batch kept. Final labels and inertia come from one full pass.
//!
//! Every random draw comes from one ChaCha8 generator in a fixed order (validation batch,
//! initialisations, then per step the batch and the reassignment picks), which the f64
//! oracle of the tests follows too.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::fit::{random_rows, Workspace};
use super::stream::labels_and_inertia;
use super::{KMeans, KMeansInit, KMeansModel, KMeansStats, MiniBatchKMeansFit};
use crate::data::Matrix;
use crate::error::{Error, Result};
use crate::gpu::stream::view;
use crate::gpu::{Gpu, GpuMatrix};
use crate::progress::{fit_done, Algorithm, Progress};
use crate::source::{check_shape, RowSource};

/// Mini-batch K-Means parameters (a builder); validated when fitting.
///
/// Defaults follow scikit-learn: `batch_size = 1024`, `max_iter = 100` epochs,
/// `max_no_improvement = Some(10)`, `reassignment_ratio = 0.01`, `tol = 0` (off),
/// `n_init = 1` with k-means++ (sklearn's "auto"), `init_size = 3·batch_size`, `seed = 0`.
///
/// ```
/// use wgpu_unsupervised::{datasets, metrics, Gpu, Matrix, MiniBatchKMeans};
///
/// let gpu = Gpu::new()?;
/// let (rows, truth, _) = datasets::make_blobs(2000, 2, 3, 0.4, (-10.0, 10.0), 2)?;
/// let x = Matrix::new(&rows, 2)?;
/// let model = MiniBatchKMeans::new(3).batch_size(256).seed(2).fit(&gpu, &x)?;
/// assert!(metrics::adjusted_rand_index(model.labels(), &truth)? > 0.99);
/// # Ok::<(), wgpu_unsupervised::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MiniBatchKMeans {
    /// Number of clusters K.
    pub k: usize,
    /// Rows per step.
    pub batch_size: usize,
    /// Epochs: the step cap is `max_iter·N / batch_size`.
    pub max_iter: usize,
    /// Stop after this many steps without improvement of the smoothed batch inertia.
    pub max_no_improvement: Option<usize>,
    /// Clusters with fewer than this fraction of the largest count are re-seeded.
    pub reassignment_ratio: f64,
    /// Stop when a step's squared centroid shift is at most `tol` times the mean feature
    /// variance (0 turns it off and saves the pass that measures the variance).
    pub tol: f64,
    /// Initialisation candidates, the best on a validation batch kept.
    pub n_init: usize,
    /// Rows the initialisation is drawn from (`None`: 3·batch_size, at least K).
    pub init_size: Option<usize>,
    /// Initialisation method.
    pub init: KMeansInit,
    /// Seed of the random generator (ChaCha8).
    pub seed: u64,
    /// Called after every step (see [`crate::progress`]); never serialized.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub on_iteration: Option<crate::OnIteration>,
}

impl MiniBatchKMeans {
    /// Parameters for `k` clusters with the defaults above.
    pub fn new(k: usize) -> Self {
        Self {
            k,
            batch_size: 1024,
            max_iter: 100,
            max_no_improvement: Some(10),
            reassignment_ratio: 0.01,
            tol: 0.0,
            n_init: 1,
            init_size: None,
            init: KMeansInit::KMeansPlusPlus,
            seed: 0,
            on_iteration: None,
        }
    }

    /// Calls `f` after every step with its [`Iteration`](crate::Iteration): the step number,
    /// the batch's inertia, the squared centroid shift, the elapsed time;
    /// `ControlFlow::Break(())` stops the fit there (`converged() == false`).
    pub fn on_iteration(
        mut self,
        f: impl Fn(&crate::Iteration) -> std::ops::ControlFlow<()> + Send + Sync + 'static,
    ) -> Self {
        self.on_iteration = Some(crate::OnIteration::new(f));
        self
    }

    /// Sets the batch size.
    pub fn batch_size(mut self, rows: usize) -> Self {
        self.batch_size = rows;
        self
    }

    /// Sets the epoch cap.
    pub fn max_iter(mut self, epochs: usize) -> Self {
        self.max_iter = epochs;
        self
    }

    /// Sets (or, with `None`, turns off) the early stop on no improvement.
    pub fn max_no_improvement(mut self, steps: Option<usize>) -> Self {
        self.max_no_improvement = steps;
        self
    }

    /// Sets the reassignment ratio (0 turns reassignment off).
    pub fn reassignment_ratio(mut self, ratio: f64) -> Self {
        self.reassignment_ratio = ratio;
        self
    }

    /// Sets the relative tolerance on the centroid shift.
    pub fn tol(mut self, tol: f64) -> Self {
        self.tol = tol;
        self
    }

    /// Sets the number of initialisation candidates.
    pub fn n_init(mut self, n_init: usize) -> Self {
        self.n_init = n_init;
        self
    }

    /// Sets the size of the initialisation sample.
    pub fn init_size(mut self, rows: Option<usize>) -> Self {
        self.init_size = rows;
        self
    }

    /// Sets the initialisation.
    pub fn init(mut self, init: KMeansInit) -> Self {
        self.init = init;
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The Lloyd parameters these share (what the fitted model reports).
    pub(super) fn as_kmeans(&self) -> KMeans {
        KMeans::new(self.k)
            .n_init(self.n_init.max(1))
            .max_iter(self.max_iter.max(1))
            .tol(self.tol)
            .seed(self.seed)
            .init(self.init.clone())
    }

    /// Checks the parameters against data of `n` rows and `d` features.
    pub fn validate(&self, n: usize, d: usize) -> Result<()> {
        self.as_kmeans().validate(n, d)?;
        Error::require_count("batch_size", self.batch_size)?;
        Error::require_count("max_iter", self.max_iter)?;
        Error::require_count("n_init", self.n_init)?;
        if self.max_no_improvement == Some(0) {
            return Err(Error::invalid(
                "max_no_improvement",
                "must be at least 1 (or None)",
            ));
        }
        if !(0.0..=1.0).contains(&self.reassignment_ratio) {
            return Err(Error::invalid("reassignment_ratio", "must be in [0, 1]"));
        }
        if self.init_size == Some(0) {
            return Err(Error::invalid("init_size", "must be at least 1"));
        }
        Ok(())
    }

    /// Rows of the initialisation sample.
    fn sample_size(&self, n: usize) -> usize {
        self.init_size
            .unwrap_or(3 * self.batch_size)
            .max(self.k)
            .min(n.max(self.k))
    }

    /// Fits on a [`RowSource`] (rows are drawn at random: a host [`Matrix`] or a mapped
    /// `io::NpyRows` serve them directly; a source without random access reads one pass
    /// per batch).
    ///
    /// Errors: invalid parameters, the source's and the GPU's errors.
    pub fn fit(&self, gpu: &Gpu, source: &(impl RowSource + ?Sized)) -> Result<KMeansModel> {
        self.fit_maybe_weighted(gpu, source, None)
    }

    /// [`MiniBatchKMeans::fit`] with a weight per row (scikit-learn's `sample_weight`):
    /// batches carry their rows' weights, the running counts are weight sums, seeding and
    /// reassignment draw ∝ w, the inertia is weighted.
    ///
    /// Errors: weights that are not one per row, finite and non-negative, or all zero, and
    /// those of [`MiniBatchKMeans::fit`].
    pub fn fit_weighted(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        sample_weight: &[f32],
    ) -> Result<KMeansModel> {
        let (n, _) = check_shape(source)?;
        crate::data::check_sample_weights(sample_weight, n)?;
        self.fit_maybe_weighted(gpu, source, Some(sample_weight))
    }

    fn fit_maybe_weighted(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        weights: Option<&[f32]>,
    ) -> Result<KMeansModel> {
        let (n, d) = check_shape(source)?;
        self.validate(n, d)?;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut run = MiniBatchRun::new(gpu, self, d, weights.is_some())?;
        let weights_of =
            |idx: &[usize]| weights.map(|w| idx.iter().map(|&i| w[i]).collect::<Vec<f32>>());
        let valid: Vec<usize> = (0..self.batch_size)
            .map(|_| rng.random_range(0..n))
            .collect();
        let valid_weights = weights_of(&valid);
        let valid = source.gather(&valid)?;
        let candidates = match self.init {
            KMeansInit::Centroids(_) => 1,
            _ => self.n_init,
        };
        let mut best: Option<(f64, Vec<f32>)> = None;
        for _ in 0..candidates {
            let c = self.initial_centroids(gpu, source, weights, &mut rng)?;
            let inertia = run
                .batch_stats(&valid, &c, valid_weights.as_deref())?
                .inertia();
            if best.as_ref().is_none_or(|(b, _)| inertia < *b) {
                best = Some((inertia, c));
            }
        }
        run.centroids = best.expect("one candidate").1;
        let tol_abs = if self.tol > 0.0 {
            self.tol * super::stream::mean_variance(gpu, source, self.k, weights)?
        } else {
            0.0
        };
        let steps = (self.max_iter as u128 * n as u128 / self.batch_size as u128).max(1) as usize;
        let mut ewa: Option<f64> = None;
        let mut ewa_min: Option<f64> = None;
        let mut no_improvement = 0;
        let mut history = Vec::new();
        let mut converged = false;
        let progress = Progress::new(Algorithm::MiniBatchKMeans, 0, self.on_iteration.as_ref());
        let began = std::time::Instant::now();
        for step in 0..steps {
            let idx: Vec<usize> = (0..self.batch_size)
                .map(|_| rng.random_range(0..n))
                .collect();
            let batch = source.gather(&idx)?;
            let batch_weights = weights_of(&idx);
            let (batch_inertia, shift) = run.step(&batch, batch_weights.as_deref(), &mut rng)?;
            history.push(batch_inertia);
            if progress
                .iteration(step + 1, batch_inertia, shift)
                .is_break()
            {
                break;
            }
            // scikit-learn's _mini_batch_convergence; the first step measures the start.
            if step == 0 {
                continue;
            }
            let mean_inertia = batch_inertia / self.batch_size as f64;
            let alpha = (self.batch_size as f64 * 2.0 / (n as f64 + 1.0)).min(1.0);
            let e = ewa.map_or(mean_inertia, |e| e * (1.0 - alpha) + mean_inertia * alpha);
            ewa = Some(e);
            if self.tol > 0.0 && shift <= tol_abs {
                converged = true;
                break;
            }
            if ewa_min.is_none_or(|m| e < m) {
                no_improvement = 0;
                ewa_min = Some(e);
            } else {
                no_improvement += 1;
            }
            if self.max_no_improvement.is_some_and(|m| no_improvement >= m) {
                converged = true;
                break;
            }
        }
        let (labels, inertia) = labels_and_inertia(gpu, source, &run.centroids, weights)?;
        fit_done(
            Algorithm::MiniBatchKMeans,
            n,
            d,
            history.len(),
            converged,
            began,
        );
        Ok(KMeansModel {
            params: self.as_kmeans(),
            n_features: d,
            centroids: run.centroids,
            labels,
            inertia,
            n_iter: history.len(),
            converged,
            inertia_history: history,
            init_seconds: Default::default(),
        })
    }

    /// Initial centroids from a sample of `init_size` rows.
    fn initial_centroids(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        weights: Option<&[f32]>,
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<f32>> {
        let (n, d) = source.shape();
        match &self.init {
            KMeansInit::Centroids(c) => Ok(c.iter().map(|&v| v as f32).collect()),
            KMeansInit::Random => source.gather(&random_rows(rng, n, self.k, weights)?),
            KMeansInit::KMeansPlusPlus | KMeansInit::KMeansParallel { .. } => {
                let m = self.sample_size(n);
                let idx: Vec<usize> = (0..m).map(|_| rng.random_range(0..n)).collect();
                let rows = source.gather(&idx)?;
                let w: Option<Vec<f32>> = weights.map(|w| idx.iter().map(|&i| w[i]).collect());
                let sample = GpuMatrix::upload(gpu, &Matrix::new(&rows, d)?)?;
                super::parallel::device_seeds(gpu, &sample, self.k, w.as_deref(), &self.init, rng)
            }
        }
    }

    /// A mini-batch fit fed batch by batch ([`MiniBatchKMeansFit::partial_fit`]), as
    /// scikit-learn's `partial_fit`.
    pub fn partial(&self) -> MiniBatchKMeansFit {
        MiniBatchKMeansFit::new(self.clone())
    }
}

/// The device side of a mini-batch fit: a batch buffer with its workspace, the centroids
/// and the running counts.
pub(super) struct MiniBatchRun<'g> {
    gpu: &'g Gpu,
    k: usize,
    d: usize,
    reassignment_ratio: f64,
    slot: wgpu::Buffer,
    capacity: usize,
    ws: Workspace<'g>,
    pub(super) centroids: Vec<f32>,
    pub(super) counts: Vec<f64>,
    pub(super) since_reassign: usize,
}

impl<'g> MiniBatchRun<'g> {
    pub(super) fn new(
        gpu: &'g Gpu,
        params: &MiniBatchKMeans,
        d: usize,
        weighted: bool,
    ) -> Result<Self> {
        let capacity = params.batch_size;
        let bytes = (capacity as u64).saturating_mul(d as u64 * 4);
        if bytes > gpu.chunk_byte_limit() {
            return Err(Error::DeviceLimit {
                what: format!("a batch of {capacity} rows of {d} features ({bytes} bytes)"),
                requested: bytes,
                limit_name: "max_storage_buffer_binding_size",
                limit: gpu.chunk_byte_limit(),
            });
        }
        let slot = gpu.scoped("allocating the batch buffer", || {
            Ok(gpu.buffer_zeroed("mini-batch rows", (capacity * d * 4) as u64))
        })?;
        let mut ws = Workspace::new(gpu, &view(&slot, capacity, d), params.k)?;
        if weighted {
            ws.weigh_batches();
        }
        Ok(Self {
            gpu,
            k: params.k,
            d,
            reassignment_ratio: params.reassignment_ratio,
            slot,
            capacity,
            ws,
            centroids: Vec::new(),
            counts: vec![0.0; params.k],
            since_reassign: 0,
        })
    }

    /// The per-cluster sums of `rows` against `centroids` on the device.
    fn batch_stats(
        &mut self,
        rows: &[f32],
        centroids: &[f32],
        weights: Option<&[f32]>,
    ) -> Result<KMeansStats> {
        let n = rows.len() / self.d;
        if n > self.capacity {
            return Err(Error::invalid(
                "batch",
                format!("{n} rows exceed the batch size {}", self.capacity),
            ));
        }
        self.gpu
            .queue
            .write_buffer(&self.slot, 0, bytemuck::cast_slice(rows));
        self.ws.use_piece(&view(&self.slot, n, self.d));
        if let Some(w) = weights {
            self.ws.set_batch_weights(w);
        }
        let s = self.ws.step(centroids, self.k, false)?;
        let mut stats = KMeansStats::empty(centroids, self.d)?;
        let sums = weights.map(|_| &s.weight_sums[..]);
        stats.add_device(&s.deviation_sums, &s.counts, &s.sq_dist, sums);
        Ok(stats)
    }

    /// One step on `batch`: returns the batch inertia (before the update) and the squared
    /// centroid shift.
    pub(super) fn step(
        &mut self,
        batch: &[f32],
        weights: Option<&[f32]>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(f64, f64)> {
        let (k, d) = (self.k, self.d);
        let rows = batch.len() / d;
        // scikit-learn's _random_reassign, decided on the counts before this batch.
        self.since_reassign += rows;
        let reassign = self.counts.contains(&0.0) || self.since_reassign >= 10 * k;
        if reassign {
            self.since_reassign = 0;
        }
        let stats = self.batch_stats(batch, &self.centroids.clone(), weights)?;
        let mut next: Vec<f64> = self.centroids.iter().map(|&v| v as f64).collect();
        for c in 0..k {
            let nb = stats.weights[c];
            if nb > 0.0 {
                let w = self.counts[c] + nb;
                for j in 0..d {
                    next[c * d + j] += stats.deviation_sums[c * d + j] / w;
                }
                self.counts[c] = w;
            }
        }
        // The reassignment of small clusters, after the update (as scikit-learn).
        if reassign && self.reassignment_ratio > 0.0 {
            let max = self.counts.iter().cloned().fold(0.0, f64::max);
            let mut small: Vec<usize> = (0..k)
                .filter(|&c| self.counts[c] < self.reassignment_ratio * max)
                .collect();
            if small.len() as f64 > 0.5 * rows as f64 {
                // Keep only the smallest half-batch of counts (stable order: count, index).
                small.sort_by(|&a, &b| self.counts[a].total_cmp(&self.counts[b]).then(a.cmp(&b)));
                small.truncate((0.5 * rows as f64) as usize);
                small.sort_unstable();
            }
            // New centres drawn ∝ weight among the batch rows (as many as have weight).
            let positive = weights.map_or(rows, |w| w.iter().filter(|&&v| v > 0.0).count());
            small.truncate(positive);
            if !small.is_empty() {
                let picks = random_rows(rng, rows, small.len(), weights)?;
                for (&c, &r) in small.iter().zip(&picks) {
                    for j in 0..d {
                        next[c * d + j] = batch[r * d + j] as f64;
                    }
                }
                let kept = (0..k)
                    .filter(|c| !small.contains(c))
                    .map(|c| self.counts[c])
                    .fold(f64::INFINITY, f64::min);
                for &c in &small {
                    self.counts[c] = if kept.is_finite() { kept } else { 0.0 };
                }
            }
        }
        let next32: Vec<f32> = next.iter().map(|&v| v as f32).collect();
        let shift = next32
            .iter()
            .zip(&self.centroids)
            .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
            .sum();
        self.centroids = next32;
        Ok((stats.inertia(), shift))
    }
}
