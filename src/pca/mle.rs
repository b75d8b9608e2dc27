//! Choosing the number of components by Minka's MLE (scikit-learn's `n_components="mle"`).
//!
//! T. P. Minka, "Automatic choice of dimensionality for PCA", NIPS 2000: under probabilistic
//! PCA with isotropic noise, the evidence of rank k for the spectrum λ₁ ≥ … ≥ λ_D of N
//! samples is approximated by Laplace's method,
//!
//! ```text
//! ln p(D | k) ≈ ln p(U) − N/2 Σ_{i≤k} ln λᵢ − N(D − k)/2 ln v + (m + k)/2 ln 2π
//!               − ½ ln|A_Z| − k/2 ln N,
//! v = Σ_{j>k} λⱼ / (D − k),   m = Dk − k(k + 1)/2,
//! ln p(U) = −k ln 2 + Σ_{i≤k} [ln Γ((D − i + 1)/2) − (D − i + 1)/2 ln π],
//! ln|A_Z| = Σ_{i≤k} Σ_{j>i} [ln((λᵢ − λⱼ)(1/λ̂ⱼ − 1/λ̂ᵢ)) + ln N],  λ̂ⱼ = λⱼ (j ≤ k), v (j > k),
//! ```
//!
//! and the chosen k maximises it over 1 ≤ k ≤ D − 1. This is scikit-learn's
//! `_assess_dimension` term for term, its 1e-15 floors included, so both choose the same k
//! from the same spectrum. A rank whose k-th eigenvalue is below the floor, or whose
//! spectrum has a tie that makes a logarithm's argument zero, is never chosen.

/// ln Γ(h/2) for an integer h ≥ 1, exactly from Γ(1) = 1, Γ(½) = √π and Γ(x + 1) = xΓ(x):
/// the arguments here are always halves of integers, so no general log-gamma is needed.
fn ln_gamma_half(h: usize) -> f64 {
    let mut x = if h.is_multiple_of(2) { 1.0 } else { 0.5 };
    let mut value = if h.is_multiple_of(2) {
        0.0
    } else {
        0.5 * std::f64::consts::PI.ln()
    };
    while 2.0 * x < h as f64 {
        value += x.ln();
        x += 1.0;
    }
    value
}

/// The log-evidence of rank `rank` (1 ≤ rank < D) for `spectrum` (descending, D values)
/// from `n` samples (module docs); −∞ where the rank cannot be chosen.
pub(crate) fn assess_dimension(spectrum: &[f64], rank: usize, n: usize) -> f64 {
    const EPS: f64 = 1e-15;
    let d = spectrum.len();
    debug_assert!(1 <= rank && rank < d);
    if spectrum[rank - 1] < EPS {
        return f64::NEG_INFINITY;
    }
    let (two_pi, n_f) = (2.0 * std::f64::consts::PI, n as f64);
    let mut pu = -(rank as f64) * 2f64.ln();
    for i in 1..=rank {
        let h = d - i + 1;
        pu += ln_gamma_half(h) - std::f64::consts::PI.ln() * h as f64 / 2.0;
    }
    let pl = -spectrum[..rank].iter().map(|v| v.ln()).sum::<f64>() * n_f / 2.0;
    let v = (spectrum[rank..].iter().sum::<f64>() / (d - rank) as f64).max(EPS);
    let pv = -v.ln() * n_f * (d - rank) as f64 / 2.0;
    let m = (d * rank) as f64 - (rank * (rank + 1)) as f64 / 2.0;
    let pp = two_pi.ln() * (m + rank as f64) / 2.0;
    let hat = |j: usize| if j < rank { spectrum[j] } else { v };
    let mut pa = 0.0;
    for i in 0..rank {
        for j in i + 1..d {
            let t = (spectrum[i] - spectrum[j]) * (1.0 / hat(j) - 1.0 / hat(i));
            if t <= 0.0 {
                return f64::NEG_INFINITY;
            }
            pa += t.ln() + n_f.ln();
        }
    }
    pu + pl + pv + pp - pa / 2.0 - rank as f64 * n_f.ln() / 2.0
}

/// Minka's choice of the number of components for `spectrum` (all D explained variances,
/// descending) of `n` samples: the rank in 1..D − 1 of largest evidence, the first among
/// equals, and 1 when none can be assessed (D = 1, or a spectrum of zeros).
pub(crate) fn infer_dimension(spectrum: &[f64], n: usize) -> usize {
    let mut best = (1, f64::NEG_INFINITY);
    for rank in 1..spectrum.len() {
        let ll = assess_dimension(spectrum, rank, n);
        if ll > best.1 {
            best = (rank, ll);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_integer_log_gamma() {
        // Γ(1/2) = √π, Γ(1) = 1, Γ(3/2) = √π/2, Γ(3) = 2, Γ(7/2) = 15√π/8.
        let pi_ln = std::f64::consts::PI.ln();
        for (h, want) in [
            (1, 0.5 * pi_ln),
            (2, 0.0),
            (3, 0.5 * pi_ln - 2f64.ln()),
            (6, 2f64.ln()),
            (7, (15.0f64 / 8.0).ln() + 0.5 * pi_ln),
        ] {
            assert!((ln_gamma_half(h) - want).abs() < 1e-14, "{h}");
        }
    }

    /// scikit-learn 1.9.1's `_assess_dimension` and `_infer_dimension` on the same spectra.
    #[test]
    fn evidence_and_choice_match_scikit_learn() {
        let cases: [(&[f64], usize, usize, &[f64]); 3] = [
            (
                &[50.0, 30.0, 20.0, 1.0, 0.99, 0.98, 0.97, 0.96],
                500,
                5,
                &[-4608.421840211955, -4013.868409522574, -2632.1519050035154],
            ),
            (
                &[5.0, 4.0, 1.1, 1.0, 0.9],
                20,
                2,
                &[
                    -44.74226922025717,
                    -42.88295408479281,
                    -43.18746723084513,
                    -43.85061416865954,
                ],
            ),
            (
                &[10.0, 9.0, 8.0, 7.0, 6.0, 5.0],
                100,
                1,
                &[
                    -607.8618994177529,
                    -610.8596570406454,
                    -613.6495262315008,
                    -616.2710051047984,
                    -618.6814106461611,
                ],
            ),
        ];
        for (spectrum, n, want, evidence) in cases {
            assert_eq!(infer_dimension(spectrum, n), want, "{spectrum:?}");
            for (rank, e) in evidence.iter().enumerate() {
                let got = assess_dimension(spectrum, rank + 1, n);
                assert!(
                    (got - e).abs() <= 1e-12 * e.abs(),
                    "rank {}: {got} vs {e}",
                    rank + 1
                );
            }
        }
        // A tie makes a logarithm's argument zero (scikit-learn raises): never chosen.
        assert_eq!(
            assess_dimension(&[50.0, 30.0, 1.0, 1.0], 3, 100),
            f64::NEG_INFINITY
        );
        assert_eq!(infer_dimension(&[0.0; 4], 10), 1);
        assert_eq!(infer_dimension(&[2.0], 10), 1);
    }
}
