//! Small dense linear algebra on the device (`shaders/linalg/`), so that iterative solvers
//! can take several steps without a round trip:
//!
//! - [`cholesky_qr`] (`cholesky_qr.wgsl`): the columns of a d x p block made orthonormal,
//!   Q = W·D·L⁻ᵀ with L·Lᵀ the Cholesky factor of the unit-diagonal Gram matrix (the block
//!   power iteration's steps between host checks, `pca::power`).
//! - [`rayleigh_ritz`] (`rayleigh_ritz.wgsl`): a d x p block Q and its image W = S·Q reduced
//!   to the p x p matrices QᵀSQ, QᵀQ and the Gram matrix of W − Q·(QᵀSQ), from which the host
//!   finds the Ritz pairs and their residuals (the same iteration's checks).

pub(crate) mod cholesky_qr;
pub(crate) mod rayleigh_ritz;

#[cfg(test)]
mod cholesky_qr_tests;
#[cfg(test)]
mod rayleigh_ritz_tests;
