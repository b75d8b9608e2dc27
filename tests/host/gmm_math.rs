//! The neutral Gaussian-mixture host math (`gmm::math`) that the GPU fit, the model and the
//! CPU oracle all use, checked by identities that do not reuse it (no GPU):
//!
//! * precision factors: U is upper triangular with a positive diagonal and Uᵀ Σ U = I
//!   (products written out here), which determines U; a hand-computed 2 x 2 case;
//! * covariances of given precisions: S P = I, and the factor of S gives back P = U Uᵀ;
//! * parameter counts: hand-counted cases and the free entries of each layout enumerated;
//! * sampling: component frequencies, per-component means and covariances of large draws
//!   within a few standard errors, determinism per seed, labels in range and grouped;
//! * every documented error, named and without a panic.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgpu_unsupervised::gmm::math;
use wgpu_unsupervised::{CovarianceType, Error, GaussianMixtureModel};

/// A random symmetric positive-definite d x d matrix A Aᵀ + 0.1 I, A uniform in [−1, 1).
fn spd(d: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    let a: Vec<f64> = (0..d * d).map(|_| rng.random_range(-1.0..1.0)).collect();
    (0..d * d)
        .map(|e| {
            let (i, j) = (e / d, e % d);
            let dot: f64 = (0..d).map(|t| a[i * d + t] * a[j * d + t]).sum();
            dot + if i == j { 0.1 } else { 0.0 }
        })
        .collect()
}

/// Random positive-definite covariances of `k` components of `d` features in the layout of
/// `t`: K (Full) or one (Tied) [`spd`] blocks, random variances (Diag, Spherical).
fn covariances(t: CovarianceType, k: usize, d: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    match t {
        CovarianceType::Full => (0..k).flat_map(|_| spd(d, rng)).collect(),
        CovarianceType::Tied => spd(d, rng),
        CovarianceType::Diag => (0..k * d).map(|_| rng.random_range(0.05..3.0)).collect(),
        CovarianceType::Spherical => (0..k).map(|_| rng.random_range(0.05..3.0)).collect(),
    }
}

/// How many blocks a layout of `k` components holds: one for `Tied`, else K.
fn n_blocks(t: CovarianceType, k: usize) -> usize {
    if t == CovarianceType::Tied {
        1
    } else {
        k
    }
}

/// Block `c` of `values` (layout of `t`) as a dense d x d row-major matrix: as stored for
/// Full and Tied, the diagonal for Diag, σ·I for Spherical.
fn dense(values: &[f64], t: CovarianceType, c: usize, d: usize) -> Vec<f64> {
    let mut m = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..d {
            m[i * d + j] = match t {
                CovarianceType::Full | CovarianceType::Tied => values[c * d * d + i * d + j],
                CovarianceType::Diag if i == j => values[c * d + i],
                CovarianceType::Spherical if i == j => values[c],
                _ => 0.0,
            };
        }
    }
    m
}

/// The product of two d x d row-major matrices.
fn product(a: &[f64], b: &[f64], d: usize) -> Vec<f64> {
    let mut out = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..d {
            for t in 0..d {
                out[i * d + j] += a[i * d + t] * b[t * d + j];
            }
        }
    }
    out
}

/// The transpose of a d x d row-major matrix.
fn transpose(a: &[f64], d: usize) -> Vec<f64> {
    let mut out = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..d {
            out[j * d + i] = a[i * d + j];
        }
    }
    out
}

/// max |aᵢⱼ − δᵢⱼ| of a d x d matrix.
fn distance_from_identity(a: &[f64], d: usize) -> f64 {
    (0..d * d)
        .map(|e| (a[e] - if e / d == e % d { 1.0 } else { 0.0 }).abs())
        .fold(0.0, f64::max)
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

/// The parameter name of an [`Error::InvalidParameter`] (panics on any other error: the
/// test expected a named parameter).
fn name_of(e: &Error) -> &'static str {
    match e {
        Error::InvalidParameter { name, .. } => name,
        other => panic!("expected an invalid parameter, got {other:?}"),
    }
}

/// Asserts that `r` failed on parameter `name` with a message containing `needle`.
fn assert_fails<T: std::fmt::Debug>(r: Result<T, Error>, name: &str, needle: &str) {
    let e = r.expect_err("an error");
    assert_eq!(name_of(&e), name, "{e}");
    assert!(e.to_string().contains(needle), "{e} (wanted {needle:?})");
}

