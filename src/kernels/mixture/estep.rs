//! E-step of a Gaussian mixture (`shaders/mixture/estep.wgsl`): squared Mahalanobis norms
//! through the precision Cholesky factors, then log-sum-exp, responsibilities, log p and
//! labels per row, and block sums of log p.

use bytemuck::{Pod, Zeroable};

use crate::error::{Error, Result};
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, mixture::estep as wgsl, EntryPoint};
use crate::gpu::Gpu;
use crate::kernels::primitives::gemm::{vec4_view, GemmConfig};
use crate::kernels::ROW_WG_SIZE;

/// The tile core's shape for `mahalanobis_full` at D features: 64 x 64 wherever its uniform
/// twin may run instead (D <= `UNIFORM_MAX_D`: the twin adds the squares in that tile's order,
/// `FULL_TWIN_LANES` lanes of 8 columns), else by the output's shape (rows x D).
fn full_tile(n_rows: usize, d: usize) -> GemmConfig {
    if d <= wgsl::UNIFORM_MAX_D as usize {
        GemmConfig::SMALL
    } else {
        GemmConfig::for_shape(n_rows, d)
    }
}

const _: () = assert!(
    wgsl::FULL_TWIN_LANES == GemmConfig::SMALL.lanes_n && GemmConfig::SMALL.rn == 8,
    "mahalanobis_full_uniform keeps the order of the 64 x 64 tile"
);
/// Largest D that Full/Tied evaluate one row per invocation (`SMALL_D` in the shader); above
/// it they use the tiled GEMM.
pub(crate) const SMALL_D: usize = wgsl::SMALL_D as usize;
/// Rows per normalize_responsibilities workgroup, hence per block of log p sums
/// (`NORMALIZE_WG_SIZE` in the shader).
pub(crate) const NORMALIZE_ROWS: usize = wgsl::NORMALIZE_WG_SIZE as usize;

/// Twin of `EstepParams` in shaders/mixture/estep.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct EstepParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    k: u32,
    grid_x: u32,
    prec_stride: u32,
    row_offset: u32,
    block_offset: u32,
    comp_first: u32,
    slice_k: u32,
    x_vec4: u32,
    _pad1: u32,
}

/// vec4s in one uniform slice of components (`SLICE_VEC4S` in the shader).
const SLICE_VALUES: usize = 4 * wgsl::SLICE_VEC4S as usize;
/// Largest D of the uniform Full/Tied variant (`UNIFORM_MAX_D` in the shader).
const UNIFORM_MAX_D: usize = wgsl::UNIFORM_MAX_D as usize;
/// Most vec4s per padded row of the uniform Diag/Spherical variant (`ESTEP_MAX_D4`).
const DIAG_UNIFORM_MAX_D4: usize = wgsl::ESTEP_MAX_D4 as usize;
/// The override that fixes the uniform Diag/Spherical variant's vec4s per padded row.
pub(crate) const ESTEP_D4: &str = "ESTEP_D4";
/// The override that fixes the uniform Diag/Spherical variant's rows per invocation.
pub(crate) const ESTEP_ROWS: &str = "ESTEP_ROWS";
/// Most rows per invocation of the uniform Diag/Spherical variant (`ESTEP_MAX_ROWS`).
const DIAG_UNIFORM_MAX_ROWS: usize = wgsl::ESTEP_MAX_ROWS as usize;
/// Most vec4s of rows an invocation of the uniform Diag/Spherical variant holds (rows x
/// vec4s per row, `ESTEP_ROW_VEC4S`): the loops over them unroll, and LLVM's compile time
/// grows much faster than their length (on llvmpipe at D = 50, 2 rows compile in 4 s, 8
/// rows in 40 s).
const DIAG_UNIFORM_ROW_VEC4S: usize = wgsl::ESTEP_ROW_VEC4S as usize;

/// Rows per invocation of the uniform Diag/Spherical variant for padded rows of `d4` vec4s:
/// as many as the compile budget allows, each parameter load then feeding that many rows.
pub(crate) fn diag_uniform_rows(d4: usize) -> usize {
    (DIAG_UNIFORM_ROW_VEC4S / d4.max(1)).clamp(1, DIAG_UNIFORM_MAX_ROWS)
}

const _: () = check_params::<EstepParams>(wgsl::ENTRY_POINTS);

