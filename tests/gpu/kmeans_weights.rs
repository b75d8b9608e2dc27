//! K-Means with sample weights: an integer weight is the row repeated (against the GPU fit
//! of the repeated rows and the f64 reference), streamed equals resident, bad weights fail.

use crate::common::stream::{small_pieces, whole_data};
use crate::common::{gpu, max_rel_err, to_f64};
use wgpu_unsupervised::reference::kmeans as refk;
use wgpu_unsupervised::{datasets, Error, KMeans, KMeansInit, Matrix, MiniBatchKMeans};

/// Blob rows, integer weights 0..=3 from a seeded pattern, and the rows repeated by them.
fn weighted_blobs(n: usize, d: usize, k: usize, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let x = datasets::make_blobs(n, d, k, 2.0, (-8.0, 8.0), seed)
        .unwrap()
        .0;
    let w: Vec<f32> = (0..n)
        .map(|i| ((i * 7 + seed as usize) % 4) as f32)
        .collect();
    let mut repeated = Vec::new();
    for (i, &wi) in w.iter().enumerate() {
        for _ in 0..wi as usize {
            repeated.extend_from_slice(&x[i * d..(i + 1) * d]);
        }
    }
    (x, w, repeated)
}

#[test]
fn integer_weights_equal_repeated_rows() {
    for &(n, d, k, seed) in &[(1500, 4, 5, 1u64), (900, 9, 3, 2)] {
        let gpu = gpu();
        let (x, w, rep) = weighted_blobs(n, d, k, seed);
        // Start from rows of positive weight, so both fits start alike.
        let start: Vec<f64> = (0..n)
            .filter(|&i| w[i] > 0.0)
            .take(k)
            .flat_map(|i| to_f64(&x[i * d..(i + 1) * d]))
            .collect();
        for tol in [0.0, 1e-4] {
            let params = KMeans::new(k)
                .init(KMeansInit::Centroids(start.clone()))
                .tol(tol)
                .max_iter(40);
            let weighted = params
                .fit_weighted(&gpu, &Matrix::new(&x, d).unwrap(), &w)
                .unwrap();
            let repeated = params.fit(&gpu, &Matrix::new(&rep, d).unwrap()).unwrap();
            let err = max_rel_err(
                &to_f64(weighted.centroids()),
                &to_f64(repeated.centroids()),
                1.0,
            );
            assert!(err < 1e-5, "n={n} tol={tol}: centroids differ by {err}");
            let rel = (weighted.inertia() - repeated.inertia()).abs() / repeated.inertia();
            assert!(
                rel < 1e-5,
                "inertia {} vs {}",
                weighted.inertia(),
                repeated.inertia()
            );
            // The f64 reference on the repeated rows.
            let r = refk::fit(&to_f64(&rep), d, &params).unwrap();
            let err = max_rel_err(&to_f64(weighted.centroids()), &r.centroids, 1.0);
            assert!(err < 1e-4, "n={n}: vs reference {err}");
            assert!((weighted.inertia() - r.inertia).abs() / r.inertia < 1e-5);
        }
    }
}

#[test]
fn weighted_seeding_ignores_rows_of_zero_weight_and_streams_alike() {
    for seed in [3u64, 4] {
        let gpu = gpu();
        let (n, d, k) = (3000, 3, 4);
        let (mut x, truth, _) = datasets::make_blobs(n, d, k, 0.3, (-10.0, 10.0), seed).unwrap();
        // 300 far outliers, weightless: no centroid may go there.
        let mut w = vec![1.0f32; n];
        for i in (0..n).step_by(10) {
            x[i * d] = 1e4;
            w[i] = 0.0;
        }
        let m = Matrix::new(&x, d).unwrap();
        for init in [KMeansInit::KMeansPlusPlus, KMeansInit::Random] {
            let params = KMeans::new(k).init(init.clone()).n_init(3).seed(seed);
            let model = params.fit_weighted(&gpu, &m, &w).unwrap();
            assert!(
                model.centroids().iter().all(|v| v.abs() < 100.0),
                "{init}: {:?}",
                model.centroids()
            );
            let kept: Vec<u32> = (0..n)
                .filter(|&i| w[i] > 0.0)
                .map(|i| model.labels()[i])
                .collect();
            let truth_kept: Vec<u32> = (0..n).filter(|&i| w[i] > 0.0).map(|i| truth[i]).collect();
            let ari =
                wgpu_unsupervised::reference::metrics::adjusted_rand_index(&kept, &truth_kept)
                    .unwrap();
            assert!(ari > 0.99, "{init} seed {seed}: ARI {ari}");
            // Streamed in pieces of 500 rows: the same model within f32 rounding.
            let resident = params
                .clone()
                .init(KMeansInit::Centroids(to_f64(model.centroids())))
                .fit_weighted(&gpu, &m, &w)
                .unwrap();
            small_pieces(&gpu, 500, n, d);
            let streamed = params
                .clone()
                .init(KMeansInit::Centroids(to_f64(model.centroids())))
                .fit_source_weighted(&gpu, &m, &w)
                .unwrap();
            whole_data(&gpu);
            let err = max_rel_err(
                &to_f64(streamed.centroids()),
                &to_f64(resident.centroids()),
                1.0,
            );
            assert!(err < 1e-5, "{init}: streamed vs resident {err}");
            assert!((streamed.inertia() - resident.inertia()).abs() / resident.inertia() < 1e-5);
        }
    }
}

