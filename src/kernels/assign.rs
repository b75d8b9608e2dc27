//! Nearest-centroid assignment and point-to-centroid distances (`shaders/assign.wgsl`).
//!
//! Every variant gives the same bits (labels by the exact distance, ties to the lowest index,
//! and that distance): the GEMM form proves its candidate or rechecks the row
//! ([`assign_bound`](super::assign_bound)). GPUs run `assign_rows` (K ≤ [`SMALL_K`]) or
//! `assign_tiled` by fixed rules; CPU-like adapters time their candidates
//! ([`tiles`](super::tiles)).

use bytemuck::{Pod, Zeroable};

use super::assign_bound::beta;
pub(crate) use super::assign_scratch::AssignScratch;
use super::assign_uniform::{record_assign_uniform, Rows};
use super::tiles::{cpu_like, GemmConfig};
use super::ROW_WG_SIZE;
use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{assign as wgsl, check_params};
use crate::gpu::texture::FlatTexture;
use crate::gpu::tuning::TuneKey;
use crate::gpu::Gpu;

/// Register accumulators of the one-row kernels (`SMALL_K` in the shader). Up to this K GPUs
/// run the coalesced difference form (`assign_rows`).
pub(crate) const SMALL_K: usize = wgsl::SMALL_K as usize;

/// Twin of `AssignParams` in shaders/assign.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct AssignParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    k: u32,
    grid_x: u32,
    sqrt_output: u32,
    k_first: u32,
    slice_flags: u32,
    d4: u32,
    x_vec4: u32,
    beta: f32,
    _pad0: u32,
}

const _: () = check_params::<AssignParams>(wgsl::ENTRY_POINTS);

impl AssignParams {
    /// These parameters for `count` centroids from `k_first`, with the slice flags
    /// (`FIRST_SLICE`, `LAST_SLICE`, `RECHECK_ROWS` of the shader).
    pub(super) fn slice(self, k_first: usize, count: usize, slice_flags: u32) -> Self {
        Self {
            k: count as u32,
            k_first: k_first as u32,
            slice_flags,
            ..self
        }
    }
}

/// The centroids an assignment reads and the per-row results it writes.
pub(crate) struct Assignment<'a> {
    /// K x D centroids, row-major.
    pub centroids: &'a DeviceBuffer<f32>,
    /// Centroids to compare with (the first `k` rows of `centroids`).
    pub k: usize,
    /// One label per row of the chunk.
    pub labels: &'a DeviceBuffer<u32>,
    /// One squared distance per row of the chunk.
    pub min_sq_dist: &'a DeviceBuffer<f32>,
    /// One u32 to which the number of changed labels is added.
    pub changed: &'a DeviceBuffer<u32>,
}

/// The kernels of the assignment, each giving the same bits (see the shader).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AssignVariant {
    /// One row per invocation, centroids from storage (CPU-like adapters).
    Registers,
    /// One row per invocation, centroids from 64 KiB uniform slices (CPU-like adapters).
    Uniform,
    /// Coalesced rows and centroids in workgroup memory, K ≤ SMALL_K (GPUs).
    Rows,
    /// The GEMM form on the staged tile core (GPUs).
    Tiled(GemmConfig),
    /// The GEMM form from flat textures (CPU-like adapters).
    Texture,
}

impl AssignVariant {
    /// Every variant the tests run (each tile configuration of the tiled kernel).
    pub(crate) fn all() -> Vec<AssignVariant> {
        let mut v = vec![Self::Registers, Self::Uniform, Self::Rows, Self::Texture];
        v.extend(GemmConfig::ALL.map(Self::Tiled));
        v
    }

