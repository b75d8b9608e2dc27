//! Clustering criteria: the GPU silhouette and the host criteria (Calinski–Harabasz,
//! Davies–Bouldin, inertia, Rand and adjusted Rand indices) against the f64 reference, which
//! implements them separately, and every criterion against hand-computed cases.

use crate::common::{gpu, random_matrix, to_f64};
use wgpu_unsupervised::reference::metrics as refm;
use wgpu_unsupervised::{datasets, metrics, Error, GpuMatrix, Matrix};

/// Labels 0..k in a random order (a random labelling, every cluster non-empty).
fn random_labels(n: usize, k: usize, seed: u64) -> Vec<u32> {
    random_matrix(n, 1, seed, 0.0, 1.0)
        .iter()
        .enumerate()
        .map(|(i, u)| {
            if i < k {
                i as u32
            } else {
                (u * k as f32) as u32 % k as u32
            }
        })
        .collect()
}

#[test]
fn hand_computed_small_case() {
    let gpu = gpu();
    let rows = [0.0f32, 1.0, 10.0, 11.0];
    let labels = [0u32, 0, 1, 1];
    let x = Matrix::new(&rows, 1).unwrap();
    let s = metrics::silhouette(&gpu, &x, &labels, None, 0).unwrap();
    let want = [9.5 / 10.5, 8.5 / 9.5, 8.5 / 9.5, 9.5 / 10.5];
    for (a, b) in s.samples.iter().zip(want) {
        assert!((a - b).abs() < 1e-6, "{:?}", s.samples);
    }
    assert!((s.score - (9.5 / 10.5 + 8.5 / 9.5) / 2.0).abs() < 1e-6);
    assert_eq!(s.clusters, vec![0, 1]);
    assert_eq!(s.rows, vec![0, 1, 2, 3]);
    assert!((metrics::calinski_harabasz(&x, &labels).unwrap() - 200.0).abs() < 1e-9);
    assert!((metrics::davies_bouldin(&x, &labels).unwrap() - 0.1).abs() < 1e-12);
    assert!((metrics::inertia(&x, &labels).unwrap() - 1.0).abs() < 1e-12);
    // Agreement: {0,1}{2,3} against {0}{1,2,3}: TP = 1, FN = 1, FP = 2, TN = 2 of 6 pairs.
    let other = [5u32, 7, 7, 7];
    assert!((metrics::rand_index(&labels, &other).unwrap() - 0.5).abs() < 1e-12);
    // ARI = 2 (TP·TN − FN·FP) / ((TP + FN)(FN + TN) + (TP + FP)(FP + TN)) = 0 / 18.
    assert!(metrics::adjusted_rand_index(&labels, &other).unwrap().abs() < 1e-12);
}

#[test]
fn host_criteria_match_hand_computed_two_dimensional_cases() {
    // Clusters {(0,0), (2,0)}, {(10,0), (10,2)}, {(0,10), (0,14)} (labels 7, 3, 9):
    // centroids (1,0), (10,1), (0,12); overall mean (11/3, 13/3).
    let rows = [
        0.0f32, 0.0, 2.0, 0.0, 10.0, 0.0, 10.0, 2.0, 0.0, 10.0, 0.0, 14.0,
    ];
    let labels = [7u32, 7, 3, 3, 9, 9];
    let x = Matrix::new(&rows, 2).unwrap();
    // W = (1 + 1) + (1 + 1) + (4 + 4) = 12.
    let inertia = metrics::inertia(&x, &labels).unwrap();
    assert!((inertia - 12.0).abs() < 1e-12, "{inertia}");
    // B = 2 (‖(−8/3, −13/3)‖² + ‖(19/3, −10/3)‖² + ‖(−11/3, 23/3)‖²) = 2 (233 + 461 + 650)/9;
    // CH = (B / 2) / (W / 3) = 1344/36.
    let ch = metrics::calinski_harabasz(&x, &labels).unwrap();
    assert!((ch - 1344.0 / 36.0).abs() < 1e-12, "{ch}");
    // S = 1, 1, 2; separations √82, √145, √221 (clusters 7–3, 7–9, 3–9); each cluster's
    // worst ratio: 7: max(2/√82, 3/√145), 3: max(2/√82, 3/√221), 9: max(3/√145, 3/√221).
    let (r73, r79, r39) = (2.0 / 82f64.sqrt(), 3.0 / 145f64.sqrt(), 3.0 / 221f64.sqrt());
    let want = (r73.max(r79) + r73.max(r39) + r79.max(r39)) / 3.0;
    let db = metrics::davies_bouldin(&x, &labels).unwrap();
    assert!((db - want).abs() < 1e-12, "{db} vs {want}");
}

