//! Spherical (cosine) K-Means: the GPU fit against the f64 reference, scale invariance,
//! zero rows, and where the metric is refused.

use crate::common::{gpu, max_rel_err, to_f64};
use wgpu_unsupervised::metrics::adjusted_rand_index;
use wgpu_unsupervised::reference::kmeans as refk;
use wgpu_unsupervised::{datasets, Error, KMeans, KMeansInit, Matrix, Metric, RowChunks};

/// Rows pointing along `k` directions (blobs around centres on the sphere's surface, away
/// from the origin) and scaled by a random factor in [0.05, 20]: the directions cluster, the
/// magnitudes do not.
fn directional(n: usize, d: usize, k: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    let (rows, truth, _) = datasets::make_blobs(n, d, k, 0.15, (-1.0, 1.0), seed).unwrap();
    let scales = datasets::uniform(n, 1, seed + 100);
    let mut x = rows;
    for (row, s) in x.chunks_mut(d).zip(scales) {
        let norm = row.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-3);
        let scale = (0.05 + 19.95 * s) / norm;
        row.iter_mut().for_each(|v| *v *= scale);
    }
    (x, truth)
}

fn unit_rows(x: &[f32], d: usize) -> Vec<f64> {
    refk::unit_vectors(&to_f64(x), d, "data").unwrap()
}

