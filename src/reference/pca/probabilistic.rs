//! Probabilistic PCA in plain f64 (Tipping & Bishop 1999; Minka 2000): the oracle for the
//! dimensionality choice `Components::Mle`, the model covariance and precision, and the
//! log-likelihood of samples.
//!
//! Under probabilistic PCA the data are Gaussian with mean μ and covariance
//! C = Σ_k (λ_k − σ²)₊ u_k u_kᵀ + σ² I in the scaled space (σ² the noise variance); with
//! per-feature scales s the covariance of x is diag(s) C diag(s). Here C is formed densely,
//! inverted by Gauss–Jordan elimination and its log-determinant taken from a Cholesky
//! factor: the slow, obvious route, against the production closed forms.
//!
//! Minka's evidence for rank k of a spectrum λ_1 ≥ … ≥ λ_D from N samples is written out
//! from the paper (eq. 30–31, as scikit-learn's `_assess_dimension`), with a Lanczos
//! log-gamma rather than the production code's exact half-integer recursion.

use super::ReferencePca;

/// ln Γ(x) for x > 0 by the Lanczos approximation (g = 7, 9 terms; about 1e-15 relative);
/// also the oracle's log-factorial for the expected mutual information.
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + G + 0.5;
    let series: f64 = C[0] + (1..9).map(|i| C[i] / (x + i as f64)).sum::<f64>();
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + series.ln()
}

/// Minka's log-evidence of rank `k` (1 ≤ k < D) for `spectrum` (descending) of `n` samples;
/// −∞ when λ_k is below 1e-15 or a pair of eigenvalues makes a logarithm's argument ≤ 0.
pub fn minka_evidence(spectrum: &[f64], k: usize, n: usize) -> f64 {
    let d = spectrum.len();
    let nf = n as f64;
    let pi = std::f64::consts::PI;
    if spectrum[k - 1] < 1e-15 {
        return f64::NEG_INFINITY;
    }
    // p(U): the uniform prior over the Stiefel manifold.
    let mut log_pu = -(k as f64) * 2f64.ln();
    for i in 1..=k {
        let h = (d - i + 1) as f64 / 2.0;
        log_pu += ln_gamma(h) - h * pi.ln();
    }
    // The likelihood at the ML estimate: kept eigenvalues and the mean of the rest.
    let mut log_l = 0.0;
    for &l in &spectrum[..k] {
        log_l -= nf / 2.0 * l.ln();
    }
    let mut rest = 0.0;
    for &l in &spectrum[k..] {
        rest += l;
    }
    let v = (rest / (d - k) as f64).max(1e-15);
    log_l -= nf * (d - k) as f64 / 2.0 * v.ln();
    // Laplace's method: the number of free parameters and the Hessian determinant.
    let m = (d * k) as f64 - (k * (k + 1)) as f64 / 2.0;
    let log_volume = (m + k as f64) / 2.0 * (2.0 * pi).ln();
    let mut log_az = 0.0;
    for i in 0..k {
        for j in (i + 1)..d {
            let lj_hat = if j < k { spectrum[j] } else { v };
            let term = (spectrum[i] - spectrum[j]) * (1.0 / lj_hat - 1.0 / spectrum[i]);
            if term <= 0.0 {
                return f64::NEG_INFINITY;
            }
            log_az += term.ln() + nf.ln();
        }
    }
    log_pu + log_l + log_volume - log_az / 2.0 - k as f64 / 2.0 * nf.ln()
}

/// The rank in 1..D − 1 of largest [`minka_evidence`] (the first on ties), 1 if none.
pub fn minka_dimension(spectrum: &[f64], n: usize) -> usize {
    let mut best_k = 1;
    let mut best = f64::NEG_INFINITY;
    for k in 1..spectrum.len() {
        let e = minka_evidence(spectrum, k, n);
        if e > best {
            best = e;
            best_k = k;
        }
    }
    best_k
}