#[test]
fn davies_bouldin_counts_coinciding_centroids_as_far_apart() {
    // Clusters {−1, 1} and {−2, 2} share the centroid 0; {10, 12} has 11. S = 1, 2, 1;
    // the shared centroid gives ratio 0 (scikit-learn), so the worst ratios are 2/11, 3/11
    // and 3/11: DB = 8/33.
    let rows = [-1.0f32, 1.0, -2.0, 2.0, 10.0, 12.0];
    let labels = [0u32, 0, 1, 1, 2, 2];
    let x = Matrix::new(&rows, 1).unwrap();
    let db = metrics::davies_bouldin(&x, &labels).unwrap();
    assert!((db - 8.0 / 33.0).abs() < 1e-12, "{db}");
    let reference = refm::davies_bouldin(&to_f64(&rows), 1, &labels).unwrap();
    assert!((reference - 8.0 / 33.0).abs() < 1e-12, "{reference}");
    // Identical points: every spread is zero, DB 0 and CH 1 (scikit-learn's conventions).
    let twice = [3.0f32, 3.0, 5.0, 5.0, 5.0];
    let x = Matrix::new(&twice, 1).unwrap();
    let labels = [0u32, 0, 1, 1, 1];
    assert_eq!(metrics::davies_bouldin(&x, &labels).unwrap(), 0.0);
    assert_eq!(metrics::calinski_harabasz(&x, &labels).unwrap(), 1.0);
}

#[test]
fn agreement_matches_hand_counts() {
    // {0,1}{2,3} against {0,1}{2}{3}: of 6 pairs, TP = 1, FN = 1 (2–3), FP = 0, TN = 4.
    let a = [0u32, 0, 1, 1];
    let b = [4u32, 4, 8, 6];
    let ri = metrics::rand_index(&a, &b).unwrap();
    assert!((ri - 5.0 / 6.0).abs() < 1e-15, "{ri}");
    // ARI = 2 (1·4 − 1·0) / ((1 + 1)(1 + 4) + (1 + 0)(0 + 4)) = 8 / 14.
    let ari = metrics::adjusted_rand_index(&a, &b).unwrap();
    assert!((ari - 4.0 / 7.0).abs() < 1e-15, "{ari}");
    assert_eq!(metrics::adjusted_rand_index(&b, &a).unwrap(), ari);
    // No pair split differently: 1 by definition (one cluster each, or one point).
    assert_eq!(
        metrics::adjusted_rand_index(&[3, 3, 3], &[1, 1, 1]).unwrap(),
        1.0
    );
    assert_eq!(metrics::rand_index(&[5], &[2]).unwrap(), 1.0);
    assert!(matches!(
        metrics::rand_index(&[], &[]),
        Err(Error::EmptyData { .. })
    ));
}

