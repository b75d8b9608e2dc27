//! Recording GPU work: `Batch` (dispatch by binding name, clears, copies) with the one
//! readback path, dispatch grids and storage buffers. Every kernel wrapper in `src/kernels/`
//! goes through `Batch::dispatch`.

use bytemuck::Pod;
use wgpu::util::DeviceExt;

use super::context::Gpu;
use super::pipeline::list;
use super::profile::{Clock, DispatchRecord, TimestampQueries, Work, TRANSFERS};
pub(crate) use super::readback::{PendingReadback, ReadHandle, Readback};
use super::shaders::{BindingKind, EntryPoint};
use super::uniforms::Uniforms;
use crate::error::{Error, Result};

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

    /// Records `work` into a batch of its own and submits it (what every method that returns
    /// results on the device does when it is not given the caller's encoder).
    pub(crate) fn run_batch<T>(
        &self,
        what: &str,
        work: impl FnOnce(&mut Batch<'_>) -> Result<T>,
    ) -> Result<T> {
        self.scoped(what, || {
            let mut batch = Batch::new(self, what);
            let out = work(&mut batch)?;
            batch.finish()?;
            Ok(out)
        })
    }

    /// Records `work` into the caller's `encoder` when one is given ([`Gpu::record_into`]),
    /// else runs it ([`Gpu::run_batch`]).
    pub(crate) fn run_or_record<T>(
        &self,
        encoder: Option<&mut wgpu::CommandEncoder>,
        what: &str,
        work: impl FnOnce(&mut Batch<'_>) -> Result<T>,
    ) -> Result<T> {
        match encoder {
            Some(encoder) => self.record_into(encoder, what, work),
            None => self.run_batch(what, work),
        }
    }

    /// Records `work` into the caller's `encoder` (recording only: the caller submits). The
    /// encoder is taken for the call and given back with the work appended; on an error it
    /// may hold part of the work and should be dropped.
    pub(crate) fn record_into<T>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        what: &str,
        work: impl FnOnce(&mut Batch<'_>) -> Result<T>,
    ) -> Result<T> {
        let placeholder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(what) });
        let mut batch = Batch::recording_into(self, std::mem::replace(encoder, placeholder));
        let result = self.scoped(what, || work(&mut batch));
        *encoder = batch.into_encoder();
        result
    }

    /// A uniform buffer of `bytes` bytes that copies fill (the kernels' uniform slices of
    /// operands), rounded up to 16.
    pub(crate) fn uniform_buffer(&self, label: &str, bytes: u64) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes.max(16).next_multiple_of(16),
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }
}

/// One binding: a whole buffer, a byte range of one, or a texture (a
/// [`FlatTexture`](super::texture::FlatTexture)'s view).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Bind<'a> {
    Whole(&'a wgpu::Buffer),
    Range(&'a wgpu::Buffer, u64, u64),
    Texture(&'a wgpu::TextureView),
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
            Bind::Texture(view) => wgpu::BindingResource::TextureView(view),
        }
    }
}

/// One command encoder's worth of GPU work: dispatches, clears and copies, then a single
/// submission and at most one staging buffer mapped for all readbacks.
pub(crate) struct Batch<'g> {
    gpu: &'g Gpu,
    encoder: wgpu::CommandEncoder,
    uniforms: Uniforms<'g>,
    reads: Vec<(wgpu::Buffer, u64, u64)>,
    /// The running profile's clock, fixed when the batch starts.
    clock: Option<Clock>,
    timestamps: TimestampQueries,
    /// Wall clock: clears or copies recorded since the last submission.
    transfers_pending: bool,
}

impl<'g> Batch<'g> {
    pub(crate) fn new(gpu: &'g Gpu, label: &str) -> Self {
        let encoder = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
        Self {
            gpu,
            encoder,
            uniforms: Uniforms::new(&gpu.uniform_pages, &gpu.device),
            reads: Vec::new(),
            clock: gpu.profiling_clock(),
            timestamps: TimestampQueries::new(),
            transfers_pending: false,
        }
    }

    /// A batch that records into the caller's `encoder`: [`Batch::into_encoder`] hands it
    /// back with the work recorded and nothing submitted (no profile times it, and it may not
    /// read anything back). Its parameters are written by queue writes, which are ordered
    /// before the caller's next submission.
    pub(crate) fn recording_into(gpu: &'g Gpu, encoder: wgpu::CommandEncoder) -> Self {
        Self {
            gpu,
            encoder,
            uniforms: Uniforms::detached(&gpu.uniform_pages, &gpu.device),
            reads: Vec::new(),
            clock: None,
            timestamps: TimestampQueries::new(),
            transfers_pending: false,
        }
    }

