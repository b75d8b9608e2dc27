//! K-Means over row sources that are streamed piece by piece, and its mergeable statistics,
//! held against the resident fit and the f64 reference.

use crate::common::stream::{ragged, small_pieces, whole_data};

use crate::common::{gpu, max_rel_err, random_matrix, to_f64};
use wgpu_unsupervised::reference::kmeans as refk;
use wgpu_unsupervised::{
    datasets, Error, Gpu, KMeans, KMeansInit, KMeansStats, Matrix, RowChunks, RowSource,
};

/// Blobs with some spread, so Lloyd takes several iterations.
fn blobs(n: usize, d: usize, k: usize, seed: u64) -> Vec<f32> {
    datasets::make_blobs(n, d, k, 2.5, (-6.0, 6.0), seed)
        .unwrap()
        .0
}

#[test]
fn streamed_lloyd_equals_the_resident_fit_and_the_reference() {
    for &(n, d, k, piece, seed) in &[
        (3000, 5, 4, 700, 1u64),
        (2500, 17, 7, 333, 2),
        (1200, 2, 3, 1199, 3),
    ] {
        let gpu = gpu();
        let x = blobs(n, d, k, seed);
        let m = Matrix::new(&x, d).unwrap();
        let init = KMeansInit::Centroids(to_f64(&x[..k * d]).iter().map(|v| v + 0.5).collect());
        let params = KMeans::new(k).init(init).max_iter(50).tol(0.0);
        let resident = params.fit(&gpu, &m).unwrap();

        small_pieces(&gpu, piece, n, d);
        let chunks = ragged(&x, d, 401, seed);
        let source = RowChunks::new(n, d, || chunks.iter());
        let streamed = params.fit_source(&gpu, &source).unwrap();
        let from_matrix = params.fit_source(&gpu, &m).unwrap();
        assert_eq!(
            streamed, from_matrix,
            "n={n}: chunks and matrix stream alike"
        );

        assert_eq!(streamed.n_iter(), resident.n_iter(), "n={n} d={d} k={k}");
        let err = max_rel_err(
            &to_f64(streamed.centroids()),
            &to_f64(resident.centroids()),
            1.0,
        );
        assert!(err < 1e-5, "n={n} d={d} k={k}: centroids differ by {err}");
        let rel = (streamed.inertia() - resident.inertia()).abs() / resident.inertia();
        assert!(
            rel < 1e-5,
            "inertia {} vs {}",
            streamed.inertia(),
            resident.inertia()
        );
        let same = streamed
            .labels()
            .iter()
            .zip(resident.labels())
            .filter(|(a, b)| a == b)
            .count();
        assert!(same * 1000 >= n * 999, "{} labels differ", n - same);

        // Against the f64 reference run from the same centroids.
        let r = refk::fit(&to_f64(&x), d, &params).unwrap();
        let err = max_rel_err(&to_f64(streamed.centroids()), &r.centroids, 1.0);
        assert!(err < 1e-4, "n={n}: centroids vs reference {err}");
        assert!((streamed.inertia() - r.inertia).abs() / r.inertia < 1e-5);
    }
}

#[test]
fn random_init_streams_the_same_rows_as_a_resident_fit() {
    for seed in [4u64, 5] {
        let gpu = gpu();
        let (n, d, k) = (2000, 3, 5);
        let x = blobs(n, d, k, seed);
        let m = Matrix::new(&x, d).unwrap();
        let params = KMeans::new(k)
            .init(KMeansInit::Random)
            .n_init(3)
            .seed(seed)
            .tol(0.0);
        let resident = params.fit(&gpu, &m).unwrap();
        small_pieces(&gpu, 450, n, d);
        let streamed = params.fit_source(&gpu, &m).unwrap();
        let again = params.fit_source(&gpu, &m).unwrap();
        assert_eq!(streamed, again, "same seed, same model");
        let err = max_rel_err(
            &to_f64(streamed.centroids()),
            &to_f64(resident.centroids()),
            1.0,
        );
        assert!(err < 1e-5, "seed {seed}: {err}");
    }
}

