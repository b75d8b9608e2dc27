//! K-Means over partitions that live elsewhere: other processes or machines, reached by an
//! engine the caller runs (Dask, Spark, MPI, ...).
//!
//! Two halves meet through plain requests and replies:
//!
//! - on each worker, a [`KMeansPartition`] keeps one partition's rows on its device across
//!   passes and answers [`KMeansRequest`]s ([`KMeansPartition::answer`]);
//! - on the driver, [`KMeans::fit_remote`] runs the fit's own loop (the tolerance scale, the
//!   restarts, the empty-cluster repair and the stopping rules of [`KMeans::fit`], module
//!   `lloyd`) and hands each round of requests to a [`RemoteKMeans`], the caller's bridge to
//!   the engine. Per-partition replies are merged here, in f64 and in partition order, so the
//!   model does not depend on which worker answered first, and it equals a fit of all rows on
//!   one device within f32 rounding (exactly the same Lloyd steps from the same start).
//!
//! Every request is pure: its reply depends on the request and the partition's rows only, so
//! an engine may retry it, run it twice or run it on a fresh worker. Where a reply would
//! depend on an earlier pass (the count of changed labels compares each row's label with its
//! label against the previous centroids), the request names that pass, and a partition that
//! does not hold it (rebuilt after a restart, or asked out of order) recomputes it first.
//!
//! Seeding ([`KMeansInit`]): given centroids as given; random rows drawn from the fit's
//! ChaCha8 stream over the global row numbering (partitions in order) and gathered;
//! k-means++ greedy on a uniform sample of `max(10 000, 256·K)` rows (as
//! [`KMeans::fit_partitions`]); k-means‖ (Bahmani et al. 2012) with `rounds` sampling rounds
//! of two requests each (the cost φ, then the Bernoulli draws, one uniform per row in row
//! order from the ChaCha8 stream numbered by the round and the partition, seeded once per
//! restart from the fit's stream), each partition measuring its rows against each round's
//! new candidates only and keeping the running minimum, so the candidates' weights come
//! from that state with no further pass ([`KMeansPartition`]), and greedy weighted
//! k-means++ among them ([`RemoteKMeans::seed_candidates`], [`seed_candidates`]). The streams
//! differ from a single-device fit's, so k-means‖ and k-means++ start elsewhere than
//! [`KMeans::fit`] does; from given centroids both fits take the same steps.
//!
//! The driver never holds a value per row: it receives K x D statistics, candidate rows and
//! scalars. The labels stay with the partitions (the model has none: ask each partition for
//! [`KMeansRequest::Labels`], or predict), and when a cluster empties each partition sends
//! its rows farthest from their centroids ([`KMeansRequest::Farthest`], K + the empty
//! clusters of them), of which the repair takes the farthest overall.

use std::collections::HashSet;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::lloyd::LloydData;
use super::seeding::{random_rows, uniform_sample};
use super::{KMeans, KMeansInit, KMeansStats};
use crate::error::{Error, Result};

mod partition;

pub use partition::{seed_candidates, KMeansPartition, KMeansReply, KMeansRequest};

/// The driver's bridge to partitions that live elsewhere (module docs): it sends requests
/// to [`KMeansPartition::answer`] on the partitions' workers and returns the replies.
pub trait RemoteKMeans {
    /// Rows of each partition, in partition order, and the features D.
    fn partition_shapes(&self) -> (Vec<usize>, usize);

    /// Answers of the partitions named in `requests` (partition index, request), in the
    /// same order. Requests are pure (module docs): retrying them is safe.
    fn run(&mut self, requests: Vec<(usize, KMeansRequest)>) -> Result<Vec<KMeansReply>>;

    /// Greedy weighted k-means++ among candidates: [`seed_candidates`] run wherever a device
    /// is (a worker, or the driver's own device).
    fn seed_candidates(
        &mut self,
        candidates: &[f32],
        d: usize,
        weights: &[f32],
        k: usize,
        seed: u64,
    ) -> Result<Vec<f32>>;
}

/// The remote partitions as the Lloyd loop sees them (the data of
/// [`KMeans::fit_remote`]).
pub(super) struct Driven<'p, R: RemoteKMeans + ?Sized> {
    remote: &'p mut R,
    /// First global row of each partition, and N.
    starts: Vec<usize>,
    d: usize,
    /// The centroids of the last pass: what the next pass counts changed labels against.
    last: Option<Vec<f32>>,
}

