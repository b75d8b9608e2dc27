//! Gaussian mixtures fitted by expectation–maximisation, with the per-point work on the GPU.
//!
//! The model is the density
//!
//! ```text
//! p(x) = Σₖ πₖ N(x | μₖ, Σₖ),     πₖ ≥ 0,  Σₖ πₖ = 1
//! ```
//!
//! fitted by EM (Dempster, Laird & Rubin 1977; Bishop, *PRML* §9.2). Every formula, layout
//! and convention is the one of the f64 CPU oracle (the `gmm` module of
//! [`reference`](crate::reference), itself scikit-learn's `GaussianMixture`); this module runs the same algorithm with the N-sized
//! work in WGSL and everything K- or D-sized in f64 on the host.
//!
//! **E-step** (`shaders/mixture/estep.wgsl`). Each component is evaluated through the Cholesky
//! factor Uₖ of its precision (Σₖ⁻¹ = Uₖ Uₖᵀ, computed on the host in f64):
//!
//! ```text
//! log N(x | μₖ, Σₖ) = −½ D log 2π + log det Uₖ − ½ ‖(x − μₖ)ᵀ Uₖ‖²
//! log p(xᵢ) = mᵢ + log Σₖ exp(aᵢₖ − mᵢ),   aᵢₖ = log πₖ + log N(xᵢ | μₖ, Σₖ),  mᵢ = maxₖ aᵢₖ
//! rᵢₖ = exp(aᵢₖ − mᵢ) / Σⱼ exp(aᵢⱼ − mᵢ)       (= exp(aᵢₖ − log p(xᵢ)), but summing to 1 in f32)
//! ```
//!
//! The squared Mahalanobis norms are a tiled GEMM on the device: for `Full`/`Tied` the
//! difference x − μₖ is formed while staging the tile (no expansion, so no cancellation for
//! data far from the origin) and multiplied by the upper-triangular Uₖ; for
//! `Diag`/`Spherical` the kernel accumulates Σⱼ ((xⱼ − μₖⱼ) pₖⱼ)² with no D x D work. A second
//! kernel does the log-sum-exp per point (log space throughout, so a point far from every
//! component gets finite responsibilities that sum to one), writes the responsibilities
//! (N x K, kept on the device), log p(xᵢ) and the most probable component, and sums log p
//! per block of 256 rows; the host adds the blocks in f64 for the mean log-likelihood.
//!
//! **M-step** (`shaders/mixture/mstep.wgsl`), with Nₖ = Σᵢ rᵢₖ + 10 ε:
//!
//! ```text
//! μₖ = sₖ + Σᵢ rᵢₖ (xᵢ − sₖ) / Nₖ                  (sₖ: the previous mean, a shift)
//! πₖ = Nₖ / Σⱼ Nⱼ
//! Full:       Σₖ = Σᵢ rᵢₖ (xᵢ − μₖ)(xᵢ − μₖ)ᵀ / Nₖ + reg·I
//! Tied:       Σ  = Σₖ Σᵢ rᵢₖ (xᵢ − μₖ)(xᵢ − μₖ)ᵀ / Σₖ Nₖ + reg·I
//! Diag:       σₖⱼ² = Σᵢ rᵢₖ (xᵢⱼ − μₖⱼ)² / Nₖ + reg
//! Spherical:  σₖ² = (1/D) Σⱼ σₖⱼ²
//! ```
//!
//! One pass, fused into the E-step's submission, gives Nₖ and the first and second moments
//! about the previous means sₖ; the host forms μₖ and moves the scatter's centre to μₖ in f64
//! (Σ r (x − μ)(x − μ)ᵀ = S − δFᵀ − Fδᵀ + Nδδᵀ, δ = μ − s, never E[x xᵀ] − μ μᵀ about the
//! origin), so an iteration is one submission and one readback. Where a mean moved so far
//! that this would cancel (`moments` module docs), a second pass accumulates the scatter
//! centred on μₖ on the device instead. Diag and Spherical accumulate only the D diagonal
//! terms.
//! Every device sum covers one bounded block of rows; blocks are folded on the device in a
//! fixed order (Kahan) and finished in f64, so a fit is bitwise repeatable on one adapter.
//!
//! Shifting by the previous mean (rather than the reference's plain Σ rᵢₖ xᵢ / Nₖ) keeps the
//! f32 sums small; the two agree to rounding except for a component with no weight at all,
//! which here keeps its previous mean (the reference moves it toward the origin). Its
//! covariance becomes reg·I and its weight about 10 ε / N, exactly as in the reference;
//! nothing becomes NaN. With `reg_covar = 0` such a component is not positive definite and
//! the fit stops with [`Error::InvalidParameter`](crate::Error::InvalidParameter) naming the component and `reg_covar`.
//!
//! **Convergence, restarts, initialisation and labels** are the reference's: the lower bound
//! of an iteration is the mean log-likelihood of its E-step; EM stops when it changes by less
//! than `tol`; of `n_init` restarts the highest final bound wins; the returned labels come
//! from a final E-step. The initial responsibilities are drawn with the same ChaCha8 stream
//! as the reference for `Random` (so both start from the same point), and come from the GPU
//! K-Means / k-means++ for `KMeans` / `KMeansPlusPlus`.

