//! The host layer: devices, buffers, dispatch and readback. It imports nothing above it (no
//! kernel wrapper, no algorithm: `tests/layout.rs` checks), and the layers above reach wgpu
//! through it: typed buffers, [`GpuMatrix`] and [`GpuVector`].
//!
//! - [`adapter`]: which adapter to open ([`AdapterOptions`]: backend, name, power
//!   preference, index);
//! - [`context`]: [`Gpu`], the device and queue, error scopes, device-loss tracking;
//! - [`buffer`]: [`GpuMatrix`] (N x D rows on the device, in chunks that respect the device's
//!   binding limits, each described by a [`MatrixChunk`] for binding in your own passes) and
//!   [`GpuVector`] (per-row results kept on the device);
//! - [`input`]: [`GpuInput`], what every fit, predict and transform accepts (a host
//!   [`Matrix`](crate::Matrix) or a [`GpuMatrix`]);
//! - `shaders`: the table `build.rs` generates from the composed WGSL (below);
//! - `pipeline`: shader modules, bind-group and pipeline layouts and pipelines, made once per
//!   device from that table and cached;
//! - `batch`: `Batch`, which records dispatches (buffers bound by name), clears and copies
//!   into one submission with the one readback path, and dispatch grids (2-D past
//!   `max_compute_workgroups_per_dimension`);
//! - `uniforms`: the per-device pool of pages that hold per-dispatch parameters;
//! - `device_buffer`: typed storage buffers (element type and length), what workspaces and
//!   kernel wrappers hold instead of raw `wgpu::Buffer`s;
//! - `texture`: flat textures, values mirrored into a texture for adapters whose texel
//!   fetches are cheaper than storage loads (lavapipe);
//! - [`profile`]: [`Gpu::profile`], GPU time per kernel (timestamp queries, or the wall clock
//!   where the device has none) with the FLOPs and bytes each dispatch must do, held against
//!   the [`Ceilings`] (measured above this layer, by [`Gpu::measure_ceilings`] in
//!   [`crate::ceilings`]);
//! - `stream`: a [`RowSource`](crate::source::RowSource) on the device: uploaded once when
//!   it fits the memory budget, else streamed through one bounded buffer on every pass, read
//!   one piece ahead on a second thread;
//! - [`tuning`]: the autotuner, which times a kernel's bit-identical variants on first use
//!   (GPU timestamps where the device has them) and keeps the fastest per device and shape
//!   class ([`Gpu::tuning_choices`]), across processes in a cache file per adapter and driver
//!   ([`TuningCache`]; the file format in `tuning_cache`).
//!
//! # Shaders
//!
//! Each kernel family is one file `shaders/NAME.wgsl` with a wrapper `src/kernels/NAME.rs`.
//! Code that several kernels share lives once in `shaders/shared/` (constants such as the
//! row workgroup size, the grid index, the one GEMM-class tile core with its 8 x 8 register
//! blocks) and is pulled in with `#import name` lines. At build time `build.rs`
//! expands the imports, validates every composed module with naga (a shader error fails the
//! build and names the original file and line) and reflects it into a table: per entry point
//! the buffers it uses, by name, with their binding numbers and kinds, the size of its
//! parameter struct, its workgroup size and overrides; per file its `u32` constants. So a
//! wrapper binds `("x", chunk)` rather than binding 1, takes tile sizes from the shader, and
//! its `#[repr(C)]` parameter struct is checked against the shader's at compile time.
//!
//! Workgroup sizes are `const`s, except `FEATURE_WG_SIZE`, an `override` for the kernels that
//! stride over a row's features: the host picks it from D, and every value it may pick is
//! compiled and run by the tests.
//!
//! # Dispatch
//!
//! Pipelines and bind-group layouts are made once per device and entry point (per override
//! value for pipelines). Per-dispatch parameters take a slot in a pooled uniform page written
//! once per batch, so recording a dispatch creates one bind group and no buffer.

pub mod adapter;
pub(crate) mod batch;
pub mod buffer;
pub mod context;
pub(crate) mod device_buffer;
pub mod input;
pub(crate) mod pipeline;
pub mod profile;
pub(crate) mod readback;
pub(crate) mod shaders;
pub(crate) mod stream;
pub(crate) mod texture;
pub mod tuning;
mod tuning_cache;
pub(crate) mod uniforms;
pub(crate) mod write;

pub use adapter::{AdapterOptions, GpuInfo};
pub use buffer::{GpuMatrix, GpuVector, MatrixChunk, VectorChunk};
pub use context::{parse_memory_size, Gpu, STANDARD_CHUNK_BYTES};
pub use input::GpuInput;
pub use profile::{
    Bound, Ceilings, Clock, DispatchRecord, HostActivity, KernelSummary, Profile, ProfileClock,
    Work,
};
pub use tuning::{TuningCache, TuningTrial};
/// The command encoder the `*_into` methods (`predict_into`, `transform_into`, …) record into
/// without submitting: wgpu's, re-exported so that the layers above name wgpu through here.
pub use wgpu::CommandEncoder;

#[cfg(test)]
pub(crate) mod tests;
