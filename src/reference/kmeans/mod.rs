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
//! **Spherical K-Means** (`Metric::Cosine`, Dhillon & Modha 2001): the rows are divided by
//! their norms first, and after every update each centroid is divided by its norm (a
//! centroid whose unit rows sum to zero keeps its previous value). On unit vectors
//! `||x − c||² = 2 − 2 cos(x, c)`, so the same assignment picks the largest cosine; the
//! reported inertia and history are `Σ (1 − cos) = ½ Σ ||x − c||²`.
//!
//! Everything here is written for clarity, not speed: direct `Σ (x − c)²` distances, one
//! point at a time, in f64.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::kmeans::{KMeans, KMeansInit, Metric};

pub mod minibatch;
#[cfg(test)]
mod tests;

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
    fit_with(
        x,
        n_features,
        params,
        &mut ChaCha8Rng::seed_from_u64(params.seed),
    )
}

/// [`fit`] drawing every restart's start from `rng` instead of a generator seeded with
/// `params.seed` (the K-Means start of a Gaussian mixture continues the mixture's generator).
///
/// Errors: those of [`fit`].
pub fn fit_with(
    x: &[f64],
    n_features: usize,
    params: &KMeans,
    rng: &mut ChaCha8Rng,
) -> Result<ReferenceKMeans> {
    crate::data::validate_row_major(x, n_features)?;
    let d = n_features;
    let n = x.len() / d;
    params.validate(n, d)?;
    let spherical = params.metric == Metric::Cosine;
    let unit_rows;
    let x = if spherical {
        unit_rows = unit_vectors(x, d, "data")?;
        &unit_rows[..]
    } else {
        x
    };

    let tol_abs = params.tol * mean_variance(x, d);
    // Given centroids leave nothing random to restart.
    let runs = match params.init {
        KMeansInit::Centroids(_) => 1,
        _ => params.n_init,
    };

    let mut best: Option<ReferenceKMeans> = None;
    for _ in 0..runs {
        let init = match &params.init {
            KMeansInit::KMeansPlusPlus => {
                kmeans_plus_plus(x, d, params.k, params.n_local_trials(), rng)
            }
            KMeansInit::Random => random_init(x, d, params.k, rng),
            KMeansInit::KMeansParallel { .. } => return Err(no_parallel()),
            KMeansInit::Centroids(c) if spherical => unit_vectors(c, d, "init")?,
            KMeansInit::Centroids(c) => c.clone(),
        };
        let mut run = lloyd_on(x, d, &init, params.max_iter, tol_abs, spherical);
        if spherical {
            run.inertia *= 0.5;
            run.inertia_history.iter_mut().for_each(|j| *j *= 0.5);
        }
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
    lloyd_on(x, d, init_centroids, max_iter, tol_abs, false)
}

/// Each row of `v` divided by its norm; a row of zeros is an [`Error::InvalidParameter`]
/// named `what`.
pub fn unit_vectors(v: &[f64], d: usize, what: &'static str) -> Result<Vec<f64>> {
    let mut out = v.to_vec();
    for (i, row) in out.chunks_mut(d).enumerate() {
        let norm = row.iter().map(|a| a * a).sum::<f64>().sqrt();
        if norm == 0.0 {
            return Err(Error::invalid(what, format!("row {i} is all zeros")));
        }
        row.iter_mut().for_each(|a| *a /= norm);
    }
    Ok(out)
}

/// [`lloyd`], with the centroids put back on the unit sphere after each update when
/// `spherical` (the rows must then be unit vectors).
fn lloyd_on(
    x: &[f64],
    d: usize,
    init_centroids: &[f64],
    max_iter: usize,
    tol_abs: f64,
    spherical: bool,
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
        let mut new_centroids = means(&sums, &counts, &centroids, d);
        if spherical {
            for (new, old) in new_centroids.chunks_mut(d).zip(centroids.chunks(d)) {
                let norm = new.iter().map(|a| a * a).sum::<f64>().sqrt();
                if norm > 0.0 {
                    new.iter_mut().for_each(|a| *a /= norm);
                } else {
                    new.copy_from_slice(old);
                }
            }
        }
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

/// The reference has no k-means‖: its seeds are checked by properties in
/// `tests/kmeans_parallel.rs` (distinct data rows, determinism, quality against k-means++).
pub(crate) fn no_parallel() -> Error {
    Error::invalid(
        "init",
        "the CPU reference implements k-means++, random and given starts, not k-means||",
    )
}