//!
//! **Data that do not fit on the device** ([`GaussianMixture::fit_source`], and
//! [`GaussianMixture::fit`] of host data over the memory budget) are streamed piece by piece;
//! each EM iteration is one pass whose pieces give mergeable [`GmmStats`] (`stream` and
//! `stats` module docs, with the merge formulas). [`GaussianMixture::pass_stats`] is that
//! pass on its own, for drivers that spread the rows over devices or machines.
//!
//! Layout (the same file names mean the same in `kmeans/`, `gmm/` and `pca/`):
//! - `params`: [`GaussianMixture`], [`CovarianceType`], [`GmmInit`], [`InitOverrides`] and
//!   their validation;
//! - `fit`: every public `fit*` entry (and [`estimate_gaussian_parameters`], the GPU M-step
//!   on its own), where resident-or-streamed is decided once;
//! - `workspace`: the device buffers and passes;
//! - `moments`: the M-step of resident rows from the moments one pass gives (one
//!   host↔device round trip per EM iteration);
//! - `passes`: one pass over the rows on the device, the responsibilities made segment by
//!   segment in a bounded window (never N x K) and the M-step sums taken from them;
//! - `window`: a fit's device memory as a formula, the window's and the blocks' sizes, and
//!   the split of the augmented scatter on GPUs;
//! - `seeding`: the K-Means, k-means++, random and given starts, resident or streamed;
//! - `em`: the loop and the restarts, a leaf that imports nothing else from this folder;
//! - `stream`: EM over rows streamed from a [`RowSource`](crate::RowSource);
//! - `remote`: EM over partitions that live elsewhere, the driver's loop over a
//!   [`RemoteGaussianMixture`] bridge and the worker's [`GmmPartition`];
//! - `model`: the fitted [`GaussianMixtureModel`]; `stats`: [`GmmStats`], which merge;
//!   [`math`]: the host algebra (precision factors, parameter counts, sampling).

#[cfg(test)]
mod design_tests;
mod em;
mod fit;
pub mod math;
mod model;
mod model_predict;
mod moments;
mod params;
mod passes;
mod remote;
mod seeding;
mod stats;
mod stream;
mod window;
mod workspace;

pub use fit::estimate_gaussian_parameters;
#[cfg(feature = "io")]
pub(crate) use model::GaussianMixtureModelFields;
pub use model::{GaussianMixtureModel, GmmEvaluation};
pub(crate) use params::check_responsibilities;
pub use params::{CovarianceType, GaussianMixture, GmmInit, InitOverrides, InitialParameters};
pub use remote::{
    GmmPartition, GmmReply, GmmRequest, GmmStart, MixtureParameters, RemoteGaussianMixture,
};
pub use stats::{GaussianParameters, GmmStats};
