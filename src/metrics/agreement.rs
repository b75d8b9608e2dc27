//! Agreement between two labellings of the same points, from their contingency table.
//!
//! With n_ij the number of points labelled i in `a` and j in `b`, the margins aᵢ = Σ_j n_ij
//! and b_j = Σ_i n_ij, and C(m, 2) = m(m − 1)/2 pairs among m points:
//!
//! ```text
//! index    = Σ_ij C(n_ij, 2)                 pairs together in both labellings
//! sum_a    = Σ_i C(aᵢ, 2),  sum_b = Σ_j C(b_j, 2),  pairs = C(N, 2)
//! RI       = (pairs + 2·index − sum_a − sum_b) / pairs        (both together or both apart)
//! expected = sum_a · sum_b / pairs,  max = (sum_a + sum_b) / 2
//! ARI      = (index − expected) / (max − expected)            (Hubert & Arabie 1985)
//! ```
//!
//! scikit-learn's `rand_score` and `adjusted_rand_score`: symmetric, independent of the label
//! values, ARI 1 for the same partition and about 0 for chance agreement (it can be
//! negative). When no pair is split differently (max = expected, e.g. a single cluster in
//! both) both are 1. Pair counts are exact integers; only the final ratios are rounded.

use crate::error::{Error, Result};

/// The pair counts of the contingency table of `a` against `b`.
struct PairCounts {
    /// Σ C(n_ij, 2).
    index: u128,
    /// Σ C(aᵢ, 2).
    sum_a: u128,
    /// Σ C(b_j, 2).
    sum_b: u128,
    /// C(N, 2).
    pairs: u128,
}

/// C(m, 2).
fn choose_2(m: u64) -> u128 {
    let m = m as u128;
    m * m.saturating_sub(1) / 2
}

/// Σ C(run, 2) over the runs of equal values of a sorted slice.
fn pairs_within_runs<T: PartialEq>(sorted: &[T]) -> u128 {
    sorted
        .chunk_by(|p, q| p == q)
        .map(|run| choose_2(run.len() as u64))
        .sum()
}

impl PairCounts {
    fn of(a: &[u32], b: &[u32]) -> Result<Self> {
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
        // Sorting makes equal labels (and equal label pairs) adjacent: the table's cells and
        // margins are the runs.
        let mut cells: Vec<(u32, u32)> = a.iter().copied().zip(b.iter().copied()).collect();
        cells.sort_unstable();
        let mut a_sorted = a.to_vec();
        a_sorted.sort_unstable();
        let mut b_sorted = b.to_vec();
        b_sorted.sort_unstable();
        Ok(Self {
            index: pairs_within_runs(&cells),
            sum_a: pairs_within_runs(&a_sorted),
            sum_b: pairs_within_runs(&b_sorted),
            pairs: choose_2(a.len() as u64),
        })
    }

    /// Whether no pair is together in one labelling and apart in the other.
    fn identical_pairs(&self) -> bool {
        self.sum_a == self.index && self.sum_b == self.index
    }
}

/// Rand index of two labellings of the same points: the fraction of point pairs on which
/// they agree (module docs). In [0, 1]; 1 for a single point.
///
/// Errors: [`Error::InvalidParameter`] when the lengths differ, [`Error::EmptyData`] when
/// they are empty.
pub fn rand_index(a: &[u32], b: &[u32]) -> Result<f64> {
    let p = PairCounts::of(a, b)?;
    if p.pairs == 0 || p.identical_pairs() {
        return Ok(1.0);
    }
    let agree = p.pairs + 2 * p.index - p.sum_a - p.sum_b;
    Ok(agree as f64 / p.pairs as f64)
}

/// Adjusted Rand index of two labellings (module docs): 1 for the same partition, about 0
/// for chance agreement.
///
/// Errors: [`Error::InvalidParameter`] when the lengths differ, [`Error::EmptyData`] when
/// they are empty.
pub fn adjusted_rand_index(a: &[u32], b: &[u32]) -> Result<f64> {
    let p = PairCounts::of(a, b)?;
    if p.identical_pairs() {
        return Ok(1.0);
    }
    // Scaled by 2·pairs, every term is an exact integer: index − expected becomes
    // 2·pairs·index − 2·sum_a·sum_b and max − expected becomes pairs·(sum_a + sum_b) −
    // 2·sum_a·sum_b. Each count is below N²/2, so the products fit i128 up to N ≈ 2³¹;
    // past that the same formula runs in f64.
    let exact = || -> Option<(i128, i128)> {
        let [index, sum_a, sum_b, pairs] =
            [p.index, p.sum_a, p.sum_b, p.pairs].map(|v| i128::try_from(v).ok());
        let (index, sum_a, sum_b, pairs) = (index?, sum_a?, sum_b?, pairs?);
        let cross = sum_a.checked_mul(sum_b)?.checked_mul(2)?;
        let numerator = pairs
            .checked_mul(index)?
            .checked_mul(2)?
            .checked_sub(cross)?;
        let denominator = pairs
            .checked_mul(sum_a.checked_add(sum_b)?)?
            .checked_sub(cross)?;
        Some((numerator, denominator))
    };
    Ok(match exact() {
        Some((numerator, denominator)) => numerator as f64 / denominator as f64,
        None => {
            let [index, sum_a, sum_b, pairs] =
                [p.index, p.sum_a, p.sum_b, p.pairs].map(|v| v as f64);
            let expected = sum_a * sum_b / pairs;
            (index - expected) / ((sum_a + sum_b) / 2.0 - expected)
        }
    })
}
