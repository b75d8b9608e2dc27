//! The worker side of a remote K-Means fit: a partition's rows kept on its device and the
//! requests it answers (parent module docs).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::data::Matrix;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::primitives::rows;
use crate::kmeans::lloyd::LloydData;
use crate::kmeans::seeding::RunningNearest;
use crate::kmeans::workspace::Workspace;
use crate::kmeans::{KMeans, KMeansStats};

/// What a driver asks of one partition ([`KMeansPartition::answer`]).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum KMeansRequest {
    /// One assignment pass against `centroids` (K x D): [`KMeansReply::Stats`]. With
    /// `previous`, `changed` counts the rows whose nearest centroid differs from their
    /// nearest among `previous`; without, it is 0.
    Pass {
        /// The centroids, K x D row-major.
        centroids: Vec<f32>,
        /// The centroids of the pass before (the same K).
        previous: Option<Vec<f32>>,
    },
    /// Every row's label and squared distance against `centroids`: [`KMeansReply::Labels`].
    Labels {
        /// The centroids, K x D row-major.
        centroids: Vec<f32>,
    },
    /// The rows farthest from their nearest centroid among `centroids`, as the empty-cluster
    /// repair orders them (squared distance descending, row ascending): at least
    /// `at_least` of them or all, [`KMeansReply::Farthest`].
    Farthest {
        /// The centroids, K x D row-major.
        centroids: Vec<f32>,
        /// Rows wanted.
        at_least: usize,
    },
    /// The rows at these partition-local indices, in that order: [`KMeansReply::Rows`].
    Rows {
        /// Local row indices.
        indices: Vec<usize>,
    },
    /// k-means‖: Σ D² over the partition's rows, D² the squared distance to the nearest
    /// candidate: [`KMeansReply::Cost`].
    Cost {
        /// The candidates so far, row-major.
        candidates: Vec<f32>,
        /// The rounds that brought them: the number of candidates after each (see
        /// [`KMeansPartition`]).
        ends: Vec<usize>,
    },
    /// k-means‖: the rows drawn with probability min(1, ℓ·D²/φ), one uniform draw per row
    /// in row order from ChaCha8 seeded with `seed` on stream `round · 2³² + partition`:
    /// [`KMeansReply::Sample`].
    Sample {
        /// The candidates so far, row-major.
        candidates: Vec<f32>,
        /// The rounds that brought them, as for [`KMeansRequest::Cost`].
        ends: Vec<usize>,
        /// ℓ: the expected number of rows drawn over all partitions.
        ell: f64,
        /// φ: the cost of all partitions against `candidates`.
        phi: f64,
        /// Seed of the round streams (one per restart).
        seed: u64,
        /// Sampling round, from 0.
        round: u32,
        /// This partition's position among the fit's partitions.
        partition: u32,
    },
    /// k-means‖: the number of rows nearest to each candidate, in candidate order:
    /// [`KMeansReply::Weights`].
    Weights {
        /// The candidates, row-major.
        candidates: Vec<f32>,
        /// The rounds that brought them, as for [`KMeansRequest::Cost`].
        ends: Vec<usize>,
    },
}

/// A partition's answer to a [`KMeansRequest`] (the variant of the same name).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum KMeansReply {
    /// Per-cluster sums of an assignment pass.
    Stats(KMeansStats),
    /// Per-row labels and squared distances.
    Labels {
        /// Nearest centroid of each row.
        labels: Vec<u32>,
        /// Squared distance to it.
        sq_dists: Vec<f32>,
    },
    /// (local row, label, squared distance) of the farthest rows, in the repair's order.
    Farthest(Vec<(usize, u32, f32)>),
    /// Rows, row-major.
    Rows(Vec<f32>),
    /// Σ D² in f64.
    Cost(f64),
    /// Local indices of the rows drawn, ascending.
    Sample(Vec<usize>),
    /// Per candidate, the rows nearest to it.
    Weights(Vec<f64>),
}

/// One partition's rows on a device, kept across the passes of remote fits (the worker
/// side of [`KMeans::fit_remote`]; module docs).
///
/// The rows are uploaded once; the device workspace (labels, distances, per-block sums) is
/// kept between requests, made again when a request brings more centroids than it holds
/// (or far fewer). The partition remembers which centroids its labels on the device belong
/// to, so the changed-label count of [`KMeansRequest::Pass`] is exact whatever ran before.
///
/// The k-means‖ requests carry every candidate so far and `ends`, the number of candidates
/// after each round. Their replies are defined round by round: each row's D² and nearest
/// candidate are the running minimum over the rounds, each round measured against its own
/// candidates only (ties keep the earlier candidate), as [`KMeans::fit`]'s k-means‖ does on
/// one device. A partition keeps that state between requests, so a round whose earlier
/// rounds it has measured costs N·(new candidates)·D, and all of k-means‖ one pass over
/// the candidates; a partition that lacks them (rebuilt, or asked out of order) measures
/// them first, round by round, and replies the same bits.
pub struct KMeansPartition<'g> {
    gpu: &'g Gpu,
    x: GpuMatrix,
    ws: Option<Workspace<'g>>,
    /// Centroids the workspace can hold.
    capacity: usize,
    /// The centroids of the pass whose labels and distances the workspace holds.
    labels_for: Option<Vec<f32>>,
    /// The k-means‖ candidates measured, their rounds' ends, and every row's running
    /// nearest candidate and D².
    seeding: Option<(Vec<f32>, Vec<usize>, RunningNearest)>,
}

