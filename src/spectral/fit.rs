//! The spectral-clustering fit: the affinity operator (`graph.rs`), the embedding by LOBPCG
//! (`lobpcg.rs`), K-Means on it (algorithm in the parent module).

use super::lobpcg::lobpcg_from;
use super::model::SpectralModel;
use super::workspace::{knn_graph, Operator};
use super::{Affinity, SpectralClustering};
use crate::data::Matrix;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, GpuInput};
use crate::kernels::neighbors;
use crate::kmeans::KMeans;
use crate::linalg::SolverSettings;
use crate::origin::Centred;
use crate::progress::Algorithm;

/// Extra vectors the eigen-solver iterates beyond the K wanted: the K-th converges at a rate
/// set by the gap to the (p + 1)-th eigenvalue, and on the graphs of clustered data the
/// spectrum's bottom is dense (moons: 2 zeros, then pairs spaced by ~1e-4 at 5000 points).
fn block_size(k: usize) -> usize {
    k + k.max(8)
}

/// Exact eigenvectors of M = D^{-1/2} A' D^{-1/2} for the eigenvalue 1, its largest: for
/// each connected component C of the graph, D^{1/2}·1_C (M·D^{1/2}1_C = D^{-1/2}A'1_C =
/// D^{1/2}1_C, as no edge leaves C). Up to `p` of them, the largest components first (ties:
/// the one with the smaller first row), as N x c columns. Starting the eigen-solver from
/// them makes a graph of K or more components (the two moons' and two circles' 10-NN graphs
/// at 5000 points have two) converge at once, instead of after ~110 iterations crawling
/// along the small gaps below 1.
fn component_vectors(
    (label, count): &(Vec<u32>, usize),
    degree: &[f32],
    p: usize,
) -> nalgebra::DMatrix<f64> {
    let mut sizes = vec![0usize; *count];
    for &c in label {
        sizes[c as usize] += 1;
    }
    // Components are numbered in order of their first row, so a stable sort by size keeps
    // that order among equals.
    let mut order: Vec<usize> = (0..*count).collect();
    order.sort_by_key(|&c| std::cmp::Reverse(sizes[c]));
    order.truncate(p);
    let n = label.len();
    nalgebra::DMatrix::from_fn(n, order.len(), |i, col| {
        if label[i] as usize == order[col] {
            (degree[i] as f64).sqrt()
        } else {
            0.0
        }
    })
}

