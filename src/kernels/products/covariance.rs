//! Per-block cross products of centred data over rows (`shaders/products/covariance.wgsl`).

use bytemuck::{Pod, Zeroable};

use crate::kernels::primitives::gemm::{buffer_of, cpu_like, vec4_view, GemmConfig};
use crate::kernels::ROW_WG_SIZE;

use crate::error::{Error, Result};
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, products::covariance as wgsl};
use crate::gpu::texture::FlatTexture;
use crate::gpu::tuning::Variant;
use crate::gpu::Gpu;

/// Twin of `GramParams` in shaders/products/covariance.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct GramParams {
    n_rows: u32,
    a_offset: u32,
    b_offset: u32,
    a_cols: u32,
    b_cols: u32,
    block_rows: u32,
    block_offset: u32,
    n_blocks: u32,
    n_tiles_a: u32,
    n_tiles_b: u32,
    upper_only: u32,
    grid_x: u32,
    a_vec4: u32,
    b_vec4: u32,
    _pad0: u32,
    _pad1: u32,
}

const _: () = check_params::<GramParams>(&[wgsl::GRAM_TILED, wgsl::GRAM_TEXTURE]);

/// Twin of `GramSliceParams` in shaders/products/covariance.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct GramSliceParams {
    slice_rows: u32,
    b_offset: u32,
    a_cols: u32,
    b_cols: u32,
    block: u32,
    first_slice: u32,
    upper_only: u32,
    n_iblocks: u32,
    n_jgroups: u32,
    grid_x: u32,
    _pad0: u32,
    _pad1: u32,
}

const _: () = check_params::<GramSliceParams>(&[wgsl::GRAM_PARTIALS_UNIFORM]);

/// Twin of `ComomentParams` in shaders/products/covariance.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct ComomentParams {
    d: u32,
    grid_x: u32,
    n: f32,
    _pad0: u32,
}

const _: () =
    check_params::<ComomentParams>(&[wgsl::COVARIANCE_FROM_COMOMENT, wgsl::COMOMENT_DIAGONAL]);

/// Records S (D x D, f32) into `covariance` from the folded co-moment `comoment` (upper
/// triangle, about the device's centre c) of `n` rows and `corrections` = [μ − c, μ − a,
/// 1/(σ·√(N − ddof))] (3D values; the shader's docs give the formula).
pub(crate) fn covariance_from_comoment(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    comoment: &DeviceBuffer<f32>,
    corrections: &DeviceBuffer<f32>,
    n: usize,
    covariance: &DeviceBuffer<f32>,
) -> Result<()> {
    let d = corrections.len() / 3;
    let entries = (d * d) as u64;
    let grid = gpu.grid(entries.div_ceil(ROW_WG_SIZE as u64))?;
    let params = ComomentParams {
        d: d as u32,
        grid_x: grid.x,
        n: n as f32,
        _pad0: 0,
    };
    batch.dispatch(
        wgsl::COVARIANCE_FROM_COMOMENT,
        &[],
        &params,
        &[
            ("comoment", comoment.bind()),
            ("corrections", corrections.bind()),
            ("covariance_out", covariance.bind()),
        ],
        grid,
        Work::f32s(6.0 * entries as f64, 2.0 * entries as f64 + 6.0 * d as f64),
    )
}

/// Values of A in one uniform slice (`SLICE_VALUES` in the shader).
const SLICE_VALUES: usize = wgsl::SLICE_VALUES as usize;

/// A columns per invocation of the sliced kernel (`GRAM_IB` in the shader).
const GRAM_IB: usize = wgsl::GRAM_IB as usize;

/// The Gram kernels, which give the same bits (see the shader).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GramVariant {
    /// The tile core, staged (GPUs).
    Tiled(GemmConfig),
    /// 8 x 8 blocks from a flat texture of A (CPU-like adapters, symmetric products).
    Texture,
    /// Rows of A from uniform slices (CPU-like adapters).
    Uniform,
}

impl GramVariant {
    /// Every variant the tests run.
    #[cfg(test)]
    pub(crate) fn all() -> Vec<GramVariant> {
        let mut v = vec![Self::Uniform, Self::Texture];
        v.extend(GemmConfig::ALL.map(Self::Tiled));
        v
    }
}

impl Variant for GramVariant {
    const FAMILY: &'static str = "gram";

