//! Loading WGSL, building pipelines with `override` constants, binding, dispatching, reading
//! back. Every kernel wrapper in `src/kernels/` goes through this one path.

use bytemuck::Pod;
use wgpu::util::DeviceExt;

use super::context::Gpu;
use crate::error::{Error, Result};

/// The WGSL kernel families, one file each under `shaders/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Shader {
    Assign,
    CentroidUpdate,
    KmeansPp,
    Reduce,
    Rows,
    Covariance,
    Projection,
    GmmEstep,
    GmmMstep,
    Silhouette,
}

impl Shader {
    pub(crate) fn file_name(self) -> &'static str {
        match self {
            Shader::Assign => "assign.wgsl",
            Shader::CentroidUpdate => "centroid_update.wgsl",
            Shader::KmeansPp => "kmeans_pp.wgsl",
            Shader::Reduce => "reduce.wgsl",
            Shader::Rows => "rows.wgsl",
            Shader::Covariance => "covariance.wgsl",
            Shader::Projection => "projection.wgsl",
            Shader::GmmEstep => "gmm_estep.wgsl",
            Shader::GmmMstep => "gmm_mstep.wgsl",
            Shader::Silhouette => "silhouette.wgsl",
        }
    }

    pub(crate) fn source(self) -> &'static str {
        match self {
            Shader::Assign => include_str!("../../shaders/assign.wgsl"),
            Shader::CentroidUpdate => include_str!("../../shaders/centroid_update.wgsl"),
            Shader::KmeansPp => include_str!("../../shaders/kmeans_pp.wgsl"),
            Shader::Reduce => include_str!("../../shaders/reduce.wgsl"),
            Shader::Rows => include_str!("../../shaders/rows.wgsl"),
            Shader::Covariance => include_str!("../../shaders/covariance.wgsl"),
            Shader::Projection => include_str!("../../shaders/projection.wgsl"),
            Shader::GmmEstep => include_str!("../../shaders/gmm_estep.wgsl"),
            Shader::GmmMstep => include_str!("../../shaders/gmm_mstep.wgsl"),
            Shader::Silhouette => include_str!("../../shaders/silhouette.wgsl"),
        }
    }
}

/// A dispatch grid: `x * y` workgroups, with `x` no larger than the device's per-dimension
/// limit. Kernels linearise `workgroup_id` as `y * grid_x + x` and ignore the overhang.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Grid {
    pub x: u32,
    pub y: u32,
}

impl Gpu {
    /// The grid for `n_workgroups` (at least one), 2-D when one dimension is not enough.
    pub(crate) fn grid(&self, n_workgroups: u64) -> Result<Grid> {
        let max = self.info().max_compute_workgroups_per_dimension.max(1) as u64;
        let n = n_workgroups.max(1);
        if n <= max {
            return Ok(Grid { x: n as u32, y: 1 });
        }
        let y = n.div_ceil(max);
        if y > max {
            return Err(Error::DeviceLimit {
                what: format!("a dispatch of {n} workgroups"),
                requested: n,
                limit_name: "max_compute_workgroups_per_dimension²",
                limit: max * max,
            });
        }
        Ok(Grid {
            x: max as u32,
            y: y as u32,
        })
    }

    /// A storage buffer holding `data` (at least 4 bytes so it can always be bound).
    pub(crate) fn buffer_from<T: Pod>(
        &self,
        label: &str,
        data: &[T],
        extra: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        let mut bytes = bytemuck::cast_slice::<T, u8>(data).to_vec();
        if bytes.len() < 4 {
            bytes.resize(4, 0);
        }
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: &bytes,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST
                    | extra,
            })
    }

    /// A zeroed storage buffer of `bytes` bytes (rounded up to 4, at least 4).
    pub(crate) fn buffer_zeroed(&self, label: &str, bytes: u64) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes.max(4).next_multiple_of(4),
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }
}

/// One buffer binding: a whole buffer or a byte range of one.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Bind<'a> {
    Whole(&'a wgpu::Buffer),
    Range(&'a wgpu::Buffer, u64, u64),
}

impl<'a> Bind<'a> {
    fn resource(self) -> wgpu::BindingResource<'a> {
        match self {
            Bind::Whole(b) => b.as_entire_binding(),
            Bind::Range(buffer, offset, size) => {
                wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset,
                    size: wgpu::BufferSize::new(size),
                })
            }
        }
    }
}

/// A handle to bytes requested with [`Batch::read`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadHandle(usize);

/// Bytes read back by [`Batch::finish`].
#[derive(Debug, Default)]
pub(crate) struct Readback {
    parts: Vec<Vec<u8>>,
}

impl Readback {
    pub(crate) fn bytes_as<T: Pod>(&self, h: ReadHandle) -> Vec<T> {
        bytemuck::pod_collect_to_vec(&self.parts[h.0])
    }

    pub(crate) fn f32s(&self, h: ReadHandle) -> Vec<f32> {
        bytemuck::pod_collect_to_vec(&self.parts[h.0])
    }

