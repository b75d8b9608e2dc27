//! The autotuner's clock and its cache file across `Gpu`s (as across processes): every test
//! sets a temporary directory of its own, never the environment or the user's cache.

use crate::data::Matrix;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::tests::{gpu, random};
use crate::gpu::tuning::{TuningCache, Variant};
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::assign::{record_assign, AssignScratch, AssignVariant, Assignment};
use crate::kernels::primitives::gemm::GemmConfig;

/// Variants to tune among, by name.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Trial {
    Slow,
    Fast,
    Other,
}
use Trial::{Fast, Other, Slow};

impl Variant for Trial {
    const FAMILY: &'static str = "test kernel";
    fn name(self) -> &'static str {
        match self {
            Slow => "slow",
            Fast => "fast",
            Other => "other",
        }
    }
}

/// A device whose tuner keeps its choices in `dir`.
fn gpu_caching_in(dir: &std::path::Path) -> Gpu {
    let gpu = gpu();
    gpu.set_tuning_cache(TuningCache::Directory(dir.to_path_buf()));
    gpu
}

/// Tunes a 100 x 300 shape with `Fast` faster than the others; returns the choice and the
/// trials run.
fn tune(gpu: &Gpu, candidates: &[Trial]) -> (Trial, usize) {
    let mut trials = 0;
    let chosen = gpu
        .tuned(candidates, (100, 300), |v| {
            trials += 1;
            Ok(if v == Fast { 1.0 } else { 2.0 })
        })
        .unwrap();
    (chosen, trials)
}

#[test]
fn a_choice_is_read_by_the_next_gpu_without_timing() {
    let dir = tempfile::tempdir().unwrap();
    let first = gpu_caching_in(dir.path());
    let file = first.tuning_cache_file().unwrap();
    assert!(file.starts_with(dir.path()) && !file.exists());
    assert_eq!(tune(&first, &[Slow, Fast]), (Fast, 6));
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("test kernel [slow|fast]\t128\t512\tfast"));
    // A second device on the same adapter, as a second process would open it.
    let second = gpu_caching_in(dir.path());
    assert_eq!(second.tuning_cache_file(), Some(file));
    let chosen = second
        .tuned(&[Slow, Fast], (128, 257), |_| {
            panic!("timed although the cache has the choice")
        })
        .unwrap();
    assert_eq!(chosen, Fast);
    assert_eq!(
        second.tuning_choices(),
        [(
            "test kernel [slow|fast]".into(),
            "128x512".into(),
            "fast".into()
        )]
    );
    // Other candidates make another choice, timed anew.
    let third = gpu_caching_in(dir.path());
    assert_eq!(tune(&third, &[Slow, Other]), (Slow, 6));
    // Nothing is kept when the cache is off.
    let off = gpu();
    assert_eq!(off.tuning_cache_file(), None);
    assert_eq!(tune(&off, &[Slow, Fast]), (Fast, 6));
}

#[test]
fn stale_and_corrupt_files_are_ignored_and_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let gpu = gpu_caching_in(dir.path());
    let file = gpu.tuning_cache_file().unwrap();
    let valid = |adapter: &str| {
        format!(
            "wgpu-unsupervised tuning cache 2\nadapter\t{adapter}\ntest kernel [slow|fast]\t128\t512\tslow\n"
        )
    };
    for content in [
        // Another crate version, adapter or driver.
        valid("wgpu-unsupervised 0.0.0 | another adapter"),
        // Corrupt: a truncated line, binary noise, an empty file.
        valid("x").replace("\tslow\n", "\n"),
        "\u{0}\u{1}not a cache \u{fffd}\n".repeat(50),
        String::new(),
    ] {
        std::fs::write(&file, &content).unwrap();
        let fresh = gpu_caching_in(dir.path());
        assert_eq!(tune(&fresh, &[Slow, Fast]), (Fast, 6), "{content:?}");
        // Rewritten with this adapter's key: the next device reads it.
        let next = gpu_caching_in(dir.path());
        assert_eq!(tune(&next, &[Slow, Fast]), (Fast, 0), "{content:?}");
    }
    // A directory where the file should be: ignored, and the write fails harmlessly.
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    assert_eq!(tune(&gpu_caching_in(dir.path()), &[Slow, Fast]), (Fast, 6));
}

#[test]
fn an_unwritable_location_costs_only_the_timing() {
    let dir = tempfile::tempdir().unwrap();
    // A directory below a regular file cannot be made.
    let blocker = dir.path().join("a file");
    std::fs::write(&blocker, "not a directory").unwrap();
    for place in [blocker.join("cache"), blocker.clone()] {
        let gpu = gpu_caching_in(&place);
        assert_eq!(tune(&gpu, &[Slow, Fast]), (Fast, 6));
        // Kept in this process all the same.
        assert_eq!(tune(&gpu, &[Slow, Fast]), (Fast, 0));
    }
    assert_eq!(
        std::fs::read_to_string(&blocker).unwrap(),
        "not a directory"
    );
}

