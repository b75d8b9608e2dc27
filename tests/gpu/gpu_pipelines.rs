//! Pipelines: binding the crate's device data in your own passes (chunk buffers, offsets,
//! rows per chunk), viewing trusted buffers without the finiteness pass, and choosing the
//! adapter in code.

use crate::common::{gpu, random_matrix};
use wgpu::util::DeviceExt;
use wgpu_unsupervised::{AdapterOptions, Error, Gpu, GpuMatrix, KMeans, Matrix};

/// Reads `bytes` bytes of `buffer` from `offset` with the caller's own encoder, as an
/// embedding application would.
fn read_range(gpu: &Gpu, buffer: &wgpu::Buffer, offset: u64, bytes: u64) -> Vec<u8> {
    let staging = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("caller staging"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = gpu
        .device()
        .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
    encoder.copy_buffer_to_buffer(buffer, offset, &staging, 0, bytes);
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
fn matrix_chunks_expose_buffers_offsets_and_rows() {
    let gpu = gpu();
    for (n, d, rows_per_chunk) in [(1000, 6, 37), (301, 3, 301), (64, 5, 10)] {
        let x = random_matrix(n, d, n as u64, -1.0, 1.0);
        gpu.set_max_chunk_bytes(rows_per_chunk as u64 * d as u64 * 4);
        let m = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        assert_eq!(m.rows_per_chunk(), rows_per_chunk.min(n));
        assert_eq!(m.chunk_views().len(), m.n_chunks());
        let mut next_row = 0;
        for c in m.chunk_views() {
            assert_eq!(c.first_row, next_row);
            assert!(c.n_rows <= m.rows_per_chunk());
            assert_eq!(c.byte_len, (c.n_rows * d * 4) as u64);
            assert_eq!(c.binding_offset + 4 * c.first_value as u64, c.byte_offset);
            assert!(c.binding_size >= c.byte_len);
            let back = read_range(&gpu, c.buffer, c.byte_offset, c.byte_len);
            let values: &[f32] = bytemuck::cast_slice(&back);
            assert_eq!(values, &x[c.first_row * d..(c.first_row + c.n_rows) * d]);
            next_row += c.n_rows;
        }
        assert_eq!(next_row, n);

        // Labels left on the device: their chunks follow the matrix's rows.
        let model = KMeans::new(3).seed(2).fit(&gpu, &m).unwrap();
        let (labels, _) = model.predict_gpu(&gpu, &m).unwrap();
        assert_eq!(labels.chunk_views().len(), m.n_chunks());
        assert_eq!(labels.rows_per_chunk(), m.rows_per_chunk());
        for (lc, mc) in labels.chunk_views().zip(m.chunk_views()) {
            assert_eq!((lc.first_row, lc.n_rows), (mc.first_row, mc.n_rows));
            let back = read_range(&gpu, lc.buffer, 0, lc.n_rows as u64 * 4);
            let values: &[u32] = bytemuck::cast_slice(&back);
            assert_eq!(
                values,
                &model.labels()[lc.first_row..lc.first_row + lc.n_rows]
            );
        }
    }
}

#[test]
fn caller_buffer_chunks_start_where_the_rows_start() {
    let gpu = gpu();
    let (n, d) = (200, 7);
    let x = random_matrix(n, d, 9, 0.0, 1.0);
    let mut contents = vec![3.0f32; 13];
    contents.extend_from_slice(&x);
    let buffer = gpu
        .device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("caller data"),
            contents: bytemuck::cast_slice(&contents),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        });
    gpu.set_max_chunk_bytes(45 * d as u64 * 4);
    let m = GpuMatrix::from_buffer(&gpu, &buffer, 13 * 4, n, d).unwrap();
    let align = gpu.info().min_storage_buffer_offset_alignment as u64;
    for c in m.chunk_views() {
        assert_eq!(c.byte_offset, 13 * 4 + (c.first_row * d * 4) as u64);
        assert_eq!(c.binding_offset % align, 0);
        let b = c.binding();
        assert_eq!(b.offset, c.binding_offset);
        assert_eq!(b.size.map(|s| s.get()), Some(c.binding_size));
        let back = read_range(&gpu, c.buffer, c.byte_offset, c.byte_len);
        let values: &[f32] = bytemuck::cast_slice(&back);
        assert_eq!(values, &x[c.first_row * d..(c.first_row + c.n_rows) * d]);
    }
}

#[test]
fn from_buffer_unchecked_skips_only_the_finiteness_pass() {
    let gpu = gpu();
    let d = 4;
    let mut x = random_matrix(100, d, 4, -1.0, 1.0);
    x[57 * d + 1] = f32::INFINITY;
    let buffer = gpu
        .device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("with inf"),
            contents: bytemuck::cast_slice(&x),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        });
    assert!(matches!(
        GpuMatrix::from_buffer(&gpu, &buffer, 0, 100, d),
        Err(Error::NonFinite {
            row: 57,
            col: 1,
            ..
        })
    ));
    let m = GpuMatrix::from_buffer_unchecked(&gpu, &buffer, 0, 100, d).unwrap();
    assert_eq!((m.n_rows(), m.n_features()), (100, d));
    assert_eq!(m.to_host(&gpu).unwrap(), x);
    // Shape, offset and size are still checked.
    for (offset, rows) in [(0, 101), (2, 10), (0, 0), (4, 100)] {
        assert!(
            GpuMatrix::from_buffer_unchecked(&gpu, &buffer, offset, rows, d).is_err(),
            "offset {offset}, rows {rows}"
        );
    }
    assert!(GpuMatrix::from_buffer_unchecked(&gpu, &buffer, 0, usize::MAX / 2, d).is_err());
}

#[test]
fn adapters_are_listed_and_chosen_by_options() {
    let listed = Gpu::adapters(&AdapterOptions::default()).unwrap();
    assert!(!listed.is_empty());
    let best = gpu();
    assert_eq!(listed[0].name, best.info().name);
    assert_eq!(listed[0].backend, best.info().backend);

    let by_index = Gpu::with_options(&AdapterOptions {
        index: Some(listed.len() - 1),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(by_index.info().name, listed[listed.len() - 1].name);

    let part = listed[0].name[..3].to_lowercase();
    let by_name = Gpu::with_options(&AdapterOptions::from_selector(&part).unwrap()).unwrap();
    assert!(by_name.info().name.to_lowercase().contains(&part));

    // Low power still finds an adapter; on a machine with one adapter it is the same one.
    let low = Gpu::adapters(&AdapterOptions {
        power_preference: wgpu::PowerPreference::LowPower,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(low.len(), listed.len());

    for options in [
        AdapterOptions {
            name: Some("no such adapter, surely".into()),
            ..Default::default()
        },
        AdapterOptions {
            index: Some(listed.len()),
            ..Default::default()
        },
    ] {
        match Gpu::with_options(&options) {
            Err(Error::NoAdapter { detail }) => assert!(!detail.is_empty()),
            other => panic!("{options:?}: expected NoAdapter, got {other:?}"),
        }
    }
}