#[test]
fn host_criteria_match_the_reference_on_random_labellings() {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1.0);
    for (seed, n, d, k) in [
        (1u64, 200, 3, 4),
        (2, 57, 1, 2),
        (3, 300, 17, 11),
        (4, 40, 5, 39),
    ] {
        let (rows, truth, _) =
            datasets::make_blobs(n, d, k.min(6), 1.5, (-5.0, 5.0), seed).unwrap();
        let x = Matrix::new(&rows, d).unwrap();
        let x64 = to_f64(&rows);
        // Sparse, unordered label values; every cluster non-empty.
        let labels: Vec<u32> = random_labels(n, k, seed + 20)
            .iter()
            .map(|&l| 1000 - 7 * l)
            .collect();
        let pairs = [
            (
                metrics::calinski_harabasz(&x, &labels).unwrap(),
                refm::calinski_harabasz(&x64, d, &labels).unwrap(),
            ),
            (
                metrics::davies_bouldin(&x, &labels).unwrap(),
                refm::davies_bouldin(&x64, d, &labels).unwrap(),
            ),
            (
                metrics::inertia(&x, &labels).unwrap(),
                refm::inertia(&x64, d, &labels).unwrap(),
            ),
            (
                metrics::rand_index(&truth, &labels).unwrap(),
                refm::rand_index(&truth, &labels).unwrap(),
            ),
            (
                metrics::adjusted_rand_index(&truth, &labels).unwrap(),
                refm::adjusted_rand_index(&truth, &labels).unwrap(),
            ),
            (
                metrics::adjusted_rand_index(&truth, &truth).unwrap(),
                refm::adjusted_rand_index(&truth, &truth).unwrap(),
            ),
        ];
        for (i, (got, want)) in pairs.into_iter().enumerate() {
            assert!(
                close(got, want),
                "seed {seed}, criterion {i}: {got} vs {want}"
            );
        }
    }
}

#[test]
fn silhouette_matches_reference_on_5000_points() {
    let gpu = gpu();
    let (n, d) = (5000, 8);
    for seed in [1u64, 2] {
        let (rows, truth, _) = datasets::make_blobs(n, d, 6, 2.5, (-6.0, 6.0), seed).unwrap();
        // The true labels and a noisy labelling (some points moved to another cluster).
        let noisy: Vec<u32> = truth
            .iter()
            .zip(random_labels(n, 6, seed + 10))
            .enumerate()
            .map(|(i, (&t, r))| if i % 7 == 0 { r } else { t })
            .collect();
        let x = Matrix::new(&rows, d).unwrap();
        let x64 = to_f64(&rows);
        for labels in [&truth, &noisy] {
            let got = metrics::silhouette(&gpu, &x, labels, None, 0).unwrap();
            let want = refm::silhouette_samples(&x64, d, labels).unwrap();
            let err = got
                .samples
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(err < 1e-5, "seed {seed}: max |s_gpu − s_ref| = {err:e}");
            let score = refm::silhouette_score(&x64, d, labels).unwrap();
            assert!((got.score - score).abs() < 1e-6, "{} vs {score}", got.score);
            // Per cluster: the mean of the reference's values over the cluster.
            for (c, &id) in got.clusters.iter().enumerate() {
                let members: Vec<f64> = want
                    .iter()
                    .zip(labels.iter())
                    .filter(|(_, &l)| l == id)
                    .map(|(s, _)| *s)
                    .collect();
                let mean = members.iter().sum::<f64>() / members.len() as f64;
                assert!((got.per_cluster[c] - mean).abs() < 1e-5);
            }
        }
    }
}

#[test]
fn awkward_shapes_chunks_and_singletons() {
    let gpu = gpu();
    // D = 1, D = 67 (several feature tiles), K = 70 (many pieces), singleton clusters.
    for (n, d, k, seed) in [(300, 1, 3, 3u64), (257, 67, 5, 4), (700, 3, 70, 5)] {
        let rows = random_matrix(n, d, seed, -3.0, 3.0);
        let mut labels = random_labels(n, k, seed + 1);
        labels[n - 1] = k as u32 + 7; // a cluster of one point, with a gap in the ids
        let x = Matrix::new(&rows, d).unwrap();
        let got = metrics::silhouette(&gpu, &x, &labels, None, 0).unwrap();
        let want = refm::silhouette_samples(&to_f64(&rows), d, &labels).unwrap();
        assert_eq!(got.samples[n - 1], 0.0);
        for (a, b) in got.samples.iter().zip(&want) {
            assert!((a - b).abs() < 1e-5, "n={n} d={d} k={k}: {a} vs {b}");
        }
        // The same through small chunks: rows split across chunks and pieces.
        let small = crate::common::gpu();
        small.set_max_chunk_bytes((37 * d * 4) as u64);
        let xg = GpuMatrix::upload(&small, &x).unwrap();
        assert!(xg.n_chunks() > 5);
        let split = metrics::silhouette(&small, &xg, &labels, None, 0).unwrap();
        for (a, b) in split.samples.iter().zip(&want) {
            assert!((a - b).abs() < 1e-5);
        }
    }
}

