//! Gaussian mixtures with sample weights: an integer weight is the row repeated, for every
//! covariance type (against the GPU fit of the repeated rows and the f64 reference).

use crate::common::gmm::{mixture_data, random_model, scaled_err};
use crate::common::gpu;
use crate::common::stream::{small_pieces, whole_data};
use wgpu_unsupervised::reference::gmm as refg;
use wgpu_unsupervised::{CovarianceType, Error, GaussianMixture, GmmInit, Matrix};

/// Integer weights 0..=3 from a seeded pattern, and the rows repeated by them.
fn weights_and_repeats(x: &[f32], d: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let n = x.len() / d;
    let w: Vec<f32> = (0..n)
        .map(|i| ((i * 5 + seed as usize) % 4) as f32)
        .collect();
    let mut rep = Vec::new();
    for (i, &wi) in w.iter().enumerate() {
        for _ in 0..wi as usize {
            rep.extend_from_slice(&x[i * d..(i + 1) * d]);
        }
    }
    (w, rep)
}

#[test]
fn integer_weights_equal_repeated_rows_for_every_covariance_type() {
    for t in CovarianceType::ALL {
        for &(n, d, k, seed) in &[(1200, 3, 3, 1u64), (900, 4, 2, 2)] {
            let gpu = gpu();
            let x = mixture_data(t, n, d, k, seed);
            let (w, rep) = weights_and_repeats(&x, d, seed);
            let start = random_model(t, k, d, seed + 100);
            let params = GaussianMixture::new(k)
                .covariance(t)
                .init(GmmInit::Given(start.initial_parameters()))
                .max_iter(30);
            let weighted = params
                .fit_weighted(&gpu, &Matrix::new(&x, d).unwrap(), &w)
                .unwrap();
            let repeated = params.fit(&gpu, &Matrix::new(&rep, d).unwrap()).unwrap();
            let what = format!("{t} n={n} d={d} k={k}");
            assert_eq!(weighted.n_iter(), repeated.n_iter(), "{what}");
            for (a, b, part) in [
                (weighted.weights(), repeated.weights(), "weights"),
                (weighted.means(), repeated.means(), "means"),
                (
                    weighted.covariances(),
                    repeated.covariances(),
                    "covariances",
                ),
            ] {
                let err = scaled_err(a, b, 1e-3);
                assert!(err < 2e-5, "{what}: {part} differ by {err}");
            }
            let (la, lb) = (weighted.lower_bound(), repeated.lower_bound());
            assert!(
                (la - lb).abs() < 1e-5 * lb.abs().max(1.0),
                "{what}: {la} vs {lb}"
            );
            // The f64 reference on the repeated rows.
            let rep64: Vec<f64> = rep.iter().map(|&v| v as f64).collect();
            let r = refg::fit(&rep64, d, &params).unwrap();
            let err = scaled_err(weighted.means(), &r.means, 1e-3);
            assert!(err < 1e-4, "{what}: means vs reference {err}");
            assert!((la - r.lower_bound).abs() < 1e-4 * r.lower_bound.abs().max(1.0));
        }
    }
}

#[test]
fn weighted_starts_and_bad_weights() {
    let gpu = gpu();
    let (n, d, k) = (1500, 2, 3);
    let x = mixture_data(CovarianceType::Full, n, d, k, 5);
    let m = Matrix::new(&x, d).unwrap();
    let (w, rep) = weights_and_repeats(&x, d, 5);
    // (Random responsibilities land in different local optima for different draws.)
    for init in [GmmInit::KMeans, GmmInit::KMeansPlusPlus] {
        let params = GaussianMixture::new(k).init(init.clone()).n_init(2).seed(5);
        let weighted = params.fit_weighted(&gpu, &m, &w).unwrap();
        let repeated = params.fit(&gpu, &Matrix::new(&rep, d).unwrap()).unwrap();
        // Different draws, the same optimum of well-separated components.
        let (a, b) = (weighted.lower_bound(), repeated.lower_bound());
        assert!(
            (a - b).abs() < 1e-3 * b.abs().max(1.0),
            "{init:?}: {a} vs {b}"
        );
    }
    let params = GaussianMixture::new(k);
    for bad in [vec![1.0f32; n - 1], vec![0.0; n], {
        let mut v = vec![1.0f32; n];
        v[2] = f32::NAN;
        v
    }] {
        let e = params.fit_weighted(&gpu, &m, &bad).unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidParameter {
                    name: "sample_weight",
                    ..
                }
            ),
            "{e}"
        );
    }
}

