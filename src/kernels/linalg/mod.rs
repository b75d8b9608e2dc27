//! Small dense linear algebra on the device (`shaders/linalg/`), so that iterative solvers
//! can take several steps without a round trip:
//!
//! - [`cholesky_qr`] (`cholesky_qr.wgsl`): the columns of a d x p block made orthonormal,
//!   Q = W·D·L⁻ᵀ with L·Lᵀ the Cholesky factor of the unit-diagonal Gram matrix (the block
//!   power iteration's steps between host checks, `pca::power`).

pub(crate) mod cholesky_qr;

#[cfg(test)]
mod cholesky_qr_tests;
