//! The affinity graphs of spectral clustering on the device (`shaders/affinity.wgsl`): the
//! RBF kernel times a block of vectors, one exponential per pair for all its columns, so that
//! no N x N matrix exists; the k nearest
//! neighbours of every row; a CSR sparse matrix times a block.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{affinity as wgsl, check_params};
use crate::gpu::{Gpu, GpuMatrix};

/// The override that sets the RBF product's queries per workgroup.
pub(crate) const RBF_WG_SIZE: &str = "RBF_WG_SIZE";
/// Queries per workgroup of the RBF product: one per invocation, 64 as on most kernels (a
/// power of two from `RBF_WG_MIN` to `RBF_WG_MAX` in the shader, all of which the shader tests
/// compile and the GPU tests run).
const RBF_QUERIES: u32 = 64;
/// Block columns per RBF pass over the pairs.
const RBF_COLS: usize = wgsl::BLOCK_COLS as usize;
/// Data rows per step of the storage RBF kernel (`RBF_TILE`).
const RBF_TILE: usize = wgsl::RBF_TILE as usize;
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
    _pad1: u32,
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

/// How the two dense products read the data rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AffinityVariant {
    /// From storage, staged through workgroup memory (GPUs).
    Storage,
    /// From uniform slices, the query row in registers (CPU-like adapters, D ≤
    /// [`UNIFORM_MAX_D`]). The same bits as [`AffinityVariant::Storage`].
    Uniform,
}

