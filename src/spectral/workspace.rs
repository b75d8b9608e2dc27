//! The affinity operator A' (no diagonal) of spectral clustering and the graph behind it:
//! the RBF product on the device, or the symmetrised k-nearest-neighbour graph as a sparse
//! CSR matrix, multiplied on the device or, on CPU-like adapters, on the host (the same
//! processor, without a round trip through the driver per product: a product of the
//! ~2·N·n_neighbors entries by the eigen-solver's block is far smaller than one submission
//! costs there).

use crate::error::{Error, Result};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::neighbors::csr::{Csr, CsrMatrix};
use crate::kernels::primitives::gemm::cpu_like;
use crate::kernels::products::affinity;

/// The affinity A' (no diagonal) as the fit applies it.
pub(super) enum Operator<'a> {
    /// exp(−γ‖xᵢ − xⱼ‖²), i ≠ j, on the device.
    Rbf { x: &'a GpuMatrix, gamma: f32 },
    /// A sparse graph on the device.
    Sparse(CsrMatrix),
    /// A sparse graph on the host (CPU-like adapters).
    HostSparse(Csr),
}

impl Operator<'_> {
    /// The sparse graph `csr`, where this adapter multiplies it fastest.
    pub(super) fn sparse(gpu: &Gpu, csr: Csr) -> Result<Self> {
        if cpu_like(gpu) {
            return Ok(Operator::HostSparse(csr));
        }
        let on_device = CsrMatrix::upload(gpu, &csr)?;
        Ok(Operator::Sparse(on_device))
    }

    /// A'·B for an N x m row-major block `b`.
    pub(super) fn times(&self, gpu: &Gpu, b: &[f32], m: usize) -> Result<Vec<f32>> {
        if let Operator::HostSparse(s) = self {
            return Ok(s.times(b, m));
        }
        let buf = gpu.scoped("uploading a block", || {
            Ok(DeviceBuffer::from_slice(gpu, "affinity block", b))
        })?;
        match self {
            Operator::Rbf { x, gamma } => affinity::rbf_times_block(gpu, x, *gamma, &buf, m),
            Operator::Sparse(s) => s.times_block(gpu, &buf, m),
            Operator::HostSparse(_) => unreachable!("multiplied above"),
        }
    }
}

/// The symmetrised k-nearest-neighbour graph ½(C + Cᵀ) without its diagonal, in CSR form,
/// from each row's neighbour list (N x k indices).
///
/// Errors: [`Error::Gpu`] when the neighbour search left an entry unfilled (an index past
/// N: a driver that cut the search short, as llvmpipe's loop budget once did at ~14 000
/// rows, or a row of NaN distances in data that skipped the finiteness check), rather than a
/// panic or a wrong graph.
pub(super) fn knn_graph(neighbours: &[u32], n: usize, k: usize) -> Result<Csr> {
    if let Some(at) = neighbours.iter().position(|&j| j as usize >= n) {
        return Err(Error::Gpu(format!(
            "the nearest-neighbour search left row {}'s list unfilled (index {} of {n} rows)",
            at / k,
            neighbours[at]
        )));
    }
    let mut entries: Vec<(u32, u32)> = Vec::with_capacity(2 * n * k);
    for (i, list) in neighbours.chunks(k).enumerate() {
        for &j in list {
            if j as usize != i {
                entries.push((i as u32, j));
                entries.push((j, i as u32));
            }
        }
    }
    entries.sort_unstable();
    let mut row_starts = vec![0u32; n + 1];
    let (mut cols, mut values): (Vec<u32>, Vec<f32>) = (Vec::new(), Vec::new());
    let mut e = 0;
    while e < entries.len() {
        let (i, j) = entries[e];
        let mut weight = 0.0;
        while e < entries.len() && entries[e] == (i, j) {
            weight += 0.5;
            e += 1;
        }
        cols.push(j);
        values.push(weight);
        row_starts[i as usize + 1] += 1;
    }
    for i in 0..n {
        row_starts[i + 1] += row_starts[i];
    }
    Ok(Csr {
        row_starts,
        cols,
        values,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Two disjoint cycles of `a` and `b` rows (weights 1), in CSR form.
    pub(in crate::spectral) fn two_cycles(a: usize, b: usize) -> Csr {
        let n = a + b;
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (first, len) in [(0, a), (a, b)] {
            for i in 0..len {
                let (u, v) = (first + i, first + (i + 1) % len);
                rows[u].push(v as u32);
                rows[v].push(u as u32);
            }
        }
        let mut csr = Csr {
            row_starts: vec![0],
            cols: Vec::new(),
            values: Vec::new(),
        };
        for mut r in rows {
            r.sort_unstable();
            csr.values.extend(r.iter().map(|_| 1.0f32));
            csr.cols.extend(r);
            csr.row_starts.push(csr.cols.len() as u32);
        }
        csr
    }

    #[test]
    fn components_are_numbered_by_their_first_row() {
        let (label, count) = two_cycles(30, 20).components();
        assert_eq!(count, 2);
        assert!(label[..30].iter().all(|&c| c == 0));
        assert!(label[30..].iter().all(|&c| c == 1));
        // Small cycles: the second component starts at row 3.
        let (label, count) = two_cycles(3, 4).components();
        assert_eq!((label[0], label[3], count), (0, 1, 2));
    }
}
