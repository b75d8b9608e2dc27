//! The Lloyd loop ahead on the device against the host loop (`lloyd.rs`, forced with
//! `with_host_loop`): the same iterations, decisions and labels, centroids and inertia equal to
//! f32 rounding, for each way a run ends (strict convergence, tolerance, `max_iter`, the
//! callback's stop), weighted and spherical; empty clusters repaired on the device where it
//! can (a lone row skipped, rows in chunks) and on the host where it cannot; and the same
//! bits from run to run.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::lloyd::{take_host_repairs, window_end, with_host_loop, HISTORY_STEPS};
use crate::datasets::make_blobs;
use crate::gpu::tests::{gpu, random};
use crate::gpu::{Gpu, ProfileClock};
use crate::{KMeans, KMeansInit, KMeansModel, Matrix, Metric};

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// A fit with the loop ahead (checked to have run there) and with the host loop.
fn both_ways(
    gpu: &Gpu,
    params: &KMeans,
    m: &Matrix<'_>,
    w: Option<&[f32]>,
) -> (KMeansModel, KMeansModel) {
    let fit = || match w {
        Some(w) => params.fit_weighted(gpu, m, w),
        None => params.fit(gpu, m),
    };
    let (ahead, profile) = gpu.profile(ProfileClock::WallClock, fit).unwrap();
    assert!(
        profile
            .dispatches
            .iter()
            .any(|r| r.kernel.contains("advance_decide")),
        "the loop did not run ahead"
    );
    (ahead, with_host_loop(fit).unwrap())
}

/// Same iterations and decisions, labels but for near ties, centroids and inertia to f32
/// rounding (relative to the data's scale).
fn assert_agree(ahead: &KMeansModel, host: &KMeansModel, scale: f64, what: &str) {
    assert_eq!(ahead.n_iter(), host.n_iter(), "{what}: iterations");
    assert_eq!(ahead.converged(), host.converged(), "{what}: converged");
    let same = ahead
        .labels()
        .iter()
        .zip(host.labels())
        .filter(|(a, b)| a == b)
        .count();
    let n = host.labels().len();
    assert!(same * 1000 >= n * 999, "{what}: {} labels differ", n - same);
    let err = ahead
        .centroids()
        .iter()
        .zip(host.centroids())
        .map(|(&a, &b)| (a as f64 - b as f64).abs())
        .fold(0.0, f64::max);
    assert!(err <= 1e-5 * scale, "{what}: centroids differ by {err}");
    let rel = (ahead.inertia() - host.inertia()).abs() / host.inertia();
    assert!(
        rel < 1e-5,
        "{what}: inertia {} vs {}",
        ahead.inertia(),
        host.inertia()
    );
    for (a, h) in ahead.inertia_history().iter().zip(host.inertia_history()) {
        assert!((a - h).abs() <= 1e-5 * h, "{what}: history {a} vs {h}");
    }
}

#[test]
fn the_loop_ahead_agrees_with_the_host_loop() {
    let gpu = gpu();
    for (n, d, k, seed) in [(1500, 6, 5, 1u64), (900, 33, 12, 2), (700, 3, 40, 3)] {
        let (x, _, _) = make_blobs(n, d, k, 1.5, (-10.0, 10.0), seed).unwrap();
        let m = Matrix::new(&x, d).unwrap();
        let w: Vec<f32> = random(n, seed + 7).iter().map(|v| v + 0.25).collect();
        for (tol, init, weighted, metric) in [
            (0.0, KMeansInit::KMeansPlusPlus, false, Metric::Euclidean),
            (1e-4, KMeansInit::Random, true, Metric::Euclidean),
            (1e-3, KMeansInit::PARALLEL, false, Metric::Cosine),
            (0.0, KMeansInit::Random, true, Metric::Cosine),
        ] {
            // One restart: restarts that end at the same optimum may be kept in either
            // order by f32 rounding of their inertia.
            let params = KMeans::new(k)
                .init(init.clone())
                .tol(tol)
                .metric(metric)
                .seed(seed);
            let w = weighted.then_some(&w[..]);
            let (ahead, host) = both_ways(&gpu, &params, &m, w);
            let what = format!("n {n} d {d} k {k} tol {tol} {init} w {weighted} {metric:?}");
            assert!(host.n_iter() > 1, "{what}: a single iteration");
            assert_agree(&ahead, &host, 10.0, &what);
        }
    }
}

