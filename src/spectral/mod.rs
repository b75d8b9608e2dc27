//! Spectral clustering (scikit-learn's `SpectralClustering` with `assign_labels="kmeans"`):
//! a graph between the rows, the leading eigenvectors of its normalised Laplacian, K-Means on
//! them. It separates clusters that are connected but not convex (two moons, concentric
//! circles), where K-Means on the rows cannot.
//!
//! 1. **Affinity** (`shaders/affinity.wgsl`), never an N x N matrix in memory:
//!    - [`Affinity::Rbf`]: A_ij = exp(−γ‖xᵢ − xⱼ‖²), applied matrix-free: a tiled kernel forms
//!      A·V for a block V of vectors from the rows themselves, one exponential per pair for
//!      all the block's columns, O(N²(D + m)) work and O(N(D + m)) memory per product;
//!    - [`Affinity::NearestNeighbors`]: the `n_neighbors` nearest rows of each row, itself
//!      included (scikit-learn's `kneighbors_graph(include_self=True)`), found on the device
//!      (O(N²D) once), symmetrised on the host as A = ½(C + Cᵀ) into a sparse CSR matrix of at
//!      most 2·N·n_neighbors entries, which a kernel multiplies by V (on CPU-like adapters,
//!      the host: the same processor without a driver round trip per product).
//! 2. **Normalised Laplacian** L = I − D^{-1/2} A' D^{-1/2}, A' = A without its diagonal (as
//!    scipy's `laplacian(normed=True)`, which ignores self-loops), D = diag(A'·1). Its K
//!    smallest eigenvectors are the K largest of M = D^{-1/2} A' D^{-1/2}, whose eigenvalues
//!    lie in [−1, 1]. They come from LOBPCG (`lobpcg.rs`: Knyazev 2001, soft locking, f64
//!    Rayleigh–Ritz on the host, M applied on the device) on a block of p = K + max(K, 8)
//!    vectors, which converges at a conjugate-gradient rate, about the square root of the
//!    gap that limited the block power iteration used before (that one failed on two moons
//!    at 5000 points); a graph of several components has eigenvalue 1 of M more than once,
//!    which still spans the right subspace. The block starts from the eigenvectors known
//!    exactly, D^{1/2}·1_C for each connected component C (the largest first), so a graph of
//!    K or more components (the 10-NN graphs of two moons or circles) converges at once.
//! 3. **Embedding**: each eigenvector divided elementwise by √D, its largest entry made
//!    positive (`spectral_embedding`, `drop_first=False`); row i of the N x K result embeds row
//!    i. By default the rows are clustered as they are, as scikit-learn's
//!    `assign_labels="kmeans"` does; [`SpectralClustering::normalize_rows`] scales each to
//!    unit length first (Ng, Jordan & Weiss 2001), which helps when clusters differ much in
//!    density.
//! 4. **Labels**: the crate's GPU [`KMeans`](crate::KMeans) on the embedding (`n_init`
//!    restarts, k-means++).
//!
//! Spectral clustering labels the rows it was fitted on; like scikit-learn's it has no
//! `predict` for new rows. The f64 oracle is the `spectral` module of
//! [`reference`](crate::reference).

use crate::error::{Error, Result};

mod fit;
mod graph;
mod lobpcg;

pub use fit::SpectralModel;

/// The graph between rows.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Affinity {
    /// exp(−γ‖xᵢ − xⱼ‖²) between every pair (scikit-learn's default, γ = 1).
    Rbf {
        /// γ > 0.
        gamma: f64,
    },
    /// Symmetrised connectivity of each row's `n_neighbors` nearest rows, itself included.
    NearestNeighbors {
        /// 1 ≤ n_neighbors ≤ min(N, 64) (scikit-learn's default: 10).
        n_neighbors: usize,
    },
}

impl Affinity {
    /// The name the CLI uses: "rbf" or "nearest-neighbors".
    pub fn name(&self) -> &'static str {
        match self {
            Affinity::Rbf { .. } => "rbf",
            Affinity::NearestNeighbors { .. } => "nearest-neighbors",
        }
    }
}

