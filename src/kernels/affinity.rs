//! The affinity graphs of spectral clustering on the device (`shaders/affinity.wgsl`): the
//! RBF kernel times a block of vectors, one exponential per pair for all its columns, so that
//! no N x N matrix exists; the k nearest
//! neighbours of every row; a CSR sparse matrix times a block.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::Batch;
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
    _pad0: u32,
    _pad1: u32,
}

const _: () = check_params::<AffinityParams>(wgsl::ENTRY_POINTS);

/// W = A'·V for the RBF affinity A'_ij = exp(−γ‖xᵢ − xⱼ‖²), i ≠ j, of the rows of `x`, with
/// `v` an N x m row-major block on the device; returns W (N x m) read back. One pass over the
/// pairs per `RBF_COLS` columns (one in all for the eigen-solver's blocks).
pub(crate) fn rbf_times_block(
    gpu: &Gpu,
    x: &GpuMatrix,
    gamma: f32,
    v: &DeviceBuffer<f32>,
    m: usize,
) -> Result<Vec<f32>> {
    rbf_times_block_sized(gpu, x, gamma, v, m, RBF_QUERIES)
}

/// [`rbf_times_block`] with `wg` queries per workgroup (a power of two in the shader's
/// `RBF_WG_MIN..=RBF_WG_MAX`).
pub(crate) fn rbf_times_block_sized(
    gpu: &Gpu,
    x: &GpuMatrix,
    gamma: f32,
    v: &DeviceBuffer<f32>,
    m: usize,
    wg: u32,
) -> Result<Vec<f32>> {
    let (n, d) = (x.n_rows(), x.n_features());
    gpu.scoped("RBF affinity product", || {
        let out = DeviceBuffer::<f32>::zeroed(gpu, "affinity product", n * m);
        let mut batch = Batch::new(gpu, "rbf_times_block");
        for q in x.chunks() {
            let grid = gpu.grid(q.n_rows.div_ceil(wg as usize) as u64)?;
            for (pass, data) in x.chunks().iter().enumerate() {
                for col0 in (0..m).step_by(RBF_COLS) {
                    let params = AffinityParams {
                        n_queries: q.n_rows as u32,
                        q_offset: q.x_offset,
                        n_data: data.n_rows as u32,
                        x_offset: data.x_offset,
                        d: d as u32,
                        q_row0: q.row_start as u32,
                        x_row0: data.row_start as u32,
                        m: m as u32,
                        col0: col0 as u32,
                        n_cols: RBF_COLS.min(m - col0) as u32,
                        accumulate: u32::from(pass > 0),
                        gamma,
                        grid_x: grid.x,
                        ..Zeroable::zeroed()
                    };
                    let cols = RBF_COLS.min(m - col0);
                    batch.dispatch(
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
                        // Per pair: the distance (2 per feature), the exponential (counted as
                        // 2), an FMA per column.
                        Work::f32s(
                            (q.n_rows * data.n_rows) as f64 * (2 * d + 2 + 2 * cols) as f64,
                            ((q.n_rows + data.n_rows) * d + data.n_rows * cols) as f64,
                        ),
                    )?;
                }
            }
        }
        let h = batch.read_all(&out);
        Ok(batch.finish()?.f32s(h))
    })
}

/// The `k` nearest rows of every row of `x` (itself first, ties by index), N x k indices and
/// squared distances, row-major.
pub(crate) fn nearest_neighbors(
    gpu: &Gpu,
    x: &GpuMatrix,
    k: usize,
) -> Result<(Vec<u32>, Vec<f32>)> {
    let (n, d) = (x.n_rows(), x.n_features());
    gpu.scoped("k nearest neighbours", || {
        let best_dist =
            DeviceBuffer::from_slice(gpu, "neighbour distances", &vec![f32::MAX; n * k]);
        let best_index = DeviceBuffer::from_slice(gpu, "neighbour indices", &vec![u32::MAX; n * k]);
        let mut batch = Batch::new(gpu, "knn_update");
        for q in x.chunks() {
            let grid = gpu.grid(q.n_rows.div_ceil(super::ROW_WG_SIZE as usize) as u64)?;
            for data in x.chunks() {
                let params = AffinityParams {
                    n_queries: q.n_rows as u32,
                    q_offset: q.x_offset,
                    n_data: data.n_rows as u32,
                    x_offset: data.x_offset,
                    d: d as u32,
                    q_row0: q.row_start as u32,
                    x_row0: data.row_start as u32,
                    k: k as u32,
                    grid_x: grid.x,
                    ..Zeroable::zeroed()
                };
                batch.dispatch(
                    wgsl::KNN_UPDATE,
                    &[],
                    &params,
                    &[
                        ("queries", q.bind()),
                        ("data", data.bind()),
                        ("best_dist", best_dist.bind()),
                        ("best_index", best_index.bind()),
                    ],
                    grid,
                    Work::f32s(
                        (q.n_rows * data.n_rows * 3 * d) as f64,
                        (q.n_rows * data.n_rows * d) as f64,
                    ),
                )?;
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
