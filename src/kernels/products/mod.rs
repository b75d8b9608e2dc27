//! The products on the tile core (`shaders/products/`, `shaders/shared/gemm.wgsl`):
//!
//! - [`covariance`] (`covariance.wgsl`): the centred Gram matrix S = (X − μ)ᵀ(X − μ), upper
//!   triangle, per-chunk partials;
//! - [`projection`] (`projection.wgsl`): row-wise affine maps Y = (X − μ)·W + b (PCA's
//!   transform, whitening, reconstruction, S·V);
//! - [`affinity`] (`affinity.wgsl`): the RBF affinity times a block, never forming N x N;
//! - [`silhouette`] (`silhouette.wgsl`): the silhouette's distance sums from query rows to
//!   the rows of each cluster.

pub(crate) mod affinity;
pub(crate) mod covariance;
pub(crate) mod projection;
pub(crate) mod silhouette;

#[cfg(test)]
mod affinity_tests;
#[cfg(test)]
mod tile_core_tests;