impl SpectralClustering {
    /// Clusters the rows of `x` (see the module docs).
    ///
    /// Errors: invalid parameters ([`Error::InvalidParameter`], [`Error::TooFewSamples`]); a
    /// row with no affinity to any other (degree 0, e.g. γ so large that every weight
    /// underflows) as [`Error::InvalidParameter`] naming it; [`Error::NotConverged`] when the
    /// eigen-solver does not reach `tol` in `max_iter` iterations; the GPU errors.
    pub fn fit(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<SpectralModel> {
        // Affinities depend on differences only: f64 rows are centred in f64 first.
        if let Some(c) = Centred::of_input(x, None)? {
            return self.fit(gpu, &c);
        }
        let (n, _) = x.shape();
        self.validate(n)?;
        let k = self.k;
        let xg = x.on_gpu(gpu)?;
        // The RBF graph counts as one component: D^{1/2}·1 is an exact eigenvector of M
        // whatever its weights (A'·1 = D·1), even where some underflow to zero.
        let mut components = (vec![0u32; n], 1);
        let operator = match self.affinity {
            Affinity::Rbf { gamma } => Operator::Rbf {
                x: &xg,
                gamma: gamma as f32,
            },
            Affinity::NearestNeighbors { n_neighbors } => {
                let (neighbours, _) = neighbors::nearest_neighbors(gpu, &xg, n_neighbors)?;
                let graph = knn_graph(&neighbours, n, n_neighbors)?;
                components = graph.components();
                Operator::sparse(gpu, graph)?
            }
        };
        let degree = operator.times(gpu, &vec![1.0; n], 1)?;
        if let Some(i) = degree.iter().position(|&g| g.is_nan() || g <= 0.0) {
            return Err(Error::invalid(
                "affinity",
                format!("row {i} has no affinity to any other row (degree 0): raise n_neighbors or lower gamma"),
            ));
        }
        let inv_sqrt: Vec<f64> = degree.iter().map(|&g| 1.0 / (g as f64).sqrt()).collect();
        let settings = SolverSettings {
            tol: self.tol,
            max_iter: self.max_iter,
            seed: self.seed,
            algorithm: Algorithm::SpectralClustering,
            on_iteration: None,
            what: "spectral clustering's eigen-solver",
        };
        // The K largest eigenpairs of M = D^{-1/2} A' D^{-1/2} (the K smallest of L = I − M),
        // starting from the eigenvectors known exactly (see `component_vectors`).
        let p = block_size(k).min(n);
        let known = component_vectors(&components, &degree, p);
        let pairs = lobpcg_from(n, k, p, &settings, &known, |v| {
            let m = v.ncols();
            let block: Vec<f32> = (0..n * m)
                .map(|e| (inv_sqrt[e / m] * v[(e / m, e % m)]) as f32)
                .collect();
            let w = operator.times(gpu, &block, m)?;
            Ok(nalgebra::DMatrix::from_fn(n, m, |i, c| {
                inv_sqrt[i] * w[i * m + c] as f64
            }))
        })?;
        let n_iter = pairs.n_iter;
        // μ, an eigenvalue of M, is λ = 1 − μ of L.
        let eigenvalues = pairs.values.iter().map(|t| (1.0 - t).max(0.0)).collect();
        // Column-major: the K eigenvectors one after the other.
        let vectors: Vec<f64> = pairs.vectors.as_slice().to_vec();
        let mut maps: Vec<Vec<f64>> = vectors
            .chunks(n)
            .map(|u| u.iter().zip(&inv_sqrt).map(|(a, s)| a * s).collect())
            .collect();
        for u in &mut maps {
            let big = (0..n)
                .max_by(|&p, &q| u[p].abs().total_cmp(&u[q].abs()).then(q.cmp(&p)))
                .unwrap_or(0);
            if u[big] < 0.0 {
                u.iter_mut().for_each(|e| *e = -*e);
            }
        }
        let mut embedding: Vec<f32> = (0..n)
            .flat_map(|i| maps.iter().map(move |u| u[i] as f32))
            .collect();
        if self.normalize_rows {
            for row in embedding.chunks_mut(k) {
                let norm = row.iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
                if norm > 0.0 {
                    row.iter_mut().for_each(|v| *v = (*v as f64 / norm) as f32);
                }
            }
        }
        let clusters = KMeans::new(k)
            .n_init(self.n_init)
            .seed(self.seed)
            .fit(gpu, &Matrix::new(&embedding, k)?)?;
        Ok(SpectralModel::new(
            self.clone(),
            clusters.labels().to_vec(),
            embedding,
            eigenvalues,
            n_iter,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Algorithm;
    use crate::spectral::workspace::tests::two_cycles;
    use nalgebra::DMatrix;

    #[test]
    fn the_component_vectors_are_exact_and_converge_at_once() {
        let graph = two_cycles(30, 20);
        let n = 50;
        let degree = graph.times(&vec![1.0; n], 1);
        let inv_sqrt: Vec<f64> = degree.iter().map(|&g| 1.0 / (g as f64).sqrt()).collect();
        let apply = |v: &DMatrix<f64>| -> Result<DMatrix<f64>> {
            let m = v.ncols();
            let block: Vec<f32> = (0..n * m)
                .map(|e| (inv_sqrt[e / m] * v[(e / m, e % m)]) as f32)
                .collect();
            let w = graph.times(&block, m);
            Ok(DMatrix::from_fn(n, m, |i, c| {
                inv_sqrt[i] * w[i * m + c] as f64
            }))
        };
        let settings = SolverSettings {
            tol: 1e-6,
            max_iter: 500,
            seed: 3,
            algorithm: Algorithm::SpectralClustering,
            on_iteration: None,
            what: "test",
        };
        let known = component_vectors(&graph.components(), &degree, 6);
        // The larger cycle first; each vector is √degree on its cycle and 0 elsewhere.
        assert_eq!(known.ncols(), 2);
        assert!(known
            .column(0)
            .iter()
            .take(30)
            .all(|&v| (v - 2f64.sqrt()).abs() < 1e-12));
        assert!(known.column(0).iter().skip(30).all(|&v| v == 0.0));
        let started = lobpcg_from(n, 2, 6, &settings, &known, apply).unwrap();
        assert_eq!(started.n_iter, 1);
        assert!(
            started.values.iter().all(|&t| (t - 1.0).abs() < 1e-6),
            "{:?}",
            started.values
        );
        // From a random block alone the same pairs take iterations.
        let random = lobpcg_from(n, 2, 6, &settings, &DMatrix::zeros(n, 0), apply).unwrap();
        assert!(random.n_iter > 1);
        assert!(
            random.values.iter().all(|&t| (t - 1.0).abs() < 1e-5),
            "{:?}",
            random.values
        );
    }
}