    /// Its name for the autotuner and reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Registers => "assign_nearest_centroid_registers",
            Self::Uniform => "assign_nearest_centroid_uniform",
            Self::Rows => "assign_rows",
            Self::Texture => "assign_texture",
            Self::Tiled(c) => match c.label() {
                "128x128" => "assign_tiled 128x128",
                "64x64" => "assign_tiled 64x64",
                "128x32" => "assign_tiled 128x32",
                _ => "assign_tiled",
            },
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::all().into_iter().find(|v| v.name() == name)
    }

    /// Whether it computes the GEMM form (centroid side prepared, rows maybe rechecked).
    fn gemm_form(self) -> bool {
        matches!(self, Self::Tiled(_) | Self::Texture)
    }
}

/// vec4s in one uniform slice of centroids (`SLICE_VEC4S` in the shader).
pub(super) const SLICE_VEC4S: usize = wgsl::SLICE_VEC4S as usize;

/// Bytes of one slice (the binding size of `centroid_slice`).
pub(super) const SLICE_BYTES: u64 = 16 * SLICE_VEC4S as u64;

/// Rows per invocation of `assign_texture`.
const TEXTURE_ROWS: usize = wgsl::TEXTURE_ROWS as usize;

/// Rows per workgroup of `assign_rows`.
const ROWS_WG: usize = wgsl::ROWS_WG as usize;

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
    let variant = assign_variant(gpu, chunk, d, to, scratch)?;
    record_assign(gpu, batch, variant, chunk, chunk.n_rows, d, to, scratch)
}

/// Whether `variant` can run on `chunk` with `d` features and `k` centroids.
pub(super) fn runs(variant: AssignVariant, chunk: &Chunk, d: usize, k: usize) -> bool {
    match variant {
        AssignVariant::Rows => k <= SMALL_K,
        AssignVariant::Uniform => d.div_ceil(4) <= SLICE_VEC4S,
        AssignVariant::Texture => {
            let start = chunk.bind_offset + 4 * chunk.x_offset as u64;
            d.is_multiple_of(4) && FlatTexture::can_copy_from(&chunk.buffer, start)
        }
        AssignVariant::Registers | AssignVariant::Tiled(_) => true,
    }
}

/// The variants to choose from for `d` x `k` on this adapter (see the module docs).
fn candidates(gpu: &Gpu, chunk: &Chunk, d: usize, k: usize) -> Vec<AssignVariant> {
    if !cpu_like(gpu) {
        return vec![if k <= SMALL_K {
            AssignVariant::Rows
        } else {
            AssignVariant::Tiled(GemmConfig::for_shape(chunk.n_rows, k))
        }];
    }
    [
        AssignVariant::Registers,
        AssignVariant::Uniform,
        AssignVariant::Texture,
    ]
    .into_iter()
    .filter(|&v| runs(v, chunk, d, k) && within_loop_budget(gpu, v, d, k))
    .collect()
}

/// Whether one invocation of `variant` stays within the adapter's loop budget
/// ([`GpuInfo::loop_back_edge_budget`](crate::gpu::GpuInfo::loop_back_edge_budget)) at D x K:
/// the register and texture kernels walk all K centroids in one dispatch (about
/// ⌈K/16⌉(D + 19) and ⌈K/8⌉(⌈D/4⌉ + 2) back-edges), where the uniform one takes a slice at a
/// time. Past the budget llvmpipe would cut the walk short and return wrong labels, which
/// the autotuner would even time as faster.
fn within_loop_budget(gpu: &Gpu, variant: AssignVariant, d: usize, k: usize) -> bool {
    let back_edges = match variant {
        AssignVariant::Registers => k.div_ceil(SMALL_K) * (d + 19) + 1,
        AssignVariant::Texture => {
            let d4 = d.div_ceil(4);
            k.div_ceil(TEXTURE_ROWS) * (d4 + 2) + TEXTURE_ROWS * (d4 + 1) + 1
        }
        AssignVariant::Uniform | AssignVariant::Rows | AssignVariant::Tiled(_) => 0,
    };
    super::fits_loop_budget(gpu, back_edges)
}

/// Rows the autotuner times each variant on.
const TRIAL_ROWS: usize = 16384;

