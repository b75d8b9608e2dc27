//! The host layer: embedding a caller's device and buffers, chunking, 2-D grids, one device
//! shared by threads, and every error a GPU fit can return.

use crate::common::{gpu, random_matrix, to_f64};
use wgpu::util::DeviceExt;
use wgpu_unsupervised::reference::kmeans as refk;
use wgpu_unsupervised::{Error, Gpu, GpuMatrix, KMeans, KMeansInit, KMeansModel, Matrix};

/// A device of our own, as an embedding application would create it, with optional limits.
fn own_device(limits: impl FnOnce(wgpu::Limits) -> wgpu::Limits) -> (wgpu::Device, wgpu::Queue) {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))
    .expect("an adapter (CI installs mesa-vulkan-drivers)");
    let required_limits = limits(adapter.limits());
    pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("embedding application"),
        required_limits,
        ..Default::default()
    }))
    .expect("a device")
}

/// A caller's device made with WebGPU's default limits (16 KiB of workgroup memory, 8
/// storage buffers a stage): an external device gets the GPU design, so K-Means runs the
/// small-K assignment, which must leave the fused update (20 KiB, 10 buffers) for the
/// unfused pair there rather than fail to build it; and the tiled one past K = 16.
#[test]
fn a_callers_device_with_default_limits_runs_kmeans() {
    let (device, queue) = own_device(|_| wgpu::Limits::default());
    let gpu = &Gpu::from_wgpu(device, queue);
    for (n, d, k, seed) in [(700, 6, 5, 21), (500, 40, 20, 22)] {
        let x = random_matrix(n, d, seed, -2.0, 2.0);
        let init = to_f64(&x[..k * d]);
        let params = KMeans::new(k)
            .init(KMeansInit::Centroids(init))
            .tol(0.0)
            .max_iter(5);
        let model = params.fit(gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let r = refk::fit(&to_f64(&x), d, &params).unwrap();
        assert_eq!(model.labels(), &r.labels[..], "n {n} d {d} k {k}");
    }
}

#[test]
fn info_reports_adapter_and_limits() {
    let gpu = gpu();
    let info = gpu.info();
    assert!(!info.name.is_empty());
    assert!(info.max_storage_buffer_binding_size >= 1 << 20);
    assert!(info.max_compute_workgroups_per_dimension >= 1);
    assert!(info.to_string().contains(&info.name));
}

#[test]
fn embeds_a_callers_device_and_buffer_without_copy() {
    let (device, queue) = own_device(|l| l);
    let (n, d) = (1000, 6);
    let x = random_matrix(n, d, 3, -2.0, 2.0);
    // The caller's buffer holds other data first: the matrix starts at byte 1028, which is not
    // a multiple of the 256-byte binding alignment.
    let mut contents = vec![7.0f32; 257];
    contents.extend_from_slice(&x);
    let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("caller data"),
        contents: bytemuck::cast_slice(&contents),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let gpu = Gpu::from_wgpu(device, queue);
    assert_eq!(gpu.info().name, "external device");
    // Chunks of 37 rows: every chunk starts at an unaligned offset inside the binding.
    gpu.set_max_chunk_bytes(37 * d as u64 * 4);
    let xg = GpuMatrix::from_buffer(&gpu, &buffer, 257 * 4, n, d).unwrap();
    assert_eq!(xg.n_chunks(), n.div_ceil(37));
    let init = to_f64(&x[..5 * d]);
    let params = KMeans::new(5).init(KMeansInit::Centroids(init)).tol(0.0);
    let model = params.fit(&gpu, &xg).unwrap();
    let r = refk::fit(&to_f64(&x), d, &params).unwrap();
    assert_eq!(model.labels(), &r.labels[..]);
    // Predictions left on the device, then read.
    let (labels, dists) = model.predict_gpu(&gpu, &xg).unwrap();
    assert_eq!(labels.len(), n);
    assert_eq!(labels.to_host(&gpu).unwrap(), model.labels());
    let inertia: f64 = dists.to_host(&gpu).unwrap().iter().map(|&v| v as f64).sum();
    assert!((inertia - model.inertia()).abs() <= 1e-5 * model.inertia());
}

#[test]
fn from_buffer_find_non_finite_and_buffer_checks() {
    let gpu = gpu();
    let d = 3;
    let mut x = random_matrix(500, d, 5, 0.0, 1.0);
    x[301 * d + 2] = f32::NAN;
    let buffer = gpu
        .device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("with NaN"),
            contents: bytemuck::cast_slice(&x),
            usage: wgpu::BufferUsages::STORAGE,
        });
    gpu.set_max_chunk_bytes(64 * d as u64 * 4);
    match GpuMatrix::from_buffer(&gpu, &buffer, 0, 500, d) {
        Err(Error::NonFinite {
            row: 301, col: 2, ..
        }) => {}
        other => panic!("expected NonFinite at (301, 2), got {other:?}"),
    }
    assert!(matches!(
        GpuMatrix::from_buffer(&gpu, &buffer, 0, 501, d),
        Err(Error::InvalidBuffer(_))
    ));
    assert!(matches!(
        GpuMatrix::from_buffer(&gpu, &buffer, 2, 10, d),
        Err(Error::InvalidBuffer(_))
    ));
    assert!(matches!(
        GpuMatrix::from_buffer(&gpu, &buffer, 0, 0, d),
        Err(Error::EmptyData { .. })
    ));
    let uniform_only = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 64,
        usage: wgpu::BufferUsages::UNIFORM,
        mapped_at_creation: false,
    });
    assert!(matches!(
        GpuMatrix::from_buffer(&gpu, &uniform_only, 0, 1, 1),
        Err(Error::InvalidBuffer(_))
    ));
}

