//! The CPU oracle in f64, plain and readable; tests hold the GPU results against it.
//!
//! A leaf: nothing outside this module (and the tests, examples and benches) uses it, and it
//! uses the rest of the crate only for parameter and model types, errors and input checks,
//! and for one neutral module: the Gaussian-mixture host math that the GPU path needs too
//! ([`crate::gmm::math`]: precision Cholesky factors, parameter counts, sampling), which
//! `tests/gmm_math.rs` checks by identities of its own rather than against a copy. Every
//! other piece of math here is the oracle's own, so a bug in the production code cannot hide
//! in a comparison.
//!
//! Nothing here is meant to be fast. Each algorithm is written the way a textbook states it,
//! step by step in the same order the GPU runs it, in f64 so that rounding differences
//! against the f32 GPU results can be told apart from real bugs. The small public helpers
//! (assignment, inertia, centroid update, seeding) let tests check one GPU pass at a time.
//!
//! * [`gmm`]: Gaussian mixtures by EM with scikit-learn's formulas (log-densities through
//!   the precision Cholesky factors, log-sum-exp E-step, four covariance types, BIC/AIC).
//! * [`kmeans`]: Lloyd's algorithm with greedy k-means++ seeding and scikit-learn's
//!   empty-cluster relocation and tolerance.
//! * [`metrics`]: the silhouette, Calinski–Harabasz, Davies–Bouldin, inertia, and the Rand
//!   and adjusted Rand indices, each by its textbook formula.
//! * [`information`]: mutual information (plain, normalised, adjusted), homogeneity,
//!   completeness, V-measure and Fowlkes–Mallows, from their definitions.
//! * [`linalg`]: the oracle's own small algebra (eigenvectors' order and signs), so that no
//!   production algebra is shared with what it checks.
//! * [`spectral`]: spectral clustering as scikit-learn computes it (dense affinity,
//!   normalised Laplacian, full eigendecomposition, K-Means on the embedding).
//! * [`pca`]: PCA from the two-pass covariance, by full symmetric eigendecomposition or by
//!   power iteration with deflation, with scikit-learn's reported quantities.

pub mod gmm;
pub mod information;
pub mod kmeans;
pub mod linalg;
pub mod metrics;
pub mod pca;
pub mod spectral;