#[test]
fn every_count_of_iterations_ends_where_the_host_loop_does() {
    let gpu = gpu();
    let (n, d, k) = (800, 4, 6);
    let (x, _, _) = make_blobs(n, d, k, 3.0, (-5.0, 5.0), 11).unwrap();
    let m = Matrix::new(&x, d).unwrap();
    for max_iter in [1, 2, 3, 5] {
        for seed in [4u64, 5] {
            let params = KMeans::new(k)
                .init(KMeansInit::Random)
                .max_iter(max_iter)
                .tol(0.0)
                .seed(seed);
            let (ahead, host) = both_ways(&gpu, &params, &m, None);
            let what = format!("max_iter {max_iter} seed {seed}");
            assert_agree(&ahead, &host, 5.0, &what);
            assert_eq!(ahead.inertia_history().len(), ahead.n_iter(), "{what}");
            // The labels are those of the final centroids.
            assert_eq!(ahead.predict(&gpu, &m).unwrap(), ahead.labels(), "{what}");
        }
    }
}

#[test]
fn an_empty_cluster_is_repaired_on_the_device_as_the_host_repairs_it() {
    let gpu = gpu();
    for (seed, far) in [(2u64, 1e3), (3, -4e2)] {
        let (rows, _, _) = make_blobs(900, 2, 3, 0.5, (-5.0, 5.0), seed).unwrap();
        let m = Matrix::new(&rows, 2).unwrap();
        // The third centroid is far from every row: its cluster is empty after the first
        // pass, and the repair moves it onto the farthest row.
        let mut c: Vec<f64> = rows[..4].iter().map(|&v| v as f64).collect();
        c.extend([far, far]);
        for max_iter in [1, 2, 300] {
            let params = KMeans::new(3)
                .init(KMeansInit::Centroids(c.clone()))
                .max_iter(max_iter);
            take_host_repairs();
            let (ahead, host) = both_ways(&gpu, &params, &m, None);
            let what = format!("seed {seed} max_iter {max_iter}");
            assert_eq!(take_host_repairs(), 0, "{what}: the host repaired");
            assert_agree(&ahead, &host, 5.0, &what);
            assert!(ahead.centroids()[4].abs() < 100.0, "{what}: not repaired");
            assert_eq!(ahead.predict(&gpu, &m).unwrap(), ahead.labels(), "{what}");
        }
    }
}

/// Rows in two blobs and one outlier, the outlier alone in the cluster of a centroid far
/// from it (so it comes first in the repair's order, and is skipped: its cluster keeps no
/// other member), and `empty` centroids far from everything.
fn outlier_and_empty_clusters(seed: u64, empty: usize) -> (Vec<f32>, Vec<f64>) {
    let (mut rows, _, _) = make_blobs(1200, 2, 2, 0.6, (-4.0, 4.0), seed).unwrap();
    rows.extend([60.0, 61.0]);
    let mut c: Vec<f64> = rows[..4].iter().map(|&v| v as f64).collect();
    c.extend([35.0, 36.0]);
    for e in 0..empty {
        c.extend([-500.0 - 40.0 * e as f64, 300.0]);
    }
    (rows, c)
}

