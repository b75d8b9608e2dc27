//! K-Means clustering (Lloyd's algorithm) with the heavy work on the GPU.
//!
//! K-Means minimises the within-cluster sum of squares (the inertia)
//!
//! ```text
//! J(c, μ) = Σᵢ ‖xᵢ − μ_{c(i)}‖²
//! ```
//!
//! by alternating the two exact minimisations of Lloyd (1982):
//! 1. **assignment**: c(i) = argminₖ ‖xᵢ − μₖ‖² (`shaders/assign.wgsl`, one invocation per
//!    row, centroid tiles in workgroup memory);
//! 2. **update**: μₖ = mean of the rows with c(i) = k (`shaders/centroid_update.wgsl` then
//!    `shaders/reduce.wgsl`: per-block partial sums in a fixed order, folded on the device,
//!    so only K x D statistics and a few scalars come back each iteration).
//!
//! J never increases. Iteration stops when no label changes, when the total squared centroid
//! shift Σₖ‖μₖ⁽ᵗ⁺¹⁾ − μₖ⁽ᵗ⁾‖² falls to `tol` times the mean per-feature variance
//! (scikit-learn's rule), or after `max_iter` iterations; then a last assignment gives labels
//! consistent with the final centroids. A cluster that loses every member is re-seeded at the
//! row farthest from its centroid (never taken from a singleton cluster), so centroids are
//! never NaN.
//!
//! Seeding is greedy k-means++ (Arthur & Vassilvitskii 2007, scikit-learn's variant): each new
//! centre is the best of `2 + ln k` candidates drawn with probability ∝ D(x)², the squared
//! distance to the nearest centre so far, "best" meaning the smallest resulting potential
//! Σᵢ min(D(xᵢ)², ‖xᵢ − c‖²). D² and the candidates' potentials are computed on the device
//! (`shaders/kmeans_pp.wgsl`); the host draws the samples from block sums.
//!
//! Host algebra (centroid = old centroid + mean deviation, shifts, inertia) is f64. Every
//! device sum has a fixed order, so the same seed on the same adapter gives bitwise the same
//! model. The f64 CPU oracle of the same algorithm is [`crate::reference::kmeans`].

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::gpu::buffer::Chunk;
use crate::gpu::kernel::Batch;
pub use crate::gpu::GpuInput;
use crate::gpu::{Gpu, GpuMatrix, GpuVector};
use crate::kernels::{assign, centroid_update, kmeans_pp, reduce, rows};
use crate::names::parse_choice;

/// How the initial centroids are chosen.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum KMeansInit {
    /// Greedy k-means++ (Arthur & Vassilvitskii 2007) with `2 + ln k` local trials per step,
    /// as scikit-learn does: each new centroid is the best of several D²-sampled candidates.
    KMeansPlusPlus,
    /// K distinct rows chosen uniformly at random.
    Random,
    /// Given centroids, row-major K x D (f64). With these, `n_init` is ignored (one run).
    Centroids(Vec<f64>),
}

impl KMeansInit {
    /// The initialisations that can be named (all but [`KMeansInit::Centroids`]).
    pub const ALL: [KMeansInit; 2] = [KMeansInit::KMeansPlusPlus, KMeansInit::Random];

    /// The name the CLI uses: "k-means++" or "random"; "given centroids" for
    /// [`KMeansInit::Centroids`], which cannot be parsed.
    pub fn name(&self) -> &'static str {
        match self {
            KMeansInit::KMeansPlusPlus => "k-means++",
            KMeansInit::Random => "random",
            KMeansInit::Centroids(_) => "given centroids",
        }
    }

    /// Other spellings [`FromStr`](std::str::FromStr) accepts.
    fn aliases(&self) -> &'static [&'static str] {
        match self {
            KMeansInit::KMeansPlusPlus => &["kmeans++"],
            KMeansInit::Random | KMeansInit::Centroids(_) => &[],
        }
    }
}

impl std::fmt::Display for KMeansInit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for KMeansInit {
    type Err = Error;

