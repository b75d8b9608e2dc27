//! The RBF affinity of spectral clustering times a block of vectors on the device
//! (`shaders/products/affinity.wgsl`), one exponential per pair for all its columns, so that
//! no N x N matrix exists.
//!
//! The product runs on GPUs as `rbf_times_block_tiled`, the n-body pattern on the GEMM tile
//! core (`shaders/shared/gemm.wgsl`, issue 23): distances in the GEMM form
//! ‖x_q − s‖² + ‖x_j − s‖² − 2 (x_q − s)·(x_j − s), one FMA per multiply-add, with a shift s
//! among the data (the mean of a sample of rows) so that data far from the origin keep their
//! digits (the error is about u·D times the shifted norms; the shader's header has the
//! argument), then the weights times the block as a second product on the same core. On
//! CPU-like adapters `rbf_times_block_uniform` sums the difference form from uniform slices.
//! Either is deterministic: each query's sum is one chain over the data rows in order.
//! Where one tile of so many features would outrun llvmpipe's loop cap (wide rows on CPU-like
//! adapters, from about 11 000 features), the host twin [`rbf_times_block_host`] computes the
//! same product on the same cores instead of returning pairs cut short.

use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::products::affinity as wgsl;
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::primitives::gemm::{cpu_like, rows_vec4, vec4_placeholder, GemmConfig};
use crate::kernels::primitives::pairs::{
    slice_bind, slice_buffer, PaddedRows, PairParams, BLOCK_COLS, PAIR_D4, SLICE_VALUES,
    UNIFORM_MAX_D,
};
use crate::kernels::{fits_loop_budget, items_within_loop_budget, ROW_WG_SIZE};

/// Which kernel computes the RBF product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RbfVariant {
    /// `rbf_times_block_tiled`: the GEMM form on the staged tile core, in this shape (GPUs).
    Tiled(GemmConfig),
    /// `rbf_times_block_uniform`: the difference form with the data rows from uniform slices
    /// (CPU-like adapters, D ≤ [`UNIFORM_MAX_D`]).
    Uniform,
    /// [`rbf_times_block_host`] on the host's cores (CPU-like adapters whose loop cap one
    /// tile of D features would outrun: [`tile_fits_loop_budget`]).
    Host,
}

impl RbfVariant {
    /// The variant for `n` rows of `d` features and a block of `m` columns on this adapter,
    /// fixed by the adapter's kind and the shape (the same adapter and shape, the same
    /// kernel and bits). The tile is [`GemmConfig::for_shape`]'s for N x m outputs: 128 x 32
    /// for the eigen-solver's blocks of at most 32 columns, which matters here because the
    /// kernel's second phase costs a tile width of FMAs per pair.
    pub(crate) fn for_adapter(gpu: &Gpu, n: usize, d: usize, m: usize) -> Self {
        let config = GemmConfig::for_shape(n, m);
        if cpu_like(gpu) && d <= UNIFORM_MAX_D {
            Self::Uniform
        } else if tile_fits_loop_budget(gpu, d, config) {
            Self::Tiled(config)
        } else {
            Self::Host
        }
    }
}

/// Loop back-edges one invocation of `rbf_times_block_tiled` takes per data tile of `tile_n`
/// rows with D features: about 40 per stage of GEMM_DEPTH features (the load and store
/// loops, the scalar quads, the multiply) and per stage of GEMM_DEPTH data rows (the V loads
/// and the W stores), and 64 for the weights. Counted at the shallowest stage (8): a deeper
/// one takes fewer.
fn tile_back_edges(d: usize, tile_n: usize) -> usize {
    40 * (d.div_ceil(8) + 1) + 64 + 40 * tile_n / 8
}

/// Whether one data tile of the tiled product over `d` features stays within this adapter's
/// loop budget (always on GPUs): past it llvmpipe would cut the feature loop short and the
/// pairs' weights would be wrong however the data rows were split.
fn tile_fits_loop_budget(gpu: &Gpu, d: usize, config: GemmConfig) -> bool {
    fits_loop_budget(gpu, tile_back_edges(d, config.tile_n()) + 256)
}

/// W = A'·V for the RBF affinity A'_ij = exp(−γ‖xᵢ − xⱼ‖²), i ≠ j, of the rows of `x`, with
/// `v` an N x m row-major block on the device; returns W (N x m) read back. Each pair's
/// exponential is computed once per column pass (once in all for the eigen-solver's blocks).
pub(crate) fn rbf_times_block(
    gpu: &Gpu,
    x: &GpuMatrix,
    gamma: f32,
    v: &DeviceBuffer<f32>,
    m: usize,
) -> Result<Vec<f32>> {
    let variant = RbfVariant::for_adapter(gpu, x.n_rows(), x.n_features(), m);
    rbf_times_block_with(gpu, x, gamma, v, m, variant)
}