    /// The encoder of a batch made by [`Batch::recording_into`], its parameters written.
    pub(crate) fn into_encoder(self) -> wgpu::CommandEncoder {
        debug_assert!(
            self.reads.is_empty(),
            "work recorded for a caller reads nothing back"
        );
        self.uniforms.flush(&self.gpu.queue);
        self.encoder
    }

    /// A batch that no profile times (the autotuner's set-up work).
    pub(crate) fn untimed(gpu: &'g Gpu, label: &str) -> Self {
        let mut batch = Self::new(gpu, label);
        batch.clock = None;
        batch
    }

    /// A batch whose dispatches carry GPU timestamps where the device has them, for its
    /// caller rather than any running profile: [`Batch::finish_with_records`] returns them
    /// (the autotuner's trials, which time the kernels and not the submission around them).
    /// Without timestamps it is [`Batch::untimed`] and the records come back empty.
    pub(crate) fn timestamped(gpu: &'g Gpu, label: &str) -> Self {
        let mut batch = Self::untimed(gpu, label);
        if gpu.supports_timestamps() {
            batch.clock = Some(Clock::Timestamps);
        }
        batch
    }

    /// Wall-clock profiling: submits what is recorded, waits for it and returns the seconds.
    fn submit_and_time(&mut self) -> Result<f64> {
        let encoder = std::mem::replace(
            &mut self.encoder,
            self.gpu
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("profiled"),
                }),
        );
        self.uniforms.flush(&self.gpu.queue);
        let start = std::time::Instant::now();
        self.gpu.queue.submit([encoder.finish()]);
        let polled = self.gpu.device.poll(wgpu::PollType::wait_indefinitely());
        let seconds = start.elapsed().as_secs_f64();
        self.gpu.check_alive()?;
        polled.map_err(|e| Error::Gpu(format!("waiting for the GPU: {e}")))?;
        Ok(seconds)
    }

    /// Records `entry` over `grid`: `params` (the `#[repr(C)]` twin of its uniform struct) as
    /// its uniform, each buffer of `binds` at the binding of that name, and `overrides` (name,
    /// value) for every override it depends on. `work` is what the dispatch must do at the
    /// least, for the profiler.
    ///
    /// Errors ([`Error::Gpu`], before anything is recorded): a name the entry point does not
    /// use, one it uses but not given, one given twice, parameters whose size differs from
    /// the uniform struct's, a missing or unknown override.
    pub(crate) fn dispatch<P: Pod>(
        &mut self,
        entry: &'static EntryPoint,
        overrides: &[(&'static str, u32)],
        params: &P,
        binds: &[(&str, Bind<'_>)],
        grid: Grid,
        work: Work,
    ) -> Result<()> {
        let resources = resolve(entry, binds)?;
        let uniform = uniform_of(entry, std::mem::size_of::<P>())?;
        let kernel = self.gpu.kernel(entry, overrides)?;
        let (page, offset) = self.uniforms.push(bytemuck::bytes_of(params));
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: uniform.0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &page,
                offset,
                size: wgpu::BufferSize::new(uniform.1),
            }),
        }];
        entries.extend(resources.iter().map(|&(binding, b)| wgpu::BindGroupEntry {
            binding,
            resource: b.resource(),
        }));
        let bind_group = self
            .gpu
            .device
            .create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(entry.name),
                layout: &kernel.bind_group_layout,
                entries: &entries,
            });
        let workgroups = grid.x as u64 * grid.y as u64;
        if self.clock == Some(Clock::WallClock) && self.transfers_pending {
            let seconds = self.submit_and_time()?;
            self.transfers_pending = false;
            self.gpu.record_dispatches([DispatchRecord {
                kernel: TRANSFERS,
                seconds,
                work: Work::default(),
                workgroups: 0,
            }]);
        }
        let timestamp_writes = match self.clock {
            Some(Clock::Timestamps) => {
                Some(
                    self.timestamps
                        .next(&self.gpu.device, entry.name, work, workgroups),
                )
            }
            _ => None,
        };
        {
            let mut pass = self
                .encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(entry.name),
                    timestamp_writes,
                });
            pass.set_pipeline(&kernel.pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(grid.x, grid.y, 1);
        }
        if self.clock == Some(Clock::WallClock) {
            let seconds = self.submit_and_time()?;
            self.gpu.record_dispatches([DispatchRecord {
                kernel: entry.name,
                seconds,
                work,
                workgroups,
            }]);
        }
        Ok(())
    }

    /// Zeroes a whole buffer.
    pub(crate) fn clear(&mut self, buffer: &wgpu::Buffer) {
        self.transfers_pending = true;
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
        self.transfers_pending = true;
        self.encoder
            .copy_buffer_to_buffer(src, src_offset, dst, dst_offset, size);
    }

    /// Records a buffer-to-texture copy (see [`FlatTexture`](super::texture::FlatTexture)).
    pub(crate) fn copy_buffer_to_texture(
        &mut self,
        src: wgpu::TexelCopyBufferInfo<'_>,
        dst: wgpu::TexelCopyTextureInfo<'_>,
        extent: wgpu::Extent3d,
    ) {
        self.transfers_pending = true;
        self.encoder.copy_buffer_to_texture(src, dst, extent);
    }

    /// Asks for `size` bytes of `buffer` from `offset` to come back with [`Batch::finish`].
    pub(crate) fn read(&mut self, buffer: &wgpu::Buffer, offset: u64, size: u64) -> ReadHandle {
        self.reads.push((buffer.clone(), offset, size));
        ReadHandle(self.reads.len() - 1)
    }

    /// Submits the work and, if anything was asked for, waits for it and returns the bytes.
    /// Timestamped dispatches go to the running profile.
    pub(crate) fn finish(self) -> Result<Readback> {
        self.submit()?.wait()
    }

    /// [`Batch::finish`], with the timestamped dispatches' records returned to the caller
    /// (empty unless the batch's clock is [`Clock::Timestamps`]); wall-clock records still
    /// go to the running profile as they are taken.
    pub(crate) fn finish_with_records(self) -> Result<(Readback, Vec<DispatchRecord>)> {
        self.submit()?.wait_with_records()
    }

    /// Submits the work and returns at once: what was asked for with [`Batch::read`] comes
    /// back from [`PendingReadback::wait`]. Work submitted later may run meanwhile, so the
    /// GPU need not wait for the host between two batches (the Lloyd loop runs ahead so).
    pub(crate) fn submit(mut self) -> Result<PendingReadback<'g>> {
        let timestamps = self
            .timestamps
            .resolve(&self.gpu.device, &mut self.encoder)
            .map(|(buffer, size)| self.read(&buffer, 0, size));
        if self.clock == Some(Clock::WallClock) && self.transfers_pending {
            let seconds = self.submit_and_time()?;
            self.gpu.record_dispatches([DispatchRecord {
                kernel: TRANSFERS,
                seconds,
                work: Work::default(),
                workgroups: 0,
            }]);
        }
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
        self.uniforms.flush(&self.gpu.queue);
        let submission = self.gpu.queue.submit([self.encoder.finish()]);
        self.gpu.record_submission(staging.is_some());
        let mapped = staging.as_ref().map(|staging| {
            let (tx, rx) = futures_intrusive::channel::shared::oneshot_channel();
            staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
            rx
        });
        Ok(PendingReadback {
            gpu: self.gpu,
            submission,
            staging: staging.zip(mapped),
            sizes: self.reads.iter().map(|r| r.2 as usize).collect(),
            timestamps: timestamps.map(|h| (h, self.timestamps)),
        })
    }
}