#[test]
fn streamed_kmeans_plus_plus_seeds_from_a_sample_and_finds_the_blobs() {
    for seed in [6u64, 7] {
        let gpu = gpu();
        let (n, d, k) = (30_000, 4, 6);
        let (x, truth, _) = datasets::make_blobs(n, d, k, 0.5, (-20.0, 20.0), seed).unwrap();
        small_pieces(&gpu, 4096, n, d);
        let model = KMeans::new(k)
            .n_init(2)
            .seed(seed)
            .fit_source(&gpu, &Matrix::new(&x, d).unwrap())
            .unwrap();
        let ari =
            wgpu_unsupervised::reference::metrics::adjusted_rand_index(model.labels(), &truth)
                .unwrap();
        assert!(ari > 0.99, "seed {seed}: ARI {ari}");
    }
}

#[test]
fn a_budget_too_small_for_the_data_streams_it_and_one_too_small_for_a_row_fails() {
    let gpu = gpu();
    let (n, d, k) = (20_000, 8, 4);
    let x = random_matrix(n, d, 8, -1.0, 1.0);
    let m = Matrix::new(&x, d).unwrap();
    let init = KMeansInit::Centroids(to_f64(&x[..k * d]));
    let params = KMeans::new(k).init(init).max_iter(8).tol(0.0);
    let resident = params.fit(&gpu, &m).unwrap();
    // The data take 640 KB: under a 400 KB budget `fit` streams them.
    gpu.set_memory_budget(400 << 10);
    let streamed = params.fit(&gpu, &m).unwrap();
    let err = max_rel_err(
        &to_f64(streamed.centroids()),
        &to_f64(resident.centroids()),
        1.0,
    );
    assert!(err < 1e-5, "{err}");
    gpu.set_memory_budget(256);
    let e = params.fit(&gpu, &m).unwrap_err();
    assert!(matches!(e, Error::OutOfDeviceMemory { .. }), "{e}");
}

#[test]
fn statistics_of_partitions_merge_into_those_of_the_whole() {
    for &(n, d, k, seed) in &[(5000, 6, 5, 9u64), (777, 1, 3, 10), (1500, 33, 9, 11)] {
        let gpu = gpu();
        let x = random_matrix(n, d, seed, -4.0, 4.0);
        let c = random_matrix(k, d, seed + 1, -4.0, 4.0);
        let whole = KMeans::pass_stats(&gpu, &Matrix::new(&x, d).unwrap(), &c).unwrap();
        // Three partitions of uneven size, as three machines would hold them.
        let cuts = [0, n / 7, n / 2, n];
        let mut merged = KMeansStats::empty(&c, d).unwrap();
        for w in cuts.windows(2) {
            let part = Matrix::new(&x[w[0] * d..w[1] * d], d).unwrap();
            let s = KMeans::pass_stats(&gpu, &part, &c).unwrap();
            // Statistics travel as JSON between machines.
            let s: KMeansStats = crate::common::via_json(s);
            merged.merge(&s).unwrap();
        }
        assert_eq!(merged.counts, whole.counts);
        assert_eq!(merged.n_rows(), n as u64);

        // Both against sums in f64 from the reference assignment.
        let (x64, c64) = (to_f64(&x), to_f64(&c));
        let (labels, dist) = refk::assign(&x64, d, &c64);
        let mut dev = vec![0.0; k * d];
        let mut counts = vec![0u64; k];
        for (i, &l) in labels.iter().enumerate() {
            counts[l as usize] += 1;
            for j in 0..d {
                dev[l as usize * d + j] += x64[i * d + j] - c64[l as usize * d + j];
            }
        }
        assert_eq!(whole.counts, counts, "n={n}: counts");
        let scale = x64.iter().fold(0.0f64, |a, v| a.max(v.abs())) * n as f64;
        for s in [&whole, &merged] {
            let err = max_rel_err(&s.deviation_sums, &dev, scale);
            assert!(err < 1e-6, "n={n} d={d}: deviation sums {err}");
            let want: f64 = dist.iter().sum();
            assert!((s.inertia() - want).abs() / want < 1e-5);
        }
        let err = max_rel_err(&merged.next_centroids(), &whole.next_centroids(), 1.0);
        assert!(err < 1e-5, "{err}");
    }
}