/// Rows `first .. first + n_rows` of a data chunk, with their N x K responsibilities buffer.
pub(crate) struct Segment<'a> {
    /// The data chunk.
    pub chunk: &'a Chunk,
    /// First row of the segment inside the chunk.
    pub first: usize,
    /// Rows in the segment.
    pub n_rows: usize,
    /// n_rows x K values.
    pub resp: &'a DeviceBuffer<f32>,
}

impl Segment<'_> {
    fn x_offset(&self, d: usize) -> u32 {
        self.chunk.x_offset + (self.first * d) as u32
    }
}

/// The component parameters as the shader reads them.
pub(crate) struct Components<'a> {
    /// K x D means.
    pub means: &'a DeviceBuffer<f32>,
    /// Precision factors: Full K x D x D, Tied D x D (upper triangular Uₖ); Diag and
    /// Spherical K x D values pₖⱼ.
    pub precisions: &'a DeviceBuffer<f32>,
    /// Values between two components' factors: D² (Full), 0 (Tied), D (Diag, Spherical).
    pub prec_stride: usize,
    /// Whether the factors are D x D (Full, Tied) rather than diagonal.
    pub full: bool,
}

/// Per-row outputs of [`normalize_responsibilities`].
pub(crate) struct RowOutputs<'a> {
    /// log p(xᵢ), one per row of the data chunk.
    pub log_density: &'a DeviceBuffer<f32>,
    /// Most probable component, one per row of the data chunk.
    pub labels: &'a DeviceBuffer<u32>,
    /// Sums of log p per block of [`NORMALIZE_ROWS`] rows.
    pub block_log_density: &'a DeviceBuffer<f32>,
    /// Global index of the segment's first block.
    pub block_offset: usize,
}

/// Records qᵢₖ = ‖(xᵢ − μₖ)ᵀ Uₖ‖² for the rows of `seg` into `seg.resp`, with the kernel
/// for this shape or its uniform-slice twin (the same bits), whichever the autotuner timed
/// faster on this device.
pub(crate) fn squared_mahalanobis(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    seg: &Segment<'_>,
    d: usize,
    k: usize,
    comps: &Components<'_>,
) -> Result<()> {
    let native = native_entry(comps.full, d);
    let uniform = if comps.full {
        wgsl::MAHALANOBIS_FULL_UNIFORM
    } else {
        wgsl::MAHALANOBIS_DIAG_UNIFORM
    };
    let fits = if comps.full {
        d <= UNIFORM_MAX_D
    } else {
        d.div_ceil(4) <= DIAG_UNIFORM_MAX_D4 && vec4_bindable(seg)
    };
    if !fits {
        return record_mahalanobis(gpu, batch, native, seg, d, k, comps);
    }
    if let Some(variant) = gpu.tuned_choice(&[native, uniform], (d, k)) {
        return record_mahalanobis(gpu, batch, variant, seg, d, k, comps);
    }
    let rows = seg.n_rows.min(TRIAL_ROWS);
    let scratch = DeviceBuffer::zeroed(gpu, "mahalanobis trial", rows * k);
    let trial = Segment {
        chunk: seg.chunk,
        first: seg.first,
        n_rows: rows,
        resp: &scratch,
    };
    let variant = gpu.tuned(&[native, uniform], (d, k), |v| {
        gpu.time_trial(
            |b| record_mahalanobis(gpu, b, v, &trial, d, k, comps),
            &scratch,
        )
    })?;
    record_mahalanobis(gpu, batch, variant, seg, d, k, comps)
}

/// Rows the autotuner times each variant on.
const TRIAL_ROWS: usize = 8192;

/// The storage-buffer kernel for Full (`full`) or diagonal factors with D features.
fn native_entry(full: bool, d: usize) -> &'static EntryPoint {
    if full && d <= SMALL_D {
        wgsl::MAHALANOBIS_FULL_SMALL_D
    } else if full {
        wgsl::MAHALANOBIS_FULL
    } else {
        wgsl::MAHALANOBIS_DIAG
    }
}

