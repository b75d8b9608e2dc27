//! [`KMeansStats`]: what one Lloyd pass over some rows gives, in a form that merges.
//!
//! For centroids c₁…c_K held fixed, a pass over rows x assigns each to its nearest centroid
//! and sums, per cluster k, the count Nₖ, the deviations Σ(x − cₖ) and the squared distances
//! Σ‖x − cₖ‖². All three are plain sums over rows, so the statistics of disjoint sets of rows
//! (chunks, devices, machines) add up to those of their union, and the Lloyd update
//! μₖ = cₖ + Σ(x − cₖ)/Nₖ and the inertia J = Σₖ Σ‖x − cₖ‖² follow from the merged sums
//! alone. Sums of deviations rather than of x keep the f32 device sums small (no
//! cancellation when the data sit far from the origin); merging is in f64.
//!
//! This is the interface a distributed driver uses: send the centroids out, run
//! [`KMeans::pass_stats`](crate::KMeans::pass_stats) on each partition, merge what comes
//! back, take [`KMeansStats::next_centroids`], repeat.

use crate::error::{Error, Result};

/// Per-cluster sums of one assignment pass against fixed centroids; merge with
/// [`KMeansStats::merge`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct KMeansStats {
    /// The K x D centroids the rows were assigned to (row-major, as the device saw them).
    pub centroids: Vec<f32>,
    /// Features D.
    pub n_features: usize,
    /// K x D: per cluster, Σ w·(x − cₖ) over its rows (w = 1 without sample weights).
    pub deviation_sums: Vec<f64>,
    /// Rows per cluster, Nₖ.
    pub counts: Vec<u64>,
    /// Sample weight per cluster, Wₖ = Σw (Nₖ when the rows are unweighted).
    pub weights: Vec<f64>,
    /// Per cluster, Σ w·‖x − cₖ‖² over its rows.
    pub sq_dists: Vec<f64>,
    /// Rows whose label differs from the one they had before the pass (fits only: zero
    /// from [`KMeans::pass_stats`](crate::KMeans::pass_stats)).
    pub changed: u64,
}

impl KMeansStats {
    /// Empty statistics for `centroids` (K x D, row-major): what merging starts from.
    ///
    /// Errors: [`Error::Shape`] when the length is not a multiple of D, or D is 0.
    pub fn empty(centroids: &[f32], n_features: usize) -> Result<Self> {
        if n_features == 0 || centroids.is_empty() || !centroids.len().is_multiple_of(n_features) {
            return Err(Error::Shape {
                len: centroids.len(),
                n_features,
            });
        }
        let k = centroids.len() / n_features;
        Ok(Self {
            centroids: centroids.to_vec(),
            n_features,
            deviation_sums: vec![0.0; centroids.len()],
            counts: vec![0; k],
            weights: vec![0.0; k],
            sq_dists: vec![0.0; k],
            changed: 0,
        })
    }

    /// Number of clusters K.
    pub fn k(&self) -> usize {
        self.counts.len()
    }