    fn name(self) -> &'static str {
        match self {
            Self::Uniform => "gram_partials_uniform",
            Self::Texture => "gram_texture",
            Self::Tiled(c) if c == GemmConfig::LARGE => "gram_tiled 128x128",
            Self::Tiled(c) if c == GemmConfig::LARGE_DEEP => "gram_tiled 128x128 depth 16",
            Self::Tiled(c) if c == GemmConfig::SMALL => "gram_tiled 64x64",
            Self::Tiled(c) if c == GemmConfig::NARROW => "gram_tiled 128x32",
            Self::Tiled(_) => "gram_tiled",
        }
    }
}

/// Rows the autotuner times each variant on (CPU-like adapters; GPUs take more, so that a
/// trial fills the device).
const TRIAL_ROWS: usize = 2048;
const GPU_TRIAL_ROWS: usize = 1 << 16;

/// One operand of [`gram_partials`]: rows bound from a buffer range, and a per-column shift.
pub(crate) struct Operand<'a> {
    /// The rows (a data chunk, or a per-chunk buffer of our own).
    pub bind: Bind<'a>,
    /// Index of the first value of the chunk inside the binding.
    pub offset: u32,
    /// Values per row.
    pub cols: usize,
    /// Subtracted from every row (length `cols`).
    pub shift: &'a DeviceBuffer<f32>,
}

/// Where the per-block partials of a Gram product go: blocks of `block_rows` rows numbered
/// from `block_offset`, [block][a.cols][b.cols].
pub(crate) struct GramBlocks<'a> {
    /// Rows per block.
    pub block_rows: usize,
    /// The first block's global number.
    pub block_offset: usize,
    /// A = B: only entries i <= j are written (the buffer must be cleared first so that the
    /// rest reads as zero).
    pub upper_only: bool,
    /// The partials.
    pub partials: &'a DeviceBuffer<f32>,
}

/// Records the per-block partials of (A − a)ᵀ(B − b) over the `n_rows` rows of a chunk into
/// `out`.
pub(crate) fn gram_partials(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    n_rows: usize,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: &GramBlocks<'_>,
) -> Result<()> {
    let variant = gram_variant(gpu, n_rows, a, b, out.block_rows, out.upper_only)?;
    record_gram(gpu, batch, variant, n_rows, a, b, out)
}

/// Whether `variant` can run this product.
pub(crate) fn runs(variant: GramVariant, a: &Operand<'_>, upper_only: bool) -> bool {
    let copyable =
        buffer_of(a.bind).is_some_and(|(b, _, _)| b.usage().contains(wgpu::BufferUsages::COPY_SRC));
    match variant {
        // Upper-triangle tiles pair row and column tiles of one size.
        GramVariant::Tiled(c) => !upper_only || c.tile_m() == c.tile_n(),
        GramVariant::Uniform => copyable && a.cols <= SLICE_VALUES,
        GramVariant::Texture => {
            let start = buffer_of(a.bind).map(|(_, o, _)| o + 4 * a.offset as u64);
            upper_only
                && a.cols.is_multiple_of(4)
                && buffer_of(a.bind)
                    .zip(start)
                    .is_some_and(|((buf, _, _), s)| FlatTexture::can_copy_from(buf, s))
        }
    }
}

