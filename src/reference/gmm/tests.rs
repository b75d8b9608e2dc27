//! The oracle's Gaussian mixtures against hand-computed values, known structure and
//! scikit-learn's figures. The shared math it builds on (precision factors, parameter
//! counts, sampling: `crate::gmm::math`) has its own checks in `tests/gmm_math.rs`.

use super::*;
use crate::gmm::InitialParameters;

/// A model from weights, means and covariances (precision factors computed).
fn model(weights: &[f64], means: &[f64], covariances: &[f64], t: CovarianceType) -> ReferenceGmm {
    let k = weights.len();
    let d = means.len() / k;
    ReferenceGmm {
        weights: weights.to_vec(),
        means: means.to_vec(),
        covariances: covariances.to_vec(),
        precisions_cholesky: math::precision_cholesky(covariances, t, k, d).unwrap(),
        covariance_type: t,
        converged: true,
        n_iter: 0,
        lower_bound: 0.0,
        lower_bound_history: Vec::new(),
        labels: Vec::new(),
    }
}

/// `n` points drawn from `m` (grouped by component) with generator seed `seed`.
fn draw(m: &ReferenceGmm, n: usize, seed: u64) -> Vec<f64> {
    math::sample(
        m.covariance_type,
        &m.weights,
        &m.means,
        &m.covariances,
        n,
        seed,
    )
    .unwrap()
    .0
}

const MEANS: [f64; 6] = [0.0, 0.0, 8.0, 1.0, 2.0, 9.0];
const WEIGHTS: [f64; 3] = [0.5, 0.3, 0.2];

/// A 3-component 2-D truth whose covariances have the shape of `t`.
fn truth(t: CovarianceType) -> ReferenceGmm {
    let cov: Vec<f64> = match t {
        CovarianceType::Full => vec![
            1.0, 0.6, 0.6, 2.0, //
            0.5, -0.2, -0.2, 0.4, //
            1.5, 0.0, 0.0, 0.7,
        ],
        CovarianceType::Tied => vec![1.0, 0.4, 0.4, 0.8],
        CovarianceType::Diag => vec![1.0, 2.0, 0.5, 0.3, 1.5, 0.7],
        CovarianceType::Spherical => vec![1.0, 0.5, 2.0],
    };
    model(&WEIGHTS, &MEANS, &cov, t)
}

/// Variance of feature j of component c.
fn var(m: &ReferenceGmm, c: usize, j: usize, d: usize) -> f64 {
    match m.covariance_type {
        CovarianceType::Full => m.covariances[c * d * d + j * d + j],
        CovarianceType::Tied => m.covariances[j * d + j],
        CovarianceType::Diag => m.covariances[c * d + j],
        CovarianceType::Spherical => m.covariances[c],
    }
}

const ALL: [CovarianceType; 4] = [
    CovarianceType::Full,
    CovarianceType::Tied,
    CovarianceType::Diag,
    CovarianceType::Spherical,
];

#[test]
fn log_density_matches_the_textbook_formula() {
    let cov = [4.0, 2.0, 2.0, 3.0];
    let m = model(&[1.0], &[1.0, -1.0], &cov, CovarianceType::Full);
    let x = [2.0, 0.5];
    let lp = estimate_log_gaussian_prob(
        &x,
        2,
        &m.means,
        &m.precisions_cholesky,
        CovarianceType::Full,
        1,
    );
    let (dx, dy) = (1.0, 1.5);
    let det = 4.0 * 3.0 - 2.0 * 2.0;
    let quad = (3.0 * dx * dx - 4.0 * dx * dy + 4.0 * dy * dy) / det;
    let expect = -(2.0 * std::f64::consts::PI).ln() - 0.5 * f64::ln(det) - 0.5 * quad;
    assert!((lp[0] - expect).abs() < 1e-12, "{} vs {expect}", lp[0]);
}

