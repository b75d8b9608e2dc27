//! Per-cluster partial statistics for the Lloyd update (`shaders/centroids/update.wgsl`).

use bytemuck::{Pod, Zeroable};

pub(crate) use super::partials::{Assigned, ClusterPartials};
use super::sorted::{self, SortCache, SortShape};
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{centroids::update as wgsl, check_params};
use crate::gpu::texture::FlatTexture;
use crate::gpu::Gpu;
use crate::kernels::primitives::gemm::cpu_like;
use crate::kernels::{feature_wg_size, FEATURE_WG_SIZE, ROW_WG_SIZE};

/// Twin of `AccumulateParams` in shaders/centroids/update.wgsl.
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
    weighted: u32,
    slice_width: u32,
    n_slices: u32,
    range_k: u32,
    n_ranges: u32,
}

const _: () = check_params::<AccumulateParams>(wgsl::ENTRY_POINTS);

/// Values of one workgroup's sums (`SHARED_SUMS` in the shader).
const SHARED_SUMS: usize = wgsl::SHARED_SUMS as usize;
/// Clusters of one workgroup's range (`SHARED_CLUSTERS` in the shader).
const SHARED_CLUSTERS: usize = wgsl::SHARED_CLUSTERS as usize;
/// Whether the segments path reads a weight per row (fixed per pipeline: the shader's
/// `SEGMENT_WEIGHTED`).
pub(crate) const SEGMENT_WEIGHTED: &str = "SEGMENT_WEIGHTED";

/// Largest K of the segments path (`SEGMENT_CLUSTERS` in the shader).
const SEGMENT_CLUSTERS: usize = wgsl::SEGMENT_CLUSTERS as usize;

/// Flat textures of a chunk's rows and of the centroids, for the texture variant
/// (CPU-like adapters): the caller's mirror of the rows (see
/// [`AssignScratch::with_update_textures`](crate::kernels::assign::scratch::AssignScratch::with_update_textures)).
pub(crate) struct UpdateTextures<'a> {
    /// The chunk's rows from its first value.
    pub rows: &'a FlatTexture,
    /// K x D values, into which [`accumulate_cluster_partials`] copies the old centroids.
    pub centroids: &'a FlatTexture,
}

/// How a workgroup's share is cut: features per slice and clusters per range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slicing {
    /// Features per slice (a multiple of 4 for the texture variant).
    pub slice_width: usize,
    /// Clusters per range.
    pub range_k: usize,
}

impl Slicing {
    /// Equal slices of at most 256 features (1024 with texels, four a lane) and as many
    /// clusters as the workgroup memory holds beside them.
    pub(crate) fn for_shape(d: usize, k: usize, texels: bool) -> Self {
        let max_width = if texels { 1024 } else { 256 };
        let d = d.max(1);
        let mut slice_width = d.div_ceil(d.div_ceil(max_width));
        if texels {
            slice_width = slice_width.next_multiple_of(4);
        }
        let range_k = k.min(SHARED_SUMS / slice_width).clamp(1, SHARED_CLUSTERS);
        Self {
            slice_width,
            range_k,
        }
    }

    /// Whether the shader's workgroup memory holds a range's sums.
    pub(crate) fn fits(self) -> bool {
        self.slice_width >= 1
            && self.range_k >= 1
            && self.range_k <= SHARED_CLUSTERS
            && self.range_k * self.slice_width <= SHARED_SUMS
    }

    /// Workgroups per block.
    fn per_block(self, d: usize, k: usize) -> usize {
        d.div_ceil(self.slice_width) * k.div_ceil(self.range_k)
    }
}

/// Records the per-block cluster statistics of `chunk`, each row weighted by its weight when
/// the rows are weighted, into blocks of the chunk that the caller has cleared. GPUs sort
/// the rows by label and sum each cluster's run in pieces ([`sorted`], with the scratch kept
/// in `sort`; where it fits the adapter). On CPU-like adapters, with the flat
/// textures given and D a multiple of 4, the rows are grouped by label and each segment
/// summed in registers ([`UpdatePath::Segments`], K <= `SEGMENT_CLUSTERS`) or the sliced walk
/// reads the textures; otherwise the sliced walk reads the storage buffers. The sliced and
/// segment paths give the same bits, as does the fused assignment and update that K-Means
/// runs instead on GPUs with few clusters and features
/// ([`assign::fused`](crate::kernels::assign::fused)); the sorted path sums in its own fixed
/// order (the same bits for the same labels), within f32 rounding of the others.
pub(crate) fn accumulate_cluster_partials(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    rows: &Assigned<'_>,
    out: &ClusterPartials<'_>,
    textures: Option<&UpdateTextures<'_>>,
    sort: &SortCache,
) -> Result<()> {
    let (d, k) = (rows.d, rows.k);
    let n_blocks = chunk.n_rows.div_ceil(out.block_rows);
    let shape = SortShape::for_shape(chunk.n_rows, d, k, n_blocks);
    if sorts(gpu) && sorted::fits(gpu, chunk.n_rows, d, k, shape) {
        let scratch = sort.get(gpu, chunk.n_rows, k, shape);
        return sorted::record_sorted(gpu, batch, chunk, rows, out, shape, &scratch);
    }
    let texels = textures.filter(|t| {
        d.is_multiple_of(4)
            && cpu_like(gpu)
            && t.centroids.len() == k * d
            && t.rows.len() >= chunk.n_rows * d
    });
    if let Some(t) = texels {
        batch.copy_to_texture(rows.old_centroids.raw(), 0, t.centroids);
    }
    // label_segments walks its block twice and the clusters twice per invocation: within
    // the adapter's loop budget only (GpuInfo::loop_back_edge_budget), else the sliced walk.
    let segment_rows = out.block_rows.min(chunk.n_rows);
    let segments_fit = crate::kernels::fits_loop_budget(gpu, 2 * segment_rows + 2 * k + 8);
    let path = if cpu_like(gpu) && k <= SEGMENT_CLUSTERS && segments_fit {
        UpdatePath::Segments
    } else {
        let slicing = Slicing::for_shape(d, k, texels.is_some());
        let lanes = feature_wg_size(if texels.is_some() {
            slicing.slice_width / 4
        } else {
            slicing.slice_width
        });
        UpdatePath::Sliced(slicing, lanes)
    };
    accumulate_cluster_partials_at(gpu, batch, chunk, rows, out, path, texels)
}

