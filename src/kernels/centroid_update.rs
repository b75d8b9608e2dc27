//! Per-cluster partial statistics for the Lloyd update (`shaders/centroid_update.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::{feature_wg_size, FEATURE_WG_SIZE};
use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::buffer::Chunk;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{centroid_update as wgsl, check_params};
use crate::gpu::Gpu;

/// Twin of `AccumulateParams` in shaders/centroid_update.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct AccumulateParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    k: u32,
    block_rows: u32,
    block_offset: u32,
    grid_x: u32,
    in_workgroup_memory: u32,
    weighted: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

const _: () = check_params::<AccumulateParams>(wgsl::ENTRY_POINTS);

/// Largest K x D accumulated in workgroup memory (`SHARED_SUMS` in the shader).
const SHARED_SUMS: usize = wgsl::SHARED_SUMS as usize;
/// Largest K accumulated in workgroup memory (`SHARED_CLUSTERS` in the shader).
const SHARED_CLUSTERS: usize = wgsl::SHARED_CLUSTERS as usize;

/// Output buffers of [`accumulate_cluster_partials`], sized for `n_blocks` blocks.
pub(crate) struct ClusterPartials<'a> {
    /// [block][cluster][feature] sums of x − old centroid.
    pub sums: &'a wgpu::Buffer,
    /// [block][cluster] member counts.
    pub counts: &'a wgpu::Buffer,
    /// [block][cluster][2]: sums of weighted squared distances and of weights.
    pub sq_dist: &'a wgpu::Buffer,
}

/// Records the per-block cluster statistics of `chunk` (blocks of `block_rows` rows,
/// numbered from `block_offset`), each row weighted by its value in `weights` when given.
/// The partial buffers must have been cleared.
#[allow(clippy::too_many_arguments)]
pub(crate) fn accumulate_cluster_partials(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    k: usize,
    block_rows: usize,
    block_offset: usize,
    labels: &wgpu::Buffer,
    min_sq_dist: &wgpu::Buffer,
    weights: Option<&wgpu::Buffer>,
    old_centroids: &wgpu::Buffer,
    out: &ClusterPartials<'_>,
) -> Result<()> {
    accumulate_cluster_partials_at(
        gpu,
        batch,
        chunk,
        d,
        k,
        block_rows,
        block_offset,
        labels,
        min_sq_dist,
        weights,
        old_centroids,
        out,
        feature_wg_size(d),
    )
}

/// [`accumulate_cluster_partials`] with workgroups of `wg_size`, any of
/// [`feature_wg_sizes`](super::feature_wg_sizes): the tests run each.
#[allow(clippy::too_many_arguments)]
pub(super) fn accumulate_cluster_partials_at(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    k: usize,
    block_rows: usize,
    block_offset: usize,
    labels: &wgpu::Buffer,
    min_sq_dist: &wgpu::Buffer,
    weights: Option<&wgpu::Buffer>,
    old_centroids: &wgpu::Buffer,
    out: &ClusterPartials<'_>,
    wg_size: u32,
) -> Result<()> {
    let grid = gpu.grid(chunk.n_rows.div_ceil(block_rows) as u64)?;
    let params = AccumulateParams {
        n_rows: chunk.n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        k: k as u32,
        block_rows: block_rows as u32,
        block_offset: block_offset as u32,
        grid_x: grid.x,
        in_workgroup_memory: (k * d <= SHARED_SUMS && k <= SHARED_CLUSTERS) as u32,
        weighted: weights.is_some() as u32,
        _pad0: 0,
        _pad1: 0,
        _pad2: 0,
    };
    batch.dispatch(
        wgsl::ACCUMULATE_CLUSTER_PARTIALS,
        &[(FEATURE_WG_SIZE, wg_size)],
        &params,
        &[
            ("x", chunk.bind()),
            ("labels", Bind::Whole(labels)),
            ("min_sq_dist", Bind::Whole(min_sq_dist)),
            // Unweighted: never read; the labels stand in (read-only, no allocation).
            ("weights", Bind::Whole(weights.unwrap_or(labels))),
            ("old_centroids", Bind::Whole(old_centroids)),
            ("partial_sums", Bind::Whole(out.sums)),
            ("partial_counts", Bind::Whole(out.counts)),
            ("partial_sq_dist", Bind::Whole(out.sq_dist)),
        ],
        grid,
        // x − old centroid and a sum per value; rows, labels and distances read once, every
        // block's partials written once.
        Work::f32s(
            2.0 * (chunk.n_rows * d) as f64,
            (chunk.n_rows * (d + 2 + weights.is_some() as usize)
                + k * d
                + chunk.n_rows.div_ceil(block_rows) * k * (d + 3)) as f64,
        ),
    )
}
