//! placeholder (being written)
pub mod data;
pub mod datasets;
pub mod error;
pub mod io;
pub mod kmeans;
pub mod reference;
pub use data::Matrix;
pub use error::{Error, Result};
pub use kmeans::{KMeans, KMeansInit};