/// Spectral-clustering parameters (a builder); validated when fitting.
///
/// Defaults follow scikit-learn: RBF affinity with γ = 1, `n_init = 10` for the final
/// K-Means, `seed = 0`; the eigen-solver stops at a relative residual of `tol = 1e-5` or after
/// `max_iter = 3000` iterations (not converging is an error).
///
/// ```
/// use wgpu_unsupervised::{datasets, metrics, Affinity, Gpu, Matrix, SpectralClustering};
///
/// let gpu = Gpu::new()?;
/// let (rows, truth) = datasets::make_moons(200, 0.05, 1)?; // two interleaved half circles
/// let model = SpectralClustering::new(2)
///     .affinity(Affinity::NearestNeighbors { n_neighbors: 10 })
///     .fit(&gpu, &Matrix::new(&rows, 2)?)?;
/// assert!(metrics::adjusted_rand_index(model.labels(), &truth)? > 0.98);
/// assert!(model.eigenvalues()[0].abs() < 1e-3); // a connected graph
/// # Ok::<(), wgpu_unsupervised::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SpectralClustering {
    /// Number of clusters K (≥ 2).
    pub k: usize,
    /// The graph.
    pub affinity: Affinity,
    /// Restarts of the final K-Means.
    pub n_init: usize,
    /// Seed of the eigen-solver's start and of the K-Means.
    pub seed: u64,
    /// Eigen-solver tolerance on ‖M·u − θu‖ (‖u‖ = 1) relative to the largest θ, for each of
    /// the K wanted pairs, checked on a fresh product M·u before the solver stops.
    pub tol: f64,
    /// Eigen-solver (LOBPCG) iteration cap, one operator product per iteration; not converging
    /// is [`Error::NotConverged`].
    pub max_iter: usize,
    /// Scale each embedding row to unit length before K-Means (Ng–Jordan–Weiss); off by
    /// default, as scikit-learn.
    #[cfg_attr(feature = "serde", serde(default))]
    pub normalize_rows: bool,
}

impl SpectralClustering {
    /// Parameters for `k` clusters with the defaults above.
    pub fn new(k: usize) -> Self {
        Self {
            k,
            affinity: Affinity::Rbf { gamma: 1.0 },
            n_init: 10,
            seed: 0,
            tol: 1e-5,
            max_iter: 3000,
            normalize_rows: false,
        }
    }

    /// Sets whether the embedding rows are scaled to unit length before K-Means.
    pub fn normalize_rows(mut self, normalize_rows: bool) -> Self {
        self.normalize_rows = normalize_rows;
        self
    }

    /// Sets the affinity.
    pub fn affinity(mut self, affinity: Affinity) -> Self {
        self.affinity = affinity;
        self
    }

    /// Sets the K-Means restarts.
    pub fn n_init(mut self, n_init: usize) -> Self {
        self.n_init = n_init;
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the eigen-solver tolerance.
    pub fn tol(mut self, tol: f64) -> Self {
        self.tol = tol;
        self
    }

    /// Sets the eigen-solver iteration cap.
    pub fn max_iter(mut self, max_iter: usize) -> Self {
        self.max_iter = max_iter;
        self
    }

    /// Checks the parameters against data of `n` rows.
    pub fn validate(&self, n: usize) -> Result<()> {
        if self.k < 1 {
            return Err(Error::invalid(
                "k",
                format!("{}: must be at least 1", self.k),
            ));
        }
        if n < 2 {
            return Err(Error::invalid(
                "x",
                format!("n_samples = {n}: spectral clustering needs at least 2 rows"),
            ));
        }
        if self.k > n {
            return Err(Error::TooFewSamples { k: self.k, n });
        }
        Error::require_count("n_init", self.n_init)?;
        Error::require_count("max_iter", self.max_iter)?;
        if !(self.tol.is_finite() && self.tol > 0.0) {
            return Err(Error::invalid("tol", format!("{}: must be > 0", self.tol)));
        }
        match self.affinity {
            Affinity::Rbf { gamma } if !(gamma.is_finite() && gamma > 0.0) => Err(Error::invalid(
                "gamma",
                format!("{gamma}: must be a finite number > 0"),
            )),
            Affinity::NearestNeighbors { n_neighbors }
                if n_neighbors == 0 || n_neighbors > n.min(fit::KNN_MAX) =>
            {
                Err(Error::invalid(
                    "n_neighbors",
                    format!(
                        "{n_neighbors}: must be in 1..={} (at most the {n} rows and {})",
                        n.min(fit::KNN_MAX),
                        fit::KNN_MAX
                    ),
                ))
            }
            _ => Ok(()),
        }
    }
}
