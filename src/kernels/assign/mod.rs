//! Nearest-centroid assignment (`shaders/assign/`): every row's nearest centroid (ties: the
//! lowest index) by the exact squared distance d̂ₖ = Σⱼ (xⱼ − cₖⱼ)², summed as one fma chain
//! over j in order, and that distance; the Lloyd update fused in where it fits; the N x K
//! distance table.
//!
//! Every variant gives the same bits, so the choice changes speed only. The choice is one
//! [`AssignVariant`], made in one place ([`choose`]):
//!
//! | variant | file | where |
//! |---|---|---|
//! | [`AssignVariant::Stream`] | [`stream`] | GPUs, K ≤ [`SMALL_K`]: the difference form, coalesced rows streamed once with the next piece in flight |
//! | [`AssignVariant::RowsUpdate`] | [`fused`] | the difference form on staged pieces with the Lloyd update's partials in its epilogue (K-Means steps, D ≤ 64) |
//! | [`AssignVariant::Tiled`] | [`tiled`] (+ [`prepare`], [`recheck`]) | GPUs, larger K: the GEMM form on the tile core, each candidate proved by [`bound`] or rechecked |
//! | [`AssignVariant::TiledSubgroup`] | [`tiled_subgroup`] (+ the same) | GPUs with subgroups that hold a tile row: the same, a row's lane searches merged by subgroup shuffles |
//! | [`AssignVariant::Texture`] | [`texture`] (+ [`prepare`], [`uniform`]) | CPU-like adapters: the GEMM form from flat textures |
//! | [`AssignVariant::Uniform`] | [`uniform`] | CPU-like adapters: one row per invocation, centroids from uniform slices |
//! | [`AssignVariant::Registers`] | [`registers`] | CPU-like adapters: one row per invocation, centroids from storage |
//!
//! GPUs time the streamed form (K ≤ [`SMALL_K`]) and the GEMM form in every tile and merge
//! (the fused step where it fits is taken without timing); CPU-like adapters time their own
//! candidates; both on first use (the autotuner, [`Gpu::tuned`](crate::gpu::Gpu)). [`args`] holds what every kernel
//! shares, [`scratch`] the GEMM form's buffers, [`distances`] the distance table.

pub(crate) mod args;
pub(crate) mod bound;
pub(crate) mod distances;
pub(crate) mod fused;
pub(crate) mod prepare;
pub(crate) mod recheck;
pub(crate) mod registers;
pub(crate) mod scratch;
pub(crate) mod stream;
pub(crate) mod texture;
pub(crate) mod tiled;
pub(crate) mod tiled_subgroup;
pub(crate) mod uniform;

#[cfg(test)]
mod fused_tests;
#[cfg(test)]
mod recheck_tests;

pub(crate) use args::{Assignment, SMALL_K};
pub(crate) use distances::{pairwise_distances, DistanceTable};
pub(crate) use scratch::AssignScratch;

use crate::error::{Error, Result};
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::texture::FlatTexture;
use crate::gpu::tuning::Variant;
use crate::gpu::Gpu;
use crate::kernels::centroids::update::{self, Assigned, ClusterPartials};
use crate::kernels::fits_loop_budget;
use crate::kernels::primitives::gemm::{cpu_like, GemmConfig};
use uniform::{record_assign_uniform, Rows, SLICE_VEC4S};

/// The kernels of the assignment, each giving the same bits (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AssignVariant {
    /// One row per invocation, centroids from storage (CPU-like adapters).
    Registers,
    /// One row per invocation, centroids from 64 KiB uniform slices (CPU-like adapters).
    Uniform,
    /// Rows streamed through workgroup memory with the next piece in flight, K fixed per
    /// pipeline, K ≤ SMALL_K (GPUs).
    Stream,
    /// The small-K difference form on staged pieces with the Lloyd update's per-block
    /// partials in its epilogue (GPUs, K-Means steps that fit it: [`fused::fits`]).
    RowsUpdate,
    /// The GEMM form on the staged tile core (GPUs).
    Tiled(GemmConfig),
    /// [`AssignVariant::Tiled`] with each row's lane searches merged in subgroups (GPUs with
    /// `Features::SUBGROUP` whose subgroups hold a tile row: [`tiled_subgroup::runs`]).
    TiledSubgroup(GemmConfig),
    /// The GEMM form from flat textures (CPU-like adapters).
    Texture,
}

impl Variant for AssignVariant {
    const FAMILY: &'static str = "assign";