fn mismatch(what: &str) -> Error {
    Error::Source {
        reason: format!("a remote partition answered {what}"),
    }
}

impl<'p, R: RemoteKMeans + ?Sized> Driven<'p, R> {
    /// The partitions `remote` names, numbered in order.
    ///
    /// Errors: no rows or no features ([`Error::EmptyData`]).
    pub(super) fn open(remote: &'p mut R) -> Result<Self> {
        let (sizes, d) = remote.partition_shapes();
        let mut starts = vec![0];
        for s in &sizes {
            starts.push(starts.last().copied().unwrap_or(0) + s);
        }
        let n = *starts.last().expect("starts has N");
        if n == 0 || d == 0 {
            return Err(Error::EmptyData {
                what: "partitions",
                missing: if d == 0 { "columns" } else { "rows" },
            });
        }
        Ok(Self {
            remote,
            starts,
            d,
            last: None,
        })
    }

    fn n_parts(&self) -> usize {
        self.starts.len() - 1
    }

    /// `request` sent to every partition; the replies in partition order.
    fn broadcast(&mut self, request: KMeansRequest) -> Result<Vec<KMeansReply>> {
        let requests = (0..self.n_parts()).map(|p| (p, request.clone())).collect();
        self.run(requests)
    }

    fn run(&mut self, requests: Vec<(usize, KMeansRequest)>) -> Result<Vec<KMeansReply>> {
        let asked = requests.len();
        let replies = self.remote.run(requests)?;
        if replies.len() != asked {
            return Err(mismatch(&format!(
                "{} replies to {asked} requests",
                replies.len()
            )));
        }
        Ok(replies)
    }

    /// The merged statistics of a pass, in partition order.
    fn merged_pass(
        &mut self,
        centroids: &[f32],
        previous: Option<Vec<f32>>,
    ) -> Result<KMeansStats> {
        let replies = self.broadcast(KMeansRequest::Pass {
            centroids: centroids.to_vec(),
            previous,
        })?;
        let mut merged = KMeansStats::empty(centroids, self.d)?;
        for reply in replies {
            match reply {
                KMeansReply::Stats(s) => merged.merge(&s)?,
                _ => return Err(mismatch("something other than statistics to a pass")),
            }
        }
        Ok(merged)
    }

    /// Σ over partitions, in order, of the k-means‖ cost of the candidates that the rounds
    /// ending at `ends` brought.
    fn cost(&mut self, candidates: &[f32], ends: &[usize]) -> Result<f64> {
        let replies = self.broadcast(KMeansRequest::Cost {
            candidates: candidates.to_vec(),
            ends: ends.to_vec(),
        })?;
        let mut phi = 0.0;
        for reply in replies {
            match reply {
                KMeansReply::Cost(c) if c.is_finite() => phi += c,
                _ => return Err(mismatch("something other than a finite cost")),
            }
        }
        Ok(phi)
    }

    /// Global indices drawn by one k-means‖ round, ascending.
    fn sample(
        &mut self,
        (candidates, ends): (&[f32], &[usize]),
        ell: f64,
        phi: f64,
        seed: u64,
        round: u32,
    ) -> Result<Vec<usize>> {
        let requests = (0..self.n_parts())
            .map(|p| {
                let request = KMeansRequest::Sample {
                    candidates: candidates.to_vec(),
                    ends: ends.to_vec(),
                    ell,
                    phi,
                    seed,
                    round,
                    partition: p as u32,
                };
                (p, request)
            })
            .collect();
        let mut picked = Vec::new();
        for (p, reply) in self.run(requests)?.into_iter().enumerate() {
            let size = self.starts[p + 1] - self.starts[p];
            match reply {
                KMeansReply::Sample(local) if local.iter().all(|&i| i < size) => {
                    picked.extend(local.into_iter().map(|i| self.starts[p] + i));
                }
                _ => return Err(mismatch("something other than rows of its own to a draw")),
            }
        }
        Ok(picked)
    }

