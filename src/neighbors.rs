//! Exact neighbour queries on the device: the k nearest rows of every row, and every row
//! within a radius of every row (scikit-learn's `NearestNeighbors.kneighbors` and
//! `radius_neighbors` on the training data): what density- and graph-based clustering
//! (DBSCAN's ε-neighbourhoods, HDBSCAN's core distances, spectral clustering's kNN graph)
//! is built on.
//!
//! Distances are Euclidean, summed in the difference form Σ_f (x_f − y_f)² in feature order
//! (exact to f32 rounding for near points, and unchanged by an offset of the data). Each row
//! is its own neighbour at distance 0. On CPU-like adapters (lavapipe) the queries run on the
//! host's threads, which there are the same processor; elsewhere on the device. Either way
//! the result is the same for the same data, whatever the chunking.
//!
//! ```no_run
//! use wgpu_unsupervised::{neighbors, Gpu, Matrix};
//! # fn main() -> wgpu_unsupervised::Result<()> {
//! let gpu = Gpu::new()?;
//! let rows = vec![0.0f32, 0.0, 0.1, 0.0, 5.0, 5.0];
//! let x = Matrix::new(&rows, 2)?;
//! let within = neighbors::radius_neighbors(&gpu, &x, 0.5)?;
//! assert_eq!(within.neighbors(0).0, &[0, 1]);        // row 0 and row 1, in index order
//! let nearest = neighbors::k_nearest_neighbors(&gpu, &x, 2)?;
//! assert_eq!(nearest.indices(2), &[2, 1]);            // itself first
//! # Ok(())
//! # }
//! ```

use crate::error::{Error, Result};
use crate::gpu::{Gpu, GpuInput};
use crate::kernels::neighbors::{self as kernel, Csr};
use crate::origin::Centred;

/// Largest `k` of [`k_nearest_neighbors`].
pub const MAX_K: usize = kernel::KNN_MAX;

/// Every row's neighbours within a radius: a sparse N x N matrix in CSR form, each row's
/// neighbours in increasing index with their squared distances.
#[derive(Debug, Clone, PartialEq)]
pub struct RadiusNeighbors {
    csr: Csr,
}

impl RadiusNeighbors {
    /// Rows queried.
    pub fn n_rows(&self) -> usize {
        self.csr.n_rows()
    }

    /// Row `i`'s neighbours (ascending) and their squared distances. Panics if `i` is not a
    /// row.
    pub fn neighbors(&self, i: usize) -> (&[u32], &[f32]) {
        self.csr.row(i)
    }

    /// N + 1 offsets: row i's neighbours are entries `row_starts[i]..row_starts[i + 1]`.
    pub fn row_starts(&self) -> &[u32] {
        &self.csr.row_starts
    }

    /// Every neighbour's index, row after row.
    pub fn indices(&self) -> &[u32] {
        &self.csr.cols
    }

    /// Every neighbour's squared distance, row after row.
    pub fn sq_distances(&self) -> &[f32] {
        &self.csr.values
    }
}

/// Every row's `k` nearest rows, ordered by (squared distance, index), itself first.
#[derive(Debug, Clone, PartialEq)]
pub struct KNeighbors {
    k: usize,
    indices: Vec<u32>,
    sq_distances: Vec<f32>,
}

impl KNeighbors {
    /// Neighbours per row.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Row `i`'s neighbours, nearest first. Panics if `i` is not a row.
    pub fn indices(&self, i: usize) -> &[u32] {
        &self.indices[i * self.k..(i + 1) * self.k]
    }

    /// Row `i`'s squared distances, ascending. Panics if `i` is not a row.
    pub fn sq_distances(&self, i: usize) -> &[f32] {
        &self.sq_distances[i * self.k..(i + 1) * self.k]
    }

    /// N x k indices, row-major.
    pub fn all_indices(&self) -> &[u32] {
        &self.indices
    }

    /// N x k squared distances, row-major.
    pub fn all_sq_distances(&self) -> &[f32] {
        &self.sq_distances
    }
}

/// Every row of `x` within `radius` of every row (squared distance ≤ radius², the row
/// itself included).
///
/// Errors: a radius that is negative or not finite
/// ([`Error::InvalidParameter`]); no rows; more neighbour pairs in all than one storage
/// binding of the device holds ([`Error::DeviceLimit`]: take a smaller radius); the GPU's
/// errors.
pub fn radius_neighbors(gpu: &Gpu, x: &impl GpuInput, radius: f32) -> Result<RadiusNeighbors> {
    // Distances do not move with the data: f64 rows are centred in f64 before the cast, so
    // rows far from the origin keep their digits (module `origin`).
    if let Some(c) = Centred::of_input(x, None)? {
        return radius_neighbors(gpu, &c, radius);
    }
    let (n, _) = x.shape();
    if n == 0 {
        return Err(Error::EmptyData {
            what: "input matrix",
            missing: "rows",
        });
    }
    let x = x.on_gpu(gpu)?;
    let csr = kernel::within_radius(gpu, &x, radius)?;
    Ok(RadiusNeighbors { csr })
}

/// The `k` nearest rows of every row of `x` (itself first, ties to the lower index).
///
/// Errors: `k` of 0, more than the rows or more than [`MAX_K`]
/// ([`Error::InvalidParameter`]); no rows; the GPU's errors.
pub fn k_nearest_neighbors(gpu: &Gpu, x: &impl GpuInput, k: usize) -> Result<KNeighbors> {
    if let Some(c) = Centred::of_input(x, None)? {
        return k_nearest_neighbors(gpu, &c, k);
    }
    let (n, _) = x.shape();
    if n == 0 {
        return Err(Error::EmptyData {
            what: "input matrix",
            missing: "rows",
        });
    }
    if k == 0 || k > n || k > MAX_K {
        return Err(Error::invalid(
            "k",
            format!("must be 1 to min(rows = {n}, {MAX_K}), got {k}"),
        ));
    }
    let x = x.on_gpu(gpu)?;
    let (indices, sq_distances) = kernel::nearest_neighbors(gpu, &x, k)?;
    if let Some(at) = indices.iter().position(|&j| j as usize >= n) {
        return Err(Error::Gpu(format!(
            "the nearest-neighbour search left row {}'s list unfilled (a row that is not \
             finite, in data that skipped the finiteness check?)",
            at / k
        )));
    }
    Ok(KNeighbors {
        k,
        indices,
        sq_distances,
    })
}