    pub(crate) fn u32s(&self, h: ReadHandle) -> Vec<u32> {
        bytemuck::pod_collect_to_vec(&self.parts[h.0])
    }
}

/// One command encoder's worth of GPU work: dispatches, clears and copies, then a single
/// submission and at most one staging buffer mapped for all readbacks.
pub(crate) struct Batch<'g> {
    gpu: &'g Gpu,
    encoder: wgpu::CommandEncoder,
    reads: Vec<(wgpu::Buffer, u64, u64)>,
}

impl<'g> Batch<'g> {
    pub(crate) fn new(gpu: &'g Gpu, label: &str) -> Self {
        let encoder = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
        Self {
            gpu,
            encoder,
            reads: Vec::new(),
        }
    }

    /// Records `shader::entry` over `grid` with `params` as the uniform at binding 0 and
    /// `binds` at their binding numbers.
    pub(crate) fn dispatch<P: Pod>(
        &mut self,
        shader: Shader,
        entry: &'static str,
        wg_size: u32,
        params: &P,
        binds: &[(u32, Bind<'_>)],
        grid: Grid,
    ) -> Result<()> {
        self.dispatch_with_uniform_at(shader, entry, wg_size, 0, params, binds, grid)
    }

    /// [`Batch::dispatch`] with the uniform at binding `uniform_binding` (for shader files
    /// whose entry points take different parameter structs).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn dispatch_with_uniform_at<P: Pod>(
        &mut self,
        shader: Shader,
        entry: &'static str,
        wg_size: u32,
        uniform_binding: u32,
        params: &P,
        binds: &[(u32, Bind<'_>)],
        grid: Grid,
    ) -> Result<()> {
        let pipeline = self.gpu.pipeline(shader, entry, wg_size)?;
        let uniform = self
            .gpu
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(entry),
                contents: bytemuck::bytes_of(params),
                usage: wgpu::BufferUsages::UNIFORM,
            });
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: uniform_binding,
            resource: uniform.as_entire_binding(),
        }];
        entries.extend(binds.iter().map(|&(binding, b)| wgpu::BindGroupEntry {
            binding,
            resource: b.resource(),
        }));
        let bind_group = self
            .gpu
            .device
            .create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(entry),
                layout: &pipeline.get_bind_group_layout(0),
                entries: &entries,
            });
        let mut pass = self
            .encoder
            .begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(entry),
                timestamp_writes: None,
            });
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(grid.x, grid.y, 1);
        Ok(())
    }

    /// Zeroes a whole buffer.
    pub(crate) fn clear(&mut self, buffer: &wgpu::Buffer) {
        self.encoder.clear_buffer(buffer, 0, None);
    }

    /// Copies `size` bytes between buffers (offsets and size multiples of 4).
    pub(crate) fn copy(
        &mut self,
        src: &wgpu::Buffer,
        src_offset: u64,
        dst: &wgpu::Buffer,
        dst_offset: u64,
        size: u64,
    ) {
        self.encoder
            .copy_buffer_to_buffer(src, src_offset, dst, dst_offset, size);
    }

    /// Asks for `size` bytes of `buffer` from `offset` to come back with [`Batch::finish`].
    pub(crate) fn read(&mut self, buffer: &wgpu::Buffer, offset: u64, size: u64) -> ReadHandle {
        self.reads.push((buffer.clone(), offset, size));
        ReadHandle(self.reads.len() - 1)
    }

    /// Submits the work and, if anything was asked for, waits for it and returns the bytes.
    pub(crate) fn finish(mut self) -> Result<Readback> {
        let total: u64 = self.reads.iter().map(|r| r.2).sum();
        let staging = (total > 0).then(|| {
            self.gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback staging"),
                size: total,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        });
        if let Some(staging) = &staging {
            let mut at = 0;
            for (buffer, offset, size) in &self.reads {
                self.encoder
                    .copy_buffer_to_buffer(buffer, *offset, staging, at, *size);
                at += size;
            }
        }
        self.gpu.queue.submit([self.encoder.finish()]);
        let Some(staging) = staging else {
            return Ok(Readback::default());
        };
        let (tx, rx) = futures_intrusive::channel::shared::oneshot_channel();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        let polled = self.gpu.device.poll(wgpu::PollType::wait_indefinitely());
        let mapped = pollster::block_on(rx.receive());
        self.gpu.check_alive()?;
        if let Err(e) = polled {
            return Err(Error::Gpu(format!("waiting for the GPU: {e}")));
        }
        match mapped {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(Error::Gpu(format!("mapping the readback: {e}"))),
            None => return Err(Error::Gpu("readback was dropped".into())),
        }
        let mut parts = Vec::with_capacity(self.reads.len());
        {
            let view = staging
                .slice(..)
                .get_mapped_range()
                .map_err(|e| Error::Gpu(format!("reading the mapped range: {e}")))?;
            let mut at = 0usize;
            for (_, _, size) in &self.reads {
                parts.push(view[at..at + *size as usize].to_vec());
                at += *size as usize;
            }
        }
        staging.unmap();
        Ok(Readback { parts })
    }
}
