//! Agreement between two labellings by information theory and by pair counts beyond the
//! Rand index, as scikit-learn's `sklearn.metrics` computes them.
//!
//! With the contingency table n_ij (points labelled i in the truth C and j in the
//! clustering K), its margins aᵢ and b_j, N points, and natural logarithms:
//!
//! ```text
//! H(C)  = −Σᵢ (aᵢ/N) ln(aᵢ/N),   H(K) = −Σ_j (b_j/N) ln(b_j/N)
//! MI    = Σ_ij (n_ij/N) ln(N n_ij / (aᵢ b_j))                       (nats)
//! NMI   = MI / mean(H(C), H(K))        (arithmetic by default; min, geometric or max)
//! E[MI] = Σ_ij Σ_{n=max(1, aᵢ+b_j−N)}^{min(aᵢ, b_j)} (n/N) ln(N n/(aᵢ b_j))
//!           · aᵢ! b_j! (N−aᵢ)! (N−b_j)! / (N! n! (aᵢ−n)! (b_j−n)! (N−aᵢ−b_j+n)!)
//! AMI   = (MI − E[MI]) / (mean(H(C), H(K)) − E[MI])                (Vinh, Epps & Bailey 2010)
//! homogeneity h = MI / H(C),  completeness c = MI / H(K)
//! V_β   = (1 + β) h c / (β h + c)                                 (Rosenberg & Hirschberg 2007)
//! FMI   = TP / √((TP + FP)(TP + FN)),  TP = Σ_ij C(n_ij, 2)         (Fowlkes & Mallows 1983)
//! ```
//!
//! The edge cases are scikit-learn's: both labellings with one cluster give NMI = AMI = 1;
//! one side with one cluster gives MI = NMI = AMI = 0; an entropy of 0 makes the matching
//! homogeneity or completeness 1; AMI keeps the sign of its numerator and denominator when
//! they round to zero; FMI is 0 when no pair is together in both. The expected mutual
//! information uses exact log-factorials (a table of Σ ln k), so it is computed term by term
//! without overflow; like scikit-learn's, it costs Σ_ij min(aᵢ, b_j) terms.

use crate::error::{Error, Result};

/// How normalised and adjusted mutual information average the two entropies
/// (scikit-learn's `average_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AverageMethod {
    /// min(H(C), H(K)).
    Min,
    /// √(H(C) H(K)).
    Geometric,
    /// (H(C) + H(K)) / 2 (scikit-learn's default).
    #[default]
    Arithmetic,
    /// max(H(C), H(K)).
    Max,
}

impl AverageMethod {
    fn of(self, u: f64, v: f64) -> f64 {
        match self {
            AverageMethod::Min => u.min(v),
            AverageMethod::Geometric => (u * v).sqrt(),
            AverageMethod::Arithmetic => (u + v) / 2.0,
            AverageMethod::Max => u.max(v),
        }
    }
}

/// The contingency table of two labellings: its non-zero cells and its margins.
struct Table {
    /// N.
    n: u64,
    /// The non-zero n_ij with the positions of i and j among the distinct labels.
    cells: Vec<(usize, usize, u64)>,
    /// aᵢ, in the order of the distinct values of the truth.
    a: Vec<u64>,
    /// b_j, in the order of the distinct values of the clustering.
    b: Vec<u64>,
}

/// The sizes of the runs of equal values of a sorted slice.
fn run_lengths<T: PartialEq>(sorted: &[T]) -> Vec<u64> {
    sorted
        .chunk_by(|p, q| p == q)
        .map(|r| r.len() as u64)
        .collect()
}

impl Table {
    fn of(truth: &[u32], pred: &[u32]) -> Result<Self> {
        if truth.len() != pred.len() {
            return Err(Error::invalid(
                "labels",
                format!(
                    "the two labellings differ in length ({} and {})",
                    truth.len(),
                    pred.len()
                ),
            ));
        }
        if truth.is_empty() {
            return Err(Error::EmptyData {
                what: "labelling",
                missing: "rows",
            });
        }
        let (ids_a, index_a) = super::cluster_index(truth);
        let (ids_b, index_b) = super::cluster_index(pred);
        let mut pairs: Vec<(usize, usize)> = index_a
            .iter()
            .copied()
            .zip(index_b.iter().copied())
            .collect();
        pairs.sort_unstable();
        let cells = pairs
            .chunk_by(|p, q| p == q)
            .map(|run| (run[0].0, run[0].1, run.len() as u64))
            .collect();
        let margin = |index: &[usize], k: usize| {
            let mut sorted = index.to_vec();
            sorted.sort_unstable();
            let sizes = run_lengths(&sorted);
            debug_assert_eq!(sizes.len(), k);
            sizes
        };
        Ok(Self {
            n: truth.len() as u64,
            cells,
            a: margin(&index_a, ids_a.len()),
            b: margin(&index_b, ids_b.len()),
        })
    }

