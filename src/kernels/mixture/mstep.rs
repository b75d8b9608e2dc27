//! M-step sums of a Gaussian mixture (`shaders/mixture/mstep.wgsl`): per block of rows, the
//! responsibility-weighted deviations Σ r (x − s)^p with Σ r, and the centred scatter
//! Σ r (x − s)(x − s)ᵀ (upper triangle); or, in one pass over x and r, both moments at
//! once (`DiagonalMoments`, and `AugmentedScatter`, the scatter of the row (x − s, 1), whose
//! last column is Σ r (x − s) and whose corner is Σ r).
//!
//! The scatters and the diagonal moments have uniform-slice twins (`*_uniform`: rows of x
//! and r copied into 64 KiB uniform buffers, register accumulators per invocation) that give
//! the same bits; on CPU-like adapters the autotuner times them against the storage-buffer
//! kernels per (kernel, D, K) class, on GPUs the storage-buffer kernels run.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, mixture::mstep as wgsl, EntryPoint};
use crate::gpu::Gpu;
use crate::kernels::mixture::estep::Segment;
use crate::kernels::primitives::gemm::{cpu_like, GemmConfig};
use crate::kernels::ROW_WG_SIZE;

/// From this many features on, the scatter runs as a tiled GEMM (`weighted_scatter_tiled`):
/// below it most of a 64-wide tile would be padding, and the per-output loop is cheaper.
pub(crate) const TILED_SCATTER_MIN_D: usize = 24;
/// Values of x in one uniform slice (`SLICE_VALUES` in the shader).
const SLICE_VALUES: usize = wgsl::SLICE_VALUES as usize;
/// Columns per invocation of the uniform twins (`UNIFORM_COLS` in the shader).
const UNIFORM_COLS: usize = wgsl::UNIFORM_COLS as usize;
/// Rows the autotuner times each variant on.
const TRIAL_ROWS: usize = 4096;

/// Twin of `MstepParams` in shaders/mixture/mstep.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct MstepParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    k: u32,
    block_rows: u32,
    block_offset: u32,
    n_blocks: u32,
    n_outputs: u32,
    grid_x: u32,
    augmented: u32,
    slice_first: u32,
    slice_rows: u32,
    slice_block: u32,
    slice_blocks: u32,
}

const _: () = check_params::<MstepParams>(wgsl::ENTRY_POINTS);

/// Where the per-block sums of a segment go.
pub(crate) struct Blocks<'a> {
    /// Rows per block.
    pub block_rows: usize,
    /// Global index of the segment's first block.
    pub block_offset: usize,
    /// [block][outputs] partial sums.
    pub partials: &'a DeviceBuffer<f32>,
}

/// The weighted sums a pass computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Moment {
    /// Σ r (x − s)(x − s)ᵀ, upper triangle: K D² outputs per block.
    Scatter,
    /// Σ r (x − s) (D), Σ r, then Σ r (x − s)² (D) per component: K (2D + 1) outputs per
    /// block, from one read of x and r.
    DiagonalMoments,
    /// The scatter of the augmented row (x − s, 1), upper triangle: K (D + 1)² outputs per
    /// block; [D][D] is Σ r and [j][D] is Σ r (x − s)ⱼ.
    AugmentedScatter,
}

impl Moment {
    /// Outputs per block for K components of D features.
    pub(crate) fn outputs(self, k: usize, d: usize) -> usize {
        match self {
            Moment::Scatter => k * d * d,
            Moment::DiagonalMoments => k * (2 * d + 1),
            Moment::AugmentedScatter => k * (d + 1) * (d + 1),
        }
    }

    /// The features of the scatter's rows: D, or D + 1 augmented (0 for the diagonal
    /// sums, which have no scatter).
    fn scatter_dim(self, d: usize) -> usize {
        match self {
            Moment::Scatter => d,
            Moment::AugmentedScatter => d + 1,
            _ => 0,
        }
    }
}

/// Which sums a pass takes, and about which points.
pub(crate) struct Sums<'a> {
    /// The moment.
    pub moment: Moment,
    /// K x D shifts sₖ the deviations are taken from.
    pub shift: &'a DeviceBuffer<f32>,
}

