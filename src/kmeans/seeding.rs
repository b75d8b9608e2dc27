//! Every K-Means start: greedy k-means++ on the device, k-means‖, random rows and given
//! centroids, for rows on the device and for rows that stay on the host (a streamed source,
//! partitions on several devices, mini-batch samples).
//!
//! **Greedy k-means++** (Arthur & Vassilvitskii 2007, scikit-learn's variant): each new centre
//! is the best of `2 + ln K` candidates drawn with probability ∝ w·D(x)², D the distance to
//! the nearest centre so far, "best" meaning the smallest resulting potential
//! Σᵢ wᵢ·min(D(xᵢ)², ‖xᵢ − c‖²). D² and the candidates' potentials are computed on the device
//! (`shaders/kmeans_pp.wgsl`); the host draws the samples from per-block sums.
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
//! uses (one pass per round plus one for the weights: rounds + 1 passes over the data, where
//! k-means++ makes K); the N distances are read back once per round and the Bernoulli draws
//! made on the host in row order from the fit's ChaCha8 generator, so the same seed gives the
//! same centres. When fewer than K distinct candidates come out (tiny or highly duplicated
//! data), the rest are distinct rows drawn uniformly, as Spark MLlib does.
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
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::kmeans_pp::{self, SeedingRows};
use crate::kernels::{reduce, rows};
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
        KMeansInit::KMeansPlusPlus => Ok(kmeans_plus_plus(ws, rng, params.n_local_trials())?.0),
        KMeansInit::KMeansParallel { .. } => {
            device_seeds(ws.gpu, &ws.x, ws.k, ws.host_weights(), &params.init, rng)
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
    let ws = Workspace::weighted(gpu, x, k, weights)?;
    Ok(kmeans_plus_plus(&ws, rng, KMeans::new(k).n_local_trials())?.0)
}

/// Greedy k-means++ seeding on the device: the seeds (K x D) and the rows they are.
pub(super) fn kmeans_plus_plus(
    ws: &Workspace<'_>,
    rng: &mut ChaCha8Rng,
    n_trials: usize,
) -> Result<(Vec<f32>, Vec<usize>)> {
    let gpu = ws.gpu;
    let x = &ws.x;
    let (n, d) = (x.n_rows(), x.n_features());
    let offsets: Vec<usize> = x
        .chunks()
        .iter()
        .scan(0, |acc, c| {
            let o = *acc;
            *acc += kmeans_pp::blocks_in(c);
            Some(o)
        })
        .collect();
    let n_blocks: usize = x.chunks().iter().map(kmeans_pp::blocks_in).sum();
    let block_sums = DeviceBuffer::zeroed(gpu, "k-means++ block sums", n_blocks * n_trials);
    let totals = DeviceBuffer::zeroed(gpu, "k-means++ trial potentials", n_trials);
    let centre = DeviceBuffer::zeroed(gpu, "k-means++ centre", d);
    let candidates = DeviceBuffer::zeroed(gpu, "k-means++ candidates", n_trials * d);
    let seeding_rows = |i: usize, chunk| SeedingRows {
        chunk,
        d,
        min_sq_dist: &ws.min_sq_dist.chunks[i],
        weights: ws.chunk_weights(i),
        block_sums: &block_sums,
        block_offset: offsets[i],
    };

    // D² ← ‖x − centre‖² (or the min with it); returns the block sums of D².
    let update = |first: bool, source: &dyn Fn(&mut Batch<'_>) -> Result<()>| {
        gpu.scoped("k-means++ distance update", || {
            let mut batch = Batch::new(gpu, "k-means++ update");
            source(&mut batch)?;
            for (i, chunk) in ws.chunks() {
                let rows = seeding_rows(i, chunk);
                kmeans_pp::kmeanspp_update_min_distance(gpu, &mut batch, &rows, &centre, first)?;
            }
            let h = batch.read_values(&block_sums, 0, n_blocks);
            Ok(batch.finish()?.f32s(h))
        })
    };

    let first_row = match drawing_weights(ws.host_weights()) {
        None => rng.random_range(0..n),
        Some(w) => weighted_pick(rng, w),
    };
    let mut chosen = vec![first_row];
    let mut sums = update(true, &|b| {
        rows::gather_rows(gpu, b, x, &[first_row], &centre)
    })?;
    while chosen.len() < ws.k {
        let picks = sample_d2(ws, rng, &sums, &offsets, n_trials)?;
        let potentials = gpu.scoped("k-means++ trials", || {
            let mut batch = Batch::new(gpu, "k-means++ trials");
            rows::gather_rows(gpu, &mut batch, x, &picks, &candidates)?;
            batch.clear_values(&block_sums);
            for (i, chunk) in ws.chunks() {
                let rows = seeding_rows(i, chunk);
                kmeans_pp::kmeanspp_trial_potentials(
                    gpu,
                    &mut batch,
                    &rows,
                    &candidates,
                    picks.len(),
                )?;
            }
            reduce::sum_partial_columns(
                gpu,
                &mut batch,
                &block_sums,
                n_blocks,
                picks.len(),
                &totals,
            )?;
            let h = batch.read_values(&totals, 0, picks.len());
            Ok(batch.finish()?.f32s(h))
        })?;
        // Ties go to the earliest candidate, as in the reference.
        let best = (0..picks.len())
            .min_by(|&a, &b| potentials[a].total_cmp(&potentials[b]).then(a.cmp(&b)))
            .unwrap_or(0);
        chosen.push(picks[best]);
        sums = update(false, &|b| {
            b.copy_values(&candidates, best * d, &centre, 0, d);
            Ok(())
        })?;
    }
    Ok((rows::read_rows(gpu, x, &chosen)?, chosen))
}

