//! The affinity graphs of spectral clustering on the device (`shaders/affinity.wgsl`): the
//! RBF kernel times a block of vectors, one exponential per pair for all its columns, so that
//! no N x N matrix exists; the k nearest neighbours of every row; a CSR sparse matrix times a
//! block.
//!
//! The RBF product runs on GPUs as `rbf_times_block_tiled`, the n-body pattern on the GEMM
//! tile core (`shaders/shared/gemm.wgsl`, issue 23): distances in the GEMM form
//! ‖x_q − s‖² + ‖x_j − s‖² − 2 (x_q − s)·(x_j − s), one FMA per multiply-add, with a shift s
//! among the data (the mean of a sample of rows) so that data far from the origin keep their
//! digits (the error is about u·D times the shifted norms; the shader's header has the
//! argument), then the weights times the block as a second product on the same core. On
//! CPU-like adapters `rbf_times_block_uniform` sums the difference form from uniform slices.
//! Either is deterministic: each query's sum is one chain over the data rows in order.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{affinity as wgsl, check_params};
use crate::gpu::{Gpu, GpuMatrix};

use super::assign::{rows_vec4, vec4_placeholder};
use super::tiles::{cpu_like, GemmConfig};

/// Block columns per pass of the uniform RBF product.
const RBF_COLS: usize = wgsl::BLOCK_COLS as usize;
/// Largest number of neighbours [`nearest_neighbors`] keeps.
pub(crate) const KNN_MAX: usize = wgsl::KNN_MAX as usize;

/// Twin of `AffinityParams` in shaders/affinity.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct AffinityParams {
    n_queries: u32,
    q_offset: u32,
    n_data: u32,
    x_offset: u32,
    d: u32,
    q_row0: u32,
    x_row0: u32,
    m: u32,
    col0: u32,
    n_cols: u32,
    accumulate: u32,
    k: u32,
    gamma: f32,
    grid_x: u32,
    v_vec4s: u32,
    x_vec4: u32,
}

const _: () = check_params::<AffinityParams>(wgsl::ENTRY_POINTS);

impl AffinityParams {
    /// The pairs of the query chunk `q` and `rows` data rows of `data` from its row `first`
    /// (the other fields zero).
    fn pairs(
        (q, data): (&Chunk, &Chunk),
        (first, rows): (usize, usize),
        d: usize,
        grid_x: u32,
    ) -> Self {
        Self {
            n_queries: q.n_rows as u32,
            q_offset: q.x_offset,
            n_data: rows as u32,
            x_offset: data.x_offset + (first * d) as u32,
            d: d as u32,
            q_row0: q.row_start as u32,
            x_row0: (data.row_start + first) as u32,
            grid_x,
            ..Zeroable::zeroed()
        }
    }
}

/// The override that fixes the uniform kernels' vec4s per padded row (`AFFINITY_D4`).
pub(crate) const AFFINITY_D4: &str = "AFFINITY_D4";
/// Values of one uniform slice (`AFFINITY_SLICE_VEC4S` vec4s in the shader).
const SLICE_VALUES: usize = 4 * wgsl::AFFINITY_SLICE_VEC4S as usize;
/// The override that fixes the uniform neighbour search's list length (`KNN_K`).
pub(crate) const KNN_K: &str = "KNN_K";
/// Largest k of the uniform neighbour search (the lists in registers).
pub(crate) const KNN_UNIFORM_MAX_K: usize = wgsl::KNN_UNIFORM_MAX_K as usize;
/// Largest D of the uniform kernels (the query row in registers).
pub(crate) const UNIFORM_MAX_D: usize = 4 * wgsl::UNIFORM_MAX_D4 as usize;

/// How the neighbour search reads the data rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AffinityVariant {
    /// From storage (GPUs).
    Storage,
    /// From uniform slices, the query row in registers (CPU-like adapters, D ≤
    /// [`UNIFORM_MAX_D`]). The same lists, to the bit, as [`AffinityVariant::Storage`].
    Uniform,
}

impl AffinityVariant {
    /// The variant for `d` features and `k` neighbours on this adapter: fixed by the
    /// adapter's kind and the shape, so the same adapter always runs the same kernel.
    pub(crate) fn for_adapter(gpu: &Gpu, d: usize, k: usize) -> Self {
        if cpu_like(gpu) && d <= UNIFORM_MAX_D && k <= KNN_UNIFORM_MAX_K {
            Self::Uniform
        } else {
            Self::Storage
        }
    }
}