#[test]
fn sources_that_lie_or_hold_nan_give_errors() {
    let gpu = gpu();
    let x = random_matrix(1000, 3, 12, 0.0, 1.0);
    let params = KMeans::new(3).max_iter(3);
    small_pieces(&gpu, 100, 1000, 3);
    let short = RowChunks::new(1200, 3, || [&x[..]]);
    assert!(matches!(
        params.fit_source(&gpu, &short),
        Err(Error::Source { .. })
    ));
    let mut bad = x.clone();
    bad[3 * 640 + 2] = f32::INFINITY;
    let nan = RowChunks::new(1000, 3, || ragged(&bad, 3, 97, 3));
    let e = params.fit_source(&gpu, &nan).unwrap_err();
    assert!(
        matches!(
            e,
            Error::NonFinite {
                row: 640,
                col: 2,
                ..
            }
        ),
        "{e}"
    );
    let empty = RowChunks::new(0, 3, || [&x[..0]]);
    assert!(matches!(
        params.fit_source(&gpu, &empty),
        Err(Error::EmptyData { .. })
    ));
    assert!(matches!(
        KMeans::new(1001).fit_source(&gpu, &Matrix::new(&x, 3).unwrap()),
        Err(Error::TooFewSamples { .. })
    ));
    assert_eq!(short.shape(), (1200, 3));
}

#[test]
fn rows_split_across_two_devices_fit_as_on_one() {
    // Two devices opened on the same adapter stand in for two GPUs.
    let (a, b) = (gpu(), gpu());
    assert!(!Gpu::all().unwrap().is_empty());
    for &(n, d, k, cut, seed) in &[(4000, 5, 6, 1500, 13u64), (2001, 3, 4, 1999, 14)] {
        let x = blobs(n, d, k, seed);
        let params = KMeans::new(k).init(KMeansInit::Random).n_init(2).seed(seed);
        let whole = params.fit(&a, &Matrix::new(&x, d).unwrap()).unwrap();
        let first = Matrix::new(&x[..cut * d], d).unwrap();
        let second = RowChunks::new(n - cut, d, || ragged(&x[cut * d..], d, 300, seed));
        // The second device streams its part in small pieces (when it has more than a few).
        small_pieces(&b, 200, (n - cut).max(400), d);
        let split = params
            .fit_partitions(&[(&a, &first as &dyn RowSource), (&b, &second)])
            .unwrap();
        assert_eq!(split.n_iter(), whole.n_iter(), "n={n}");
        let err = max_rel_err(&to_f64(split.centroids()), &to_f64(whole.centroids()), 1.0);
        assert!(err < 1e-5, "n={n}: centroids differ by {err}");
        assert!((split.inertia() - whole.inertia()).abs() / whole.inertia() < 1e-5);
        assert_eq!(split.labels().len(), n);
        let same = split
            .labels()
            .iter()
            .zip(whole.labels())
            .filter(|(p, q)| p == q)
            .count();
        assert!(same * 1000 >= n * 999, "{} labels differ", n - same);
        whole_data(&b);
    }
    let x = blobs(100, 2, 2, 15);
    let m2 = Matrix::new(&x, 2).unwrap();
    let m1 = Matrix::new(&x, 1).unwrap();
    let params = KMeans::new(2);
    assert!(matches!(
        params.fit_partitions(&[]),
        Err(Error::EmptyData { .. })
    ));
    assert!(matches!(
        params.fit_partitions(&[(&a, &m2 as &dyn RowSource), (&b, &m1)]),
        Err(Error::FeatureMismatch { .. })
    ));
}
