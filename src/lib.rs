//! placeholder (being written)
pub mod data;
pub mod error;
pub mod gpu;
pub(crate) mod kernels;
pub mod kmeans;
pub mod reference;
pub use data::Matrix;
pub use error::{Error, Result};
pub use gpu::{Gpu, GpuInfo, GpuMatrix, GpuVector};
pub use kmeans::{KMeans, KMeansInit};
