//! What every path of the Lloyd update reads and writes for one chunk of rows: the
//! assignment's results in, the per-block partials out. Apart from [`update`](super::update),
//! which chooses the path, so that the sorted update ([`sorted`](super::sorted)) and the
//! others share them without importing each other.

use crate::gpu::device_buffer::DeviceBuffer;

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

/// Output buffers of [`accumulate_cluster_partials`](super::update::accumulate_cluster_partials)
/// and of the sorted update ([`record_sorted`](super::sorted::record_sorted)): per block of
/// `block_rows` rows, numbered from the chunk's `block_offset`.
pub(crate) struct ClusterPartials<'a> {
    /// Rows per block.
    pub block_rows: usize,
    /// The chunk's first global block.
    pub block_offset: usize,
    /// `[block][cluster][feature]`: sums of x − old centroid.
    pub sums: &'a DeviceBuffer<f32>,
    /// `[block][cluster]`: member counts.
    pub counts: &'a DeviceBuffer<u32>,
    /// `[block][cluster][2]`: sums of weighted squared distances and of weights.
    pub sq_dist: &'a DeviceBuffer<f32>,
}