#[test]
fn two_dimensional_grids_past_the_per_dimension_limit() {
    // At most 16 workgroups per dimension: 5000 rows need 79 row-workgroups.
    let (device, queue) = own_device(|l| wgpu::Limits {
        max_compute_workgroups_per_dimension: 16,
        ..l
    });
    let gpu = Gpu::from_wgpu(device, queue);
    assert_eq!(gpu.info().max_compute_workgroups_per_dimension, 16);
    let (n, d) = (5000, 4);
    let x = random_matrix(n, d, 9, 0.0, 1.0);
    let init = to_f64(&x[..9 * d]);
    let params = KMeans::new(9)
        .init(KMeansInit::Centroids(init))
        .tol(0.0)
        .max_iter(20);
    let model = params.fit(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    let r = refk::fit(&to_f64(&x), d, &params).unwrap();
    let ari = wgpu_unsupervised::reference::metrics::adjusted_rand_index(model.labels(), &r.labels)
        .unwrap();
    assert!(ari > 0.999, "ARI {ari}");
    let pp = KMeans::new(9)
        .seed(1)
        .fit(&gpu, &Matrix::new(&x, d).unwrap());
    assert!(pp.is_ok(), "{pp:?}");
}

#[test]
fn bad_parameters_and_data_give_errors() {
    let gpu = gpu();
    let x = random_matrix(10, 2, 1, 0.0, 1.0);
    let m = Matrix::new(&x, 2).unwrap();
    let fit = |p: KMeans| p.fit(&gpu, &m).unwrap_err();
    assert!(matches!(
        fit(KMeans::new(0)),
        Error::InvalidParameter { name: "k", .. }
    ));
    assert!(matches!(
        fit(KMeans::new(11)),
        Error::TooFewSamples { k: 11, n: 10 }
    ));
    assert!(matches!(
        fit(KMeans::new(2).n_init(0)),
        Error::InvalidParameter { name: "n_init", .. }
    ));
    assert!(matches!(
        fit(KMeans::new(2).max_iter(0)),
        Error::InvalidParameter {
            name: "max_iter",
            ..
        }
    ));
    assert!(matches!(
        fit(KMeans::new(2).tol(-1.0)),
        Error::InvalidParameter { name: "tol", .. }
    ));
    assert!(matches!(
        fit(KMeans::new(2).tol(f64::NAN)),
        Error::InvalidParameter { name: "tol", .. }
    ));
    assert!(matches!(
        fit(KMeans::new(2).init(KMeansInit::Centroids(vec![0.0; 3]))),
        Error::InvalidParameter { name: "init", .. }
    ));
    assert!(matches!(
        fit(KMeans::new(1).init(KMeansInit::Centroids(vec![0.0, f64::INFINITY]))),
        Error::NonFinite { row: 0, col: 1, .. }
    ));
    // Data errors come from the validated view.
    assert!(matches!(Matrix::new(&[], 2), Err(Error::EmptyData { .. })));
    assert!(matches!(
        Matrix::new(&[1.0, f32::NAN], 1),
        Err(Error::NonFinite { row: 1, col: 0, .. })
    ));
    // Predicting with the wrong feature count.
    let model = KMeans::new(2).fit(&gpu, &m).unwrap();
    let y = random_matrix(5, 3, 2, 0.0, 1.0);
    let e = model
        .predict(&gpu, &Matrix::new(&y, 3).unwrap())
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::FeatureMismatch {
                expected: 2,
                found: 3
            }
        ),
        "{e}"
    );
    assert!(matches!(
        KMeansModel::from_centroids(vec![1.0, 2.0, 3.0], 2),
        Err(Error::Shape { .. })
    ));
}

