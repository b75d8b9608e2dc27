//! Probabilistic PCA (Minka's MLE, score, covariance, precision) and the whitening rule for
//! rank-deficient data, held against the f64 reference and quoted scikit-learn figures.

use crate::common::pca::spectrum_data;
use crate::common::{gpu, random_matrix, to_f64};
use rand::{Rng, SeedableRng};
use wgpu_unsupervised::reference::pca as refp;
use wgpu_unsupervised::{Components, Error, Matrix, Pca, PcaSolver};

/// N x D rows of rank `r` (a product of N x r and r x D uniform factors), times 10.
fn low_rank(n: usize, d: usize, r: usize, seed: u64) -> Vec<f32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let a: Vec<f64> = (0..n * r).map(|_| rng.random::<f64>() - 0.5).collect();
    let b: Vec<f64> = (0..r * d).map(|_| rng.random::<f64>() - 0.5).collect();
    (0..n * d)
        .map(|ij| {
            let (i, j) = (ij / d, ij % d);
            let v: f64 = (0..r).map(|t| a[i * r + t] * b[t * d + j]).sum();
            (10.0 * v) as f32
        })
        .collect()
}

/// scikit-learn's `test_pca_solver_equivalence` on this crate's solvers: float32 rank-15
/// data, tall and wide, whitened with more components than the rank. Every solver and the
/// reference fit, every output is finite (components at the noise floor are divided by
/// √λ clipped at ε₃₂), the components above the noise floor agree with the reference, and
/// the 15 real ones are whitened to unit variance.
#[test]
fn whitening_rank_deficient_data_as_scikit_learn_does() {
    let gpu = gpu();
    for (n, d, seed) in [(100, 30, 1u64), (30, 100, 2), (100, 30, 3), (30, 100, 4)] {
        let x = low_rank(n, d, 15, seed);
        let m = Matrix::new(&x, d).unwrap();
        let x64 = to_f64(&x);
        for count in [15, 16, 20, n.min(d)] {
            let params = Pca::new(Components::Count(count)).whiten(true);
            let reference = refp::fit(&x64, d, &params).unwrap();
            let zr = refp::transform(&reference, &x64, d, true);
            assert!(zr.iter().all(|v| v.is_finite()));
            let above = reference
                .explained_variance
                .iter()
                .take_while(|&&v| v > 1e-5 * reference.explained_variance[0])
                .count();
            assert_eq!(above, 15, "{n}x{d}: the rank shows in the spectrum");
            for solver in PcaSolver::ALL {
                let what = format!("{n}x{d} {solver} {count}");
                let model = params.clone().solver(solver).fit(&gpu, &m).unwrap();
                assert_eq!(model.n_components(), count, "{what}");
                let z = model.transform(&gpu, &m).unwrap();
                assert!(z.iter().all(|v| v.is_finite()), "{what}: transform");
                let back = model
                    .inverse_transform(&gpu, &Matrix::new(&z, count).unwrap())
                    .unwrap();
                assert!(back.iter().all(|v| v.is_finite()), "{what}: inverse");
                // The components above the noise floor: the reference's projections.
                for c in 0..above {
                    let col = |z: &[f64]| -> Vec<f64> {
                        z.iter().skip(c).step_by(count).copied().collect()
                    };
                    let (got, want) = (col(&to_f64(&z)), col(&zr));
                    let scale = want.iter().map(|v| v.abs()).fold(0.0, f64::max);
                    let err = got
                        .iter()
                        .zip(&want)
                        .map(|(a, b)| (a - b).abs())
                        .fold(0.0, f64::max);
                    assert!(
                        err <= 1e-3 * scale,
                        "{what} component {c}: {err} of {scale}"
                    );
                    // Unit variance (ddof 1) along every real whitened component.
                    let mean = got.iter().sum::<f64>() / n as f64;
                    let var = got.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
                    assert!((var - 1.0).abs() < 1e-3, "{what} component {c}: {var}");
                }
            }
        }
    }
}