    /// MI in nats, as scikit-learn: terms below f64 epsilon dropped, the sum clipped at 0.
    fn mutual_information(&self) -> f64 {
        if self.a.len() == 1 || self.b.len() == 1 {
            return 0.0;
        }
        let n = self.n as f64;
        let mi: f64 = self
            .cells
            .iter()
            .map(|&(i, j, c)| {
                let p = c as f64 / n;
                let t = p * ((c as f64).ln() - n.ln())
                    + p * (n.ln() + n.ln() - (self.a[i] as f64 * self.b[j] as f64).ln());
                if t.abs() < f64::EPSILON {
                    0.0
                } else {
                    t
                }
            })
            .sum();
        mi.max(0.0)
    }

    /// E\[MI\] over labellings with these margins (module docs).
    fn expected_mutual_information(&self) -> f64 {
        if self.a.len() == 1 || self.b.len() == 1 {
            return 0.0;
        }
        let n = self.n;
        let nf = n as f64;
        // ln(m!) for m = 0..=N.
        let mut ln_fact = Vec::with_capacity(n as usize + 1);
        let mut acc = 0.0f64;
        ln_fact.push(0.0);
        for m in 1..=n {
            acc += (m as f64).ln();
            ln_fact.push(acc);
        }
        let lf = |m: u64| ln_fact[m as usize];
        let mut emi = 0.0;
        for &ai in &self.a {
            for &bj in &self.b {
                let start = (ai + bj).saturating_sub(n).max(1);
                let fixed = lf(ai) + lf(bj) + lf(n - ai) + lf(n - bj) - lf(n);
                let log_ab = (ai as f64).ln() + (bj as f64).ln();
                for nij in start..=ai.min(bj) {
                    let term2 = nf.ln() + (nij as f64).ln() - log_ab;
                    let gln = fixed - lf(nij) - lf(ai - nij) - lf(bj - nij) - lf(n + nij - ai - bj);
                    emi += nij as f64 / nf * term2 * gln.exp();
                }
            }
        }
        emi
    }
}

/// H of the labelling with cluster sizes `sizes` (N = their sum), in nats.
fn entropy(sizes: &[u64]) -> f64 {
    if sizes.len() <= 1 {
        return 0.0;
    }
    let total: f64 = sizes.iter().map(|&s| s as f64).sum();
    -sizes
        .iter()
        .map(|&s| {
            let s = s as f64;
            s / total * (s.ln() - total.ln())
        })
        .sum::<f64>()
}

/// Mutual information MI(C; K) of two labellings of the same points, in nats
/// (scikit-learn's `mutual_info_score`; module docs).
///
/// Errors: [`Error::InvalidParameter`] when the lengths differ, [`Error::EmptyData`] when
/// they are empty (as for every function here).
pub fn mutual_info_score(labels_true: &[u32], labels_pred: &[u32]) -> Result<f64> {
    Ok(Table::of(labels_true, labels_pred)?.mutual_information())
}

/// Normalised mutual information MI / mean(H(C), H(K)), in [0, 1] (scikit-learn's
/// `normalized_mutual_info_score`).
pub fn normalized_mutual_info_score(
    labels_true: &[u32],
    labels_pred: &[u32],
    average: AverageMethod,
) -> Result<f64> {
    let t = Table::of(labels_true, labels_pred)?;
    if t.a.len() == 1 && t.b.len() == 1 {
        return Ok(1.0);
    }
    let mi = t.mutual_information();
    if mi == 0.0 {
        return Ok(0.0);
    }
    Ok(mi / average.of(entropy(&t.a), entropy(&t.b)))
}