#[test]
fn separated_clusters_score_near_one_random_labels_near_zero() {
    let gpu = gpu();
    let (rows, truth, _) = datasets::make_blobs(3000, 4, 4, 0.3, (-50.0, 50.0), 9).unwrap();
    let x = Matrix::new(&rows, 4).unwrap();
    let good = metrics::silhouette(&gpu, &x, &truth, None, 0).unwrap();
    assert!(good.score > 0.9, "{}", good.score);
    let random = random_labels(3000, 4, 77);
    let bad = metrics::silhouette(&gpu, &x, &random, None, 0).unwrap();
    assert!(bad.score.abs() < 0.05, "{}", bad.score);
    // Permuted label values: ARI and RI exactly 1.
    let permuted: Vec<u32> = truth.iter().map(|&l| (l + 1) % 4 + 10).collect();
    assert_eq!(
        metrics::adjusted_rand_index(&truth, &permuted).unwrap(),
        1.0
    );
    assert_eq!(metrics::rand_index(&truth, &permuted).unwrap(), 1.0);
    assert!(metrics::adjusted_rand_index(&truth, &random).unwrap().abs() < 0.01);
    // The better labelling is better on every criterion.
    let ch_good = metrics::calinski_harabasz(&x, &truth).unwrap();
    let ch_bad = metrics::calinski_harabasz(&x, &random).unwrap();
    assert!(ch_good > 100.0 * ch_bad);
    let db_good = metrics::davies_bouldin(&x, &truth).unwrap();
    let db_bad = metrics::davies_bouldin(&x, &random).unwrap();
    assert!(db_good < 0.1 && db_bad > 1.0, "{db_good} {db_bad}");
}

#[test]
fn sampled_silhouette_is_the_reference_on_the_sample_and_repeatable() {
    let gpu = gpu();
    let (rows, truth, _) = datasets::make_blobs(4000, 5, 5, 2.0, (-5.0, 5.0), 3).unwrap();
    let x = Matrix::new(&rows, 5).unwrap();
    let a = metrics::silhouette(&gpu, &x, &truth, Some(600), 11).unwrap();
    let b = metrics::silhouette(&gpu, &x, &truth, Some(600), 11).unwrap();
    assert_eq!(a, b);
    let c = metrics::silhouette(&gpu, &x, &truth, Some(600), 12).unwrap();
    assert_ne!(a.rows, c.rows);
    assert_eq!(a.rows.len(), 600);
    assert!(a.rows.windows(2).all(|w| w[0] < w[1]));
    let sub: Vec<f64> = a
        .rows
        .iter()
        .flat_map(|&r| rows[r * 5..(r + 1) * 5].iter().map(|&v| v as f64))
        .collect();
    let sub_labels: Vec<u32> = a.rows.iter().map(|&r| truth[r]).collect();
    let want = refm::silhouette_score(&sub, 5, &sub_labels).unwrap();
    assert!((a.score - want).abs() < 1e-6);
    // A sample as large as the data is the whole data.
    let all = metrics::silhouette(&gpu, &x, &truth, Some(4000), 1).unwrap();
    assert_eq!(all.rows.len(), 4000);
}

