//! Given starting weights, means and precisions (scikit-learn's `weights_init`,
//! `means_init`, `precisions_init`), all of them or some, held against the f64 reference.

use crate::common::gmm::{mixture_data, random_model, scaled_err};
use crate::common::{gpu, to_f64};
use wgpu_unsupervised::reference::gmm as refg;
use wgpu_unsupervised::{CovarianceType, Error, GaussianMixture, GmmInit, Matrix};

const TYPES: [CovarianceType; 4] = [
    CovarianceType::Full,
    CovarianceType::Tied,
    CovarianceType::Diag,
    CovarianceType::Spherical,
];

/// All three parts given are the same start as `GmmInit::Given`: one run, the same model.
#[test]
fn all_three_parts_are_a_given_start() {
    let gpu = gpu();
    for (i, t) in TYPES.into_iter().enumerate() {
        let seed = 60 + i as u64;
        let (n, d, k) = (900, 3, 3);
        let rows = mixture_data(t, n, d, k, seed);
        let x = Matrix::new(&rows, d).unwrap();
        let start = random_model(t, k, d, seed + 7).initial_parameters();
        let base = GaussianMixture::new(k)
            .covariance(t)
            .seed(seed)
            .n_init(4)
            .max_iter(20);
        let given = base
            .clone()
            .init(GmmInit::Given(start.clone()))
            .fit(&gpu, &x)
            .unwrap();
        let parts = base
            .weights_init(start.weights.clone())
            .means_init(start.means.clone())
            .precisions_init(start.precisions.clone())
            .fit(&gpu, &x)
            .unwrap();
        assert_eq!(parts.means(), given.means(), "{t:?}");
        assert_eq!(parts.covariances(), given.covariances(), "{t:?}");
        assert_eq!(parts.lower_bound(), given.lower_bound(), "{t:?}");
    }
}

/// Some parts given: the method's start with those parts replaced, as the reference (and
/// scikit-learn) builds it; every subset, every covariance type, two initialisations.
#[test]
fn some_parts_replace_those_of_the_initialisation() {
    let gpu = gpu();
    for (i, t) in TYPES.into_iter().enumerate() {
        let seed = 70 + i as u64;
        let (n, d, k) = (1200, 3, 4);
        let rows = mixture_data(t, n, d, k, seed);
        let x = Matrix::new(&rows, d).unwrap();
        let x64 = to_f64(&rows);
        let start = random_model(t, k, d, seed + 9).initial_parameters();
        for (mask, init) in [
            (1u8, GmmInit::Random),
            (2, GmmInit::Random),
            (4, GmmInit::Random),
            (3, GmmInit::KMeans),
            (6, GmmInit::Random),
        ] {
            let mut params = GaussianMixture::new(k)
                .covariance(t)
                .init(init)
                .seed(seed)
                .max_iter(25)
                .tol(1e-6);
            if mask & 1 != 0 {
                params = params.weights_init(start.weights.clone());
            }
            if mask & 2 != 0 {
                params = params.means_init(start.means.clone());
            }
            if mask & 4 != 0 {
                params = params.precisions_init(start.precisions.clone());
            }
            let g = params.fit(&gpu, &x).unwrap();
            let r = refg::fit(&x64, d, &params).unwrap();
            let rel = (g.lower_bound() - r.lower_bound).abs() / r.lower_bound.abs();
            assert!(
                rel < 1e-4,
                "{t:?} mask {mask}: {} vs {}",
                g.lower_bound(),
                r.lower_bound
            );
            let em = scaled_err(g.means(), &r.means, 1.0);
            assert!(em < 1e-3, "{t:?} mask {mask}: means differ by {em:e}");
        }
        // Given means change the fit's start (a one-iteration fit shows it).
        let one = GaussianMixture::new(k)
            .covariance(t)
            .init(GmmInit::Random)
            .seed(seed)
            .max_iter(1);
        let plain = one.clone().fit(&gpu, &x).unwrap();
        let moved = one.means_init(start.means.clone()).fit(&gpu, &x).unwrap();
        assert_ne!(plain.means(), moved.means(), "{t:?}");
    }
}

#[test]
fn bad_given_parts_are_errors() {
    let gpu = gpu();
    let rows = mixture_data(CovarianceType::Diag, 300, 2, 2, 80);
    let x = Matrix::new(&rows, 2).unwrap();
    let gm = || GaussianMixture::new(2).covariance(CovarianceType::Diag);
    let cases = [
        (gm().weights_init(vec![0.5, 0.3]), "sum to 1"),
        (gm().weights_init(vec![1.5, -0.5]), "non-negative"),
        (gm().weights_init(vec![1.0]), "weights have 1 values"),
        (gm().means_init(vec![0.0; 3]), "means have 3 values"),
        (gm().means_init(vec![0.0, f64::NAN, 1.0, 1.0]), "finite"),
        (
            gm().precisions_init(vec![1.0; 5]),
            "precisions have 5 values",
        ),
        (gm().precisions_init(vec![1.0, 1.0, -1.0, 1.0]), "init"),
    ];
    for (params, words) in cases {
        let e = params.fit(&gpu, &x).unwrap_err();
        assert!(matches!(e, Error::InvalidParameter { .. }), "{e}");
        assert!(e.to_string().contains(words), "{words}: {e}");
    }
}