const SHAPES: [(usize, usize); 5] = [(1, 1), (3, 2), (4, 7), (2, 33), (5, 1)];

#[test]
fn precision_factors_whiten_every_covariance() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for t in CovarianceType::ALL {
        for (k, d) in SHAPES {
            let cov = covariances(t, k, d, &mut rng);
            let u = math::precision_cholesky(&cov, t, k, d).unwrap();
            assert_eq!(u.len(), cov.len(), "{t:?} k={k} d={d}");
            for c in 0..n_blocks(t, k) {
                let (uc, sc) = (dense(&u, t, c, d), dense(&cov, t, c, d));
                for i in 0..d {
                    assert!(uc[i * d + i] > 0.0, "{t:?} k={k} d={d}: diagonal {i}");
                    for j in 0..i {
                        assert_eq!(uc[i * d + j], 0.0, "{t:?} k={k} d={d}: not upper");
                    }
                }
                // Uᵀ Σ U = I, i.e. Σ⁻¹ = U Uᵀ; with the triangle and the positive diagonal
                // this pins U down uniquely.
                let whitened = product(&product(&transpose(&uc, d), &sc, d), &uc, d);
                let off = distance_from_identity(&whitened, d);
                assert!(off < 1e-9, "{t:?} k={k} d={d} component {c}: {off:e}");
            }
        }
    }
}

#[test]
fn precision_factors_of_hand_computed_cases() {
    // Σ = [[4, 2], [2, 3]] = L Lᵀ with L = [[2, 0], [1, √2]], so
    // L⁻¹ = [[1/2, 0], [−1/(2√2), 1/√2]] and U = (L⁻¹)ᵀ.
    let r2 = 2f64.sqrt();
    let want = [0.5, -1.0 / (2.0 * r2), 0.0, 1.0 / r2];
    for t in [CovarianceType::Full, CovarianceType::Tied] {
        let u = math::precision_cholesky(&[4.0, 2.0, 2.0, 3.0], t, 1, 2).unwrap();
        assert!(scaled_diff(&u, &want) < 1e-15, "{t:?}: {u:?}");
    }
    let s = math::precision_cholesky(&[4.0, 0.25], CovarianceType::Spherical, 2, 3).unwrap();
    assert_eq!(s, vec![0.5, 2.0]);
    let diag = [1.0, 4.0, 0.25, 16.0, 100.0, 0.01];
    let p = math::precision_cholesky(&diag, CovarianceType::Diag, 2, 3).unwrap();
    assert!(
        scaled_diff(&p, &[1.0, 0.5, 2.0, 0.25, 0.1, 10.0]) < 1e-15,
        "{p:?}"
    );
}

#[test]
fn covariances_of_given_precisions_invert_them() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for t in CovarianceType::ALL {
        for (k, d) in SHAPES {
            // Any positive-definite values serve as precisions.
            let precisions = covariances(t, k, d, &mut rng);
            let cov = math::covariances_from_precisions(&precisions, t, d).unwrap();
            assert_eq!(cov.len(), precisions.len(), "{t:?} k={k} d={d}");
            let factors = math::precision_cholesky(&cov, t, k, d).unwrap();
            for c in 0..n_blocks(t, k) {
                let (sc, pc) = (dense(&cov, t, c, d), dense(&precisions, t, c, d));
                assert!(
                    scaled_diff(&sc, &transpose(&sc, d)) < 1e-14,
                    "{t:?}: symmetric"
                );
                let off = distance_from_identity(&product(&sc, &pc, d), d);
                assert!(
                    off < 1e-9,
                    "{t:?} k={k} d={d} component {c}: S P − I {off:e}"
                );
                // The round trip: the factor of the covariance gives the precision back.
                let uc = dense(&factors, t, c, d);
                let back = product(&uc, &transpose(&uc, d), d);
                let diff = scaled_diff(&back, &pc);
                assert!(
                    diff < 1e-9,
                    "{t:?} k={k} d={d} component {c}: U Uᵀ − P {diff:e}"
                );
            }
        }
    }
}