/// The variant for this shape: the only candidate, or the autotuner's choice, timed on the
/// first rows of `chunk` with scratch outputs (the textures copied before the timing, as a
/// workspace copies them once).
fn assign_variant(
    gpu: &Gpu,
    chunk: &Chunk,
    d: usize,
    to: &Assignment<'_>,
    scratch: &AssignScratch,
) -> Result<AssignVariant> {
    let candidates = candidates(gpu, chunk, d, to.k);
    if candidates.len() == 1 {
        return Ok(candidates[0]);
    }
    let key = TuneKey::new("assign", d, to.k);
    let names: Vec<&'static str> = candidates.iter().map(|v| v.name()).collect();
    if let Some(c) = gpu.tuned_choice(&key, &names) {
        return Ok(AssignVariant::from_name(c).expect("a name of ours"));
    }
    let rows = chunk.n_rows.min(TRIAL_ROWS);
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
    let chosen = gpu.tuned(key, &names, |name| {
        let variant = AssignVariant::from_name(name).expect("a name of ours");
        gpu.time_trial(
            |batch| record_assign(gpu, batch, variant, chunk, rows, d, &trial, scratch),
            &changed,
        )
    })?;
    Ok(AssignVariant::from_name(chosen).expect("a name of ours"))
}

/// The parameters every entry point of the file shares, for `n_rows` rows of `chunk`.
pub(super) fn params(
    chunk: &Chunk,
    n_rows: usize,
    d: usize,
    k: usize,
    grid_x: u32,
) -> AssignParams {
    AssignParams {
        n_rows: n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        k: k as u32,
        grid_x,
        d4: d.div_ceil(4) as u32,
        x_vec4: (d.is_multiple_of(4) && chunk.x_offset.is_multiple_of(4)) as u32,
        beta: beta(d),
        ..Zeroable::zeroed()
    }
}

/// The binding of the chunk's rows as vec4s (`x4`): whole vec4s of the chunk's range, or
/// `placeholder` for a range under 16 bytes (then rows are never read as vec4s).
pub(super) fn rows_vec4<'a>(chunk: &'a Chunk, placeholder: &'a DeviceBuffer<f32>) -> Bind<'a> {
    if chunk.bind_size >= 16 {
        Bind::Range(&chunk.buffer, chunk.bind_offset, chunk.bind_size / 16 * 16)
    } else {
        placeholder.bind()
    }
}

/// A buffer of one vec4 to bind as `x4` where the rows are too short to be read as vec4s.
pub(super) fn vec4_placeholder(gpu: &Gpu, chunk: &Chunk) -> DeviceBuffer<f32> {
    DeviceBuffer::zeroed(
        gpu,
        "x4 placeholder",
        if chunk.bind_size >= 16 { 1 } else { 4 },
    )
}

