//! The silhouette from a precomputed N x N distance matrix (scikit-learn's
//! `silhouette_score(D, labels, metric="precomputed")`), on the host in f64: for distances
//! that are not Euclidean, or already at hand. The formulas are those of the GPU
//! [`silhouette`](super::silhouette()) (module docs of [`metrics`](super)); the matrix is
//! read once, row by row.

use super::{check_cluster_count, check_label_count, cluster_index};
use crate::error::{Error, Result};

/// The silhouette coefficient s(i) of every point, from the row-major N x N `distances`.
///
/// Errors ([`Error::InvalidParameter`]): a matrix that is not N x N, a value that is
/// negative or not finite, a non-zero diagonal (as scikit-learn), labels of the wrong
/// length, fewer than 2 or more than N − 1 clusters.
pub fn silhouette_samples_precomputed(
    distances: &[f64],
    n: usize,
    labels: &[u32],
) -> Result<Vec<f64>> {
    check_distances(distances, n)?;
    check_label_count(labels, n)?;
    let (ids, of) = cluster_index(labels);
    let k = ids.len();
    check_cluster_count("the silhouette", k, n)?;
    let mut sizes = vec![0usize; k];
    for &c in &of {
        sizes[c] += 1;
    }
    let mut sums = vec![0.0f64; k];
    Ok((0..n)
        .map(|i| {
            sums.fill(0.0);
            for (j, &d) in distances[i * n..(i + 1) * n].iter().enumerate() {
                sums[of[j]] += d;
            }
            let own = of[i];
            if sizes[own] == 1 {
                return 0.0;
            }
            let a = sums[own] / (sizes[own] - 1) as f64;
            let b = (0..k)
                .filter(|&c| c != own)
                .map(|c| sums[c] / sizes[c] as f64)
                .fold(f64::INFINITY, f64::min);
            let m = a.max(b);
            if m > 0.0 {
                (b - a) / m
            } else {
                0.0
            }
        })
        .collect())
}

/// The mean silhouette coefficient from a precomputed distance matrix (see
/// [`silhouette_samples_precomputed`] for the checks).
pub fn silhouette_precomputed(distances: &[f64], n: usize, labels: &[u32]) -> Result<f64> {
    let s = silhouette_samples_precomputed(distances, n, labels)?;
    Ok(s.iter().sum::<f64>() / n as f64)
}

/// Checks a precomputed distance matrix: N x N values, finite and ≥ 0, zero diagonal.
pub(super) fn check_distances(distances: &[f64], n: usize) -> Result<()> {
    if n == 0 || distances.len() != n * n {
        return Err(Error::invalid(
            "distances",
            format!(
                "a precomputed distance matrix must be N x N = {n} x {n}, got {} values",
                distances.len()
            ),
        ));
    }
    if let Some(at) = distances.iter().position(|d| !(d.is_finite() && *d >= 0.0)) {
        return Err(Error::invalid(
            "distances",
            format!(
                "distance ({}, {}) is {}: distances must be finite and >= 0",
                at / n,
                at % n,
                distances[at]
            ),
        ));
    }
    if let Some(i) = (0..n).find(|&i| distances[i * n + i] != 0.0) {
        return Err(Error::invalid(
            "distances",
            format!(
                "the precomputed distance matrix has {} on its diagonal at row {i}: the distance from a point to itself must be 0",
                distances[i * n + i]
            ),
        ));
    }
    Ok(())
}
