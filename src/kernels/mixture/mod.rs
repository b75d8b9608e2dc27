//! The kernels of Gaussian mixtures' EM (`shaders/mixture/`):
//!
//! - [`estep`] (`estep.wgsl`): squared Mahalanobis distances through the precision Cholesky
//!   factors (full, tied, diagonal, spherical), log-sum-exp and the responsibilities;
//! - [`estep_tiled`] (`estep_tiled.wgsl`): the E-step of diagonal factors in one kernel on
//!   GPUs (norms as a register-blocked outer product, then the normalisation of the same
//!   rows), the same bits as `estep`'s two kernels;
//! - [`mstep`] (`mstep.wgsl`): the M-step sums Nₖ = Σ rᵢₖ, Σ rᵢₖ xᵢ and the centred
//!   Σ rᵢₖ (xᵢ − μₖ)(xᵢ − μₖ)ᵀ (or its diagonal), per block, combined in f64 on the host.

pub(crate) mod estep;
pub(crate) mod estep_tiled;
pub(crate) mod mstep;

#[cfg(test)]
mod estep_tiled_tests;
#[cfg(test)]
mod mstep_tests;
