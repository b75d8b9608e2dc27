//! K-Means in plain f64: the oracle the GPU implementation is checked against.
//!
//! K-Means looks for K centroids μ_1..μ_K and a labelling c_1..c_N of the N points that
//! minimise the *inertia* (within-cluster sum of squares)
//!
//! ```text
//! J(c, μ) = Σ_i ||x_i − μ_{c_i}||²
//! ```
//!
//! **Lloyd's algorithm** alternates two steps, each of which can only lower J:
//!
//! * assignment: `c_i = argmin_k ||x_i − μ_k||²` (ties go to the lowest k);
//! * update: `μ_k = (1 / |S_k|) Σ_{i ∈ S_k} x_i` with `S_k = { i : c_i = k }`.
//!
//! A cluster can come out of the assignment empty. As scikit-learn does, each empty cluster is
//! then given the point that is farthest from its own centroid (largest distance first), and
//! that point's contribution is taken out of its donor cluster's mean. Points of single-member
//! clusters are never taken, so no relocation empties another cluster.
//!
//! The loop stops when the labels did not change since the previous iteration, or when the
//! total squared centroid shift `Σ_k ||μ_k^new − μ_k^old||²` falls to or below
//! `tol · (1/D) Σ_j Var(x_·j)` (scikit-learn's tolerance, relative to the mean per-feature
//! population variance so that it does not depend on the data's scale), or after `max_iter`
//! iterations. A last assignment step then makes the reported labels and inertia match the
//! final centroids.
//!
//! **Initialisation.** Greedy k-means++ (Arthur & Vassilvitskii 2007, in scikit-learn's
//! greedy form): the first centroid is a uniformly chosen row; each next one is the best of
//! `2 + ⌊ln K⌋` candidates drawn with probability `D(x_i)² / Σ_j D(x_j)²`, where `D(x)` is
//! the distance from x to the nearest centroid chosen so far, "best" meaning the candidate
//! that leaves the smallest potential `Σ_i min(D(x_i)², ||x_i − c||²)`. `Random` takes K
//! distinct rows; `Centroids` uses the given ones. With several restarts (`n_init`) the run
//! with the lowest final inertia wins; all restarts draw from one ChaCha8 generator seeded
//! with `params.seed`, in sequence, so the same seed always gives the same result.
//!
//! Everything here is written for clarity, not speed: direct `Σ (x − c)²` distances, one
//! point at a time, in f64.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::kmeans::{KMeans, KMeansInit};

/// The outcome of one reference K-Means fit.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceKMeans {
    /// Final centroids, K x D row-major.
    pub centroids: Vec<f64>,
    /// Label of each point for the final centroids.
    pub labels: Vec<u32>,
    /// Inertia `Σ_i ||x_i − μ_{c_i}||²` for the final centroids and labels.
    pub inertia: f64,
    /// Number of Lloyd iterations run.
    pub n_iter: usize,
    /// Whether a stopping rule (labels unchanged, or shift within tolerance) ended the loop
    /// before `max_iter` ran out.
    pub converged: bool,
    /// Inertia at the assignment step of each iteration (centroids at the start of that
    /// iteration); never increases.
    pub inertia_history: Vec<f64>,
}

/// Fits K-Means to row-major `x` (`n_features` values per row) with `params`.
///
/// Errors: [`Error::EmptyData`] for no rows or no features, [`Error::Shape`] when `x.len()` is
/// not a multiple of `n_features`, [`Error::NonFinite`] with the row and column of the first
/// NaN or infinity, and whatever [`KMeans::validate`] reports for the parameters.
pub fn fit(x: &[f64], n_features: usize, params: &KMeans) -> Result<ReferenceKMeans> {
    crate::data::validate_row_major(x, n_features)?;
    let d = n_features;
    let n = x.len() / d;
    params.validate(n, d)?;

    let tol_abs = params.tol * mean_variance(x, d);
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    // Given centroids leave nothing random to restart.
    let runs = match params.init {
        KMeansInit::Centroids(_) => 1,
        _ => params.n_init,
    };

    let mut best: Option<ReferenceKMeans> = None;
    for _ in 0..runs {
        let init = match &params.init {
            KMeansInit::KMeansPlusPlus => {
                kmeans_plus_plus(x, d, params.k, params.n_local_trials(), &mut rng)
            }
            KMeansInit::Random => random_init(x, d, params.k, &mut rng),
            KMeansInit::Centroids(c) => c.clone(),
        };
        let run = lloyd(x, d, &init, params.max_iter, tol_abs);
        // Strictly lower, so that among equal runs the earliest wins.
        if best.as_ref().is_none_or(|b| run.inertia < b.inertia) {
            best = Some(run);
        }
    }
    best.ok_or_else(|| Error::invalid("n_init", "must be at least 1"))
}

