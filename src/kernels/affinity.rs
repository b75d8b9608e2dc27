//! The affinity graphs of spectral clustering on the device (`shaders/affinity.wgsl`): the
//! RBF kernel times a block of vectors, tiled so that no N x N matrix exists; the k nearest
//! neighbours of every row; a CSR sparse matrix times a block.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::profile::Work;
use crate::gpu::shaders::{affinity as wgsl, check_params};
use crate::gpu::{Gpu, GpuMatrix};

/// Queries per workgroup of the RBF product (`TILE` in the shader).
const TILE: usize = wgsl::TILE as usize;
/// Block columns per RBF dispatch.
const BLOCK_COLS: usize = wgsl::BLOCK_COLS as usize;
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
/// `v` an N x m row-major block on the device; returns W (N x m) read back.
pub(crate) fn rbf_times_block(
    gpu: &Gpu,
    x: &GpuMatrix,
    gamma: f32,
    v: &wgpu::Buffer,
    m: usize,
) -> Result<Vec<f32>> {
    let (n, d) = (x.n_rows(), x.n_features());
    gpu.scoped("RBF affinity product", || {
        let out = gpu.buffer_zeroed("affinity product", (n * m * 4) as u64);
        let mut batch = Batch::new(gpu, "rbf_times_block");
        for q in x.chunks() {
            let grid = gpu.grid(q.n_rows.div_ceil(TILE) as u64)?;
            for (pass, data) in x.chunks().iter().enumerate() {
                for col0 in (0..m).step_by(BLOCK_COLS) {
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
                        n_cols: BLOCK_COLS.min(m - col0) as u32,
                        accumulate: u32::from(pass > 0),
                        gamma,
                        grid_x: grid.x,
                        ..Zeroable::zeroed()
                    };
                    let cols = BLOCK_COLS.min(m - col0);
                    batch.dispatch(
                        wgsl::RBF_TIMES_BLOCK,
                        &[],
                        &params,
                        &[
                            ("queries", q.bind()),
                            ("data", data.bind()),
                            ("block", Bind::Whole(v)),
                            ("out", Bind::Whole(&out)),
                        ],
                        grid,
                        // Per pair: the distance (2 per feature), the exponential, an FMA per
                        // column.
                        Work::f32s(
                            (q.n_rows * data.n_rows) as f64 * (2 * d + 2 + 2 * cols) as f64,
                            ((q.n_rows + data.n_rows) * d + data.n_rows * cols) as f64,
                        ),
                    )?;
                }
            }
        }
        let h = batch.read(&out, 0, (n * m * 4) as u64);
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
        let best_dist = gpu.buffer_from(
            "neighbour distances",
            &vec![f32::MAX; n * k],
            wgpu::BufferUsages::empty(),
        );
        let best_index = gpu.buffer_from(
            "neighbour indices",
            &vec![u32::MAX; n * k],
            wgpu::BufferUsages::empty(),
        );
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
                        ("best_dist", Bind::Whole(&best_dist)),
                        ("best_index", Bind::Whole(&best_index)),
                    ],
                    grid,
                    Work::f32s(
                        (q.n_rows * data.n_rows * 3 * d) as f64,
                        (q.n_rows * data.n_rows * d) as f64,
                    ),
                )?;
            }
        }
        let hi = batch.read(&best_index, 0, (n * k * 4) as u64);
        let hd = batch.read(&best_dist, 0, (n * k * 4) as u64);
        let back = batch.finish()?;
        Ok((back.u32s(hi), back.f32s(hd)))
    })
}

/// A sparse N x N matrix in CSR form on the device.
pub(crate) struct CsrMatrix {
    n: usize,
    row_starts: wgpu::Buffer,
    cols: wgpu::Buffer,
    values: wgpu::Buffer,
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
                row_starts: gpu.buffer_from("csr rows", row_starts, wgpu::BufferUsages::empty()),
                cols: gpu.buffer_from("csr columns", cols, wgpu::BufferUsages::empty()),
                values: gpu.buffer_from("csr values", values, wgpu::BufferUsages::empty()),
                nnz: values.len(),
            })
        })
    }

    /// W = S·V for an N x m row-major block `v` on the device; W read back.
    pub(crate) fn times_block(&self, gpu: &Gpu, v: &wgpu::Buffer, m: usize) -> Result<Vec<f32>> {
        let n = self.n;
        gpu.scoped("sparse affinity product", || {
            let out = gpu.buffer_zeroed("sparse product", (n * m * 4) as u64);
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
                    ("block", Bind::Whole(v)),
                    ("out", Bind::Whole(&out)),
                    ("row_starts", Bind::Whole(&self.row_starts)),
                    ("cols", Bind::Whole(&self.cols)),
                    ("values", Bind::Whole(&self.values)),
                ],
                grid,
                Work::f32s(
                    (2 * self.nnz * m) as f64,
                    (self.nnz * (m + 2) + n * m) as f64,
                ),
            )?;
            let h = batch.read(&out, 0, (n * m * 4) as u64);
            Ok(batch.finish()?.f32s(h))
        })
    }
}
