//! K-Means on the GPU held against the f64 CPU reference (`reference::kmeans`).

use crate::common::{gpu, max_rel_err, random_matrix, to_f64};
use wgpu_unsupervised::reference::kmeans as refk;
use wgpu_unsupervised::reference::metrics::adjusted_rand_index;
use wgpu_unsupervised::{
    datasets, GpuMatrix, KMeans, KMeansInit, KMeansModel, Matrix, ProfileClock,
};

/// Checks GPU labels against the reference: every disagreement must be a near-tie (the two
/// centroids' reference distances within `rel` of each other), and there must be few.
fn check_labels(x: &[f64], d: usize, centroids: &[f64], gpu_labels: &[u32], rel: f64) {
    let (ref_labels, ref_d) = refk::assign(x, d, centroids);
    let mut flips = 0;
    for (i, (&g, &r)) in gpu_labels.iter().zip(&ref_labels).enumerate() {
        if g != r {
            flips += 1;
            let row = &x[i * d..(i + 1) * d];
            let c = &centroids[g as usize * d..(g as usize + 1) * d];
            let dg: f64 = row.iter().zip(c).map(|(a, b)| (a - b) * (a - b)).sum();
            assert!(
                (dg - ref_d[i]).abs() <= rel * ref_d[i].max(1e-12),
                "row {i}: GPU label {g} (d² {dg}) vs reference {r} (d² {}) is not a near-tie",
                ref_d[i]
            );
        }
    }
    assert!(
        flips * 1000 <= gpu_labels.len().max(1000),
        "{flips} near-tie flips in {} rows (more than 0.1%)",
        gpu_labels.len()
    );
}

#[test]
fn assign_nearest_centroid_and_pairwise_distances_match_reference() {
    let gpu = gpu();
    // N never a multiple of the workgroup (64) or the centroid tile (16 x 32).
    for &(n, d, k, seed) in &[
        (1001, 1, 1, 1u64),
        (1001, 1, 2, 2),
        (777, 3, 2, 3),
        (777, 3, 300, 4),
        (333, 257, 2, 5),
        (333, 257, 300, 6),
        (130, 33, 17, 7),
    ] {
        let x = random_matrix(n, d, seed, -3.0, 5.0);
        let c = random_matrix(k, d, seed + 100, -3.0, 5.0);
        let model = KMeansModel::from_centroids(c.clone(), d).unwrap();
        let m = Matrix::new(&x, d).unwrap();
        let labels = model.predict(&gpu, &m).unwrap();
        let (x64, c64) = (to_f64(&x), to_f64(&c));
        check_labels(&x64, d, &c64, &labels, 1e-5);

        // score = −Σ min d², transform = all distances.
        let (ref_labels, ref_d) = refk::assign(&x64, d, &c64);
        let score = model.score(&gpu, &m).unwrap();
        let ref_score: f64 = -ref_d.iter().sum::<f64>();
        assert!(
            ((score - ref_score) / ref_score).abs() < 1e-5,
            "n={n} d={d} k={k}: score {score} vs {ref_score}"
        );
        let t = model.transform(&gpu, &m).unwrap();
        assert_eq!(t.len(), n * k);
        let mut want = Vec::with_capacity(n * k);
        for i in 0..n {
            for j in 0..k {
                let s: f64 = (0..d)
                    .map(|f| (x64[i * d + f] - c64[j * d + f]).powi(2))
                    .sum();
                want.push(s.sqrt());
            }
        }
        let err = max_rel_err(&to_f64(&t), &want, 1.0);
        assert!(err < 1e-5, "n={n} d={d} k={k}: transform error {err}");
        assert_eq!(ref_labels.len(), labels.len());
    }
}