#[test]
fn covariances_that_are_not_positive_definite_name_the_component() {
    use CovarianceType::{Diag, Full, Spherical, Tied};
    // Component 1 indefinite, or zero, after a positive-definite component 0.
    let identity = [1.0, 0.0, 0.0, 1.0];
    for second in [[1.0, 2.0, 2.0, 1.0], [0.0; 4], [-1.0, 0.0, 0.0, 1.0]] {
        let cov: Vec<f64> = identity.iter().chain(&second).copied().collect();
        assert_fails(
            math::precision_cholesky(&cov, Full, 2, 2),
            "reg_covar",
            "component 1",
        );
    }
    let e = math::precision_cholesky(&[1.0, 2.0, 2.0, 1.0], Tied, 3, 2).unwrap_err();
    assert_eq!(name_of(&e), "reg_covar");
    assert!(e.to_string().contains("tied"), "{e}");
    for diag in [[1.0, 2.0, 0.0, 1.0], [1.0, 2.0, 1.0, -3.0]] {
        assert_fails(
            math::precision_cholesky(&diag, Diag, 2, 2),
            "reg_covar",
            "component 1",
        );
    }
    let spherical = [1.0, -1.0, 3.0];
    assert_fails(
        math::precision_cholesky(&spherical, Spherical, 3, 2),
        "reg_covar",
        "component 1",
    );
    // The documented hint, and never a NaN in the message.
    let e = math::precision_cholesky(&[0.0], Spherical, 1, 1).unwrap_err();
    assert!(e.to_string().contains("increase reg_covar") && !e.to_string().contains("NaN"));
}

#[test]
fn bad_covariance_shapes_and_values_are_named_errors() {
    use CovarianceType::{Diag, Full, Spherical, Tied};
    // Wrong lengths: Full wants K·D², Tied D², Diag K·D, Spherical K.
    for (cov, t, k, d) in [
        (vec![1.0; 3], Full, 1, 2),
        (vec![1.0; 4], Full, 2, 2),
        (vec![1.0; 8], Tied, 2, 2),
        (vec![1.0; 5], Diag, 2, 3),
        (vec![1.0; 3], Spherical, 2, 3),
        (vec![], Spherical, 1, 1),
    ] {
        assert_fails(
            math::precision_cholesky(&cov, t, k, d),
            "covariances",
            "expected",
        );
    }
    // A size that overflows usize (a model file may claim anything) is an error, not a panic.
    assert_fails(
        math::precision_cholesky(&[1.0], Full, usize::MAX, 2),
        "covariances",
        "too many",
    );
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        for t in CovarianceType::ALL {
            let mut cov = covariances(t, 2, 2, &mut ChaCha8Rng::seed_from_u64(1));
            let last = cov.len() - 1;
            cov[last] = bad;
            let needle = format!("index {last}");
            assert_fails(
                math::precision_cholesky(&cov, t, 2, 2),
                "covariances",
                &needle,
            );
        }
    }
    for t in CovarianceType::ALL {
        assert_fails(
            math::precision_cholesky(&[], t, 1, 0),
            "n_features",
            "at least 1",
        );
    }
}

#[test]
fn bad_given_precisions_are_named_errors() {
    use CovarianceType::{Diag, Full, Spherical, Tied};
    let identity = [1.0, 0.0, 0.0, 1.0];
    let indefinite = [1.0, 2.0, 2.0, 1.0];
    let full: Vec<f64> = identity.iter().chain(&indefinite).copied().collect();
    assert_fails(
        math::covariances_from_precisions(&full, Full, 2),
        "init",
        "component 1",
    );
    assert_fails(
        math::covariances_from_precisions(&indefinite, Tied, 2),
        "init",
        "tied",
    );
    let diag = [1.0, 1.0, 1.0, 0.0];
    assert_fails(
        math::covariances_from_precisions(&diag, Diag, 2),
        "init",
        "component 1",
    );
    let spherical = [2.0, 1.0, -1.0];
    assert_fails(
        math::covariances_from_precisions(&spherical, Spherical, 4),
        "init",
        "component 2",
    );
    for t in CovarianceType::ALL {
        let mut p = covariances(t, 2, 2, &mut ChaCha8Rng::seed_from_u64(2));
        p[0] = f64::NAN;
        let which = if t == Tied { "tied" } else { "component 0" };
        assert_fails(math::covariances_from_precisions(&p, t, 2), "init", which);
        // Lengths that are not whole components, and no features, fail without a panic.
        assert_fails(
            math::covariances_from_precisions(&[1.0], t, 0),
            "n_features",
            "1",
        );
    }
    for (p, t) in [
        (vec![1.0; 5], Full),
        (vec![1.0; 8], Tied),
        (vec![1.0; 3], Diag),
    ] {
        assert_fails(
            math::covariances_from_precisions(&p, t, 2),
            "init",
            "features",
        );
    }
}