#[test]
fn trials_are_timed_by_timestamps_where_the_device_has_them() {
    let gpu = gpu();
    trial_clock(&gpu);
    // The same adapter opened without timestamps: the wall clock decides.
    let adapter = pollster::block_on(crate::gpu::adapter::adapters(&Default::default()))
        .unwrap()
        .remove(0);
    let (device, queue) =
        pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default())).unwrap();
    let plain = Gpu::from_wgpu_with_info(device.clone(), queue.clone(), adapter.get_info());
    plain.set_tuning_cache(TuningCache::Off);
    assert!(!plain.supports_timestamps());
    trial_clock(&plain);
    // Without the adapter's description there is no key, so no cache file.
    assert_eq!(Gpu::from_wgpu(device, queue).tuning_cache_file(), None);
}

/// Runs an assignment trial on `gpu` and checks it was timed by the device's clock.
fn trial_clock(gpu: &Gpu) {
    let (n, d, k) = (2000, 16, 8);
    let x = GpuMatrix::upload(gpu, &Matrix::new(&random(n * d, 1), d).unwrap()).unwrap();
    let chunk = &x.chunks()[0];
    let centroids = DeviceBuffer::from_slice(gpu, "centroids", &random(k * d, 2));
    let labels = DeviceBuffer::zeroed(gpu, "labels", n);
    let dist = DeviceBuffer::<f32>::zeroed(gpu, "dist", n);
    let changed = DeviceBuffer::<u32>::zeroed(gpu, "changed", 1);
    let to = Assignment {
        centroids: &centroids,
        k,
        labels: &labels,
        min_sq_dist: &dist,
        changed: &changed,
    };
    let scratch = AssignScratch::new(gpu, n, d, k);
    let record = |batch: &mut Batch<'_>| {
        record_assign(
            gpu,
            batch,
            AssignVariant::Registers,
            chunk,
            n,
            d,
            &to,
            &scratch,
        )
    };
    // The trial batch's own records: one per pass with timestamps, none without; none reach
    // a running profile.
    let ((_, records), profile) = gpu
        .profile(crate::gpu::ProfileClock::Auto, || {
            let mut batch = Batch::timestamped(gpu, "trial");
            record(&mut batch)?;
            batch.finish_with_records()
        })
        .unwrap();
    assert!(profile.dispatches.is_empty(), "{:?}", profile.dispatches);
    assert_eq!(
        records.iter().any(|r| r.kernel.starts_with("assign")),
        gpu.supports_timestamps(),
        "{records:?}"
    );
    let seconds = gpu.time_trial(record, &changed).unwrap();
    assert!(seconds.is_finite() && seconds > 0.0, "{seconds}");
    eprintln!(
        "trial clock on {}: {} ({seconds:e} s)",
        gpu.info().name,
        if gpu.supports_timestamps() {
            "timestamps"
        } else {
            "wall clock"
        }
    );
}

#[test]
fn gpus_time_the_tile_shapes_of_the_gemm_assignment() {
    // The GPU design (forced here) times the streamed rows and each tile of the GEMM form for
    // K ≤ 16 and the tiles alone past it, with each tile's subgroup merge where the adapter's
    // subgroups hold a tile row (lavapipe's hold 8 lanes: the 64 x 64 and 128 x 32 tiles),
    // and keeps the choice; the labels are the same bits whichever wins (tests/variants.rs).
    let gpu = gpu();
    let subgroup_tiles: String = GemmConfig::ALL
        .into_iter()
        .filter(|&c| crate::kernels::assign::tiled_subgroup::runs(&gpu, c))
        .map(|c| format!("|{}", AssignVariant::TiledSubgroup(c).name()))
        .collect();
    let tiles = "assign_tiled 128x128|assign_tiled 128x128 depth 16|assign_tiled 64x64|\
                 assign_tiled 128x32";
    for (k, expected) in [
        (40, format!("assign [{tiles}{subgroup_tiles}]")),
        (9, format!("assign [assign_stream|{tiles}{subgroup_tiles}]")),
    ] {
        let (n, d) = (700, 12);
        let x = GpuMatrix::upload(&gpu, &Matrix::new(&random(n * d, 3), d).unwrap()).unwrap();
        let chunk = &x.chunks()[0];
        let centroids = DeviceBuffer::from_slice(&gpu, "centroids", &random(k * d, 4));
        let labels = DeviceBuffer::zeroed(&gpu, "labels", n);
        let dist = DeviceBuffer::<f32>::zeroed(&gpu, "dist", n);
        let changed = DeviceBuffer::<u32>::zeroed(&gpu, "changed", 1);
        let to = Assignment {
            centroids: &centroids,
            k,
            labels: &labels,
            min_sq_dist: &dist,
            changed: &changed,
        };
        crate::kernels::primitives::gemm::with_design(false, || {
            let mut batch = Batch::new(&gpu, "tiles");
            crate::kernels::assign::assign_nearest_centroid(&gpu, &mut batch, chunk, d, &to)
                .unwrap();
            batch.finish().unwrap();
        });
        let choices = gpu.tuning_choices();
        assert!(
            choices.iter().any(|c| c.0 == expected),
            "k {k}: {choices:?}"
        );
    }
}
