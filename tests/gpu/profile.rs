//! The profiler: every dispatch timed (timestamps where the device has them, else the wall
//! clock), its work counted by the cost model, results unchanged, misuse an error.

use crate::common::{gpu, random_matrix, to_f64};
use wgpu_unsupervised::gpu::profile::{Bound, Clock, TRANSFERS};
use wgpu_unsupervised::{Components, Error, Gpu, KMeans, KMeansInit, Matrix, Pca, ProfileClock};

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
            // unknown when recorded, counted as none).
            let assign = kernels
                .iter()
                .find(|s| {
                    s.kernel.starts_with("assign_")
                        && s.kernel != "assign_recheck"
                        && s.work.flops > 0.0
                })
                .unwrap_or_else(|| panic!("no assignment in {kernels:?}"));
            // One assignment per Lloyd iteration and the final one, each 2·n·d·k FLOPs.
            assert!(assign.calls >= 4, "{assign:?}");
            assert_eq!(
                assign.work.flops,
                assign.calls as f64 * 2.0 * (n * d * k) as f64
            );
            assert!(assign.work.bytes >= assign.calls as f64 * 4.0 * (n * d) as f64);
            assert!(kernels.iter().any(|s| s.kernel.starts_with("accumulate_")));
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