    /// Parses "k-means++" (or "kmeans++") or "random", ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self> {
        parse_choice(
            "init",
            "K-Means initialisation",
            s,
            &KMeansInit::ALL,
            KMeansInit::name,
            KMeansInit::aliases,
        )
    }
}

/// K-Means parameters (a builder); validated when fitting.
///
/// Defaults follow scikit-learn: `n_init = 1` with k-means++ (sklearn's "auto"),
/// `max_iter = 300`, `tol = 1e-4`, `seed = 0`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct KMeans {
    /// Number of clusters K.
    pub k: usize,
    /// Independent restarts; the run with the lowest inertia is kept.
    pub n_init: usize,
    /// Maximum Lloyd iterations per restart.
    pub max_iter: usize,
    /// Convergence tolerance on the total squared centroid shift, relative to the mean
    /// per-feature variance of the data (scikit-learn's convention).
    pub tol: f64,
    /// Seed of the random generator (ChaCha8); the same seed gives the same result.
    pub seed: u64,
    /// Initialisation method.
    pub init: KMeansInit,
}

impl KMeans {
    /// Parameters for `k` clusters with the defaults above.
    pub fn new(k: usize) -> Self {
        Self {
            k,
            n_init: 1,
            max_iter: 300,
            tol: 1e-4,
            seed: 0,
            init: KMeansInit::KMeansPlusPlus,
        }
    }

    /// Sets the number of restarts.
    pub fn n_init(mut self, n_init: usize) -> Self {
        self.n_init = n_init;
        self
    }

    /// Sets the iteration cap.
    pub fn max_iter(mut self, max_iter: usize) -> Self {
        self.max_iter = max_iter;
        self
    }

    /// Sets the relative tolerance.
    pub fn tol(mut self, tol: f64) -> Self {
        self.tol = tol;
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the initialisation.
    pub fn init(mut self, init: KMeansInit) -> Self {
        self.init = init;
        self
    }

    /// Checks the parameters against data of `n` rows and `d` features.
    pub fn validate(&self, n: usize, d: usize) -> Result<()> {
        Error::require_count("k", self.k)?;
        if self.k > n {
            return Err(Error::TooFewSamples { k: self.k, n });
        }
        self.validate_for_features(d)
    }

    /// The checks of [`KMeans::validate`] that do not need the number of rows (those a
    /// fitted model's parameters must pass too).
    fn validate_for_features(&self, d: usize) -> Result<()> {
        Error::require_count("k", self.k)?;
        Error::require_count("n_init", self.n_init)?;
        Error::require_count("max_iter", self.max_iter)?;
        Error::require_non_negative("tol", self.tol)?;
        if let KMeansInit::Centroids(c) = &self.init {
            if c.len() != self.k * d {
                return Err(Error::invalid(
                    "init",
                    format!(
                        "given centroids have {} values, expected k x d = {} x {d}",
                        c.len(),
                        self.k
                    ),
                ));
            }
            crate::data::check_finite(c, d)?;
        }
        Ok(())
    }

    /// Number of local trials of greedy k-means++: `2 + floor(ln k)` (scikit-learn).
    pub fn n_local_trials(&self) -> usize {
        2 + (self.k as f64).ln().floor() as usize
    }
}

/// A fitted K-Means model.
///
/// Every value of this type is consistent ([`KMeansModel::validate`]): [`KMeans::fit`] and
/// [`KMeansModel::from_centroids`] build valid models, and deserializing (feature `serde`)
/// runs `validate`, so an edited file gives an error, never a model that panics later. The
/// serialized form leaves out the training labels (`labels()` of a deserialized model is
/// empty).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(try_from = "KMeansModelFields")
)]
pub struct KMeansModel {
    params: KMeans,
    n_features: usize,
    centroids: Vec<f32>,
    /// Training labels: not serialized (a model file is for predicting, and N labels
    /// would dwarf the K x D centroids).
    #[cfg_attr(feature = "serde", serde(skip))]
    labels: Vec<u32>,
    inertia: f64,
    n_iter: usize,
    converged: bool,
    inertia_history: Vec<f64>,
}

