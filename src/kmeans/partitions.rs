//! K-Means with its rows split across devices (the data of
//! [`KMeans::fit_partitions`](crate::KMeans::fit_partitions)).
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

use super::lloyd::LloydData;
use super::stream::Streamed;
use super::{KMeans, KMeansStats};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::source::{check_shape, RowSource};

/// The partitions of one fit, each streamed on its own device.
pub(super) struct Partitioned<'a> {
    parts: Vec<Streamed<'a, dyn RowSource + 'a>>,
    /// First global row of each partition, and N.
    starts: Vec<usize>,
    d: usize,
    /// The first partition's device, which seeds.
    first_gpu: &'a Gpu,
}

impl<'a> Partitioned<'a> {
    /// The partitions `parts` (each a source on its device, rows numbered in order), opened
    /// for `k` clusters.
    ///
    /// Errors: no partitions, partitions with different feature counts
    /// ([`Error::FeatureMismatch`]), and the sources' and devices' errors.
    pub(super) fn open(parts: &[(&'a Gpu, &'a (dyn RowSource + 'a))], k: usize) -> Result<Self> {
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
            streamed.push(Streamed::open(gpu, source, k, None)?);
        }
        Ok(Self {
            parts: streamed,
            starts,
            d,
            first_gpu,
        })
    }

    /// Random rows, given centroids, or k-means++ / k-means‖ on a sample of the global rows
    /// (on the first device), as a streamed fit seeds.
    pub(super) fn start(&self, params: &KMeans, rng: &mut ChaCha8Rng) -> Result<Vec<f32>> {
        super::seeding::host_start(
            self.first_gpu,
            self.shape(),
            |idx| self.gather(idx),
            None,
            (params, usize::MAX),
            rng,
        )
    }
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
                .map(|part| scope.spawn(move || part.stats(centroids)))
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