#[cfg(feature = "datasets")]
#[test]
fn criteria_match_reference_and_evaluate_collects_them() {
    let gpu = gpu();
    let (rows, species) = datasets::iris();
    let x = Matrix::new(&rows, 4).unwrap();
    let x64 = to_f64(&rows);
    let labels = wgpu_unsupervised::KMeans::new(3)
        .seed(1)
        .fit(&gpu, &x)
        .unwrap()
        .labels()
        .to_vec();
    let e = metrics::evaluate(&gpu, &x, &labels, Some(&species), None, 0).unwrap();
    assert!(e.undefined.is_empty(), "{:?}", e.undefined);
    let a = e.agreement.unwrap();
    let (silhouette, ch, db, inertia) = (
        e.silhouette.unwrap(),
        e.calinski_harabasz.unwrap(),
        e.davies_bouldin.unwrap(),
        e.inertia.unwrap(),
    );
    let close = |u: f64, v: f64| (u - v).abs() <= 1e-6 * v.abs().max(1.0);
    assert!(close(
        silhouette,
        refm::silhouette_score(&x64, 4, &labels).unwrap()
    ));
    assert!(close(
        ch,
        refm::calinski_harabasz(&x64, 4, &labels).unwrap()
    ));
    assert!(close(db, refm::davies_bouldin(&x64, 4, &labels).unwrap()));
    assert!(close(inertia, refm::inertia(&x64, 4, &labels).unwrap()));
    assert!(a.adjusted_rand_index > 0.6 && a.rand_index > 0.8);
    // scikit-learn on Iris with its K-Means labels: silhouette ≈ 0.553, CH ≈ 561.6,
    // DB ≈ 0.662, inertia ≈ 78.85.
    assert!((silhouette - 0.553).abs() < 0.01, "{}", silhouette);
    assert!((ch - 561.6).abs() < 2.0, "{}", ch);
    assert!((db - 0.662).abs() < 0.01, "{}", db);
    assert!((inertia - 78.85).abs() < 0.1, "{}", inertia);
    let without = metrics::evaluate(&gpu, &x, &labels, None, None, 0).unwrap();
    assert_eq!(without.agreement, None);
}

/// One cluster and all singletons: the internal criteria are not defined (the reason says
/// so), the inertia and the agreement scores are, with scikit-learn's values.
#[test]
fn evaluate_reports_what_is_defined_for_one_cluster_and_all_singletons() {
    let gpu = gpu();
    for seed in [3u64, 4] {
        let n = 40;
        let rows = random_matrix(n, 3, seed, -1.0, 1.0);
        let x = Matrix::new(&rows, 3).unwrap();
        let x64 = to_f64(&rows);
        let truth = random_labels(n, 3, seed + 10);
        let one = vec![5u32; n];
        let each: Vec<u32> = (0..n as u32).rev().collect();
        for (labels, clusters) in [(&one, 1), (&each, n)] {
            let e = metrics::evaluate(&gpu, &x, labels, Some(&truth), None, 0).unwrap();
            assert_eq!(
                (e.silhouette, e.calinski_harabasz, e.davies_bouldin),
                (None, None, None)
            );
            for key in ["silhouette", "calinski_harabasz", "davies_bouldin"] {
                let reason = &e.undefined[key];
                assert!(
                    reason.contains(&format!("got {clusters} clusters for N = {n}")),
                    "{reason}"
                );
            }
            let a = e.agreement.unwrap();
            assert_eq!(a.rand_index, refm::rand_index(&truth, labels).unwrap());
            let ari = refm::adjusted_rand_index(&truth, labels).unwrap();
            assert!((a.adjusted_rand_index - ari).abs() < 1e-12);
            let w = refm::inertia(&x64, 3, labels).unwrap();
            let inertia = e.inertia.unwrap();
            assert!((inertia - w).abs() <= 1e-9 * w.max(1.0), "{inertia} {w}");
        }
        // Against itself, one cluster agrees perfectly (scikit-learn: RI = ARI = 1).
        let e = metrics::evaluate(&gpu, &x, &one, Some(&one), None, 0).unwrap();
        let a = e.agreement.unwrap();
        assert_eq!((a.rand_index, a.adjusted_rand_index), (1.0, 1.0));
        // All singletons: inertia 0; against one cluster, ARI 0 (no pair is shared).
        let e = metrics::evaluate(&gpu, &x, &each, Some(&one), None, 0).unwrap();
        let a = e.agreement.unwrap();
        assert_eq!(
            (e.inertia, a.rand_index, a.adjusted_rand_index),
            (Some(0.0), 0.0, 0.0)
        );
    }
    let x = Matrix::new(&[0.0f32, 1.0, 2.0], 1).unwrap();
    assert!(metrics::evaluate(&gpu, &x, &[0, 1], None, None, 0).is_err());
    assert!(metrics::evaluate(&gpu, &x, &[0, 1, 1], Some(&[0, 1]), None, 0).is_err());
}

