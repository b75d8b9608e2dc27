//! Interoperability with the Rust array ecosystem, behind features.
//!
//! - `ndarray` (the `interop::ndarray` module): 2-D `ndarray` arrays and views of f32 or f64
//!   as data for every fit, predict and transform ([`GpuInput`](crate::GpuInput)), and the
//!   models' parameters as array views.

#[cfg(feature = "ndarray")]
pub mod ndarray;