/// Which kernel computes the RBF product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RbfVariant {
    /// `rbf_times_block_tiled`: the GEMM form on the staged tile core, in this shape (GPUs).
    Tiled(GemmConfig),
    /// `rbf_times_block_uniform`: the difference form with the data rows from uniform slices
    /// (CPU-like adapters, D ≤ [`UNIFORM_MAX_D`]).
    Uniform,
}

impl RbfVariant {
    /// The variant for `n` rows of `d` features and a block of `m` columns on this adapter,
    /// fixed by the adapter's kind and the shape (the same adapter and shape, the same
    /// kernel and bits). The tile is [`GemmConfig::for_shape`]'s for N x m outputs: 128 x 32
    /// for the eigen-solver's blocks of at most 32 columns, which matters here because the
    /// kernel's second phase costs a tile width of FMAs per pair.
    pub(crate) fn for_adapter(gpu: &Gpu, n: usize, d: usize, m: usize) -> Self {
        if cpu_like(gpu) && d <= UNIFORM_MAX_D {
            Self::Uniform
        } else {
            Self::Tiled(GemmConfig::for_shape(n, m))
        }
    }
}

/// Rows of `cols` values padded to whole vec4s on the device, for the uniform slices.
struct PaddedRows {
    rows: DeviceBuffer<f32>,
    vec4s: usize,
}