/// Records the per-block sums of `sums` over the rows of `seg` into `blocks`: with the kernel
/// for this shape, or on CPU-like adapters its uniform-slice twin (the same bits) where the
/// autotuner timed it faster.
pub(crate) fn weighted_sums(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    seg: &Segment<'_>,
    (d, k): (usize, usize),
    sums: &Sums<'_>,
    blocks: &Blocks<'_>,
) -> Result<()> {
    let variant = sums_variant(gpu, seg, (d, k), sums, blocks)?;
    record_sums(gpu, batch, variant, seg, (d, k), sums, blocks)
}

/// The storage-buffer kernel of `moment` for D features (the GPU design).
fn native_variant(moment: Moment, d: usize) -> &'static EntryPoint {
    match moment {
        Moment::DiagonalMoments => wgsl::WEIGHTED_MOMENTS_TILED,
        Moment::Scatter | Moment::AugmentedScatter if d >= TILED_SCATTER_MIN_D => {
            wgsl::WEIGHTED_SCATTER_TILED
        }
        Moment::Scatter | Moment::AugmentedScatter => wgsl::WEIGHTED_SCATTER,
    }
}

/// The uniform-slice twin of `moment`'s kernels, if it has one.
fn uniform_variant(moment: Moment) -> Option<&'static EntryPoint> {
    match moment {
        Moment::DiagonalMoments => Some(wgsl::WEIGHTED_MOMENTS_DIAG_UNIFORM),
        Moment::Scatter | Moment::AugmentedScatter => Some(wgsl::WEIGHTED_SCATTER_UNIFORM),
    }
}

/// Every kernel that can take `moment` over `seg` (the tests run each): the native ones
/// first, then the uniform twin where the rows can be copied into slices.
#[cfg(test)]
pub(crate) fn variants(
    moment: Moment,
    seg: &Segment<'_>,
    (d, k): (usize, usize),
) -> Vec<&'static EntryPoint> {
    let mut v = match moment {
        Moment::Scatter | Moment::AugmentedScatter => {
            vec![wgsl::WEIGHTED_SCATTER, wgsl::WEIGHTED_SCATTER_TILED]
        }
        _ => vec![native_variant(moment, d)],
    };
    v.extend(runnable_uniform(moment, seg, (d, k)));
    v
}

/// The uniform twin of `moment`, where the segment's rows can be copied into slices (a
/// buffer with `COPY_SRC`; a whole row of x and of r in one slice).
fn runnable_uniform(
    moment: Moment,
    seg: &Segment<'_>,
    (d, k): (usize, usize),
) -> Option<&'static EntryPoint> {
    let copyable = seg
        .chunk
        .buffer
        .usage()
        .contains(wgpu::BufferUsages::COPY_SRC);
    uniform_variant(moment).filter(|_| copyable && d.max(k) <= SLICE_VALUES)
}

/// The kernel for these sums: on GPUs the native one; on CPU-like adapters the native one or
/// its uniform twin, whichever the autotuner timed faster on the first rows (scratch
/// partials). The two give the same bits, so the choice changes only the time.
fn sums_variant(
    gpu: &Gpu,
    seg: &Segment<'_>,
    (d, k): (usize, usize),
    sums: &Sums<'_>,
    blocks: &Blocks<'_>,
) -> Result<&'static EntryPoint> {
    let native = native_variant(sums.moment, d);
    let uniform = runnable_uniform(sums.moment, seg, (d, k));
    let Some(uniform) = uniform.filter(|_| cpu_like(gpu) && seg.n_rows > 0) else {
        return Ok(native);
    };
    let candidates = [native, uniform];
    if let Some(v) = gpu.tuned_choice(&candidates, (d, k)) {
        return Ok(v);
    }
    let trial = Segment {
        chunk: seg.chunk,
        first: seg.first,
        n_rows: seg.n_rows.min(TRIAL_ROWS),
        resp: seg.resp,
    };
    let scratch = DeviceBuffer::zeroed(
        gpu,
        "mixture trial partials",
        trial.n_rows.div_ceil(blocks.block_rows) * sums.moment.outputs(k, d),
    );
    let out = Blocks {
        block_rows: blocks.block_rows,
        block_offset: 0,
        partials: &scratch,
    };
    gpu.tuned(&candidates, (d, k), |v| {
        gpu.time_trial(
            |b| record_sums(gpu, b, v, &trial, (d, k), sums, &out),
            &scratch,
        )
    })
}