/// The serialized fields of a [`KMeansModel`], before [`KMeansModel::validate`] accepts them.
/// An unknown inertia (NaN, written as `null` by JSON) reads back as NaN; the `labels` of
/// files written before they were left out are ignored.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
pub(crate) struct KMeansModelFields {
    params: KMeans,
    n_features: usize,
    centroids: Vec<f32>,
    inertia: Option<f64>,
    n_iter: usize,
    converged: bool,
    inertia_history: Vec<f64>,
}

#[cfg(feature = "serde")]
impl TryFrom<KMeansModelFields> for KMeansModel {
    type Error = Error;

    fn try_from(f: KMeansModelFields) -> Result<Self> {
        let model = KMeansModel {
            params: f.params,
            n_features: f.n_features,
            centroids: f.centroids,
            labels: Vec::new(),
            inertia: f.inertia.unwrap_or(f64::NAN),
            n_iter: f.n_iter,
            converged: f.converged,
            inertia_history: f.inertia_history,
        };
        model.validate()?;
        Ok(model)
    }
}

/// Per-iteration statistics read back from the device.
struct Stats {
    /// K x D sums of (x − old centroid) per cluster.
    deviation_sums: Vec<f32>,
    counts: Vec<u32>,
    sq_dist: Vec<f32>,
    changed: u32,
}

impl Stats {
    fn inertia(&self) -> f64 {
        self.sq_dist.iter().map(|&v| v as f64).sum()
    }
}

