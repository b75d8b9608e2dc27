//! [`Gpu`]: adapter choice, device and queue, limits, error handling, and the per-device
//! caches (kernels in `pipeline`, parameter pages in `uniforms`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::adapter::{adapters, AdapterOptions, GpuInfo};
use super::pipeline::KernelCache;
use super::profile::Profiler;
use super::tuning::Tuner;
use super::uniforms::PagePool;
use crate::error::{Error, Result};

/// The most bytes of data one chunk (one storage binding) holds: 128 MiB, WebGPU's default
/// `max_storage_buffer_binding_size`, less 256 bytes, the largest binding-offset alignment
/// WebGPU allows (a chunk may start between alignment boundaries of a caller's buffer). Every
/// conformant device offers at least this, and chunks never grow past it on devices that
/// allow more, so data are cut at the same rows whatever the device's limits and alignment
/// (`Limits::default()` or the adapter's own): the same seed gives the same bits on an adapter
/// however its device was opened. A chunk of 128 MiB keeps any GPU busy; more chunks only add
/// dispatches.
pub const STANDARD_CHUNK_BYTES: u64 = (128 << 20) - 256;

/// A GPU device ready for this crate's kernels.
///
/// Make one with [`Gpu::new`] (the best adapter on the machine) or wrap a device you already
/// have with [`Gpu::from_wgpu`]. Cheap to share by reference; pipelines and their layouts are
/// made once per device and cached.
pub struct Gpu {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    info: GpuInfo,
    pub(crate) cache: KernelCache,
    pub(crate) uniform_pages: PagePool,
    pub(crate) profiler: Profiler,
    pub(crate) tuner: Tuner,
    lost: Arc<Mutex<Option<String>>>,
    uncaptured: Arc<Mutex<Option<String>>>,
    memory_budget: AtomicU64,
    max_chunk_bytes: AtomicU64,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("info", &self.info).finish()
    }
}

impl Gpu {
    /// Opens the best adapter: discrete > integrated > virtual > software (CPU), native
    /// backends before GL.
    ///
    /// `WGPU_BACKEND` (e.g. `vulkan`, `metal`, `dx12`, `gl`) restricts the backends,
    /// `WGPU_ADAPTER_NAME` keeps only adapters whose name contains it (case-insensitive) and
    /// `WGPU_POWER_PREF=low` prefers integrated GPUs; [`Gpu::with_options`] chooses in code.
    /// `WGPU_UNSUPERVISED_TUNING_CACHE` is where the autotuner keeps its choices (`off`:
    /// nowhere; [`Gpu::set_tuning_cache`] in code; see [`crate::gpu::tuning`]).
    /// Errors: [`Error::NoAdapter`] with install advice when nothing is found.
    ///
    /// On a Linux machine without a display (no `XDG_RUNTIME_DIR`), Mesa's implicit Vulkan
    /// layer `VK_LAYER_MESA_device_select` probes for a Wayland compositor while the adapters
    /// are listed, and libwayland prints `error: XDG_RUNTIME_DIR is invalid or not set in the
    /// environment.` to stderr. It is harmless (the probe fails, the adapters are found). A
    /// library must not change its host's environment, so this call leaves it alone; a
    /// program can set `NODEVICE_SELECT=1` (the layer's own off switch) before its first
    /// thread starts, as the `wgpu-unsupervised` CLI does when no compositor is reachable.
    pub fn new() -> Result<Self> {
        pollster::block_on(Self::new_async())
    }

    /// Async form of [`Gpu::new`].
    pub async fn new_async() -> Result<Self> {
        Self::with_options_async(&AdapterOptions::default()).await
    }

    /// Opens the adapter `options` pick: the first of [`Gpu::adapters`] for the same options.
    ///
    /// Errors: [`Error::NoAdapter`] naming the adapters that were seen when none matches.
    pub fn with_options(options: &AdapterOptions) -> Result<Self> {
        pollster::block_on(Self::with_options_async(options))
    }