/// Records `variant` (a native kernel of `moment` or its uniform twin) of the per-block sums.
pub(crate) fn record_sums(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    variant: &'static EntryPoint,
    seg: &Segment<'_>,
    (d, k): (usize, usize),
    sums: &Sums<'_>,
    blocks: &Blocks<'_>,
) -> Result<()> {
    let (moment, shift) = (sums.moment, sums.shift);
    let n_blocks = seg.n_rows.div_ceil(blocks.block_rows);
    let n_outputs = moment.outputs(k, d);
    let de = moment.scatter_dim(d);
    let params = MstepParams {
        n_rows: seg.n_rows as u32,
        x_offset: seg.chunk.x_offset + (seg.first * d) as u32,
        d: d as u32,
        k: k as u32,
        block_rows: blocks.block_rows as u32,
        block_offset: blocks.block_offset as u32,
        n_blocks: n_blocks as u32,
        n_outputs: n_outputs as u32,
        augmented: u32::from(moment == Moment::AugmentedScatter),
        ..Zeroable::zeroed()
    };
    let binds = [
        ("x", seg.chunk.bind()),
        ("resp", seg.resp.bind()),
        ("shift", shift.bind()),
        ("partials", blocks.partials.bind()),
    ];
    if Some(variant) == uniform_variant(moment) {
        return record_uniform(gpu, batch, variant, seg, params, &binds, moment);
    }
    let per_output = ((n_blocks * n_outputs) as u64).div_ceil(ROW_WG_SIZE as u64);
    let lanes_c = moments_lanes(d, k);
    let (entry, groups) = if variant == wgsl::WEIGHTED_MOMENTS_TILED {
        // A workgroup per block and tile of components x features.
        let (tile_c, tile_f) = moments_tile(lanes_c);
        let tiles = k.div_ceil(tile_c) * d.div_ceil(tile_f);
        (wgsl::WEIGHTED_MOMENTS_TILED, (n_blocks * tiles) as u64)
    } else if variant == wgsl::WEIGHTED_SCATTER_TILED {
        let tiles = de.div_ceil(scatter_tile(de).tile_m());
        let pairs = tiles * (tiles + 1) / 2;
        (wgsl::WEIGHTED_SCATTER_TILED, (n_blocks * k * pairs) as u64)
    } else {
        (wgsl::WEIGHTED_SCATTER, per_output)
    };
    let grid = gpu.grid(groups)?;
    let params = MstepParams {
        grid_x: grid.x,
        ..params
    };
    let overrides = if entry.name == wgsl::WEIGHTED_SCATTER_TILED.name {
        scatter_tile(de).overrides().to_vec()
    } else if entry.name == wgsl::WEIGHTED_MOMENTS_TILED.name {
        vec![(MOMENTS_LANES_C, lanes_c)]
    } else {
        Vec::new()
    };
    batch.dispatch(
        entry,
        &overrides,
        &params,
        &binds,
        grid,
        sums_work(moment, seg.n_rows, (d, k), n_blocks),
    )
}

/// The override that sets `weighted_moments_tiled`'s invocations along the components.
pub(crate) const MOMENTS_LANES_C: &str = "MOMENTS_LANES_C";
/// Invocations of `weighted_moments_tiled`'s workgroup (`MOMENTS_WG` in the shader).
const MOMENTS_WG: usize = wgsl::MOMENTS_WG as usize;

/// Components and features of `weighted_moments_tiled`'s tile with `lanes_c` invocations
/// along the components (each owns 4 x 4).
fn moments_tile(lanes_c: u32) -> (usize, usize) {
    let lanes_c = lanes_c as usize;
    (4 * lanes_c, 4 * (MOMENTS_WG / lanes_c))
}

/// `MOMENTS_LANES_C` for K components of D features: the tile shape (64 x 64, 32 x 128 or
/// 16 x 256) that needs the fewest workgroups per block, the squarest among equals. Every
/// shape gives the same bits (each output's chain is the same); only the padding differs.
pub(crate) fn moments_lanes(d: usize, k: usize) -> u32 {
    [16u32, 8, 4]
        .into_iter()
        .min_by_key(|&l| {
            let (tc, tf) = moments_tile(l);
            k.div_ceil(tc) * d.div_ceil(tf)
        })
        .expect("three shapes")
}

/// The tile core's shape for a scatter of `de` x `de`: square tiles (the upper triangle pairs
/// a row tile with a column tile of the same size), 128 wide once the scatter fills one.
fn scatter_tile(de: usize) -> GemmConfig {
    if de >= GemmConfig::LARGE.tile_m() {
        GemmConfig::LARGE
    } else {
        GemmConfig::SMALL
    }
}

