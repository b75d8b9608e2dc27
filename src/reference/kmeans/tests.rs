//! The oracle's K-Means against hand-computed steps, its invariants and scikit-learn's
//! optimum on Iris.

use super::*;
use crate::reference::metrics::adjusted_rand_index;

/// Four tight blobs at the corners of a 20 x 20 square, `per` points each.
fn four_blobs(per: usize, seed: u64) -> (Vec<f64>, Vec<u32>) {
    let corners = [[0.0, 0.0], [20.0, 0.0], [0.0, 20.0], [20.0, 20.0]];
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut x = Vec::new();
    let mut y = Vec::new();
    for i in 0..4 * per {
        let c = corners[i % 4];
        x.push(c[0] + rng.random_range(-1.0..1.0));
        x.push(c[1] + rng.random_range(-1.0..1.0));
        y.push((i % 4) as u32);
    }
    (x, y)
}

#[test]
fn hand_checked_1d_case() {
    let x = [0.0, 1.0, 10.0, 11.0];
    let params = KMeans::new(2).init(KMeansInit::Centroids(vec![0.0, 1.0]));
    let r = fit(&x, 1, &params).unwrap();
    assert_eq!(r.centroids, vec![0.5, 10.5]);
    assert_eq!(r.labels, vec![0, 0, 1, 1]);
    assert_eq!(r.inertia, 1.0);
    assert!(r.converged);
    // Start (0, 1): {0}, {1, 10, 11} -> (0, 22/3); then {0, 1}, {10, 11} -> (0.5, 10.5);
    // then the labels repeat.
    assert_eq!(r.n_iter, 3);
    assert_eq!(r.inertia_history.len(), 3);
    assert!((r.inertia_history[0] - (81.0 + 100.0)).abs() < 1e-12);

    let r = fit(&x, 1, &KMeans::new(2).seed(3)).unwrap();
    let mut c = r.centroids.clone();
    c.sort_by(f64::total_cmp);
    assert_eq!(c, vec![0.5, 10.5]);
    assert_eq!(r.inertia, 1.0);
}

#[test]
fn helpers_agree() {
    let x = [0.0, 0.0, 1.0, 0.0, 5.0, 5.0, 6.0, 5.0];
    let c = [0.5, 0.0, 5.5, 5.0];
    let (labels, dists) = assign(&x, 2, &c);
    assert_eq!(labels, vec![0, 0, 1, 1]);
    assert_eq!(dists, vec![0.25; 4]);
    assert_eq!(inertia(&x, 2, &c, &labels), 1.0);
    // Equidistant point goes to the lower index.
    let (l, _) = assign(&[1.0], 1, &[0.0, 2.0]);
    assert_eq!(l, vec![0]);

    let (m, counts) = update_centroids(&x, 2, &[0, 0, 0, 0], 2, &[9.0, 9.0, 7.0, 7.0]);
    assert_eq!(counts, vec![4, 0]);
    assert_eq!(m, vec![3.0, 2.5, 7.0, 7.0]);

    assert!((mean_variance(&[1.0, 10.0, 3.0, 10.0], 2) - 0.5).abs() < 1e-15);
}

#[test]
fn inertia_history_never_increases() {
    let (x, _) = four_blobs(50, 1);
    for seed in 0..5 {
        let params = KMeans::new(6).init(KMeansInit::Random).seed(seed).tol(0.0);
        let r = fit(&x, 2, &params).unwrap();
        for w in r.inertia_history.windows(2) {
            assert!(w[1] <= w[0] * (1.0 + 1e-12), "{:?}", r.inertia_history);
        }
        let last = *r.inertia_history.last().unwrap();
        assert!(r.inertia <= last * (1.0 + 1e-12));
        assert!((inertia(&x, 2, &r.centroids, &r.labels) - r.inertia).abs() < 1e-9);
    }
}

#[test]
fn kmeans_plus_plus_recovers_four_blobs() {
    let (x, y) = four_blobs(40, 7);
    for seed in 0..8 {
        let r = fit(&x, 2, &KMeans::new(4).seed(seed)).unwrap();
        let ari = adjusted_rand_index(&r.labels, &y).unwrap();
        assert_eq!(ari, 1.0, "seed {seed}");
        assert!(r.converged);
    }
}

#[test]
fn kmeans_plus_plus_spreads_and_handles_duplicates() {
    let (x, _) = four_blobs(10, 2);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let c = kmeans_plus_plus(&x, 2, 4, 3, &mut rng);
    assert_eq!(c.len(), 8);
    // One seed per corner.
    let mut corners: Vec<(i64, i64)> = c
        .chunks(2)
        .map(|p| ((p[0] / 10.0).round() as i64, (p[1] / 10.0).round() as i64))
        .collect();
    corners.sort();
    corners.dedup();
    assert_eq!(corners.len(), 4);

    // All points equal: potential 0, uniform fallback, no NaN.
    let same = [3.0; 10];
    let c = kmeans_plus_plus(&same, 1, 3, 2, &mut rng);
    assert_eq!(c, vec![3.0; 3]);
    let r = fit(&same, 1, &KMeans::new(3)).unwrap();
    assert!(r.centroids.iter().all(|v| v.is_finite()));
    assert_eq!(r.inertia, 0.0);
}