impl<'g> KMeansPartition<'g> {
    /// The partition whose rows are `x`, on `gpu` (where `x` lives).
    pub fn new(gpu: &'g Gpu, x: GpuMatrix) -> Self {
        Self {
            gpu,
            x,
            ws: None,
            capacity: 0,
            labels_for: None,
            seeding: None,
        }
    }

    /// Uploads host rows (validated) as a partition.
    ///
    /// Errors: those of [`GpuMatrix::upload`].
    pub fn upload(gpu: &'g Gpu, rows: &Matrix<'_>) -> Result<Self> {
        Ok(Self::new(gpu, GpuMatrix::upload(gpu, rows)?))
    }

    /// Rows and features of the partition.
    pub fn shape(&self) -> (usize, usize) {
        (self.x.n_rows(), self.x.n_features())
    }

    /// The rows on the device.
    pub fn rows(&self) -> &GpuMatrix {
        &self.x
    }

    /// Answers one request (module docs). The reply depends on the request and the rows
    /// only.
    ///
    /// Errors: centroids or candidates that are not whole, finite rows of the partition's
    /// D ([`Error::Shape`], [`Error::NonFinite`]), a `previous` of another K, indices past
    /// the last row ([`Error::Source`]), a φ that is not positive and finite, and the GPU's
    /// errors.
    pub fn answer(&mut self, request: &KMeansRequest) -> Result<KMeansReply> {
        match request {
            KMeansRequest::Pass {
                centroids,
                previous,
            } => self
                .pass(centroids, previous.as_deref())
                .map(KMeansReply::Stats),
            KMeansRequest::Labels { centroids } => {
                let (labels, sq_dists) = self.labels_and_distances(centroids)?;
                Ok(KMeansReply::Labels { labels, sq_dists })
            }
            KMeansRequest::Farthest {
                centroids,
                at_least,
            } => {
                let k = self.count(centroids)?;
                self.assigned_to(centroids, k)?;
                let ws = self.workspace(k)?;
                Ok(KMeansReply::Farthest(LloydData::farthest_rows(
                    ws, *at_least,
                )?))
            }
            KMeansRequest::Rows { indices } => {
                let n = self.x.n_rows();
                if let Some(&i) = indices.iter().find(|&&i| i >= n) {
                    return Err(Error::Source {
                        reason: format!("row {i} was asked for, the partition has {n}"),
                    });
                }
                Ok(KMeansReply::Rows(rows::read_rows(
                    self.gpu, &self.x, indices,
                )?))
            }
            KMeansRequest::Cost { candidates, ends } => {
                let d2 = &self.running_nearest(candidates, ends)?.d2;
                Ok(KMeansReply::Cost(
                    d2.iter().map(|&v| v.max(0.0) as f64).sum(),
                ))
            }
            KMeansRequest::Weights { candidates, ends } => Ok(KMeansReply::Weights(
                self.running_nearest(candidates, ends)?.weights(|_| 1.0),
            )),
            KMeansRequest::Sample {
                candidates,
                ends,
                ell,
                phi,
                seed,
                round,
                partition,
            } => {
                if !(phi.is_finite() && *phi > 0.0 && ell.is_finite() && *ell > 0.0) {
                    return Err(Error::invalid(
                        "phi",
                        format!("k-means|| sampling needs a finite φ > 0 and ℓ > 0, got φ = {phi}, ℓ = {ell}"),
                    ));
                }
                let d2 = &self.running_nearest(candidates, ends)?.d2;
                let mut rng = round_stream(*seed, *round, *partition);
                let picked = d2
                    .iter()
                    .enumerate()
                    .filter_map(|(i, &dist)| {
                        let p = (ell * dist.max(0.0) as f64 / phi).min(1.0);
                        // One draw per row, in row order, whatever the outcome.
                        (rng.random::<f64>() < p).then_some(i)
                    })
                    .collect();
                Ok(KMeansReply::Sample(picked))
            }
        }
    }

    /// K of `centroids` after checking they are whole finite rows of D.
    fn count(&self, centroids: &[f32]) -> Result<usize> {
        let d = self.x.n_features();
        let k = KMeansStats::empty(centroids, d)?.k();
        crate::data::check_finite(centroids, d)?;
        Ok(k)
    }