/// The variant for this shape: on GPUs the tile core; on CPU-like adapters the only
/// candidate, or the autotuner's choice, timed on the first rows with scratch partials.
fn gram_variant(
    gpu: &Gpu,
    n_rows: usize,
    a: &Operand<'_>,
    b: &Operand<'_>,
    block_rows: usize,
    upper_only: bool,
) -> Result<GramVariant> {
    let tiled = GramVariant::Tiled(GemmConfig::for_shape(a.cols, b.cols));
    // GPUs time the tile core's shapes (the same bits from each); CPU-like adapters their
    // own variants.
    let own: Vec<GramVariant> = if cpu_like(gpu) {
        vec![GramVariant::Uniform, GramVariant::Texture]
    } else {
        GemmConfig::all_fitting(gpu)
            .into_iter()
            .map(GramVariant::Tiled)
            .collect()
    };
    let candidates: Vec<GramVariant> = own
        .into_iter()
        .filter(|&v| runs(v, a, upper_only))
        .collect();
    match candidates.len() {
        0 => return Ok(tiled),
        1 => return Ok(candidates[0]),
        _ => {}
    }
    // Symmetric and general products run different tiles (square ones only for the upper
    // triangle) and CPU-like adapters the texture kernel for the first only, so the candidates
    // and the shape tell the choices apart.
    if let Some(c) = gpu.tuned_choice(&candidates, (a.cols, b.cols)) {
        return Ok(c);
    }
    let rows = n_rows.min(if cpu_like(gpu) {
        TRIAL_ROWS
    } else {
        GPU_TRIAL_ROWS
    });
    let scratch = DeviceBuffer::zeroed(
        gpu,
        "gram trial partials",
        rows.div_ceil(block_rows) * a.cols * b.cols,
    );
    let out = GramBlocks {
        block_rows,
        block_offset: 0,
        upper_only,
        partials: &scratch,
    };
    gpu.tuned(&candidates, (a.cols, b.cols), |variant| {
        gpu.time_trial(
            |batch| record_gram(gpu, batch, variant, rows, a, b, &out),
            &scratch,
        )
    })
}

/// Records `variant` (one of [`GramVariant::all`]).
pub(crate) fn record_gram(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    variant: GramVariant,
    n_rows: usize,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: &GramBlocks<'_>,
) -> Result<()> {
    let (block_rows, upper_only) = (out.block_rows, out.upper_only);
    let n_blocks = n_rows.div_ceil(block_rows);
    let work = gram_work(n_rows, a.cols, b.cols, upper_only, n_blocks);
    let params = |n_tiles_a: usize, n_tiles_b: usize, grid_x: u32| GramParams {
        n_rows: n_rows as u32,
        a_offset: a.offset,
        b_offset: b.offset,
        a_cols: a.cols as u32,
        b_cols: b.cols as u32,
        block_rows: block_rows as u32,
        block_offset: out.block_offset as u32,
        n_blocks: n_blocks as u32,
        n_tiles_a: n_tiles_a as u32,
        n_tiles_b: n_tiles_b as u32,
        upper_only: upper_only as u32,
        grid_x,
        a_vec4: (a.cols.is_multiple_of(4) && a.offset.is_multiple_of(4)) as u32,
        b_vec4: (b.cols.is_multiple_of(4) && b.offset.is_multiple_of(4)) as u32,
        _pad0: 0,
        _pad1: 0,
    };
    let pairs = |ta: usize, tb: usize| {
        if upper_only {
            ta * (ta + 1) / 2
        } else {
            ta * tb
        }
    };
    match variant {
        GramVariant::Uniform => record_gram_uniform(gpu, batch, n_rows, a, b, out),
        GramVariant::Tiled(config) => {
            let (ta, tb) = (
                a.cols.div_ceil(config.tile_m()),
                b.cols.div_ceil(config.tile_n()),
            );
            let grid = gpu.grid((pairs(ta, tb) * n_blocks) as u64)?;
            let placeholder = DeviceBuffer::zeroed(gpu, "vec4 placeholder", 4);
            batch.dispatch(
                wgsl::GRAM_TILED,
                &config.overrides(),
                &params(ta, tb, grid.x),
                &[
                    ("a", a.bind),
                    ("b", b.bind),
                    ("a4", vec4_view(a.bind, &placeholder)),
                    ("b4", vec4_view(b.bind, &placeholder)),
                    ("a_shift", a.shift.bind()),
                    ("b_shift", b.shift.bind()),
                    ("partials", out.partials.bind()),
                ],
                grid,
                work,
            )
        }
        GramVariant::Texture => {
            let Some((buffer, bind_offset, _)) = buffer_of(a.bind) else {
                return Err(Error::Gpu("gram operands are buffers".into()));
            };
            let texture = FlatTexture::new(gpu, "gram rows texture", n_rows * a.cols)
                .ok_or_else(|| Error::Gpu("the rows exceed the texture limits".into()))?;
            batch.copy_to_texture(buffer, bind_offset + 4 * a.offset as u64, &texture);
            let blocks = a.cols.div_ceil(8);
            let invocations = pairs(blocks, blocks) * n_blocks;
            let grid = gpu.grid(invocations.div_ceil(ROW_WG_SIZE as usize) as u64)?;
            batch.dispatch(
                wgsl::GRAM_TEXTURE,
                &[],
                &params(blocks, blocks, grid.x),
                &[
                    ("a_texels", texture.bind()),
                    ("a_shift", a.shift.bind()),
                    ("partials", out.partials.bind()),
                ],
                grid,
                work,
            )
        }
    }
}