/// Records `variant` of the squared norms.
pub(crate) fn record_mahalanobis(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    variant: &'static EntryPoint,
    seg: &Segment<'_>,
    d: usize,
    k: usize,
    comps: &Components<'_>,
) -> Result<()> {
    if variant == wgsl::MAHALANOBIS_FULL_UNIFORM || variant == wgsl::MAHALANOBIS_DIAG_UNIFORM {
        return record_mahalanobis_uniform(gpu, batch, seg, d, k, comps);
    }
    let row_groups = (seg.n_rows as u64).div_ceil(ROW_WG_SIZE as u64);
    let config = full_tile(seg.n_rows, d);
    within_loop_budget(gpu, variant, d, k, config)?;
    let (entry, groups) = if variant == wgsl::MAHALANOBIS_FULL {
        let tiles = seg.n_rows.div_ceil(config.tile_m()) as u64;
        (wgsl::MAHALANOBIS_FULL, tiles * k as u64)
    } else if variant == wgsl::MAHALANOBIS_FULL_SMALL_D {
        (wgsl::MAHALANOBIS_FULL_SMALL_D, row_groups)
    } else {
        (wgsl::MAHALANOBIS_DIAG, row_groups)
    };
    let grid = gpu.grid(groups)?;
    let params = EstepParams {
        n_rows: seg.n_rows as u32,
        x_offset: seg.x_offset(d),
        d: d as u32,
        k: k as u32,
        grid_x: grid.x,
        prec_stride: comps.prec_stride as u32,
        // mahalanobis_diag reads four values a load where the rows start on vec4s.
        x_vec4: (d.is_multiple_of(4) && seg.x_offset(d).is_multiple_of(4)) as u32,
        ..Zeroable::zeroed()
    };
    let overrides = if entry.name == wgsl::MAHALANOBIS_FULL.name {
        config.overrides().to_vec()
    } else {
        Vec::new()
    };
    let placeholder = DeviceBuffer::zeroed(gpu, "vec4 placeholder", 4);
    let mut binds = vec![
        ("x", seg.chunk.bind()),
        ("means", comps.means.bind()),
        ("precisions", comps.precisions.bind()),
        ("resp", seg.resp.bind()),
    ];
    if entry.name == wgsl::MAHALANOBIS_DIAG.name {
        binds.push(("x4", vec4_view(seg.chunk.bind(), &placeholder)));
    }
    batch.dispatch(
        entry,
        &overrides,
        &params,
        &binds,
        grid,
        mahalanobis_work(seg.n_rows, d, k, comps.full, comps.prec_stride),
    )
}

/// Loop back-edges one invocation of `variant` takes over D features and K components, of
/// loops whose trip count is not a compile-time constant (llvmpipe counts those): for
/// `mahalanobis_diag` about 40 per piece of `DIAG_PIECE` (32) features per pass of
/// `COMPONENTS_PER_PASS` (8) components (the staging loops and the piece's feature loop);
/// for `mahalanobis_full` about 8 per stage of GEMM_DEPTH features per column tile (counted
/// at 8, the shallowest), the stages of column tile j0 reaching min(D, j0 + tile) (Uₖ is
/// upper triangular). The others
/// run one row's D ≤ `SMALL_D` features or uniform slices.
fn mahalanobis_back_edges(variant: &EntryPoint, d: usize, k: usize, config: GemmConfig) -> usize {
    if variant == wgsl::MAHALANOBIS_DIAG {
        k.div_ceil(wgsl::COMPONENTS_PER_PASS as usize)
            * (40 * d.div_ceil(wgsl::DIAG_PIECE as usize) + 1)
    } else if variant == wgsl::MAHALANOBIS_FULL {
        let tile = config.tile_n();
        let stages: usize = (0..d.div_ceil(tile))
            .map(|ct| d.min((ct + 1) * tile).div_ceil(8) + 1)
            .sum();
        8 * stages
    } else {
        0
    }
}

/// An error where an invocation of `variant` would outrun this adapter's loop budget: llvmpipe
/// would cut the feature loops short and the responsibilities would be wrong without a word
/// (measured: a diagonal mixture of 60 000 features scored −65 146 for the −73 305 of its own
/// parameters).
fn within_loop_budget(
    gpu: &Gpu,
    variant: &EntryPoint,
    d: usize,
    k: usize,
    config: GemmConfig,
) -> Result<()> {
    let back_edges = mahalanobis_back_edges(variant, d, k, config);
    if crate::kernels::fits_loop_budget(gpu, back_edges) {
        return Ok(());
    }
    Err(Error::DeviceLimit {
        what: format!(
            "the mixture's E-step over {d} features and {k} components on this CPU adapter, \
             whose loops stop after a fixed number of iterations (reduce the features, e.g. \
             with PCA, or use a GPU)"
        ),
        requested: back_edges as u64,
        limit_name: "loop back-edges per invocation (llvmpipe)",
        limit: gpu.info().loop_back_edge_budget().unwrap_or(0),
    })
}