/// Squared Euclidean distance between two equally long vectors.
fn sq_dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum()
}

/// Assigns every row of `x` to its nearest centroid.
///
/// Returns the labels and each point's squared distance to its centroid. Ties go to the
/// lowest centroid index. Returns empty vectors when `d` is 0 or there are no centroids.
pub fn assign(x: &[f64], d: usize, centroids: &[f64]) -> (Vec<u32>, Vec<f64>) {
    if d == 0 || centroids.len() < d {
        return (Vec::new(), Vec::new());
    }
    let mut labels = Vec::with_capacity(x.len() / d);
    let mut dists = Vec::with_capacity(x.len() / d);
    for row in x.chunks_exact(d) {
        let mut best = (0u32, f64::INFINITY);
        for (k, c) in centroids.chunks_exact(d).enumerate() {
            let dist = sq_dist(row, c);
            // Strict `<` keeps the lowest index on ties, the rule the GPU must follow too.
            if dist < best.1 {
                best = (k as u32, dist);
            }
        }
        labels.push(best.0);
        dists.push(best.1);
    }
    (labels, dists)
}

/// Inertia `Σ_i ||x_i − μ_{labels_i}||²` of `labels` under `centroids` (K x D row-major).
///
/// # Panics
///
/// If a label is not below the number of centroids.
pub fn inertia(x: &[f64], d: usize, centroids: &[f64], labels: &[u32]) -> f64 {
    if d == 0 {
        return 0.0;
    }
    x.chunks_exact(d)
        .zip(labels)
        .map(|(row, &l)| {
            let l = l as usize;
            sq_dist(row, &centroids[l * d..(l + 1) * d])
        })
        .sum()
}

/// Per-cluster coordinate sums (K x D) and member counts.
fn sums_and_counts(x: &[f64], d: usize, labels: &[u32], k: usize) -> (Vec<f64>, Vec<usize>) {
    let mut sums = vec![0.0; k * d];
    let mut counts = vec![0usize; k];
    if d == 0 {
        return (sums, counts);
    }
    for (row, &l) in x.chunks_exact(d).zip(labels) {
        let l = l as usize;
        counts[l] += 1;
        for (s, v) in sums[l * d..(l + 1) * d].iter_mut().zip(row) {
            *s += v;
        }
    }
    (sums, counts)
}

/// Means from sums and counts; an empty cluster keeps its row of `old`.
fn means(sums: &[f64], counts: &[usize], old: &[f64], d: usize) -> Vec<f64> {
    let mut out = old.to_vec();
    for (k, &c) in counts.iter().enumerate() {
        if c > 0 {
            for j in 0..d {
                out[k * d + j] = sums[k * d + j] / c as f64;
            }
        }
    }
    out
}

/// The update step without relocation: cluster means and member counts.
///
/// An empty cluster's row is copied from `old` (the previous centroids, K x D), so the
/// result never holds NaN.
///
/// # Panics
///
/// If a label is not below `k` or `old` has fewer than `k * d` values.
pub fn update_centroids(
    x: &[f64],
    d: usize,
    labels: &[u32],
    k: usize,
    old: &[f64],
) -> (Vec<f64>, Vec<usize>) {
    let (sums, counts) = sums_and_counts(x, d, labels, k);
    (means(&sums, &counts, &old[..k * d], d), counts)
}

