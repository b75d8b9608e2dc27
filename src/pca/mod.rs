//! Principal component analysis with the covariance and the power iteration on the GPU.
//!
//! PCA finds the orthonormal directions u₁, u₂, … of largest variance: the eigenvectors of
//! the covariance
//!
//! ```text
//! S = (X − 1μᵀ)ᵀ (X − 1μᵀ) / (N − ddof),    S uᵢ = λᵢ uᵢ,   λ₁ ≥ λ₂ ≥ …
//! ```
//!
//! (optionally of the standardised data (X − μ)/σ). The data pass over the device once, one
//! submission a piece (module `stream`):
//! 1. column moments Σ(x − s) and Σ(x − s)² per block of rows (`shaders/primitives/reduce.wgsl`,
//!    shift s = the first row) combined in f64 into μ and the per-feature variances, and
//!    folded on the device into an f32 centre c;
//! 2. the cross products G = (X − c)ᵀ(X − c), upper-triangle tiles per block of rows
//!    (`shaders/products/covariance.wgsl`), folded with Kahan sums and moved on the host to
//!    the f64 mean, M = G − N(μ − c)(μ − c)ᵀ. A resident power-iteration fit leaves G on the
//!    device and forms S there (`covariance_from_comoment`); only its diagonal comes back.
//!
//! Then, by solver:
//! - **Full**: the D x D matrix comes back and is eigendecomposed on the host (f64).
//! - **Power**: block power (subspace) iteration: W = S·V on the device
//!   (`shaders/products/projection.wgsl`), Rayleigh–Ritz (H = VᵀSV = YΘYᵀ, U = VY) and
//!   re-orthonormalisation of W, until every residual ‖S·uᵢ − θᵢuᵢ‖ ≤ tol·θ₁ for the
//!   M wanted pairs. The block holds max(2M, M + 8) vectors (at most D) so the convergence
//!   rate (θ_{p+1}/θ_M)^t is good even when λ_M and λ_{M+1} are close. With S on the device,
//!   the device takes the products between checks, orthonormalises the block by Cholesky QR
//!   and reduces it to p x p matrices, from which the host finds the Ritz pairs and their
//!   residuals in f64 (module docs of `power`).
//! - **MatrixFree**: the same iteration with S·V = Xcᵀ(Xc·V)/(N − ddof), two passes over the
//!   data and never a D x D matrix; chosen by `Auto` when S would not fit in one binding.
//!
//! An iteration that does not meet its tolerance is [`Error::NotConverged`](crate::Error::NotConverged), never a result.
//! Signs follow scikit-learn's `svd_flip`: the largest |loading| of each component is
//! positive. Transform is Z = ((X − μ)/σ)·Uᵀ (÷√λ when whitening), inverse transform
//! X̂ = (Z·(√λ)·U)·σ + μ, both on the device. The f64 CPU oracle is the `pca` module of
//! [`reference`](crate::reference).

//!
//! **Data larger than the GPU**: [`Pca::fit_source`] streams a
//! [`RowSource`](crate::source::RowSource); [`PcaMoments`] (count, mean, co-moment) merge by
//! Chan, Golub and LeVeque's formulas, so [`IncrementalPca`] and fits across machines give the
//! resident model within f32 rounding.
//!
//! Layout (the same file names mean the same in `kmeans/`, `gmm/` and `pca/`):
//! - `params`: [`Pca`], [`Components`], [`PcaSolver`], their validation, and the fraction
//!   and whitening rules;
//! - `fit`: every public `fit*` entry, where resident-or-streamed is decided once, and the
//!   solve from the moments;
//! - `workspace`: the device passes (moments, blocked cross products, S·V products) and
//!   what they cost;
//! - `power`: the block power iteration, a leaf that imports nothing else from this folder;
//!   `dense`: its device side for S on the device (rounds of products, their projections);
//! - `stats`: [`PcaMoments`], which merge; `incremental`: [`IncrementalPca`];
//! - `model`: the fitted [`PcaModel`]; `probabilistic`: its probabilistic-PCA scores;
//!   `mle`: Minka's choice of the dimensionality.

mod dense;
mod fit;
mod incremental;
mod mle;
mod model;
mod params;
pub(crate) mod power;
mod probabilistic;
mod stats;
mod stream;
mod workspace;

pub use fit::covariance;
pub use incremental::IncrementalPca;
pub use model::PcaModel;
#[cfg(feature = "io")]
pub(crate) use model::PcaModelFields;
pub use params::{
    components_for_fraction, whitenable_components, Components, Pca, PcaSolver, WHITEN_RTOL,
};
pub use stats::PcaMoments;