#[test]
fn parameter_counts_by_hand() {
    // In the order of ALL: Full, Tied, Diag, Spherical.
    const ALL: [CovarianceType; 4] = CovarianceType::ALL;
    // K = 2, D = 3: covariances 2·6, 6, 2·3, 2; means 6; weights 1.
    assert_eq!(ALL.map(|t| math::n_parameters(t, 2, 3)), [19, 13, 13, 9]);
    // K = 3, D = 4 (scikit-learn's _n_parameters): covariances 30, 10, 12, 3; 12; 2.
    assert_eq!(ALL.map(|t| math::n_parameters(t, 3, 4)), [44, 24, 26, 17]);
    // K = 3, D = 2: covariances 9, 3, 6, 3; 6; 2.
    assert_eq!(ALL.map(|t| math::n_parameters(t, 3, 2)), [17, 11, 14, 11]);
    // One 1-D component: a variance and a mean, no free weight.
    assert_eq!(ALL.map(|t| math::n_parameters(t, 1, 1)), [2; 4]);
    assert_eq!(ALL.map(|t| math::n_parameters(t, 0, 4)), [0; 4]);
}

#[test]
fn parameter_counts_enumerate_the_free_entries() {
    for t in CovarianceType::ALL {
        for k in 1..=5 {
            for d in 1..=7 {
                // The free covariance entries: the upper triangle (i ≤ j) of each symmetric
                // block, every diagonal value, or one variance per component.
                let mut free = 0;
                for _ in 0..n_blocks(t, k) {
                    free += match t {
                        CovarianceType::Full | CovarianceType::Tied => (0..d)
                            .flat_map(|i| (0..d).map(move |j| (i, j)))
                            .filter(|(i, j)| i <= j)
                            .count(),
                        CovarianceType::Diag => d,
                        CovarianceType::Spherical => 1,
                    };
                }
                // Plus K·D means and K weights bound by Σπ = 1.
                let want = free + k * d + (k - 1);
                assert_eq!(math::n_parameters(t, k, d), want, "{t:?} k={k} d={d}");
            }
        }
    }
    // The model counts with the same function (the BIC/AIC use it).
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    for t in CovarianceType::ALL {
        let cov = covariances(t, 3, 4, &mut rng);
        let model =
            GaussianMixtureModel::from_parameters(t, vec![0.2, 0.3, 0.5], vec![0.0; 12], cov)
                .unwrap();
        assert_eq!(model.n_parameters(), math::n_parameters(t, 3, 4), "{t:?}");
    }
}

/// Sample frequencies, and per-component means and covariances, of `n` draws from the mixture,
/// within `z` standard errors of the parameters. The samples of a component are
/// N(μ, Σ): a mean's standard error is √(Σⱼⱼ / Nₖ), that of the second moment about the
/// true mean √((ΣᵢᵢΣⱼⱼ + Σᵢⱼ²) / Nₖ), of a frequency √(π(1 − π) / N).
fn check_moments(t: CovarianceType, weights: &[f64], means: &[f64], cov: &[f64], seed: u64) {
    let (n, z, k) = (120_000, 5.0, weights.len());
    let d = means.len() / k;
    let (x, labels) = math::sample(t, weights, means, cov, n, seed).unwrap();
    assert_eq!((x.len(), labels.len()), (n * d, n), "{t:?}");
    assert!(labels.windows(2).all(|w| w[0] <= w[1]), "{t:?}: grouped");
    assert!(labels.iter().all(|&l| (l as usize) < k), "{t:?}: in range");
    let total: f64 = weights.iter().sum();
    let mut start = 0;
    for c in 0..k {
        let count = labels.iter().filter(|&&l| l as usize == c).count();
        let (pi, freq) = (weights[c] / total, count as f64 / n as f64);
        let se = (pi * (1.0 - pi) / n as f64).sqrt();
        assert!(
            (freq - pi).abs() <= z * se,
            "{t:?}: frequency of {c}: {freq} vs {pi}"
        );
        if count == 0 {
            continue;
        }
        let rows = &x[start * d..(start + count) * d];
        start += count;
        let (mu, sigma) = (
            &means[c * d..(c + 1) * d],
            dense(cov, t, c.min(n_blocks(t, k) - 1), d),
        );
        let nc = count as f64;
        for i in 0..d {
            let mean = rows.chunks_exact(d).map(|r| r[i]).sum::<f64>() / nc;
            let se = (sigma[i * d + i] / nc).sqrt();
            assert!(
                (mean - mu[i]).abs() < z * se,
                "{t:?} {c}: mean {i}: {mean} vs {}",
                mu[i]
            );
            for j in 0..d {
                let moment = rows
                    .chunks_exact(d)
                    .map(|r| (r[i] - mu[i]) * (r[j] - mu[j]))
                    .sum::<f64>()
                    / nc;
                let (sii, sjj, sij) = (sigma[i * d + i], sigma[j * d + j], sigma[i * d + j]);
                let se = ((sii * sjj + sij * sij) / nc).sqrt();
                assert!(
                    (moment - sij).abs() < z * se,
                    "{t:?} {c}: covariance {i},{j}: {moment} vs {sij} (se {se})"
                );
            }
        }
    }
}

