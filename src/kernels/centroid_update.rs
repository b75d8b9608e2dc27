//! Per-cluster partial statistics for the Lloyd update (`shaders/centroid_update.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::{feature_wg_size, FEATURE_WG_SIZE};
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
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

/// What the update reads for one chunk of rows: the assignment's results and the centroids
/// they were assigned to.
pub(crate) struct Assigned<'a> {
    /// Features per row.
    pub d: usize,
    /// Clusters.
    pub k: usize,
    /// One label per row of the chunk.
    pub labels: &'a DeviceBuffer<u32>,
    /// One squared distance per row of the chunk.
    pub min_sq_dist: &'a DeviceBuffer<f32>,
    /// One weight per row of the chunk, when the rows are weighted.
    pub weights: Option<&'a DeviceBuffer<f32>>,
    /// The K x D centroids the rows were assigned to.
    pub old_centroids: &'a DeviceBuffer<f32>,
}

/// Output buffers of [`accumulate_cluster_partials`]: per block of `block_rows` rows,
/// numbered from the chunk's `block_offset`.
pub(crate) struct ClusterPartials<'a> {
    /// Rows per block.
    pub block_rows: usize,
    /// The chunk's first global block.
    pub block_offset: usize,
    /// [block][cluster][feature] sums of x − old centroid.
    pub sums: &'a DeviceBuffer<f32>,
    /// [block][cluster] member counts.
    pub counts: &'a DeviceBuffer<u32>,
    /// [block][cluster][2]: sums of weighted squared distances and of weights.
    pub sq_dist: &'a DeviceBuffer<f32>,
}

/// Records the per-block cluster statistics of `chunk`, each row weighted by its weight when
/// the rows are weighted. The partial buffers must have been cleared.
pub(crate) fn accumulate_cluster_partials(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    rows: &Assigned<'_>,
    out: &ClusterPartials<'_>,
) -> Result<()> {
    accumulate_cluster_partials_at(gpu, batch, chunk, rows, out, feature_wg_size(rows.d))
}

/// [`accumulate_cluster_partials`] with workgroups of `wg_size`, any of
/// [`feature_wg_sizes`](super::feature_wg_sizes): the tests run each.
pub(super) fn accumulate_cluster_partials_at(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    rows: &Assigned<'_>,
    out: &ClusterPartials<'_>,
    wg_size: u32,
) -> Result<()> {
    let (d, k, block_rows) = (rows.d, rows.k, out.block_rows);
    let weights = rows.weights;
    let grid = gpu.grid(chunk.n_rows.div_ceil(block_rows) as u64)?;
    let params = AccumulateParams {
        n_rows: chunk.n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        k: k as u32,
        block_rows: block_rows as u32,
        block_offset: out.block_offset as u32,
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
            ("labels", rows.labels.bind()),
            ("min_sq_dist", rows.min_sq_dist.bind()),
            // Unweighted: never read; the distances stand in (read-only, no allocation).
            ("weights", weights.unwrap_or(rows.min_sq_dist).bind()),
            ("old_centroids", rows.old_centroids.bind()),
            ("partial_sums", out.sums.bind()),
            ("partial_counts", out.counts.bind()),
            ("partial_sq_dist", out.sq_dist.bind()),
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
