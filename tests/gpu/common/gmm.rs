//! Gaussian-mixture test helpers: random well-conditioned mixtures, data drawn from them,
//! and a scale-aware error.

use super::{random_matrix, to_f64};
use wgpu_unsupervised::{CovarianceType, GaussianMixtureModel};

/// A random mixture of K components in D dimensions: means in [−3, 3), well-conditioned
/// covariances (A Aᵀ / D + 0.5 I, or variances in [0.3, 2)), random positive weights.
pub fn random_model(t: CovarianceType, k: usize, d: usize, seed: u64) -> GaussianMixtureModel {
    let u = |n: usize, s: u64| to_f64(&random_matrix(n, 1, seed * 31 + s, 0.0, 1.0));
    let mut weights: Vec<f64> = u(k, 1).iter().map(|v| 0.2 + v).collect();
    let total: f64 = weights.iter().sum();
    weights.iter_mut().for_each(|w| *w /= total);
    let means: Vec<f64> = u(k * d, 2).iter().map(|v| 6.0 * v - 3.0).collect();
    let spd = |s: u64| {
        let a: Vec<f64> = u(d * d, s).iter().map(|v| 2.0 * v - 1.0).collect();
        let mut c = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..d {
                c[i * d + j] = (0..d).map(|t| a[i * d + t] * a[j * d + t]).sum::<f64>() / d as f64
                    + if i == j { 0.5 } else { 0.0 };
            }
        }
        c
    };
    let covariances = match t {
        CovarianceType::Full => (0..k).flat_map(|c| spd(10 + c as u64)).collect(),
        CovarianceType::Tied => spd(3),
        CovarianceType::Diag => u(k * d, 4).iter().map(|v| 0.3 + 1.7 * v).collect(),
        CovarianceType::Spherical => u(k, 5).iter().map(|v| 0.3 + 1.7 * v).collect(),
    };
    GaussianMixtureModel::from_parameters(t, weights, means, covariances).unwrap()
}

/// max |a − b| / max(max |b|, floor): error relative to the scale of the expected values.
pub fn scaled_err(a: &[f64], b: &[f64], floor: f64) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(floor, |m, v| m.max(v.abs()));
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
        / scale
}

/// Data drawn from a random well-separated mixture.
pub fn mixture_data(t: CovarianceType, n: usize, d: usize, k: usize, seed: u64) -> Vec<f32> {
    let mut model = random_model(t, k, d, seed);
    // Spread the means so the components are distinct.
    let means: Vec<f64> = model.means().iter().map(|v| 3.0 * v).collect();
    model = GaussianMixtureModel::from_parameters(
        t,
        model.weights().to_vec(),
        means,
        model.covariances().to_vec(),
    )
    .unwrap();
    let (x, _) = model.sample(n, seed).unwrap();
    x.iter().map(|&v| v as f32).collect()
}
