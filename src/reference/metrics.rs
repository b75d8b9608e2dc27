//! Agreement between two labellings: the Rand index and the adjusted Rand index.
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