#[test]
fn the_device_repair_skips_a_lone_row_weighs_and_spans_chunks_as_the_host_does() {
    let one = gpu();
    let many = gpu();
    many.set_max_chunk_bytes(173 * 2 * 4);
    for seed in [5u64, 6] {
        let (rows, c) = outlier_and_empty_clusters(seed, 2);
        let m = Matrix::new(&rows, 2).unwrap();
        let n = rows.len() / 2;
        let w: Vec<f32> = random(n, seed).iter().map(|v| 0.5 + 2.0 * v).collect();
        for (gpu, weighted, max_iter) in [
            (&one, false, 300),
            (&one, true, 300),
            (&many, false, 4),
            (&many, true, 300),
        ] {
            let params = KMeans::new(5)
                .init(KMeansInit::Centroids(c.clone()))
                .max_iter(max_iter);
            let w = weighted.then_some(&w[..]);
            take_host_repairs();
            let (ahead, host) = both_ways(gpu, &params, &m, w);
            let what = format!("seed {seed} weighted {weighted} max_iter {max_iter}");
            assert_eq!(take_host_repairs(), 0, "{what}: the host repaired");
            assert_agree(&ahead, &host, 60.0, &what);
            // The lone outlier kept its cluster; the empty ones took rows of the blobs.
            let cents = ahead.centroids();
            assert!(cents.iter().all(|v| v.abs() < 100.0), "{what}: {cents:?}");
        }
    }
}

#[test]
fn more_empty_clusters_than_the_device_repairs_go_to_the_host_and_agree() {
    let gpu = gpu();
    for (seed, empty, fixed) in [(7u64, 9, false), (8, 12, true)] {
        let (rows, c) = outlier_and_empty_clusters(seed, empty);
        let m = Matrix::new(&rows, 2).unwrap();
        let params = KMeans::new(3 + empty)
            .init(KMeansInit::Centroids(c))
            .max_iter(20)
            .fixed_iterations(fixed);
        take_host_repairs();
        let (ahead, host) = both_ways(&gpu, &params, &m, None);
        let what = format!("seed {seed} empty {empty}");
        assert!(take_host_repairs() >= 1, "{what}: no host repair");
        assert_agree(&ahead, &host, 60.0, &what);
        assert_eq!(ahead.predict(&gpu, &m).unwrap(), ahead.labels(), "{what}");
    }
}

#[test]
fn a_spherical_empty_cluster_is_repaired_on_the_device() {
    let gpu = gpu();
    for seed in [9u64, 10] {
        // Directions in the first quadrant; one centroid points away from all of them.
        let x: Vec<f32> = random(2 * 700, seed).iter().map(|v| v + 0.05).collect();
        let m = Matrix::new(&x, 2).unwrap();
        let mut c: Vec<f64> = x[..4].iter().map(|&v| v as f64).collect();
        c.extend([-1.0, -1.0]);
        let params = KMeans::new(3)
            .init(KMeansInit::Centroids(c))
            .metric(Metric::Cosine)
            .tol(0.0);
        take_host_repairs();
        let (ahead, host) = both_ways(&gpu, &params, &m, None);
        let what = format!("seed {seed}");
        assert_eq!(take_host_repairs(), 0, "{what}: the host repaired");
        assert_agree(&ahead, &host, 1.0, &what);
        for row in ahead.centroids().chunks(2) {
            let norm = (row[0] * row[0] + row[1] * row[1]).sqrt();
            assert!((norm - 1.0).abs() < 1e-5 && row[0] > 0.0, "{what}: {row:?}");
        }
    }
}

#[test]
fn a_stop_from_the_callback_keeps_the_centroids_of_that_iteration() {
    let gpu = gpu();
    let (n, d, k) = (1200, 5, 8);
    let (x, _, _) = make_blobs(n, d, k, 2.5, (-6.0, 6.0), 21).unwrap();
    let m = Matrix::new(&x, d).unwrap();
    for stop_at in [1usize, 2, 4] {
        let seen = Arc::new(AtomicUsize::new(0));
        let count = seen.clone();
        let params = KMeans::new(k)
            .init(KMeansInit::Random)
            .tol(0.0)
            .seed(9)
            .n_init(3)
            .on_iteration(move |it| {
                count.fetch_add(1, Ordering::Relaxed);
                match it.iteration >= stop_at {
                    true => ControlFlow::Break(()),
                    false => ControlFlow::Continue(()),
                }
            });
        let (ahead, host) = both_ways(&gpu, &params, &m, None);
        let what = format!("stop at {stop_at}");
        assert_eq!(ahead.n_iter(), stop_at, "{what}");
        assert!(!ahead.converged(), "{what}");
        assert_agree(&ahead, &host, 6.0, &what);
        assert_eq!(ahead.predict(&gpu, &m).unwrap(), ahead.labels(), "{what}");
        // Each way saw the same iterations: the stop skipped the later restarts.
        assert_eq!(seen.load(Ordering::Relaxed), 2 * stop_at, "{what}");
    }
}