#[test]
fn bad_weights_give_errors() {
    let gpu = gpu();
    let x = datasets::make_blobs(50, 2, 2, 1.0, (-1.0, 1.0), 5)
        .unwrap()
        .0;
    let m = Matrix::new(&x, 2).unwrap();
    let params = KMeans::new(2);
    let mut bad = vec![1.0f32; 50];
    for (what, w) in [
        ("short", vec![1.0f32; 49]),
        ("all zero", vec![0.0f32; 50]),
        ("negative", {
            bad[3] = -1.0;
            bad.clone()
        }),
        ("NaN", {
            bad[3] = f32::NAN;
            bad.clone()
        }),
    ] {
        let e = params.fit_weighted(&gpu, &m, &w).unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidParameter {
                    name: "sample_weight",
                    ..
                }
            ),
            "{what}: {e}"
        );
        let e = params.fit_source_weighted(&gpu, &m, &w).unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidParameter {
                    name: "sample_weight",
                    ..
                }
            ),
            "{what}: {e}"
        );
    }
    // Random init needs k rows of positive weight.
    let mut one = vec![0.0f32; 50];
    one[7] = 1.0;
    let e = params
        .clone()
        .init(KMeansInit::Random)
        .fit_weighted(&gpu, &m, &one)
        .unwrap_err();
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

#[test]
fn weighted_statistics_of_partitions_merge() {
    let gpu = gpu();
    let (n, d, k) = (2000, 5, 4);
    let (x, w, rep) = weighted_blobs(n, d, k, 6);
    let c: Vec<f32> = x[..k * d].to_vec();
    let whole = KMeans::pass_stats_weighted(&gpu, &Matrix::new(&x, d).unwrap(), &c, &w).unwrap();
    let mut merged = wgpu_unsupervised::KMeansStats::empty(&c, d).unwrap();
    for (lo, hi) in [(0, 700), (700, n)] {
        let part = Matrix::new(&x[lo * d..hi * d], d).unwrap();
        merged
            .merge(&KMeans::pass_stats_weighted(&gpu, &part, &c, &w[lo..hi]).unwrap())
            .unwrap();
    }
    let repeated = KMeans::pass_stats(&gpu, &Matrix::new(&rep, d).unwrap(), &c).unwrap();
    for s in [&whole, &merged] {
        assert!(max_rel_err(&s.weights, &repeated.weights, 1.0) < 1e-6);
        assert!(max_rel_err(&s.next_centroids(), &repeated.next_centroids(), 1.0) < 1e-5);
        assert!((s.inertia() - repeated.inertia()).abs() / repeated.inertia() < 1e-5);
    }
}

/// scikit-learn's `test_unit_weights_vs_no_weights` (KMeans, MiniBatchKMeans): weights that
/// are all 1 give the same model as no weights, labels numbered alike. (Equal weights draw
/// the rows and the random numbers no weights do; every sum is the same with w = 1.)
#[test]
fn unit_weights_give_the_model_of_no_weights() {
    let gpu = gpu();
    for (n, d, k, seed) in [(500, 5, 4, 42u64), (333, 3, 7, 3)] {
        let (x, _, _) = datasets::make_blobs(n, d, k, 1.5, (-10.0, 10.0), seed).unwrap();
        let m = Matrix::new(&x, d).unwrap();
        let ones = vec![1.0f32; n];
        for init in [
            KMeansInit::KMeansPlusPlus,
            KMeansInit::Random,
            KMeansInit::PARALLEL,
        ] {
            let params = KMeans::new(k).init(init.clone()).n_init(2).seed(seed);
            let plain = params.fit(&gpu, &m).unwrap();
            let unit = params.fit_weighted(&gpu, &m, &ones).unwrap();
            assert_eq!(unit.labels(), plain.labels(), "{init} n {n}");
            assert_eq!(unit.centroids(), plain.centroids(), "{init} n {n}");
            assert_eq!(unit.inertia(), plain.inertia(), "{init} n {n}");
        }
        let mini = MiniBatchKMeans::new(k)
            .batch_size(64)
            .seed(seed)
            .max_iter(3);
        let plain = mini.fit(&gpu, &m).unwrap();
        let unit = mini.fit_weighted(&gpu, &m, &ones).unwrap();
        assert_eq!(unit.labels(), plain.labels(), "mini-batch n {n}");
        assert_eq!(unit.centroids(), plain.centroids(), "mini-batch n {n}");
    }
}
