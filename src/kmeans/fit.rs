//! The device side of a K-Means fit: the buffers of one data matrix, one Lloyd step
//! (assignment and per-cluster statistics in one submission), greedy k-means++ seeding with
//! D² sampling from block sums, empty-cluster repair and the restarts (algorithm in the
//! parent module).

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::lloyd::LloydData;
use super::{KMeans, KMeansInit, KMeansStats};
use crate::error::{Error, Result};
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::{Gpu, GpuMatrix, GpuVector};
use crate::kernels::{assign, centroid_update, kmeans_pp, reduce, rows};

/// Per-iteration statistics read back from the device.
pub(super) struct Stats {
    /// K x D sums of (x − old centroid) per cluster.
    pub(super) deviation_sums: Vec<f32>,
    pub(super) counts: Vec<u32>,
    pub(super) sq_dist: Vec<f32>,
    /// Σ w per cluster (the counts' values when unweighted).
    pub(super) weight_sums: Vec<f32>,
    pub(super) changed: u32,
    /// The rows' labels and squared distances, when asked for (streamed pieces).
    pub(super) labels: Vec<u32>,
    pub(super) min_sq_dist: Vec<f32>,
}

/// Device buffers of one fit, reused by every restart and iteration.
pub(super) struct Workspace<'a> {
    gpu: &'a Gpu,
    /// The rows the kernels run on: the whole data, or the streamed piece of the moment.
    x: GpuMatrix,
    k: usize,
    labels: GpuVector<u32>,
    min_sq_dist: GpuVector<f32>,
    /// Per-row sample weights on the device (chunked like the rows).
    weights: Option<GpuVector<f32>>,
    /// The weights of every row on the host (none for batches weighted by the caller).
    host_weights: Option<&'a [f32]>,
    changed: wgpu::Buffer,
    centroids: wgpu::Buffer,
    block_rows: usize,
    /// First global block of each chunk, and the total.
    block_offsets: Vec<usize>,
    n_blocks: usize,
    partial_sums: wgpu::Buffer,
    partial_counts: wgpu::Buffer,
    partial_sq_dist: wgpu::Buffer,
    sums: wgpu::Buffer,
    counts: wgpu::Buffer,
    sq_dist: wgpu::Buffer,
}

/// Bytes the per-block partial sums may take: large enough for good parallelism, small
/// enough not to matter next to the data.
const PARTIALS_TARGET_BYTES: u64 = 64 << 20;

impl<'a> Workspace<'a> {
    pub(super) fn new(gpu: &'a Gpu, x: &GpuMatrix, k: usize) -> Result<Self> {
        Self::weighted(gpu, x, k, None)
    }

    /// A workspace whose rows carry `weights` (one per row of `x`, uploaded here; for a
    /// streamed piece, the weights of the whole source, each piece's written with
    /// [`Workspace::set_piece_weights`]).
    pub(super) fn weighted(
        gpu: &'a Gpu,
        x: &GpuMatrix,
        k: usize,
        weights: Option<&'a [f32]>,
    ) -> Result<Self> {
        let n = x.n_rows() as u64;
        let kd = (k * x.n_features()) as u64;
        let limit = gpu.binding_byte_limit().min(PARTIALS_TARGET_BYTES);
        // Rows per block: at least 256 (so a workgroup has work), more when K x D is large,
        // so that all partials fit in one binding of at most 64 MiB.
        let block_rows = (256u64).max((n * kd * 4).div_ceil(limit.max(1)) + 1) as usize;
        let mut block_offsets = Vec::new();
        let mut n_blocks = 0;
        for c in x.chunks() {
            block_offsets.push(n_blocks);
            n_blocks += c.n_rows.div_ceil(block_rows);
        }
        let partial_bytes = n_blocks as u64 * kd * 4;
        if partial_bytes > gpu.binding_byte_limit() {
            return Err(Error::DeviceLimit {
                what: format!("per-block statistics for k = {k} ({partial_bytes} bytes)"),
                requested: partial_bytes,
                limit_name: "max_storage_buffer_binding_size",
                limit: gpu.binding_byte_limit(),
            });
        }
        gpu.scoped("allocating the K-Means workspace", || {
            Ok(Self {
                gpu,
                x: x.clone(),
                k,
                labels: GpuVector::zeroed(gpu, x, "labels"),
                min_sq_dist: GpuVector::zeroed(gpu, x, "min squared distances"),
                weights: weights.map(|w| {
                    let device = GpuVector::zeroed(gpu, x, "sample weights");
                    for (c, buf) in x.chunks().iter().zip(&device.chunks) {
                        let mine = &w[c.row_start..(c.row_start + c.n_rows).min(w.len())];
                        gpu.queue.write_buffer(buf, 0, bytemuck::cast_slice(mine));
                    }
                    device
                }),
                host_weights: weights,
                changed: gpu.buffer_zeroed("changed labels", 4),
                centroids: gpu.buffer_zeroed("centroids", kd * 4),
                block_rows,
                block_offsets,
                n_blocks,
                partial_sums: gpu.buffer_zeroed("partial sums", partial_bytes),
                partial_counts: gpu.buffer_zeroed("partial counts", n_blocks as u64 * k as u64 * 4),
                partial_sq_dist: gpu.buffer_zeroed(
                    "partial squared distances and weights",
                    n_blocks as u64 * k as u64 * 8,
                ),
                sums: gpu.buffer_zeroed("cluster sums", kd * 4),
                counts: gpu.buffer_zeroed("cluster counts", k as u64 * 4),
                sq_dist: gpu.buffer_zeroed("cluster squared distances and weights", k as u64 * 8),
            })
        })
    }