/// How the update runs (every path gives the same bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpdatePath {
    /// `accumulate_cluster_partials[_texture]`: a workgroup per (block, feature slice,
    /// cluster range), with workgroups of the given size (any of
    /// [`feature_wg_sizes`](crate::kernels::feature_wg_sizes)).
    Sliced(Slicing, u32),
    /// `label_segments` then `accumulate_segments`: the rows grouped by label, each segment
    /// summed in registers (CPU-like adapters, K <= `SEGMENT_CLUSTERS`), a texel per
    /// invocation from the textures when given, else a feature per invocation from the
    /// storage buffers (`accumulate_segments_storage`).
    Segments,
}

#[cfg(test)]
thread_local! {
    /// The tests' choice between the sorted update and the others on this thread.
    static SORTED: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with the sorted update taken (where it fits) or not, whatever the design, on this
/// thread (the tests compare whole fits each way).
#[cfg(test)]
pub(crate) fn with_sorted<R>(sorted: bool, f: impl FnOnce() -> R) -> R {
    let was = SORTED.replace(Some(sorted));
    let out = f();
    SORTED.set(was);
    out
}

/// Whether the update takes the sorted path ([`sorted`], where it fits the shape): in the
/// GPU design, or as a test forces it (`with_sorted`). The K-Means workspace budgets the
/// sort's scratch where it does.
pub(crate) fn sorts(gpu: &Gpu) -> bool {
    #[cfg(test)]
    if let Some(forced) = SORTED.get() {
        return forced;
    }
    !cpu_like(gpu)
}

/// [`accumulate_cluster_partials`] by `path` (the textures required by
/// [`UpdatePath::Segments`]) on every adapter: the tests run each (and the sorted update
/// through [`sorted::record_sorted`]).
pub(crate) fn accumulate_cluster_partials_at(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    rows: &Assigned<'_>,
    out: &ClusterPartials<'_>,
    path: UpdatePath,
    textures: Option<&UpdateTextures<'_>>,
) -> Result<()> {
    let (slicing, wg_size) = match (path, textures) {
        (UpdatePath::Sliced(slicing, wg_size), _) => (slicing, wg_size),
        (UpdatePath::Segments, t) => return record_segments(gpu, batch, chunk, rows, out, t),
    };
    let (d, k, block_rows) = (rows.d, rows.k, out.block_rows);
    assert!(slicing.fits(), "{slicing:?} exceeds the workgroup memory");
    let weights = rows.weights;
    let n_blocks = chunk.n_rows.div_ceil(block_rows);
    let grid = gpu.grid((n_blocks * slicing.per_block(d, k)) as u64)?;
    let params = AccumulateParams {
        n_rows: chunk.n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        k: k as u32,
        block_rows: block_rows as u32,
        block_offset: out.block_offset as u32,
        grid_x: grid.x,
        weighted: weights.is_some() as u32,
        slice_width: slicing.slice_width as u32,
        n_slices: d.div_ceil(slicing.slice_width) as u32,
        range_k: slicing.range_k as u32,
        n_ranges: k.div_ceil(slicing.range_k) as u32,
    };
    // x − old centroid and a sum per value; rows, labels and distances read once, every
    // block's partials written once.
    let work = Work::f32s(
        2.0 * (chunk.n_rows * d) as f64,
        (chunk.n_rows * (d + 2 + weights.is_some() as usize) + k * d + n_blocks * k * (d + 3))
            as f64,
    );
    let mut binds = vec![
        ("labels", rows.labels.bind()),
        ("min_sq_dist", rows.min_sq_dist.bind()),
        // Unweighted: never read; the distances stand in (read-only, no allocation).
        ("weights", weights.unwrap_or(rows.min_sq_dist).bind()),
        ("partial_sums", out.sums.bind()),
        ("partial_counts", out.counts.bind()),
        ("partial_sq_dist", out.sq_dist.bind()),
    ];
    let entry = match textures {
        Some(t) => {
            binds.push(("x_texels", t.rows.bind()));
            binds.push(("centroid_texels", t.centroids.bind()));
            wgsl::ACCUMULATE_CLUSTER_PARTIALS_TEXTURE
        }
        None => {
            binds.push(("x", chunk.bind()));
            binds.push(("old_centroids", rows.old_centroids.bind()));
            wgsl::ACCUMULATE_CLUSTER_PARTIALS
        }
    };
    batch.dispatch(
        entry,
        &[(FEATURE_WG_SIZE, wg_size)],
        &params,
        &binds,
        grid,
        work,
    )
}

/// Records [`UpdatePath::Segments`]: `label_segments` (one invocation per block) groups the
/// rows by label, `segment_scalars` sums each segment's w·d² and w, `accumulate_segments` (one invocation per block, cluster and texel of the
/// textures) or `accumulate_segments_storage` (per block, cluster and feature, without
/// them) sums each segment in registers.
fn record_segments(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    rows: &Assigned<'_>,
    out: &ClusterPartials<'_>,
    textures: Option<&UpdateTextures<'_>>,
) -> Result<()> {
    let (d, k, block_rows) = (rows.d, rows.k, out.block_rows);
    assert!(k <= SEGMENT_CLUSTERS);
    assert!(
        textures.is_none() || d.is_multiple_of(4),
        "texels hold 4 features"
    );
    let weights = rows.weights;
    let n_blocks = chunk.n_rows.div_ceil(block_rows);
    let order = DeviceBuffer::<u32>::zeroed(gpu, "rows by label", chunk.n_rows.max(1));
    let segments = DeviceBuffer::<u32>::zeroed(gpu, "label segments", n_blocks * (k + 1));
    let params = |grid_x: u32| AccumulateParams {
        n_rows: chunk.n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        k: k as u32,
        block_rows: block_rows as u32,
        block_offset: out.block_offset as u32,
        grid_x,
        weighted: weights.is_some() as u32,
        slice_width: d as u32,
        n_slices: 1,
        range_k: k as u32,
        n_ranges: 1,
    };
    // Unweighted: never read; the distances stand in (read-only, no allocation).
    let weights_bind = weights.unwrap_or(rows.min_sq_dist).bind();
    let grid = gpu.grid(n_blocks as u64)?;
    batch.dispatch(
        wgsl::LABEL_SEGMENTS,
        &[],
        &params(grid.x),
        &[
            ("labels", rows.labels.bind()),
            ("partial_counts", out.counts.bind()),
            ("order", order.bind()),
            ("segments", segments.bind()),
        ],
        grid,
        // Two passes over the labels; the counts, segments and order written once.
        Work::f32s(0.0, (3 * chunk.n_rows + n_blocks * (2 * k + 1)) as f64),
    )?;
    let weighted = [(SEGMENT_WEIGHTED, weights.is_some() as u32)];
    // Each segment's w·d² and w, one invocation per (block, cluster).
    let grid = gpu.grid((n_blocks * k).div_ceil(ROW_WG_SIZE as usize) as u64)?;
    batch.dispatch(
        wgsl::SEGMENT_SCALARS,
        &weighted,
        &params(grid.x),
        &[
            ("min_sq_dist", rows.min_sq_dist.bind()),
            ("weights", weights_bind),
            ("order", order.bind()),
            ("segments", segments.bind()),
            ("partial_sq_dist", out.sq_dist.bind()),
        ],
        grid,
        Work::f32s(
            2.0 * chunk.n_rows as f64,
            (chunk.n_rows * (2 + weights.is_some() as usize) + 2 * n_blocks * k) as f64,
        ),
    )?;
    let mut binds = vec![
        ("weights", weights_bind),
        ("order", order.bind()),
        ("segments", segments.bind()),
        ("partial_sums", out.sums.bind()),
    ];
    // Invocations per segment: SEGMENT_SPAN (4) texels, or features, each.
    let (entry, per_segment) = match textures {
        Some(t) => {
            binds.push(("x_texels", t.rows.bind()));
            binds.push(("centroid_texels", t.centroids.bind()));
            (wgsl::ACCUMULATE_SEGMENTS, (d / 4).div_ceil(4))
        }
        None => {
            binds.push(("x", chunk.bind()));
            binds.push(("old_centroids", rows.old_centroids.bind()));
            (wgsl::ACCUMULATE_SEGMENTS_STORAGE, d.div_ceil(4))
        }
    };
    let invocations = n_blocks * k * per_segment;
    let grid = gpu.grid(invocations.div_ceil(ROW_WG_SIZE as usize) as u64)?;
    batch.dispatch(
        entry,
        &weighted,
        &params(grid.x),
        &binds,
        grid,
        // x − old centroid and a sum per value; rows and order read once, every block's
        // partials written once.
        Work::f32s(
            2.0 * (chunk.n_rows * d) as f64,
            (chunk.n_rows * (d + 1 + weights.is_some() as usize) + k * d + n_blocks * k * d) as f64,
        ),
    )
}