/// Device buffers of one fit, reused by every restart and iteration.
struct Workspace<'a> {
    gpu: &'a Gpu,
    x: &'a GpuMatrix,
    k: usize,
    labels: GpuVector<u32>,
    min_sq_dist: GpuVector<f32>,
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
    fn new(gpu: &'a Gpu, x: &'a GpuMatrix, k: usize) -> Result<Self> {
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
                x,
                k,
                labels: GpuVector::zeroed(gpu, x, "labels"),
                min_sq_dist: GpuVector::zeroed(gpu, x, "min squared distances"),
                changed: gpu.buffer_zeroed("changed labels", 4),
                centroids: gpu.buffer_zeroed("centroids", kd * 4),
                block_rows,
                block_offsets,
                n_blocks,
                partial_sums: gpu.buffer_zeroed("partial sums", partial_bytes),
                partial_counts: gpu.buffer_zeroed("partial counts", n_blocks as u64 * k as u64 * 4),
                partial_sq_dist: gpu
                    .buffer_zeroed("partial squared distances", n_blocks as u64 * k as u64 * 4),
                sums: gpu.buffer_zeroed("cluster sums", kd * 4),
                counts: gpu.buffer_zeroed("cluster counts", k as u64 * 4),
                sq_dist: gpu.buffer_zeroed("cluster squared distances", k as u64 * 4),
            })
        })
    }

    fn chunks(&self) -> impl Iterator<Item = (usize, &'a Chunk)> {
        self.x.chunks().iter().enumerate()
    }

    /// One assignment against the first `k` rows of `centroids` and the statistics of the
    /// resulting clusters.
    fn step(&self, centroids: &[f32], k: usize) -> Result<Stats> {
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
                k,
                &self.sq_dist,
            )?;
            let h_sums = batch.read(&self.sums, 0, (k * d * 4) as u64);
            let h_counts = batch.read(&self.counts, 0, (k * 4) as u64);
            let h_sq = batch.read(&self.sq_dist, 0, (k * 4) as u64);
            let h_changed = batch.read(&self.changed, 0, 4);
            let back = batch.finish()?;
            Ok(Stats {
                deviation_sums: back.f32s(h_sums),
                counts: back.u32s(h_counts),
                sq_dist: back.f32s(h_sq),
                changed: back.u32s(h_changed)[0],
            })
        })
    }

    /// Mean over features of the population variance, from one pass with a single
    /// "centroid" s (the first row): Σᵢ‖xᵢ − μ‖² = Σᵢ‖xᵢ − s‖² − N‖μ − s‖².
    fn mean_variance(&self) -> Result<f64> {
        let d = self.x.n_features();
        let n = self.x.n_rows() as f64;
        let shift = rows::read_rows(self.gpu, self.x, &[0])?;
        let stats = self.step(&shift, 1)?;
        let offset_sq: f64 = stats.deviation_sums[..d]
            .iter()
            .map(|&s| (s as f64 / n).powi(2))
            .sum();
        Ok(((stats.inertia() - n * offset_sq) / (n * d as f64)).max(0.0))
    }

    /// Greedy k-means++ seeding on the device.
    fn kmeans_plus_plus(&self, rng: &mut ChaCha8Rng, n_trials: usize) -> Result<Vec<f32>> {
        let gpu = self.gpu;
        let x = self.x;
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
                    )?;
                }
                let h = batch.read(&block_sums, 0, (n_blocks * 4) as u64);
                Ok(batch.finish()?.f32s(h))
            })
        };

        let first_row = rng.random_range(0..n);
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
        rows::read_rows(gpu, x, &chosen)
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
            .map(|(&(b, mut u), vals)| {
                let (i, local) = block_start(b);
                let mut pick = vals.iter().rposition(|&v| v > 0.0).unwrap_or(0);
                for (r, &v) in vals.iter().enumerate() {
                    if u < v as f64 {
                        pick = r;
                        break;
                    }
                    u -= v as f64;
                }
                self.x.chunks()[i].row_start + local + pick
            })
            .collect())
    }

    /// Initial centroids for one restart.
    fn initial_centroids(&self, params: &KMeans, rng: &mut ChaCha8Rng) -> Result<Vec<f32>> {
        match &params.init {
            KMeansInit::Centroids(c) => Ok(c.iter().map(|&v| v as f32).collect()),
            KMeansInit::Random => {
                let mut idx = rand::seq::index::sample(rng, self.x.n_rows(), self.k).into_vec();
                // Sampling order is random; the rows themselves are what matters.
                idx.truncate(self.k);
                rows::read_rows(self.gpu, self.x, &idx)
            }
            KMeansInit::KMeansPlusPlus => self.kmeans_plus_plus(rng, params.n_local_trials()),
        }
    }

    /// Moves each empty cluster onto the row farthest from its centroid, taking rows only
    /// from clusters with more than one member and updating the donors' means.
    fn repair_empty_clusters(&self, centroids: &mut [f64], counts: &mut [u32]) -> Result<()> {
        let d = self.x.n_features();
        let labels = self.labels.to_host(self.gpu)?;
        let dists = self.min_sq_dist.to_host(self.gpu)?;
        let mut order: Vec<usize> = (0..labels.len()).collect();
        order.sort_by(|&a, &b| dists[b].total_cmp(&dists[a]).then(a.cmp(&b)));
        let mut far = order.into_iter();
        for empty in 0..self.k {
            if counts[empty] != 0 {
                continue;
            }
            let Some(row) = far.by_ref().find(|&r| counts[labels[r] as usize] > 1) else {
                break;
            };
            let donor = labels[row] as usize;
            let x = rows::read_rows(self.gpu, self.x, &[row])?;
            let m = counts[donor] as f64;
            for j in 0..d {
                let xj = x[j] as f64;
                centroids[donor * d + j] = (centroids[donor * d + j] * m - xj) / (m - 1.0);
                centroids[empty * d + j] = xj;
            }
            counts[donor] -= 1;
            counts[empty] = 1;
        }
        Ok(())
    }

    /// One Lloyd run from `init`.
    fn lloyd(&self, init: Vec<f32>, max_iter: usize, tol_abs: f64) -> Result<KMeansModelParts> {
        let (k, d) = (self.k, self.x.n_features());
        let mut centroids = init;
        let mut history = Vec::new();
        let mut converged = false;
        let mut n_iter = 0;
        for it in 0..max_iter {
            let stats = self.step(&centroids, k)?;
            history.push(stats.inertia());
            n_iter = it + 1;
            // The count compares with the previous iteration's labels (or a previous
            // restart's, or zeros): meaningless on the first iteration of a run.
            if it > 0 && stats.changed == 0 {
                converged = true;
                break;
            }
            let mut counts = stats.counts.clone();
            let mut next: Vec<f64> = centroids.iter().map(|&v| v as f64).collect();
            for c in 0..k {
                if counts[c] > 0 {
                    let m = counts[c] as f64;
                    for j in 0..d {
                        next[c * d + j] += stats.deviation_sums[c * d + j] as f64 / m;
                    }
                }
            }
            if counts.contains(&0) {
                self.repair_empty_clusters(&mut next, &mut counts)?;
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
                break;
            }
        }
        // Labels and inertia consistent with the final centroids.
        let last = self.step(&centroids, k)?;
        Ok(KMeansModelParts {
            centroids,
            inertia: last.inertia(),
            n_iter,
            converged,
            history,
        })
    }
}

