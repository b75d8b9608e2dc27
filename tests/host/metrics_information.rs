//! Information-theoretic and pair-counting agreement scores and the silhouette of a
//! precomputed distance matrix, against the f64 reference and quoted scikit-learn figures.
//! Host code: no GPU needed.

use crate::common::{random_matrix, to_f64};
use rand::{Rng, SeedableRng};
use wgpu_unsupervised::metrics::{self, AverageMethod};
use wgpu_unsupervised::reference::{information as refi, metrics as refm};
use wgpu_unsupervised::Error;

/// `n` labels in 0..k from a seeded generator.
fn labels(n: usize, k: u32, seed: u64) -> Vec<u32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(0..k)).collect()
}

/// |a − b| within `tol` of max(|b|, 1).
fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

/// Every score of a pair of labellings: production, then reference.
fn both(t: &[u32], p: &[u32]) -> [(f64, f64); 9] {
    let (h, c, v) = metrics::homogeneity_completeness_v_measure(t, p, 1.0).unwrap();
    let (rh, rc, rv) = refi::homogeneity_completeness_v(t, p, 1.0).unwrap();
    let (_, _, v2) = metrics::homogeneity_completeness_v_measure(t, p, 0.5).unwrap();
    let (_, _, rv2) = refi::homogeneity_completeness_v(t, p, 0.5).unwrap();
    let arith = AverageMethod::Arithmetic;
    [
        (
            metrics::mutual_info_score(t, p).unwrap(),
            refi::mutual_info(t, p).unwrap(),
        ),
        (
            metrics::normalized_mutual_info_score(t, p, arith).unwrap(),
            refi::normalized_mutual_info(t, p, "arithmetic").unwrap(),
        ),
        (
            metrics::normalized_mutual_info_score(t, p, AverageMethod::Geometric).unwrap(),
            refi::normalized_mutual_info(t, p, "geometric").unwrap(),
        ),
        (
            metrics::adjusted_mutual_info_score(t, p, arith).unwrap(),
            refi::adjusted_mutual_info(t, p, "arithmetic").unwrap(),
        ),
        (
            metrics::adjusted_mutual_info_score(t, p, AverageMethod::Max).unwrap(),
            refi::adjusted_mutual_info(t, p, "max").unwrap(),
        ),
        (h, rh),
        (c, rc),
        (v, rv),
        (v2, rv2),
    ]
}

#[test]
fn scores_match_the_reference_on_random_labellings() {
    for seed in 0..12u64 {
        let n = [1usize, 2, 7, 40, 150, 500][seed as usize % 6];
        let (k1, k2) = (1 + (seed % 5) as u32, 1 + (seed * 7 % 9) as u32);
        let t = labels(n, k1, seed);
        let p = labels(n, k2, seed + 100);
        for (name, (got, want)) in [
            "MI", "NMI", "NMI geo", "AMI", "AMI max", "h", "c", "V", "V 0.5",
        ]
        .iter()
        .zip(both(&t, &p))
        {
            assert!(
                close(got, want, 1e-10),
                "seed {seed} {name}: {got} vs {want}"
            );
        }
        let fm = metrics::fowlkes_mallows_score(&t, &p).unwrap();
        assert!(
            close(fm, refi::fowlkes_mallows(&t, &p).unwrap(), 1e-12),
            "seed {seed}"
        );
        // The same partition under other names scores 1 (NMI, AMI, V, FMI) unless it is
        // one cluster against itself, where FMI has no pair to count.
        let renamed: Vec<u32> = t.iter().map(|&l| 7 * l + 3).collect();
        if k1 > 1 && n > k1 as usize {
            for s in [
                metrics::normalized_mutual_info_score(&t, &renamed, AverageMethod::Arithmetic)
                    .unwrap(),
                metrics::adjusted_mutual_info_score(&t, &renamed, AverageMethod::Arithmetic)
                    .unwrap(),
                metrics::v_measure_score(&t, &renamed, 1.0).unwrap(),
            ] {
                assert!(close(s, 1.0, 1e-12), "seed {seed}: {s}");
            }
        }
    }
}

