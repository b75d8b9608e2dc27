//! Internal criteria of a labelling, on the host in f64: how compact and separated the
//! clusters are, with no ground truth.
//!
//! With clusters C₁..C_K of sizes n_c (the distinct label values, in any numbering),
//! centroids μ_c, the overall mean μ and the Euclidean distance ‖·‖:
//!
//! ```text
//! inertia = W = Σᵢ ‖xᵢ − μ_{C(i)}‖²
//! CH = [Σ_c n_c ‖μ_c − μ‖² / (K − 1)] / [W / (N − K)]           (Caliński & Harabasz 1974)
//! DB = (1/K) Σ_c max_{c' ≠ c} (S_c + S_c') / ‖μ_c − μ_c'‖,        (Davies & Bouldin 1979)
//!      S_c = mean_{i ∈ C_c} ‖xᵢ − μ_c‖
//! ```
//!
//! as scikit-learn's `calinski_harabasz_score` and `davies_bouldin_score`, edge cases
//! included: CH is 1 when W = 0; DB is 0 when every S_c is 0, and two clusters with the
//! same centroid count as infinitely far apart (their ratio is 0). Both need
//! 2 ≤ K ≤ N − 1.
//!
//! They take f32 ([`Matrix`](crate::Matrix)) or f64 ([`Matrix64`](crate::Matrix64)) rows
//! and compute in f64, so f64 data far from 0 keep every digit.
//!
//! Each criterion reads the data twice: centroids (sums per cluster in f64) first, then
//! distances to them, so nothing is computed as a difference of large sums.

use super::{check_cluster_count, check_label_count, cluster_index};
use crate::data::HostMatrix;
use crate::error::Result;

/// Per-cluster sizes and centroids of a labelling, and each row's cluster position.
struct Clusters {
    /// Cluster (position among the distinct labels) of each row.
    of_row: Vec<usize>,
    /// Rows in each cluster.
    sizes: Vec<usize>,
    /// Centroids, K x D row-major.
    centroids: Vec<f64>,
}

impl Clusters {
    /// The clusters of `labels` over the rows of `x` (one label per row, checked).
    fn of(x: &impl HostMatrix, labels: &[u32]) -> Result<Self> {
        check_label_count(labels, x.n_rows())?;
        let (ids, of_row) = cluster_index(labels);
        let (k, d) = (ids.len(), x.n_features());
        let mut sizes = vec![0usize; k];
        let mut centroids = vec![0.0f64; k * d];
        for (i, &c) in of_row.iter().enumerate() {
            sizes[c] += 1;
            for (s, &v) in centroids[c * d..(c + 1) * d]
                .iter_mut()
                .zip(x.values_of_row(i))
            {
                *s += v.into();
            }
        }
        for (c, &size) in sizes.iter().enumerate() {
            for s in &mut centroids[c * d..(c + 1) * d] {
                *s /= size as f64;
            }
        }
        Ok(Self {
            of_row,
            sizes,
            centroids,
        })
    }

    fn k(&self) -> usize {
        self.sizes.len()
    }

    fn centroid(&self, c: usize) -> &[f64] {
        let d = self.centroids.len() / self.k();
        &self.centroids[c * d..(c + 1) * d]
    }

    /// ‖xᵢ − μ_{C(i)}‖² of row i.
    fn squared_distance(&self, x: &impl HostMatrix, i: usize) -> f64 {
        let mu = self.centroid(self.of_row[i]);
        x.values_of_row(i)
            .iter()
            .zip(mu)
            .map(|(&v, m)| (v.into() - m).powi(2))
            .sum()
    }

    /// Σᵢ ‖xᵢ − μ_{C(i)}‖².
    fn within(&self, x: &impl HostMatrix) -> f64 {
        (0..x.n_rows()).map(|i| self.squared_distance(x, i)).sum()
    }
}

/// ‖a − b‖².
fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum()
}

/// Calinski–Harabasz index of a labelling of `x` (higher is better; module docs).
///
/// Errors: [`Error::InvalidParameter`](crate::Error::InvalidParameter) for labels of the
/// wrong length, fewer than 2 or more than N − 1 clusters.
pub fn calinski_harabasz(x: &impl HostMatrix, labels: &[u32]) -> Result<f64> {
    let clusters = Clusters::of(x, labels)?;
    let (n, k, d) = (x.n_rows(), clusters.k(), x.n_features());
    check_cluster_count("Calinski-Harabasz", k, n)?;
    // The overall mean, as the size-weighted mean of the centroids.
    let mut mean = vec![0.0f64; d];
    for c in 0..k {
        for (m, v) in mean.iter_mut().zip(clusters.centroid(c)) {
            *m += clusters.sizes[c] as f64 * v;
        }
    }
    mean.iter_mut().for_each(|m| *m /= n as f64);
    let between: f64 = (0..k)
        .map(|c| clusters.sizes[c] as f64 * squared_distance(clusters.centroid(c), &mean))
        .sum();
    let within = clusters.within(x);
    if within == 0.0 {
        return Ok(1.0);
    }
    Ok(between * (n - k) as f64 / (within * (k - 1) as f64))
}

/// Davies–Bouldin index of a labelling of `x` (lower is better; module docs).
///
/// Errors: [`Error::InvalidParameter`](crate::Error::InvalidParameter) for labels of the
/// wrong length, fewer than 2 or more than N − 1 clusters.
pub fn davies_bouldin(x: &impl HostMatrix, labels: &[u32]) -> Result<f64> {
    let clusters = Clusters::of(x, labels)?;
    let (n, k) = (x.n_rows(), clusters.k());
    check_cluster_count("Davies-Bouldin", k, n)?;
    let mut spread = vec![0.0f64; k];
    for i in 0..n {
        spread[clusters.of_row[i]] += clusters.squared_distance(x, i).sqrt();
    }
    for (s, &size) in spread.iter_mut().zip(&clusters.sizes) {
        *s /= size as f64;
    }
    if spread.iter().all(|&s| s == 0.0) {
        return Ok(0.0);
    }
    let worst_ratio = |c: usize| {
        (0..k)
            .filter(|&o| o != c)
            .map(|o| {
                let separation =
                    squared_distance(clusters.centroid(c), clusters.centroid(o)).sqrt();
                // Coinciding centroids count as infinitely far apart (scikit-learn).
                if separation == 0.0 {
                    0.0
                } else {
                    (spread[c] + spread[o]) / separation
                }
            })
            .fold(0.0f64, f64::max)
    };
    Ok((0..k).map(worst_ratio).sum::<f64>() / k as f64)
}

/// Within-cluster sum of squares Σᵢ ‖xᵢ − μ_{C(i)}‖² around the clusters' means (any number
/// of clusters).
///
/// Errors: [`Error::InvalidParameter`](crate::Error::InvalidParameter) for labels of the
/// wrong length.
pub fn inertia(x: &impl HostMatrix, labels: &[u32]) -> Result<f64> {
    Ok(Clusters::of(x, labels)?.within(x))
}