/// Tiles on or above the diagonal that `weighted_scatter_tiled` computes for a scatter of
/// `de` x `de` (per block and component): what a scatter costs on the tile core.
pub(crate) fn scatter_tile_pairs(de: usize) -> usize {
    let tiles = de.div_ceil(scatter_tile(de).tile_m());
    tiles * (tiles + 1) / 2
}

/// Records a uniform twin: slices of whole rows of the segment (their values and their
/// responsibilities) copied into two uniform buffers, one dispatch per slice over the blocks
/// it meets (copies and dispatches alternate in order, so one pair of buffers serves them
/// all).
fn record_uniform(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    variant: &'static EntryPoint,
    seg: &Segment<'_>,
    params: MstepParams,
    binds: &[(&str, Bind<'_>)],
    moment: Moment,
) -> Result<()> {
    let (d, k, n_rows) = (params.d as usize, params.k as usize, seg.n_rows);
    let block_rows = params.block_rows as usize;
    let scatter = variant == wgsl::WEIGHTED_SCATTER_UNIFORM;
    let (entry, groups) = if scatter {
        // A workgroup per (block, component, column group, group of output rows).
        let de = moment.scatter_dim(d);
        let per_block = k * de.div_ceil(UNIFORM_COLS) * de.div_ceil(ROW_WG_SIZE as usize);
        (wgsl::WEIGHTED_SCATTER_UNIFORM, per_block)
    } else {
        // An invocation per (block, feature group, component).
        (
            wgsl::WEIGHTED_MOMENTS_DIAG_UNIFORM,
            d.div_ceil(UNIFORM_COLS) * k,
        )
    };
    let groups = |blocks: usize| {
        if scatter {
            (blocks * groups) as u64
        } else {
            ((blocks * groups) as u64).div_ceil(wgsl::MOMENTS_UNIFORM_WG_SIZE as u64)
        }
    };
    let slice_rows = (SLICE_VALUES / d.max(k).max(1)).max(1);
    let slice_bytes = 4 * SLICE_VALUES as u64;
    let x_slice = gpu.uniform_buffer("mixture rows slice", slice_bytes);
    let resp_slice = gpu.uniform_buffer("mixture responsibilities slice", slice_bytes);
    let chunk = seg.chunk;
    let mut first = 0;
    while first < n_rows {
        let rows = slice_rows.min(n_rows - first);
        let (b0, b1) = (first / block_rows, (first + rows - 1) / block_rows + 1);
        let src = chunk.bind_offset + 4 * (params.x_offset as u64 + (first * d) as u64);
        batch.copy(&chunk.buffer, src, &x_slice, 0, 4 * (rows * d) as u64);
        let src = 4 * (first * k) as u64;
        batch.copy(seg.resp.raw(), src, &resp_slice, 0, 4 * (rows * k) as u64);
        let grid = gpu.grid(groups(b1 - b0))?;
        let params = MstepParams {
            grid_x: grid.x,
            slice_first: first as u32,
            slice_rows: rows as u32,
            slice_block: b0 as u32,
            slice_blocks: (b1 - b0) as u32,
            ..params
        };
        // The loops read x and r only from the slices.
        let mut all: Vec<_> = binds
            .iter()
            .filter(|(name, _)| !matches!(*name, "x" | "resp"))
            .copied()
            .collect();
        all.push(("x_slice", Bind::Range(&x_slice, 0, slice_bytes)));
        all.push(("resp_slice", Bind::Range(&resp_slice, 0, slice_bytes)));
        batch.dispatch(
            entry,
            &[],
            &params,
            &all,
            grid,
            sums_work(moment, rows, (d, k), b1 - b0),
        )?;
        first += rows;
    }
    Ok(())
}

/// The least work of `moment` over `n_rows` rows, writing `n_blocks` blocks of partials.
fn sums_work(moment: Moment, n_rows: usize, (d, k): (usize, usize), n_blocks: usize) -> Work {
    let de = moment.scatter_dim(d);
    Work::f32s(
        (n_rows * k) as f64
            * match moment {
                // (x − s), r·(x − s) and two FMAs per feature.
                Moment::DiagonalMoments => 5.0 * d as f64,
                // (x − s), then the upper triangle of r·(x − s)(x − s)ᵀ.
                Moment::Scatter | Moment::AugmentedScatter => (de * de + 2 * de) as f64,
            },
        (n_rows * (d + k) + k * d + n_blocks * moment.outputs(k, d)) as f64,
    )
}
