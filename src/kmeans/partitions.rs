//! K-Means with its rows split across devices: [`KMeans::fit_partitions`].
//!
//! Each partition (a [`RowSource`] on its own [`Gpu`]) runs the assignment and the
//! per-cluster sums of every Lloyd iteration on its device, on a thread of its own, streaming
//! its rows when they exceed that device's budget. The [`KMeansStats`] that come back merge
//! in f64 (in partition order, so the result does not depend on which device finishes
//! first), and the update, the empty-cluster repair and the stopping rules run once on the
//! host, exactly as for one device. The model therefore equals that of one device holding
//! all rows, within f32 rounding. Rows are numbered across the partitions in order; the
//! seeding draws from that numbering (k-means++ from a sample of it, on the first device).

use rand_chacha::ChaCha8Rng;

use super::lloyd::{fit_restarts, LloydData};
use super::stream::Streamed;
use super::{KMeans, KMeansInit, KMeansModel, KMeansStats};
use crate::data::Matrix;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, GpuMatrix};
use crate::source::{check_shape, RowSource};

/// The partitions of one fit, each streamed on its own device.
struct Partitioned<'a> {
    parts: Vec<Streamed<'a, dyn RowSource + 'a>>,
    /// First global row of each partition, and N.
    starts: Vec<usize>,
    d: usize,
}

impl Partitioned<'_> {
    /// The rows `indices` (global numbering), gathered from their partitions.
    fn gather(&self, indices: &[usize]) -> Result<Vec<f32>> {
        let d = self.d;
        let mut out = vec![0f32; indices.len() * d];
        for (p, part) in self.parts.iter().enumerate() {
            let (lo, hi) = (self.starts[p], self.starts[p + 1]);
            let mine: Vec<(usize, usize)> = indices
                .iter()
                .enumerate()
                .filter(|(_, &r)| (lo..hi).contains(&r))
                .map(|(i, &r)| (i, r - lo))
                .collect();
            if mine.is_empty() {
                continue;
            }
            let local: Vec<usize> = mine.iter().map(|&(_, r)| r).collect();
            let rows = part.source().gather(&local)?;
            for (j, &(i, _)) in mine.iter().enumerate() {
                out[i * d..(i + 1) * d].copy_from_slice(&rows[j * d..(j + 1) * d]);
            }
        }
        Ok(out)
    }
}

impl LloydData for Partitioned<'_> {
    fn shape(&self) -> (usize, usize) {
        (*self.starts.last().expect("starts has N"), self.d)
    }

    fn pass(&mut self, centroids: &[f32]) -> Result<KMeansStats> {
        let results: Vec<Result<KMeansStats>> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .parts
                .iter_mut()
                .map(|part| scope.spawn(move || part.pass(centroids)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut merged = KMeansStats::empty(centroids, self.d)?;
        for r in results {
            merged.merge(&r?)?;
        }
        Ok(merged)
    }

    fn labels_and_distances(&mut self) -> Result<(Vec<u32>, Vec<f32>)> {
        let mut labels = Vec::new();
        let mut dists = Vec::new();
        for part in &mut self.parts {
            let (l, d) = part.labels_and_distances()?;
            labels.extend(l);
            dists.extend(d);
        }
        Ok((labels, dists))
    }

    fn rows(&mut self, indices: &[usize]) -> Result<Vec<f32>> {
        self.gather(indices)
    }

    fn row_weights(&self) -> Option<&[f32]> {
        None
    }
}

impl KMeans {
    /// Fits on rows split across devices: partition i (its rows numbered after those of
    /// partitions 0..i) runs on `parts[i].0` — several [`Gpu`]s from [`Gpu::all`], or
    /// several devices opened on one adapter. Each partition streams its rows under its own
    /// device's budget; every iteration merges the partitions' [`KMeansStats`] (module docs
    /// of `kmeans::partitions`). The model equals a fit of all rows on one device within f32
    /// rounding, and its labels follow the partitions in order.
    ///
    /// Errors: no partitions, partitions with different feature counts
    /// ([`Error::FeatureMismatch`]), and those of [`KMeans::fit_source`].
    pub fn fit_partitions<'a>(
        &self,
        parts: &[(&'a Gpu, &'a (dyn RowSource + 'a))],
    ) -> Result<KMeansModel> {
        self.require_euclidean("fit_partitions")?;
        let Some(&(first_gpu, first)) = parts.first() else {
            return Err(Error::EmptyData {
                what: "partition list",
                missing: "rows",
            });
        };
        let (_, d) = check_shape(first)?;
        let mut starts = vec![0];
        let mut streamed = Vec::with_capacity(parts.len());
        for &(gpu, source) in parts {
            let (n, dp) = check_shape(source)?;
            if dp != d {
                return Err(Error::FeatureMismatch {
                    expected: d,
                    found: dp,
                });
            }
            starts.push(starts.last().copied().unwrap_or(0) + n);
            streamed.push(Streamed::open(gpu, source, self.k)?);
        }
        let n = *starts.last().expect("one partition");
        self.validate(n, d)?;
        let mut data = Partitioned {
            parts: streamed,
            starts,
            d,
        };
        fit_restarts(self, &mut data, |data, rng| {
            initial_centroids(self, first_gpu, data, rng)
        })
    }
}

/// Random rows, given centroids, or greedy k-means++ on a sample of the global rows (on the
/// first device), as a streamed fit seeds.
fn initial_centroids(
    params: &KMeans,
    gpu: &Gpu,
    data: &Partitioned<'_>,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f32>> {
    let (n, d) = data.shape();
    match &params.init {
        KMeansInit::Centroids(c) => Ok(c.iter().map(|&v| v as f32).collect()),
        KMeansInit::Random => data.gather(&rand::seq::index::sample(rng, n, params.k).into_vec()),
        KMeansInit::KMeansPlusPlus | KMeansInit::KMeansParallel { .. } => {
            let m = super::stream::plus_plus_sample_size(n, usize::MAX, params.k);
            let mut idx = rand::seq::index::sample(rng, n, m).into_vec();
            idx.sort_unstable();
            let rows = data.gather(&idx)?;
            let sample = GpuMatrix::upload(gpu, &Matrix::new(&rows, d)?)?;
            super::parallel::device_seeds(gpu, &sample, params.k, None, &params.init, rng)
        }
    }
}
