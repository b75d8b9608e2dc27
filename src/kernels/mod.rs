//! Host wrappers of the WGSL kernels, one folder per kernel family, with the same folders
//! and names as `shaders/`: `shaders/FAMILY/NAME.wgsl` <-> `src/kernels/FAMILY/NAME.rs`
//! (`shaders/ceilings.wgsl`, a family of one file, <-> `ceilings.rs`). Each wrapper holds the
//! `#[repr(C)]` twin of its shader's parameter struct, checked at compile time against the
//! size naga reflected ([`check_params`](crate::gpu::shaders::check_params)), and functions
//! that record dispatches into a [`Batch`](crate::gpu::batch::Batch), binding buffers by
//! their WGSL names. Sizes the shaders decide (tiles, blocks, workgroup sizes) come from the
//! generated table in [`crate::gpu::shaders`], never written twice.
//!
//! The families:
//!
//! | folder | kernels | used by |
//! |---|---|---|
//! | [`primitives`] | row loaders and scans, reductions, the tile core's shapes, the pair kernels' parameters | every algorithm |
//! | [`assign`] | nearest centroid: every variant, the bound that proves a candidate, the fused Lloyd update, the distance table | K-Means, GMM's start, predictions |
//! | [`neighbors`] | exact k-nearest-neighbour search and ε-range queries (device and host), the CSR product | spectral clustering; DBSCAN-style callers |
//! | [`products`] | the products on the tile core: covariance (Gram), projections, the RBF affinity, the silhouette's distance sums | PCA, spectral, metrics |
//! | [`mixture`] | the E-step and the M-step sums | Gaussian mixtures |
//! | [`centroids`] | the centroid update, k-means++/k-means‖ seeding steps, the farthest rows | K-Means |
//! | [`linalg`] | a block's columns orthonormalised by Cholesky QR | PCA's power iteration |
//! | [`ceilings`] | the FMA and copy probes | the profiler's ceilings |
//!
//! Where a family has variants (the assignment, the Gram product, the M-step sums), the
//! choice is one typed value per family, made in one place, and the autotuner is keyed by
//! that type ([`Variant`](crate::gpu::tuning::Variant)). Kernels import nothing from the crate
//! root: only `gpu/`, `error` and the layers below them, and each other.

pub(crate) mod assign;
pub(crate) mod ceilings;
pub(crate) mod centroids;
pub(crate) mod linalg;
pub(crate) mod mixture;
pub(crate) mod neighbors;
pub(crate) mod primitives;
pub(crate) mod products;

#[cfg(test)]
mod tests;

use crate::gpu::shaders::shared::constants;

/// Workgroup size for kernels that give one invocation to each row (`ROW_WG_SIZE` in
/// `shaders/shared/constants.wgsl`).
pub(crate) const ROW_WG_SIZE: u32 = constants::ROW_WG_SIZE;

/// Name of the `override` that sets the workgroup size of the kernels whose invocations
/// stride over the D features of a row.
pub(crate) const FEATURE_WG_SIZE: &str = "FEATURE_WG_SIZE";

/// `FEATURE_WG_SIZE` for rows of `d` features: the smallest power of two covering D, from
/// `FEATURE_WG_MIN` to `FEATURE_WG_MAX` (`shaders/shared/constants.wgsl`).
pub(crate) fn feature_wg_size(d: usize) -> u32 {
    (d.min(1 << 30).next_power_of_two() as u32)
        .clamp(constants::FEATURE_WG_MIN, constants::FEATURE_WG_MAX)
}

/// Every value [`feature_wg_size`] may return (the tests run the kernels at each).
#[cfg(test)]
pub(crate) fn feature_wg_sizes() -> impl Iterator<Item = u32> {
    std::iter::successors(Some(constants::FEATURE_WG_MIN), |&w| w.checked_mul(2))
        .take_while(|&w| w <= constants::FEATURE_WG_MAX)
}

/// How many items (rows, centroids...) one dispatch may hand an invocation whose loops take
/// `per_item` back-edges per item plus `fixed` in all, on this adapter: all of `total` where
/// loops are unbounded, else as many as keep the sum within the adapter's budget
/// ([`GpuInfo::loop_back_edge_budget`](crate::gpu::GpuInfo::loop_back_edge_budget)), with a
/// tenth of it spare, and at least one.
pub(crate) fn items_within_loop_budget(
    gpu: &crate::gpu::Gpu,
    total: usize,
    per_item: usize,
    fixed: usize,
) -> usize {
    match gpu.info().loop_back_edge_budget() {
        None => total.max(1),
        Some(budget) => {
            let usable = (budget as usize * 9 / 10).saturating_sub(fixed);
            (usable / per_item.max(1)).clamp(1, total.max(1))
        }
    }
}

/// Whether an invocation taking `back_edges` loop back-edges in all stays within this
/// adapter's budget (with a tenth of it spare; always, where loops are unbounded).
pub(crate) fn fits_loop_budget(gpu: &crate::gpu::Gpu, back_edges: usize) -> bool {
    gpu.info()
        .loop_back_edge_budget()
        .is_none_or(|budget| back_edges as u64 <= budget * 9 / 10)
}
