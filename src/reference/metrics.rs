//! Clustering criteria in plain f64: agreement between two labellings (Rand index, adjusted
//! Rand index) and internal criteria (silhouette, Calinski–Harabasz, Davies–Bouldin, inertia;
//! formulas below).
//!
//! **Agreement.**
//!
//! Both look at the `C(n, 2)` unordered pairs of points. Let `n_ij` be the contingency table
//! (points with label i in `a` and j in `b`), `a_i = Σ_j n_ij` and `b_j = Σ_i n_ij` its
//! margins. Then
//!
//! ```text
//! TP = Σ_ij C(n_ij, 2)           pairs together in both
//! FN = Σ_i C(a_i, 2) − TP        together in a, apart in b
//! FP = Σ_j C(b_j, 2) − TP        apart in a, together in b
//! TN = C(n, 2) − TP − FN − FP    apart in both
//!
//! RI  = (TP + TN) / C(n, 2)
//! ARI = (index − expected) / (max − expected)                      (Hubert & Arabie 1985)
//!     = 2 (TP·TN − FN·FP) / ((TP + FN)(FN + TN) + (TP + FP)(FP + TN))
//! ```
//!
//! with `index = Σ C(n_ij, 2)`, `expected = Σ C(a_i, 2) Σ C(b_j, 2) / C(n, 2)` and
//! `max = (Σ C(a_i, 2) + Σ C(b_j, 2)) / 2`. The second form is the one scikit-learn's
//! `adjusted_rand_score` uses; here its products are taken in 128-bit integers, so the
//! result is exact up to the final division. The ARI is 1 for identical partitions (whatever
//! the label values), about 0 for independent ones, and can be negative. Both indices are
//! symmetric in `a` and `b`. When no pair is split differently (FN = FP = 0, e.g. both
//! labellings put everything in one cluster) both are defined as 1, as in scikit-learn.
//!
//! **Internal criteria.**
//!
//! With clusters C_1..C_K of sizes n_c, centroids μ_c, the overall mean μ and d the Euclidean
//! distance:
//!
//! ```text
//!   a(i) = Σ_{j ∈ C(i), j ≠ i} d(i, j) / (n_{C(i)} − 1)       mean distance within i's cluster
//!   b(i) = min_{c ≠ C(i)} Σ_{j ∈ C_c} d(i, j) / n_c            nearest other cluster
//!   s(i) = (b − a) / max(a, b),   s(i) = 0 when n_{C(i)} = 1    (Rousseeuw 1987)
//!
//!   CH = [Σ_c n_c ‖μ_c − μ‖² / (K − 1)] / [Σ_i ‖x_i − μ_{C(i)}‖² / (N − K)]
//!                                                              (Caliński & Harabasz 1974)
//!   DB = (1/K) Σ_c max_{c' ≠ c} (S_c + S_c') / ‖μ_c − μ_c'‖,  S_c = mean_{i ∈ C_c} ‖x_i − μ_c‖
//!                                                              (Davies & Bouldin 1979)
//!   inertia = Σ_i ‖x_i − μ_{C(i)}‖²
//! ```
//!
//! as scikit-learn's silhouette_samples, calinski_harabasz_score and davies_bouldin_score
//! (labels are used as given: cluster ids are the distinct values, K their count; CH is 1 and
//! DB 0 when every within-cluster distance is zero, and two clusters with the same centroid
//! count as infinitely far apart in DB, as there).

use std::collections::HashMap;

use crate::error::{Error, Result};

/// Pair counts (TP, FN, FP, TN) over unordered pairs.
struct PairCounts {
    tp: u64,
    fn_: u64,
    fp: u64,
    tn: u64,
}

fn pairs(m: u64) -> u64 {
    // m (m − 1) is even, so halving first on whichever factor is even avoids overflow.
    if m.is_multiple_of(2) {
        (m / 2) * m.saturating_sub(1)
    } else {
        m * (m.saturating_sub(1) / 2)
    }
}