/// Records `variant` over the first `n_rows` rows of `chunk`.
#[allow(clippy::too_many_arguments)]
pub(super) fn record_assign(
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
    if variant.gemm_form() {
        record_prepare(gpu, batch, chunk, d, to, scratch)?;
        batch.clear_values(&scratch.recheck);
    }
    let work = Work::f32s(
        2.0 * (n_rows * d * k) as f64,
        (n_rows * (d + 2) + k * d) as f64,
    );
    let placeholder = vec4_placeholder(gpu, chunk);
    match variant {
        AssignVariant::Uniform => {
            let every_row = Rows::All(&scratch.recheck);
            return record_assign_uniform(gpu, batch, chunk, n_rows, d, to, every_row);
        }
        AssignVariant::Registers | AssignVariant::Rows => {
            let (entry, per_group) = match variant {
                AssignVariant::Rows => (wgsl::ASSIGN_ROWS, ROWS_WG),
                _ => (
                    wgsl::ASSIGN_NEAREST_CENTROID_REGISTERS,
                    ROW_WG_SIZE as usize,
                ),
            };
            let grid = gpu.grid(n_rows.div_ceil(per_group) as u64)?;
            let mut binds = vec![
                ("x", chunk.bind()),
                ("centroids", to.centroids.bind()),
                ("labels", to.labels.bind()),
                ("min_sq_dist", to.min_sq_dist.bind()),
                ("changed", to.changed.bind()),
            ];
            if variant == AssignVariant::Rows {
                binds.push(("x4", rows_vec4(chunk, &placeholder)));
            }
            let p = params(chunk, n_rows, d, k, grid.x);
            return batch.dispatch(entry, &[], &p, &binds, grid, work);
        }
        AssignVariant::Tiled(config) => {
            let grid = gpu.grid(n_rows.div_ceil(config.tile_m()) as u64)?;
            batch.dispatch(
                wgsl::ASSIGN_TILED,
                &config.overrides(),
                &params(chunk, n_rows, d, k, grid.x),
                &[
                    ("x", chunk.bind()),
                    ("x4", rows_vec4(chunk, &placeholder)),
                    ("centroids", to.centroids.bind()),
                    ("prepared", scratch.prepared.bind()),
                    ("labels", to.labels.bind()),
                    ("min_sq_dist", to.min_sq_dist.bind()),
                    ("changed", to.changed.bind()),
                    ("recheck", scratch.recheck.bind()),
                ],
                grid,
                work,
            )?;
        }
        AssignVariant::Texture => {
            scratch.record_mirrors(gpu, batch, chunk, d, to)?;
            let textures = scratch.textures.borrow();
            let t = textures.as_ref().expect("made by record_mirrors");
            let rows_per_group = ROW_WG_SIZE as usize * TEXTURE_ROWS;
            let grid = gpu.grid(n_rows.div_ceil(rows_per_group) as u64)?;
            batch.dispatch(
                wgsl::ASSIGN_TEXTURE,
                &[],
                &params(chunk, n_rows, d, k, grid.x),
                &[
                    ("x_texels", t.x.bind()),
                    ("centroid_texels", t.centroids.bind()),
                    ("prepared_texels", t.prepared.bind()),
                    ("labels", to.labels.bind()),
                    ("min_sq_dist", to.min_sq_dist.bind()),
                    ("changed", to.changed.bind()),
                    ("recheck", scratch.recheck.bind()),
                ],
                grid,
                work,
            )?;
        }
    }
    // The rows the GEMM form could not decide: at most all of them. On CPU-like adapters
    // the uniform kernel compares them with every centroid (the same bits, and about 16x
    // faster there than storage loads); elsewhere assign_recheck, in runs of centroids
    // (each costs an invocation D + 2 loop back-edges) that keep within the loop budget.
    if variant == AssignVariant::Texture && runs(AssignVariant::Uniform, chunk, d, k) {
        let listed = Rows::Rechecked(&scratch.recheck);
        return record_assign_uniform(gpu, batch, chunk, n_rows, d, to, listed);
    }
    let grid = gpu.grid(n_rows.div_ceil(ROW_WG_SIZE as usize) as u64)?;
    let per_run = super::items_within_loop_budget(gpu, k, d + 2, 16);
    let n_runs = k.div_ceil(per_run);
    let running: DeviceBuffer<u32> = DeviceBuffer::zeroed(
        gpu,
        "recheck running labels",
        if n_runs > 1 { n_rows } else { 1 },
    );
    for run in 0..n_runs {
        let first = run * per_run;
        let p = AssignParams {
            k: per_run.min(k - first) as u32,
            k_first: first as u32,
            slice_flags: (u32::from(run == 0) * wgsl::FIRST_SLICE)
                | (u32::from(run + 1 == n_runs) * wgsl::LAST_SLICE),
            ..params(chunk, n_rows, d, k, grid.x)
        };
        batch.dispatch(
            wgsl::ASSIGN_RECHECK,
            &[],
            &p,
            &[
                ("x", chunk.bind()),
                ("centroids", to.centroids.bind()),
                ("labels", to.labels.bind()),
                ("min_sq_dist", to.min_sq_dist.bind()),
                ("changed", to.changed.bind()),
                ("recheck", scratch.recheck.bind()),
                ("running_labels", running.bind()),
            ],
            grid,
            // Reads the list's length; the rows on it cost 3·K·D each, unknown when recorded.
            Work::f32s(0.0, 1.0),
        )?;
    }
    Ok(())
}