#[test]
fn the_loop_ahead_gives_the_same_bits_each_time() {
    let gpu = gpu();
    let (n, d, k) = (2000, 16, 24);
    let x: Vec<f32> = random(n * d, 31).iter().map(|v| v * 8.0 - 3.0).collect();
    let m = Matrix::new(&x, d).unwrap();
    for seed in [1u64, 2] {
        let params = KMeans::new(k).seed(seed).n_init(2);
        let (a, b) = (params.fit(&gpu, &m).unwrap(), params.fit(&gpu, &m).unwrap());
        assert!(a.n_iter() > 2, "seed {seed}");
        assert_eq!(a.labels(), b.labels(), "seed {seed}");
        assert_eq!(bits(a.centroids()), bits(b.centroids()), "seed {seed}");
        assert_eq!(a.inertia().to_bits(), b.inertia().to_bits(), "seed {seed}");
    }
}

#[test]
fn a_fixed_count_runs_every_iteration_as_the_host_loop_does() {
    let gpu = gpu();
    let (n, d, k) = (1000, 4, 5);
    for seed in [12u64, 13] {
        let (x, _, _) = make_blobs(n, d, k, 0.8, (-8.0, 8.0), seed).unwrap();
        let m = Matrix::new(&x, d).unwrap();
        let params = KMeans::new(k).init(KMeansInit::Random).seed(seed);
        let early = params.clone().max_iter(15).fit(&gpu, &m).unwrap();
        assert!(early.n_iter() < 15 && early.converged(), "seed {seed}");
        let fixed = params.clone().max_iter(15).fixed_iterations(true);
        let (ahead, host) = both_ways(&gpu, &fixed, &m, None);
        let what = format!("fixed, seed {seed}");
        assert_eq!(ahead.n_iter(), 15, "{what}");
        assert!(!ahead.converged(), "{what}");
        assert_eq!(ahead.inertia_history().len(), 15, "{what}");
        assert_agree(&ahead, &host, 8.0, &what);
        // Past convergence the labels stay those of the early stop.
        assert_eq!(ahead.labels(), early.labels(), "{what}");
        let again = fixed.fit(&gpu, &m).unwrap();
        assert_eq!(bits(again.centroids()), bits(ahead.centroids()), "{what}");

        // Empty clusters met with several submissions in flight: three repaired on the
        // device, the count still exact.
        let mut c: Vec<f64> = x[..2 * d].iter().map(|&v| v as f64).collect();
        c.extend(vec![1e3; (k - 2) * d]);
        let empty = KMeans::new(k)
            .init(KMeansInit::Centroids(c))
            .max_iter(7)
            .fixed_iterations(true);
        let (ahead, host) = both_ways(&gpu, &empty, &m, None);
        let what = format!("fixed, empty clusters, seed {seed}");
        assert_eq!(ahead.n_iter(), 7, "{what}");
        assert_agree(&ahead, &host, 8.0, &what);
        assert_eq!(ahead.predict(&gpu, &m).unwrap(), ahead.labels(), "{what}");

        // The callback's stop with submissions in flight keeps that iteration's centroids.
        let stop = fixed.clone().on_iteration(|it| match it.iteration >= 3 {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        });
        let (ahead, host) = both_ways(&gpu, &stop, &m, None);
        let what = format!("fixed, stopped, seed {seed}");
        assert_eq!(ahead.n_iter(), 3, "{what}");
        assert_agree(&ahead, &host, 8.0, &what);
        assert_eq!(ahead.predict(&gpu, &m).unwrap(), ahead.labels(), "{what}");
    }
}