/// scikit-learn 1.9.1, `sklearn.metrics`: mutual_info_score, normalized_mutual_info_score
/// (arithmetic, geometric), adjusted_mutual_info_score (arithmetic, max),
/// homogeneity_completeness_v_measure, v_measure_score(beta=0.5), fowlkes_mallows_score.
#[test]
fn scores_match_scikit_learn() {
    let cases: [(&[u32], &[u32], [f64; 10]); 6] = [
        (
            &[0, 0, 1, 1, 2, 2, 2, 0, 3, 3],
            &[1, 1, 0, 0, 2, 2, 0, 0, 5, 2],
            [
                0.759316288744791,
                0.5739323787756516,
                0.5742379141902874,
                0.23858391007234978,
                0.22544308869144855,
                0.555803807218932,
                0.5932834172971455,
                0.5739323787756516,
                0.5677595355092535,
                0.3354101966249684,
            ],
        ),
        (
            &[0, 0, 1, 1, 2, 2],
            &[5, 5, 3, 3, 9, 9],
            [
                1.0986122886681096,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
            ],
        ),
        (
            &[0, 0, 0, 0],
            &[0, 1, 2, 3],
            [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
        ),
        (
            &[0, 1, 2, 3, 4],
            &[7, 7, 7, 7, 7],
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        ),
        (
            &[4, 4, 4],
            &[1, 1, 1],
            [0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        ),
        (
            &[0, 0, 0, 1, 1, 1],
            &[0, 0, 1, 1, 2, 2],
            [
                0.4620981203732969,
                0.5158037429793889,
                0.5295405780575618,
                0.2987924581708901,
                0.22504228319830885,
                0.6666666666666669,
                0.420619835714305,
                0.5158037429793889,
                0.5578858913022597,
                0.4714045207910317,
            ],
        ),
    ];
    for (t, p, want) in cases {
        let (h, c, v) = metrics::homogeneity_completeness_v_measure(t, p, 1.0).unwrap();
        let got = [
            metrics::mutual_info_score(t, p).unwrap(),
            metrics::normalized_mutual_info_score(t, p, AverageMethod::Arithmetic).unwrap(),
            metrics::normalized_mutual_info_score(t, p, AverageMethod::Geometric).unwrap(),
            metrics::adjusted_mutual_info_score(t, p, AverageMethod::Arithmetic).unwrap(),
            metrics::adjusted_mutual_info_score(t, p, AverageMethod::Max).unwrap(),
            h,
            c,
            v,
            metrics::v_measure_score(t, p, 0.5).unwrap(),
            metrics::fowlkes_mallows_score(t, p).unwrap(),
        ];
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(close(*g, w, 1e-12), "{t:?} vs {p:?}, score {i}: {g} vs {w}");
        }
        assert_eq!(metrics::homogeneity_score(t, p).unwrap(), h);
        assert_eq!(metrics::completeness_score(t, p).unwrap(), c);
    }
}

#[test]
fn symmetric_scores_are_symmetric() {
    for seed in 20..26u64 {
        let t = labels(300, 4, seed);
        let p = labels(300, 6, seed + 1);
        let swap = |f: &dyn Fn(&[u32], &[u32]) -> f64| (f(&t, &p), f(&p, &t));
        for (a, b) in [
            swap(&|x, y| metrics::mutual_info_score(x, y).unwrap()),
            swap(&|x, y| {
                metrics::normalized_mutual_info_score(x, y, AverageMethod::Arithmetic).unwrap()
            }),
            swap(&|x, y| {
                metrics::adjusted_mutual_info_score(x, y, AverageMethod::Geometric).unwrap()
            }),
            swap(&|x, y| metrics::v_measure_score(x, y, 1.0).unwrap()),
            swap(&|x, y| metrics::fowlkes_mallows_score(x, y).unwrap()),
        ] {
            assert!(close(a, b, 1e-12), "{a} vs {b}");
        }
        let h = metrics::homogeneity_score(&t, &p).unwrap();
        assert!(close(
            h,
            metrics::completeness_score(&p, &t).unwrap(),
            1e-12
        ));
    }
}

/// scikit-learn 1.9.1: `silhouette_score(pairwise_distances(X, metric=m), y,
/// metric="precomputed")` on eight points in three clusters.
#[test]
fn silhouette_of_precomputed_distances() {
    let x = [
        0.0, 0.0, 1.0, 0.0, 0.0, 2.0, 5.0, 5.0, 6.0, 5.0, 5.0, 7.0, 10.0, 0.0, 11.0, 1.0,
    ];
    let y = [0u32, 0, 0, 1, 1, 1, 2, 2];
    let n = 8;
    let matrix = |f: &dyn Fn(&[f64], &[f64]) -> f64| -> Vec<f64> {
        (0..n * n)
            .map(|ij| {
                f(
                    &x[ij / n * 2..ij / n * 2 + 2],
                    &x[ij % n * 2..ij % n * 2 + 2],
                )
            })
            .collect()
    };
    let euclid = matrix(&|a, b| ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt());
    let manhattan = matrix(&|a, b| (a[0] - b[0]).abs() + (a[1] - b[1]).abs());
    for (d, want, first) in [
        (
            &euclid,
            0.7651642051296959,
            [0.8083772587165003, 0.7746099281975748, 0.6759801375469876],
        ),
        (
            &manhattan,
            0.7978250244379277,
            [0.8636363636363636, 0.8, 0.7222222222222222],
        ),
    ] {
        assert!(close(
            metrics::silhouette_precomputed(d, n, &y).unwrap(),
            want,
            1e-12
        ));
        let s = metrics::silhouette_samples_precomputed(d, n, &y).unwrap();
        for (g, w) in s.iter().zip(first) {
            assert!(close(*g, w, 1e-12), "{g} vs {w}");
        }
    }
    // Euclidean distances of random points: the reference's silhouette of the points.
    for seed in [30u64, 31] {
        let (m, dim) = (120, 3);
        let pts = to_f64(&random_matrix(m, dim, seed, -2.0, 2.0));
        let lab = labels(m, 4, seed);
        let dist: Vec<f64> = (0..m * m)
            .map(|ij| {
                let (i, j) = (ij / m, ij % m);
                (0..dim)
                    .map(|c| (pts[i * dim + c] - pts[j * dim + c]).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .collect();
        let got = metrics::silhouette_samples_precomputed(&dist, m, &lab).unwrap();
        let want = refm::silhouette_samples(&pts, dim, &lab).unwrap();
        for (g, w) in got.iter().zip(&want) {
            assert!(close(*g, *w, 1e-12), "{g} vs {w}");
        }
    }
}

#[test]
fn bad_input_is_an_error() {
    let t = [0u32, 1, 1];
    assert!(matches!(
        metrics::mutual_info_score(&t, &[0, 1]),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        metrics::fowlkes_mallows_score(&[], &[]),
        Err(Error::EmptyData { .. })
    ));
    for beta in [-1.0, f64::NAN, f64::INFINITY] {
        assert!(metrics::v_measure_score(&t, &t, beta).is_err(), "{beta}");
    }
    let ok = [0.0, 1.0, 2.0, 1.0, 0.0, 1.5, 2.0, 1.5, 0.0];
    let y = [0u32, 0, 1];
    assert!(metrics::silhouette_precomputed(&ok, 3, &y).is_ok());
    let mut diagonal = ok;
    diagonal[4] = 0.5;
    let mut negative = ok;
    negative[1] = -1.0;
    let mut nan = ok;
    nan[2] = f64::NAN;
    for (d, words) in [
        (&diagonal[..], "diagonal"),
        (&negative[..], ">= 0"),
        (&nan[..], ">= 0"),
        (&ok[..8], "3 x 3"),
    ] {
        let e = metrics::silhouette_precomputed(d, 3, &y)
            .unwrap_err()
            .to_string();
        assert!(e.contains(words), "{words}: {e}");
    }
    // scikit-learn's test_silhouette_nonzero_diag: a diagonal up to 100·ε of the type is
    // accepted (the same silhouette as with zeros), anything larger refused; f32 and f64.
    let want = metrics::silhouette_precomputed(&ok, 3, &y).unwrap();
    for (eps, ok_too) in [(f64::EPSILON, true), (f32::EPSILON as f64, false)] {
        let mut near = ok;
        for i in 0..3 {
            near[i * 4] = 100.0 * eps * [0.5, 1.0, 0.99][i];
        }
        let got = metrics::silhouette_precomputed(&near, 3, &y);
        assert_eq!(got.is_ok(), ok_too, "f64 matrix, diagonal {eps:e}");
        if let Ok(s) = got {
            assert!((s - want).abs() < 1e-12, "{s} vs {want}");
        }
        let mut over = near;
        over[4] = 101.0 * eps;
        assert!(metrics::silhouette_precomputed(&over, 3, &y).is_err());
    }
    let ok32: Vec<f32> = ok.iter().map(|&v| v as f32).collect();
    let mut near32 = ok32.clone();
    near32[4] = 100.0 * f32::EPSILON;
    assert!(metrics::silhouette_precomputed(&near32, 3, &y).is_ok());
    near32[4] = 101.0 * f32::EPSILON;
    let e = metrics::silhouette_precomputed(&near32, 3, &y)
        .unwrap_err()
        .to_string();
    assert!(e.contains("diagonal at row 1"), "{e}");
    let e = metrics::silhouette_precomputed(&ok, 3, &[0, 0, 0])
        .unwrap_err()
        .to_string();
    assert!(e.contains("got 1 clusters for N = 3"), "{e}");
    assert!(metrics::silhouette_precomputed(&ok, 3, &[0, 1]).is_err());
}

/// `evaluate_precomputed`: the silhouette from the distances, the rest not defined.
#[test]
fn evaluation_from_precomputed_distances() {
    let d = [
        0.0, 1.0, 4.0, 4.5, 1.0, 0.0, 4.2, 4.1, 4.0, 4.2, 0.0, 0.8, 4.5, 4.1, 0.8, 0.0,
    ];
    let y = [0u32, 0, 1, 1];
    let e = metrics::evaluate_precomputed(&d, 4, &y, Some(&[0, 0, 1, 1])).unwrap();
    assert!(close(
        e.silhouette.unwrap(),
        metrics::silhouette_precomputed(&d, 4, &y).unwrap(),
        0.0
    ));
    assert_eq!(
        (e.calinski_harabasz, e.davies_bouldin, e.inertia),
        (None, None, None)
    );
    assert!(e.undefined["inertia"].contains("coordinates"));
    assert_eq!(e.agreement.unwrap().adjusted_mutual_information, 1.0);
    let one = metrics::evaluate_precomputed(&d, 4, &[2; 4], None).unwrap();
    assert!(one.silhouette.is_none() && one.undefined["silhouette"].contains("1 clusters"));
    let mut bad = d;
    bad[0] = 1.0;
    assert!(metrics::evaluate_precomputed(&bad, 4, &[2; 4], None).is_err());
}
