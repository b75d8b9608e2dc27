//! Every K-Means start: greedy k-means++ on the device, k-means‖, random rows and given
//! centroids, for rows on the device and for rows that stay on the host (a streamed source,
//! partitions on several devices, mini-batch samples).
//!
//! **Greedy k-means++** (Arthur & Vassilvitskii 2007, scikit-learn's variant): each new centre
//! is the best of `2 + ln K` candidates drawn with probability ∝ w·D(x)², D the distance to
//! the nearest centre so far, "best" meaning the smallest resulting potential
//! Σᵢ wᵢ·min(D(xᵢ)², ‖xᵢ − c‖²). All of it runs on the device (`shaders/centroids/seeding.wgsl`):
//! D² sampling by a prefix scan of per-block sums of w·D², the candidates' potentials in one
//! pass over the rows for all candidates, the choice and the D² update. The host draws the
//! first row and every step's uniform numbers up front, in the order the f64 reference
//! draws them, so the K − 1 steps are recorded back to back with no readback (one per 32
//! steps is submitted) and the seeds equal the reference's draw for draw.
//!
//! **k-means‖** (Bahmani, Moseley, Vattani, Kumar & Vassilvitskii 2012, "Scalable
//! K-Means++"). Greedy k-means++ adds one centre per pass over the data, so K passes;
//! k-means‖ samples many candidates per pass:
//!
//! 1. C ← one row drawn uniformly (∝ w with sample weights); φ = Σᵢ wᵢ·D²(xᵢ, C);
//! 2. `rounds` times: every row joins C independently with probability
//!    min(1, ℓ·wᵢ·D²(xᵢ, C)/φ), ℓ = `oversampling`·K, then D² and φ are updated;
//! 3. each candidate is weighted by the (sample-weighted) number of rows nearest to it;
//! 4. greedy k-means++ picks K centres among the weighted candidates, on the device (they
//!    are about 1 + rounds·ℓ).
//!
//! D² and the nearest candidate of every row come from the assignment kernel that Lloyd
//! uses, each round against that round's new candidates only (the running minimum and its
//! candidate kept per row), so every row meets each of the C candidates once (N·C·D work)
//! and the weights of step 3 come from the last round with no further pass. The N distances
//! and nearest candidates are read back once per round and the Bernoulli draws made on the
//! host in row order from the fit's ChaCha8 generator, so the same seed gives the same
//! centres. [`KMeans::new`] starts with k-means‖ from K = 256 on
//! ([`KMeansInit::default_for`]). When fewer than K distinct candidates come out (tiny or highly duplicated
//! data), the rest are distinct rows drawn uniformly, as Spark MLlib does.
//!
//! **Many rows per cluster.** Past `max(10 000, 256·K)` rows, k-means‖ runs on a uniform
//! sample of that many (gathered on the device), as it does for rows on the host below.
//!
//! **Rows on the host** (streamed or partitioned): random and given starts are as for
//! resident rows (the same rows for the same seed); k-means++ and k-means‖ run on the device
//! over a uniform sample of `max(10 000, 256·K)` rows (all rows when they fit in one piece),
//! drawn in one pass; FAISS trains on at most 256 rows per centroid for the same reason.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::workspace::Workspace;
use super::{KMeans, KMeansInit, MiniBatchKMeans};
use crate::data::Matrix;
use crate::error::{Error, Result};
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::{Gpu, GpuMatrix, GpuVector};
use crate::kernels::assign::{self, AssignScratch, Assignment};
use crate::kernels::centroids::seeding::{self, SeedingRows, StepBuffers};
use crate::kernels::{primitives::reduce, primitives::rows};
use crate::source::RowSource;

/// Rows per cluster of the k-means++ sample of rows on the host, and its least size.
const PLUS_PLUS_SAMPLE_PER_CLUSTER: usize = 256;
const PLUS_PLUS_SAMPLE_MIN: usize = 10_000;

/// Rows of the k-means++ sample: `max(10 000, 256·K)`, at most N and what one piece holds,
/// at least K.
pub(crate) fn plus_plus_sample_size(n: usize, capacity: usize, k: usize) -> usize {
    n.min(capacity)
        .min(PLUS_PLUS_SAMPLE_MIN.max(PLUS_PLUS_SAMPLE_PER_CLUSTER * k))
        .max(k)
}