#[test]
fn estep_responsibilities_sum_to_one() {
    for (s, t) in ALL.into_iter().enumerate() {
        let m = truth(t);
        let x = draw(&m, 500, 10 + s as u64);
        let (log_resp, log_norm) = estep(&x, 2, &m);
        assert_eq!((log_resp.len(), log_norm.len()), (1500, 500));
        for row in log_resp.chunks_exact(3) {
            let s: f64 = row.iter().map(|v| v.exp()).sum();
            assert!((s - 1.0).abs() < 1e-12, "{t:?}: {s}");
        }
        let p = predict_proba(&m, &x, 2);
        assert!(p.iter().all(|v| (0.0..=1.0).contains(v)));
    }
}

#[test]
fn log_likelihood_never_decreases() {
    for (s, t) in ALL.into_iter().enumerate() {
        let x = draw(&truth(t), 600, 20 + s as u64);
        for init in [GmmInit::Random, GmmInit::KMeansPlusPlus] {
            let params = GaussianMixture::new(3)
                .covariance(t)
                .init(init.clone())
                .tol(0.0)
                .max_iter(60)
                .seed(s as u64);
            let fit = fit(&x, 2, &params).unwrap();
            assert!(!fit.converged && fit.n_iter == 60);
            for w in fit.lower_bound_history.windows(2) {
                assert!(w[1] >= w[0] - 1e-9, "{t:?} {init:?}: {} -> {}", w[0], w[1]);
            }
        }
    }
}

#[test]
fn recovers_a_known_mixture_for_each_covariance_type() {
    let n = 3000;
    for (s, t) in ALL.into_iter().enumerate() {
        let m = truth(t);
        let x = draw(&m, n, 100 + s as u64);
        let fit = fit(&x, 2, &GaussianMixture::new(3).covariance(t).seed(1)).unwrap();
        assert!(fit.converged, "{t:?}");
        assert_eq!(fit.covariance_type, t);
        let sum: f64 = fit.weights.iter().sum();
        assert!((sum - 1.0).abs() < 1e-12);
        for c in 0..3 {
            let mu = &MEANS[c * 2..c * 2 + 2];
            // The fitted component nearest to this true mean.
            let f = (0..3)
                .min_by(|&a, &b| {
                    let da =
                        (fit.means[a * 2] - mu[0]).powi(2) + (fit.means[a * 2 + 1] - mu[1]).powi(2);
                    let db =
                        (fit.means[b * 2] - mu[0]).powi(2) + (fit.means[b * 2 + 1] - mu[1]).powi(2);
                    da.total_cmp(&db)
                })
                .unwrap();
            assert!(
                (fit.weights[f] - WEIGHTS[c]).abs() < 0.05,
                "{t:?}: weight {} vs {}",
                fit.weights[f],
                WEIGHTS[c]
            );
            for (j, &muj) in mu.iter().enumerate() {
                let se = (var(&m, c, j, 2) / (n as f64 * WEIGHTS[c])).sqrt();
                let err = (fit.means[f * 2 + j] - muj).abs();
                assert!(err < 4.0 * se, "{t:?}: mean {c},{j} off by {err} (se {se})");
                let v = var(&fit, f, j, 2);
                let vt = var(&m, c, j, 2);
                assert!((v / vt - 1.0).abs() < 0.2, "{t:?}: variance {v} vs {vt}");
            }
        }
        // Labels from the final E-step agree with predict.
        assert_eq!(fit.labels, predict(&fit, &x, 2));
    }
}

#[cfg(feature = "datasets")]
#[test]
fn iris_full_lower_bound() {
    let (x, _) = crate::datasets::iris();
    let x: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let fit = fit(&x, 4, &GaussianMixture::new(3).seed(0)).unwrap();
    println!(
        "iris GMM(3, full): lower bound {:.6} per sample after {} iterations (converged: {})",
        fit.lower_bound, fit.n_iter, fit.converged
    );
    // scikit-learn's GaussianMixture(3, random_state=0) reaches about -1.2.
    assert!(
        (-1.3..-1.1).contains(&fit.lower_bound),
        "{}",
        fit.lower_bound
    );
    assert!(fit.converged);
    let s = score(&fit, &x, 4);
    assert!(s >= fit.lower_bound - 1e-3, "{s} vs {}", fit.lower_bound);
}