/// scikit-learn's `test_convergence_detected_with_warm_start`: refits of `max_iter`
/// iterations each, every one warm-started from the last, detect convergence, because the
/// first iteration's change is measured from the lower bound the warm start carries over.
/// Without it (−∞), a refit of one iteration could never see convergence.
#[test]
fn warm_started_refits_detect_convergence() {
    let gpu = gpu();
    for (t, seed) in [(CovarianceType::Full, 7u64), (CovarianceType::Diag, 8)] {
        let (n, d, k) = (600, 2, 3);
        let x = mixture_data(t, n, d, k, seed);
        let m = Matrix::new(&x, d).unwrap();
        for max_iter in [1, 2, 50] {
            let params = GaussianMixture::new(k)
                .covariance(t)
                .max_iter(max_iter)
                .seed(seed);
            let mut model = params.fit(&gpu, &m).unwrap();
            let mut refits = 0;
            while !model.converged() && refits < 100 {
                model = params.clone().warm_start(&model).fit(&gpu, &m).unwrap();
                refits += 1;
            }
            assert!(model.converged(), "{t} max_iter {max_iter}");
            assert!(model.n_iter() <= max_iter, "{t} max_iter {max_iter}");
            if max_iter == 1 {
                assert!(refits > 0, "{t}: one iteration cannot converge on its own");
                // Without the carried bound the same refit cannot see convergence.
                let mut cold = params.clone().warm_start(&model);
                cold.warm_lower_bound = None;
                assert!(!cold.fit(&gpu, &m).unwrap().converged(), "{t}");
            }
        }
    }
}

/// Normal deviates (Box–Muller on a seeded ChaCha8 stream), for the data of scikit-learn's
/// tests.
fn normals(len: usize, seed: u64) -> Vec<f64> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..len)
        .map(|_| {
            let (u, v): (f64, f64) = (rng.random(), rng.random());
            (-2.0 * (1.0 - u).ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        })
        .collect()
}

/// scikit-learn's `test_gaussian_mixture_precisions_init_diag`: giving the diagonal
/// precisions that the K-Means start would compute (1 / its covariances) fits exactly as
/// the K-Means start does: the same iterations and the same precision factors.
#[test]
fn given_diagonal_precisions_of_the_kmeans_start_fit_as_that_start() {
    use wgpu_unsupervised::gmm::estimate_gaussian_parameters;
    use wgpu_unsupervised::KMeans;
    let gpu = gpu();
    // 300 rows around (20, 20), and 300 stretched by C = [[0, −0.7], [3.5, 0.7]].
    let z = normals(1200, 3);
    let mut x = Vec::with_capacity(1200);
    for r in 0..300 {
        x.extend([z[2 * r] + 20.0, z[2 * r + 1] + 20.0]);
    }
    for r in 300..600 {
        let (a, b) = (z[2 * r], z[2 * r + 1]);
        x.extend([3.5 * b, -0.7 * a + 0.7 * b]);
    }
    let x: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let m = Matrix::new(&x, 2).unwrap();
    let (k, t, reg, seed) = (2, CovarianceType::Diag, 1e-6, 0u64);
    // scikit-learn's test computes the start with KMeans(random_state=seed): a mixture seeded
    // `seed` must start from exactly those labels (its K-Means continues its generator). With
    // a K-Means seed drawn from the generator instead, the labels came numbered otherwise,
    // the given precisions met other means, and the fit took 3 iterations instead of 2.
    let labels = KMeans::new(k).n_init(1).seed(seed).fit(&gpu, &m).unwrap();
    let mut resp = vec![0.0f32; 600 * k];
    for (i, &l) in labels.labels().iter().enumerate() {
        resp[i * k + l as usize] = 1.0;
    }
    let start = estimate_gaussian_parameters(&gpu, &m, &resp, k, t, reg).unwrap();
    let precisions: Vec<f64> = start.covariances.iter().map(|c| 1.0 / c).collect();
    let params = GaussianMixture::new(k)
        .covariance(t)
        .reg_covar(reg)
        .seed(seed);
    let with_init = params
        .clone()
        .precisions_init(precisions)
        .fit(&gpu, &m)
        .unwrap();
    let without = params.fit(&gpu, &m).unwrap();
    assert_eq!(with_init.n_iter(), without.n_iter());
    assert_eq!(with_init.labels(), without.labels());
    let err = scaled_err(
        with_init.precisions_cholesky(),
        without.precisions_cholesky(),
        1e-12,
    );
    assert!(err < 1e-5, "precision factors differ by {err}");
}
