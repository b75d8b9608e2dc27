//! Host wrappers of the WGSL kernels: one file per shader, same name
//! (`assign.rs` <-> `shaders/assign.wgsl`). Each holds the `#[repr(C)]` twin of its shader's
//! parameter struct, checked at compile time against the size naga reflected
//! ([`check_params`](crate::gpu::shaders::check_params)), and functions that record
//! dispatches into a [`Batch`](crate::gpu::batch::Batch), binding buffers by their WGSL
//! names. Sizes the shaders decide (tiles, blocks, workgroup sizes) come from the generated
//! table in [`crate::gpu::shaders`], never written twice.

pub(crate) mod affinity;
pub(crate) mod affinity_host;
pub(crate) mod assign;
pub(crate) mod assign_bound;
pub(crate) mod assign_fused;
pub(crate) mod assign_scratch;
pub(crate) mod assign_uniform;
pub(crate) mod ceilings;
pub(crate) mod centroid_update;
pub(crate) mod covariance;
pub(crate) mod farthest;
pub(crate) mod gmm_estep;
pub(crate) mod gmm_mstep;
pub(crate) mod kmeans_pp;
pub(crate) mod projection;
pub(crate) mod reduce;
pub(crate) mod rows;
pub(crate) mod silhouette;
pub(crate) mod tiles;

#[cfg(test)]
mod affinity_tests;
#[cfg(test)]
mod assign_fused_tests;
#[cfg(test)]
mod dispatch_tests;
#[cfg(test)]
mod mstep_variant_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tile_core_tests;
#[cfg(test)]
mod tuning_tests;
#[cfg(test)]
mod variant_tests;

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