    /// The workspace, made (again) when it cannot hold `k` centroids, or when it was made
    /// for more than twice as many (the k-means‖ candidates before the Lloyd passes): its
    /// per-block sums are cleared on every pass, so an oversized one costs every iteration.
    fn workspace(&mut self, k: usize) -> Result<&mut Workspace<'g>> {
        if self.ws.is_none() || k > self.capacity || 2 * k < self.capacity {
            self.ws = None;
            self.labels_for = None;
            self.ws = Some(Workspace::weighted(self.gpu, &self.x, k, None)?);
            self.capacity = k;
        }
        Ok(self.ws.as_mut().expect("made above"))
    }

    /// One pass against `centroids`, the changed labels counted against `previous`.
    fn pass(&mut self, centroids: &[f32], previous: Option<&[f32]>) -> Result<KMeansStats> {
        let k = self.count(centroids)?;
        if let Some(prev) = previous {
            if self.count(prev)? != k {
                return Err(Error::invalid(
                    "previous",
                    "the previous centroids must be as many as the centroids",
                ));
            }
        }
        self.workspace(k)?;
        if let Some(prev) = previous {
            if self.labels_for.as_deref() != Some(prev) {
                // Labels of the previous pass, for the changed count only.
                self.labels_for = None;
                let mut discard = KMeansStats::empty(prev, self.x.n_features())?;
                self.workspace(k)?.step(&mut discard, None)?;
                self.labels_for = Some(prev.to_vec());
            }
        }
        self.labels_for = None;
        let d = self.x.n_features();
        let mut stats = KMeansStats::empty(centroids, d)?;
        self.workspace(k)?.step(&mut stats, None)?;
        self.labels_for = Some(centroids.to_vec());
        if previous.is_none() {
            stats.changed = 0;
        }
        Ok(stats)
    }

    /// Labels and squared distances of every row against `centroids`.
    fn labels_and_distances(&mut self, centroids: &[f32]) -> Result<(Vec<u32>, Vec<f32>)> {
        let k = self.count(centroids)?;
        self.assigned_to(centroids, k)?;
        self.workspace(k)?.labels_and_distances()
    }

    /// The workspace holding every row's label and distance against `centroids` (K of
    /// them): a pass when it holds another pass's.
    fn assigned_to(&mut self, centroids: &[f32], k: usize) -> Result<()> {
        self.workspace(k)?;
        if self.labels_for.as_deref() != Some(centroids) {
            self.labels_for = None;
            let mut discard = KMeansStats::empty(centroids, self.x.n_features())?;
            self.workspace(k)?.step(&mut discard, None)?;
            self.labels_for = Some(centroids.to_vec());
        }
        Ok(())
    }

    /// Every row's running nearest among `candidates` over the rounds that `ends` closes
    /// (the type's docs): the rounds this partition has not measured yet, measured.
    fn running_nearest(&mut self, candidates: &[f32], ends: &[usize]) -> Result<&RunningNearest> {
        let c = self.count(candidates)?;
        if ends.is_empty()
            || ends[0] == 0
            || ends.windows(2).any(|w| w[0] >= w[1])
            || ends[ends.len() - 1] != c
        {
            return Err(Error::invalid(
                "ends",
                format!(
                    "the rounds' ends must rise from above 0 to the {c} candidates, got {ends:?}"
                ),
            ));
        }
        let d = self.x.n_features();
        // The rounds already measured, when this partition measured a prefix of them.
        let measured = match &self.seeding {
            Some((had, had_ends, _))
                if had_ends.len() <= ends.len()
                    && ends[..had_ends.len()] == had_ends[..]
                    && candidates[..had.len()] == had[..] =>
            {
                had_ends.len()
            }
            _ => 0,
        };
        let mut running = match self.seeding.take() {
            Some((_, _, running)) if measured > 0 => running,
            _ => RunningNearest::new(self.gpu, &self.x, &candidates[..ends[0] * d])?,
        };
        for round in measured.max(1)..ends.len() {
            let new = &candidates[ends[round - 1] * d..ends[round] * d];
            running.add(self.gpu, &self.x, new)?;
        }
        let (_, _, running) = self
            .seeding
            .insert((candidates.to_vec(), ends.to_vec(), running));
        Ok(running)
    }
}

/// The generator of one k-means‖ round on one partition: ChaCha8 from `seed`, on stream
/// `round · 2³² + partition`, so every (seed, round, partition) has its own fixed draws.
fn round_stream(seed: u64, round: u32, partition: u32) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(((round as u64) << 32) | partition as u64);
    rng
}

/// Greedy weighted k-means++ (the seeding of [`KMeans::fit`], `2 + ln k` trials per step)
/// of `k` seeds among `candidates` (row-major, `d` features) weighted by `weights`, from
/// `seed`: the last step of a remote k-means‖ or k-means++, wherever a device is.
///
/// Errors: those of [`KMeans::kmeans_plusplus`].
pub fn seed_candidates(
    gpu: &Gpu,
    candidates: &[f32],
    d: usize,
    weights: &[f32],
    k: usize,
    seed: u64,
) -> Result<Vec<f32>> {
    let x = Matrix::new(candidates, d)?;
    Ok(KMeans::new(k)
        .seed(seed)
        .kmeans_plusplus(gpu, &x, Some(weights))?
        .0)
}