#[test]
fn far_away_points_stay_finite() {
    for t in ALL {
        let m = truth(t);
        let x = [1e6, 1e6, -1e6, 1e6, 1e6, -2e6];
        let (log_resp, log_norm) = estep(&x, 2, &m);
        assert!(
            log_resp.iter().all(|v| v.is_finite()),
            "{t:?}: {log_resp:?}"
        );
        assert!(
            log_norm.iter().all(|v| v.is_finite()),
            "{t:?}: {log_norm:?}"
        );
        for row in predict_proba(&m, &x, 2).chunks_exact(3) {
            let s: f64 = row.iter().sum();
            assert!((s - 1.0).abs() < 1e-12, "{t:?}: {row:?}");
        }
        assert!(score(&m, &x, 2).is_finite());
        assert_eq!(predict(&m, &x, 2).len(), 3);
    }
}

#[test]
fn bic_and_aic_by_hand() {
    // One 1-D component N(1.5, 1.25) on x = 0, 1, 2, 3: Σ (x − μ)² = 5, so
    // log L = −2 log(2π · 1.25) − 5 / 2.5 and p = 1 variance + 1 mean + 0 weights.
    let x = [0.0, 1.0, 2.0, 3.0];
    let m = model(&[1.0], &[1.5], &[1.25], CovarianceType::Full);
    let ll = -2.0 * (2.5 * std::f64::consts::PI).ln() - 2.0;
    assert!((bic(&m, &x, 1) - (-2.0 * ll + 2.0 * 4f64.ln())).abs() < 1e-12);
    assert!((aic(&m, &x, 1) - (-2.0 * ll + 4.0)).abs() < 1e-12);
    assert!((score(&m, &x, 1) - ll / 4.0).abs() < 1e-12);
    // Fitting finds that very model (reg_covar = 0).
    let f = fit(&x, 1, &GaussianMixture::new(1).reg_covar(0.0)).unwrap();
    assert!((f.means[0] - 1.5).abs() < 1e-12 && (f.covariances[0] - 1.25).abs() < 1e-12);
    assert!((bic(&f, &x, 1) - bic(&m, &x, 1)).abs() < 1e-9);
}

#[test]
fn not_positive_definite_names_the_component() {
    // A component sitting on duplicated points (at the origin, so its centred scatter is
    // exactly zero) with reg_covar = 0.
    let mut x = vec![0.0; 20];
    for i in 0..20 {
        x.push(10.0 + (i % 5) as f64);
        x.push(10.0 + (i % 3) as f64 * 0.7);
    }
    for t in ALL {
        let r = fit(&x, 2, &GaussianMixture::new(2).covariance(t).reg_covar(0.0));
        if t == CovarianceType::Tied {
            // The shared covariance gets the other cluster's spread: positive definite.
            assert!(r.is_ok(), "{r:?}");
            continue;
        }
        let msg = r.unwrap_err().to_string();
        assert!(
            msg.contains("reg_covar") && msg.contains("component") && msg.contains("now 0"),
            "{t:?}: {msg}"
        );
        assert!(!msg.contains("NaN"));
        // The default regularisation fixes it.
        let f = fit(&x, 2, &GaussianMixture::new(2).covariance(t)).unwrap();
        assert!(f.lower_bound.is_finite());
    }
}

#[test]
fn empty_components_stay_finite() {
    let x = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
    // All the weight on component 0.
    let resp = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0];
    for t in ALL {
        let (w, m, c) = mstep(&x, 2, &resp, 2, t, 1e-6).unwrap();
        assert!(w.iter().chain(&m).chain(&c).all(|v| v.is_finite()), "{t:?}");
        assert!(w[1] > 0.0 && w[1] < 1e-14, "{w:?}");
        assert!(math::precision_cholesky(&c, t, 2, 2).is_ok());
    }
}

