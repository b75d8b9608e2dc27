//! The K-Means workspace's step in the GPU design (forced on any adapter): a whole fit with the
//! assignment and the update fused in one kernel (`assign_rows_update`) and apart
//! (`assign_stream`, then the sliced `accumulate_cluster_partials`) gives the same bits; so
//! does a fit whose pipelines keep every runtime check against one with the checks the
//! shaders declare.
//! Fits through the sorted update (the GPU design's own summation order) agree with one
//! Lloyd step in f64, with the same fits with the sorted update forced off, and with the CPU
//! adapters' design.

use crate::datasets::make_blobs;
use crate::gpu::tests::{gpu, random};
use crate::gpu::ProfileClock;
use crate::kernels::assign::{with_variant, AssignVariant};
use crate::kernels::centroids::update::with_sorted;
use crate::kernels::primitives::gemm::with_design;
use crate::{KMeans, KMeansInit, Matrix};

/// Values in [−3, 5): signs of both kinds, so deviations and sums cancel.
fn data(len: usize, seed: u64) -> Vec<f32> {
    random(len, seed).iter().map(|v| v * 8.0 - 3.0).collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

#[test]
fn a_fit_in_the_gpu_design_has_the_same_bits_fused_and_apart() {
    let gpu = gpu();
    // Workspace blocks of 256 rows: several, the last one short.
    for (n, d, k, seed) in [(1100, 5, 4, 1u64), (700, 64, 16, 2), (600, 17, 10, 3)] {
        let x = data(n * d, seed);
        let w: Vec<f32> = random(n, seed + 1).iter().map(|v| v + 0.25).collect();
        let m = Matrix::new(&x, d).unwrap();
        for weighted in [false, true] {
            let fit = |fused: bool| {
                with_design(false, || {
                    let variant = match fused {
                        true => AssignVariant::RowsUpdate,
                        false => AssignVariant::Stream,
                    };
                    // Apart, the sliced update: the order the fused kernel keeps.
                    with_variant(variant, || {
                        with_sorted(false, || {
                            let params = KMeans::new(k)
                                .init(KMeansInit::default_for(k))
                                .n_init(2)
                                .max_iter(30)
                                .seed(seed);
                            gpu.profile(ProfileClock::WallClock, || match weighted {
                                true => params.fit_weighted(&gpu, &m, &w),
                                false => params.fit(&gpu, &m),
                            })
                            .unwrap()
                        })
                    })
                })
            };
            let ((fused, fused_profile), (apart, apart_profile)) = (fit(true), fit(false));
            let ran = |p: &crate::gpu::Profile, kernel: &str| {
                p.dispatches.iter().any(|r| r.kernel.contains(kernel))
            };
            let what = format!("N {n} D {d} K {k} weighted {weighted}");
            assert!(
                ran(&fused_profile, "assign_rows_update"),
                "{what}: not fused"
            );
            assert!(
                !ran(&fused_profile, "accumulate_cluster_partials"),
                "{what}"
            );
            assert!(!ran(&apart_profile, "assign_rows_update"), "{what}");
            assert!(
                ran(&apart_profile, "assign_stream"),
                "{what}: not the GPU design"
            );
            assert!(fused.n_iter() > 1, "{what}: a single iteration");
            assert_eq!(fused.labels(), apart.labels(), "labels, {what}");
            assert_eq!(bits(fused.centroids()), bits(apart.centroids()), "{what}");
            assert_eq!(
                fused.inertia().to_bits(),
                apart.inertia().to_bits(),
                "{what}"
            );
            assert_eq!(fused.n_iter(), apart.n_iter(), "{what}");
        }
    }
}

#[test]
fn a_fit_has_the_same_bits_with_every_runtime_check_and_with_the_declared_ones() {
    let (n, d) = (900, 12);
    let x = data(n * d, 77);
    let m = Matrix::new(&x, d).unwrap();
    // K = 20 takes the tiled GEMM form in the GPU design, K = 5 the fused kernel.
    for (k, cpu_like) in [(20, false), (5, false), (20, true)] {
        let fit = |all: bool| {
            let gpu = gpu();
            gpu.cache.set_all_checks(all);
            with_design(cpu_like, || {
                KMeans::new(k).seed(3).n_init(1).fit(&gpu, &m).unwrap()
            })
        };
        let (declared, checked) = (fit(false), fit(true));
        let what = format!("k {k} cpu_like {cpu_like}");
        assert!(declared.n_iter() > 1, "{what}");
        assert_eq!(declared.labels(), checked.labels(), "{what}");
        assert_eq!(
            bits(declared.centroids()),
            bits(checked.centroids()),
            "{what}"
        );
        assert_eq!(
            declared.inertia().to_bits(),
            checked.inertia().to_bits(),
            "{what}"
        );
    }
}

/// One Lloyd step in f64 from `init`: every row to its nearest centroid, then the (weighted)
/// means of the clusters.
fn lloyd_step(x: &[f32], d: usize, init: &[f64], w: Option<&[f32]>) -> Vec<f64> {
    let k = init.len() / d;
    let mut sums = vec![0.0f64; k * d];
    let mut weights = vec![0.0f64; k];
    for (r, row) in x.chunks(d).enumerate() {
        let dist = |c: usize| -> f64 {
            (0..d)
                .map(|j| (row[j] as f64 - init[c * d + j]).powi(2))
                .sum()
        };
        let c = (0..k).min_by(|&a, &b| dist(a).total_cmp(&dist(b))).unwrap();
        let wr = w.map_or(1.0, |w| w[r] as f64);
        weights[c] += wr;
        for j in 0..d {
            sums[c * d + j] += wr * row[j] as f64;
        }
    }
    sums.iter()
        .enumerate()
        .map(|(i, s)| s / weights[i / d])
        .collect()
}

#[test]
fn fits_through_the_sorted_update_match_a_lloyd_step_in_f64_and_the_cpu_design() {
    let gpu = gpu();
    // K > 256 (the tiled assignment), K ≤ 16 past the fused kernel's D (assign_stream), D = 1
    // and D = 257, weighted rows, N not a multiple of any workgroup.
    for (n, d, k, weighted, seed) in [
        (1200, 20, 300, false, 5u64),
        (901, 100, 10, true, 6),
        (700, 257, 3, false, 7),
        (1000, 1, 20, true, 8),
        // K = 1000 on 5000 weighted rows: runs of a few rows, some clusters empty.
        (5000, 8, 1000, true, 9),
    ] {
        // Blobs, so the fits in both designs settle on the same clusters.
        let (x, _, _) = make_blobs(n, d, k, 0.3, (-10.0, 10.0), seed).unwrap();
        let w: Vec<f32> = random(n, seed + 1).iter().map(|v| v + 0.25).collect();
        let m = Matrix::new(&x, d).unwrap();
        let fit = |cpu_like: bool, params: &KMeans| {
            with_design(cpu_like, || {
                let run = || match weighted {
                    true => params.fit_weighted(&gpu, &m, &w),
                    false => params.fit(&gpu, &m),
                };
                gpu.profile(ProfileClock::WallClock, run).unwrap()
            })
        };
        let what = format!("N {n} D {d} K {k} weighted {weighted}");
        // One step from the first K rows.
        let init: Vec<f64> = x[..k * d].iter().map(|&v| v as f64).collect();
        let one = KMeans::new(k)
            .init(KMeansInit::Centroids(init.clone()))
            .max_iter(1)
            .tol(0.0);
        let (step, profile) = fit(false, &one);
        assert!(
            profile
                .dispatches
                .iter()
                .any(|r| r.kernel == "segment_partials"),
            "{what}: not the sorted update"
        );
        let want = lloyd_step(&x, d, &init, weighted.then_some(&w[..]));
        for (i, (&got, &want)) in step.centroids().iter().zip(&want).enumerate() {
            assert!(
                (got as f64 - want).abs() <= 1e-5 * want.abs().max(1.0),
                "{what}: centroid value {i}: {got} vs {want}"
            );
        }
        // Whole fits: the GPU design (twice: the same bits), the GPU design with the sorted
        // update forced off (the same assignments, the sliced update) and the CPU adapters'
        // design.
        let params = KMeans::new(k).n_init(1).max_iter(20).seed(seed);
        let (gpu_fit, profile) = fit(false, &params);
        let (again, _) = fit(false, &params);
        let (unsorted, unsorted_profile) = with_sorted(false, || fit(false, &params));
        let (cpu_fit, _) = fit(true, &params);
        assert_eq!(bits(gpu_fit.centroids()), bits(again.centroids()), "{what}");
        assert_eq!(gpu_fit.labels(), again.labels(), "{what}");
        let ran =
            |p: &crate::gpu::Profile, kernel: &str| p.dispatches.iter().any(|r| r.kernel == kernel);
        assert!(ran(&profile, "segment_partials"), "{what}: not sorted");
        assert!(
            !ran(&unsorted_profile, "segment_partials"),
            "{what}: sorted"
        );
        assert!(gpu_fit.n_iter() > 1, "{what}: a single iteration");
        // Other summation orders: the same clusters, centroids within f32 rounding (a near
        // tie may flip a rare row).
        for (other, name) in [(&unsorted, "sorted off"), (&cpu_fit, "CPU design")] {
            let what = format!("{what}, against {name}");
            let differ = (gpu_fit.labels().iter())
                .zip(other.labels())
                .filter(|(a, b)| a != b)
                .count();
            assert!(differ <= n / 500, "{what}: {differ} labels differ");
            let rel = (gpu_fit.inertia() - other.inertia()).abs() / other.inertia();
            assert!(rel < 1e-5, "{what}: inertia {rel}");
            for (&a, &b) in gpu_fit.centroids().iter().zip(other.centroids()) {
                assert!(
                    (a - b).abs() <= 1e-4 * b.abs().max(1.0),
                    "{what}: {a} vs {b}"
                );
            }
        }
    }
}
