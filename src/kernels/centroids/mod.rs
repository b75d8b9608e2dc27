//! The kernels of K-Means' centroids (`shaders/centroids/`):
//!
//! - [`advance`] (`advance.wgsl`): the Lloyd update itself on the device, from the
//!   partials' totals to the next centroids and the loop's decision, so that iterations follow
//!   one another without the host;
//! - [`update`] (`update.wgsl`): the per-block partials of the Lloyd update
//!   c⁽ᵗ⁺¹⁾ₖ = cₖ + Σ_{i∈k} wᵢ(xᵢ − cₖ) / Σ_{i∈k} wᵢ, in a fixed order (determinism);
//! - [`sorted`] (`sorted.wgsl`): the same partials on GPUs from the rows sorted by label,
//!   each cluster's run summed in pieces;
//! - [`partials`]: what both read (the assignment's results) and write (the partials);
//! - [`seeding`] (`seeding.wgsl`): the steps of greedy k-means++ and k-means‖ (D² sampling
//!   sums, candidate potentials, the running minimum distance);
//! - [`farthest`] (`farthest.wgsl`): the rows farthest from their centroids, for the
//!   empty-cluster repair on the host;
//! - [`repair`] (`repair.wgsl`): the empty-cluster repair on the device, between the
//!   update's next rows and its decision.

pub(crate) mod advance;
pub(crate) mod farthest;
pub(crate) mod partials;
pub(crate) mod repair;
pub(crate) mod seeding;
pub(crate) mod sorted;
#[cfg(test)]
mod sorted_tests;
pub(crate) mod update;
