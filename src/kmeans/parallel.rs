//! k-means‖ seeding (Bahmani, Moseley, Vattani, Kumar & Vassilvitskii 2012, "Scalable
//! K-Means++").
//!
//! Greedy k-means++ adds one centre per pass over the data, so K passes; k-means‖ samples
//! many candidates per pass:
//!
//! 1. C ← one row drawn uniformly (∝ w with sample weights); φ = Σᵢ wᵢ·D²(xᵢ, C);
//! 2. `rounds` times: every row joins C independently with probability
//!    min(1, ℓ·wᵢ·D²(xᵢ, C)/φ), ℓ = `oversampling`·K, then D² and φ are updated;
//! 3. each candidate is weighted by the (sample-weighted) number of rows nearest to it;
//! 4. greedy k-means++ (2 + ln K trials per step, the seeding of
//!    [`KMeans::fit`](crate::KMeans::fit)) picks K centres among the weighted candidates, on
//!    the device (they are about 1 + rounds·ℓ).
//!
//! D² and the nearest candidate of every row come from the assignment kernel that Lloyd
//! uses (one pass per round plus one for the weights: rounds + 1 passes over the data, where
//! k-means++ makes K); the N
//! distances are read back once per round and the Bernoulli draws made on the host in row
//! order from the fit's ChaCha8 generator, so the same seed gives the same centres. When
//! fewer than K distinct candidates come out (tiny or highly duplicated data), the rest are
//! distinct rows drawn uniformly, as Spark MLlib does.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::fit::{random_rows, weighted_plus_plus_seeds, Workspace};
use super::KMeansInit;
use crate::data::Matrix;
use crate::error::Result;
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::rows;

/// The seeds `init` asks for on device rows `x` (K x D, f32): k-means‖ or greedy k-means++.
pub(super) fn device_seeds(
    gpu: &Gpu,
    x: &GpuMatrix,
    k: usize,
    weights: Option<&[f32]>,
    init: &KMeansInit,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f32>> {
    match *init {
        KMeansInit::KMeansParallel {
            oversampling,
            rounds,
        } => kmeans_parallel(gpu, x, k, weights, oversampling, rounds, rng),
        _ => weighted_plus_plus_seeds(gpu, x, k, weights, rng),
    }
}

/// k-means‖ on the device rows `x` (see the module docs).
pub(super) fn kmeans_parallel(
    gpu: &Gpu,
    x: &GpuMatrix,
    k: usize,
    weights: Option<&[f32]>,
    oversampling: f64,
    rounds: usize,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f32>> {
    let (n, d) = (x.n_rows(), x.n_features());
    let weight = |i: usize| weights.map_or(1.0, |w| w[i] as f64);
    let first = random_rows(rng, n, 1, weights)?[0];
    let mut chosen = vec![first];
    let mut in_c = vec![false; n];
    in_c[first] = true;
    let mut centres = rows::read_rows(gpu, x, &chosen)?;
    let ell = oversampling * k as f64;
    for _ in 0..rounds {
        let ws = Workspace::weighted(gpu, x, chosen.len(), weights)?;
        let d2 = ws.step(&centres, chosen.len(), true)?.min_sq_dist;
        let phi: f64 = (0..n).map(|i| weight(i) * d2[i].max(0.0) as f64).sum();
        if phi <= 0.0 {
            break; // every row sits on a candidate
        }
        let mut picked = Vec::new();
        for (i, &dist) in d2.iter().enumerate() {
            let p = (ell * weight(i) * dist.max(0.0) as f64 / phi).min(1.0);
            // One draw per row, in row order, so the stream of draws is fixed by the seed.
            if rng.random::<f64>() < p && !in_c[i] {
                picked.push(i);
            }
        }
        if picked.is_empty() {
            continue;
        }
        for &i in &picked {
            in_c[i] = true;
        }
        centres.extend(rows::read_rows(gpu, x, &picked)?);
        chosen.extend(picked);
    }
    if chosen.len() < k {
        // Top up with distinct rows not chosen yet.
        let rest: Vec<usize> = (0..n).filter(|&i| !in_c[i]).collect();
        let extra = rand::seq::index::sample(rng, rest.len(), k - chosen.len());
        let picked: Vec<usize> = extra.iter().map(|j| rest[j]).collect();
        centres.extend(rows::read_rows(gpu, x, &picked)?);
        chosen.extend(picked);
    }
    if chosen.len() == k {
        return Ok(centres);
    }
    // Weight every candidate by the rows nearest to it, then seed among them on the device.
    let ws = Workspace::weighted(gpu, x, chosen.len(), weights)?;
    let candidate_weights = ws.step(&centres, chosen.len(), false)?.weight_sums;
    let candidates = GpuMatrix::upload(gpu, &Matrix::new(&centres, d)?)?;
    weighted_plus_plus_seeds(gpu, &candidates, k, Some(&candidate_weights), rng)
}