    /// Async form of [`Gpu::with_options`].
    pub async fn with_options_async(options: &AdapterOptions) -> Result<Self> {
        let adapter = adapters(options)
            .await?
            .into_iter()
            .next()
            .ok_or(Error::NoAdapter {
                detail: "no adapter".into(),
            })?;
        Self::open(adapter).await
    }

    /// Every adapter `options` allow, in the order [`Gpu::with_options`] ranks them (the
    /// first is the one it opens), without opening a device: what `wgpu-unsupervised info
    /// --all` lists. The limits in each [`GpuInfo`] are the adapter's own.
    ///
    /// Errors: [`Error::NoAdapter`] when there is none.
    pub fn adapters(options: &AdapterOptions) -> Result<Vec<GpuInfo>> {
        pollster::block_on(async {
            Ok(adapters(options)
                .await?
                .iter()
                .map(|a| GpuInfo::new(a.get_info(), &a.limits()))
                .collect())
        })
    }

    /// One [`Gpu`] per adapter of the native backends (Vulkan, Metal, DX12; GL only when
    /// there is no native one), best first as [`Gpu::new`] ranks them, honouring
    /// `WGPU_BACKEND` and `WGPU_ADAPTER_NAME`. Software adapters (lavapipe) are left out
    /// when a hardware one exists. For fits that split rows across devices
    /// ([`KMeans::fit_partitions`](crate::KMeans::fit_partitions)).
    ///
    /// Errors: [`Error::NoAdapter`] when there is none, or a device cannot be opened.
    pub fn all() -> Result<Vec<Self>> {
        Self::all_with_options(&AdapterOptions::default())
    }

    /// [`Gpu::all`] over the adapters `options` allow.
    pub fn all_with_options(options: &AdapterOptions) -> Result<Vec<Self>> {
        pollster::block_on(async {
            let mut list = adapters(options).await?;
            if list
                .iter()
                .any(|a| a.get_info().device_type != wgpu::DeviceType::Cpu)
            {
                list.retain(|a| a.get_info().device_type != wgpu::DeviceType::Cpu);
            }
            let mut out = Vec::with_capacity(list.len());
            for adapter in list {
                out.push(Self::open(adapter).await?);
            }
            Ok(out)
        })
    }