fn pair_counts(a: &[u32], b: &[u32]) -> Result<PairCounts> {
    if a.len() != b.len() {
        return Err(Error::invalid(
            "labels",
            format!(
                "the two labellings differ in length ({} and {})",
                a.len(),
                b.len()
            ),
        ));
    }
    if a.is_empty() {
        return Err(Error::EmptyData {
            what: "labelling",
            missing: "rows",
        });
    }
    let mut table: HashMap<(u32, u32), u64> = HashMap::new();
    let mut rows: HashMap<u32, u64> = HashMap::new();
    let mut cols: HashMap<u32, u64> = HashMap::new();
    for (&i, &j) in a.iter().zip(b) {
        *table.entry((i, j)).or_default() += 1;
        *rows.entry(i).or_default() += 1;
        *cols.entry(j).or_default() += 1;
    }
    let tp: u64 = table.values().map(|&m| pairs(m)).sum();
    let same_a: u64 = rows.values().map(|&m| pairs(m)).sum();
    let same_b: u64 = cols.values().map(|&m| pairs(m)).sum();
    let total = pairs(a.len() as u64);
    Ok(PairCounts {
        tp,
        fn_: same_a - tp,
        fp: same_b - tp,
        // Added before subtracting: TP is counted in both same_a and same_b.
        tn: total + tp - same_a - same_b,
    })
}

/// Rand index of two labellings of the same points: the fraction of point pairs on which
/// they agree (together in both or apart in both). In [0, 1].
///
/// Errors: [`Error::InvalidParameter`] when the lengths differ, [`Error::EmptyData`] when
/// they are empty. A single point gives 1.
pub fn rand_index(a: &[u32], b: &[u32]) -> Result<f64> {
    let p = pair_counts(a, b)?;
    let total = p.tp + p.fn_ + p.fp + p.tn;
    if total == 0 || p.fn_ + p.fp == 0 {
        return Ok(1.0);
    }
    Ok((p.tp + p.tn) as f64 / total as f64)
}

/// Adjusted Rand index (Hubert & Arabie) of two labellings, as scikit-learn's
/// `adjusted_rand_score`: 1 for the same partition, about 0 for chance agreement.
///
/// Errors: [`Error::InvalidParameter`] when the lengths differ, [`Error::EmptyData`] when
/// they are empty. Two labellings that split no pair differently (both a single cluster,
/// say) give 1.
pub fn adjusted_rand_index(a: &[u32], b: &[u32]) -> Result<f64> {
    let p = pair_counts(a, b)?;
    if p.fn_ == 0 && p.fp == 0 {
        return Ok(1.0);
    }
    let (tp, fn_, fp, tn) = (p.tp as i128, p.fn_ as i128, p.fp as i128, p.tn as i128);
    let num = 2 * (tp * tn - fn_ * fp);
    // Positive: FN > 0 or FP > 0 makes one of the two products at least FN² or FP².
    let den = (tp + fn_) * (fn_ + tn) + (tp + fp) * (fp + tn);
    Ok(num as f64 / den as f64)
}

/// Distinct labels in increasing order and each point's index among them.
fn clusters(labels: &[u32]) -> (Vec<u32>, Vec<usize>) {
    let mut ids: Vec<u32> = labels.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let index = labels
        .iter()
        .map(|l| ids.binary_search(l).expect("label present"))
        .collect();
    (ids, index)
}

/// Checks `x` (N x D, finite) against `labels` (N values) and returns N.
fn check_labelled(x: &[f64], d: usize, labels: &[u32]) -> Result<usize> {
    crate::data::validate_row_major(x, d)?;
    let n = x.len() / d;
    if labels.len() != n {
        return Err(Error::invalid(
            "labels",
            format!("{} labels for {n} rows", labels.len()),
        ));
    }
    Ok(n)
}

/// The number of distinct labels must be between 2 and N − 1 (scikit-learn's rule for the
/// silhouette, Calinski–Harabasz and Davies–Bouldin).
fn check_cluster_count(k: usize, n: usize) -> Result<()> {
    if k < 2 || k >= n {
        return Err(Error::invalid(
            "labels",
            format!("the criterion needs 2 <= clusters <= N - 1; got {k} clusters for N = {n}"),
        ));
    }
    Ok(())
}

