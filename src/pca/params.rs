//! The parameters of PCA ([`Pca`], [`Components`], [`PcaSolver`]), their validation against
//! the data, and the rules that turn a variance fraction or the whitening tolerance into a
//! number of components.

use crate::error::{Error, Result};
use crate::names::parse_choice;
use crate::progress::OnIteration;

/// How many components to keep.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Components {
    /// Exactly this many (1 ..= min(N, D)).
    Count(usize),
    /// The fewest components whose explained-variance ratios sum past this fraction, in
    /// (0, 1] (scikit-learn's `n_components=0.95`). Needs the whole spectrum.
    Fraction(f64),
    /// Minka's MLE of the dimensionality (scikit-learn's `n_components="mle"`; module
    /// `mle`): the rank in 1..D − 1 of largest Laplace-approximated evidence under
    /// probabilistic PCA. Needs the whole spectrum and N ≥ D.
    Mle,
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

impl PcaSolver {
    /// All four solvers, in the order Auto, Full, Power, MatrixFree.
    pub const ALL: [PcaSolver; 4] = [
        PcaSolver::Auto,
        PcaSolver::Full,
        PcaSolver::Power,
        PcaSolver::MatrixFree,
    ];

    /// The name the CLI uses: "auto", "full", "power" or "matrix-free".
    pub fn name(self) -> &'static str {
        match self {
            PcaSolver::Auto => "auto",
            PcaSolver::Full => "full",
            PcaSolver::Power => "power",
            PcaSolver::MatrixFree => "matrix-free",
        }
    }

    /// Other spellings [`FromStr`](std::str::FromStr) accepts.
    fn aliases(self) -> &'static [&'static str] {
        match self {
            PcaSolver::MatrixFree => &["matrix_free", "matrixfree"],
            _ => &[],
        }
    }
}

impl std::fmt::Display for PcaSolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for PcaSolver {
    type Err = Error;

    /// Parses a [`PcaSolver::name`] (also "matrix_free"), ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self> {
        parse_choice(
            "solver",
            "PCA solver",
            s,
            &PcaSolver::ALL,
            |v| v.name(),
            |v| v.aliases(),
        )
    }
}

/// PCA parameters (a builder); validated when fitting.
///
/// ```
/// use wgpu_unsupervised::{Components, Gpu, Matrix, Pca};
///
/// let gpu = Gpu::new()?;
/// // Points near the line y = 2x: one direction holds nearly all the variance.
/// let rows: Vec<f32> = (0..200)
///     .flat_map(|i| { let t = i as f32 / 20.0; [t, 2.0 * t + 0.01 * (i as f32).sin()] })
///     .collect();
/// let x = Matrix::new(&rows, 2)?;
/// let model = Pca::new(Components::Fraction(0.99)).fit(&gpu, &x)?;
/// assert_eq!(model.n_components(), 1);
/// let c = model.components();
/// assert!((c[1] / c[0] - 2.0).abs() < 1e-3);
/// let z = model.transform(&gpu, &x)?; // 200 x 1 projections
/// assert_eq!(z.len(), 200);
/// # Ok::<(), wgpu_unsupervised::Error>(())
/// ```
///
/// Defaults: `center = true`, `whiten = false`, `standardize = false`, `solver = Auto`,
/// `tol = 1e-5` (power iteration: residual ‖S·v − λv‖ relative to λ₁; S·V in f32 puts a
/// floor near 1e-6 under it), `max_iter = 1000`,
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
    /// Power iteration: cap on the products S·V (not converging is an error, never a silent
    /// result).
    pub max_iter: usize,
    /// Seed of the power iteration's random start (ChaCha8).
    pub seed: u64,
    /// Delta degrees of freedom of the covariance: 0 (÷N) or 1 (÷(N−1)).
    pub ddof: usize,
    /// Called after every power iteration (see [`crate::progress`]); never serialized, and
    /// not kept in the fitted model's parameters.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub on_iteration: Option<OnIteration>,
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
            tol: 1e-5,
            max_iter: 1000,
            seed: 0,
            ddof: 1,
            on_iteration: None,
        }
    }

    /// Calls `f` after every check of the block power iteration (solvers `Power` and
    /// `MatrixFree`) with its [`Iteration`](crate::progress::Iteration): the largest relative
    /// Ritz residual and the change of the largest Ritz value. The matrix-free solver checks
    /// after every product S·V; the dense solver takes several products on the device between
    /// checks, so `iteration` (the products so far) may skip numbers. `ControlFlow::Break(())`
    /// stops there and returns the components of that check, which have not reached `tol`
    /// (`n_iter()` tells when).
    pub fn on_iteration(
        mut self,
        f: impl Fn(&crate::progress::Iteration) -> std::ops::ControlFlow<()> + Send + Sync + 'static,
    ) -> Self {
        self.on_iteration = Some(OnIteration::new(f));
        self
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
            Components::Mle if n < d => {
                return Err(Error::invalid(
                    "components",
                    format!("Minka's MLE needs N >= D (as scikit-learn's n_components=\"mle\"); got N = {n}, D = {d}"),
                ));
            }
            _ => {}
        }
        if self.ddof > 1 {
            return Err(Error::invalid(
                "ddof",
                format!("must be 0 or 1, got {}", self.ddof),
            ));
        }
        if !(self.tol.is_finite() && self.tol > 0.0) {
            return Err(Error::invalid(
                "tol",
                format!("must be finite and > 0, got {}", self.tol),
            ));
        }
        Error::require_count("max_iter", self.max_iter)?;
        Ok(())
    }
}