/// Whether the segment's chunk can also be bound as vec4s (`x4`): a binding of at least one
/// vec4 (data of fewer than 4 values cannot be).
fn vec4_bindable(seg: &Segment<'_>) -> bool {
    seg.chunk.bind_size >= 16
}

/// Records the uniform-slice twin: each component's mean and factor copied into 64 KiB
/// uniform slices (whole components; for diagonal factors each padded to whole vec4s, the
/// padding left zero), one dispatch per slice.
fn record_mahalanobis_uniform(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    seg: &Segment<'_>,
    d: usize,
    k: usize,
    comps: &Components<'_>,
) -> Result<()> {
    let d4 = d.div_ceil(4);
    let rows = diag_uniform_rows(d4);
    if !comps.full && (d4 > DIAG_UNIFORM_MAX_D4 || !vec4_bindable(seg)) {
        return Err(Error::Gpu(format!(
            "mahalanobis_diag_uniform takes D <= {} and 4 values or more, not D = {d} in {} bytes",
            4 * DIAG_UNIFORM_MAX_D4,
            seg.chunk.bind_size
        )));
    }
    // Values from a component's start to its factor, and between two components.
    let (entry, factor, mean_span, stride, overrides) = if comps.full {
        let stride = d + d * d;
        (wgsl::MAHALANOBIS_FULL_UNIFORM, d * d, d, stride, vec![])
    } else {
        let overrides = vec![(ESTEP_D4, d4 as u32), (ESTEP_ROWS, rows as u32)];
        (wgsl::MAHALANOBIS_DIAG_UNIFORM, d, 4 * d4, 8 * d4, overrides)
    };
    let per_slice = SLICE_VALUES / stride;
    let n_slices = k.div_ceil(per_slice);
    let slice_bytes = 4 * SLICE_VALUES as u64;
    // A new buffer, so zero wherever no copy writes (the padding).
    let slices = gpu.uniform_buffer("component slices", slice_bytes * n_slices as u64);
    for c in 0..k {
        let at = slice_bytes * (c / per_slice) as u64 + 4 * ((c % per_slice) * stride) as u64;
        batch.copy(
            comps.means.raw(),
            4 * (c * d) as u64,
            &slices,
            at,
            4 * d as u64,
        );
        let src = 4 * (c * comps.prec_stride) as u64;
        batch.copy(
            comps.precisions.raw(),
            src,
            &slices,
            at + 4 * mean_span as u64,
            4 * factor as u64,
        );
    }
    // Rows per workgroup: one per invocation for Full/Tied.
    let rows_per_group = ROW_WG_SIZE as u64 * if comps.full { 1 } else { rows as u64 };
    let grid = gpu.grid((seg.n_rows as u64).div_ceil(rows_per_group))?;
    for s in 0..n_slices {
        let first = s * per_slice;
        let count = per_slice.min(k - first);
        let params = EstepParams {
            n_rows: seg.n_rows as u32,
            x_offset: seg.x_offset(d),
            d: d as u32,
            k: k as u32,
            grid_x: grid.x,
            prec_stride: comps.prec_stride as u32,
            comp_first: first as u32,
            slice_k: count as u32,
            ..Zeroable::zeroed()
        };
        let mut binds = vec![
            ("x", seg.chunk.bind()),
            (
                "component_slice",
                Bind::Range(&slices, slice_bytes * s as u64, slice_bytes),
            ),
            ("resp", seg.resp.bind()),
        ];
        if !comps.full {
            // The rows again, read four values a load.
            binds.push(("x4", seg.chunk.bind()));
        }
        batch.dispatch(
            entry,
            &overrides,
            &params,
            &binds,
            grid,
            mahalanobis_work(seg.n_rows, d, count, comps.full, comps.prec_stride),
        )?;
    }
    Ok(())
}

/// Per row and component: d subtractions, then the triangular product (d(d+1)/2 FMAs) and
/// the squared norm, or d scaled squares for diagonal factors; rows read once, the
/// parameters once, q written.
fn mahalanobis_work(n_rows: usize, d: usize, k: usize, full: bool, prec_stride: usize) -> Work {
    Work::f32s(
        (n_rows * k) as f64
            * if full {
                (d * d + 3 * d) as f64
            } else {
                3.0 * d as f64
            },
        (n_rows * (d + k) + k * d + k.max(1) * prec_stride.max(d * d * full as usize)) as f64,
    )
}