#[test]
fn warm_start_from_given_parameters() {
    let t = CovarianceType::Full;
    let x = draw(&truth(t), 1000, 3);
    let first = fit(&x, 2, &GaussianMixture::new(3).tol(1e-8).max_iter(500)).unwrap();
    assert!(first.converged);
    // Precisions = inverse covariances, from the factors: P = U Uᵀ.
    let mut precisions = Vec::new();
    for u in first.precisions_cholesky.chunks_exact(4) {
        for i in 0..2 {
            for j in 0..2 {
                precisions.push((0..2).map(|s| u[i * 2 + s] * u[j * 2 + s]).sum());
            }
        }
    }
    let given = InitialParameters {
        weights: first.weights.clone(),
        means: first.means.clone(),
        precisions,
    };
    let second = fit(&x, 2, &GaussianMixture::new(3).init(GmmInit::Given(given))).unwrap();
    assert!(second.converged && second.n_iter <= 2, "{}", second.n_iter);
    for (a, b) in second.means.iter().zip(&first.means) {
        assert!((a - b).abs() < 1e-4);
    }
    assert_eq!(second.labels, first.labels);
}

#[test]
fn restarts_and_seeds_are_reproducible() {
    let x = draw(&truth(CovarianceType::Diag), 400, 5);
    let p = GaussianMixture::new(3)
        .covariance(CovarianceType::Diag)
        .init(GmmInit::Random)
        .n_init(3)
        .seed(9);
    let a = fit(&x, 2, &p).unwrap();
    assert_eq!(a, fit(&x, 2, &p).unwrap());
    let single = fit(&x, 2, &p.clone().n_init(1)).unwrap();
    assert!(a.lower_bound >= single.lower_bound);
    // max_iter reached is not an error.
    let short = fit(&x, 2, &p.clone().max_iter(1)).unwrap();
    assert!(!short.converged && short.n_iter == 1);
}

#[test]
fn invalid_input_is_an_error() {
    let x = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
    let bad = |r: Result<ReferenceGmm>, name: &str| match r {
        Err(Error::InvalidParameter { name: n, .. }) => assert_eq!(n, name),
        other => panic!("expected an error on {name}, got {other:?}"),
    };
    bad(fit(&x, 2, &GaussianMixture::new(0)), "k");
    bad(
        fit(&x, 2, &GaussianMixture::new(2).reg_covar(-1.0)),
        "reg_covar",
    );
    bad(fit(&x, 2, &GaussianMixture::new(2).n_init(0)), "n_init");
    bad(fit(&x, 2, &GaussianMixture::new(2).max_iter(0)), "max_iter");
    bad(fit(&x, 2, &GaussianMixture::new(2).tol(f64::NAN)), "tol");
    assert!(matches!(
        fit(&x, 2, &GaussianMixture::new(4)),
        Err(Error::TooFewSamples { .. })
    ));
    assert!(matches!(
        fit(&x, 0, &GaussianMixture::new(1)),
        Err(Error::EmptyData { .. })
    ));
    assert!(matches!(
        fit(&x, 4, &GaussianMixture::new(1)),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        fit(&[0.0, f64::NAN], 1, &GaussianMixture::new(1)),
        Err(Error::NonFinite { row: 1, .. })
    ));
    let given = |precisions: Vec<f64>| {
        GaussianMixture::new(1).init(GmmInit::Given(InitialParameters {
            weights: vec![1.0],
            means: vec![0.0, 0.0],
            precisions,
        }))
    };
    bad(fit(&x, 2, &given(vec![1.0])), "init");
    bad(fit(&x, 2, &given(vec![1.0, 2.0, 2.0, 1.0])), "init");
    // Helpers with shapes that do not fit return nothing rather than panic.
    let m = truth(CovarianceType::Full);
    assert!(predict(&m, &x, 3).is_empty() && predict_proba(&m, &x, 4).is_empty());
    assert!(score(&m, &x, 0).is_nan() && bic(&m, &[], 2).is_nan());
    assert!(estimate_log_gaussian_prob(&x, 2, &[0.0], &[1.0], CovarianceType::Full, 1).is_empty());
    assert!(mstep(&x, 2, &[1.0; 5], 1, CovarianceType::Full, 0.0).is_err());
    assert!(mstep(&x, 2, &[-1.0; 3], 1, CovarianceType::Full, 0.0).is_err());
}