/// Adjusted mutual information (MI − E\[MI\]) / (mean(H(C), H(K)) − E\[MI\]): 1 for the same
/// partition, about 0 for chance (scikit-learn's `adjusted_mutual_info_score`).
pub fn adjusted_mutual_info_score(
    labels_true: &[u32],
    labels_pred: &[u32],
    average: AverageMethod,
) -> Result<f64> {
    let t = Table::of(labels_true, labels_pred)?;
    match (t.a.len(), t.b.len()) {
        (1, 1) => return Ok(1.0),
        (1, _) | (_, 1) => return Ok(0.0),
        _ => {}
    }
    let mi = t.mutual_information();
    let emi = t.expected_mutual_information();
    let normalizer = average.of(entropy(&t.a), entropy(&t.b));
    // Rounding can put E[MI] a hair past MI or the normaliser (a perfect match): keep the
    // sign and avoid 0/0, as scikit-learn does.
    let away_from_zero = |v: f64| {
        if v < 0.0 {
            v.min(-f64::EPSILON)
        } else {
            v.max(f64::EPSILON)
        }
    };
    Ok(away_from_zero(mi - emi) / away_from_zero(normalizer - emi))
}

/// Homogeneity, completeness and V-measure (weight `beta` ≥ 0 on homogeneity; 1 is the
/// harmonic mean) of a clustering against the truth (scikit-learn's
/// `homogeneity_completeness_v_measure`).
///
/// Errors: as [`mutual_info_score`], and [`Error::InvalidParameter`] for a negative or
/// non-finite `beta`.
pub fn homogeneity_completeness_v_measure(
    labels_true: &[u32],
    labels_pred: &[u32],
    beta: f64,
) -> Result<(f64, f64, f64)> {
    if !(beta.is_finite() && beta >= 0.0) {
        return Err(Error::invalid(
            "beta",
            format!("must be finite and >= 0, got {beta}"),
        ));
    }
    let t = Table::of(labels_true, labels_pred)?;
    let (h_c, h_k) = (entropy(&t.a), entropy(&t.b));
    let mi = t.mutual_information();
    let h = if h_c == 0.0 { 1.0 } else { mi / h_c };
    let c = if h_k == 0.0 { 1.0 } else { mi / h_k };
    let denominator = beta * h + c;
    let v = if h + c == 0.0 || denominator == 0.0 {
        0.0
    } else {
        (1.0 + beta) * h * c / denominator
    };
    Ok((h, c, v))
}

/// Homogeneity: whether each cluster holds members of one class only, MI / H(C).
pub fn homogeneity_score(labels_true: &[u32], labels_pred: &[u32]) -> Result<f64> {
    Ok(homogeneity_completeness_v_measure(labels_true, labels_pred, 1.0)?.0)
}

/// Completeness: whether all members of a class share a cluster, MI / H(K).
pub fn completeness_score(labels_true: &[u32], labels_pred: &[u32]) -> Result<f64> {
    Ok(homogeneity_completeness_v_measure(labels_true, labels_pred, 1.0)?.1)
}

/// V-measure with weight `beta` (1: the harmonic mean of homogeneity and completeness,
/// equal to NMI with the arithmetic mean).
pub fn v_measure_score(labels_true: &[u32], labels_pred: &[u32], beta: f64) -> Result<f64> {
    Ok(homogeneity_completeness_v_measure(labels_true, labels_pred, beta)?.2)
}

/// Fowlkes–Mallows index: the geometric mean of pairwise precision and recall, in [0, 1]
/// (scikit-learn's `fowlkes_mallows_score`). Pair counts are exact integers.
pub fn fowlkes_mallows_score(labels_true: &[u32], labels_pred: &[u32]) -> Result<f64> {
    let t = Table::of(labels_true, labels_pred)?;
    let n = t.n as u128;
    let squares =
        |v: &mut dyn Iterator<Item = u64>| v.map(|x| (x as u128) * (x as u128)).sum::<u128>() - n;
    let tk = squares(&mut t.cells.iter().map(|c| c.2));
    if tk == 0 {
        return Ok(0.0);
    }
    let pk = squares(&mut t.b.iter().copied());
    let qk = squares(&mut t.a.iter().copied());
    Ok((tk as f64 / pk as f64).sqrt() * (tk as f64 / qk as f64).sqrt())
}