/// The override that fixes `normalize_responsibilities_small_k`'s K.
pub(crate) const NORMALIZE_K: &str = "NORMALIZE_K";
/// Largest K of `normalize_responsibilities_small_k` (`NORMALIZE_MAX_K` in the shader).
pub(crate) const NORMALIZE_MAX_K: usize = wgsl::NORMALIZE_MAX_K as usize;

/// Records the log-sum-exp normalisation of `seg.resp` (squared norms in, responsibilities
/// out) with log p, labels and block sums of log p: for K <= [`NORMALIZE_MAX_K`] the kernel
/// that holds a row's values in registers (K fixed per pipeline), else the general one; the
/// same bits.
pub(crate) fn normalize_responsibilities(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    seg: &Segment<'_>,
    k: usize,
    log_const: &DeviceBuffer<f32>,
    out: &RowOutputs<'_>,
) -> Result<()> {
    record_normalize(gpu, batch, seg, k, log_const, out, k <= NORMALIZE_MAX_K)
}

/// Records the normalisation with the small-K kernel (`small_k`, K <= [`NORMALIZE_MAX_K`])
/// or the general one.
pub(crate) fn record_normalize(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    seg: &Segment<'_>,
    k: usize,
    log_const: &DeviceBuffer<f32>,
    out: &RowOutputs<'_>,
    small_k: bool,
) -> Result<()> {
    let (entry, overrides) = if small_k && k <= NORMALIZE_MAX_K {
        (
            wgsl::NORMALIZE_RESPONSIBILITIES_SMALL_K,
            vec![(NORMALIZE_K, k as u32)],
        )
    } else {
        (wgsl::NORMALIZE_RESPONSIBILITIES, vec![])
    };
    let grid = gpu.grid((seg.n_rows as u64).div_ceil(NORMALIZE_ROWS as u64))?;
    let params = EstepParams {
        n_rows: seg.n_rows as u32,
        k: k as u32,
        grid_x: grid.x,
        row_offset: seg.first as u32,
        block_offset: out.block_offset as u32,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        entry,
        &overrides,
        &params,
        &[
            ("resp", seg.resp.bind()),
            ("log_const", log_const.bind()),
            ("log_density", out.log_density.bind()),
            ("labels", out.labels.bind()),
            ("block_log_density", out.block_log_density.bind()),
        ],
        grid,
        // A max, an exp and a sum per value; responsibilities in and out, three per-row outputs.
        Work::f32s(
            4.0 * (seg.n_rows * k) as f64,
            (seg.n_rows * (2 * k + 3)) as f64,
        ),
    )
}

/// Records the weighting of `seg.resp` by the rows' sample weights (`weights`, one per row
/// of the chunk) and the block sums of w·log p in place of those of log p.
pub(crate) fn weigh_responsibilities(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    seg: &Segment<'_>,
    k: usize,
    weights: &DeviceBuffer<f32>,
    out: &RowOutputs<'_>,
) -> Result<()> {
    let grid = gpu.grid((seg.n_rows as u64).div_ceil(NORMALIZE_ROWS as u64))?;
    let params = EstepParams {
        n_rows: seg.n_rows as u32,
        k: k as u32,
        grid_x: grid.x,
        row_offset: seg.first as u32,
        block_offset: out.block_offset as u32,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        wgsl::WEIGH_RESPONSIBILITIES,
        &[],
        &params,
        &[
            ("resp", seg.resp.bind()),
            ("sample_weights", weights.bind()),
            ("log_density", out.log_density.bind()),
            ("block_log_density", out.block_log_density.bind()),
        ],
        grid,
        // A product per value; responsibilities in and out, weight and log p read.
        Work::f32s(
            (seg.n_rows * (k + 1)) as f64,
            (seg.n_rows * (2 * k + 2)) as f64,
        ),
    )
}

/// Records one-hot responsibilities of `labels` (one per row of `seg`) into `seg.resp`.
pub(crate) fn responsibilities_from_labels(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    seg: &Segment<'_>,
    k: usize,
    labels: &DeviceBuffer<u32>,
) -> Result<()> {
    let grid = gpu.grid((seg.n_rows as u64).div_ceil(ROW_WG_SIZE as u64))?;
    let params = EstepParams {
        n_rows: seg.n_rows as u32,
        k: k as u32,
        grid_x: grid.x,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        wgsl::RESPONSIBILITIES_FROM_LABELS,
        &[],
        &params,
        &[("resp", seg.resp.bind()), ("given_labels", labels.bind())],
        grid,
        Work::f32s(0.0, (seg.n_rows * (k + 1)) as f64),
    )
}
