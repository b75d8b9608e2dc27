//! Per-cluster partial statistics for the Lloyd update (`shaders/centroid_update.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::feature_wg_size;
use crate::error::Result;
use crate::gpu::buffer::Chunk;
use crate::gpu::kernel::{Batch, Bind, Shader};
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
}

/// Largest K x D accumulated in workgroup memory (`SHARED_SUMS` in the shader).
const SHARED_SUMS: usize = 2048;
/// Largest K accumulated in workgroup memory (`SHARED_CLUSTERS` in the shader).
const SHARED_CLUSTERS: usize = 512;

/// Output buffers of [`accumulate_cluster_partials`], sized for `n_blocks` blocks.
pub(crate) struct ClusterPartials<'a> {
    /// [block][cluster][feature] sums of x − old centroid.
    pub sums: &'a wgpu::Buffer,
    /// [block][cluster] member counts.
    pub counts: &'a wgpu::Buffer,
    /// [block][cluster] sums of squared distances.
    pub sq_dist: &'a wgpu::Buffer,
}

/// Records the per-block cluster statistics of `chunk` (blocks of `block_rows` rows,
/// numbered from `block_offset`). The partial buffers must have been cleared.
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
    old_centroids: &wgpu::Buffer,
    out: &ClusterPartials<'_>,
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
    };
    batch.dispatch(
        Shader::CentroidUpdate,
        "accumulate_cluster_partials",
        feature_wg_size(d),
        &params,
        &[
            (1, chunk.bind()),
            (2, Bind::Whole(labels)),
            (3, Bind::Whole(min_sq_dist)),
            (4, Bind::Whole(old_centroids)),
            (5, Bind::Whole(out.sums)),
            (6, Bind::Whole(out.counts)),
            (7, Bind::Whole(out.sq_dist)),
        ],
        grid,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn shared_sizes_match_the_shader() {
        let src = include_str!("../../shaders/centroid_update.wgsl");
        assert!(src.contains(&format!(
            "const SHARED_SUMS: u32 = {}u;",
            super::SHARED_SUMS
        )));
        assert!(src.contains(&format!(
            "const SHARED_CLUSTERS: u32 = {}u;",
            super::SHARED_CLUSTERS
        )));
        assert!(src.contains(&format!("array<f32, {}>", super::SHARED_SUMS)));
        assert!(src.contains(&format!("array<u32, {}>", super::SHARED_CLUSTERS)));
    }

    #[test]
    fn params_match_the_wgsl_layout() {
        let size = super::super::layout::wgsl_struct_size(
            include_str!("../../shaders/centroid_update.wgsl"),
            "AccumulateParams",
        );
        assert_eq!(
            size as usize,
            std::mem::size_of::<super::AccumulateParams>()
        );
    }
}