    /// Opens a device on `adapter` with everything it offers.
    async fn open(adapter: wgpu::Adapter) -> Result<Self> {
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("wgpu-unsupervised"),
                // Take everything the adapter offers: the large binding and buffer sizes
                // decide how big the data chunks can be.
                required_limits: adapter.limits(),
                // Timestamps let the profiler time each dispatch inside a batch; they cost
                // nothing unless a profile is running. Subgroup operations give kernels a
                // variant that exchanges values without workgroup memory (the autotuner
                // times it against the other).
                required_features: adapter.features()
                    & (wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::SUBGROUP),
                memory_hints: wgpu::MemoryHints::Performance,
                ..Default::default()
            })
            .await
            .map_err(|e| Error::NoAdapter {
                detail: format!("request_device failed: {e}"),
            })?;
        let gpu = Self::build(device, queue, Some(adapter.get_info()));
        // Our own device: keep errors that escape every scope instead of wgpu's default panic.
        let slot = gpu.uncaptured.clone();
        gpu.device
            .on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                slot.lock().unwrap().get_or_insert_with(|| e.to_string());
            }));
        Ok(gpu)
    }

    /// Wraps a device the caller already owns (embedding in an existing wgpu pipeline).
    ///
    /// The device keeps its own limits and uncaptured-error handler; the library works within
    /// them. The adapter is unknown here, so [`Gpu::info`] names it "external device": pass
    /// it with [`Gpu::from_wgpu_with_info`] to have it named in [`Gpu::info`], profiles and
    /// ceilings.
    pub fn from_wgpu(device: wgpu::Device, queue: wgpu::Queue) -> Self {
        Self::build(device, queue, None)
    }

    /// [`Gpu::from_wgpu`] for a device of the adapter `adapter` describes
    /// (`adapter.get_info()`): [`Gpu::info`], profiles and ceilings report its name, backend,
    /// type and driver.
    pub fn from_wgpu_with_info(
        device: wgpu::Device,
        queue: wgpu::Queue,
        adapter: wgpu::AdapterInfo,
    ) -> Self {
        Self::build(device, queue, Some(adapter))
    }

    fn build(device: wgpu::Device, queue: wgpu::Queue, adapter: Option<wgpu::AdapterInfo>) -> Self {
        let limits = device.limits();
        let tuner = Tuner::new(adapter.as_ref());
        let info = match adapter {
            Some(a) => GpuInfo::new(a, &limits),
            None => GpuInfo {
                name: "external device".to_string(),
                backend: "unknown".to_string(),
                device_type: "unknown".to_string(),
                ..GpuInfo::new(
                    wgpu::AdapterInfo::new(wgpu::DeviceType::Other, wgpu::Backend::Noop),
                    &limits,
                )
            },
        };
        let lost = Arc::new(Mutex::new(None));
        let slot = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            *slot.lock().unwrap() = Some(format!("{reason:?}: {message}"));
        });
        Self {
            device,
            queue,
            info,
            cache: KernelCache::default(),
            uniform_pages: PagePool::default(),
            profiler: Profiler::default(),
            tuner,
            lost,
            uncaptured: Arc::new(Mutex::new(None)),
            memory_budget: AtomicU64::new(u64::MAX),
            max_chunk_bytes: AtomicU64::new(u64::MAX),
        }
    }

    /// The adapter and the limits that matter to this crate.
    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    /// The fewest lanes a subgroup of this device holds when its kernels may use subgroup
    /// operations (the device has `Features::SUBGROUP` and the adapter reports its subgroup
    /// sizes); `None` otherwise, and for a device whose adapter is not known.
    pub fn subgroup_lanes(&self) -> Option<u32> {
        (self.device.features().contains(wgpu::Features::SUBGROUP)
            && self.info.subgroup_min_size > 0)
            .then_some(self.info.subgroup_min_size)
    }

    /// The wgpu device (to share buffers with your own pipelines).
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// Caps the bytes of data this crate uploads in one matrix. Uploads beyond it fail with
    /// [`Error::OutOfDeviceMemory`] before anything is allocated (useful on shared GPUs).
    pub fn set_memory_budget(&self, bytes: u64) {
        self.memory_budget.store(bytes, Ordering::Relaxed);
    }

    /// The budget set with [`Gpu::set_memory_budget`] (`u64::MAX` when none was set).
    pub fn memory_budget(&self) -> u64 {
        self.memory_budget.load(Ordering::Relaxed)
    }

    /// Forces data chunks of at most `bytes` (rounded down to whole rows). Chunking normally
    /// follows the device's binding limit; this exists to exercise the multi-chunk path on
    /// small data (tests) and to bound single allocations.
    pub fn set_max_chunk_bytes(&self, bytes: u64) {
        self.max_chunk_bytes.store(bytes.max(4), Ordering::Relaxed);
    }

    /// The largest chunk of data, in bytes, one binding may hold (the forced chunk size
    /// included): at most [`STANDARD_CHUNK_BYTES`], whatever larger limit the device was
    /// opened with, so that the chunking (and so every sum's order, and the bits of every
    /// result) does not depend on the limits a device was requested with.
    pub(crate) fn chunk_byte_limit(&self) -> u64 {
        self.binding_byte_limit()
            .min(STANDARD_CHUNK_BYTES)
            .min(self.max_chunk_bytes.load(Ordering::Relaxed))
    }

    /// The chunk size forced with [`Gpu::set_max_chunk_bytes`] (`u64::MAX` when none was),
    /// which bounds single allocations beyond data chunks too (the ceiling probes').
    pub(crate) fn forced_chunk_bytes(&self) -> u64 {
        self.max_chunk_bytes.load(Ordering::Relaxed)
    }

    /// The largest binding this crate makes, in bytes, from the device limits alone.
    pub(crate) fn binding_byte_limit(&self) -> u64 {
        // 2 GiB keeps every element index inside the shaders' u32 arithmetic with room for
        // offsets; the alignment slack lets a chunk start anywhere in a caller's buffer.
        let align = self.info.min_storage_buffer_offset_alignment as u64;
        self.info
            .max_storage_buffer_binding_size
            .min(self.info.max_buffer_size)
            .min(1 << 31)
            .saturating_sub(align)
    }

    /// Fails with [`Error::DeviceLost`] once the device is gone.
    pub(crate) fn check_alive(&self) -> Result<()> {
        // Let wgpu run the lost callback if the loss is pending.
        let _ = self.device.poll(wgpu::PollType::Poll);
        if let Some(reason) = self.lost.lock().unwrap().clone() {
            return Err(Error::DeviceLost(reason));
        }
        Ok(())
    }

    /// Runs `work` inside validation and out-of-memory error scopes and turns captured wgpu
    /// errors into [`Error`]s. `what` names the allocation for memory errors.
    pub(crate) fn scoped<T>(&self, what: &str, work: impl FnOnce() -> Result<T>) -> Result<T> {
        self.check_alive()?;
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let result = work();
        // Innermost first.
        let validation = pollster::block_on(validation.pop());
        let oom = pollster::block_on(oom.pop());
        if let Some(reason) = self.lost.lock().unwrap().clone() {
            return Err(Error::DeviceLost(reason));
        }
        if let Some(e) = oom {
            return Err(Error::OutOfDeviceMemory {
                what: format!("{what} ({e})"),
                requested: None,
                available: None,
            });
        }
        if let Some(e) = validation {
            return Err(Error::Gpu(format!("{what}: {e}")));
        }
        if let Some(e) = self.uncaptured.lock().unwrap().take() {
            return Err(Error::Gpu(format!("{what}: {e}")));
        }
        result
    }
}