#[test]
fn samples_have_the_mixture_moments() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let means = [0.0, 0.0, 0.0, 8.0, -3.0, 1.0, -5.0, 4.0, 10.0];
    for (s, t) in CovarianceType::ALL.into_iter().enumerate() {
        // Correlated covariances (Full, Tied) so that a transposed factor would show.
        let cov = covariances(t, 3, 3, &mut rng);
        check_moments(t, &[0.2, 0.5, 0.3], &means, &cov, 40 + s as u64);
        // Weights need not be normalised; a component without weight is never drawn.
        check_moments(t, &[2.0, 0.0, 6.0], &means, &cov, 50 + s as u64);
    }
}

#[test]
fn samples_are_deterministic_per_seed_and_the_model_delegates() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for t in CovarianceType::ALL {
        let (weights, means) = (vec![0.25, 0.75], vec![1.0, -1.0, 2.0, 0.5, 0.0, 3.0]);
        let cov = covariances(t, 2, 3, &mut rng);
        let draw = |seed| math::sample(t, &weights, &means, &cov, 300, seed).unwrap();
        let first = draw(17);
        assert_eq!(first, draw(17), "{t:?}");
        assert_ne!(first.0, draw(18).0, "{t:?}");
        let model =
            GaussianMixtureModel::from_parameters(t, weights.clone(), means.clone(), cov.clone())
                .unwrap();
        assert_eq!(model.sample(300, 17).unwrap(), first, "{t:?}");
    }
}

#[test]
fn sampling_bad_models_are_named_errors() {
    use CovarianceType::{Diag, Full, Spherical};
    let (w, mu, cov) = (vec![0.5, 0.5], vec![0.0; 4], vec![1.0; 4]);
    assert_fails(
        math::sample(Diag, &w, &mu, &cov, 0, 1),
        "n_samples",
        "at least 1",
    );
    // N x D overflowing usize, and a size no host can allocate (2⁶⁰ x 2 values).
    for n in [usize::MAX, 1 << 60] {
        assert_fails(
            math::sample(Diag, &w, &mu, &cov, n, 1),
            "n_samples",
            "do not fit in host memory",
        );
    }
    assert_fails(
        math::sample(Diag, &[], &[], &[], 5, 1),
        "model",
        "fit together",
    );
    assert_fails(
        math::sample(Diag, &w, &mu[..3], &cov, 5, 1),
        "model",
        "fit together",
    );
    assert_fails(
        math::sample(Diag, &w, &mu, &cov[..3], 5, 1),
        "model",
        "fit together",
    );
    assert_fails(
        math::sample(Full, &w, &mu, &cov, 5, 1),
        "model",
        "fit together",
    );
    for weights in [
        [0.5, -0.5],
        [f64::NAN, 1.0],
        [0.0, 0.0],
        [f64::INFINITY, 1.0],
    ] {
        assert_fails(
            math::sample(Diag, &weights, &mu, &cov, 5, 1),
            "model",
            "weights",
        );
    }
    assert_fails(
        math::sample(Spherical, &w, &mu, &[1.0, 0.0], 5, 1),
        "reg_covar",
        "component 1",
    );
}
