//! Exact neighbour queries, the shared service of the neighbour-graph algorithms (spectral
//! clustering's k-nearest-neighbour graph today; DBSCAN's ε-neighbourhoods and HDBSCAN's core
//! distances are what [`within_radius`] and [`nearest_neighbors`] are for):
//!
//! - [`knn`] (`shaders/neighbors/knn.wgsl`): the k nearest rows of every row, ordered by
//!   (squared distance, index), the row itself first;
//! - [`range`] (`shaders/neighbors/range.wgsl`): every row within a radius ε of every row
//!   (d² ≤ ε²), in index order, as a sparse matrix;
//! - [`csr`] (`shaders/neighbors/csr.wgsl`): sparse matrices in CSR form, on the host and on
//!   the device, and the sparse-times-block product;
//! - [`host`]: the host twins of both searches, which CPU-like adapters run instead (the same
//!   processor, without a round trip through the driver).
//!
//! Distances are the difference form Σ_f (x_f − y_f)² summed as one chain in feature order,
//! exact to f32 rounding for near points (no ‖x‖² − 2x·y + ‖y‖² cancellation).

pub(crate) mod csr;
pub(crate) mod host;
pub(crate) mod knn;
pub(crate) mod range;

#[cfg(test)]
mod knn_tests;
#[cfg(test)]
mod range_tests;

use crate::error::Result;
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::primitives::gemm::cpu_like;

pub(crate) use csr::Csr;

/// Largest number of neighbours [`nearest_neighbors`] keeps.
pub(crate) const KNN_MAX: usize = knn::KNN_MAX;

/// The `k` nearest rows of every row of `x` (itself first, ties by index), N x k indices and
/// squared distances, row-major. On CPU-like adapters the search runs on the host's threads
/// ([`host::nearest_neighbors_host`]), elsewhere on the device ([`knn`]).
pub(crate) fn nearest_neighbors(
    gpu: &Gpu,
    x: &GpuMatrix,
    k: usize,
) -> Result<(Vec<u32>, Vec<f32>)> {
    if cpu_like(gpu) {
        let rows = gpu.scoped("k nearest neighbours", || x.to_host(gpu))?;
        return Ok(host::nearest_neighbors_host(&rows, x.n_features(), k));
    }
    let variant = knn::KnnVariant::for_adapter(gpu, x.n_features(), k);
    knn::nearest_neighbors_with(gpu, x, k, variant)
}

/// Every row of `x` within `radius` of every row (squared distance ≤ radius², the row itself
/// included), as an N x N sparse matrix whose entries, in increasing column order within a
/// row, hold the squared distances. On CPU-like adapters the query runs on the host's threads
/// ([`host::within_radius_host`]), elsewhere on the device ([`range`]).
///
/// Errors: a radius that is negative or not finite
/// ([`Error::InvalidParameter`](crate::error::Error::InvalidParameter)); more neighbours in
/// all than one storage binding holds
/// ([`Error::DeviceLimit`](crate::error::Error::DeviceLimit)); the GPU's errors.
pub(crate) fn within_radius(gpu: &Gpu, x: &GpuMatrix, radius: f32) -> Result<Csr> {
    let radius_sq = range::checked_radius_sq(radius)?;
    if cpu_like(gpu) {
        let rows = gpu.scoped("neighbours within a radius", || x.to_host(gpu))?;
        return Ok(host::within_radius_host(&rows, x.n_features(), radius_sq));
    }
    range::within_radius_device(gpu, x, radius_sq)
}
