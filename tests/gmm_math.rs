//! The Gaussian-mixture host math that the GPU fit uses (`gmm::math`: precision Cholesky
//! factors, covariances of given precisions, parameter counts, sampling) against the CPU
//! oracle's own implementation of the same formulas. No GPU.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgpu_unsupervised::gmm::{math, InitialParameters};
use wgpu_unsupervised::reference::gmm as refg;
use wgpu_unsupervised::{CovarianceType, Error, GaussianMixtureModel};

/// Random positive-definite covariances of `k` components of `d` features in the layout of
/// `t`: A Aᵀ + 0.1 I for random A (Full, Tied), random variances (Diag, Spherical).
fn covariances(t: CovarianceType, k: usize, d: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    let spd = |rng: &mut ChaCha8Rng| -> Vec<f64> {
        let a: Vec<f64> = (0..d * d).map(|_| rng.random_range(-1.0..1.0)).collect();
        (0..d * d)
            .map(|e| {
                let (i, j) = (e / d, e % d);
                let dot: f64 = (0..d).map(|t| a[i * d + t] * a[j * d + t]).sum();
                dot + if i == j { 0.1 } else { 0.0 }
            })
            .collect()
    };
    match t {
        CovarianceType::Full => (0..k).flat_map(|_| spd(rng)).collect(),
        CovarianceType::Tied => spd(rng),
        CovarianceType::Diag => (0..k * d).map(|_| rng.random_range(0.05..3.0)).collect(),
        CovarianceType::Spherical => (0..k).map(|_| rng.random_range(0.05..3.0)).collect(),
    }
}

/// max |a − b| / max(max |b|, 1).
fn scaled_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
        / scale
}

#[test]
fn precision_factors_match_the_oracle() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for t in CovarianceType::ALL {
        for (k, d) in [(1, 1), (3, 2), (4, 7), (2, 33)] {
            let cov = covariances(t, k, d, &mut rng);
            let ours = math::precision_cholesky(&cov, t, k, d).unwrap();
            let oracle = refg::compute_precision_cholesky(&cov, t, k, d).unwrap();
            let diff = scaled_diff(&ours, &oracle);
            assert!(diff < 1e-10, "{t:?} k={k} d={d}: {diff:e}");
        }
    }
}

#[test]
fn covariances_of_given_precisions_match_the_oracle() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for t in CovarianceType::ALL {
        let (k, d) = (3, 5);
        // Any positive-definite values serve as precisions.
        let precisions = covariances(t, k, d, &mut rng);
        let ours = math::covariances_from_precisions(&precisions, t, d).unwrap();
        let given = InitialParameters {
            weights: vec![1.0 / k as f64; k],
            means: vec![0.0; k * d],
            precisions,
        };
        let oracle = refg::covariances_from_precisions(&given, t, d).unwrap();
        let diff = scaled_diff(&ours, &oracle);
        assert!(diff < 1e-10, "{t:?}: {diff:e}");
    }
}

#[test]
fn both_refuse_the_same_covariances() {
    // Component 1 of a full mixture is indefinite; a diagonal variance is zero.
    let full = [1.0, 0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 1.0];
    let diag = [1.0, 2.0, 0.0, 1.0];
    for (cov, t) in [
        (&full[..], CovarianceType::Full),
        (&diag[..], CovarianceType::Diag),
    ] {
        let ours = math::precision_cholesky(cov, t, 2, 2).unwrap_err();
        let oracle = refg::compute_precision_cholesky(cov, t, 2, 2).unwrap_err();
        for e in [&ours, &oracle] {
            assert!(
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "reg_covar",
                        ..
                    }
                ),
                "{e:?}"
            );
            assert!(e.to_string().contains("component 1"), "{e}");
        }
    }
    assert!(math::precision_cholesky(&[1.0, 0.0], CovarianceType::Tied, 1, 2).is_err());
    assert!(math::precision_cholesky(&[f64::NAN], CovarianceType::Spherical, 1, 2).is_err());
}

#[test]
fn parameter_counts_match_the_oracle_and_scikit_learn() {
    for t in CovarianceType::ALL {
        for (k, d) in [(1, 1), (3, 2), (5, 64)] {
            let mut rng = ChaCha8Rng::seed_from_u64((k * d) as u64);
            let model = GaussianMixtureModel::from_parameters(
                t,
                vec![1.0 / k as f64; k],
                vec![0.0; k * d],
                covariances(t, k, d, &mut rng),
            )
            .unwrap();
            let oracle = refg::n_parameters(&refg::ReferenceGmm::from_model(&model), d);
            assert_eq!(math::n_parameters(t, k, d), oracle, "{t:?} k={k} d={d}");
            assert_eq!(model.n_parameters(), oracle);
        }
    }
    // scikit-learn's _n_parameters for 3 components of 4 features: covariances 30, 10, 12,
    // 3, plus 12 means and 2 free weights.
    let counts = CovarianceType::ALL.map(|t| math::n_parameters(t, 3, 4));
    assert_eq!(counts, [44, 24, 26, 17]);
    assert_eq!(math::n_parameters(CovarianceType::Full, 0, 4), 0);
}

#[test]
fn samples_match_the_oracle_draw_for_draw() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for t in CovarianceType::ALL {
        let (k, d) = (3, 4);
        let model = GaussianMixtureModel::from_parameters(
            t,
            vec![0.2, 0.5, 0.3],
            (0..k * d).map(|_| rng.random_range(-5.0..5.0)).collect(),
            covariances(t, k, d, &mut rng),
        )
        .unwrap();
        let (x, labels) = model.sample(500, 17).unwrap();
        let oracle = refg::ReferenceGmm::from_model(&model);
        let (x_ref, labels_ref) = refg::sample(&oracle, 500, 17).unwrap();
        // The same seeded stream, categorical draws and Box–Muller order: the same points
        // up to the rounding of the two Cholesky factorisations.
        assert_eq!(labels, labels_ref, "{t:?}");
        assert!(scaled_diff(&x, &x_ref) < 1e-12, "{t:?}");
    }
    let empty = GaussianMixtureModel::from_parameters(
        CovarianceType::Spherical,
        vec![1.0],
        vec![0.0],
        vec![1.0],
    )
    .unwrap();
    assert!(matches!(
        empty.sample(0, 1),
        Err(Error::InvalidParameter {
            name: "n_samples",
            ..
        })
    ));
}
