//! Spectral clustering's parameters: the graph ([`Affinity`]) and the builder
//! ([`SpectralClustering`]), checked by [`SpectralClustering::validate`] when fitting.

use crate::error::{Error, Result};
use crate::neighbors::MAX_K as KNN_MAX;

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
    /// Number of clusters K (≥ 1; one cluster labels every row 0).
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
                if n_neighbors == 0 || n_neighbors > n.min(KNN_MAX) =>
            {
                Err(Error::invalid(
                    "n_neighbors",
                    format!(
                        "{n_neighbors}: must be in 1..={} (at most the {n} rows and {})",
                        n.min(KNN_MAX),
                        KNN_MAX
                    ),
                ))
            }
            _ => Ok(()),
        }
    }
}
