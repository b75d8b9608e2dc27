//! The Lloyd loop ahead on the device against the host loop (`lloyd.rs`, forced with
//! `with_host_loop`): the same iterations, decisions and labels, centroids and inertia equal to
//! f32 rounding, for each way a run ends (strict convergence, tolerance, `max_iter`, an
//! empty cluster repaired, the callback's stop), weighted and spherical; and the same bits
//! from run to run.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::lloyd::with_host_loop;
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
fn an_empty_cluster_is_repaired_on_the_host_and_the_loop_goes_on() {
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
            let (ahead, host) = both_ways(&gpu, &params, &m, None);
            let what = format!("seed {seed} max_iter {max_iter}");
            assert_agree(&ahead, &host, 5.0, &what);
            assert!(ahead.centroids()[4].abs() < 100.0, "{what}: not repaired");
            assert_eq!(ahead.predict(&gpu, &m).unwrap(), ahead.labels(), "{what}");
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

        // An empty cluster met with several submissions in flight: repaired on the host,
        // the count still exact.
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