#[test]
fn gpu_matches_the_reference_from_the_same_start() {
    let gpu = gpu();
    for (n, d, k, seed) in [
        (400, 3, 4, 1),
        (777, 8, 6, 2),
        (300, 16, 3, 3),
        (1200, 5, 9, 4),
    ] {
        let (x, _) = directional(n, d, k, seed);
        // Start at k rows, deliberately not unit length: the fit normalises them.
        let start: Vec<f64> = to_f64(&x[..k * d]).iter().map(|v| v * 3.0).collect();
        let params = KMeans::new(k)
            .metric(Metric::Cosine)
            .init(KMeansInit::Centroids(start))
            .tol(0.0)
            .max_iter(50);
        let model = params.fit(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let r = refk::fit(&to_f64(&x), d, &params).unwrap();
        assert_eq!(model.labels(), &r.labels[..], "n {n} d {d} k {k}");
        assert_eq!(model.n_iter(), r.n_iter, "n {n} d {d} k {k}");
        let c = to_f64(model.centroids());
        assert!(
            max_rel_err(&c, &r.centroids, 1e-2) < 1e-5,
            "n {n} d {d} k {k}"
        );
        for row in c.chunks(d) {
            let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
            assert!((norm - 1.0).abs() < 1e-6, "a centroid of norm {norm}");
        }
        let rel = (model.inertia() - r.inertia).abs() / r.inertia.max(1e-9);
        assert!(rel < 1e-4, "inertia {} vs {}", model.inertia(), r.inertia);
        // The objective is Σ(1 − cos) of the final labels, computed here independently.
        let u = unit_rows(&x, d);
        let direct: f64 = u
            .chunks(d)
            .zip(model.labels())
            .map(|(row, &l)| {
                let cr = &r.centroids[l as usize * d..(l as usize + 1) * d];
                1.0 - row.iter().zip(cr).map(|(a, b)| a * b).sum::<f64>()
            })
            .sum();
        assert!(
            (direct - r.inertia).abs() < 1e-9 * n as f64,
            "{direct} vs {}",
            r.inertia
        );
    }
}

#[test]
fn cosine_clusters_directions_where_euclidean_follows_the_scale() {
    let gpu = gpu();
    for seed in [5, 6, 7] {
        let (n, d, k) = (600, 4, 3);
        let (x, truth) = directional(n, d, k, seed);
        let m = Matrix::new(&x, d).unwrap();
        let cosine = KMeans::new(k).n_init(4).seed(seed).metric(Metric::Cosine);
        let model = cosine.fit(&gpu, &m).unwrap();
        let ari = adjusted_rand_index(model.labels(), &truth).unwrap();
        assert!(ari > 0.95, "seed {seed}: cosine ARI {ari}");
        let euclid = KMeans::new(k).n_init(4).seed(seed).fit(&gpu, &m).unwrap();
        let ari_e = adjusted_rand_index(euclid.labels(), &truth).unwrap();
        assert!(
            ari_e < 0.6,
            "seed {seed}: Euclidean ARI {ari_e} should suffer from the scale"
        );
        // Predictions ignore the scale of a row; the score is minus the objective.
        let scaled: Vec<f32> = x.iter().map(|v| v * 7.5).collect();
        let ms = Matrix::new(&scaled, d).unwrap();
        assert_eq!(model.predict(&gpu, &ms).unwrap(), model.labels());
        let score = model.score(&gpu, &m).unwrap();
        assert!(
            (score + model.inertia()).abs() < 1e-4 * model.inertia(),
            "{score}"
        );
        // Same seed, same model.
        assert_eq!(cosine.fit(&gpu, &m).unwrap(), model);
        // Chord distances: d² / 2 = 1 − cos, so the nearest is the label.
        let t = model.transform(&gpu, &m).unwrap();
        for (row, &l) in t.chunks(k).zip(model.labels()) {
            let best = (0..k).min_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
            assert_eq!(best as u32, l);
            assert!(row.iter().all(|&v| (0.0..=2.0 + 1e-6).contains(&v)));
        }
    }
}

#[test]
fn zero_rows_and_unsupported_paths_are_refused() {
    let gpu = gpu();
    let (mut x, _) = directional(100, 3, 2, 9);
    x[41 * 3..42 * 3].fill(0.0);
    let m = Matrix::new(&x, 3).unwrap();
    match KMeans::new(2).metric(Metric::Cosine).fit(&gpu, &m) {
        Err(Error::InvalidParameter { reason, .. }) => {
            assert!(reason.contains("row 41"), "{reason}")
        }
        other => panic!("expected an error naming row 41, got {other:?}"),
    }
    // Euclidean K-Means takes the zero row as it is.
    let model = KMeans::new(2).fit(&gpu, &m).unwrap();
    assert_eq!(model.labels().len(), 100);
    // A zero given centroid has no direction either.
    let bad = KMeans::new(2)
        .metric(Metric::Cosine)
        .init(KMeansInit::Centroids(vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0]));
    let (y, _) = directional(50, 3, 2, 10);
    assert!(matches!(
        bad.fit(&gpu, &Matrix::new(&y, 3).unwrap()),
        Err(Error::InvalidParameter { .. })
    ));
    // Predicting a zero row with a cosine model is an error too.
    let model = KMeans::new(2)
        .metric(Metric::Cosine)
        .fit(&gpu, &Matrix::new(&y, 3).unwrap())
        .unwrap();
    assert!(model.predict(&gpu, &m).is_err());

    // Streamed rows (over the budget) are refused with a clear reason; a source that fits is
    // normalised like a matrix.
    let cosine = KMeans::new(2).metric(Metric::Cosine).seed(3);
    let (y, _) = directional(400, 3, 2, 12);
    let chunks = RowChunks::new(400, 3, || y.chunks(30 * 3));
    let from_source = cosine.fit_source(&gpu, &chunks).unwrap();
    assert_eq!(
        from_source,
        cosine.fit(&gpu, &Matrix::new(&y, 3).unwrap()).unwrap()
    );
    // 4 KiB: the fit's fixed statistics (1192 bytes on lavapipe, 1576 on an H200: they
    // follow the adapter's workgroup counts) and a piece of rows, far from the 400 rows'
    // 12.8 KB with their labels and distances.
    let small = crate::common::gpu();
    small.set_memory_budget(4096);
    match cosine.fit_source(&small, &chunks) {
        Err(Error::InvalidParameter { name: "metric", .. }) => {}
        other => panic!("expected the metric refused when streaming, got {other:?}"),
    }
}

#[cfg(feature = "serde")]
#[test]
fn the_metric_travels_with_the_model_and_old_files_read_as_euclidean() {
    let gpu = gpu();
    let (y, _) = directional(80, 3, 2, 11);
    let model = KMeans::new(2)
        .metric(Metric::Cosine)
        .fit(&gpu, &Matrix::new(&y, 3).unwrap())
        .unwrap();
    let back: wgpu_unsupervised::KMeansModel = crate::common::via_json(model.clone());
    assert_eq!(back.params().metric, Metric::Cosine);
    assert_eq!(back.centroids(), model.centroids());
    let mut json: serde_json::Value = serde_json::to_value(KMeans::new(3)).unwrap();
    json.as_object_mut().unwrap().remove("metric");
    let old: KMeans = serde_json::from_value(json).unwrap();
    assert_eq!(old.metric, Metric::Euclidean);
    assert_eq!("COSINE".parse::<Metric>().unwrap(), Metric::Cosine);
    assert!("manhattan".parse::<Metric>().is_err());
}