/// The f32 noise floor of a component's variance, as a fraction of the largest: whitening a
/// component at or below it draws a warning (it is whitened all the same, as scikit-learn
/// does).
///
/// The covariance is accumulated in f32, which resolves an eigenvalue only to about
/// 10⁻⁷·λ₁ (measured: the zero directions of rank-deficient data come out at 10⁻⁸..10⁻⁶·λ₁
/// with every solver, or near 10⁻¹⁴·λ₁ by the matrix-free products): dividing by the square
/// root of such a variance blows rounding noise up by 300x or more. 10⁻⁵·λ₁ (a standard
/// deviation 1/316 of the largest) leaves a margin of 30x over that noise, so every solver
/// names the same components on the same data.
pub const WHITEN_RTOL: f64 = 1e-5;

/// How many of `explained_variance` (descending) stand above the noise floor: those above
/// [`WHITEN_RTOL`] times the largest (0 when the largest is not positive).
pub fn whitenable_components(explained_variance: &[f64]) -> usize {
    let top = explained_variance.first().copied().unwrap_or(0.0);
    explained_variance
        .iter()
        .take_while(|&&v| top > 0.0 && v > WHITEN_RTOL * top)
        .count()
}

/// How many components a variance fraction asks for, from the explained-variance ratios of
/// all min(N, D) components (descending).
///
/// scikit-learn's rule, `searchsorted(cumsum(ratios), f, side="right") + 1`: one more than
/// the number of cumulative ratios ≤ f, i.e. the fewest components whose cumulative ratio
/// goes strictly *past* f. The result is capped at `ratios.len()`, and f ≥ 1 keeps all of
/// them: rounding can leave the cumulative sum a hair below 1 (or above 1 before the last
/// component when the trailing eigenvalues are zero), and 100% must mean "everything".
pub fn components_for_fraction(ratios: &[f64], fraction: f64) -> usize {
    if fraction >= 1.0 {
        return ratios.len();
    }
    let mut cumulative = 0.0;
    let mut at_or_below = 0;
    for r in ratios {
        cumulative += r;
        if cumulative <= fraction {
            at_or_below += 1;
        } else {
            break;
        }
    }
    (at_or_below + 1).min(ratios.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solver_names_round_trip() {
        for solver in PcaSolver::ALL {
            assert_eq!(solver.name().parse::<PcaSolver>().unwrap(), solver);
            assert_eq!(solver.to_string(), solver.name());
        }
        assert_eq!(
            "matrix_free".parse::<PcaSolver>().unwrap(),
            PcaSolver::MatrixFree
        );
        assert_eq!("FULL".parse::<PcaSolver>().unwrap(), PcaSolver::Full);
        let e = "svd".parse::<PcaSolver>().unwrap_err();
        assert!(
            matches!(e, Error::InvalidParameter { name: "solver", .. }),
            "{e}"
        );
    }
}
