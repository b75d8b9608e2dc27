//! Shared by the Gaussian-mixture benches (included with `#[path]`).

use wgpu_unsupervised::gmm::InitialParameters;
use wgpu_unsupervised::CovarianceType;

/// Deterministic starting parameters: equal weights, the first K rows as means (the blobs
/// are interleaved, so they fall in different clusters), and the covariance s²·I with s² the
/// mean per-feature variance of the data. Returns the `Given` parameters (precisions) and
/// the covariances, both in the layout of `t`.
pub fn start(x: &[f32], d: usize, k: usize, t: CovarianceType) -> (InitialParameters, Vec<f64>) {
    let n = x.len() / d;
    let mut mean = vec![0.0f64; d];
    for row in x.chunks_exact(d) {
        for (m, &v) in mean.iter_mut().zip(row) {
            *m += v as f64;
        }
    }
    mean.iter_mut().for_each(|m| *m /= n as f64);
    let mut var = 0.0f64;
    for row in x.chunks_exact(d) {
        for (m, &v) in mean.iter().zip(row) {
            var += (v as f64 - m) * (v as f64 - m);
        }
    }
    let s2 = (var / (n * d) as f64).max(1e-12);
    let scaled_identity = |value: f64, blocks: usize| -> Vec<f64> {
        (0..blocks * d * d)
            .map(|e| {
                let (i, j) = ((e / d) % d, e % d);
                if i == j {
                    value
                } else {
                    0.0
                }
            })
            .collect()
    };
    let layout = |value: f64| match t {
        CovarianceType::Full => scaled_identity(value, k),
        CovarianceType::Tied => scaled_identity(value, 1),
        CovarianceType::Diag => vec![value; k * d],
        CovarianceType::Spherical => vec![value; k],
    };
    let given = InitialParameters {
        weights: vec![1.0 / k as f64; k],
        means: x[..k * d].iter().map(|&v| v as f64).collect(),
        precisions: layout(1.0 / s2),
    };
    (given, layout(s2))
}