impl PaddedRows {
    /// Records the padding of `n_rows` rows of `cols` values from value `offset` of `bind`.
    fn record(
        gpu: &Gpu,
        batch: &mut Batch<'_>,
        (bind, offset): (Bind<'_>, u32),
        n_rows: usize,
        cols: usize,
    ) -> Result<Self> {
        let vec4s = cols.div_ceil(4);
        let rows = DeviceBuffer::zeroed(gpu, "padded rows", n_rows * 4 * vec4s);
        super::rows::pad_rows(gpu, batch, (bind, offset), (n_rows, cols, 4 * vec4s), &rows)?;
        Ok(Self { rows, vec4s })
    }

    /// The rows of a data chunk padded for the uniform variant (none for the storage one).
    fn of_chunk(
        gpu: &Gpu,
        batch: &mut Batch<'_>,
        variant: AffinityVariant,
        data: &Chunk,
        d: usize,
    ) -> Result<Option<Self>> {
        if variant == AffinityVariant::Storage {
            return Ok(None);
        }
        let at = (data.bind(), data.x_offset);
        Self::record(gpu, batch, at, data.n_rows, d).map(Some)
    }

    /// Records the copy of `n` rows from row `first` into the uniform `slice`.
    fn copy_to_slice(&self, batch: &mut Batch<'_>, slice: &wgpu::Buffer, first: usize, n: usize) {
        let bytes = 16 * self.vec4s as u64;
        batch.copy(
            self.rows.raw(),
            first as u64 * bytes,
            slice,
            0,
            n as u64 * bytes,
        );
    }
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
        return Err(crate::Error::Gpu(format!(
            "the uniform RBF product takes D <= {UNIFORM_MAX_D}"
        )));
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
        let run = super::items_within_loop_budget(gpu, run.min(n), 1, 2 * RBF_COLS);
        let slice = gpu.uniform_buffer("affinity slice", 4 * SLICE_VALUES as u64);
        let v_slice = gpu.uniform_buffer("affinity block slice", 4 * SLICE_VALUES as u64);
        let mut first_pass = true;
        for data in x.chunks() {
            let x_pad =
                PaddedRows::record(gpu, batch, (data.bind(), data.x_offset), data.n_rows, d)?;
            for first in (0..data.n_rows).step_by(run) {
                let rows = run.min(data.n_rows - first);
                x_pad.copy_to_slice(batch, &slice, first, rows);
                v_pad.copy_to_slice(batch, &v_slice, data.row_start + first, rows);
                for q in x.chunks() {
                    let grid = gpu.grid(q.n_rows.div_ceil(super::ROW_WG_SIZE as usize) as u64)?;
                    for col0 in (0..m).step_by(RBF_COLS) {
                        let cols = RBF_COLS.min(m - col0);
                        let params = AffinityParams {
                            m: m as u32,
                            col0: col0 as u32,
                            n_cols: cols as u32,
                            accumulate: u32::from(!first_pass),
                            gamma: self.gamma,
                            v_vec4s: v_pad.vec4s as u32,
                            ..AffinityParams::pairs((q, data), (first, rows), d, grid.x)
                        };
                        batch.dispatch(
                            wgsl::RBF_TIMES_BLOCK_UNIFORM,
                            &[(AFFINITY_D4, d4 as u32)],
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
        let grid = gpu.grid((4 * d4).div_ceil(super::ROW_WG_SIZE as usize) as u64)?;
        let params = AffinityParams {
            n_data: sample as u32,
            ..AffinityParams::pairs((&chunks[0], &chunks[0]), (0, 0), d, grid.x)
        };
        let binds = [("data", chunks[0].bind()), ("prepared", prepared.bind())];
        let work = Work::f32s((sample * d) as f64, (sample * d + 4 * d4) as f64);
        batch.dispatch(wgsl::RBF_SHIFT, &[], &params, &binds, grid, work)?;
        // ‖x − s‖² of every row, chunk by chunk.
        for (data, ph) in chunks.iter().zip(&placeholders) {
            let grid = gpu.grid(data.n_rows.div_ceil(super::ROW_WG_SIZE as usize) as u64)?;
            let pairs = AffinityParams::pairs((data, data), (0, data.n_rows), d, grid.x);
            let params = AffinityParams {
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
        // Data rows per dispatch, in whole tiles, within llvmpipe's loop budget: per data
        // tile an invocation takes at most about 40 back-edges per stage of GEMM_DEPTH
        // features (the load and store loops, the scalar quads, the multiply) and per stage
        // of GEMM_DEPTH data rows (the V loads and the W stores), and 64 for the weights.
        let (tile_m, tile_n) = (config.tile_m(), config.tile_n());
        let per_tile = 40 * (d.div_ceil(8) + 1) + 64 + 40 * tile_n / 8;
        let run = super::items_within_loop_budget(gpu, n, per_tile.div_ceil(tile_n), 256);
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
                        let pairs = AffinityParams::pairs((q, data), (first, rows), d, grid.x);
                        let params = AffinityParams {
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

/// A whole uniform slice buffer as a binding.
fn slice_bind(slice: &wgpu::Buffer) -> Bind<'_> {
    Bind::Range(slice, 0, 4 * SLICE_VALUES as u64)
}

/// The `k` nearest rows of every row of `x` (itself first, ties by index), N x k indices and
/// squared distances, row-major. On CPU-like adapters the search runs on the host's threads
/// (`affinity_host::nearest_neighbors_host`), elsewhere on the device.
pub(crate) fn nearest_neighbors(
    gpu: &Gpu,
    x: &GpuMatrix,
    k: usize,
) -> Result<(Vec<u32>, Vec<f32>)> {
    if cpu_like(gpu) {
        let rows = gpu.scoped("k nearest neighbours", || x.to_host(gpu))?;
        return Ok(super::affinity_host::nearest_neighbors_host(
            &rows,
            x.n_features(),
            k,
        ));
    }
    let variant = AffinityVariant::for_adapter(gpu, x.n_features(), k);
    nearest_neighbors_with(gpu, x, k, variant)
}

/// [`nearest_neighbors`] with the given variant (the same lists from both).
pub(crate) fn nearest_neighbors_with(
    gpu: &Gpu,
    x: &GpuMatrix,
    k: usize,
    variant: AffinityVariant,
) -> Result<(Vec<u32>, Vec<f32>)> {
    let (n, d) = (x.n_rows(), x.n_features());
    if variant == AffinityVariant::Uniform && (d > UNIFORM_MAX_D || k > KNN_UNIFORM_MAX_K) {
        return Err(crate::Error::Gpu(format!(
            "the uniform neighbour search takes D <= {UNIFORM_MAX_D}, k <= {KNN_UNIFORM_MAX_K}"
        )));
    }
    gpu.scoped("k nearest neighbours", || {
        let best_dist =
            DeviceBuffer::from_slice(gpu, "neighbour distances", &vec![f32::MAX; n * k]);
        let best_index = DeviceBuffer::from_slice(gpu, "neighbour indices", &vec![u32::MAX; n * k]);
        let mut batch = Batch::new(gpu, "knn_update");
        // Data rows per dispatch: within the loop budget, counting for the storage kernel an
        // insertion (k back-edges) at every row, the worst case (the uniform kernel's loops
        // over the list unroll); and a uniform slice.
        let d4 = d.div_ceil(4);
        let (run, per_row) = match variant {
            AffinityVariant::Uniform => (SLICE_VALUES / (4 * d4), 1),
            AffinityVariant::Storage => (usize::MAX, k + d + 3),
        };
        let run = super::items_within_loop_budget(gpu, run.min(n), per_row, 2 * k + d);
        let slice = gpu.uniform_buffer("neighbour slice", 4 * SLICE_VALUES as u64);
        for data in x.chunks() {
            let x_pad = PaddedRows::of_chunk(gpu, &mut batch, variant, data, d)?;
            for first in (0..data.n_rows).step_by(run) {
                let rows = run.min(data.n_rows - first);
                if let Some(x_pad) = &x_pad {
                    x_pad.copy_to_slice(&mut batch, &slice, first, rows);
                }
                for q in x.chunks() {
                    let grid = gpu.grid(q.n_rows.div_ceil(super::ROW_WG_SIZE as usize) as u64)?;
                    let params = AffinityParams {
                        k: k as u32,
                        ..AffinityParams::pairs((q, data), (first, rows), d, grid.x)
                    };
                    let work = Work::f32s(
                        (q.n_rows * rows * 3 * d) as f64,
                        ((q.n_rows + rows) * d) as f64,
                    );
                    let lists = [
                        ("best_dist", best_dist.bind()),
                        ("best_index", best_index.bind()),
                    ];
                    match variant {
                        AffinityVariant::Uniform => batch.dispatch(
                            wgsl::KNN_UPDATE_UNIFORM,
                            &[(AFFINITY_D4, d4 as u32), (KNN_K, k as u32)],
                            &params,
                            &[
                                ("queries", q.bind()),
                                ("x_slice", slice_bind(&slice)),
                                lists[0],
                                lists[1],
                            ],
                            grid,
                            work,
                        )?,
                        AffinityVariant::Storage => batch.dispatch(
                            wgsl::KNN_UPDATE,
                            &[],
                            &params,
                            &[
                                ("queries", q.bind()),
                                ("data", data.bind()),
                                lists[0],
                                lists[1],
                            ],
                            grid,
                            work,
                        )?,
                    }
                }
            }
        }
        let hi = batch.read_all(&best_index);
        let hd = batch.read_all(&best_dist);
        let back = batch.finish()?;
        Ok((back.u32s(hi), back.f32s(hd)))
    })
}

/// A sparse N x N matrix in CSR form on the device.
pub(crate) struct CsrMatrix {
    n: usize,
    row_starts: DeviceBuffer<u32>,
    cols: DeviceBuffer<u32>,
    values: DeviceBuffer<f32>,
    nnz: usize,
}

impl CsrMatrix {
    /// Uploads `row_starts` (N + 1), `cols` and `values` (one per entry).
    pub(crate) fn upload(
        gpu: &Gpu,
        row_starts: &[u32],
        cols: &[u32],
        values: &[f32],
    ) -> Result<Self> {
        gpu.scoped("uploading a sparse matrix", || {
            Ok(Self {
                n: row_starts.len() - 1,
                row_starts: DeviceBuffer::from_slice(gpu, "csr rows", row_starts),
                cols: DeviceBuffer::from_slice(gpu, "csr columns", cols),
                values: DeviceBuffer::from_slice(gpu, "csr values", values),
                nnz: values.len(),
            })
        })
    }

    /// W = S·V for an N x m row-major block `v` on the device; W read back.
    pub(crate) fn times_block(
        &self,
        gpu: &Gpu,
        v: &DeviceBuffer<f32>,
        m: usize,
    ) -> Result<Vec<f32>> {
        let n = self.n;
        gpu.scoped("sparse affinity product", || {
            let out = DeviceBuffer::<f32>::zeroed(gpu, "sparse product", n * m);
            let mut batch = Batch::new(gpu, "csr_times_block");
            let grid = gpu.grid(n.div_ceil(super::ROW_WG_SIZE as usize) as u64)?;
            let params = AffinityParams {
                n_queries: n as u32,
                m: m as u32,
                grid_x: grid.x,
                ..Zeroable::zeroed()
            };
            batch.dispatch(
                wgsl::CSR_TIMES_BLOCK,
                &[],
                &params,
                &[
                    ("block", v.bind()),
                    ("out", out.bind()),
                    ("row_starts", self.row_starts.bind()),
                    ("cols", self.cols.bind()),
                    ("values", self.values.bind()),
                ],
                grid,
                Work::f32s(
                    (2 * self.nnz * m) as f64,
                    (self.nnz * (m + 2) + n * m) as f64,
                ),
            )?;
            let h = batch.read_all(&out);
            Ok(batch.finish()?.f32s(h))
        })
    }
}
