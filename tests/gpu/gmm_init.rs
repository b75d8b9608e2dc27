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