impl AffinityVariant {
    /// The variant for `d` features (and `k` neighbours, for the search) on this adapter:
    /// fixed by the adapter's kind and the shape, so the same adapter always runs the same
    /// kernel.
    pub(crate) fn for_adapter(gpu: &Gpu, d: usize, k: usize) -> Self {
        if super::tiles::cpu_like(gpu) && d <= UNIFORM_MAX_D && k <= KNN_UNIFORM_MAX_K {
            Self::Uniform
        } else {
            Self::Storage
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
/// exponential is computed once per `RBF_COLS` columns (once in all for the eigen-solver's
/// blocks).
pub(crate) fn rbf_times_block(
    gpu: &Gpu,
    x: &GpuMatrix,
    gamma: f32,
    v: &DeviceBuffer<f32>,
    m: usize,
) -> Result<Vec<f32>> {
    let variant = AffinityVariant::for_adapter(gpu, x.n_features(), 0);
    rbf_times_block_with(gpu, x, gamma, v, m, (variant, RBF_QUERIES))
}

/// [`rbf_times_block`] with the given variant and, for the storage one, `wg` queries per
/// workgroup (a power of two in the shader's `RBF_WG_MIN..=RBF_WG_MAX`). Every query's sum
/// over the data rows is one chain in data order, however the data are split into
/// dispatches (chunks, uniform slices, runs within llvmpipe's loop budget).
pub(crate) fn rbf_times_block_with(
    gpu: &Gpu,
    x: &GpuMatrix,
    gamma: f32,
    v: &DeviceBuffer<f32>,
    m: usize,
    (variant, wg): (AffinityVariant, u32),
) -> Result<Vec<f32>> {
    let (n, d) = (x.n_rows(), x.n_features());
    if variant == AffinityVariant::Uniform && d > UNIFORM_MAX_D {
        return Err(crate::Error::Gpu(format!(
            "the uniform RBF product takes D <= {UNIFORM_MAX_D}"
        )));
    }
    gpu.scoped("RBF affinity product", || {
        let out = DeviceBuffer::<f32>::zeroed(gpu, "affinity product", n * m);
        let mut batch = Batch::new(gpu, "rbf_times_block");
        // Data rows per dispatch: a uniform slice (its rows of x and of v), and within the
        // loop budget: one back-edge per row there; the storage kernel takes, per step of
        // RBF_TILE rows, about 16 D + 19 ⌈D/16⌉ + 30 (its distance loops, the staging and
        // the tile's loops), so at most D + 2 ⌈D/16⌉ + 4 per row in whole steps.
        let d4 = d.div_ceil(4);
        let v_pad = match variant {
            AffinityVariant::Uniform => {
                Some(PaddedRows::record(gpu, &mut batch, (v.bind(), 0), n, m)?)
            }
            AffinityVariant::Storage => None,
        };
        let run = match &v_pad {
            Some(v_pad) => SLICE_VALUES / (4 * d4.max(v_pad.vec4s)),
            None => usize::MAX,
        };
        let per_row = match variant {
            AffinityVariant::Uniform => 1,
            AffinityVariant::Storage => d + 2 * d.div_ceil(16) + 4,
        };
        let run = super::items_within_loop_budget(gpu, run.min(n), per_row, 2 * RBF_COLS);
        let run = match variant {
            AffinityVariant::Uniform => run,
            // Whole steps, so that no run pays for a step it only partly uses.
            AffinityVariant::Storage if run >= n => run,
            AffinityVariant::Storage => (run / RBF_TILE * RBF_TILE).max(RBF_TILE),
        };
        let slice = gpu.uniform_buffer("affinity slice", 4 * SLICE_VALUES as u64);
        let v_slice = gpu.uniform_buffer("affinity block slice", 4 * SLICE_VALUES as u64);
        let mut first_pass = true;
        for data in x.chunks() {
            let x_pad = PaddedRows::of_chunk(gpu, &mut batch, variant, data, d)?;
            for first in (0..data.n_rows).step_by(run) {
                let rows = run.min(data.n_rows - first);
                if let (Some(x_pad), Some(v_pad)) = (&x_pad, &v_pad) {
                    x_pad.copy_to_slice(&mut batch, &slice, first, rows);
                    v_pad.copy_to_slice(&mut batch, &v_slice, data.row_start + first, rows);
                }
                for q in x.chunks() {
                    let queries = q.n_rows.div_ceil(match variant {
                        AffinityVariant::Uniform => super::ROW_WG_SIZE as usize,
                        AffinityVariant::Storage => wg as usize,
                    });
                    let grid = gpu.grid(queries as u64)?;
                    for col0 in (0..m).step_by(RBF_COLS) {
                        let cols = RBF_COLS.min(m - col0);
                        let params = AffinityParams {
                            m: m as u32,
                            col0: col0 as u32,
                            n_cols: cols as u32,
                            accumulate: u32::from(!first_pass),
                            gamma,
                            v_vec4s: v_pad.as_ref().map_or(0, |v| v.vec4s as u32),
                            ..AffinityParams::pairs((q, data), (first, rows), d, grid.x)
                        };
                        // Per pair: the distance (2 per feature), the exponential (counted
                        // as 2), an FMA per column.
                        let work = Work::f32s(
                            (q.n_rows * rows) as f64 * (2 * d + 2 + 2 * cols) as f64,
                            ((q.n_rows + rows) * d + rows * cols) as f64,
                        );
                        match variant {
                            AffinityVariant::Uniform => batch.dispatch(
                                wgsl::RBF_TIMES_BLOCK_UNIFORM,
                                &[(AFFINITY_D4, d4 as u32)],
                                &params,
                                &[
                                    ("queries", q.bind()),
                                    ("x_slice", slice_bind(&slice)),
                                    ("v_slice", slice_bind(&v_slice)),
                                    ("out", out.bind()),
                                ],
                                grid,
                                work,
                            )?,
                            AffinityVariant::Storage => batch.dispatch(
                                wgsl::RBF_TIMES_BLOCK,
                                &[(RBF_WG_SIZE, wg)],
                                &params,
                                &[
                                    ("queries", q.bind()),
                                    ("data", data.bind()),
                                    ("block", v.bind()),
                                    ("out", out.bind()),
                                ],
                                grid,
                                work,
                            )?,
                        }
                    }
                }
                first_pass = false;
            }
        }
        let h = batch.read_all(&out);
        Ok(batch.finish()?.f32s(h))
    })
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
    if super::tiles::cpu_like(gpu) {
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
