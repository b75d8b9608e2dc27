//! The profiler: every dispatch timed (timestamps where the device has them, else the wall
//! clock), its work counted by the cost model, results unchanged, misuse an error.

use crate::common::{gpu, random_matrix, to_f64};
use wgpu_unsupervised::gpu::profile::{Bound, Clock, HostActivity, TRANSFERS};
use wgpu_unsupervised::{
    Components, CovarianceType, Error, GaussianMixture, GmmInit, Gpu, KMeans, KMeansInit, Matrix,
    Pca, PcaSolver, ProfileClock,
};

fn fit(gpu: &Gpu, n: usize, d: usize, k: usize, seed: u64) -> wgpu_unsupervised::KMeansModel {
    let x = random_matrix(n, d, seed, -3.0, 3.0);
    let init = to_f64(&x[..k * d]);
    let m = Matrix::new(&x, d).unwrap();
    KMeans::new(k)
        .init(KMeansInit::Centroids(init))
        .tol(0.0)
        .max_iter(4)
        .fit(gpu, &m)
        .unwrap()
}

/// FLOPs of one dispatch of assignment entry point `kernel` over n rows of d features and
/// k centroids: 2·n·d·k for the distances; the fused assignment and centroid update
/// (`assign_rows_update`, the GPU designs' small-K path) adds the update's w·(x − c) and sum,
/// 2·n·d.
fn assignment_flops(kernel: &str, n: usize, d: usize, k: usize) -> f64 {
    let distances = 2.0 * (n * d * k) as f64;
    match kernel {
        "assign_rows_update" => distances + 2.0 * (n * d) as f64,
        _ => distances,
    }
}

#[test]
fn profiles_every_dispatch_and_leaves_results_unchanged() {
    let gpu = gpu();
    // Both assignment kernels: few centroids (one row per invocation) and many (tiled).
    for (n, d, k, seed) in [(3000, 12, 5, 1), (2000, 40, 70, 2)] {
        let plain = fit(&gpu, n, d, k, seed);
        for clock in [ProfileClock::Auto, ProfileClock::WallClock] {
            let (model, profile) = gpu.profile(clock, || Ok(fit(&gpu, n, d, k, seed))).unwrap();
            assert_eq!(model.centroids(), plain.centroids(), "{clock:?}");
            assert_eq!(model.labels(), plain.labels());
            assert_eq!(model.inertia(), plain.inertia());
            let expected = match clock {
                ProfileClock::Auto if gpu.supports_timestamps() => Clock::Timestamps,
                _ => Clock::WallClock,
            };
            assert_eq!(profile.clock, expected);
            assert!(profile.dispatches.iter().all(|r| r.seconds >= 0.0));
            assert!(profile.gpu_seconds() > 0.0);
            assert!(profile.wall_seconds > 0.0);
            let kernels = profile.kernels();
            // The assignment itself, not the exact recheck of its undecided rows (which
            // `assign_recheck` or, on CPU-like adapters, the uniform kernel does with work
            // unknown when recorded, counted as none). Which variant runs depends on the
            // adapter (the GPU designs fuse the assignment with the centroid update), so the
            // expected count follows the entry points that were dispatched.
            let assignments: Vec<_> = kernels
                .iter()
                .filter(|s| {
                    s.kernel.starts_with("assign_")
                        && s.kernel != "assign_recheck"
                        && s.work.flops > 0.0
                })
                .collect();
            assert!(!assignments.is_empty(), "no assignment in {kernels:?}");
            // One assignment per Lloyd iteration and the final one (one chunk of data).
            let calls: usize = assignments.iter().map(|s| s.calls).sum();
            assert_eq!(calls, model.n_iter() + 1, "{assignments:?}");
            for s in &assignments {
                assert_eq!(
                    s.work.flops,
                    s.calls as f64 * assignment_flops(s.kernel, n, d, k),
                    "{s:?}"
                );
                assert!(s.work.bytes >= s.calls as f64 * 4.0 * (n * d) as f64);
            }
            // The centroid update: its own kernels (per-block accumulation, or the sorted
            // update's segment sums on GPUs such as an H200), or fused into the assignment.
            assert!(
                kernels.iter().any(|s| s.kernel.starts_with("accumulate_")
                    || s.kernel == "segment_partials"
                    || s.kernel == "assign_rows_update"),
                "no centroid update in {kernels:?}"
            );
            // The kernels are sorted by time and their sums add up.
            assert!(kernels.windows(2).all(|w| w[0].seconds >= w[1].seconds));
            let sum: f64 = kernels.iter().map(|s| s.seconds).sum();
            assert!((sum - profile.gpu_seconds()).abs() <= 1e-9 * sum.max(1.0));
            // Clears and copies are timed on their own only by the wall clock.
            let transfers = kernels.iter().any(|s| s.kernel == TRANSFERS);
            assert_eq!(transfers, profile.clock == Clock::WallClock);
        }
    }
}

