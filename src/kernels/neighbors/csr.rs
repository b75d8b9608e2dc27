//! Sparse N x M matrices in CSR form (compressed rows): on the host ([`Csr`]: the neighbour
//! graphs the queries return, their connected components, a product summed in f64) and on the
//! device ([`CsrMatrix`]: the sparse times a block, `shaders/neighbors/csr.wgsl`,
//! out[i][c] = Σ_e values[e] · v[cols[e]][c] over the entries e of row i).

use bytemuck::Zeroable;

use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::neighbors::csr as wgsl;
use crate::gpu::Gpu;
use crate::kernels::primitives::pairs::PairParams;
use crate::kernels::ROW_WG_SIZE;

/// A sparse matrix in CSR form on the host.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Csr {
    /// N + 1 offsets into `cols` and `values`.
    pub row_starts: Vec<u32>,
    /// The column of each entry, ascending within a row.
    pub cols: Vec<u32>,
    /// The value of each entry.
    pub values: Vec<f32>,
}

impl Csr {
    /// Rows.
    pub(crate) fn n_rows(&self) -> usize {
        self.row_starts.len() - 1
    }

    /// Row `i`'s columns and values.
    pub(crate) fn row(&self, i: usize) -> (&[u32], &[f32]) {
        let (start, end) = (self.row_starts[i] as usize, self.row_starts[i + 1] as usize);
        (&self.cols[start..end], &self.values[start..end])
    }

    /// The connected components of the graph (a square matrix), as (component of each row,
    /// number of components), numbered in order of their smallest row.
    pub(crate) fn components(&self) -> (Vec<u32>, usize) {
        let n = self.n_rows();
        let mut label = vec![u32::MAX; n];
        let mut count = 0u32;
        let mut stack = Vec::new();
        for seed in 0..n {
            if label[seed] != u32::MAX {
                continue;
            }
            label[seed] = count;
            stack.push(seed);
            while let Some(i) = stack.pop() {
                for &j in self.row(i).0 {
                    if label[j as usize] == u32::MAX {
                        label[j as usize] = count;
                        stack.push(j as usize);
                    }
                }
            }
            count += 1;
        }
        (label, count as usize)
    }

    /// S·B for a row-major block `b` of `m` columns, summed in f64 in entry order.
    pub(crate) fn times(&self, b: &[f32], m: usize) -> Vec<f32> {
        let n = self.n_rows();
        let mut out = vec![0.0f32; n * m];
        let mut acc = vec![0.0f64; m];
        for (i, row) in out.chunks_mut(m).enumerate() {
            acc.iter_mut().for_each(|a| *a = 0.0);
            let (cols, values) = self.row(i);
            for (&c, &w) in cols.iter().zip(values) {
                let at = c as usize * m;
                for (a, &v) in acc.iter_mut().zip(&b[at..at + m]) {
                    *a += w as f64 * v as f64;
                }
            }
            for (o, a) in row.iter_mut().zip(&acc) {
                *o = *a as f32;
            }
        }
        out
    }
}

/// A sparse matrix in CSR form on the device.
pub(crate) struct CsrMatrix {
    n: usize,
    row_starts: DeviceBuffer<u32>,
    cols: DeviceBuffer<u32>,
    values: DeviceBuffer<f32>,
    nnz: usize,
}

impl CsrMatrix {
    /// Uploads `csr`.
    pub(crate) fn upload(gpu: &Gpu, csr: &Csr) -> Result<Self> {
        gpu.scoped("uploading a sparse matrix", || {
            Ok(Self {
                n: csr.n_rows(),
                row_starts: DeviceBuffer::from_slice(gpu, "csr rows", &csr.row_starts),
                cols: DeviceBuffer::from_slice(gpu, "csr columns", &csr.cols),
                values: DeviceBuffer::from_slice(gpu, "csr values", &csr.values),
                nnz: csr.values.len(),
            })
        })
    }

    /// W = S·V for a row-major block `v` of `m` columns on the device; W read back.
    pub(crate) fn times_block(
        &self,
        gpu: &Gpu,
        v: &DeviceBuffer<f32>,
        m: usize,
    ) -> Result<Vec<f32>> {
        let n = self.n;
        gpu.scoped("sparse product", || {
            let out = DeviceBuffer::<f32>::zeroed(gpu, "sparse product", n * m);
            let mut batch = Batch::new(gpu, "csr_times_block");
            let grid = gpu.grid(n.div_ceil(ROW_WG_SIZE as usize) as u64)?;
            let params = PairParams {
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
