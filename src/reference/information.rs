//! Information-theoretic and pair-counting agreement scores in plain f64, the oracle for
//! the production `metrics::information`: a hash-map contingency table, entropies and
//! conditional entropies by their definitions, the expected mutual information of Vinh,
//! Epps & Bailey (2010) with hypergeometric probabilities from a Lanczos log-gamma, and the
//! Fowlkes–Mallows index from pair counts over every pair of points.
//!
//! ```text
//! MI  = Σ_ij p_ij ln(p_ij / (p_i p_j))        H(C) = −Σ_i p_i ln p_i
//! h   = 1 − H(C|K)/H(C),   c = 1 − H(K|C)/H(K),   V_β = (1+β) h c / (β h + c)
//! FMI = TP / √((TP + FP)(TP + FN))            (pairs of points)
//! ```
//!
//! with scikit-learn's conventions for the edge cases (one cluster on both sides: NMI = AMI
//! = 1; on one side: MI = NMI = AMI = 0; an entropy of 0: h or c = 1).

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::reference::pca::probabilistic::ln_gamma;

/// Joint and marginal counts.
struct Counts {
    n: f64,
    joint: HashMap<(u32, u32), f64>,
    a: HashMap<u32, f64>,
    b: HashMap<u32, f64>,
}

fn counts(t: &[u32], p: &[u32]) -> Result<Counts> {
    if t.len() != p.len() {
        return Err(Error::invalid("labels", "lengths differ"));
    }
    if t.is_empty() {
        return Err(Error::EmptyData {
            what: "labelling",
            missing: "rows",
        });
    }
    let mut c = Counts {
        n: t.len() as f64,
        joint: HashMap::new(),
        a: HashMap::new(),
        b: HashMap::new(),
    };
    for (&x, &y) in t.iter().zip(p) {
        *c.joint.entry((x, y)).or_default() += 1.0;
        *c.a.entry(x).or_default() += 1.0;
        *c.b.entry(y).or_default() += 1.0;
    }
    Ok(c)
}

fn entropy(m: &HashMap<u32, f64>, n: f64) -> f64 {
    m.values().map(|&v| -(v / n) * (v / n).ln()).sum()
}

/// MI in nats.
pub fn mutual_info(t: &[u32], p: &[u32]) -> Result<f64> {
    let c = counts(t, p)?;
    let mut mi = 0.0;
    for (&(x, y), &v) in &c.joint {
        let pij = v / c.n;
        mi += pij * (pij / ((c.a[&x] / c.n) * (c.b[&y] / c.n))).ln();
    }
    Ok(mi.max(0.0))
}

/// The mean of two entropies by name: "min", "geometric", "arithmetic" or "max".
fn mean(u: f64, v: f64, how: &str) -> f64 {
    match how {
        "min" => u.min(v),
        "geometric" => (u * v).sqrt(),
        "max" => u.max(v),
        _ => (u + v) / 2.0,
    }
}

/// Normalised MI with the named mean.
pub fn normalized_mutual_info(t: &[u32], p: &[u32], how: &str) -> Result<f64> {
    let c = counts(t, p)?;
    if c.a.len() == 1 && c.b.len() == 1 {
        return Ok(1.0);
    }
    let mi = mutual_info(t, p)?;
    if mi == 0.0 {
        return Ok(0.0);
    }
    Ok(mi / mean(entropy(&c.a, c.n), entropy(&c.b, c.n), how))
}

/// E\[MI\] under the permutation model: the sum over every cell of the hypergeometric
/// distribution of n_ij.
pub fn expected_mutual_info(t: &[u32], p: &[u32]) -> Result<f64> {
    let c = counts(t, p)?;
    let n = c.n;
    let lf = |x: f64| ln_gamma(x + 1.0);
    let mut emi = 0.0;
    for &ai in c.a.values() {
        for &bj in c.b.values() {
            let lo = (ai + bj - n).max(1.0) as u64;
            let hi = ai.min(bj) as u64;
            for nij in lo..=hi {
                let nij = nij as f64;
                let log_p = lf(ai) + lf(bj) + lf(n - ai) + lf(n - bj)
                    - lf(n)
                    - lf(nij)
                    - lf(ai - nij)
                    - lf(bj - nij)
                    - lf(n - ai - bj + nij);
                emi += nij / n * (n * nij / (ai * bj)).ln() * log_p.exp();
            }
        }
    }
    Ok(emi)
}

/// Adjusted MI with the named mean.
pub fn adjusted_mutual_info(t: &[u32], p: &[u32], how: &str) -> Result<f64> {
    let c = counts(t, p)?;
    if c.a.len() == 1 && c.b.len() == 1 {
        return Ok(1.0);
    }
    if c.a.len() == 1 || c.b.len() == 1 {
        return Ok(0.0);
    }
    let mi = mutual_info(t, p)?;
    let emi = expected_mutual_info(t, p)?;
    let norm = mean(entropy(&c.a, c.n), entropy(&c.b, c.n), how);
    let clamp = |v: f64| {
        if v < 0.0 {
            v.min(-f64::EPSILON)
        } else {
            v.max(f64::EPSILON)
        }
    };
    Ok(clamp(mi - emi) / clamp(norm - emi))
}

/// (homogeneity, completeness, V_β) from conditional entropies.
pub fn homogeneity_completeness_v(t: &[u32], p: &[u32], beta: f64) -> Result<(f64, f64, f64)> {
    let c = counts(t, p)?;
    let (h_c, h_k) = (entropy(&c.a, c.n), entropy(&c.b, c.n));
    // H(C|K) = −Σ p_ij ln(p_ij / p_j), H(K|C) = −Σ p_ij ln(p_ij / p_i).
    let mut h_c_given_k = 0.0;
    let mut h_k_given_c = 0.0;
    for (&(x, y), &v) in &c.joint {
        h_c_given_k -= v / c.n * (v / c.b[&y]).ln();
        h_k_given_c -= v / c.n * (v / c.a[&x]).ln();
    }
    let h = if h_c == 0.0 {
        1.0
    } else {
        1.0 - h_c_given_k / h_c
    };
    let cc = if h_k == 0.0 {
        1.0
    } else {
        1.0 - h_k_given_c / h_k
    };
    let v = if h + cc == 0.0 || beta * h + cc == 0.0 {
        0.0
    } else {
        (1.0 + beta) * h * cc / (beta * h + cc)
    };
    Ok((h, cc, v))
}

/// Fowlkes–Mallows index from TP, FP and FN counted over every pair of points.
pub fn fowlkes_mallows(t: &[u32], p: &[u32]) -> Result<f64> {
    counts(t, p)?;
    let (mut tp, mut fp, mut fn_) = (0u64, 0u64, 0u64);
    for i in 0..t.len() {
        for j in i + 1..t.len() {
            match (t[i] == t[j], p[i] == p[j]) {
                (true, true) => tp += 1,
                (false, true) => fp += 1,
                (true, false) => fn_ += 1,
                (false, false) => {}
            }
        }
    }
    if tp == 0 {
        return Ok(0.0);
    }
    Ok(tp as f64 / (((tp + fp) as f64) * ((tp + fn_) as f64)).sqrt())
}