#[test]
fn weighted_fits_stream_like_resident_ones() {
    for t in CovarianceType::ALL {
        let gpu = gpu();
        let (n, d, k, seed) = (1800, 3, 3, 7u64);
        let x = mixture_data(t, n, d, k, seed);
        let (w, _) = weights_and_repeats(&x, d, seed);
        let m = Matrix::new(&x, d).unwrap();
        let start = random_model(t, k, d, seed + 100);
        for init in [GmmInit::Given(start.initial_parameters()), GmmInit::Random] {
            let params = GaussianMixture::new(k)
                .covariance(t)
                .init(init)
                .max_iter(25)
                .seed(seed);
            let resident = params.fit_weighted(&gpu, &m, &w).unwrap();
            small_pieces(&gpu, 400, n, d);
            let streamed = params.fit_source_weighted(&gpu, &m, &w).unwrap();
            whole_data(&gpu);
            let what = format!("{t}");
            assert_eq!(streamed.n_iter(), resident.n_iter(), "{what}");
            for (a, b, part) in [
                (streamed.weights(), resident.weights(), "weights"),
                (streamed.means(), resident.means(), "means"),
                (
                    streamed.covariances(),
                    resident.covariances(),
                    "covariances",
                ),
            ] {
                let err = scaled_err(a, b, 1e-3);
                assert!(err < 2e-5, "{what}: {part} differ by {err}");
            }
            let (la, lb) = (streamed.lower_bound(), resident.lower_bound());
            assert!(
                (la - lb).abs() < 1e-5 * lb.abs().max(1.0),
                "{what}: {la} vs {lb}"
            );
        }
    }
}

#[test]
fn the_weights_scale_does_not_change_the_mixture_or_the_clustering() {
    let gpu = gpu();
    for (t, seed) in [(CovarianceType::Full, 3u64), (CovarianceType::Diag, 4)] {
        let (n, d, k) = (600, 3, 3);
        let x = mixture_data(t, n, d, k, seed);
        let m = Matrix::new(&x, d).unwrap();
        let w: Vec<f32> = (0..n).map(|i| 1.0 + (i % 3) as f32).collect();
        let params = GaussianMixture::new(k).covariance(t).seed(seed);
        let base = params.fit_weighted(&gpu, &m, &w).unwrap();
        let km = wgpu_unsupervised::KMeans::new(k).seed(seed);
        let kbase = km.fit_weighted(&gpu, &m, &w).unwrap();
        // Weights of 1e-20 (their products underflow f32) and 1e38 (their sums overflow it).
        for c in [1e-20f32, 1e38 / 4.0] {
            let wc: Vec<f32> = w.iter().map(|v| v * c).collect();
            let model = params.fit_weighted(&gpu, &m, &wc).unwrap();
            assert_eq!(model.labels(), base.labels(), "{t:?} x{c:e}");
            let err = (model.lower_bound() - base.lower_bound()).abs();
            assert!(
                err < 1e-4,
                "{t:?} x{c:e}: lower bound {} vs {}",
                model.lower_bound(),
                base.lower_bound()
            );
            assert!(
                scaled_err(model.means(), base.means(), 1.0) < 1e-4,
                "{t:?} x{c:e}"
            );
            let km_c = km.fit_weighted(&gpu, &m, &wc).unwrap();
            assert_eq!(km_c.labels(), kbase.labels(), "x{c:e}");
            // The inertia is in the weights' units: Σ w·‖x − c‖².
            let rel = (km_c.inertia() / c as f64 - kbase.inertia()).abs() / kbase.inertia();
            assert!(
                rel < 1e-5,
                "x{c:e}: inertia {} vs {}",
                km_c.inertia(),
                kbase.inertia()
            );
            assert!(km_c.centroids().iter().all(|v| v.is_finite()));
        }
    }
}
