//! The K-Means workspace's step in the GPU design (forced on any adapter): a whole fit with the
//! assignment and the update fused in one kernel (`assign_rows_update`) and apart
//! (`assign_stream`, then `accumulate_cluster_partials`) gives the same bits; so does a fit
//! whose pipelines keep every runtime check against one with the checks the shaders declare.

use crate::gpu::tests::{gpu, random};
use crate::gpu::ProfileClock;
use crate::kernels::assign::{with_variant, AssignVariant};
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
                    with_variant(variant, || {
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