#[test]
fn efficiency_is_the_roofline_bound_over_the_time() {
    let gpu = gpu();
    let (n, d) = (4000, 64);
    let data = random_matrix(n, d, 9, 0.0, 1.0);
    let x = Matrix::new(&data, d).unwrap();
    let (_, profile) = gpu
        .profile(ProfileClock::Auto, || {
            Pca::new(Components::Count(3)).fit(&gpu, &x)
        })
        .unwrap();
    let ceilings = gpu.measure_ceilings().unwrap();
    let table = profile.table(Some(&ceilings));
    for s in profile.kernels() {
        assert!(table.contains(s.kernel), "{table}");
        let (bound, e) = s.efficiency(&ceilings);
        let (b, least) = s.work.roofline(&ceilings);
        assert_eq!(bound, b);
        assert!((e - least / s.seconds).abs() <= 1e-12 * e.max(1.0) || s.seconds == 0.0);
        let compute = s.work.flops / (ceilings.peak_gflops * 1e9);
        let memory = s.work.bytes / (ceilings.peak_gbps * 1e9);
        assert_eq!(bound == Bound::Compute, compute >= memory, "{s:?}");
    }
    // The covariance's Gram product, whichever variant the autotuner picked, does the
    // upper triangle's products and the shifts' subtractions over every row.
    let gram: f64 = profile
        .kernels()
        .iter()
        .filter(|s| s.kernel.starts_with("gram_"))
        .map(|s| s.work.flops)
        .sum();
    assert_eq!(gram, (n * (d * (d + 1) + 2 * d)) as f64);
    assert!(table.contains(profile.clock.name()));
}

#[test]
fn profiling_misuse_is_an_error() {
    let gpu = gpu();
    assert!(matches!(gpu.finish_profiling(), Err(Error::Gpu(m)) if m.contains("no profile")));
    gpu.start_profiling(ProfileClock::WallClock).unwrap();
    assert!(matches!(
        gpu.start_profiling(ProfileClock::Auto),
        Err(Error::Gpu(m)) if m.contains("already running")
    ));
    let profile = gpu.finish_profiling().unwrap();
    assert!(profile.dispatches.is_empty());
    assert_eq!(profile.gpu_seconds(), 0.0);
    // A failing piece of work still ends the profile.
    let failed = gpu.profile(ProfileClock::Auto, || {
        KMeans::new(10).fit(&gpu, &Matrix::new(&[1.0; 6], 2).unwrap())
    });
    assert!(
        matches!(failed, Err(Error::TooFewSamples { .. })),
        "{failed:?}"
    );
    gpu.start_profiling(ProfileClock::Auto).unwrap();
    gpu.finish_profiling().unwrap();
}