/// Gives every empty cluster a point, as scikit-learn does, working on sums and counts.
///
/// `sums` (K x D) and `counts` are the per-cluster coordinate sums and sizes for `labels`;
/// `sq_dists` holds each point's squared distance to the centroid it was assigned to. Points
/// are taken farthest first (ties: lowest index first), skipping any whose cluster has a
/// single member; each taken point's coordinates move from its donor's sum to the empty
/// cluster. `labels` is left alone, as in scikit-learn. Returns how many clusters were
/// refilled.
///
/// A donor always exists while K ≤ N: a cluster with two or more members consists only of
/// points not yet visited, and there must be one while some cluster is still empty.
///
/// # Panics
///
/// If a label is not below `counts.len()` or the slices disagree in length.
pub fn relocate_empty_clusters(
    x: &[f64],
    d: usize,
    labels: &[u32],
    sq_dists: &[f64],
    sums: &mut [f64],
    counts: &mut [usize],
) -> usize {
    let empty: Vec<usize> = (0..counts.len()).filter(|&k| counts[k] == 0).collect();
    if empty.is_empty() || d == 0 {
        return 0;
    }
    let mut order: Vec<usize> = (0..labels.len()).collect();
    // Stable sort: equal distances keep ascending index order.
    order.sort_by(|&a, &b| sq_dists[b].total_cmp(&sq_dists[a]));

    let mut candidates = order.into_iter();
    let mut filled = 0;
    for &target in &empty {
        let Some(i) = candidates.find(|&i| counts[labels[i] as usize] > 1) else {
            break;
        };
        let donor = labels[i] as usize;
        let row = &x[i * d..(i + 1) * d];
        for j in 0..d {
            sums[donor * d + j] -= row[j];
            sums[target * d + j] = row[j];
        }
        counts[donor] -= 1;
        counts[target] = 1;
        filled += 1;
    }
    filled
}

/// Greedy k-means++ seeding (scikit-learn's `_kmeans_plusplus`); returns K x D centroids.
///
/// The first centroid is a uniformly drawn row. Each further one is chosen among
/// `n_local_trials` candidates drawn by D² sampling (probability proportional to the squared
/// distance to the nearest centroid so far; uniformly when every point already sits on a
/// centroid) as the one that minimises the new potential `Σ_i min(D(x_i)², ||x_i − c||²)`.
/// The candidates come from `u · potential` with `u` uniform in [0, 1), looked up in the
/// running sum of D², so that a point with D² = 0 is never drawn.
///
/// Expects validated input (1 ≤ k ≤ N, d ≥ 1); returns an empty vector when there are no
/// rows, `d` is 0 or `k` is 0. `n_local_trials` of 0 is treated as 1.
pub fn kmeans_plus_plus(
    x: &[f64],
    d: usize,
    k: usize,
    n_local_trials: usize,
    rng: &mut impl Rng,
) -> Vec<f64> {
    if d == 0 || k == 0 || x.len() < d {
        return Vec::new();
    }
    let n = x.len() / d;
    let row = |i: usize| &x[i * d..(i + 1) * d];
    let trials = n_local_trials.max(1);

    let first = rng.random_range(0..n);
    let mut centroids = row(first).to_vec();
    let mut closest: Vec<f64> = (0..n).map(|i| sq_dist(row(i), row(first))).collect();

    for _ in 1..k {
        let potential: f64 = closest.iter().sum();
        let mut cumsum = Vec::with_capacity(n);
        let mut acc = 0.0;
        for &c in &closest {
            acc += c;
            cumsum.push(acc);
        }

        let mut best: Option<(usize, f64, Vec<f64>)> = None;
        for _ in 0..trials {
            let u: f64 = rng.random();
            let cand = if potential > 0.0 {
                let r = u * potential;
                let i = cumsum.partition_point(|&c| c <= r);
                // Rounding can put r at or past the last running sum; fall back to the last
                // point that carries weight.
                if i < n {
                    i
                } else {
                    closest.iter().rposition(|&c| c > 0.0).unwrap_or(n - 1)
                }
            } else {
                // Every point coincides with a chosen centroid: D² sampling is undefined.
                ((u * n as f64) as usize).min(n - 1)
            };
            let new_closest: Vec<f64> = closest
                .iter()
                .enumerate()
                .map(|(i, &c)| c.min(sq_dist(row(i), row(cand))))
                .collect();
            let new_pot: f64 = new_closest.iter().sum();
            if best.as_ref().is_none_or(|b| new_pot < b.1) {
                best = Some((cand, new_pot, new_closest));
            }
        }
        if let Some((cand, _, new_closest)) = best {
            centroids.extend_from_slice(row(cand));
            closest = new_closest;
        }
    }
    centroids
}

/// K distinct rows drawn uniformly (`rand::seq::index::sample`), as K x D centroids.
///
/// Expects 1 ≤ k ≤ N and d ≥ 1; returns an empty vector when `d` is 0, and at most N rows.
pub fn random_init(x: &[f64], d: usize, k: usize, rng: &mut impl Rng) -> Vec<f64> {
    if d == 0 {
        return Vec::new();
    }
    let n = x.len() / d;
    rand::seq::index::sample(rng, n, k.min(n))
        .into_iter()
        .flat_map(|i| x[i * d..(i + 1) * d].iter().copied())
        .collect()
}