/// Cluster sizes and centroids (K x D) of `index` (cluster of each row).
fn centroids(x: &[f64], d: usize, index: &[usize], k: usize) -> (Vec<usize>, Vec<f64>) {
    let mut counts = vec![0usize; k];
    let mut sums = vec![0.0; k * d];
    for (row, &c) in x.chunks_exact(d).zip(index) {
        counts[c] += 1;
        for (s, v) in sums[c * d..(c + 1) * d].iter_mut().zip(row) {
            *s += v;
        }
    }
    for c in 0..k {
        for s in &mut sums[c * d..(c + 1) * d] {
            *s /= counts[c] as f64;
        }
    }
    (counts, sums)
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// Silhouette coefficient s(i) of every row (formulas above), O(N² D).
///
/// Errors: bad `x` ([`Error::EmptyData`], [`Error::Shape`], [`Error::NonFinite`]); labels of
/// the wrong length or with fewer than 2 or more than N − 1 distinct values
/// ([`Error::InvalidParameter`]).
pub fn silhouette_samples(x: &[f64], d: usize, labels: &[u32]) -> Result<Vec<f64>> {
    let n = check_labelled(x, d, labels)?;
    let (ids, index) = clusters(labels);
    let k = ids.len();
    check_cluster_count(k, n)?;
    let mut sizes = vec![0usize; k];
    index.iter().for_each(|&c| sizes[c] += 1);
    let rows: Vec<&[f64]> = x.chunks_exact(d).collect();
    let mut out = Vec::with_capacity(n);
    let mut sums = vec![0.0; k];
    for (i, xi) in rows.iter().enumerate() {
        sums.fill(0.0);
        for (xj, &c) in rows.iter().zip(&index) {
            sums[c] += distance(xi, xj);
        }
        let own = index[i];
        if sizes[own] == 1 {
            out.push(0.0);
            continue;
        }
        let a = sums[own] / (sizes[own] - 1) as f64;
        let b = (0..k)
            .filter(|&c| c != own)
            .map(|c| sums[c] / sizes[c] as f64)
            .fold(f64::INFINITY, f64::min);
        let m = a.max(b);
        out.push(if m > 0.0 { (b - a) / m } else { 0.0 });
    }
    Ok(out)
}

/// Mean silhouette coefficient over all rows (scikit-learn's `silhouette_score`).
pub fn silhouette_score(x: &[f64], d: usize, labels: &[u32]) -> Result<f64> {
    let s = silhouette_samples(x, d, labels)?;
    Ok(s.iter().sum::<f64>() / s.len() as f64)
}

/// Calinski–Harabasz index (between- over within-cluster dispersion, higher is better).
pub fn calinski_harabasz(x: &[f64], d: usize, labels: &[u32]) -> Result<f64> {
    let n = check_labelled(x, d, labels)?;
    let (ids, index) = clusters(labels);
    let k = ids.len();
    check_cluster_count(k, n)?;
    let (counts, mu) = centroids(x, d, &index, k);
    let mean: Vec<f64> = (0..d)
        .map(|j| x.iter().skip(j).step_by(d).sum::<f64>() / n as f64)
        .collect();
    let between: f64 = (0..k)
        .map(|c| counts[c] as f64 * distance(&mu[c * d..(c + 1) * d], &mean).powi(2))
        .sum();
    let within: f64 = x
        .chunks_exact(d)
        .zip(&index)
        .map(|(row, &c)| distance(row, &mu[c * d..(c + 1) * d]).powi(2))
        .sum();
    if within == 0.0 {
        return Ok(1.0);
    }
    Ok(between * (n - k) as f64 / (within * (k - 1) as f64))
}

/// Davies–Bouldin index (mean worst-case similarity between clusters, lower is better).
pub fn davies_bouldin(x: &[f64], d: usize, labels: &[u32]) -> Result<f64> {
    let n = check_labelled(x, d, labels)?;
    let (ids, index) = clusters(labels);
    let k = ids.len();
    check_cluster_count(k, n)?;
    let (counts, mu) = centroids(x, d, &index, k);
    let mut scatter = vec![0.0; k];
    for (row, &c) in x.chunks_exact(d).zip(&index) {
        scatter[c] += distance(row, &mu[c * d..(c + 1) * d]);
    }
    for c in 0..k {
        scatter[c] /= counts[c] as f64;
    }
    if scatter.iter().all(|&s| s == 0.0) {
        return Ok(0.0);
    }
    let mut total = 0.0;
    for c in 0..k {
        let worst = (0..k)
            .filter(|&o| o != c)
            .map(|o| {
                let sep = distance(&mu[c * d..(c + 1) * d], &mu[o * d..(o + 1) * d]);
                // scikit-learn sets a zero centroid distance to infinity: ratio 0.
                if sep == 0.0 {
                    0.0
                } else {
                    (scatter[c] + scatter[o]) / sep
                }
            })
            .fold(0.0, f64::max);
        total += worst;
    }
    Ok(total / k as f64)
}

/// Within-cluster sum of squares Σᵢ ‖xᵢ − μ_{C(i)}‖² around the clusters' means.
pub fn inertia(x: &[f64], d: usize, labels: &[u32]) -> Result<f64> {
    check_labelled(x, d, labels)?;
    let (ids, index) = clusters(labels);
    let (_, mu) = centroids(x, d, &index, ids.len());
    Ok(x.chunks_exact(d)
        .zip(&index)
        .map(|(row, &c)| distance(row, &mu[c * d..(c + 1) * d]).powi(2))
        .sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn identical_and_permuted() {
        let a = [0, 0, 1, 1, 2, 2, 2];
        assert_eq!(adjusted_rand_index(&a, &a).unwrap(), 1.0);
        assert_eq!(rand_index(&a, &a).unwrap(), 1.0);
        let b = [7, 7, 0, 0, 3, 3, 3];
        assert_eq!(adjusted_rand_index(&a, &b).unwrap(), 1.0);
        assert_eq!(rand_index(&b, &a).unwrap(), 1.0);
    }

    #[test]
    fn scikit_learn_doc_example() {
        let a = [0, 0, 1, 1];
        let b = [0, 0, 1, 2];
        assert!((adjusted_rand_index(&a, &b).unwrap() - 0.5714285714285715).abs() < 1e-15);
        assert!((adjusted_rand_index(&b, &a).unwrap() - 0.5714285714285715).abs() < 1e-15);
        assert!((rand_index(&a, &b).unwrap() - 0.8333333333333334).abs() < 1e-15);
        // Every point in its own cluster against two pairs: sklearn gives 0.
        assert_eq!(
            adjusted_rand_index(&[0, 0, 1, 1], &[0, 1, 2, 3]).unwrap(),
            0.0
        );
        // Perfectly split: sklearn gives -0.5.
        assert_eq!(
            adjusted_rand_index(&[0, 0, 1, 1], &[0, 1, 0, 1]).unwrap(),
            -0.5
        );
    }

    #[test]
    fn degenerate_partitions() {
        assert_eq!(adjusted_rand_index(&[0, 0, 0], &[5, 5, 5]).unwrap(), 1.0);
        assert_eq!(adjusted_rand_index(&[0, 1, 2], &[2, 0, 1]).unwrap(), 1.0);
        assert_eq!(adjusted_rand_index(&[4], &[9]).unwrap(), 1.0);
        assert_eq!(rand_index(&[4], &[9]).unwrap(), 1.0);
        // One cluster against all singletons: no agreement beyond chance.
        assert_eq!(adjusted_rand_index(&[0, 0, 0], &[0, 1, 2]).unwrap(), 0.0);
        assert_eq!(rand_index(&[0, 0, 0], &[0, 1, 2]).unwrap(), 0.0);
    }

    #[test]
    fn errors() {
        assert!(matches!(
            adjusted_rand_index(&[0, 1], &[0]),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(rand_index(&[], &[]), Err(Error::EmptyData { .. })));
        assert!(matches!(
            adjusted_rand_index(&[], &[]),
            Err(Error::EmptyData { .. })
        ));
    }

    #[test]
    fn random_labelings_are_near_zero() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let a: Vec<u32> = (0..5000).map(|_| rng.random_range(0..4)).collect();
        let b: Vec<u32> = (0..5000).map(|_| rng.random_range(0..6)).collect();
        let ari = adjusted_rand_index(&a, &b).unwrap();
        assert!(ari.abs() < 0.01, "{ari}");
        // Large n: pair counts need 64 bits, their products 128.
        let a: Vec<u32> = (0..200_000).map(|_| rng.random_range(0..3)).collect();
        let b: Vec<u32> = (0..200_000).map(|_| rng.random_range(0..3)).collect();
        let ari = adjusted_rand_index(&a, &b).unwrap();
        assert!(ari.abs() < 0.001, "{ari}");
        assert_eq!(adjusted_rand_index(&a, &a).unwrap(), 1.0);
    }
}