    /// Σ over partitions, in order, of each candidate's nearest rows.
    fn candidate_weights(&mut self, candidates: &[f32], ends: &[usize]) -> Result<Vec<f32>> {
        let replies = self.broadcast(KMeansRequest::Weights {
            candidates: candidates.to_vec(),
            ends: ends.to_vec(),
        })?;
        let mut weights = vec![0f64; candidates.len() / self.d];
        for reply in replies {
            match reply {
                KMeansReply::Weights(w) if w.len() == weights.len() => {
                    weights.iter_mut().zip(w).for_each(|(sum, v)| *sum += v);
                }
                _ => return Err(mismatch("something other than one weight per candidate")),
            }
        }
        Ok(weights.iter().map(|&w| w as f32).collect())
    }

    /// k-means‖ over the partitions (module docs).
    fn parallel_seeds(
        &mut self,
        k: usize,
        oversampling: f64,
        rounds: usize,
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<f32>> {
        let (n, d) = (*self.starts.last().expect("N"), self.d);
        let first = random_rows(rng, n, 1, None)?[0];
        let mut chosen = vec![first];
        let mut in_c: HashSet<usize> = chosen.iter().copied().collect();
        let mut centres = self.rows(&chosen)?;
        // The candidates after each round that brought some: the partitions measure each
        // round's once (partition docs).
        let mut ends = vec![1];
        let ell = oversampling * k as f64;
        let stream_seed = rng.random::<u64>();
        for round in 0..rounds {
            let phi = self.cost(&centres, &ends)?;
            if phi <= 0.0 {
                break; // every row sits on a candidate
            }
            let drawn = (&centres[..], &ends[..]);
            let mut picked = self.sample(drawn, ell, phi, stream_seed, round as u32)?;
            picked.retain(|i| !in_c.contains(i));
            if picked.is_empty() {
                continue;
            }
            in_c.extend(picked.iter().copied());
            centres.extend(self.rows(&picked)?);
            chosen.extend(picked);
            ends.push(chosen.len());
        }
        if chosen.len() < k {
            // Top up with distinct rows not chosen yet (as the single-device k-means‖).
            let rest: Vec<usize> = (0..n).filter(|i| !in_c.contains(i)).collect();
            let extra = rand::seq::index::sample(rng, rest.len(), k - chosen.len());
            let picked: Vec<usize> = extra.iter().map(|j| rest[j]).collect();
            centres.extend(self.rows(&picked)?);
            chosen.extend(picked);
        }
        if chosen.len() == k {
            return Ok(centres);
        }
        let weights = self.candidate_weights(&centres, &ends)?;
        let seed = rng.random::<u64>();
        let seeds = self
            .remote
            .seed_candidates(&centres, d, &weights, k, seed)?;
        KMeansStats::empty(&seeds, d)?;
        if seeds.len() != k * d {
            return Err(mismatch(&format!(
                "{} seed values, expected k x d = {k} x {d}",
                seeds.len()
            )));
        }
        Ok(seeds)
    }

    /// The first centroids of one restart (module docs).
    pub(super) fn start(&mut self, params: &KMeans, rng: &mut ChaCha8Rng) -> Result<Vec<f32>> {
        // The first pass of a run counts no changed labels (the loop ignores them).
        self.last = None;
        let (n, d) = (*self.starts.last().expect("N"), self.d);
        match &params.init {
            KMeansInit::Centroids(c) => Ok(c.iter().map(|&v| v as f32).collect()),
            KMeansInit::Random => self.rows(&random_rows(rng, n, params.k, None)?),
            KMeansInit::KMeansPlusPlus => {
                let m = super::plus_plus_sample_size(n, usize::MAX, params.k);
                let sample = self.rows(&uniform_sample(rng, n, m))?;
                let seed = rng.random::<u64>();
                let ones = vec![1.0f32; m];
                self.remote
                    .seed_candidates(&sample, d, &ones, params.k, seed)
            }
            KMeansInit::KMeansParallel {
                oversampling,
                rounds,
            } => self.parallel_seeds(params.k, *oversampling, *rounds, rng),
        }
    }
}

impl<R: RemoteKMeans + ?Sized> LloydData for Driven<'_, R> {
    fn shape(&self) -> (usize, usize) {
        (*self.starts.last().expect("N"), self.d)
    }

    fn pass(&mut self, centroids: &[f32]) -> Result<KMeansStats> {
        let previous = self.last.take();
        let stats = self.merged_pass(centroids, previous)?;
        self.last = Some(centroids.to_vec());
        Ok(stats)
    }

