//! The CPU oracle in f64, plain and readable; tests hold the GPU results against it.
//!
//! Nothing here is meant to be fast. Each algorithm is written the way a textbook states it,
//! step by step in the same order the GPU runs it, in f64 so that rounding differences
//! against the f32 GPU results can be told apart from real bugs. The small public helpers
//! (assignment, inertia, centroid update, seeding) let tests check one GPU pass at a time.
//!
//! * [`gmm`]: Gaussian mixtures by EM with scikit-learn's formulas (precision Cholesky
//!   factors, log-sum-exp E-step, four covariance types, BIC/AIC, sampling).
//! * [`kmeans`]: Lloyd's algorithm with greedy k-means++ seeding and scikit-learn's
//!   empty-cluster relocation and tolerance.
//! * [`metrics`]: the Rand index and adjusted Rand index, to compare labellings.
//! * [`pca`]: PCA from the two-pass covariance, by full symmetric eigendecomposition or by
//!   power iteration with deflation, with scikit-learn's reported quantities.

pub mod gmm;
pub mod kmeans;
pub mod linalg;
pub mod metrics;
pub mod pca;
