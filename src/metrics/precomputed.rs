//! The silhouette from a precomputed N x N distance matrix (scikit-learn's
//! `silhouette_score(D, labels, metric="precomputed")`), on the host in f64: for distances
//! that are not Euclidean, or already at hand. The formulas are those of the GPU
//! [`silhouette`](super::silhouette()) (module docs of [`metrics`](super)); the matrix is
//! read once, row by row.

use super::{check_cluster_count, check_label_count, cluster_index};
use crate::error::{Error, Result};

/// The element type of a precomputed distance matrix: `f32` or `f64`. Its machine epsilon
/// sets how far from 0 the diagonal may be: at most 100·ε, scikit-learn's tolerance for
/// `metric="precomputed"` (a matrix computed in floating point rarely has exact zeros there).
pub trait DistanceValue: Copy + Into<f64> + private::Sealed {
    /// The machine epsilon of the type.
    const EPSILON: f64;
}

impl DistanceValue for f32 {
    const EPSILON: f64 = f32::EPSILON as f64;
}

impl DistanceValue for f64 {
    const EPSILON: f64 = f64::EPSILON;
}

mod private {
    /// Only f32 and f64 are distance values.
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The silhouette coefficient s(i) of every point, from the row-major N x N `distances`.
///
/// Errors ([`Error::InvalidParameter`]): a matrix that is not N x N, a value that is
/// negative or not finite, a diagonal value over 100·ε of the type (as scikit-learn), labels
/// of the wrong length, fewer than 2 or more than N − 1 clusters.
pub fn silhouette_samples_precomputed<T: DistanceValue>(
    distances: &[T],
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
                sums[of[j]] += d.into();
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
pub fn silhouette_precomputed<T: DistanceValue>(
    distances: &[T],
    n: usize,
    labels: &[u32],
) -> Result<f64> {
    let s = silhouette_samples_precomputed(distances, n, labels)?;
    Ok(s.iter().sum::<f64>() / n as f64)
}

/// Checks a precomputed distance matrix: N x N values, finite and ≥ 0, a diagonal within
/// 100·ε of 0.
pub(super) fn check_distances<T: DistanceValue>(distances: &[T], n: usize) -> Result<()> {
    if n == 0 || distances.len() != n * n {
        return Err(Error::invalid(
            "distances",
            format!(
                "a precomputed distance matrix must be N x N = {n} x {n}, got {} values",
                distances.len()
            ),
        ));
    }
    let value = |at: usize| -> f64 { distances[at].into() };
    if let Some(at) = (0..n * n).find(|&at| !(value(at).is_finite() && value(at) >= 0.0)) {
        return Err(Error::invalid(
            "distances",
            format!(
                "distance ({}, {}) is {}: distances must be finite and >= 0",
                at / n,
                at % n,
                value(at)
            ),
        ));
    }
    let tolerance = 100.0 * T::EPSILON;
    if let Some(i) = (0..n).find(|&i| value(i * n + i) > tolerance) {
        return Err(Error::invalid(
            "distances",
            format!(
                "the precomputed distance matrix has {} on its diagonal at row {i}: the distance from a point to itself must be 0 (within 100 x the type's epsilon, {tolerance:e})",
                value(i * n + i)
            ),
        ));
    }
    Ok(())
}