    fn labels_and_distances(&mut self) -> Result<(Vec<u32>, Vec<f32>)> {
        let centroids = self
            .last
            .clone()
            .ok_or_else(|| Error::invalid("labels", "no pass has run yet"))?;
        let replies = self.broadcast(KMeansRequest::Labels { centroids })?;
        let (mut labels, mut dists) = (Vec::new(), Vec::new());
        for (p, reply) in replies.into_iter().enumerate() {
            let size = self.starts[p + 1] - self.starts[p];
            match reply {
                KMeansReply::Labels {
                    labels: l,
                    sq_dists: s,
                } if l.len() == size && s.len() == size => {
                    labels.extend(l);
                    dists.extend(s);
                }
                _ => return Err(mismatch("something other than one label per row")),
            }
        }
        Ok((labels, dists))
    }

    fn final_labels(&mut self) -> Result<Vec<u32>> {
        Ok(Vec::new())
    }

    fn farthest_rows(&mut self, at_least: usize) -> Result<Vec<(usize, u32, f32)>> {
        let centroids = self
            .last
            .clone()
            .ok_or_else(|| Error::invalid("labels", "no pass has run yet"))?;
        let replies = self.broadcast(KMeansRequest::Farthest {
            centroids,
            at_least,
        })?;
        let mut far = Vec::new();
        for (p, reply) in replies.into_iter().enumerate() {
            let size = self.starts[p + 1] - self.starts[p];
            match reply {
                KMeansReply::Farthest(rows) if rows.iter().all(|&(r, _, _)| r < size) => {
                    far.extend(rows.into_iter().map(|(r, l, d)| (self.starts[p] + r, l, d)));
                }
                _ => {
                    return Err(mismatch(
                        "something other than rows of its own, farthest first",
                    ))
                }
            }
        }
        // Each partition's first rows of the order hold the first rows of the whole order.
        far.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
        far.truncate(at_least.max(1));
        Ok(far)
    }

    fn rows(&mut self, indices: &[usize]) -> Result<Vec<f32>> {
        let n = *self.starts.last().expect("N");
        let mut wanted: Vec<Vec<(usize, usize)>> = vec![Vec::new(); self.n_parts()];
        for (slot, &i) in indices.iter().enumerate() {
            if i >= n {
                return Err(Error::Source {
                    reason: format!("row {i} was asked for, the partitions hold {n}"),
                });
            }
            // The last partition starting at or before i (empty partitions are skipped).
            let p = self.starts.partition_point(|&s| s <= i) - 1;
            wanted[p].push((slot, i - self.starts[p]));
        }
        let requests: Vec<(usize, KMeansRequest)> = wanted
            .iter()
            .enumerate()
            .filter(|(_, w)| !w.is_empty())
            .map(|(p, w)| {
                let indices = w.iter().map(|&(_, local)| local).collect();
                (p, KMeansRequest::Rows { indices })
            })
            .collect();
        let parts: Vec<usize> = requests.iter().map(|&(p, _)| p).collect();
        let d = self.d;
        let mut out = vec![0f32; indices.len() * d];
        for (p, reply) in parts.into_iter().zip(self.run(requests)?) {
            match reply {
                KMeansReply::Rows(values) if values.len() == wanted[p].len() * d => {
                    for (j, &(slot, _)) in wanted[p].iter().enumerate() {
                        out[slot * d..(slot + 1) * d].copy_from_slice(&values[j * d..(j + 1) * d]);
                    }
                }
                _ => return Err(mismatch("another number of rows than asked for")),
            }
        }
        Ok(out)
    }

    fn row_weights(&self) -> Option<&[f32]> {
        None
    }
}

/// The rows at global `indices` (partitions numbered in order) of remote partitions: what
/// the mixtures' remote starts gather.
pub(crate) fn remote_rows(
    remote: &mut (impl RemoteKMeans + ?Sized),
    indices: &[usize],
) -> Result<Vec<f32>> {
    Driven::open(remote)?.rows(indices)
}

/// Greedy k-means++ seeds of remote partitions on a uniform sample of their rows drawn from
/// `rng` (the k-means++ start of [`KMeans::fit_remote`]).
pub(crate) fn remote_plus_plus_seeds(
    remote: &mut (impl RemoteKMeans + ?Sized),
    k: usize,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f32>> {
    Driven::open(remote)?.start(&KMeans::new(k), rng)
}
