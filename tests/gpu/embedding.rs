//! What a pipeline author meets when the library lives inside their own wgpu program: their
//! device (and its adapter's name), their encoder (work recorded, not submitted), outputs
//! chunked like the inputs, vector chunks bound in their passes, buffers the device cannot
//! use refused when viewed, and results that do not depend on the limits the device was
//! opened with.

use crate::common::{random_matrix, to_f64};
use wgpu::util::DeviceExt;
use wgpu_unsupervised::gpu::STANDARD_CHUNK_BYTES;
use wgpu_unsupervised::{
    Components, CovarianceType, Error, GaussianMixture, Gpu, GpuMatrix, KMeans, KMeansInit, Matrix,
    Pca,
};

/// An application's own instance, adapter and device (with `limits` from the adapter's).
fn app_device(
    limits: impl FnOnce(wgpu::Limits) -> wgpu::Limits,
) -> (wgpu::Adapter, wgpu::Device, wgpu::Queue) {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))
    .expect("an adapter (CI installs mesa-vulkan-drivers)");
    let required_limits = limits(adapter.limits());
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("embedding application"),
        required_limits,
        ..Default::default()
    }))
    .expect("a device");
    (adapter, device, queue)
}

/// Copies `bytes` bytes of `buffer` into a staging buffer with `encoder`, submits it and reads
/// them back, as the application would.
fn submit_and_read(
    gpu: &Gpu,
    mut encoder: wgpu::CommandEncoder,
    buffer: &wgpu::Buffer,
    bytes: u64,
) -> Vec<u8> {
    let staging = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("application staging"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, bytes);
    gpu.queue().submit([encoder.finish()]);
    staging
        .slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.unwrap());
    gpu.device()
        .poll(wgpu::PollType::wait_indefinitely())
        .unwrap();
    let data = staging.slice(..).get_mapped_range().unwrap().to_vec();
    data
}

#[test]
fn the_adapter_is_named_and_work_is_recorded_into_the_callers_encoder() {
    let (adapter, device, queue) = app_device(|l| l);
    let gpu = Gpu::from_wgpu_with_info(device, queue, adapter.get_info());
    assert_eq!(gpu.info().name, adapter.get_info().name);
    assert_ne!(gpu.info().backend, "unknown");
    let (n, d, k) = (500, 4, 3);
    let x = random_matrix(n, d, 5, -3.0, 3.0);
    let m = Matrix::new(&x, d).unwrap();
    let xg = GpuMatrix::upload(&gpu, &m).unwrap();
    let init = KMeansInit::Centroids(to_f64(&x[..k * d]));
    let km = KMeans::new(k).init(init).fit(&gpu, &m).unwrap();

    // Labels recorded into the application's encoder: nothing runs until it submits.
    let encoder = gpu.device().create_command_encoder(&Default::default());
    let mut encoder = encoder;
    let (labels, _) = km.predict_into(&gpu, &mut encoder, &xg).unwrap();
    let chunk = labels.chunk_views().next().unwrap();
    assert_eq!(
        chunk.binding().size.unwrap().get(),
        n as u64 * 4,
        "a vector chunk binds its values"
    );
    drop(encoder);
    assert!(
        labels.to_host(&gpu).unwrap().iter().all(|&l| l == 0),
        "dropped, never run"
    );
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let (labels, _) = km.predict_into(&gpu, &mut encoder, &xg).unwrap();
    let bytes = submit_and_read(&gpu, encoder, chunk_buffer(&labels), n as u64 * 4);
    let got: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes);
    assert_eq!(got, km.predict(&gpu, &m).unwrap());

    // Distances, projections and responsibilities the same way.
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let dist = km.transform_into(&gpu, &mut encoder, &xg).unwrap();
    let view = dist.chunk_views().next().unwrap();
    let bytes = submit_and_read(&gpu, encoder, view.buffer, view.byte_len);
    assert_eq!(
        bytemuck::pod_collect_to_vec::<u8, f32>(&bytes),
        km.transform(&gpu, &m).unwrap()
    );

    let pca = Pca::new(Components::Count(2)).fit(&gpu, &m).unwrap();
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let z = pca.transform_into(&gpu, &mut encoder, &xg).unwrap();
    let view = z.chunk_views().next().unwrap();
    let bytes = submit_and_read(&gpu, encoder, view.buffer, view.byte_len);
    assert_eq!(
        bytemuck::pod_collect_to_vec::<u8, f32>(&bytes),
        pca.transform(&gpu, &m).unwrap()
    );
    let zg = GpuMatrix::upload(
        &gpu,
        &Matrix::new(&pca.transform(&gpu, &m).unwrap(), 2).unwrap(),
    )
    .unwrap();
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let back = pca.inverse_transform_into(&gpu, &mut encoder, &zg).unwrap();
    let view = back.chunk_views().next().unwrap();
    let bytes = submit_and_read(&gpu, encoder, view.buffer, view.byte_len);
    assert_eq!(
        bytemuck::pod_collect_to_vec::<u8, f32>(&bytes),
        pca.inverse_transform(&gpu, &zg).unwrap()
    );

    let gmm = GaussianMixture::new(k)
        .covariance(CovarianceType::Diag)
        .fit(&gpu, &m)
        .unwrap();
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let proba = gmm.predict_proba_into(&gpu, &mut encoder, &xg).unwrap();
    let view = proba.chunk_views().next().unwrap();
    let bytes = submit_and_read(&gpu, encoder, view.buffer, view.byte_len);
    assert_eq!(
        bytemuck::pod_collect_to_vec::<u8, f32>(&bytes),
        gmm.predict_proba(&gpu, &m).unwrap()
    );
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let labels = gmm.predict_into(&gpu, &mut encoder, &xg).unwrap();
    let log_p = gmm.score_samples_into(&gpu, &mut encoder, &xg).unwrap();
    let bytes = submit_and_read(&gpu, encoder, chunk_buffer(&labels), n as u64 * 4);
    assert_eq!(
        bytemuck::pod_collect_to_vec::<u8, u32>(&bytes),
        gmm.predict(&gpu, &m).unwrap()
    );
    assert_eq!(
        log_p.to_host(&gpu).unwrap(),
        gmm.score_samples(&gpu, &m).unwrap()
    );
}