#[test]
fn accumulate_cluster_partials_one_update_step_matches_reference_far_from_origin() {
    let gpu = gpu();
    // K x D = 35 accumulates in workgroup memory, 9 x 300 = 2700 in the storage buffer.
    for (seed, d, k) in [(11u64, 7, 5), (12, 7, 5), (13, 300, 9)] {
        let n = 2000;
        // Offset data: sums of raw values in f32 would lose digits; deviations do not.
        let x: Vec<f32> = random_matrix(n, d, seed, -1.0, 1.0)
            .into_iter()
            .map(|v| v + 1e4)
            .collect();
        let init: Vec<f64> = to_f64(&x[..k * d]);
        let params = KMeans::new(k)
            .init(KMeansInit::Centroids(init.clone()))
            .max_iter(1)
            .tol(0.0);
        let model = params.fit(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let x64 = to_f64(&x);
        let (labels, _) = refk::assign(&x64, d, &init);
        let (means, counts) = refk::update_centroids(&x64, d, &labels, k, &init);
        assert!(counts.iter().all(|&c| c > 0));
        // Compare the moves (μ_new − μ_old), relative to their size.
        let moved_gpu: Vec<f64> = model
            .centroids()
            .iter()
            .zip(&init)
            .map(|(&a, b)| a as f64 - b)
            .collect();
        let moved_ref: Vec<f64> = means.iter().zip(&init).map(|(a, b)| a - b).collect();
        let scale = moved_ref.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = moved_gpu
            .iter()
            .zip(&moved_ref)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
            / scale;
        // f32 centroids near 1e4 are quantised to ~1e-3; the moves are ~0.5.
        assert!(err < 5e-3, "seed {seed}: update error {err}");
        assert_eq!(model.inertia_history().len(), 1);
    }
}

#[test]
fn full_lloyd_from_same_init_matches_reference() {
    let gpu = gpu();
    for seed in [21u64, 22, 23] {
        let (x, _, _) = datasets::make_blobs(3001, 6, 8, 1.5, (-10.0, 10.0), seed).unwrap();
        let d = 6;
        let k = 8;
        let x64 = to_f64(&x);
        let init: Vec<f64> = x64[..k * d].to_vec();
        let params = KMeans::new(k)
            .init(KMeansInit::Centroids(init.clone()))
            .max_iter(100)
            .tol(0.0);
        let model = params.fit(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let r = refk::fit(&x64, d, &params).unwrap();
        agrees_with_reference(&model, &r, seed);
        assert!(model.converged() && r.converged);
    }
}

#[test]
fn inertia_never_increases() {
    let gpu = gpu();
    for seed in [31u64, 32] {
        let x = random_matrix(4000, 5, seed, 0.0, 1.0);
        let model = KMeans::new(20)
            .init(KMeansInit::Random)
            .seed(seed)
            .tol(0.0)
            .max_iter(60)
            .fit(&gpu, &Matrix::new(&x, 5).unwrap())
            .unwrap();
        let h = model.inertia_history();
        assert!(h.len() > 3, "too few iterations to test: {}", h.len());
        for w in h.windows(2) {
            assert!(w[1] <= w[0] * (1.0 + 1e-6), "inertia rose: {w:?}");
        }
        assert!(model.inertia() <= h[h.len() - 1] * (1.0 + 1e-6));
    }
}

#[test]
fn kmeans_pp_and_random_init_recover_blobs() {
    let gpu = gpu();
    for seed in [41u64, 42, 43] {
        let (x, truth, _) = datasets::make_blobs(5000, 4, 6, 0.5, (-20.0, 20.0), seed).unwrap();
        let m = Matrix::new(&x, 4).unwrap();
        let pp = KMeans::new(6).seed(seed).fit(&gpu, &m).unwrap();
        let ari = adjusted_rand_index(pp.labels(), &truth).unwrap();
        assert!(ari > 0.99, "k-means++ seed {seed}: ARI {ari}");
        let rnd = KMeans::new(6)
            .init(KMeansInit::Random)
            .n_init(8)
            .seed(seed)
            .fit(&gpu, &m)
            .unwrap();
        let ari = adjusted_rand_index(rnd.labels(), &truth).unwrap();
        assert!(ari > 0.99, "random seed {seed}: ARI {ari}");
    }
}

#[cfg(feature = "datasets")]
#[test]
fn iris_reaches_the_known_optimum() {
    let gpu = gpu();
    let (x, species) = datasets::iris();
    let model = KMeans::new(3)
        .n_init(10)
        .seed(0)
        .fit(&gpu, &Matrix::new(&x, 4).unwrap())
        .unwrap();
    // scikit-learn: 78.85144142614601 (the global optimum for k = 3).
    assert!(
        (model.inertia() - 78.851_441).abs() < 1e-3,
        "inertia {}",
        model.inertia()
    );
    let ari = adjusted_rand_index(model.labels(), &species).unwrap();
    assert!((ari - 0.7302).abs() < 1e-3, "ARI {ari}");
}

#[test]
fn chunked_path_equals_one_chunk() {
    let one = gpu();
    let many = gpu();
    let (n, d) = (3000, 5);
    let (x, _, _) = datasets::make_blobs(n, d, 7, 1.0, (-10.0, 10.0), 51).unwrap();
    // 211 rows per chunk: 15 chunks, boundaries off every block size.
    many.set_max_chunk_bytes(211 * d as u64 * 4);
    let m = Matrix::new(&x, d).unwrap();
    let g1 = GpuMatrix::upload(&one, &m).unwrap();
    let g2 = GpuMatrix::upload(&many, &m).unwrap();
    assert_eq!((g1.n_chunks(), g2.n_chunks()), (1, 15));
    let params = KMeans::new(7).seed(5).n_init(2);
    let a = params.fit(&one, &g1).unwrap();
    let b = params.fit(&many, &g2).unwrap();
    assert_eq!(a.labels(), b.labels());
    assert!(((a.inertia() - b.inertia()) / a.inertia()).abs() < 1e-6);
    let err = max_rel_err(&to_f64(b.centroids()), &to_f64(a.centroids()), 1.0);
    assert!(err < 1e-5, "centroids differ by {err}");
    // Transform output is chunked independently of the input.
    let t1 = a.transform(&one, &g1).unwrap();
    let t2 = a.transform(&many, &g2).unwrap();
    assert!(max_rel_err(&to_f64(&t2), &to_f64(&t1), 1.0) < 1e-6);
}

#[test]
fn same_seed_gives_bitwise_same_model() {
    let gpu = gpu();
    let x = random_matrix(3000, 8, 61, -1.0, 1.0);
    let m = Matrix::new(&x, 8).unwrap();
    let params = KMeans::new(12).n_init(3).seed(99);
    let a = params.fit(&gpu, &m).unwrap();
    let b = params.fit(&gpu, &m).unwrap();
    assert_eq!(a, b);
    let c = params.clone().seed(100).fit(&gpu, &m).unwrap();
    assert_ne!(
        a.centroids(),
        c.centroids(),
        "a different seed should differ"
    );
}

#[test]
fn empty_clusters_are_repaired_without_nan() {
    let gpu = gpu();
    let d = 2;
    let x = random_matrix(500, d, 71, 0.0, 1.0);
    // Two centroids far away: nothing is assigned to them in the first step.
    let mut init = to_f64(&x[..4 * d]);
    init.extend([1e3, 1e3, -1e3, -1e3]);
    let model = KMeans::new(6)
        .init(KMeansInit::Centroids(init))
        .max_iter(50)
        .fit(&gpu, &Matrix::new(&x, d).unwrap())
        .unwrap();
    assert!(model.centroids().iter().all(|v| v.is_finite()));
    let mut counts = [0usize; 6];
    for &l in model.labels() {
        counts[l as usize] += 1;
    }
    assert!(counts.iter().all(|&c| c > 0), "counts {counts:?}");
    assert!(model.centroids().iter().all(|v| v.abs() < 2.0));
}

/// Centroids far from the data leave clusters empty; the repair moves them where the
/// reference's does, in one chunk and in several: on the device while the Lloyd loop runs
/// ahead (four at a step), and where more are empty on the host, from rows selected on the
/// device (not read back).
#[test]
fn empty_clusters_far_from_the_data_are_repaired_as_the_reference_does() {
    let gpu = gpu();
    let d = 4;
    for (seed, chunk_rows, far) in [(91u64, 0, 4), (92, 700, 4), (93, 0, 6), (94, 1100, 6)] {
        let k = 5 + far;
        let (x, _, _) = datasets::make_blobs(2500, d, 6, 1.0, (-8.0, 8.0), seed).unwrap();
        let x64 = to_f64(&x);
        // Five data rows and `far` centroids far away in different directions.
        let mut init: Vec<f64> = x64[..5 * d].to_vec();
        for f in [1e3, -1e3, 2e3, -3e3, 4e3, -5e3][..far].iter() {
            init.extend((0..d).map(|j| if j % 2 == 0 { *f } else { -f / 2.0 }));
        }
        let params = KMeans::new(k)
            .init(KMeansInit::Centroids(init))
            .max_iter(100)
            .tol(0.0);
        if chunk_rows > 0 {
            gpu.set_max_chunk_bytes((chunk_rows * d * 4) as u64);
        }
        let (model, profile) = gpu
            .profile(ProfileClock::Auto, || {
                params.fit(&gpu, &Matrix::new(&x, d).unwrap())
            })
            .unwrap();
        gpu.set_max_chunk_bytes(u64::MAX);
        let ran = |kernel: &str| profile.dispatches.iter().any(|r| r.kernel == kernel);
        assert!(ran("repair_apply"), "seed {seed}: no repair on the device");
        // The host's repair (and its selection on the device) only past four.
        assert_eq!(
            ran("farthest_compact"),
            far > 4,
            "seed {seed}: host selection"
        );
        let r = refk::fit(&x64, d, &params).unwrap();
        agrees_with_reference(&model, &r, seed);
        let mut counts = vec![0usize; k];
        model.labels().iter().for_each(|&l| counts[l as usize] += 1);
        assert!(counts.iter().all(|&c| c > 0), "seed {seed}: {counts:?}");
    }
}

#[cfg(feature = "serde")]
#[test]
fn model_is_send_sync_and_serde_round_trips() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<KMeansModel>();
    assert_send_sync::<wgpu_unsupervised::Gpu>();
    assert_send_sync::<GpuMatrix>();
    let gpu = gpu();
    let x = random_matrix(300, 3, 81, 0.0, 1.0);
    let model = KMeans::new(4)
        .fit(&gpu, &Matrix::new(&x, 3).unwrap())
        .unwrap();
    let json = serde_json::to_string(&model).unwrap();
    let back: KMeansModel = serde_json::from_str(&json).unwrap();
    // Everything but the training labels comes back, bit for bit.
    assert!(back.labels().is_empty() && model.labels().len() == 300);
    assert_eq!(back.centroids(), model.centroids());
    assert_eq!(back.inertia().to_bits(), model.inertia().to_bits());
    assert_eq!(back.inertia_history(), model.inertia_history());
    assert_eq!(back.params(), model.params());
    assert_eq!(
        (back.n_iter(), back.converged()),
        (model.n_iter(), model.converged())
    );
    let x = Matrix::new(&x, 3).unwrap();
    assert_eq!(back.predict(&gpu, &x).unwrap(), model.labels());
}

#[cfg(feature = "io")]
#[test]
fn fitted_models_round_trip_through_model_files_bit_for_bit() {
    use wgpu_unsupervised::model_file::Model;
    let gpu = gpu();
    let dir = tempfile::tempdir().unwrap();
    let x = random_matrix(500, 6, 12, -2.0, 2.0);
    let x = Matrix::new(&x, 6).unwrap();
    let model = KMeans::new(7).n_init(2).fit(&gpu, &x).unwrap();
    let path = dir.path().join("kmeans.json");
    model.save(&path).unwrap();
    let Model::KMeans(back) = Model::load(&path).unwrap() else {
        panic!("a K-Means file must load as K-Means");
    };
    assert!(back.labels().is_empty());
    assert_eq!(back.centroids(), model.centroids());
    assert_eq!(back.inertia().to_bits(), model.inertia().to_bits());
    assert_eq!(back.predict(&gpu, &x).unwrap(), model.labels());
    assert_eq!(
        back.transform(&gpu, &x).unwrap(),
        model.transform(&gpu, &x).unwrap()
    );
}

/// The GPU fit against the reference fit from the same start: the same partition (ARI ≥
/// 0.999) and the inertia within 1e-4.
fn agrees_with_reference(model: &KMeansModel, r: &refk::ReferenceKMeans, seed: u64) {
    let ari = adjusted_rand_index(model.labels(), &r.labels).unwrap();
    assert!(ari >= 0.999, "seed {seed}: ARI {ari}");
    let rel = ((model.inertia() - r.inertia) / r.inertia).abs();
    let (got, want) = (model.inertia(), r.inertia);
    assert!(rel < 1e-4, "seed {seed}: inertia {got} vs {want}");
}