/// Records the centroid side of the GEMM form: the shift, then c − s and the norms.
fn record_prepare(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    to: &Assignment<'_>,
    scratch: &AssignScratch,
) -> Result<()> {
    let k = to.k;
    let binds = [
        ("centroids", to.centroids.bind()),
        ("prepared", scratch.prepared.bind()),
    ];
    let grid = gpu.grid((4 * d.div_ceil(4)).div_ceil(ROW_WG_SIZE as usize) as u64)?;
    batch.dispatch(
        wgsl::CENTROID_SHIFT,
        &[],
        &params(chunk, 0, d, k, grid.x),
        &binds,
        grid,
        Work::f32s((k * d) as f64, (k * d + d) as f64),
    )?;
    let grid = gpu.grid(k.div_ceil(ROW_WG_SIZE as usize) as u64)?;
    batch.dispatch(
        wgsl::CENTROID_PREP,
        &[],
        &params(chunk, 0, d, k, grid.x),
        &binds,
        grid,
        Work::f32s((3 * k * d) as f64, (2 * k * d + d + 2 * k) as f64),
    )
}

/// The centroids a distance table is taken to and where it is written.
pub(crate) struct DistanceTable<'a> {
    /// K x D centroids, row-major.
    pub centroids: &'a DeviceBuffer<f32>,
    /// Number of centroids.
    pub k: usize,
    /// Row-major rows x K output.
    pub out: &'a DeviceBuffer<f32>,
    /// Euclidean distances when set, squared ones otherwise.
    pub sqrt: bool,
}

/// Records the distances from rows `first_row .. first_row + n_rows` of `chunk` to each
/// centroid of `table` into its output (row-major n_rows x K).
pub(crate) fn pairwise_distances(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    first_row: usize,
    n_rows: usize,
    d: usize,
    table: &DistanceTable<'_>,
) -> Result<()> {
    pairwise_distances_at(
        gpu,
        batch,
        GemmConfig::for_shape(n_rows, table.k),
        (chunk, first_row, n_rows, d),
        table,
    )
}

/// [`pairwise_distances`] with the tile configuration `config` (the tests run each).
pub(super) fn pairwise_distances_at(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    config: GemmConfig,
    (chunk, first_row, n_rows, d): (&Chunk, usize, usize, usize),
    table: &DistanceTable<'_>,
) -> Result<()> {
    let k = table.k;
    let grid = gpu.grid(n_rows.div_ceil(config.tile_m()) as u64)?;
    let placeholder = vec4_placeholder(gpu, chunk);
    let x_offset = chunk.x_offset + (first_row * d) as u32;
    let params = AssignParams {
        x_offset,
        x_vec4: (d.is_multiple_of(4) && x_offset.is_multiple_of(4)) as u32,
        sqrt_output: table.sqrt as u32,
        ..params(chunk, n_rows, d, k, grid.x)
    };
    batch.dispatch(
        wgsl::PAIRWISE_DISTANCES,
        &config.overrides(),
        &params,
        &[
            ("x", chunk.bind()),
            ("x4", rows_vec4(chunk, &placeholder)),
            ("centroids", table.centroids.bind()),
            ("distances", table.out.bind()),
        ],
        grid,
        Work::f32s(
            2.0 * (n_rows * d * k) as f64,
            (n_rows * (d + k) + k * d) as f64,
        ),
    )
}