    /// Rows seen, Σₖ Nₖ.
    pub fn n_rows(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The inertia J = Σₖ Σ w·‖x − cₖ‖² of the rows seen against these centroids.
    pub fn inertia(&self) -> f64 {
        self.sq_dists.iter().sum()
    }

    /// Adds the statistics of other rows, assigned to the same centroids.
    ///
    /// Errors: [`Error::InvalidParameter`] when the centroids (or shapes) differ: sums
    /// against different centres do not add up to anything.
    pub fn merge(&mut self, other: &KMeansStats) -> Result<()> {
        self.check()?;
        other.check()?;
        if other.n_features != self.n_features || other.centroids != self.centroids {
            return Err(Error::invalid(
                "stats",
                "statistics computed against different centroids cannot be merged",
            ));
        }
        for (a, b) in self.deviation_sums.iter_mut().zip(&other.deviation_sums) {
            *a += b;
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        for (a, b) in self.weights.iter_mut().zip(&other.weights) {
            *a += b;
        }
        for (a, b) in self.sq_dists.iter_mut().zip(&other.sq_dists) {
            *a += b;
        }
        self.changed += other.changed;
        Ok(())
    }

    /// Checks that the parts fit together (statistics may come from another machine): K
    /// whole centroids of D features, per-cluster arrays of K values, every value finite.
    ///
    /// Errors: [`Error::InvalidParameter`] named `stats`, saying which part is wrong.
    pub fn check(&self) -> Result<()> {
        let d = self.n_features;
        let bad = |what: &str| {
            Err(Error::invalid(
                "stats",
                format!("K-Means statistics: {what}"),
            ))
        };
        if d == 0 || self.centroids.is_empty() || !self.centroids.len().is_multiple_of(d) {
            return bad("centroids are not whole rows of n_features values");
        }
        let k = self.centroids.len() / d;
        if self.deviation_sums.len() != k * d
            || self.counts.len() != k
            || self.weights.len() != k
            || self.sq_dists.len() != k
        {
            return bad("array lengths do not match K and D");
        }
        let finite = self.centroids.iter().all(|v| v.is_finite())
            && [&self.deviation_sums, &self.weights, &self.sq_dists]
                .iter()
                .all(|v| v.iter().all(|x| x.is_finite()));
        if !finite {
            return bad("values that are not finite");
        }
        Ok(())
    }

    /// The Lloyd update, K x D in f64: μₖ = cₖ + Σw(x − cₖ)/Wₖ; a cluster without weight
    /// keeps its centroid (the fits repair it; see [`KMeans`](crate::KMeans)).
    pub fn next_centroids(&self) -> Vec<f64> {
        let d = self.n_features.max(1);
        let mut next: Vec<f64> = self.centroids.iter().map(|&v| v as f64).collect();
        // Zipped rows: statistics whose parts do not fit ([`KMeansStats::check`]) update only
        // what they have, never index out of bounds.
        for ((row, dev), &weight) in next
            .chunks_mut(d)
            .zip(self.deviation_sums.chunks(d))
            .zip(&self.weights)
        {
            if weight > 0.0 {
                for (c, &s) in row.iter_mut().zip(dev) {
                    *c += s / weight;
                }
            }
        }
        next
    }

    /// Adds one device pass's f32 sums as the kernels lay them out: K x D deviation sums,
    /// K counts, and K pairs (Σ w·d², Σ w); the weights are the counts, exactly, when the
    /// rows are not `weighted`.
    pub(super) fn add_device(
        &mut self,
        deviation_sums: &[f32],
        counts: &[u32],
        sq_and_weight: &[f32],
        weighted: bool,
    ) {
        let pairs = sq_and_weight.chunks_exact(2);
        for (((w, sq), &count), pair) in self
            .weights
            .iter_mut()
            .zip(self.sq_dists.iter_mut())
            .zip(counts)
            .zip(pairs)
        {
            *sq += pair[0] as f64;
            *w += if weighted {
                pair[1] as f64
            } else {
                count as f64
            };
        }
        for (a, &b) in self.deviation_sums.iter_mut().zip(deviation_sums) {
            *a += b as f64;
        }
        for (a, &b) in self.counts.iter_mut().zip(counts) {
            *a += b as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_adds_sums_and_refuses_other_centroids() {
        let c = [0.0f32, 1.0, 2.0, 3.0];
        let mut a = KMeansStats::empty(&c, 2).unwrap();
        a.add_device(&[1.0, 2.0, 0.0, 0.0], &[2, 0], &[3.0, 0.0, 0.0, 0.0], false);
        let mut b = KMeansStats::empty(&c, 2).unwrap();
        b.add_device(&[1.0, 0.0, 4.0, 4.0], &[2, 4], &[1.0, 9.0, 8.0, 9.0], false);
        a.merge(&b).unwrap();
        assert_eq!(a.counts, vec![4, 4]);
        assert_eq!(a.n_rows(), 8);
        assert_eq!(a.inertia(), 12.0);
        assert_eq!(a.next_centroids(), vec![0.5, 1.5, 3.0, 4.0]);
        // Weighted: the denominators are the weight sums.
        let mut w = KMeansStats::empty(&c, 2).unwrap();
        w.add_device(&[1.0, 2.0, 0.0, 0.0], &[2, 0], &[3.0, 4.0, 0.0, 0.0], true);
        assert_eq!(w.next_centroids(), vec![0.25, 1.5, 2.0, 3.0]);
        assert_eq!(w.counts, vec![2, 0]);
        let other = KMeansStats::empty(&[0.0, 1.0, 2.0, 3.5], 2).unwrap();
        assert!(a.merge(&other).is_err());
        // An empty cluster keeps its centroid.
        let e = KMeansStats::empty(&c, 2).unwrap();
        assert_eq!(e.next_centroids(), vec![0.0, 1.0, 2.0, 3.0]);
        assert!(KMeansStats::empty(&c, 3).is_err());
        // Parts that do not fit (an edited message) are an error, not a panic.
        let mut short = KMeansStats::empty(&c, 2).unwrap();
        short.deviation_sums.pop();
        assert!(short.check().is_err());
        assert!(KMeansStats::empty(&c, 2).unwrap().merge(&short).is_err());
        assert_eq!(short.next_centroids().len(), 4);
        let mut nan = KMeansStats::empty(&c, 2).unwrap();
        nan.sq_dists[1] = f64::NAN;
        assert!(nan.check().is_err());
        assert!(KMeansStats::empty(&[], 3).is_err());
    }
}