    fn name(self) -> &'static str {
        match self {
            Self::Registers => "assign_nearest_centroid_registers",
            Self::Uniform => "assign_nearest_centroid_uniform",
            Self::Stream => "assign_stream",
            Self::RowsUpdate => "assign_rows_update",
            Self::Texture => "assign_texture",
            Self::Tiled(c) if c == GemmConfig::LARGE => "assign_tiled 128x128",
            Self::Tiled(c) if c == GemmConfig::LARGE_DEEP => "assign_tiled 128x128 depth 16",
            Self::Tiled(c) if c == GemmConfig::SMALL => "assign_tiled 64x64",
            Self::Tiled(c) if c == GemmConfig::NARROW => "assign_tiled 128x32",
            Self::Tiled(_) => "assign_tiled",
            Self::TiledSubgroup(c) if c == GemmConfig::LARGE => "assign_tiled_subgroup 128x128",
            Self::TiledSubgroup(c) if c == GemmConfig::LARGE_DEEP => {
                "assign_tiled_subgroup 128x128 depth 16"
            }
            Self::TiledSubgroup(c) if c == GemmConfig::SMALL => "assign_tiled_subgroup 64x64",
            Self::TiledSubgroup(c) if c == GemmConfig::NARROW => "assign_tiled_subgroup 128x32",
            Self::TiledSubgroup(_) => "assign_tiled_subgroup",
        }
    }
}

impl AssignVariant {
    /// Every variant that assigns alone (each tile configuration of the tiled kernel): what
    /// the tests run against each other.
    #[cfg(test)]
    pub(crate) fn all() -> Vec<AssignVariant> {
        let mut v = vec![Self::Registers, Self::Uniform, Self::Stream, Self::Texture];
        v.extend(GemmConfig::ALL.map(Self::Tiled));
        v.extend(GemmConfig::ALL.map(Self::TiledSubgroup));
        v
    }

    /// Whether it computes the GEMM form (centroid side prepared, rows maybe rechecked).
    fn gemm_form(self) -> bool {
        matches!(
            self,
            Self::Tiled(_) | Self::TiledSubgroup(_) | Self::Texture
        )
    }

    /// Whether it can run on `chunk` with `d` features and `k` centroids (`blocks`: the
    /// rows per block of the update's partials, when the caller wants them), whatever the
    /// adapter's design.
    pub(crate) fn runs(
        self,
        gpu: &Gpu,
        chunk: &Chunk,
        (d, k): (usize, usize),
        blocks: Option<usize>,
    ) -> bool {
        match self {
            Self::Stream => stream::runs(k),
            Self::RowsUpdate => blocks.is_some_and(|b| fused::fits(gpu, chunk, d, k, b)),
            Self::Uniform => d.div_ceil(4) <= SLICE_VEC4S,
            Self::Texture => {
                let start = chunk.bind_offset + 4 * chunk.x_offset as u64;
                d.is_multiple_of(4) && FlatTexture::can_copy_from(&chunk.buffer, start)
            }
            Self::TiledSubgroup(config) => tiled_subgroup::runs(gpu, config),
            Self::Registers | Self::Tiled(_) => true,
        }
    }

    /// Whether one invocation stays within the adapter's loop budget
    /// ([`GpuInfo::loop_back_edge_budget`](crate::gpu::GpuInfo::loop_back_edge_budget)) at
    /// D x K: the register and texture kernels walk all K centroids in one dispatch, where
    /// the uniform one takes a slice at a time. Past the budget llvmpipe would cut the walk
    /// short and return wrong labels, which the autotuner would even time as faster.
    fn within_loop_budget(self, gpu: &Gpu, d: usize, k: usize) -> bool {
        let back_edges = match self {
            Self::Registers => registers::back_edges(d, k),
            Self::Texture => texture::back_edges(d, k),
            Self::Uniform
            | Self::Stream
            | Self::RowsUpdate
            | Self::Tiled(_)
            | Self::TiledSubgroup(_) => 0,
        };
        fits_loop_budget(gpu, back_edges)
    }
}

