//! Tests across the kernel families, named after what they test: every entry point builds
//! and dispatches ([`pipelines`]), the autotuner ([`tuning`]), every variant of a family gives
//! the same bits ([`variants`]), the kernels sized by `FEATURE_WG_SIZE` ([`feature_wg`]).

mod feature_wg;
mod pipelines;
mod tuning;
mod variants;