fn resolve<'a>(entry: &EntryPoint, binds: &[(&str, Bind<'a>)]) -> Result<Vec<(u32, Bind<'a>)>> {
    let buffers = || {
        entry.bindings.iter().filter(|b| {
            matches!(
                b.kind,
                BindingKind::Storage { .. }
                    | BindingKind::UniformData { .. }
                    | BindingKind::Texture
            )
        })
    };
    let mut resolved = Vec::with_capacity(binds.len());
    for (i, &(name, bind)) in binds.iter().enumerate() {
        if binds[..i].iter().any(|(n, _)| *n == name) {
            return Err(Error::Gpu(format!(
                "{}: buffer `{name}` bound twice",
                entry.label()
            )));
        }
        let Some(b) = buffers().find(|b| b.name == name) else {
            return Err(Error::Gpu(format!(
                "{} has no buffer `{name}` (it uses: {})",
                entry.label(),
                list(buffers().map(|b| b.name))
            )));
        };
        resolved.push((b.binding, bind));
    }
    if let Some(missing) = buffers().find(|b| !binds.iter().any(|(n, _)| *n == b.name)) {
        return Err(Error::Gpu(format!(
            "{} needs buffer `{}`, which was not given",
            entry.label(),
            missing.name
        )));
    }
    Ok(resolved)
}

/// The binding number and size of `entry`'s uniform, checked against parameters of
/// `params_size` bytes.
fn uniform_of(entry: &EntryPoint, params_size: usize) -> Result<(u32, u64)> {
    match entry.uniform() {
        Some(&super::shaders::Binding {
            binding,
            kind: BindingKind::Uniform { struct_name, size },
            ..
        }) => {
            if params_size as u64 != size {
                return Err(Error::Gpu(format!(
                    "{}: parameters of {params_size} bytes for `{struct_name}`, which has {size}",
                    entry.label()
                )));
            }
            Ok((binding, size))
        }
        _ => Err(Error::Gpu(format!(
            "{} takes no uniform parameters",
            entry.label()
        ))),
    }
}
