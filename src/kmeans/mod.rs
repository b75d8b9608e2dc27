//! K-Means clustering (Lloyd's algorithm) with the heavy work on the GPU.
//!
//! K-Means minimises the within-cluster sum of squares (the inertia)
//!
//! ```text
//! J(c, μ) = Σᵢ ‖xᵢ − μ_{c(i)}‖²
//! ```
//!
//! by alternating the two exact minimisations of Lloyd (1982):
//! 1. **assignment**: c(i) = argminₖ ‖xᵢ − μₖ‖² (`shaders/assign/`, one invocation per
//!    row, centroid tiles in workgroup memory);
//! 2. **update**: μₖ = mean of the rows with c(i) = k (`shaders/centroids/update.wgsl` then
//!    `shaders/primitives/reduce.wgsl`: per-block partial sums in a fixed order, folded on the device,
//!    so only K x D statistics and a few scalars come back each iteration).
//!
//! J never increases. Iteration stops when no label changes, when the total squared centroid
//! shift Σₖ‖μₖ⁽ᵗ⁺¹⁾ − μₖ⁽ᵗ⁾‖² falls to `tol` times the mean per-feature variance
//! (scikit-learn's rule), or after `max_iter` iterations; then a last assignment gives labels
//! consistent with the final centroids. A cluster that loses every member is re-seeded at the
//! row farthest from its centroid (never taken from a singleton cluster), so centroids are
//! never NaN.
//!
//! Seeding is greedy k-means++ (Arthur & Vassilvitskii 2007, scikit-learn's variant): each new
//! centre is the best of `2 + ln k` candidates drawn with probability ∝ D(x)², the squared
//! distance to the nearest centre so far, "best" meaning the smallest resulting potential
//! Σᵢ min(D(xᵢ)², ‖xᵢ − c‖²); or k-means‖ (Bahmani et al. 2012), random rows or given
//! centroids (module `seeding`).
//!
//! Host algebra (centroid = old centroid + mean deviation, shifts, inertia) is f64. Every
//! device sum has a fixed order, so the same seed on the same adapter gives bitwise the same
//! model. The f64 CPU oracle of the same algorithm is the `kmeans` module of
//! [`reference`](crate::reference).

//!
//! **Sample weights** ([`KMeans::fit_weighted`]): with a weight wᵢ per row the objective is
//! J = Σᵢ wᵢ‖xᵢ − μ_{c(i)}‖², the update is the weighted mean μₖ = Σw·x/Σw, k-means++ draws ∝
//! w·D² (its first centre ∝ w), random init ∝ w, and `tol` is relative to the weighted
//! variance, so an integer weight is exactly the row repeated. **Data larger than the GPU**:
//! [`KMeans::fit_source`] streams a [`RowSource`](crate::source::RowSource) (module `stream`),
//! [`KMeans::fit_partitions`] splits rows across devices, [`KMeansStats`] merge, and
//! [`MiniBatchKMeans`] learns from batches.
//!
//! **Spherical K-Means** ([`Metric::Cosine`]; Dhillon & Modha 2001): every row is put on the
//! unit sphere, x̂ = x/‖x‖ (on the device, `normalize_rows` in `shaders/primitives/rows.wgsl`), and the
//! centroids are kept unit. On the sphere ‖x̂ − ĉ‖² = 2 − 2·cos(x, c), so the nearest centroid in
//! Euclidean distance is the one of largest cosine, and the same assignment kernel serves both
//! metrics. The update is the mean of the cluster's unit rows, normalised; the inertia
//! reported is J = Σᵢ (1 − cos(xᵢ, c_{c(i)})) = ½ Σᵢ ‖x̂ᵢ − ĉ_{c(i)}‖², in [0, 2N]. A row of zeros
//! has no direction and is refused; a cluster whose unit rows sum to zero keeps its previous
//! centroid.
//!
//! **Mini-batch K-Means** ([`MiniBatchKMeans`], Sculley 2010, module `minibatch`): each step
//! moves the centroids that received rows of a random batch to the running mean of all rows
//! they received, cₖ ← cₖ + Σ(x − cₖ)/(Wₖ + nₖ).
//!
//! Layout (the same file names mean the same in `kmeans/`, `gmm/` and `pca/`):
//! - `params`: [`KMeans`], [`KMeansInit`], [`Metric`], [`MiniBatchKMeans`] and their
//!   validation;
//! - `fit`: every public `fit*` entry, where resident-or-streamed is decided once;
//! - `workspace`: the device buffers of a fit and one Lloyd step, with what they cost;
//! - `seeding`: k-means++, k-means‖, random and given starts, on device or host rows;
//! - `lloyd`: the loop and the restarts, a leaf that imports nothing else from this folder;
//! - `stream` and `partitions`: rows streamed from a source, rows on several devices;
//! - `remote`: rows in partitions that live elsewhere (other processes or machines), the
//!   driver's loop over a [`RemoteKMeans`] bridge and the worker's [`KMeansPartition`];
//! - `minibatch` (its loop) and `minibatch_partial` ([`MiniBatchKMeansFit`]);
//! - `model`: the fitted [`KMeansModel`]; `stats`: [`KMeansStats`], which merge.

mod fit;
mod lloyd;
#[cfg(test)]
mod lloyd_ahead_tests;
mod minibatch;
mod minibatch_partial;
mod model;
mod model_origin;
mod params;
mod partitions;
mod remote;
mod seeding;
mod stats;
mod stream;
mod workspace;
#[cfg(test)]
mod workspace_tests;

pub use crate::gpu::GpuInput;
pub use minibatch_partial::MiniBatchKMeansFit;
pub use model::KMeansModel;
#[cfg(feature = "io")]
pub(crate) use model::KMeansModelFields;
pub use params::{KMeans, KMeansInit, Metric, MiniBatchKMeans};
pub(crate) use remote::{remote_plus_plus_seeds, remote_rows};
pub use remote::{seed_candidates, KMeansPartition, KMeansReply, KMeansRequest, RemoteKMeans};
pub(crate) use seeding::{plus_plus_sample_size, uniform_sample, weighted_plus_plus_seeds};
pub use stats::KMeansStats;