#[test]
fn a_fixed_count_without_a_callback_reads_back_at_window_ends_only() {
    let gpu = gpu();
    let (n, d, k) = (600, 3, 7);
    let (x, _, _) = make_blobs(n, d, k, 1.0, (-6.0, 6.0), 41).unwrap();
    let m = Matrix::new(&x, d).unwrap();
    let c: Vec<f64> = x[..k * d].iter().map(|&v| v as f64).collect();
    let max_iter = 150;
    let fixed = KMeans::new(k)
        .init(KMeansInit::Centroids(c))
        .max_iter(max_iter)
        .fixed_iterations(true);
    // The wall clock, not timestamps: those come back with every batch.
    let readbacks = |params: &KMeans| {
        let (model, profile) = gpu
            .profile(ProfileClock::WallClock, || params.fit(&gpu, &m))
            .unwrap();
        (model, profile.host)
    };
    // The first fit tunes the kernels for this shape (timing them reads back).
    readbacks(&fixed.clone().max_iter(1));
    let (_, one) = readbacks(&fixed.clone().max_iter(1));
    let (quiet, host) = readbacks(&fixed);
    // Reports come back after passes 0 and 1 of one iteration; of 150, after passes 0, 1, 3,
    // 7, 15, 31, 63, 127 and 150. The rest (the fit's setup, its labels and centroids) is
    // the same.
    assert_eq!(host.readbacks - one.readbacks, 9 - 2, "{host:?} {one:?}");
    // And a window is one submission.
    assert_eq!(
        host.submissions - one.submissions,
        9 - 2,
        "{host:?} {one:?}"
    );
    // With a callback each pass reports; both give the same model.
    let told = fixed.clone().on_iteration(|_| ControlFlow::Continue(()));
    let (loud, host) = readbacks(&told);
    assert!(host.readbacks > max_iter, "{host:?}");
    assert_eq!(quiet.n_iter(), max_iter);
    assert_eq!(quiet.inertia_history(), loud.inertia_history());
    assert_eq!(bits(quiet.centroids()), bits(loud.centroids()));
    assert_eq!(quiet.labels(), loud.labels());
    // And the host loop agrees.
    assert_agree(
        &quiet,
        &with_host_loop(|| fixed.fit(&gpu, &m)).unwrap(),
        6.0,
        "fixed",
    );
}

#[test]
fn windows_double_to_the_history_then_stay() {
    let ends: Vec<usize> = (0..300).filter(|&q| window_end(q) == q).collect();
    assert_eq!(ends, [0, 1, 3, 7, 15, 31, 63, 127, 191, 255]);
    for q in 0..1000 {
        let end = window_end(q);
        assert!(end >= q && window_end(end) == end, "q {q}");
        // No window is longer than the history, nor longer than what came before it.
        assert!(end - q < HISTORY_STEPS && end - q <= q, "q {q}");
    }
}

#[test]
fn a_host_repair_doubles_what_later_steps_repair_on_the_device() {
    let gpu = gpu();
    // Three points, each repeated: every centroid lands on one of them, so most clusters
    // empty again at every step (ties go to the lowest index). The start (all centroids on
    // the first point) empties seven, past the four a step repairs on the device: the host
    // repairs them once, and the later steps' five empty clusters fit the doubled rounds.
    let points = [[0.0f32, 0.0], [10.0, 0.0], [0.0, 10.0]];
    let x: Vec<f32> = (0..300).flat_map(|i| points[i % 3]).collect();
    let m = Matrix::new(&x, 2).unwrap();
    let params = KMeans::new(8)
        .init(KMeansInit::Centroids(vec![0.0; 16]))
        .max_iter(6)
        .fixed_iterations(true);
    take_host_repairs();
    let (ahead, host) = both_ways(&gpu, &params, &m, None);
    assert_eq!(take_host_repairs(), 1, "host repairs");
    // Every point is a centroid (inertia 0 both ways): the same centroids and labels.
    assert_eq!(ahead.n_iter(), host.n_iter());
    assert_eq!(ahead.inertia(), 0.0);
    assert_eq!(host.inertia(), 0.0);
    assert_eq!(ahead.labels(), host.labels());
    assert_eq!(bits(ahead.centroids()), bits(host.centroids()));
}