/// [`rbf_times_block`] with the given variant. Every query's sum over the data rows is one
/// chain in data order, however the data are split into dispatches (chunks, uniform slices,
/// runs within llvmpipe's loop budget), so a variant gives the same bits at any split (and
/// the tiled one at any tile shape).
pub(crate) fn rbf_times_block_with(
    gpu: &Gpu,
    x: &GpuMatrix,
    gamma: f32,
    v: &DeviceBuffer<f32>,
    m: usize,
    variant: RbfVariant,
) -> Result<Vec<f32>> {
    let (n, d) = (x.n_rows(), x.n_features());
    if variant == RbfVariant::Uniform && d > UNIFORM_MAX_D {
        return Err(crate::error::Error::Gpu(format!(
            "the uniform RBF product takes D <= {UNIFORM_MAX_D}"
        )));
    }
    if let RbfVariant::Tiled(config) = variant {
        if !tile_fits_loop_budget(gpu, d, config) {
            return Err(crate::error::Error::Gpu(format!(
                "the tiled RBF product of {d} features outruns this adapter's loop budget"
            )));
        }
    }
    if variant == RbfVariant::Host {
        return gpu.scoped("RBF affinity product on the host", || {
            let rows = x.to_host(gpu)?;
            let mut batch = Batch::new(gpu, "rbf_times_block block read");
            let h = batch.read_all(v);
            let block = batch.finish()?.f32s(h);
            Ok(rbf_times_block_host(&rows, d, gamma, &block[..n * m], m))
        });
    }
    gpu.scoped("RBF affinity product", || {
        let out = DeviceBuffer::<f32>::zeroed(gpu, "affinity product", n * m);
        let mut batch = Batch::new(gpu, "rbf_times_block");
        let product = RbfProduct {
            x,
            gamma,
            v,
            m,
            out: &out,
        };
        match variant {
            RbfVariant::Uniform => product.record_uniform(gpu, &mut batch)?,
            RbfVariant::Tiled(config) => product.record_tiled(gpu, &mut batch, config)?,
            RbfVariant::Host => {
                return Err(crate::error::Error::Gpu(
                    "the host RBF product records no dispatches".into(),
                ))
            }
        }
        let h = batch.read_all(&out);
        Ok(batch.finish()?.f32s(h))
    })
}

/// The operands of one RBF product.
struct RbfProduct<'a> {
    x: &'a GpuMatrix,
    gamma: f32,
    v: &'a DeviceBuffer<f32>,
    m: usize,
    out: &'a DeviceBuffer<f32>,
}

