//! Principal component analysis with the covariance and the power iteration on the GPU.
//!
//! PARAMS STUB: the GPU fit is being written.

use crate::error::{Error, Result};

/// How many components to keep.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Components {
    /// Exactly this many (1 ..= min(N, D)).
    Count(usize),
    /// The fewest components whose explained-variance ratios sum past this fraction, in
    /// (0, 1] (scikit-learn's `n_components=0.95`). Needs the whole spectrum.
    Fraction(f64),
}

/// How the eigenvectors of the covariance are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum PcaSolver {
    /// `Full` when D is small or many components are wanted, `Power` otherwise, and
    /// `MatrixFree` when the D x D covariance would not fit in one device binding.
    #[default]
    Auto,
    /// Covariance on the GPU, full symmetric eigendecomposition on the host (f64).
    Full,
    /// Block power (subspace) iteration W = S·V on the GPU, QR and Rayleigh–Ritz on the host.
    Power,
    /// Power iteration without forming S: W = Xcᵀ(Xc·V) on the GPU.
    MatrixFree,
}

/// PCA parameters (a builder); validated when fitting.
///
/// Defaults: `center = true`, `whiten = false`, `standardize = false`, `solver = Auto`,
/// `tol = 1e-7` (power iteration: residual ‖S·v − λv‖ relative to λ₁), `max_iter = 1000`,
/// `seed = 0`, `ddof = 1` (S = XcᵀXc / (N − 1), scikit-learn's convention for
/// `explained_variance_`; `ddof = 0` gives the textbook S = XcᵀXc / N).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Pca {
    /// Components to keep.
    pub components: Components,
    /// Scale projections to unit variance (divide by √λ).
    pub whiten: bool,
    /// Subtract the mean before everything (PCA proper); `false` analyses XᵀX/(N−ddof).
    pub center: bool,
    /// Divide each feature by its standard deviation first (PCA is not scale-invariant).
    pub standardize: bool,
    /// Eigen-solver.
    pub solver: PcaSolver,
    /// Power iteration: stop when every residual ‖S·v − λv‖ ≤ tol · λ₁.
    pub tol: f64,
    /// Power iteration: iteration cap (not converging is an error, never a silent result).
    pub max_iter: usize,
    /// Seed of the power iteration's random start (ChaCha8).
    pub seed: u64,
    /// Delta degrees of freedom of the covariance: 0 (÷N) or 1 (÷(N−1)).
    pub ddof: usize,
}

impl Pca {
    /// Parameters keeping `components`, with the defaults above.
    pub fn new(components: Components) -> Self {
        Self {
            components,
            whiten: false,
            center: true,
            standardize: false,
            solver: PcaSolver::Auto,
            tol: 1e-7,
            max_iter: 1000,
            seed: 0,
            ddof: 1,
        }
    }

    /// Sets whitening.
    pub fn whiten(mut self, whiten: bool) -> Self {
        self.whiten = whiten;
        self
    }

    /// Sets centring.
    pub fn center(mut self, center: bool) -> Self {
        self.center = center;
        self
    }

    /// Sets per-feature standardisation.
    pub fn standardize(mut self, standardize: bool) -> Self {
        self.standardize = standardize;
        self
    }

    /// Sets the solver.
    pub fn solver(mut self, solver: PcaSolver) -> Self {
        self.solver = solver;
        self
    }

    /// Sets the power-iteration tolerance.
    pub fn tol(mut self, tol: f64) -> Self {
        self.tol = tol;
        self
    }

    /// Sets the power-iteration cap.
    pub fn max_iter(mut self, max_iter: usize) -> Self {
        self.max_iter = max_iter;
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the covariance's delta degrees of freedom (0 or 1).
    pub fn ddof(mut self, ddof: usize) -> Self {
        self.ddof = ddof;
        self
    }

    /// Checks the parameters against data of `n` rows and `d` features.
    pub fn validate(&self, n: usize, d: usize) -> Result<()> {
        if n < 2 {
            return Err(Error::invalid(
                "data",
                format!("PCA needs at least 2 samples, got {n}"),
            ));
        }
        match self.components {
            Components::Count(m) if m == 0 || m > n.min(d) => {
                return Err(Error::invalid(
                    "components",
                    format!("must be in 1..=min(N, D) = {}, got {m}", n.min(d)),
                ));
            }
            Components::Fraction(f) if !(f > 0.0 && f <= 1.0) => {
                return Err(Error::invalid(
                    "components",
                    format!("a fraction must be in (0, 1], got {f}"),
                ));
            }
            _ => {}
        }
        if self.ddof > 1 {
            return Err(Error::invalid("ddof", format!("must be 0 or 1, got {}", self.ddof)));
        }
        if !(self.tol.is_finite() && self.tol > 0.0) {
            return Err(Error::invalid(
                "tol",
                format!("must be finite and > 0, got {}", self.tol),
            ));
        }
        if self.max_iter == 0 {
            return Err(Error::invalid("max_iter", "must be at least 1"));
        }
        Ok(())
    }
}