struct KMeansModelParts {
    centroids: Vec<f32>,
    inertia: f64,
    n_iter: usize,
    converged: bool,
    history: Vec<f64>,
}

/// Greedy k-means++ seeds (K x D, f32) of device data, drawn with `rng`: the seeding of
/// [`KMeans::fit`] on its own, for the Gaussian-mixture initialisation.
pub(crate) fn plus_plus_seeds(
    gpu: &Gpu,
    x: &GpuMatrix,
    k: usize,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f32>> {
    let ws = Workspace::new(gpu, x, k)?;
    ws.kmeans_plus_plus(rng, KMeans::new(k).n_local_trials())
}

impl KMeans {
    /// Fits on host or device data: `n_init` restarts, keeping the lowest inertia.
    ///
    /// Errors: invalid parameters ([`Error::InvalidParameter`], [`Error::TooFewSamples`]),
    /// and the GPU errors of [`GpuMatrix::upload`] and of the kernels.
    pub fn fit(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<KMeansModel> {
        let (n, d) = x.shape();
        self.validate(n, d)?;
        let x = x.on_gpu(gpu)?;
        let ws = Workspace::new(gpu, &x, self.k)?;
        let tol_abs = if self.tol > 0.0 {
            self.tol * ws.mean_variance()?
        } else {
            0.0
        };
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let runs = match self.init {
            KMeansInit::Centroids(_) => 1,
            _ => self.n_init,
        };
        let mut best: Option<(KMeansModelParts, Vec<u32>)> = None;
        for _ in 0..runs {
            let init = ws.initial_centroids(self, &mut rng)?;
            let run = ws.lloyd(init, self.max_iter, tol_abs)?;
            if best.as_ref().is_none_or(|(b, _)| run.inertia < b.inertia) {
                let labels = ws.labels.to_host(gpu)?;
                best = Some((run, labels));
            }
        }
        let (run, labels) = best.expect("at least one restart ran");
        Ok(KMeansModel {
            params: self.clone(),
            n_features: d,
            centroids: run.centroids,
            labels,
            inertia: run.inertia,
            n_iter: run.n_iter,
            converged: run.converged,
            inertia_history: run.history,
        })
    }
}

impl KMeansModel {
    /// A model from known centroids (row-major K x D), e.g. computed elsewhere, to predict
    /// and transform with. It has no training labels and an inertia of NaN.
    pub fn from_centroids(centroids: Vec<f32>, n_features: usize) -> Result<Self> {
        if n_features == 0 || centroids.is_empty() {
            return Err(Error::EmptyData {
                what: "centroids",
                missing: if n_features == 0 { "columns" } else { "rows" },
            });
        }
        if !centroids.len().is_multiple_of(n_features) {
            return Err(Error::Shape {
                len: centroids.len(),
                n_features,
            });
        }
        crate::data::check_finite(&centroids, n_features)?;
        let k = centroids.len() / n_features;
        Ok(Self {
            params: KMeans::new(k).init(KMeansInit::Centroids(
                centroids.iter().map(|&v| v as f64).collect(),
            )),
            n_features,
            centroids,
            labels: Vec::new(),
            inertia: f64::NAN,
            n_iter: 0,
            converged: false,
            inertia_history: Vec::new(),
        })
    }

    /// Centroids, row-major K x D.
    pub fn centroids(&self) -> &[f32] {
        &self.centroids
    }

    /// Number of clusters K.
    pub fn k(&self) -> usize {
        self.params.k
    }

    /// Number of features D the model was fitted on.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// Cluster of each training row; empty for a model built by
    /// [`KMeansModel::from_centroids`] or deserialized (model files do not carry them).
    pub fn labels(&self) -> &[u32] {
        &self.labels
    }

    /// J = Σᵢ ‖xᵢ − μ_{c(i)}‖² of the training data under the final centroids.
    pub fn inertia(&self) -> f64 {
        self.inertia
    }

    /// Lloyd iterations of the kept restart.
    pub fn n_iter(&self) -> usize {
        self.n_iter
    }

    /// Whether the kept restart met a stopping rule before `max_iter`.
    pub fn converged(&self) -> bool {
        self.converged
    }

    /// Inertia at each iteration of the kept restart (labels from the centroids of that
    /// iteration): never increasing, up to f32 rounding.
    pub fn inertia_history(&self) -> &[f64] {
        &self.inertia_history
    }

    /// The parameters the model was fitted with.
    pub fn params(&self) -> &KMeans {
        &self.params
    }

    /// Checks that the parts of the model fit together: K ≥ 1 clusters of D ≥ 1 features,
    /// K x D finite centroids, parameters that [`KMeans::validate`] accepts for D features,
    /// an inertia that is finite and ≥ 0 (or NaN: unknown, for a model from centroids), a
    /// finite inertia history and training labels below K.
    ///
    /// Every model is checked when it is built or deserialized, so this only fails for
    /// [`Error::InvalidModel`] reasons found in edited serialized data.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| Error::InvalidModel {
            kind: "K-Means",
            reason,
        };
        let (k, d) = (self.params.k, self.n_features);
        if k == 0 || d == 0 {
            return Err(bad(format!("k = {k} clusters of d = {d} features")));
        }
        if k.checked_mul(d) != Some(self.centroids.len()) {
            return Err(bad(format!(
                "{} centroid values for k = {k} clusters of d = {d} features",
                self.centroids.len()
            )));
        }
        if let Some(i) = self.centroids.iter().position(|v| !v.is_finite()) {
            return Err(bad(format!("non-finite centroid value at index {i}")));
        }
        self.params
            .validate_for_features(d)
            .map_err(|e| bad(format!("parameters: {e}")))?;
        if !(self.inertia.is_nan() || (self.inertia.is_finite() && self.inertia >= 0.0)) {
            return Err(bad(format!(
                "inertia {} is not finite and >= 0",
                self.inertia
            )));
        }
        if self.inertia_history.iter().any(|v| !v.is_finite()) {
            return Err(bad("non-finite inertia history".into()));
        }
        if let Some(l) = self.labels.iter().find(|&&l| l as usize >= k) {
            return Err(bad(format!("training label {l} out of range for k = {k}")));
        }
        Ok(())
    }

    fn check_features(&self, x: &impl GpuInput) -> Result<()> {
        let (_, d) = x.shape();
        if d != self.n_features {
            return Err(Error::FeatureMismatch {
                expected: self.n_features,
                found: d,
            });
        }
        Ok(())
    }

    /// Nearest centroid and squared distance of every row, left on the device.
    pub fn predict_gpu(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
    ) -> Result<(GpuVector<u32>, GpuVector<f32>)> {
        self.check_features(x)?;
        let xg = x.on_gpu(gpu)?;
        gpu.scoped("K-Means predict", || {
            let labels = GpuVector::zeroed(gpu, &xg, "labels");
            let dists = GpuVector::zeroed(gpu, &xg, "squared distances");
            let centroids =
                gpu.buffer_from("centroids", &self.centroids, wgpu::BufferUsages::empty());
            let changed = gpu.buffer_zeroed("changed labels", 4);
            let mut batch = Batch::new(gpu, "K-Means predict");
            for (i, chunk) in xg.chunks().iter().enumerate() {
                assign::assign_nearest_centroid(
                    gpu,
                    &mut batch,
                    chunk,
                    self.n_features,
                    self.params.k,
                    &centroids,
                    &labels.chunks[i],
                    &dists.chunks[i],
                    &changed,
                )?;
            }
            batch.finish()?;
            Ok((labels, dists))
        })
    }

    /// Nearest centroid of every row.
    pub fn predict(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<Vec<u32>> {
        self.predict_gpu(gpu, x)?.0.to_host(gpu)
    }

    /// The K-Means objective of `x` under this model, negated (higher is better, as
    /// scikit-learn's `score`).
    pub fn score(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<f64> {
        let d = self.predict_gpu(gpu, x)?.1.to_host(gpu)?;
        Ok(-d.iter().map(|&v| v as f64).sum::<f64>())
    }

    /// Euclidean distances from every row to every centroid (N x K), left on the device.
    pub fn transform_gpu(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<GpuMatrix> {
        self.check_features(x)?;
        let xg = x.on_gpu(gpu)?;
        let (k, d) = (self.params.k, self.n_features);
        let centroids = gpu.scoped("uploading centroids", || {
            Ok(gpu.buffer_from("centroids", &self.centroids, wgpu::BufferUsages::empty()))
        })?;
        xg.map_rows(
            gpu,
            k,
            "K-Means transform",
            |batch, chunk, first, rows, out| {
                assign::pairwise_distances(
                    gpu, batch, chunk, first, rows, d, k, &centroids, out, true,
                )
            },
        )
    }

    /// Euclidean distances from every row to every centroid, row-major N x K.
    pub fn transform(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<Vec<f32>> {
        self.transform_gpu(gpu, x)?.to_host(gpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three clusters of two features with labels, inertia and history: a valid model.
    fn valid() -> KMeansModel {
        let mut m = KMeansModel::from_centroids(vec![0.0, 0.0, 1.0, 1.0, 2.0, 2.0], 2).unwrap();
        m.labels = vec![0, 1, 2, 2];
        m.inertia = 1.5;
        m.inertia_history = vec![3.0, 1.5];
        m
    }

    /// The reason of the `InvalidModel` error of `edit` applied to a valid model.
    fn reason(edit: impl FnOnce(&mut KMeansModel)) -> String {
        let mut m = valid();
        edit(&mut m);
        match m.validate() {
            Err(Error::InvalidModel {
                kind: "K-Means",
                reason,
            }) => reason,
            other => panic!("expected an inconsistent K-Means model, got {other:?}"),
        }
    }

    #[test]
    fn valid_models_pass() {
        valid().validate().unwrap();
        let mut unknown_inertia = valid();
        unknown_inertia.inertia = f64::NAN;
        unknown_inertia.validate().unwrap();
    }

    #[test]
    fn every_inconsistency_is_reported() {
        assert!(reason(|m| m.n_features = 0).contains("d = 0 features"));
        assert!(reason(|m| m.params.k = 0).contains("k = 0 clusters"));
        assert!(reason(|m| m.centroids.truncate(4)).contains("4 centroid values"));
        assert!(reason(|m| m.centroids[3] = f32::INFINITY).contains("index 3"));
        assert!(reason(|m| m.params.n_init = 0).contains("n_init"));
        assert!(reason(|m| m.params.init = KMeansInit::Centroids(vec![0.0])).contains("init"));
        assert!(reason(|m| m.inertia = -1.0).contains("inertia -1"));
        assert!(reason(|m| m.inertia = f64::INFINITY).contains("inertia inf"));
        assert!(reason(|m| m.inertia_history[0] = f64::NAN).contains("history"));
        assert!(reason(|m| m.labels[1] = 3).contains("label 3"));
    }

    #[test]
    fn init_names_round_trip() {
        for init in KMeansInit::ALL {
            assert_eq!(init.name().parse::<KMeansInit>().unwrap(), init);
            assert_eq!(init.to_string(), init.name());
        }
        assert_eq!(
            "kmeans++".parse::<KMeansInit>().unwrap(),
            KMeansInit::KMeansPlusPlus
        );
        assert_eq!("Random".parse::<KMeansInit>().unwrap(), KMeansInit::Random);
        let e = "given centroids".parse::<KMeansInit>().unwrap_err();
        assert!(
            matches!(e, Error::InvalidParameter { name: "init", .. }),
            "{e}"
        );
    }
}