/// Records `gram_partials_uniform`: per block, slices of whole rows of A copied into a
/// uniform buffer, one dispatch per slice (the copies and dispatches alternate in order, so
/// one slice buffer serves them all).
fn record_gram_uniform(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    n_rows: usize,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: &GramBlocks<'_>,
) -> Result<()> {
    let (block_rows, block_offset, upper_only) = (out.block_rows, out.block_offset, out.upper_only);
    let Some((a_buffer, a_base, _)) = buffer_of(a.bind) else {
        return Err(Error::Gpu("gram operands are buffers".into()));
    };
    let slice_rows = (SLICE_VALUES / a.cols).min(block_rows).max(1);
    let slice = gpu.uniform_buffer("gram slice", 4 * SLICE_VALUES as u64);
    let n_iblocks = a.cols.div_ceil(GRAM_IB);
    let n_jgroups = b.cols.div_ceil(ROW_WG_SIZE as usize);
    let grid = gpu.grid((n_iblocks * n_jgroups) as u64)?;
    for block in 0..n_rows.div_ceil(block_rows) {
        let last = ((block + 1) * block_rows).min(n_rows);
        let mut first = block * block_rows;
        while first < last {
            let rows = slice_rows.min(last - first);
            let values = (rows * a.cols) as u64;
            let src = a_base + 4 * (a.offset as u64 + (first * a.cols) as u64);
            batch.copy(a_buffer, src, &slice, 0, 4 * values);
            let params = GramSliceParams {
                slice_rows: rows as u32,
                b_offset: b.offset + (first * b.cols) as u32,
                a_cols: a.cols as u32,
                b_cols: b.cols as u32,
                block: (block_offset + block) as u32,
                first_slice: u32::from(first == block * block_rows),
                upper_only: upper_only as u32,
                n_iblocks: n_iblocks as u32,
                n_jgroups: n_jgroups as u32,
                grid_x: grid.x,
                _pad0: 0,
                _pad1: 0,
            };
            batch.dispatch(
                wgsl::GRAM_PARTIALS_UNIFORM,
                &[],
                &params,
                &[
                    ("a_slice", Bind::Range(&slice, 0, 4 * SLICE_VALUES as u64)),
                    ("b", b.bind),
                    ("a_shift", a.shift.bind()),
                    ("b_shift", b.shift.bind()),
                    ("partials", out.partials.bind()),
                ],
                grid,
                gram_work(rows, a.cols, b.cols, upper_only, 0),
            )?;
            first += rows;
        }
    }
    Ok(())
}

/// The least work of the products over `n_rows` rows (the upper triangle for a symmetric
/// product) with the shifts' subtractions, the operands read once and `n_blocks` blocks of
/// partials written.
fn gram_work(
    n_rows: usize,
    a_cols: usize,
    b_cols: usize,
    upper_only: bool,
    n_blocks: usize,
) -> Work {
    Work::f32s(
        n_rows as f64
            * if upper_only {
                (a_cols * (a_cols + 1) + 2 * a_cols) as f64
            } else {
                (2 * a_cols * b_cols + a_cols + b_cols) as f64
            },
        (n_rows * (a_cols + if upper_only { 0 } else { b_cols }) + n_blocks * a_cols * b_cols)
            as f64,
    )
}

/// Records the diagonal of the D x D `comoment` into `diagonal` (D values).
pub(crate) fn comoment_diagonal(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    comoment: &DeviceBuffer<f32>,
    diagonal: &DeviceBuffer<f32>,
) -> Result<()> {
    let d = diagonal.len();
    let grid = gpu.grid((d as u64).div_ceil(ROW_WG_SIZE as u64))?;
    let params = ComomentParams {
        d: d as u32,
        grid_x: grid.x,
        n: 0.0,
        _pad0: 0,
    };
    batch.dispatch(
        wgsl::COMOMENT_DIAGONAL,
        &[],
        &params,
        &[
            ("comoment", comoment.bind()),
            ("diagonal_out", diagonal.bind()),
        ],
        grid,
        Work::f32s(0.0, 2.0 * d as f64),
    )
}