#[test]
fn whitenable_components_follows_the_relative_rule() {
    use wgpu_unsupervised::pca::{whitenable_components, WHITEN_RTOL};
    assert_eq!(whitenable_components(&[4.0, 1.0, 4.0 * WHITEN_RTOL]), 2);
    assert_eq!(whitenable_components(&[4.0, 1.0, 4.1 * WHITEN_RTOL]), 3);
    assert_eq!(whitenable_components(&[0.0, 0.0]), 0);
    assert_eq!(whitenable_components(&[]), 0);
}

/// Three strong directions over isotropic noise: Minka's MLE finds 3, as the reference.
#[test]
fn mle_finds_the_signal_dimension_as_the_reference() {
    let gpu = gpu();
    for (seed, scales) in [
        (
            5u64,
            vec![9.0f32, 6.0, 4.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5],
        ),
        (
            6,
            vec![20.0, 12.0, 8.0, 5.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        ),
    ] {
        let d = scales.len();
        let x = spectrum_data(4000, &scales, seed, 3.0);
        let m = Matrix::new(&x, d).unwrap();
        let model = Pca::new(Components::Mle).fit(&gpu, &m).unwrap();
        let reference = refp::fit(&to_f64(&x), d, &Pca::new(Components::Mle)).unwrap();
        let signal = scales.iter().filter(|&&s| s > scales[d - 1]).count();
        assert_eq!(model.n_components(), signal, "seed {seed}");
        assert_eq!(reference.n_components, signal, "seed {seed}");
        // The evidence curve is the same function of the same spectrum.
        let spectrum: Vec<f64> = Pca::new(Components::Count(d))
            .fit(&gpu, &m)
            .unwrap()
            .explained_variance()
            .to_vec();
        assert_eq!(
            refp::probabilistic::minka_dimension(&spectrum, 4000),
            signal
        );
    }
}

/// Iris (scikit-learn 1.9.1 on the same f32 values in f64, `PCA(n_components="mle",
/// svd_solver="full")`): 3 components, score −2.5328088020291033; with 2 components the
/// score is −2.6997964726715455, the first rows' log-likelihoods −1.782961, −2.17897064,
/// −1.75043381, the noise variance 0.051022296495315596, the first row of the covariance
/// [0.67918959, −0.03571515, 1.27140608, 0.53137207] and of the precision
/// [10.3975896, −6.82917874, −4.23252193, −1.73999662].
#[test]
#[cfg(feature = "datasets")]
fn iris_matches_scikit_learn() {
    let gpu = gpu();
    let (rows, _) = wgpu_unsupervised::datasets::iris();
    let x = Matrix::new(&rows, 4).unwrap();
    let mle = Pca::new(Components::Mle).fit(&gpu, &x).unwrap();
    assert_eq!(mle.n_components(), 3);
    let close = |got: f64, want: f64, tol: f64| {
        assert!(
            (got - want).abs() <= tol * want.abs().max(1.0),
            "{got} vs {want}"
        );
    };
    close(mle.score(&x).unwrap(), -2.532_808_802_029_103_3, 1e-5);
    let two = Pca::new(Components::Count(2)).fit(&gpu, &x).unwrap();
    close(two.score(&x).unwrap(), -2.699_796_472_671_545_5, 1e-5);
    close(two.noise_variance(), 0.051_022_296_495_315_596, 1e-4);
    let first = Matrix::new(&rows[..12], 4).unwrap();
    for (got, want) in
        two.score_samples(&first)
            .unwrap()
            .iter()
            .zip([-1.782961, -2.17897064, -1.75043381])
    {
        close(*got, want, 1e-5);
    }
    let cov = two.covariance();
    for (got, want) in cov[..4]
        .iter()
        .zip([0.67918959, -0.03571515, 1.27140608, 0.53137207])
    {
        close(*got, want, 1e-4);
    }
    let precision = two.precision().unwrap();
    for (got, want) in
        precision[..4]
            .iter()
            .zip([10.3975896, -6.82917874, -4.23252193, -1.73999662])
    {
        close(*got, want, 1e-4);
    }
}

/// Covariance, precision and log-likelihoods against the reference's dense route, for
/// several component counts, with and without standardising and whitening.
#[test]
fn probabilistic_model_matches_the_dense_reference() {
    let gpu = gpu();
    for (seed, standardize, whiten) in [
        (11u64, false, false),
        (12, true, false),
        (13, false, true),
        (14, true, true),
    ] {
        let d = 7;
        let scales = [5.0f32, 3.0, 2.0, 1.0, 0.7, 0.5, 0.3];
        let mut x = spectrum_data(600, &scales, seed, -2.0);
        // Uneven feature scales, so that standardising matters.
        for (i, v) in x.iter_mut().enumerate() {
            *v *= 1.0 + (i % d) as f32;
        }
        let m = Matrix::new(&x, d).unwrap();
        let x64 = to_f64(&x);
        let probe = random_matrix(25, d, seed + 100, -8.0, 8.0);
        let probe64 = to_f64(&probe);
        for count in [1, 3, 6] {
            let params = Pca::new(Components::Count(count))
                .standardize(standardize)
                .whiten(whiten);
            let model = params.fit(&gpu, &m).unwrap();
            let reference = refp::fit(&x64, d, &params).unwrap();
            let cov = model.covariance();
            let want = refp::probabilistic::covariance(&reference);
            let scale = want.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            for (g, w) in cov.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-4 * scale, "cov {g} vs {w}");
            }
            // The precision is the inverse of the covariance.
            let p = model.precision().unwrap();
            for i in 0..d {
                for j in 0..d {
                    let e: f64 = (0..d).map(|k| p[i * d + k] * cov[k * d + j]).sum();
                    let want = if i == j { 1.0 } else { 0.0 };
                    assert!((e - want).abs() < 1e-9, "P·C [{i}][{j}] = {e}");
                }
            }
            let got = model
                .score_samples(&Matrix::new(&probe, d).unwrap())
                .unwrap();
            let want = refp::probabilistic::score_samples(&reference, &probe64).unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g - w).abs() <= 1e-4 * w.abs().max(1.0),
                    "{seed} {count}: {g} vs {w}"
                );
            }
            let mean = want.iter().sum::<f64>() / want.len() as f64;
            let score = model.score(&Matrix::new(&probe, d).unwrap()).unwrap();
            assert!((score - mean).abs() <= 1e-4 * mean.abs());
        }
    }
}