impl RbfProduct<'_> {
    /// Records `rbf_times_block_uniform` over every pair.
    fn record_uniform(&self, gpu: &Gpu, batch: &mut Batch<'_>) -> Result<()> {
        let (x, m) = (self.x, self.m);
        let (n, d) = (x.n_rows(), x.n_features());
        // Data rows per dispatch: a uniform slice (its rows of x and of v), and within the
        // loop budget (one back-edge per row).
        let d4 = d.div_ceil(4);
        let v_pad = PaddedRows::record(gpu, batch, (self.v.bind(), 0), n, m)?;
        let run = SLICE_VALUES / (4 * d4.max(v_pad.vec4s));
        let run = items_within_loop_budget(gpu, run.min(n), 1, 2 * BLOCK_COLS);
        let slice = slice_buffer(gpu, "affinity slice");
        let v_slice = slice_buffer(gpu, "affinity block slice");
        let mut first_pass = true;
        for data in x.chunks() {
            let x_pad =
                PaddedRows::record(gpu, batch, (data.bind(), data.x_offset), data.n_rows, d)?;
            for first in (0..data.n_rows).step_by(run) {
                let rows = run.min(data.n_rows - first);
                x_pad.copy_to_slice(batch, &slice, first, rows);
                v_pad.copy_to_slice(batch, &v_slice, data.row_start + first, rows);
                for q in x.chunks() {
                    let grid = gpu.grid(q.n_rows.div_ceil(ROW_WG_SIZE as usize) as u64)?;
                    for col0 in (0..m).step_by(BLOCK_COLS) {
                        let cols = BLOCK_COLS.min(m - col0);
                        let params = PairParams {
                            m: m as u32,
                            col0: col0 as u32,
                            n_cols: cols as u32,
                            accumulate: u32::from(!first_pass),
                            gamma: self.gamma,
                            v_vec4s: v_pad.vec4s as u32,
                            ..PairParams::pairs((q, data), (first, rows), d, grid.x)
                        };
                        batch.dispatch(
                            wgsl::RBF_TIMES_BLOCK_UNIFORM,
                            &[(PAIR_D4, d4 as u32)],
                            &params,
                            &[
                                ("queries", q.bind()),
                                ("x_slice", slice_bind(&slice)),
                                ("v_slice", slice_bind(&v_slice)),
                                ("out", self.out.bind()),
                            ],
                            grid,
                            rbf_work(q.n_rows, rows, d, cols, first_pass),
                        )?;
                    }
                }
                first_pass = false;
            }
        }
        Ok(())
    }

    /// Records the prepared side (the shift and every row's norm) and `rbf_times_block_tiled`
    /// over every pair, in `config`'s tiles.
    fn record_tiled(&self, gpu: &Gpu, batch: &mut Batch<'_>, config: GemmConfig) -> Result<()> {
        let (x, m) = (self.x, self.m);
        let (n, d) = (x.n_rows(), x.n_features());
        let d4 = d.div_ceil(4);
        let chunks = x.chunks();
        let prepared = DeviceBuffer::<f32>::zeroed(gpu, "rbf prepared", 4 * (d4 + n.div_ceil(4)));
        let placeholders: Vec<_> = chunks.iter().map(|c| vec4_placeholder(gpu, c)).collect();
        let aligned = |offsets: &[u32]| u32::from(d % 4 == 0 && offsets.iter().all(|o| o % 4 == 0));
        // The shift: the mean of the first rows (RBF_SHIFT_ROWS at most) of the first chunk.
        let sample = chunks[0].n_rows.min(wgsl::RBF_SHIFT_ROWS as usize);
        let grid = gpu.grid((4 * d4).div_ceil(ROW_WG_SIZE as usize) as u64)?;
        let params = PairParams {
            n_data: sample as u32,
            ..PairParams::pairs((&chunks[0], &chunks[0]), (0, 0), d, grid.x)
        };
        let binds = [("data", chunks[0].bind()), ("prepared", prepared.bind())];
        let work = Work::f32s((sample * d) as f64, (sample * d + 4 * d4) as f64);
        batch.dispatch(wgsl::RBF_SHIFT, &[], &params, &binds, grid, work)?;
        // ‖x − s‖² of every row, chunk by chunk.
        for (data, ph) in chunks.iter().zip(&placeholders) {
            let grid = gpu.grid(data.n_rows.div_ceil(ROW_WG_SIZE as usize) as u64)?;
            let pairs = PairParams::pairs((data, data), (0, data.n_rows), d, grid.x);
            let params = PairParams {
                x_vec4: aligned(&[pairs.x_offset]),
                ..pairs
            };
            let binds = [
                ("data", data.bind()),
                ("data4", rows_vec4(data, ph)),
                ("prepared", prepared.bind()),
            ];
            let rows = data.n_rows as f64;
            let work = Work::f32s(2.0 * rows * d as f64, rows * (d + 1) as f64 + d as f64);
            batch.dispatch(wgsl::RBF_NORMS, &[], &params, &binds, grid, work)?;
        }
        // Data rows per dispatch, in whole tiles, within llvmpipe's loop budget
        // (tile_back_edges per data tile; one tile fits, checked by the caller).
        let (tile_m, tile_n) = (config.tile_m(), config.tile_n());
        let per_tile = tile_back_edges(d, tile_n);
        let run = items_within_loop_budget(gpu, n, per_tile.div_ceil(tile_n), 256);
        let run = if run >= n {
            run
        } else {
            (run / tile_n * tile_n).max(tile_n)
        };
        let mut first_pass = true;
        for (data, data_ph) in chunks.iter().zip(&placeholders) {
            for first in (0..data.n_rows).step_by(run) {
                let rows = run.min(data.n_rows - first);
                for (q, q_ph) in chunks.iter().zip(&placeholders) {
                    let grid = gpu.grid(q.n_rows.div_ceil(tile_m) as u64)?;
                    for col0 in (0..m).step_by(tile_n) {
                        let cols = tile_n.min(m - col0);
                        let pairs = PairParams::pairs((q, data), (first, rows), d, grid.x);
                        let params = PairParams {
                            m: m as u32,
                            col0: col0 as u32,
                            n_cols: cols as u32,
                            accumulate: u32::from(!first_pass),
                            gamma: self.gamma,
                            x_vec4: aligned(&[pairs.q_offset, pairs.x_offset]),
                            ..pairs
                        };
                        batch.dispatch(
                            wgsl::RBF_TIMES_BLOCK_TILED,
                            &config.overrides(),
                            &params,
                            &[
                                ("queries", q.bind()),
                                ("queries4", rows_vec4(q, q_ph)),
                                ("data", data.bind()),
                                ("data4", rows_vec4(data, data_ph)),
                                ("block", self.v.bind()),
                                ("out", self.out.bind()),
                                ("prepared", prepared.bind()),
                            ],
                            grid,
                            rbf_work(q.n_rows, rows, d, cols, first_pass),
                        )?;
                    }
                }
                first_pass = false;
            }
        }
        Ok(())
    }
}