/// The model covariance of x, D x D row-major (dense sum of the rank-one terms).
pub fn covariance(model: &ReferencePca) -> Vec<f64> {
    let d = model.mean.len();
    let sigma2 = model.noise_variance;
    let mut c = vec![0.0; d * d];
    for k in 0..model.n_components {
        let w = (model.explained_variance[k] - sigma2).max(0.0);
        for a in 0..d {
            for b in 0..d {
                c[a * d + b] += w * model.components[k * d + a] * model.components[k * d + b];
            }
        }
    }
    for a in 0..d {
        c[a * d + a] += sigma2;
    }
    for a in 0..d {
        for b in 0..d {
            c[a * d + b] *= model.scale[a] * model.scale[b];
        }
    }
    c
}

/// The inverse of a D x D matrix by Gauss–Jordan elimination with partial pivoting; `None`
/// when a pivot vanishes.
pub fn inverse(a: &[f64], d: usize) -> Option<Vec<f64>> {
    let mut m = a.to_vec();
    let mut inv = vec![0.0; d * d];
    for i in 0..d {
        inv[i * d + i] = 1.0;
    }
    for col in 0..d {
        let pivot =
            (col..d).max_by(|&p, &q| m[p * d + col].abs().total_cmp(&m[q * d + col].abs()))?;
        if m[pivot * d + col].abs() < 1e-300 {
            return None;
        }
        for j in 0..d {
            m.swap(col * d + j, pivot * d + j);
            inv.swap(col * d + j, pivot * d + j);
        }
        let p = m[col * d + col];
        for j in 0..d {
            m[col * d + j] /= p;
            inv[col * d + j] /= p;
        }
        for r in 0..d {
            if r != col {
                let f = m[r * d + col];
                for j in 0..d {
                    m[r * d + j] -= f * m[col * d + j];
                    inv[r * d + j] -= f * inv[col * d + j];
                }
            }
        }
    }
    Some(inv)
}

/// ln det of a symmetric positive-definite matrix from its Cholesky factor; `None` when it
/// is not positive definite.
pub fn log_det(a: &[f64], d: usize) -> Option<f64> {
    let mut l = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..=i {
            let mut sum = a[i * d + j];
            for k in 0..j {
                sum -= l[i * d + k] * l[j * d + k];
            }
            if i == j {
                if sum <= 0.0 {
                    return None;
                }
                l[i * d + i] = sum.sqrt();
            } else {
                l[i * d + j] = sum / l[j * d + j];
            }
        }
    }
    Some((0..d).map(|i| 2.0 * l[i * d + i].ln()).sum())
}

/// ln N(x | μ, C) of every row of `x` (row-major, D per row) under the model; `None` when
/// C is singular.
pub fn score_samples(model: &ReferencePca, x: &[f64]) -> Option<Vec<f64>> {
    let d = model.mean.len();
    let c = covariance(model);
    let p = inverse(&c, d)?;
    let ld = log_det(&c, d)?;
    let constant = -0.5 * (d as f64 * (2.0 * std::f64::consts::PI).ln() + ld);
    Some(
        x.chunks(d)
            .map(|row| {
                let r: Vec<f64> = row.iter().zip(&model.mean).map(|(v, m)| v - m).collect();
                let mut quad = 0.0;
                for a in 0..d {
                    for b in 0..d {
                        quad += r[a] * p[a * d + b] * r[b];
                    }
                }
                constant - 0.5 * quad
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanczos_log_gamma() {
        let pi = std::f64::consts::PI;
        for (x, want) in [
            (0.5, 0.5 * pi.ln()),
            (1.0, 0.0),
            (5.0, 24f64.ln()),
            (10.5, 13.940_625_219_403_763),
        ] {
            assert!((ln_gamma(x) - want).abs() < 1e-12, "{x}: {}", ln_gamma(x));
        }
    }

    #[test]
    fn inverse_and_log_det_of_a_known_matrix() {
        let a = [4.0, 2.0, 2.0, 3.0];
        let inv = inverse(&a, 2).unwrap();
        let want = [3.0 / 8.0, -0.25, -0.25, 0.5];
        for (g, w) in inv.iter().zip(want) {
            assert!((g - w).abs() < 1e-15);
        }
        assert!((log_det(&a, 2).unwrap() - 8f64.ln()).abs() < 1e-15);
        assert!(inverse(&[1.0, 2.0, 2.0, 4.0], 2).is_none());
    }
}