/// Lloyd's algorithm from `init_centroids` (K x D), as described in the module docs.
///
/// `tol_abs` is the absolute tolerance on the total squared centroid shift (`fit` passes
/// `tol · mean_variance(x, d)`). With `max_iter` of 0 only the final assignment runs.
/// Returns an empty result when `d` is 0.
pub fn lloyd(
    x: &[f64],
    d: usize,
    init_centroids: &[f64],
    max_iter: usize,
    tol_abs: f64,
) -> ReferenceKMeans {
    let k = init_centroids.len().checked_div(d).unwrap_or(0);
    let mut centroids = init_centroids[..k * d].to_vec();
    let mut inertia_history = Vec::new();
    let mut prev_labels: Option<Vec<u32>> = None;
    let mut converged = false;
    let mut n_iter = 0;

    while n_iter < max_iter {
        let (labels, dists) = assign(x, d, &centroids);
        inertia_history.push(dists.iter().sum());

        let (mut sums, mut counts) = sums_and_counts(x, d, &labels, k);
        relocate_empty_clusters(x, d, &labels, &dists, &mut sums, &mut counts);
        let new_centroids = means(&sums, &counts, &centroids, d);
        // Over the flat K x D arrays this is Σ_k ||μ_k^new − μ_k^old||².
        let shift = sq_dist(&new_centroids, &centroids);
        centroids = new_centroids;
        n_iter += 1;

        if prev_labels.as_ref() == Some(&labels) || shift <= tol_abs {
            converged = true;
            break;
        }
        prev_labels = Some(labels);
    }

    // The last update moved the centroids; re-assign so labels and inertia describe them.
    let (labels, dists) = assign(x, d, &centroids);
    ReferenceKMeans {
        centroids,
        labels,
        inertia: dists.iter().sum(),
        n_iter,
        converged,
        inertia_history,
    }
}

