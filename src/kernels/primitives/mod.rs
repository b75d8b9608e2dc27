//! Shared primitives: kernels and host pieces that every algorithm uses, owned by none.
//!
//! - [`rows`] (`shaders/primitives/rows.wgsl`): gathering and padding rows, the finiteness
//!   and scale scans, normalising and scaling by powers of two.
//! - [`reduce`] (`shaders/primitives/reduce.wgsl`): column sums of per-block partials and
//!   the column moments.
//! - [`gemm`]: the shapes of the tile core (`shaders/shared/gemm.wgsl`) that the products,
//!   the assignment and the E-step run on, and what counts as a CPU-like adapter.
//! - [`pairs`]: the parameters and row layouts of the pair kernels
//!   (`shaders/shared/pair_params.wgsl`): the RBF product and the neighbour search.

pub(crate) mod gemm;
pub(crate) mod pairs;
pub(crate) mod reduce;
pub(crate) mod rows;