    fn chunks(&self) -> impl Iterator<Item = (usize, &Chunk)> {
        self.x.chunks().iter().enumerate()
    }

    /// Writes the labels the rows of the current piece had, so that the assignment counts
    /// the ones that change.
    pub(super) fn set_previous_labels(&self, labels: &[u32]) {
        self.gpu
            .queue
            .write_buffer(&self.labels.chunks[0], 0, bytemuck::cast_slice(labels));
    }

    /// Writes the weights of the current piece's rows (streamed fits).
    pub(super) fn set_piece_weights(&self, first_row: usize) {
        if let Some(host) = self.host_weights {
            self.set_batch_weights(&host[first_row..first_row + self.x.n_rows()]);
        }
    }

    /// Makes the rows weighted, by weights each batch sets ([`Workspace::set_batch_weights`]).
    pub(super) fn weigh_batches(&mut self) {
        self.weights = Some(GpuVector::zeroed(self.gpu, &self.x, "batch weights"));
    }

    /// Writes the weights of the current piece's rows (one chunk), when they are weighted.
    pub(super) fn set_batch_weights(&self, weights: &[f32]) {
        if let Some(device) = &self.weights {
            self.gpu
                .queue
                .write_buffer(&device.chunks[0], 0, bytemuck::cast_slice(weights));
        }
    }