/// Parses a memory size such as `512MiB`, `1.5GiB`, `64KiB` or `4096` (bytes): a number,
/// then optionally `B`, `KiB`, `MiB`, `GiB` or `TiB` (powers of 1024, case-insensitive).
/// What `--max-gpu-memory` takes; pass the result to [`Gpu::set_memory_budget`].
///
/// Errors: [`Error::InvalidParameter`] for anything else, or a size of 0 bytes.
pub fn parse_memory_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => {
            return Err(Error::invalid(
                "memory size",
                format!("{text:?}: expected a number and B, KiB, MiB, GiB or TiB"),
            ))
        }
    };
    let value: f64 = number.parse().map_err(|_| {
        Error::invalid(
            "memory size",
            format!("{text:?}: no number before the unit"),
        )
    })?;
    let bytes = value * scale as f64;
    if bytes >= u64::MAX as f64 {
        return Err(Error::invalid(
            "memory size",
            format!("{text:?}: too large; give at most 16777215TiB (2^64 bytes), e.g. 8GiB"),
        ));
    }
    if bytes.is_nan() || bytes < 1.0 {
        return Err(Error::invalid(
            "memory size",
            format!("{text:?}: must be at least 1 byte"),
        ));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod memory_size_tests {
    use super::parse_memory_size;

    #[test]
    fn parses_binary_suffixes_and_refuses_the_rest() {
        assert_eq!(parse_memory_size("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_memory_size("1.5gib").unwrap(), 3 << 29);
        assert_eq!(parse_memory_size("64 KiB").unwrap(), 64 << 10);
        assert_eq!(parse_memory_size("4096").unwrap(), 4096);
        assert_eq!(parse_memory_size("7B").unwrap(), 7);
        for bad in ["", "MiB", "12MB", "-1GiB", "0", "1.2.3KiB", "0.1B"] {
            assert!(parse_memory_size(bad).is_err(), "{bad:?}");
        }
    }
}