#[test]
fn memory_budget_and_device_limits_give_errors() {
    let gpu = gpu();
    let x = random_matrix(1000, 8, 1, 0.0, 1.0);
    let m = Matrix::new(&x, 8).unwrap();
    gpu.set_memory_budget(16 * 1024);
    // Uploading 32000 bytes at once is refused...
    match GpuMatrix::upload(&gpu, &m) {
        Err(Error::OutOfDeviceMemory {
            requested: Some(32000),
            available: Some(16384),
            ..
        }) => {}
        other => panic!("expected OutOfDeviceMemory, got {other:?}"),
    }
    // ...a fit on host data streams them instead; a budget without room for one row fails.
    assert!(KMeans::new(3).fit(&gpu, &m).is_ok());
    gpu.set_memory_budget(64);
    assert!(matches!(
        KMeans::new(3).fit(&gpu, &m),
        Err(Error::OutOfDeviceMemory { .. })
    ));
    gpu.set_memory_budget(u64::MAX);
    // A row wider than the largest chunk cannot be bound at all.
    gpu.set_max_chunk_bytes(16);
    match GpuMatrix::upload(&gpu, &m) {
        Err(Error::DeviceLimit { .. }) => {}
        other => panic!("expected DeviceLimit, got {other:?}"),
    }
}

#[test]
fn a_lost_device_gives_device_lost() {
    let gpu = gpu();
    let x = random_matrix(200, 2, 1, 0.0, 1.0);
    let m = Matrix::new(&x, 2).unwrap();
    let xg = GpuMatrix::upload(&gpu, &m).unwrap();
    gpu.device().destroy();
    match KMeans::new(2).fit(&gpu, &xg) {
        Err(Error::DeviceLost(_)) => {}
        other => panic!("expected DeviceLost, got {other:?}"),
    }
}

#[test]
fn one_device_shared_by_threads_gives_each_fit_its_own_results() {
    // Batches on several threads record at once and draw their parameter pages from the one
    // pool of the device: every fit must still see only its own parameters, so each gives
    // bit for bit what it gives alone.
    let gpu = gpu();
    let (n, d) = (3000, 5);
    let cases: Vec<(Vec<f32>, usize)> = (0..4u64)
        .map(|s| (random_matrix(n, d, 20 + s, -3.0, 3.0), 3 + 2 * s as usize))
        .collect();
    // Small chunks: many dispatches per batch.
    gpu.set_max_chunk_bytes(256 * d as u64 * 4);
    let fit = |x: &[f32], k: usize| {
        let m = Matrix::new(x, d).unwrap();
        KMeans::new(k).seed(k as u64).fit(&gpu, &m).unwrap()
    };
    let alone: Vec<KMeansModel> = cases.iter().map(|(x, k)| fit(x, *k)).collect();
    let together: Vec<KMeansModel> = std::thread::scope(|scope| {
        let fits: Vec<_> = cases
            .iter()
            .map(|(x, k)| scope.spawn(|| fit(x, *k)))
            .collect();
        fits.into_iter().map(|f| f.join().unwrap()).collect()
    });
    for (a, b) in alone.iter().zip(&together) {
        assert_eq!(a.labels(), b.labels());
        assert_eq!(a.centroids(), b.centroids());
        assert_eq!(a.inertia().to_bits(), b.inertia().to_bits());
    }
}