/// Draws `n_trials` rows with probability ∝ D², from the per-block sums of D² and the D²
/// values of the blocks drawn (read back once for all draws).
fn sample_d2(
    ws: &Workspace<'_>,
    rng: &mut ChaCha8Rng,
    block_sums: &[f32],
    offsets: &[usize],
    n_trials: usize,
) -> Result<Vec<usize>> {
    let n = ws.x.n_rows();
    let total: f64 = block_sums.iter().map(|&v| v as f64).sum();
    if total <= 0.0 {
        // Every row sits on a centre already: any row is as good as another.
        return Ok((0..n_trials).map(|_| rng.random_range(0..n)).collect());
    }
    // Global block b covers rows [row_of_block(b), +256) of the chunk it lies in.
    let block_start = |b: usize| -> (usize, usize) {
        let i = offsets.partition_point(|&o| o <= b) - 1;
        let local = (b - offsets[i]) * kmeans_pp::KMEANSPP_BLOCK_ROWS;
        (i, local)
    };
    let mut draws = Vec::with_capacity(n_trials);
    for _ in 0..n_trials {
        let mut u = rng.random::<f64>() * total;
        let mut block = block_sums.len() - 1;
        for (b, &s) in block_sums.iter().enumerate() {
            if u < s as f64 {
                block = b;
                break;
            }
            u -= s as f64;
        }
        // Rounding can leave u past the last positive block: use the last positive one.
        if block_sums[block] <= 0.0 {
            block = block_sums.iter().rposition(|&s| s > 0.0).unwrap_or(0);
            u = block_sums[block] as f64;
        }
        draws.push((block, u));
    }
    let gpu = ws.gpu;
    let values = gpu.scoped("reading D² blocks", || {
        let mut batch = Batch::new(gpu, "k-means++ sampling");
        let handles: Vec<_> = draws
            .iter()
            .map(|&(b, _)| {
                let (i, local) = block_start(b);
                let rows_here =
                    (ws.x.chunks()[i].n_rows - local).min(kmeans_pp::KMEANSPP_BLOCK_ROWS);
                batch.read_values(&ws.min_sq_dist.chunks[i], local, rows_here)
            })
            .collect();
        let back = batch.finish()?;
        Ok(handles
            .into_iter()
            .map(|h| back.f32s(h))
            .collect::<Vec<_>>())
    })?;
    Ok(draws
        .iter()
        .zip(values)
        .map(|(&(b, mut u), mut vals)| {
            let (i, local) = block_start(b);
            let first = ws.x.chunks()[i].row_start + local;
            // The block sums are of w·D²: weigh the values the same way.
            if let Some(w) = ws.host_weights() {
                for (r, v) in vals.iter_mut().enumerate() {
                    *v *= w[first + r];
                }
            }
            let mut pick = vals.iter().rposition(|&v| v > 0.0).unwrap_or(0);
            for (r, &v) in vals.iter().enumerate() {
                if u < v as f64 {
                    pick = r;
                    break;
                }
                u -= v as f64;
            }
            first + pick
        })
        .collect())
}

/// k-means‖ on the device rows `x` (see the module docs): K seeds of rows carrying optional
/// weights, from `rounds` rounds of ℓ = `oversampling`·K expected candidates.
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
    let ell = oversampling * k as f64;
    for _ in 0..rounds {
        let ws = Workspace::weighted(gpu, x, chosen.len(), weights)?;
        let d2 = ws.step(&centres, chosen.len(), true)?.min_sq_dist;
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
        centres.extend(rows::read_rows(gpu, x, &picked)?);
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
    let ws = Workspace::weighted(gpu, x, chosen.len(), weights)?;
    let candidate_weights = ws.step(&centres, chosen.len(), false)?.weight_sums;
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