/// The host's side of a profile: every submission and readback counted, and the time the
/// host sat blocked, within the wall time. A resident K-Means fit reads back at most once an
/// iteration (its loop runs ahead of the host), an EM iteration once (its statistics).
#[test]
fn the_host_side_of_a_profile_counts_submissions_readbacks_and_waits() {
    let gpu = gpu();
    let (n, d, k) = (4000, 10, 6);
    for seed in [7u64, 8] {
        let x = random_matrix(n, d, seed, -3.0, 3.0);
        let m = Matrix::new(&x, d).unwrap();
        for max_iter in [1usize, 6] {
            let fit = || {
                KMeans::new(k)
                    .init(KMeansInit::Centroids(to_f64(&x[..k * d])))
                    .tol(0.0)
                    .max_iter(max_iter)
                    .fit(&gpu, &m)
            };
            // Unprofiled first: the autotuner's trials of a new shape are not the fit's.
            fit().unwrap();
            let (model, p) = gpu.profile(ProfileClock::Auto, fit).unwrap();
            let (it, h) = (model.n_iter(), p.host);
            // One readback a submission of the loop: a pass per iteration, the last pass
            // (which labels), and at most one more already in flight when the device
            // decided to stop. Then the centroids, then the labels with the distances.
            assert!(
                (it + 1..=it + 4).contains(&h.readbacks),
                "K-Means, seed {seed}: {h:?} for {it} iterations"
            );
            assert!(h.submissions >= h.readbacks, "{h:?}");
            assert!(
                h.wait_seconds > 0.0 && h.wait_seconds <= p.wall_seconds,
                "{h:?}"
            );
        }
        for t in [CovarianceType::Diag, CovarianceType::Full] {
            let fit = || {
                // A random start: the default's K-Means fit is K-Means' own readbacks.
                GaussianMixture::new(3)
                    .init(GmmInit::Random)
                    .covariance(t)
                    .max_iter(5)
                    .tol(0.0)
                    .seed(seed)
                    .fit(&gpu, &m)
            };
            fit().unwrap();
            let (model, p) = gpu.profile(ProfileClock::Auto, fit).unwrap();
            let (it, h) = (model.n_iter(), p.host);
            // Each EM iteration reads its statistics back (a second time where the one-pass
            // moments would cancel); the start and the final labels read a few more.
            assert!(
                h.readbacks >= it && h.readbacks <= 2 * it + 8,
                "GMM {t:?}, seed {seed}: {h:?} for {it} iterations"
            );
            assert!(
                h.wait_seconds > 0.0 && h.wait_seconds <= p.wall_seconds,
                "{h:?}"
            );
        }
    }
    // Nothing done, nothing counted.
    let ((), idle) = gpu.profile(ProfileClock::Auto, || Ok(())).unwrap();
    assert_eq!(idle.host, HostActivity::default());
}

#[test]
fn the_dense_power_iteration_takes_its_products_on_the_device_between_checks() {
    let gpu = gpu();
    let (n, d, m) = (3000, 48, 4);
    for seed in [11u64, 12] {
        // Feature scales decaying slowly: close eigenvalues, many products to converge.
        let x: Vec<f32> = random_matrix(n, d, seed, -1.0, 1.0)
            .into_iter()
            .enumerate()
            .map(|(e, v)| v / (1.0 + 0.04 * (e % d) as f32))
            .collect();
        let data = Matrix::new(&x, d).unwrap();
        let params = Pca::new(Components::Count(m))
            .solver(PcaSolver::Power)
            .seed(seed);
        let fit = || params.fit(&gpu, &data);
        fit().unwrap();
        let (model, p) = gpu.profile(ProfileClock::Auto, fit).unwrap();
        let (it, h) = (model.n_iter(), p.host);
        // The moments and the covariance take one round trip; then one per check (which reads
        // back p x p matrices only), a check follows many products, and the Ritz vectors come
        // back once.
        assert!(it >= 12, "seed {seed}: {it} products converge this data");
        // S formed on the device from the co-moment that stayed there, each check reduced
        // to p x p matrices on the device, several products orthonormalised between.
        let calls = |name: &str| {
            p.kernels()
                .iter()
                .find(|s| s.kernel == name)
                .map_or(0, |s| s.calls)
        };
        assert_eq!(calls("covariance_from_comoment"), 1, "seed {seed}");
        assert_eq!(calls("comoment_diagonal"), 1, "seed {seed}");
        assert!(calls("project_block") >= 2, "seed {seed}");
        // The factorisation in workgroup memory where it fits the adapter, else global.
        assert!(
            calls("cholesky_inverse") + calls("cholesky_inverse_shared") >= 1,
            "seed {seed}"
        );
        assert!(
            h.readbacks <= 8 && 2 * h.readbacks <= it,
            "seed {seed}: {h:?} for {it} products"
        );
    }
}