fn chunk_buffer<T: bytemuck::Pod>(v: &wgpu_unsupervised::GpuVector<T>) -> &wgpu::Buffer {
    v.chunk_views().next().unwrap().buffer
}

#[test]
fn transformed_outputs_are_chunked_like_the_inputs() {
    let (_, device, queue) = app_device(|l| l);
    let gpu = Gpu::from_wgpu(device, queue);
    let (n, d) = (1000, 8);
    let x = random_matrix(n, d, 9, -1.0, 1.0);
    gpu.set_max_chunk_bytes(111 * d as u64 * 4);
    let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    assert!(xg.n_chunks() > 5);
    let rows = |m: &GpuMatrix| -> Vec<(usize, usize)> {
        m.chunk_views().map(|c| (c.first_row, c.n_rows)).collect()
    };
    // Fewer output columns than input ones: chunk i of the output is chunk i of the input.
    let pca = Pca::new(Components::Count(3)).fit(&gpu, &xg).unwrap();
    let z = pca.transform_gpu(&gpu, &xg).unwrap();
    assert_eq!(rows(&z), rows(&xg));
    let km = KMeans::new(5).fit(&gpu, &xg).unwrap();
    assert_eq!(rows(&km.transform_gpu(&gpu, &xg).unwrap()), rows(&xg));
    // More output columns (K = 20 > D = 8): each input chunk splits into whole runs of rows.
    let km = KMeans::new(20).fit(&gpu, &xg).unwrap();
    let t = km.transform_gpu(&gpu, &xg).unwrap();
    assert!(t.n_chunks() > xg.n_chunks());
    for c in xg.chunk_views() {
        let inside: usize = t
            .chunk_views()
            .filter(|o| o.first_row >= c.first_row && o.first_row < c.first_row + c.n_rows)
            .map(|o| o.n_rows)
            .sum();
        assert_eq!(inside, c.n_rows, "the rows of input chunk {}", c.first_row);
    }
}

#[test]
fn buffers_the_device_cannot_use_are_refused_when_viewed() {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
    let adapter = pollster::block_on(instance.request_adapter(&Default::default())).unwrap();
    let open = || pollster::block_on(adapter.request_device(&Default::default())).unwrap();
    let ((a_device, a_queue), (b_device, _b_queue)) = (open(), open());
    let gpu = Gpu::from_wgpu(a_device, a_queue);
    let data = random_matrix(100, 4, 2, 0.0, 1.0);
    let make = |device: &wgpu::Device| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("application data"),
            contents: bytemuck::cast_slice(&data),
            usage: wgpu::BufferUsages::STORAGE,
        })
    };
    let own = make(gpu.device());
    assert!(GpuMatrix::from_buffer_unchecked(&gpu, &own, 0, 100, 4).is_ok());
    // A buffer of another device (of the same instance).
    let foreign = make(&b_device);
    let e = GpuMatrix::from_buffer_unchecked(&gpu, &foreign, 0, 100, 4).unwrap_err();
    assert!(matches!(e, Error::InvalidBuffer(_)), "{e}");
    assert!(e.to_string().contains("another device"), "{e}");
    // A destroyed buffer.
    own.destroy();
    let e = GpuMatrix::from_buffer(&gpu, &own, 0, 100, 4).unwrap_err();
    assert!(matches!(e, Error::InvalidBuffer(_)), "{e}");
}

#[test]
fn chunking_does_not_depend_on_the_limits_the_device_was_opened_with() {
    // One chunk is at most STANDARD_CHUNK_BYTES whatever the device allows, so data cut by a
    // device opened with wgpu's default limits and by one with the adapter's own limits (a
    // larger binding, another offset alignment) are cut at the same rows.
    let (_, dev_a, queue_a) = app_device(|_| wgpu::Limits::default());
    let (_, dev_b, queue_b) = app_device(|l| l);
    let (default_limits, adapter_limits) = (
        Gpu::from_wgpu(dev_a, queue_a),
        Gpu::from_wgpu(dev_b, queue_b),
    );
    for d in [3usize, 4, 7, 784] {
        let n = STANDARD_CHUNK_BYTES as usize / (4 * d) + 11;
        let cut = |gpu: &Gpu| -> Vec<(usize, usize)> {
            let bytes = (n * d * 4) as u64;
            let buffer = gpu.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("large view"),
                size: bytes.next_multiple_of(256),
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            });
            let m = GpuMatrix::from_buffer_unchecked(gpu, &buffer, 0, n, d).unwrap();
            m.chunk_views().map(|c| (c.first_row, c.n_rows)).collect()
        };
        let a = cut(&default_limits);
        assert_eq!(a.len(), 2, "d = {d}");
        assert_eq!(a[0].1, STANDARD_CHUNK_BYTES as usize / (4 * d), "d = {d}");
        assert_eq!(a, cut(&adapter_limits), "d = {d}");
    }
}
