//! Mini-batch K-Means on the GPU against the f64 reference, against full Lloyd, and fed
//! batch by batch.

use crate::common::{gpu, max_rel_err, random_matrix, to_f64};
use wgpu_unsupervised::reference::kmeans::minibatch as refmb;
use wgpu_unsupervised::{datasets, Error, KMeans, KMeansInit, Matrix, MiniBatchKMeans};

fn blobs(n: usize, d: usize, k: usize, std: f32, seed: u64) -> Vec<f32> {
    datasets::make_blobs(n, d, k, std, (-10.0, 10.0), seed)
        .unwrap()
        .0
}

#[test]
fn mini_batch_steps_match_the_reference_draw_for_draw() {
    for &(n, d, k, batch, seed) in &[(5000, 4, 5, 256, 1u64), (3000, 7, 8, 100, 2)] {
        let gpu = gpu();
        let x = blobs(n, d, k, 1.0, seed);
        for init in [
            KMeansInit::Random,
            // One centroid far from everything: it gets no rows and must be reassigned.
            KMeansInit::Centroids({
                let mut c = to_f64(&x[..k * d]);
                c[..d].iter_mut().for_each(|v| *v = 1e3);
                c
            }),
        ] {
            let params = MiniBatchKMeans::new(k)
                .batch_size(batch)
                .max_iter(2)
                .max_no_improvement(None)
                .init(init.clone())
                .n_init(2)
                .seed(seed);
            let model = params.fit(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
            let r = refmb::fit(&to_f64(&x), d, &params).unwrap();
            assert_eq!(model.n_iter(), r.n_steps, "{init:?}");
            assert_eq!(model.n_iter(), 2 * n / batch);
            let err = max_rel_err(&to_f64(model.centroids()), &r.centroids, 1.0);
            assert!(err < 1e-4, "n={n} {init}: centroids differ by {err}");
            assert!((model.inertia() - r.inertia).abs() / r.inertia < 1e-5);
            let same = model
                .labels()
                .iter()
                .zip(&r.labels)
                .filter(|(a, b)| a == b)
                .count();
            assert!(same * 1000 >= n * 999, "{} labels differ", n - same);
            // Every centroid ended up near data (the far one was reassigned).
            assert!(model.centroids().iter().all(|v| v.abs() < 100.0), "{init}");
        }
    }
}

#[test]
fn mini_batch_reaches_lloyds_inertia_and_stops_early() {
    for seed in [3u64, 4] {
        let gpu = gpu();
        let (n, d, k) = (20_000, 8, 6);
        let x = blobs(n, d, k, 2.0, seed);
        let m = Matrix::new(&x, d).unwrap();
        let lloyd = KMeans::new(k).seed(seed).fit(&gpu, &m).unwrap();
        let params = MiniBatchKMeans::new(k).batch_size(512).seed(seed);
        let mb = params.fit(&gpu, &m).unwrap();
        let gap = mb.inertia() / lloyd.inertia() - 1.0;
        assert!(
            gap < 0.03,
            "seed {seed}: mini-batch inertia {gap:.4} above Lloyd's"
        );
        // max_no_improvement (10) ends the fit well before 100 epochs of steps.
        assert!(
            mb.converged() && mb.n_iter() < 100 * n / 512,
            "{} steps",
            mb.n_iter()
        );
        assert_eq!(params.fit(&gpu, &m).unwrap(), mb, "same seed, same model");
    }
}

#[test]
fn partial_fit_learns_batch_by_batch() {
    let gpu = gpu();
    let (n, d, k) = (12_000, 5, 4);
    let x = blobs(n, d, k, 1.5, 5);
    let m = Matrix::new(&x, d).unwrap();
    let mut fit = MiniBatchKMeans::new(k).seed(5).partial();
    assert!(matches!(fit.model(&gpu, &m), Err(Error::EmptyData { .. })));
    // Rows of make_blobs cycle through the clusters, so every batch sees all of them.
    for epoch in 0..2 {
        for part in x.chunks(1000 * d) {
            fit.partial_fit(&gpu, &Matrix::new(part, d).unwrap())
                .unwrap();
        }
        assert_eq!(fit.n_steps(), (epoch + 1) * n / 1000);
    }
    let counts: f64 = fit.counts().unwrap().iter().sum();
    assert!(counts >= n as f64, "{counts}");
    let model = fit.model(&gpu, &m).unwrap();
    let lloyd = KMeans::new(k).seed(5).fit(&gpu, &m).unwrap();
    assert!(
        model.inertia() / lloyd.inertia() < 1.03,
        "{} vs {}",
        model.inertia(),
        lloyd.inertia()
    );
    let wrong = vec![0.5f32; 10 * (d + 1)];
    assert!(matches!(
        fit.partial_fit(&gpu, &Matrix::new(&wrong, d + 1).unwrap()),
        Err(Error::FeatureMismatch { .. })
    ));
    assert!(matches!(
        fit.model(&gpu, &Matrix::new(&wrong, d + 1).unwrap()),
        Err(Error::FeatureMismatch { .. })
    ));
}

#[test]
fn bad_mini_batch_parameters_give_errors() {
    let gpu = gpu();
    let x = blobs(100, 2, 2, 1.0, 6);
    let m = Matrix::new(&x, 2).unwrap();
    for params in [
        MiniBatchKMeans::new(0),
        MiniBatchKMeans::new(101),
        MiniBatchKMeans::new(2).batch_size(0),
        MiniBatchKMeans::new(2).max_iter(0),
        MiniBatchKMeans::new(2).max_no_improvement(Some(0)),
        MiniBatchKMeans::new(2).reassignment_ratio(1.5),
        MiniBatchKMeans::new(2).init_size(Some(0)),
        MiniBatchKMeans::new(2).init(KMeansInit::Centroids(vec![0.0; 3])),
    ] {
        assert!(params.fit(&gpu, &m).is_err(), "{params:?}");
    }
    // A batch larger than the data is capped at the rows (scikit-learn's rule)...
    let huge = MiniBatchKMeans::new(2).batch_size(usize::MAX / 16);
    assert!(huge.fit(&gpu, &m).is_ok());
    // ... and a batch larger than one binding is a clear error before anything is allocated.
    let small = crate::common::gpu();
    small.set_max_chunk_bytes(64);
    let e = MiniBatchKMeans::new(2)
        .batch_size(50)
        .fit(&small, &m)
        .unwrap_err();
    assert!(matches!(e, Error::DeviceLimit { .. }), "{e}");
}

#[test]
fn mini_batch_weights_ignore_weightless_rows_and_unit_weights_change_nothing() {
    for seed in [7u64, 8] {
        let gpu = gpu();
        let (n, d, k) = (8000, 4, 5);
        let mut x = blobs(n, d, k, 0.5, seed);
        let params = MiniBatchKMeans::new(k).batch_size(256).seed(seed);
        let m = Matrix::new(&x, d).unwrap();
        // From given centroids the draws are the same (weighted seeding draws differently).
        let given = params
            .clone()
            .init(KMeansInit::Centroids(to_f64(&x[..k * d])));
        let plain = given.fit(&gpu, &m).unwrap();
        let ones = given.fit_weighted(&gpu, &m, &vec![1.0; n]).unwrap();
        let err = max_rel_err(&to_f64(ones.centroids()), &to_f64(plain.centroids()), 1.0);
        assert!(
            err < 1e-5,
            "seed {seed}: unit weights moved the centroids by {err}"
        );
        assert!((ones.inertia() - plain.inertia()).abs() / plain.inertia() < 1e-5);
        // Every 8th row far away with weight 0: no centroid may follow it.
        let mut w = vec![1.0f32; n];
        for i in (0..n).step_by(8) {
            x[i * d + 1] = -1e4;
            w[i] = 0.0;
        }
        let m = Matrix::new(&x, d).unwrap();
        let model = params.fit_weighted(&gpu, &m, &w).unwrap();
        assert!(
            model.centroids().iter().all(|v| v.abs() < 100.0),
            "seed {seed}"
        );
        let mut fit = params.partial();
        for (rows, ws) in x.chunks(1000 * d).zip(w.chunks(1000)) {
            fit.partial_fit_weighted(&gpu, &Matrix::new(rows, d).unwrap(), ws)
                .unwrap();
        }
        let model = fit.model_weighted(&gpu, &m, &w).unwrap();
        assert!(
            model.centroids().iter().all(|v| v.abs() < 100.0),
            "seed {seed}"
        );
        assert!(fit
            .partial_fit_weighted(&gpu, &Matrix::new(&x[..10 * d], d).unwrap(), &w[..9])
            .is_err());
    }
}

/// scikit-learn's `test_score_max_iter` (MiniBatchKMeans): with 100 rows the default batch of
/// 1024 is 100 rows, so 10 epochs are 10 steps where 1 epoch is one, and score better.
#[test]
fn the_batch_is_capped_at_the_rows_so_epochs_count() {
    let gpu = gpu();
    for seed in [0u64, 42] {
        let x = random_matrix(100, 10, seed, -1.0, 1.0);
        let m = Matrix::new(&x, 10).unwrap();
        let fit = |epochs| {
            MiniBatchKMeans::new(8)
                .seed(seed)
                .max_iter(epochs)
                .max_no_improvement(None)
                .fit(&gpu, &m)
                .unwrap()
        };
        let (one, ten) = (fit(1), fit(10));
        assert_eq!(one.n_iter(), 1, "seed {seed}");
        assert_eq!(ten.n_iter(), 10, "seed {seed}");
        let (s1, s10) = (one.score(&gpu, &m).unwrap(), ten.score(&gpu, &m).unwrap());
        assert!(s10 > s1, "seed {seed}: {s10} vs {s1}");
        // The resolved sizes: the batch capped at N, the sample 3·batch capped at N.
        let r = MiniBatchKMeans::new(8).resolved_for(100);
        assert_eq!((r.batch_size, r.init_size), (100, Some(100)));
        let r = MiniBatchKMeans::new(50).batch_size(10).resolved_for(1000);
        assert_eq!(
            (r.batch_size, r.init_size),
            (10, Some(150)),
            "3·K when 3·batch < K"
        );
    }
}
