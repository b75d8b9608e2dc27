//! The fitted spectral clustering ([`SpectralModel`]).

use super::SpectralClustering;

/// A fitted spectral clustering: the labels of the rows it was fitted on and what produced
/// them. It has no `predict` (a new row is not part of the graph).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SpectralModel {
    params: SpectralClustering,
    labels: Vec<u32>,
    embedding: Vec<f32>,
    eigenvalues: Vec<f64>,
    n_iter: usize,
}

impl SpectralModel {
    /// The cluster of each row.
    pub fn labels(&self) -> &[u32] {
        &self.labels
    }

    /// The N x K spectral embedding (row-major) that K-Means clustered.
    pub fn embedding(&self) -> &[f32] {
        &self.embedding
    }

    /// The K smallest eigenvalues of the normalised Laplacian, ascending (0 for each
    /// connected component of the graph).
    pub fn eigenvalues(&self) -> &[f64] {
        &self.eigenvalues
    }

    /// Iterations of the eigen-solver.
    pub fn n_iter(&self) -> usize {
        self.n_iter
    }

    /// The parameters of the fit.
    pub fn params(&self) -> &SpectralClustering {
        &self.params
    }
}

impl SpectralModel {
    /// The model of a fit (`fit.rs`).
    pub(super) fn new(
        params: SpectralClustering,
        labels: Vec<u32>,
        embedding: Vec<f32>,
        eigenvalues: Vec<f64>,
        n_iter: usize,
    ) -> Self {
        Self {
            params,
            labels,
            embedding,
            eigenvalues,
            n_iter,
        }
    }
}