#[test]
fn probabilistic_errors() {
    let gpu = gpu();
    let x = random_matrix(50, 4, 21, -1.0, 1.0);
    let m = Matrix::new(&x, 4).unwrap();
    let model = Pca::new(Components::Count(2)).fit(&gpu, &m).unwrap();
    let wrong = Matrix::new(&x[..30], 3).unwrap();
    assert!(matches!(
        model.score_samples(&wrong),
        Err(Error::FeatureMismatch { .. })
    ));
    // Wide data keep no noise variance once every direction is kept: no density.
    let wide = random_matrix(3, 6, 22, -1.0, 1.0);
    let w = Matrix::new(&wide, 6).unwrap();
    let all = Pca::new(Components::Count(3)).fit(&gpu, &w).unwrap();
    assert!(all
        .precision()
        .unwrap_err()
        .to_string()
        .contains("singular"));
    assert!(all.score(&w).is_err());
    assert_eq!(all.covariance().len(), 36);
    // Minka's MLE needs N >= D and the whole spectrum.
    assert!(Pca::new(Components::Mle)
        .fit(&gpu, &w)
        .unwrap_err()
        .to_string()
        .contains("N >= D"));
    let e = Pca::new(Components::Mle)
        .solver(PcaSolver::Power)
        .fit(&gpu, &m)
        .unwrap_err();
    assert!(e.to_string().contains("whole spectrum"), "{e}");
}