/// Mean over features of each feature's population variance, `(1/D) Σ_j Var(x_·j)`.
///
/// Two passes (mean, then squared deviations) for accuracy. Returns 0 for no rows or `d` 0.
pub fn mean_variance(x: &[f64], d: usize) -> f64 {
    if d == 0 || x.len() < d {
        return 0.0;
    }
    let n = (x.len() / d) as f64;
    let mut mean = vec![0.0; d];
    for row in x.chunks_exact(d) {
        for (m, v) in mean.iter_mut().zip(row) {
            *m += v;
        }
    }
    for m in &mut mean {
        *m /= n;
    }
    let mut var_sum = 0.0;
    for row in x.chunks_exact(d) {
        var_sum += sq_dist(row, &mean);
    }
    var_sum / n / d as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::metrics::adjusted_rand_index;

    /// Four tight blobs at the corners of a 20 x 20 square, `per` points each.
    fn four_blobs(per: usize, seed: u64) -> (Vec<f64>, Vec<u32>) {
        let corners = [[0.0, 0.0], [20.0, 0.0], [0.0, 20.0], [20.0, 20.0]];
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in 0..4 * per {
            let c = corners[i % 4];
            x.push(c[0] + rng.random_range(-1.0..1.0));
            x.push(c[1] + rng.random_range(-1.0..1.0));
            y.push((i % 4) as u32);
        }
        (x, y)
    }

    #[test]
    fn hand_checked_1d_case() {
        let x = [0.0, 1.0, 10.0, 11.0];
        let params = KMeans::new(2).init(KMeansInit::Centroids(vec![0.0, 1.0]));
        let r = fit(&x, 1, &params).unwrap();
        assert_eq!(r.centroids, vec![0.5, 10.5]);
        assert_eq!(r.labels, vec![0, 0, 1, 1]);
        assert_eq!(r.inertia, 1.0);
        assert!(r.converged);
        // Start (0, 1): {0}, {1, 10, 11} -> (0, 22/3); then {0, 1}, {10, 11} -> (0.5, 10.5);
        // then the labels repeat.
        assert_eq!(r.n_iter, 3);
        assert_eq!(r.inertia_history.len(), 3);
        assert!((r.inertia_history[0] - (81.0 + 100.0)).abs() < 1e-12);

        let r = fit(&x, 1, &KMeans::new(2).seed(3)).unwrap();
        let mut c = r.centroids.clone();
        c.sort_by(f64::total_cmp);
        assert_eq!(c, vec![0.5, 10.5]);
        assert_eq!(r.inertia, 1.0);
    }

    #[test]
    fn helpers_agree() {
        let x = [0.0, 0.0, 1.0, 0.0, 5.0, 5.0, 6.0, 5.0];
        let c = [0.5, 0.0, 5.5, 5.0];
        let (labels, dists) = assign(&x, 2, &c);
        assert_eq!(labels, vec![0, 0, 1, 1]);
        assert_eq!(dists, vec![0.25; 4]);
        assert_eq!(inertia(&x, 2, &c, &labels), 1.0);
        // Equidistant point goes to the lower index.
        let (l, _) = assign(&[1.0], 1, &[0.0, 2.0]);
        assert_eq!(l, vec![0]);

        let (m, counts) = update_centroids(&x, 2, &[0, 0, 0, 0], 2, &[9.0, 9.0, 7.0, 7.0]);
        assert_eq!(counts, vec![4, 0]);
        assert_eq!(m, vec![3.0, 2.5, 7.0, 7.0]);

        assert!((mean_variance(&[1.0, 10.0, 3.0, 10.0], 2) - 0.5).abs() < 1e-15);
    }

    #[test]
    fn inertia_history_never_increases() {
        let (x, _) = four_blobs(50, 1);
        for seed in 0..5 {
            let params = KMeans::new(6).init(KMeansInit::Random).seed(seed).tol(0.0);
            let r = fit(&x, 2, &params).unwrap();
            for w in r.inertia_history.windows(2) {
                assert!(w[1] <= w[0] * (1.0 + 1e-12), "{:?}", r.inertia_history);
            }
            let last = *r.inertia_history.last().unwrap();
            assert!(r.inertia <= last * (1.0 + 1e-12));
            assert!((inertia(&x, 2, &r.centroids, &r.labels) - r.inertia).abs() < 1e-9);
        }
    }

    #[test]
    fn kmeans_plus_plus_recovers_four_blobs() {
        let (x, y) = four_blobs(40, 7);
        for seed in 0..8 {
            let r = fit(&x, 2, &KMeans::new(4).seed(seed)).unwrap();
            let ari = adjusted_rand_index(&r.labels, &y).unwrap();
            assert_eq!(ari, 1.0, "seed {seed}");
            assert!(r.converged);
        }
    }

    #[test]
    fn kmeans_plus_plus_spreads_and_handles_duplicates() {
        let (x, _) = four_blobs(10, 2);
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let c = kmeans_plus_plus(&x, 2, 4, 3, &mut rng);
        assert_eq!(c.len(), 8);
        // One seed per corner.
        let mut corners: Vec<(i64, i64)> = c
            .chunks(2)
            .map(|p| ((p[0] / 10.0).round() as i64, (p[1] / 10.0).round() as i64))
            .collect();
        corners.sort();
        corners.dedup();
        assert_eq!(corners.len(), 4);

        // All points equal: potential 0, uniform fallback, no NaN.
        let same = [3.0; 10];
        let c = kmeans_plus_plus(&same, 1, 3, 2, &mut rng);
        assert_eq!(c, vec![3.0; 3]);
        let r = fit(&same, 1, &KMeans::new(3)).unwrap();
        assert!(r.centroids.iter().all(|v| v.is_finite()));
        assert_eq!(r.inertia, 0.0);
    }

    #[test]
    fn empty_cluster_relocation() {
        let x = [0.0, 1.0, 10.0, 11.0];
        // The third centroid is far from every point: empty on the first assignment.
        let r = lloyd(&x, 1, &[0.5, 10.5, 1000.0], 100, 0.0);
        assert!(r.centroids.iter().all(|v| v.is_finite()));
        let mut counts = [0; 3];
        for &l in &r.labels {
            counts[l as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c > 0), "{counts:?}");
        assert!(r.inertia <= 0.5 + 1e-12);

        // The farthest point (0, alone in its cluster) must not be taken; the next farthest
        // (10.0, index 1, tied with 10.2 but lower) is.
        let x = [0.0, 10.0, 10.1, 10.2];
        let c = [5.0, 10.1, 1e6];
        let (labels, dists) = assign(&x, 1, &c);
        assert_eq!(labels, vec![0, 1, 1, 1]);
        let (mut sums, mut counts) = sums_and_counts(&x, 1, &labels, 3);
        assert_eq!(
            relocate_empty_clusters(&x, 1, &labels, &dists, &mut sums, &mut counts),
            1
        );
        assert_eq!(counts, vec![1, 2, 1]);
        assert_eq!(sums[2], 10.0);
        assert!((sums[1] - 20.3).abs() < 1e-12);

        // Many empty clusters at once, k = n: every point becomes its own cluster.
        let r = lloyd(&x, 1, &[5.0, 1e6, 2e6, 3e6], 10, 0.0);
        let mut l = r.labels.clone();
        l.sort();
        assert_eq!(l, vec![0, 1, 2, 3]);
        assert_eq!(r.inertia, 0.0);
    }

    #[test]
    fn invalid_input_is_an_error() {
        let p = KMeans::new(1);
        assert!(matches!(
            fit(&[], 2, &p),
            Err(Error::EmptyData {
                missing: "rows",
                ..
            })
        ));
        assert!(matches!(
            fit(&[1.0], 0, &p),
            Err(Error::EmptyData {
                missing: "columns",
                ..
            })
        ));
        assert!(matches!(
            fit(&[1.0, 2.0, 3.0], 2, &p),
            Err(Error::Shape {
                len: 3,
                n_features: 2
            })
        ));
        assert!(matches!(
            fit(&[1.0, 2.0, 3.0, f64::NAN], 2, &p),
            Err(Error::NonFinite { row: 1, col: 1, .. })
        ));
        assert!(matches!(
            fit(&[f64::INFINITY, 2.0], 2, &p),
            Err(Error::NonFinite { row: 0, col: 0, .. })
        ));
        let x = [1.0, 2.0, 3.0, 4.0];
        assert!(matches!(
            fit(&x, 2, &KMeans::new(0)),
            Err(Error::InvalidParameter { name: "k", .. })
        ));
        assert!(matches!(
            fit(&x, 2, &KMeans::new(3)),
            Err(Error::TooFewSamples { k: 3, n: 2 })
        ));
        assert!(matches!(
            fit(&x, 2, &KMeans::new(1).n_init(0)),
            Err(Error::InvalidParameter { name: "n_init", .. })
        ));
        assert!(matches!(
            fit(&x, 2, &KMeans::new(1).max_iter(0)),
            Err(Error::InvalidParameter {
                name: "max_iter",
                ..
            })
        ));
        assert!(matches!(
            fit(&x, 2, &KMeans::new(1).tol(-1.0)),
            Err(Error::InvalidParameter { name: "tol", .. })
        ));
        assert!(matches!(
            fit(
                &x,
                2,
                &KMeans::new(1).init(KMeansInit::Centroids(vec![0.0]))
            ),
            Err(Error::InvalidParameter { name: "init", .. })
        ));
        assert!(matches!(
            fit(
                &x,
                2,
                &KMeans::new(1).init(KMeansInit::Centroids(vec![0.0, f64::NAN]))
            ),
            Err(Error::NonFinite { row: 0, col: 1, .. })
        ));
    }

    #[test]
    fn same_seed_same_result_and_restarts_keep_the_best() {
        let (x, _) = four_blobs(30, 3);
        for init in [KMeansInit::KMeansPlusPlus, KMeansInit::Random] {
            let p = KMeans::new(5).seed(42).init(init);
            let a = fit(&x, 2, &p).unwrap();
            let b = fit(&x, 2, &p).unwrap();
            assert_eq!(a, b);
            // The first restart of n_init = 4 is the n_init = 1 run (same generator stream),
            // so the best of four can only be as good or better.
            let best = fit(&x, 2, &p.clone().n_init(4)).unwrap();
            assert!(best.inertia <= a.inertia);
        }
    }

    #[cfg(feature = "datasets")]
    #[test]
    fn iris_matches_the_known_optimum() {
        let (xf, y) = crate::datasets::iris();
        let x: Vec<f64> = xf.iter().map(|&v| v as f64).collect();
        let r = fit(&x, 4, &KMeans::new(3).n_init(10)).unwrap();
        // scikit-learn's KMeans(3) on the f64 iris data: inertia 78.85144142614601, ARI
        // against the species 0.7302382722834697. The f32 copy moves the inertia by ~2e-6.
        assert!(
            (r.inertia - 78.85144142614601).abs() < 1e-4,
            "{}",
            r.inertia
        );
        let ari = adjusted_rand_index(&r.labels, &y).unwrap();
        assert!((ari - 0.7302382722834697).abs() < 1e-9, "{ari}");
    }
}