/// The least work of one RBF dispatch over `queries` x `rows` pairs and `cols` block
/// columns: per pair the distance (2 per feature), the exponential (counted as 2) and an FMA
/// per column; each operand read once (both sides' rows, the block's rows), the outputs
/// written (and read, when accumulating). The tiled kernel's norms (one value per row) are
/// within the same count's rounding.
fn rbf_work(queries: usize, rows: usize, d: usize, cols: usize, first_pass: bool) -> Work {
    let outputs = queries * cols * if first_pass { 1 } else { 2 };
    Work::f32s(
        (queries * rows) as f64 * (2 * d + 2 + 2 * cols) as f64,
        ((queries + rows) * d + rows * cols + outputs) as f64,
    )
}

/// The host twin of `rbf_times_block_tiled` for CPU-like adapters, whose "device" is these
/// same cores, where one tile of D features would outrun llvmpipe's loop cap: W = A'·V with
/// A'_ij = exp(−γ‖xᵢ − xⱼ‖²), i ≠ j, for `rows` (N x D row-major) and `block` (N x m).
/// Distances in the difference form and the sums in f64 from the f32 values (no shift is
/// needed: nothing cancels), each query's sum one chain over the data rows in order, queries
/// split over the available threads: the same bits at any thread count, within f32 rounding
/// of the kernels.
pub(crate) fn rbf_times_block_host(
    rows: &[f32],
    d: usize,
    gamma: f32,
    block: &[f32],
    m: usize,
) -> Vec<f32> {
    let n = rows.len().checked_div(d).unwrap_or(0);
    let mut out = vec![0.0f32; n * m];
    if n == 0 || m == 0 {
        return out;
    }
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let per_thread = n.div_ceil(threads);
    let gamma = f64::from(gamma);
    std::thread::scope(|scope| {
        for (part, outputs) in out.chunks_mut(per_thread * m).enumerate() {
            scope.spawn(move || {
                let mut acc = vec![0.0f64; m];
                for (r, w_row) in outputs.chunks_mut(m).enumerate() {
                    let i = part * per_thread + r;
                    let query = &rows[i * d..(i + 1) * d];
                    acc.fill(0.0);
                    for j in (0..n).filter(|&j| j != i) {
                        let w = (-gamma * squared_distance(query, &rows[j * d..(j + 1) * d])).exp();
                        for (a, &v) in acc.iter_mut().zip(&block[j * m..(j + 1) * m]) {
                            *a += w * f64::from(v);
                        }
                    }
                    for (o, &a) in w_row.iter_mut().zip(&acc) {
                        *o = a as f32;
                    }
                }
            });
        }
    });
    out
}

/// ‖a − b‖² in f64 in four interleaved partial sums (they vectorise; the order is fixed, so
/// the bits are too).
fn squared_distance(a: &[f32], b: &[f32]) -> f64 {
    let mut lanes = [0.0f64; 4];
    let (a4, a_rest) = a.split_at(a.len() / 4 * 4);
    let (b4, b_rest) = b.split_at(a4.len());
    for (qa, qb) in a4.chunks_exact(4).zip(b4.chunks_exact(4)) {
        for l in 0..4 {
            let t = f64::from(qa[l]) - f64::from(qb[l]);
            lanes[l] += t * t;
        }
    }
    let tail: f64 = a_rest
        .iter()
        .zip(b_rest)
        .map(|(&x, &y)| (f64::from(x) - f64::from(y)).powi(2))
        .sum();
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
}
