//! The host layer: the only code that touches wgpu.
//!
//! - [`context`]: [`Gpu`], the adapter and device, error scopes, device-loss tracking,
//!   the pipeline cache;
//! - [`buffer`]: [`GpuMatrix`] (N x D rows on the device, in chunks that respect the device's
//!   binding limits) and [`GpuVector`] (per-row results kept on the device);
//! - [`kernel`]: loading WGSL with `override` constants, binding, dispatch sizing (2-D grids
//!   past `max_compute_workgroups_per_dimension`) and the one readback path.

pub mod buffer;
pub mod context;
pub mod input;
pub mod kernel;

pub use buffer::{GpuMatrix, GpuVector};
pub use context::{Gpu, GpuInfo};
pub use input::GpuInput;