/// Davies–Bouldin where two clusters share a centroid: their ratio counts as 0 (infinitely
/// far apart), as scikit-learn's `davies_bouldin_score`, never NaN or infinity.
#[test]
fn davies_bouldin_of_clusters_with_one_centroid() {
    // Clusters 0 and 1 are both centred on the origin; cluster 2 lies apart.
    let rows = [
        -1.0f32, 0.0, 1.0, 0.0, 0.0, -2.0, 0.0, 2.0, 10.0, 10.0, 11.0, 10.0,
    ];
    let labels = [0u32, 0, 1, 1, 2, 2];
    let x = Matrix::new(&rows, 2).unwrap();
    let db = metrics::davies_bouldin(&x, &labels).unwrap();
    let reference = refm::davies_bouldin(&to_f64(&rows), 2, &labels).unwrap();
    assert!((db - reference).abs() < 1e-12, "{db} vs {reference}");
    // scikit-learn 1.9.1: davies_bouldin_score(X, labels) on these f32 rows.
    assert!((db - 0.149_425_287_356_321_85).abs() < 1e-9, "{db}");
    // Every cluster on one centroid and no spread left: 0, as scikit-learn.
    let same = [0.0f32, 0.0, 0.0, 0.0, 0.0, 0.0];
    let x = Matrix::new(&same, 2).unwrap();
    assert_eq!(metrics::davies_bouldin(&x, &[0, 1, 1]).unwrap(), 0.0);
}

#[test]
fn bad_labellings_give_errors() {
    let gpu = gpu();
    let rows = random_matrix(50, 2, 1, 0.0, 1.0);
    let x = Matrix::new(&rows, 2).unwrap();
    let one = vec![0u32; 50];
    let each: Vec<u32> = (0..50).collect();
    let short = vec![0u32; 49];
    for labels in [&one, &each, &short] {
        assert!(matches!(
            metrics::silhouette(&gpu, &x, labels, None, 0),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(metrics::calinski_harabasz(&x, labels).is_err());
        assert!(metrics::davies_bouldin(&x, labels).is_err());
    }
    let two = random_labels(50, 2, 3);
    assert!(metrics::silhouette(&gpu, &x, &two, Some(1), 0).is_err());
    assert!(metrics::inertia(&x, &short).is_err());
    assert!(metrics::rand_index(&two, &short).is_err());
}

#[test]
fn silhouette_of_a_source_equals_that_of_the_matrix() {
    let gpu = gpu();
    for (seed, sample) in [(31u64, Some(700)), (32, None)] {
        let (n, d) = (1500, 6);
        let (x, labels, _) = datasets::make_blobs(n, d, 4, 1.5, (-5.0, 5.0), seed).unwrap();
        let m = Matrix::new(&x, d).unwrap();
        let want = metrics::silhouette(&gpu, &m, &labels, sample, seed).unwrap();
        let chunks = wgpu_unsupervised::RowChunks::new(n, d, || x.chunks(97 * d));
        let got = metrics::silhouette_source(&gpu, &chunks, &labels, sample, seed).unwrap();
        assert_eq!(got, want, "seed {seed}");
        let r = refm::silhouette_samples(&to_f64(&x), d, &labels).unwrap();
        if sample.is_none() {
            let mean = r.iter().sum::<f64>() / n as f64;
            assert!((got.score - mean).abs() < 1e-5, "{} vs {mean}", got.score);
        }
    }
    // Evaluating every row needs them within the budget.
    let x = random_matrix(400, 3, 33, 0.0, 1.0);
    let labels: Vec<u32> = (0..400).map(|i| i % 3).collect();
    gpu.set_memory_budget(1024);
    let e = metrics::silhouette_source(&gpu, &Matrix::new(&x, 3).unwrap(), &labels, None, 0);
    assert!(matches!(e, Err(Error::OutOfDeviceMemory { .. })), "{e:?}");
    let ok = metrics::silhouette_source(&gpu, &Matrix::new(&x, 3).unwrap(), &labels, Some(50), 0);
    assert!(ok.is_ok(), "{ok:?}");
}