    /// The host sample weights, when the rows have any.
    pub(super) fn host_weights(&self) -> Option<&'a [f32]> {
        self.host_weights
    }

    /// The device weights of chunk `i`.
    fn chunk_weights(&self, i: usize) -> Option<&wgpu::Buffer> {
        self.weights.as_ref().map(|w| &w.chunks[i])
    }

    /// Points the kernels at a streamed piece: one chunk of at most the rows the workspace
    /// was made for (its per-row buffers and partials are sized for those).
    pub(super) fn use_piece(&mut self, piece: &GpuMatrix) {
        debug_assert!(piece.n_chunks() == 1 && piece.n_rows() <= self.labels.len());
        self.x = piece.clone();
    }

    /// One assignment against the first `k` rows of `centroids` and the statistics of the
    /// resulting clusters.
    /// With `read_rows`, the labels and distances of the rows come back too (one chunk).
    pub(super) fn step(&self, centroids: &[f32], k: usize, read_rows: bool) -> Result<Stats> {
        let gpu = self.gpu;
        let d = self.x.n_features();
        gpu.scoped("K-Means iteration", || {
            gpu.queue
                .write_buffer(&self.centroids, 0, bytemuck::cast_slice(centroids));
            let mut batch = Batch::new(gpu, "K-Means iteration");
            batch.clear(&self.changed);
            batch.clear(&self.partial_sums);
            batch.clear(&self.partial_counts);
            batch.clear(&self.partial_sq_dist);
            let partials = centroid_update::ClusterPartials {
                sums: &self.partial_sums,
                counts: &self.partial_counts,
                sq_dist: &self.partial_sq_dist,
            };
            for (i, chunk) in self.chunks() {
                assign::assign_nearest_centroid(
                    gpu,
                    &mut batch,
                    chunk,
                    d,
                    k,
                    &self.centroids,
                    &self.labels.chunks[i],
                    &self.min_sq_dist.chunks[i],
                    &self.changed,
                )?;
                centroid_update::accumulate_cluster_partials(
                    gpu,
                    &mut batch,
                    chunk,
                    d,
                    k,
                    self.block_rows,
                    self.block_offsets[i],
                    &self.labels.chunks[i],
                    &self.min_sq_dist.chunks[i],
                    self.chunk_weights(i),
                    &self.centroids,
                    &partials,
                )?;
            }
            reduce::sum_partial_columns_f32(
                gpu,
                &mut batch,
                &self.partial_sums,
                self.n_blocks,
                k * d,
                &self.sums,
            )?;
            reduce::sum_partial_columns_u32(
                gpu,
                &mut batch,
                &self.partial_counts,
                self.n_blocks,
                k,
                &self.counts,
            )?;
            reduce::sum_partial_columns_f32(
                gpu,
                &mut batch,
                &self.partial_sq_dist,
                self.n_blocks,
                2 * k,
                &self.sq_dist,
            )?;
            let h_sums = batch.read(&self.sums, 0, (k * d * 4) as u64);
            let h_counts = batch.read(&self.counts, 0, (k * 4) as u64);
            let h_sq = batch.read(&self.sq_dist, 0, (k * 8) as u64);
            let h_changed = batch.read(&self.changed, 0, 4);
            let n_bytes = (self.x.n_rows() * 4) as u64;
            let h_rows = read_rows.then(|| {
                (
                    batch.read(&self.labels.chunks[0], 0, n_bytes),
                    batch.read(&self.min_sq_dist.chunks[0], 0, n_bytes),
                )
            });
            let back = batch.finish()?;
            let (labels, min_sq_dist) = match h_rows {
                Some((l, m)) => (back.u32s(l), back.f32s(m)),
                None => (Vec::new(), Vec::new()),
            };
            let pairs = back.f32s(h_sq);
            Ok(Stats {
                deviation_sums: back.f32s(h_sums),
                counts: back.u32s(h_counts),
                sq_dist: pairs.iter().step_by(2).copied().collect(),
                weight_sums: pairs.iter().skip(1).step_by(2).copied().collect(),
                changed: back.u32s(h_changed)[0],
                labels,
                min_sq_dist,
            })
        })
    }

    /// Greedy k-means++ seeding on the device: the seeds (K x D) and the rows they are.
    pub(super) fn kmeans_plus_plus(
        &self,
        rng: &mut ChaCha8Rng,
        n_trials: usize,
    ) -> Result<(Vec<f32>, Vec<usize>)> {
        let gpu = self.gpu;
        let x = &self.x;
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
        let block_sums =
            gpu.buffer_zeroed("k-means++ block sums", (n_blocks * n_trials * 4) as u64);
        let totals = gpu.buffer_zeroed("k-means++ trial potentials", (n_trials * 4) as u64);
        let centre = gpu.buffer_zeroed("k-means++ centre", (d * 4) as u64);
        let candidates = gpu.buffer_zeroed("k-means++ candidates", (n_trials * d * 4) as u64);

        // D² ← ‖x − centre‖² (or the min with it); returns the block sums of D².
        let update = |first: bool, source: &dyn Fn(&mut Batch<'_>) -> Result<()>| {
            gpu.scoped("k-means++ distance update", || {
                let mut batch = Batch::new(gpu, "k-means++ update");
                source(&mut batch)?;
                for (i, chunk) in self.chunks() {
                    kmeans_pp::kmeanspp_update_min_distance(
                        gpu,
                        &mut batch,
                        chunk,
                        d,
                        &centre,
                        &self.min_sq_dist.chunks[i],
                        &block_sums,
                        offsets[i],
                        first,
                        self.chunk_weights(i),
                    )?;
                }
                let h = batch.read(&block_sums, 0, (n_blocks * 4) as u64);
                Ok(batch.finish()?.f32s(h))
            })
        };

        let first_row = match self.host_weights() {
            None => rng.random_range(0..n),
            Some(w) => weighted_pick(rng, w),
        };
        let mut chosen = vec![first_row];
        let mut sums = update(true, &|b| {
            rows::gather_rows(gpu, b, x, &[first_row], &centre)
        })?;
        while chosen.len() < self.k {
            let picks = self.sample_d2(rng, &sums, &offsets, n_trials)?;
            let potentials = gpu.scoped("k-means++ trials", || {
                let mut batch = Batch::new(gpu, "k-means++ trials");
                rows::gather_rows(gpu, &mut batch, x, &picks, &candidates)?;
                batch.clear(&block_sums);
                for (i, chunk) in self.chunks() {
                    kmeans_pp::kmeanspp_trial_potentials(
                        gpu,
                        &mut batch,
                        chunk,
                        d,
                        &candidates,
                        picks.len(),
                        &self.min_sq_dist.chunks[i],
                        &block_sums,
                        offsets[i],
                        self.chunk_weights(i),
                    )?;
                }
                reduce::sum_partial_columns_f32(
                    gpu,
                    &mut batch,
                    &block_sums,
                    n_blocks,
                    picks.len(),
                    &totals,
                )?;
                let h = batch.read(&totals, 0, (picks.len() * 4) as u64);
                Ok(batch.finish()?.f32s(h))
            })?;
            // Ties go to the earliest candidate, as in the reference.
            let best = (0..picks.len())
                .min_by(|&a, &b| potentials[a].total_cmp(&potentials[b]).then(a.cmp(&b)))
                .unwrap_or(0);
            chosen.push(picks[best]);
            sums = update(false, &|b| {
                b.copy(
                    &candidates,
                    (best * d * 4) as u64,
                    &centre,
                    0,
                    (d * 4) as u64,
                );
                Ok(())
            })?;
        }
        Ok((rows::read_rows(gpu, x, &chosen)?, chosen))
    }

    /// Draws `n_trials` rows with probability ∝ D², from the per-block sums of D² and the D²
    /// values of the blocks drawn (read back once for all draws).
    fn sample_d2(
        &self,
        rng: &mut ChaCha8Rng,
        block_sums: &[f32],
        offsets: &[usize],
        n_trials: usize,
    ) -> Result<Vec<usize>> {
        let n = self.x.n_rows();
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
        let gpu = self.gpu;
        let values = gpu.scoped("reading D² blocks", || {
            let mut batch = Batch::new(gpu, "k-means++ sampling");
            let handles: Vec<_> = draws
                .iter()
                .map(|&(b, _)| {
                    let (i, local) = block_start(b);
                    let rows_here =
                        (self.x.chunks()[i].n_rows - local).min(kmeans_pp::KMEANSPP_BLOCK_ROWS);
                    batch.read(
                        &self.min_sq_dist.chunks[i],
                        (local * 4) as u64,
                        (rows_here * 4) as u64,
                    )
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
                let first = self.x.chunks()[i].row_start + local;
                // The block sums are of w·D²: weigh the values the same way.
                if let Some(w) = self.host_weights() {
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

    /// Initial centroids for one restart.
    pub(super) fn initial_centroids(
        &self,
        params: &KMeans,
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<f32>> {
        match &params.init {
            KMeansInit::Centroids(c) => Ok(c.iter().map(|&v| v as f32).collect()),
            KMeansInit::Random => {
                let mut idx = random_rows(rng, self.x.n_rows(), self.k, self.host_weights())?;
                // Sampling order is random; the rows themselves are what matters.
                idx.truncate(self.k);
                rows::read_rows(self.gpu, &self.x, &idx)
            }
            KMeansInit::KMeansPlusPlus => {
                Ok(self.kmeans_plus_plus(rng, params.n_local_trials())?.0)
            }
            KMeansInit::KMeansParallel { .. } => super::parallel::device_seeds(
                self.gpu,
                &self.x,
                self.k,
                self.host_weights(),
                &params.init,
                rng,
            ),
        }
    }
}

impl LloydData for Workspace<'_> {
    fn shape(&self) -> (usize, usize) {
        (self.x.n_rows(), self.x.n_features())
    }

    fn pass(&mut self, centroids: &[f32]) -> Result<KMeansStats> {
        let d = self.x.n_features();
        let s = self.step(centroids, centroids.len() / d, false)?;
        let mut stats = KMeansStats::empty(centroids, d)?;
        let weights = self.weights.is_some().then_some(&s.weight_sums[..]);
        stats.add_device(&s.deviation_sums, &s.counts, &s.sq_dist, weights);
        stats.changed = s.changed as u64;
        Ok(stats)
    }

    fn row_weights(&self) -> Option<&[f32]> {
        self.host_weights()
    }

    fn labels_and_distances(&mut self) -> Result<(Vec<u32>, Vec<f32>)> {
        Ok((
            self.labels.to_host(self.gpu)?,
            self.min_sq_dist.to_host(self.gpu)?,
        ))
    }

    fn rows(&mut self, indices: &[usize]) -> Result<Vec<f32>> {
        rows::read_rows(self.gpu, &self.x, indices)
    }
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
    match weights {
        None => Ok(rand::seq::index::sample(rng, n, k).into_vec()),
        Some(w) if w.iter().filter(|&&v| v > 0.0).count() < k => Err(too_few()),
        Some(w) => rand::seq::index::sample_weighted(rng, n, |i| w[i] as f64, k)
            .map(|s| s.into_vec())
            .ok()
            .filter(|idx| idx.len() == k)
            .ok_or_else(too_few),
    }
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
    Ok(ws.kmeans_plus_plus(rng, KMeans::new(k).n_local_trials())?.0)
}
