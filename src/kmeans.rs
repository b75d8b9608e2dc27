//! K-Means clustering (Lloyd's algorithm) with the heavy work on the GPU.
//!
//! PARAMS-ONLY STUB: the GPU fit is being written.

use crate::error::{Error, Result};

/// How the initial centroids are chosen.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum KMeansInit {
    /// Greedy k-means++ (Arthur & Vassilvitskii 2007) with `2 + ln k` local trials per step,
    /// as scikit-learn does: each new centroid is the best of several D²-sampled candidates.
    KMeansPlusPlus,
    /// K distinct rows chosen uniformly at random.
    Random,
    /// Given centroids, row-major K x D (f64). With these, `n_init` is ignored (one run).
    Centroids(Vec<f64>),
}

/// K-Means parameters (a builder); validated when fitting.
///
/// Defaults follow scikit-learn: `n_init = 1` with k-means++ (sklearn's "auto"),
/// `max_iter = 300`, `tol = 1e-4`, `seed = 0`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct KMeans {
    /// Number of clusters K.
    pub k: usize,
    /// Independent restarts; the run with the lowest inertia is kept.
    pub n_init: usize,
    /// Maximum Lloyd iterations per restart.
    pub max_iter: usize,
    /// Convergence tolerance on the total squared centroid shift, relative to the mean
    /// per-feature variance of the data (scikit-learn's convention).
    pub tol: f64,
    /// Seed of the random generator (ChaCha8); the same seed gives the same result.
    pub seed: u64,
    /// Initialisation method.
    pub init: KMeansInit,
}

impl KMeans {
    /// Parameters for `k` clusters with the defaults above.
    pub fn new(k: usize) -> Self {
        Self {
            k,
            n_init: 1,
            max_iter: 300,
            tol: 1e-4,
            seed: 0,
            init: KMeansInit::KMeansPlusPlus,
        }
    }

    /// Sets the number of restarts.
    pub fn n_init(mut self, n_init: usize) -> Self {
        self.n_init = n_init;
        self
    }

    /// Sets the iteration cap.
    pub fn max_iter(mut self, max_iter: usize) -> Self {
        self.max_iter = max_iter;
        self
    }

    /// Sets the relative tolerance.
    pub fn tol(mut self, tol: f64) -> Self {
        self.tol = tol;
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the initialisation.
    pub fn init(mut self, init: KMeansInit) -> Self {
        self.init = init;
        self
    }

    /// Checks the parameters against data of `n` rows and `d` features.
    pub fn validate(&self, n: usize, d: usize) -> Result<()> {
        if self.k == 0 {
            return Err(Error::invalid("k", "must be at least 1"));
        }
        if self.k > n {
            return Err(Error::TooFewSamples { k: self.k, n });
        }
        if self.n_init == 0 {
            return Err(Error::invalid("n_init", "must be at least 1"));
        }
        if self.max_iter == 0 {
            return Err(Error::invalid("max_iter", "must be at least 1"));
        }
        if !(self.tol.is_finite() && self.tol >= 0.0) {
            return Err(Error::invalid(
                "tol",
                format!("must be finite and >= 0, got {}", self.tol),
            ));
        }
        if let KMeansInit::Centroids(c) = &self.init {
            if c.len() != self.k * d {
                return Err(Error::invalid(
                    "init",
                    format!(
                        "given centroids have {} values, expected k x d = {} x {d}",
                        c.len(),
                        self.k
                    ),
                ));
            }
            crate::data::check_finite(c, d)?;
        }
        Ok(())
    }

    /// Number of local trials of greedy k-means++: `2 + floor(ln k)` (scikit-learn).
    pub fn n_local_trials(&self) -> usize {
        2 + (self.k as f64).ln().floor() as usize
    }
}