#[cfg(test)]
thread_local! {
    /// The tests' choice of variant on this thread, taken wherever it runs.
    static FORCED: std::cell::Cell<Option<AssignVariant>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with `variant` chosen wherever it can run, on this thread (the tests compare whole
/// fits with the fused kernel and without).
#[cfg(test)]
pub(crate) fn with_variant<R>(variant: AssignVariant, f: impl FnOnce() -> R) -> R {
    let was = FORCED.replace(Some(variant));
    let out = f();
    FORCED.set(was);
    out
}

/// Rows the autotuner times each variant on: on CPU-like adapters a slice of the work; on
/// GPUs enough 128-row tiles to fill every multiprocessor of a large GPU several times, so
/// that a larger tile is not timed at a fraction of a wave.
const TRIAL_ROWS: usize = 16384;
const GPU_TRIAL_ROWS: usize = 1 << 18;

/// The variant for assigning `chunk` (D features) to the centroids of `to`, with the update's
/// partials in blocks of `blocks` rows when given: [`AssignVariant::RowsUpdate`] on GPUs
/// wherever it fits; otherwise the only candidate or the autotuner's choice among the GPU
/// design's (the streamed rows for K ≤ [`SMALL_K`], the GEMM form in each tile shape) or the
/// CPU-like adapters' variants, timed on the first rows of `chunk` with scratch outputs (the
/// textures copied before the timing, as a workspace copies them once), cached per device.
///
/// Errors: no variant fits this shape on this adapter (D past what a CPU adapter's loop
/// budget lets an invocation sum: [`Error::DeviceLimit`]), and the trials' GPU errors.
pub(crate) fn choose(
    gpu: &Gpu,
    chunk: &Chunk,
    d: usize,
    to: &Assignment<'_>,
    blocks: Option<usize>,
    scratch: &AssignScratch,
) -> Result<AssignVariant> {
    let k = to.k;
    #[cfg(test)]
    if let Some(v) = FORCED.get().filter(|v| v.runs(gpu, chunk, (d, k), blocks)) {
        return Ok(v);
    }
    let candidates: Vec<AssignVariant> = if cpu_like(gpu) {
        [
            AssignVariant::Registers,
            AssignVariant::Uniform,
            AssignVariant::Texture,
        ]
        .into_iter()
        .filter(|v| v.runs(gpu, chunk, (d, k), blocks) && v.within_loop_budget(gpu, d, k))
        .collect()
    } else if AssignVariant::RowsUpdate.runs(gpu, chunk, (d, k), blocks) {
        // A K-Means step with few clusters and features: one read of X for both halves of the
        // step, which no assignment alone can beat (nor be timed against).
        return Ok(AssignVariant::RowsUpdate);
    } else {
        // GPUs: the streamed difference form where K ≤ SMALL_K, and the GEMM form in each
        // tile shape, timed on this device (the same bits from each).
        let stream = (k <= SMALL_K)
            .then_some(AssignVariant::Stream)
            .filter(|v| v.runs(gpu, chunk, (d, k), blocks));
        stream
            .into_iter()
            .chain(
                GemmConfig::all_fitting(gpu)
                    .into_iter()
                    .map(AssignVariant::Tiled),
            )
            .chain(
                GemmConfig::all_fitting(gpu)
                    .into_iter()
                    .map(AssignVariant::TiledSubgroup)
                    .filter(|v| v.runs(gpu, chunk, (d, k), blocks)),
            )
            .collect()
    };
    match candidates[..] {
        [] => {
            return Err(Error::DeviceLimit {
                what: format!(
                    "the nearest-centroid search over {d} features and {k} centroids on this \
                     CPU adapter, whose loops stop after a fixed number of iterations (reduce \
                     the features, e.g. with PCA, or use a GPU)"
                ),
                requested: d as u64,
                limit_name: "loop back-edges per invocation (llvmpipe)",
                limit: gpu.info().loop_back_edge_budget().unwrap_or(0),
            })
        }
        [only] => return Ok(only),
        _ => {}
    }
    if let Some(v) = gpu.tuned_choice(&candidates, (d, k)) {
        return Ok(v);
    }
    let trial_rows = if cpu_like(gpu) {
        TRIAL_ROWS
    } else {
        GPU_TRIAL_ROWS
    };
    let rows = chunk.n_rows.min(trial_rows);
    let labels = DeviceBuffer::zeroed(gpu, "assign trial labels", rows);
    let min_sq_dist = DeviceBuffer::zeroed(gpu, "assign trial distances", rows);
    let changed = DeviceBuffer::zeroed(gpu, "assign trial count", 1);
    let trial = Assignment {
        labels: &labels,
        min_sq_dist: &min_sq_dist,
        changed: &changed,
        ..*to
    };
    if candidates.contains(&AssignVariant::Texture) {
        let mut batch = Batch::untimed(gpu, "assign trial textures");
        scratch.record_mirrors(gpu, &mut batch, chunk, d, to)?;
        batch.finish()?;
    }
    gpu.tuned(&candidates, (d, k), |variant| {
        gpu.time_trial(
            |batch| record_assign(gpu, batch, variant, chunk, rows, d, &trial, scratch),
            &changed,
        )
    })
}

/// Records the assignment of every row of `chunk` (D features) to its nearest centroid:
/// writes the labels and squared distances of `to` and adds the number of changed labels to
/// its counter.
pub(crate) fn assign_nearest_centroid(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    to: &Assignment<'_>,
) -> Result<()> {
    let scratch = AssignScratch::new(gpu, chunk.n_rows, d, to.k);
    assign_nearest_centroid_with(gpu, batch, chunk, d, to, &scratch)
}

/// [`assign_nearest_centroid`] with scratch kept by the caller.
pub(crate) fn assign_nearest_centroid_with(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    to: &Assignment<'_>,
    scratch: &AssignScratch,
) -> Result<()> {
    let variant = choose(gpu, chunk, d, to, None, scratch)?;
    record_assign(gpu, batch, variant, chunk, chunk.n_rows, d, to, scratch)
}

/// The Lloyd update's side of a K-Means step: the centroids the rows are assigned to are
/// `to.centroids`; the rows' weights, and where the per-block partials go.
pub(crate) struct UpdateSums<'a> {
    /// One weight per row of the chunk, when the rows are weighted.
    pub weights: Option<&'a DeviceBuffer<f32>>,
    /// The per-block partials.
    pub partials: &'a ClusterPartials<'a>,
}

/// Records one K-Means step over `chunk`: the assignment to `to`'s centroids and the update's
/// per-block partials, in one kernel where [`AssignVariant::RowsUpdate`] is chosen, else the
/// chosen assignment then the centroid update
/// ([`accumulate_cluster_partials`](update::accumulate_cluster_partials)).
pub(crate) fn record_step(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    (chunk, d): (&Chunk, usize),
    to: &Assignment<'_>,
    sums: &UpdateSums<'_>,
    scratch: &AssignScratch,
) -> Result<()> {
    let blocks = Some(sums.partials.block_rows);
    let variant = choose(gpu, chunk, d, to, blocks, scratch)?;
    if variant == AssignVariant::RowsUpdate {
        return fused::record_assign_rows_update(
            gpu,
            batch,
            chunk,
            d,
            to,
            sums.weights,
            sums.partials,
        );
    }
    record_assign(gpu, batch, variant, chunk, chunk.n_rows, d, to, scratch)?;
    let rows = Assigned {
        d,
        k: to.k,
        labels: to.labels,
        min_sq_dist: to.min_sq_dist,
        weights: sums.weights,
        old_centroids: to.centroids,
    };
    scratch.with_update_textures(chunk, |textures| {
        let partials = sums.partials;
        update::accumulate_cluster_partials(
            gpu,
            batch,
            chunk,
            &rows,
            partials,
            textures,
            &scratch.sort,
        )
    })
}

/// Records `variant` over the first `n_rows` rows of `chunk` (not
/// [`AssignVariant::RowsUpdate`], which needs the update's buffers: [`record_step`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn record_assign(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    variant: AssignVariant,
    chunk: &Chunk,
    n_rows: usize,
    d: usize,
    to: &Assignment<'_>,
    scratch: &AssignScratch,
) -> Result<()> {
    let k = to.k;
    let work = Work::f32s(
        2.0 * (n_rows * d * k) as f64,
        (n_rows * (d + 2) + k * d) as f64,
    );
    if variant.gemm_form() {
        prepare::record_prepare(gpu, batch, chunk, d, to, scratch)?;
        batch.clear_values(&scratch.recheck);
    }
    let rows = (chunk, n_rows, d);
    match variant {
        AssignVariant::Uniform => {
            let every_row = Rows::All(&scratch.recheck);
            record_assign_uniform(gpu, batch, chunk, n_rows, d, to, every_row)
        }
        AssignVariant::Registers => {
            registers::record_registers(gpu, batch, chunk, n_rows, d, to, work)
        }
        AssignVariant::Stream => stream::record_stream(gpu, batch, chunk, n_rows, d, to, work),
        AssignVariant::RowsUpdate => Err(Error::Gpu(
            "assign_rows_update records with the update's buffers (record_step)".into(),
        )),
        AssignVariant::Tiled(config) => {
            tiled::record_tiled(gpu, batch, config, rows, to, scratch, work)?;
            recheck::record_recheck(gpu, batch, chunk, n_rows, d, to, scratch)
        }
        AssignVariant::TiledSubgroup(config) => {
            tiled_subgroup::record_tiled_subgroup(gpu, batch, config, rows, to, scratch, work)?;
            recheck::record_recheck(gpu, batch, chunk, n_rows, d, to, scratch)
        }
        AssignVariant::Texture => {
            texture::record_texture(gpu, batch, rows, to, scratch, work)?;
            // The rows the GEMM form could not decide: on CPU-like adapters the uniform kernel
            // compares them with every centroid (the same bits, and about 16x faster there
            // than storage loads) where D fits a slice, else assign_recheck.
            if AssignVariant::Uniform.runs(gpu, chunk, (d, k), None) {
                let listed = Rows::Rechecked(&scratch.recheck);
                return record_assign_uniform(gpu, batch, chunk, n_rows, d, to, listed);
            }
            recheck::record_recheck(gpu, batch, chunk, n_rows, d, to, scratch)
        }
    }
}