/// `m` distinct rows of `n` drawn uniformly, in row order (one pass over a source reads them).
pub(crate) fn uniform_sample(rng: &mut ChaCha8Rng, n: usize, m: usize) -> Vec<usize> {
    let mut idx = rand::seq::index::sample(rng, n, m).into_vec();
    idx.sort_unstable();
    idx
}

/// Given centroids as f32.
fn given(c: &[f64]) -> Vec<f32> {
    c.iter().map(|&v| v as f32).collect()
}

/// Initial centroids of one restart of a fit on rows that are all on the device.
pub(super) fn resident_start(
    ws: &Workspace<'_>,
    params: &KMeans,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f32>> {
    match &params.init {
        KMeansInit::Centroids(c) => Ok(given(c)),
        KMeansInit::Random => {
            let mut idx = random_rows(rng, ws.x.n_rows(), ws.k, ws.host_weights())?;
            // Sampling order is random; the rows themselves are what matters.
            idx.truncate(ws.k);
            rows::read_rows(ws.gpu, &ws.x, &idx)
        }
        KMeansInit::KMeansPlusPlus => {
            let rows = (ws.k, ws.host_weights());
            Ok(kmeans_plus_plus(ws.gpu, &ws.x, rows, rng, params.n_local_trials())?.0)
        }
        KMeansInit::KMeansParallel { .. } => {
            let (gpu, x, k) = (ws.gpu, &ws.x, ws.k);
            let (n, d) = (x.n_rows(), x.n_features());
            // The sample is one binding; its size must not depend on a forced chunking.
            let binding = crate::gpu::STANDARD_CHUNK_BYTES.min(gpu.binding_byte_limit());
            let capacity = (binding / (4 * d as u64)).max(1) as usize;
            let m = plus_plus_sample_size(n, capacity, k);
            if m >= n {
                return device_seeds(gpu, x, k, ws.host_weights(), &params.init, rng);
            }
            // Many rows per cluster: k-means‖ on a uniform sample of max(10 000, 256·K) rows
            // (the rule of rows on the host; FAISS trains on 256 rows per centroid), gathered
            // on the device. Its rounds are passes over the rows against the new candidates,
            // N·ℓ·D work each: over 20M rows at K = 1000 that is most of a fit.
            let idx = uniform_sample(rng, n, m);
            let sample = DeviceBuffer::zeroed(gpu, "k-means|| sample", m * d);
            let mut batch = Batch::new(gpu, "k-means|| sample");
            rows::gather_rows(gpu, &mut batch, x, &idx, &sample)?;
            batch.finish()?;
            let weights = ws
                .host_weights()
                .map(|w| idx.iter().map(|&i| w[i]).collect::<Vec<_>>());
            let sample = crate::gpu::stream::view(&sample, m, d);
            device_seeds(gpu, &sample, k, weights.as_deref(), &params.init, rng)
        }
    }
}

/// Initial centroids of one restart of a fit on `n` x `d` rows that stay on the host, read
/// with `gather` (module docs): `capacity` bounds the k-means++ sample (what one streamed
/// piece holds).
pub(super) fn host_start(
    gpu: &Gpu,
    (n, d): (usize, usize),
    gather: impl Fn(&[usize]) -> Result<Vec<f32>>,
    weights: Option<&[f32]>,
    (params, capacity): (&KMeans, usize),
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f32>> {
    match &params.init {
        KMeansInit::Centroids(c) => Ok(given(c)),
        KMeansInit::Random => gather(&random_rows(rng, n, params.k, weights)?),
        KMeansInit::KMeansPlusPlus | KMeansInit::KMeansParallel { .. } => {
            // A uniform sample; its rows keep their weights, so D² sampling stays ∝ w·D².
            let idx = uniform_sample(rng, n, plus_plus_sample_size(n, capacity, params.k));
            let rows = gather(&idx)?;
            let sample_weights = weights.map(|w| idx.iter().map(|&i| w[i]).collect::<Vec<_>>());
            let sample = GpuMatrix::upload(gpu, &Matrix::new(&rows, d)?)?;
            device_seeds(
                gpu,
                &sample,
                params.k,
                sample_weights.as_deref(),
                &params.init,
                rng,
            )
        }
    }
}

/// Initial centroids of one mini-batch candidate: random rows, given centroids, or
/// k-means++ / k-means‖ on `init_size` rows of `source` drawn with replacement (scikit-learn's
/// `init_size` sample).
pub(super) fn sample_start(
    gpu: &Gpu,
    source: &(impl RowSource + ?Sized),
    weights: Option<&[f32]>,
    params: &MiniBatchKMeans,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f32>> {
    let (n, d) = source.shape();
    match &params.init {
        KMeansInit::Centroids(c) => Ok(given(c)),
        KMeansInit::Random => source.gather(&random_rows(rng, n, params.k, weights)?),
        KMeansInit::KMeansPlusPlus | KMeansInit::KMeansParallel { .. } => {
            let m = params.sample_size(n);
            let idx: Vec<usize> = (0..m).map(|_| rng.random_range(0..n)).collect();
            let rows = source.gather(&idx)?;
            let w: Option<Vec<f32>> = weights.map(|w| idx.iter().map(|&i| w[i]).collect());
            let sample = GpuMatrix::upload(gpu, &Matrix::new(&rows, d)?)?;
            device_seeds(gpu, &sample, params.k, w.as_deref(), &params.init, rng)
        }
    }
}

/// Initial centroids from the first batch of a mini-batch fit fed batch by batch: random
/// rows of it, given centroids, or k-means++ / k-means‖ on all of it.
pub(super) fn batch_start(
    gpu: &Gpu,
    batch: &Matrix<'_>,
    weights: Option<&[f32]>,
    (k, init): (usize, &KMeansInit),
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f32>> {
    match init {
        KMeansInit::Centroids(c) => Ok(given(c)),
        KMeansInit::Random => batch.gather(&random_rows(rng, batch.n_rows(), k, weights)?),
        KMeansInit::KMeansPlusPlus | KMeansInit::KMeansParallel { .. } => {
            let rows = GpuMatrix::upload(gpu, batch)?;
            device_seeds(gpu, &rows, k, weights, init, rng)
        }
    }
}

/// The seeds `init` asks for on device rows `x` (K x D, f32): k-means‖ or greedy k-means++.
pub(super) fn device_seeds(
    gpu: &Gpu,
    x: &GpuMatrix,
    k: usize,
    weights: Option<&[f32]>,
    init: &KMeansInit,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f32>> {
    match *init {
        KMeansInit::KMeansParallel {
            oversampling,
            rounds,
        } => kmeans_parallel(gpu, x, (k, weights), (oversampling, rounds), rng),
        _ => weighted_plus_plus_seeds(gpu, x, k, weights, rng),
    }
}

/// Greedy k-means++ seeds (K x D, f32) of device rows carrying optional sample weights (one
/// per row of `x`), drawn with `rng`: the seeding of [`KMeans::fit`] on its own, for k-means‖
/// candidates, samples of streamed rows and the Gaussian-mixture initialisation.
pub(crate) fn weighted_plus_plus_seeds(
    gpu: &Gpu,
    x: &GpuMatrix,
    k: usize,
    weights: Option<&[f32]>,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f32>> {
    Ok(kmeans_plus_plus(gpu, x, (k, weights), rng, KMeans::new(k).n_local_trials())?.0)
}

/// Steps of the greedy k-means++ recorded into one submission: enough to hide the
/// submission's cost, few enough that a long seeding is not one giant command buffer.
const PLUS_PLUS_STEPS_PER_SUBMISSION: usize = 32;

/// Greedy k-means++ seeding on the device rows `x` carrying optional `weights` (one per
/// row): the seeds (K x D) and the rows they are.
///
/// The host draws the first row and every step's `n_trials` uniform numbers up front, in
/// the reference's order, uploads them, and records all K − 1 steps (D² sampling, the
/// candidates, their potentials, the choice, the D² update: `shaders/centroids/seeding.wgsl`) with no
/// readback until the chosen rows come back at the end.
pub(super) fn kmeans_plus_plus(
    gpu: &Gpu,
    x: &GpuMatrix,
    (k, weights): (usize, Option<&[f32]>),
    rng: &mut ChaCha8Rng,
    n_trials: usize,
) -> Result<(Vec<f32>, Vec<usize>)> {
    let (n, d) = (x.n_rows(), x.n_features());
    let n_trials = n_trials.max(1);
    let first_row = match drawing_weights(weights) {
        None => rng.random_range(0..n),
        Some(w) => weighted_pick(rng, w),
    };
    // The draws of every step, in the order the reference consumes them.
    let draws: Vec<f32> = (0..(k.max(1) - 1) * n_trials)
        .map(|_| rng.random::<f64>() as f32)
        .collect();
    let offsets: Vec<usize> = x
        .chunks()
        .iter()
        .scan(0, |acc, c| {
            let o = *acc;
            *acc += seeding::blocks_in(c);
            Some(o)
        })
        .collect();
    let n_blocks: usize = x.chunks().iter().map(seeding::blocks_in).sum();
    let d2 = GpuVector::<f32>::zeroed(gpu, x, "k-means++ D²");
    let device_weights = weights.map(|w| {
        let device = GpuVector::zeroed(gpu, x, "k-means++ sample weights");
        for (c, buf) in x.chunks().iter().zip(&device.chunks) {
            buf.write(gpu, &w[c.row_start..c.row_start + c.n_rows]);
        }
        device
    });
    let draws_buffer = DeviceBuffer::zeroed(gpu, "k-means++ draws", draws.len().max(1));
    draws_buffer.write(gpu, &draws);
    let chosen = DeviceBuffer::zeroed(gpu, "k-means++ chosen rows", k.max(1));
    chosen.write(gpu, &[first_row as u32]);
    let buffers = StepBuffers {
        candidates: &DeviceBuffer::zeroed(gpu, "k-means++ candidates", n_trials * d),
        trial_sums: &DeviceBuffer::zeroed(gpu, "k-means++ trial sums", n_blocks * n_trials),
        potentials: &DeviceBuffer::zeroed(gpu, "k-means++ trial potentials", n_trials),
        d2_sums: &DeviceBuffer::zeroed(gpu, "k-means++ D² block sums", n_blocks),
        samples: &DeviceBuffer::zeroed(gpu, "k-means++ samples", 3 * n_trials),
        chosen: &chosen,
        draws: &draws_buffer,
        n_trials,
    };
    let seeding_rows = |i: usize, chunk| SeedingRows {
        chunk,
        d,
        min_sq_dist: &d2.chunks[i],
        weights: device_weights.as_ref().map(|w| &w.chunks[i]),
        block_offset: offsets[i],
    };
    let update = |batch: &mut Batch<'_>, step: usize, first: bool| -> Result<()> {
        for (i, chunk) in x.chunks().iter().enumerate() {
            let rows = seeding_rows(i, chunk);
            seeding::kmeanspp_update_min_distance(gpu, batch, &rows, &buffers, (step, first))?;
        }
        Ok(())
    };
    let step = |batch: &mut Batch<'_>, step: usize| -> Result<()> {
        seeding::kmeanspp_sample(batch, &buffers, step - 1, (n_blocks, n))?;
        for (i, chunk) in x.chunks().iter().enumerate() {
            let rows = seeding_rows(i, chunk);
            seeding::kmeanspp_gather_candidates(gpu, batch, &rows, &buffers)?;
        }
        for (i, chunk) in x.chunks().iter().enumerate() {
            let rows = seeding_rows(i, chunk);
            seeding::kmeanspp_trial_potentials(gpu, batch, &rows, &buffers)?;
        }
        reduce::sum_partial_columns(
            gpu,
            batch,
            buffers.trial_sums,
            n_blocks,
            n_trials,
            buffers.potentials,
        )?;
        update(batch, step, false)
    };

    gpu.scoped("k-means++ seeding", || {
        let mut batch = Batch::new(gpu, "k-means++ first centre");
        rows::gather_rows(gpu, &mut batch, x, &[first_row], buffers.candidates)?;
        update(&mut batch, 0, true)?;
        batch.finish()?;
        let steps: Vec<usize> = (1..k).collect();
        for group in steps.chunks(PLUS_PLUS_STEPS_PER_SUBMISSION) {
            let mut batch = Batch::new(gpu, "k-means++ steps");
            for &s in group {
                step(&mut batch, s)?;
            }
            batch.finish()?;
        }
        let mut batch = Batch::new(gpu, "k-means++ chosen rows");
        let h = batch.read_values(&chosen, 0, k);
        let rows: Vec<usize> = batch
            .finish()?
            .u32s(h)
            .iter()
            .map(|&r| r as usize)
            .collect();
        Ok((rows::read_rows(gpu, x, &rows)?, rows))
    })
}

/// The nearest of the `m` centres (m x D, row-major) for every row of `x`: its index and
/// squared distance, from the assignment kernel Lloyd uses (no centroid statistics).
fn nearest_centres(gpu: &Gpu, x: &GpuMatrix, centres: &[f32]) -> Result<(Vec<u32>, Vec<f32>)> {
    let d = x.n_features();
    let m = centres.len() / d;
    gpu.scoped("k-means|| distances", || {
        let on_device = DeviceBuffer::zeroed(gpu, "k-means|| centres", centres.len());
        on_device.write(gpu, centres);
        let labels = GpuVector::<u32>::zeroed(gpu, x, "k-means|| nearest");
        let dist = GpuVector::<f32>::zeroed(gpu, x, "k-means|| D²");
        let changed = DeviceBuffer::zeroed(gpu, "changed labels", 1);
        let mut batch = Batch::new(gpu, "k-means|| distances");
        let mut handles = Vec::new();
        for (i, chunk) in x.chunks().iter().enumerate() {
            let to = Assignment {
                centroids: &on_device,
                k: m,
                labels: &labels.chunks[i],
                min_sq_dist: &dist.chunks[i],
                changed: &changed,
            };
            let scratch = AssignScratch::new(gpu, chunk.n_rows, d, m);
            assign::assign_nearest_centroid_with(gpu, &mut batch, chunk, d, &to, &scratch)?;
            handles.push((
                batch.read_values(&labels.chunks[i], 0, chunk.n_rows),
                batch.read_values(&dist.chunks[i], 0, chunk.n_rows),
            ));
        }
        let back = batch.finish()?;
        Ok((
            handles.iter().flat_map(|&(l, _)| back.u32s(l)).collect(),
            handles.iter().flat_map(|&(_, v)| back.f32s(v)).collect(),
        ))
    })
}

/// Every row's nearest k-means‖ candidate so far and its squared distance, measured round
/// by round against each round's new candidates only (N·C·D work for C candidates in all):
/// the state k-means‖ keeps per row, on one device and on each remote partition.
pub(super) struct RunningNearest {
    /// Per row: the index of its nearest candidate, in the order the candidates came.
    pub(super) nearest: Vec<u32>,
    /// Per row: its squared distance to that candidate.
    pub(super) d2: Vec<f32>,
    /// Candidates measured so far.
    pub(super) candidates: usize,
}

impl RunningNearest {
    /// The rows of `x` measured against the first candidates `centres` (m x D).
    pub(super) fn new(gpu: &Gpu, x: &GpuMatrix, centres: &[f32]) -> Result<Self> {
        let (nearest, d2) = nearest_centres(gpu, x, centres)?;
        Ok(Self {
            nearest,
            d2,
            candidates: centres.len() / x.n_features(),
        })
    }

    /// Folds in the distances to the next candidates `centres` (numbered after those
    /// measured); an equal distance keeps the earlier candidate, as one assignment over all
    /// of them would.
    pub(super) fn add(&mut self, gpu: &Gpu, x: &GpuMatrix, centres: &[f32]) -> Result<()> {
        let (new_nearest, new_d2) = nearest_centres(gpu, x, centres)?;
        let first = self.candidates as u32;
        for (i, (&c, &v)) in new_nearest.iter().zip(&new_d2).enumerate() {
            if v < self.d2[i] {
                self.d2[i] = v;
                self.nearest[i] = first + c;
            }
        }
        self.candidates += centres.len() / x.n_features();
        Ok(())
    }

    /// Each candidate's weight: the summed `weight` of the rows nearest to it.
    pub(super) fn weights(&self, weight: impl Fn(usize) -> f64) -> Vec<f64> {
        let mut sums = vec![0f64; self.candidates];
        for (i, &c) in self.nearest.iter().enumerate() {
            sums[c as usize] += weight(i);
        }
        sums
    }
}

/// k-means‖ on the device rows `x` (see the module docs): K seeds of rows carrying optional
/// weights, from `rounds` rounds of ℓ = `oversampling`·K expected candidates.
///
/// Each round measures the rows against the round's new candidates only
/// ([`RunningNearest`]), and the candidates' weights (the weight of the rows nearest to each)
/// fall out of the last round without another pass.
fn kmeans_parallel(
    gpu: &Gpu,
    x: &GpuMatrix,
    (k, weights): (usize, Option<&[f32]>),
    (oversampling, rounds): (f64, usize),
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f32>> {
    let (n, d) = (x.n_rows(), x.n_features());
    let weight = |i: usize| weights.map_or(1.0, |w| w[i] as f64);
    let first = random_rows(rng, n, 1, weights)?[0];
    let mut chosen = vec![first];
    let mut in_c = vec![false; n];
    in_c[first] = true;
    let mut centres = rows::read_rows(gpu, x, &chosen)?;
    let mut running = RunningNearest::new(gpu, x, &centres)?;
    let ell = oversampling * k as f64;
    for _ in 0..rounds {
        let d2 = &running.d2;
        let phi: f64 = (0..n).map(|i| weight(i) * d2[i].max(0.0) as f64).sum();
        if phi <= 0.0 {
            break; // every row sits on a candidate
        }
        let mut picked = Vec::new();
        for (i, &dist) in d2.iter().enumerate() {
            let p = (ell * weight(i) * dist.max(0.0) as f64 / phi).min(1.0);
            // One draw per row, in row order, so the stream of draws is fixed by the seed.
            if rng.random::<f64>() < p && !in_c[i] {
                picked.push(i);
            }
        }
        if picked.is_empty() {
            continue;
        }
        for &i in &picked {
            in_c[i] = true;
        }
        let new_centres = rows::read_rows(gpu, x, &picked)?;
        running.add(gpu, x, &new_centres)?;
        centres.extend(new_centres);
        chosen.extend(picked);
    }
    if chosen.len() < k {
        // Top up with distinct rows not chosen yet.
        let rest: Vec<usize> = (0..n).filter(|&i| !in_c[i]).collect();
        let extra = rand::seq::index::sample(rng, rest.len(), k - chosen.len());
        let picked: Vec<usize> = extra.iter().map(|j| rest[j]).collect();
        centres.extend(rows::read_rows(gpu, x, &picked)?);
        chosen.extend(picked);
    }
    if chosen.len() == k {
        return Ok(centres);
    }
    // Weight every candidate by the rows nearest to it, then seed among them on the device.
    let candidate_weights: Vec<f32> = running.weights(weight).iter().map(|&w| w as f32).collect();
    let candidates = GpuMatrix::upload(gpu, &Matrix::new(&centres, d)?)?;
    weighted_plus_plus_seeds(gpu, &candidates, k, Some(&candidate_weights), rng)
}

/// K distinct rows drawn uniformly, or with probability ∝ weight (without replacement,
/// as scikit-learn's random init).
pub(super) fn random_rows(
    rng: &mut ChaCha8Rng,
    n: usize,
    k: usize,
    weights: Option<&[f32]>,
) -> Result<Vec<usize>> {
    let too_few = || {
        Error::invalid(
            "sample_weight",
            format!("random init needs k = {k} rows of positive weight"),
        )
    };
    match drawing_weights(weights) {
        None => Ok(rand::seq::index::sample(rng, n, k).into_vec()),
        Some(w) if w.iter().filter(|&&v| v > 0.0).count() < k => Err(too_few()),
        Some(w) => rand::seq::index::sample_weighted(rng, n, |i| w[i] as f64, k)
            .map(|s| s.into_vec())
            .ok()
            .filter(|idx| idx.len() == k)
            .ok_or_else(too_few),
    }
}

/// The weights that change what is drawn: `None` when every row weighs the same positive
/// amount. Equal weights
/// (all 1, say) then draw exactly the rows and consume exactly the random numbers that no
/// weights do, so they give the same model, labels numbered alike (scikit-learn's
/// `test_unit_weights_vs_no_weights`); the draws' distribution is the same either way.
fn drawing_weights(weights: Option<&[f32]>) -> Option<&[f32]> {
    weights.filter(|w| {
        w.split_first()
            .is_some_and(|(first, rest)| *first <= 0.0 || rest.iter().any(|v| v != first))
    })
}

/// A row drawn with probability ∝ its weight (scikit-learn's first k-means++ centre).
fn weighted_pick(rng: &mut ChaCha8Rng, weights: &[f32]) -> usize {
    let total: f64 = weights.iter().map(|&w| w as f64).sum();
    let mut u = rng.random::<f64>() * total;
    for (i, &w) in weights.iter().enumerate() {
        if u < w as f64 {
            return i;
        }
        u -= w as f64;
    }
    weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
}