#[test]
fn empty_cluster_relocation() {
    let x = [0.0, 1.0, 10.0, 11.0];
    // The third centroid is far from every point: empty on the first assignment.
    let r = lloyd(&x, 1, &[0.5, 10.5, 1000.0], 100, 0.0);
    assert!(r.centroids.iter().all(|v| v.is_finite()));
    let mut counts = [0; 3];
    for &l in &r.labels {
        counts[l as usize] += 1;
    }
    assert!(counts.iter().all(|&c| c > 0), "{counts:?}");
    assert!(r.inertia <= 0.5 + 1e-12);

    // The farthest point (0, alone in its cluster) must not be taken; the next farthest
    // (10.0, index 1, tied with 10.2 but lower) is.
    let x = [0.0, 10.0, 10.1, 10.2];
    let c = [5.0, 10.1, 1e6];
    let (labels, dists) = assign(&x, 1, &c);
    assert_eq!(labels, vec![0, 1, 1, 1]);
    let (mut sums, mut counts) = sums_and_counts(&x, 1, &labels, 3);
    assert_eq!(
        relocate_empty_clusters(&x, 1, &labels, &dists, &mut sums, &mut counts),
        1
    );
    assert_eq!(counts, vec![1, 2, 1]);
    assert_eq!(sums[2], 10.0);
    assert!((sums[1] - 20.3).abs() < 1e-12);

    // Many empty clusters at once, k = n: every point becomes its own cluster.
    let r = lloyd(&x, 1, &[5.0, 1e6, 2e6, 3e6], 10, 0.0);
    let mut l = r.labels.clone();
    l.sort();
    assert_eq!(l, vec![0, 1, 2, 3]);
    assert_eq!(r.inertia, 0.0);
}

#[test]
fn invalid_input_is_an_error() {
    let p = KMeans::new(1);
    assert!(matches!(
        fit(&[], 2, &p),
        Err(Error::EmptyData {
            missing: "rows",
            ..
        })
    ));
    assert!(matches!(
        fit(&[1.0], 0, &p),
        Err(Error::EmptyData {
            missing: "columns",
            ..
        })
    ));
    assert!(matches!(
        fit(&[1.0, 2.0, 3.0], 2, &p),
        Err(Error::Shape {
            len: 3,
            n_features: 2
        })
    ));
    assert!(matches!(
        fit(&[1.0, 2.0, 3.0, f64::NAN], 2, &p),
        Err(Error::NonFinite { row: 1, col: 1, .. })
    ));
    assert!(matches!(
        fit(&[f64::INFINITY, 2.0], 2, &p),
        Err(Error::NonFinite { row: 0, col: 0, .. })
    ));
    let x = [1.0, 2.0, 3.0, 4.0];
    assert!(matches!(
        fit(&x, 2, &KMeans::new(0)),
        Err(Error::InvalidParameter { name: "k", .. })
    ));
    assert!(matches!(
        fit(&x, 2, &KMeans::new(3)),
        Err(Error::TooFewSamples { k: 3, n: 2 })
    ));
    assert!(matches!(
        fit(&x, 2, &KMeans::new(1).n_init(0)),
        Err(Error::InvalidParameter { name: "n_init", .. })
    ));
    assert!(matches!(
        fit(&x, 2, &KMeans::new(1).max_iter(0)),
        Err(Error::InvalidParameter {
            name: "max_iter",
            ..
        })
    ));
    assert!(matches!(
        fit(&x, 2, &KMeans::new(1).tol(-1.0)),
        Err(Error::InvalidParameter { name: "tol", .. })
    ));
    assert!(matches!(
        fit(
            &x,
            2,
            &KMeans::new(1).init(KMeansInit::Centroids(vec![0.0]))
        ),
        Err(Error::InvalidParameter { name: "init", .. })
    ));
    assert!(matches!(
        fit(
            &x,
            2,
            &KMeans::new(1).init(KMeansInit::Centroids(vec![0.0, f64::NAN]))
        ),
        Err(Error::NonFinite { row: 0, col: 1, .. })
    ));
}

#[test]
fn same_seed_same_result_and_restarts_keep_the_best() {
    let (x, _) = four_blobs(30, 3);
    for init in [KMeansInit::KMeansPlusPlus, KMeansInit::Random] {
        let p = KMeans::new(5).seed(42).init(init);
        let a = fit(&x, 2, &p).unwrap();
        let b = fit(&x, 2, &p).unwrap();
        assert_eq!(a, b);
        // The first restart of n_init = 4 is the n_init = 1 run (same generator stream),
        // so the best of four can only be as good or better.
        let best = fit(&x, 2, &p.clone().n_init(4)).unwrap();
        assert!(best.inertia <= a.inertia);
    }
}

#[cfg(feature = "datasets")]
#[test]
fn iris_matches_the_known_optimum() {
    let (xf, y) = crate::datasets::iris();
    let x: Vec<f64> = xf.iter().map(|&v| v as f64).collect();
    let r = fit(&x, 4, &KMeans::new(3).n_init(10)).unwrap();
    // scikit-learn's KMeans(3) on the f64 iris data: inertia 78.85144142614601, ARI
    // against the species 0.7302382722834697. The f32 copy moves the inertia by ~2e-6.
    assert!(
        (r.inertia - 78.85144142614601).abs() < 1e-4,
        "{}",
        r.inertia
    );
    let ari = adjusted_rand_index(&r.labels, &y).unwrap();
    assert!((ari - 0.7302382722834697).abs() < 1e-9, "{ari}");
}
