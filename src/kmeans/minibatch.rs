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

use super::seeding::random_rows;
use super::stream::labels_and_inertia;
use super::workspace::Workspace;
use super::{KMeansModel, KMeansStats, MiniBatchKMeans};
use crate::error::{Error, Result};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::stream::view;
use crate::gpu::Gpu;
use crate::progress::{fit_done, Algorithm, Progress};
use crate::source::{check_shape, RowSource};

/// The mini-batch fit (module docs) of `source`, whose rows carry `weights` when given.
pub(super) fn fit(
    params: &MiniBatchKMeans,
    gpu: &Gpu,
    source: &(impl RowSource + ?Sized),
    weights: Option<&[f32]>,
) -> Result<KMeansModel> {
    let (n, d) = check_shape(source)?;
    params.validate(n, d)?;
    let params = &params.resolved_for(n);
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let mut run = MiniBatchRun::new(gpu, params, d, weights.is_some())?;
    let weights_of =
        |idx: &[usize]| weights.map(|w| idx.iter().map(|&i| w[i]).collect::<Vec<f32>>());
    let valid: Vec<usize> = (0..params.batch_size)
        .map(|_| rng.random_range(0..n))
        .collect();
    let valid_weights = weights_of(&valid);
    let valid = source.gather(&valid)?;
    let candidates = params.init.runs(params.n_init);
    let mut best: Option<(f64, Vec<f32>)> = None;
    for _ in 0..candidates {
        let c = super::seeding::sample_start(gpu, source, weights, params, &mut rng)?;
        let inertia = run
            .batch_stats(&valid, &c, valid_weights.as_deref())?
            .inertia();
        if best.as_ref().is_none_or(|(b, _)| inertia < *b) {
            best = Some((inertia, c));
        }
    }
    run.centroids = best.expect("one candidate").1;
    let tol_abs = if params.tol > 0.0 {
        params.tol * super::stream::mean_variance(gpu, source, params.k, weights)?
    } else {
        0.0
    };
    let steps = (params.max_iter as u128 * n as u128 / params.batch_size as u128).max(1) as usize;
    let mut ewa: Option<f64> = None;
    let mut ewa_min: Option<f64> = None;
    let mut no_improvement = 0;
    let mut history = Vec::new();
    let mut converged = false;
    let progress = Progress::new(Algorithm::MiniBatchKMeans, 0, params.on_iteration.as_ref());
    let began = std::time::Instant::now();
    for step in 0..steps {
        let idx: Vec<usize> = (0..params.batch_size)
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
        let mean_inertia = batch_inertia / params.batch_size as f64;
        let alpha = (params.batch_size as f64 * 2.0 / (n as f64 + 1.0)).min(1.0);
        let e = ewa.map_or(mean_inertia, |e| e * (1.0 - alpha) + mean_inertia * alpha);
        ewa = Some(e);
        if params.tol > 0.0 && shift <= tol_abs {
            converged = true;
            break;
        }
        if ewa_min.is_none_or(|m| e < m) {
            no_improvement = 0;
            ewa_min = Some(e);
        } else {
            no_improvement += 1;
        }
        if params
            .max_no_improvement
            .is_some_and(|m| no_improvement >= m)
        {
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
        params: params.as_kmeans(),
        n_features: d,
        centroids: run.centroids,
        labels,
        inertia,
        n_iter: history.len(),
        converged,
        inertia_history: history,
        init_seconds: Default::default(),
        origin: None,
    })
}

/// The device side of a mini-batch fit: a batch buffer with its workspace, the centroids
/// and the running counts.
pub(super) struct MiniBatchRun<'g> {
    gpu: &'g Gpu,
    k: usize,
    d: usize,
    reassignment_ratio: f64,
    slot: DeviceBuffer<f32>,
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
            Ok(DeviceBuffer::zeroed(gpu, "mini-batch rows", capacity * d))
        })?;
        let mut ws = Workspace::weighted(gpu, &view(&slot, capacity, d), params.k, None)?;
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
        self.slot.write(self.gpu, rows);
        self.ws.use_piece(&view(&self.slot, n, self.d));
        if let Some(w) = weights {
            self.ws.set_batch_weights(w);
        }
        let mut stats = KMeansStats::empty(centroids, self.d)?;
        self.ws.step(&mut stats, None)?;
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
