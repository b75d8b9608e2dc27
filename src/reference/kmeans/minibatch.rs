//! Mini-batch K-Means in plain f64, drawing from the generator in the order the GPU fit does
//! (validation batch, initialisation candidates, then per step the batch and the
//! reassignment picks), so that both can be compared step for step. The algorithm and its
//! stopping rules are described in `kmeans::minibatch` (scikit-learn's `MiniBatchKMeans`).
//! k-means++ runs the reference seeding on the initialisation sample; its draws may differ
//! from the device's, so comparisons use random or given starts.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{assign, kmeans_plus_plus, mean_variance, no_parallel, random_init};
use crate::error::Result;
use crate::kmeans::{KMeansInit, MiniBatchKMeans};

/// The outcome of a reference mini-batch fit.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceMiniBatch {
    /// Final centroids, K x D.
    pub centroids: Vec<f64>,
    /// Rows absorbed per centroid.
    pub counts: Vec<f64>,
    /// Steps taken.
    pub n_steps: usize,
    /// Labels of every row for the final centroids.
    pub labels: Vec<u32>,
    /// Inertia of every row for the final centroids.
    pub inertia: f64,
}

fn rows(x: &[f64], d: usize, idx: &[usize]) -> Vec<f64> {
    idx.iter()
        .flat_map(|&i| x[i * d..(i + 1) * d].iter().copied())
        .collect()
}

/// Fits mini-batch K-Means to row-major `x` (`d` values per row).
///
/// Errors: whatever [`MiniBatchKMeans::validate`] reports.
pub fn fit(x: &[f64], d: usize, params: &MiniBatchKMeans) -> Result<ReferenceMiniBatch> {
    let n = x.len() / d;
    params.validate(n, d)?;
    let params = &params.resolved_for(n);
    let (k, b) = (params.k, params.batch_size);
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let valid: Vec<usize> = (0..b).map(|_| rng.random_range(0..n)).collect();
    let valid = rows(x, d, &valid);
    let candidates = match params.init {
        KMeansInit::Centroids(_) => 1,
        _ => params.n_init,
    };
    let mut best: Option<(f64, Vec<f64>)> = None;
    for _ in 0..candidates {
        let c = match &params.init {
            KMeansInit::Centroids(c) => c.clone(),
            KMeansInit::KMeansParallel { .. } => return Err(no_parallel()),
            KMeansInit::Random => random_init(x, d, k, &mut rng),
            KMeansInit::KMeansPlusPlus => {
                let m = params.init_size.expect("resolved_for sets it");
                let idx: Vec<usize> = (0..m).map(|_| rng.random_range(0..n)).collect();
                let sample = rows(x, d, &idx);
                kmeans_plus_plus(
                    &sample,
                    d,
                    k,
                    2 + (k as f64).ln().floor() as usize,
                    &mut rng,
                )
            }
        };
        let inertia: f64 = assign(&valid, d, &c).1.iter().sum();
        if best.as_ref().is_none_or(|(i, _)| inertia < *i) {
            best = Some((inertia, c));
        }
    }
    let mut centroids = best.expect("one candidate").1;
    let tol_abs = params.tol
        * if params.tol > 0.0 {
            mean_variance(x, d)
        } else {
            0.0
        };
    let steps = (params.max_iter * n / b).max(1);
    let mut counts = vec![0.0f64; k];
    let mut since = 0;
    let (mut ewa, mut ewa_min): (Option<f64>, Option<f64>) = (None, None);
    let mut no_improvement = 0;
    let mut n_steps = 0;
    for step in 0..steps {
        let idx: Vec<usize> = (0..b).map(|_| rng.random_range(0..n)).collect();
        let batch = rows(x, d, &idx);
        since += b;
        let reassign = counts.contains(&0.0) || since >= 10 * k;
        if reassign {
            since = 0;
        }
        let (labels, dist) = assign(&batch, d, &centroids);
        let batch_inertia: f64 = dist.iter().sum();
        let old = centroids.clone();
        // Running means: c ← (c·W + Σx)/(W + n_b).
        let mut sums = vec![0.0; k * d];
        let mut nb = vec![0.0; k];
        for (r, &l) in labels.iter().enumerate() {
            nb[l as usize] += 1.0;
            for j in 0..d {
                sums[l as usize * d + j] += batch[r * d + j];
            }
        }
        for c in 0..k {
            if nb[c] > 0.0 {
                for j in 0..d {
                    centroids[c * d + j] =
                        (old[c * d + j] * counts[c] + sums[c * d + j]) / (counts[c] + nb[c]);
                }
                counts[c] += nb[c];
            }
        }
        if reassign && params.reassignment_ratio > 0.0 {
            let max = counts.iter().cloned().fold(0.0, f64::max);
            let mut small: Vec<usize> = (0..k)
                .filter(|&c| counts[c] < params.reassignment_ratio * max)
                .collect();
            if small.len() as f64 > 0.5 * b as f64 {
                small.sort_by(|&a, &c| counts[a].total_cmp(&counts[c]).then(a.cmp(&c)));
                small.truncate((0.5 * b as f64) as usize);
                small.sort_unstable();
            }
            if !small.is_empty() {
                let picks = rand::seq::index::sample(&mut rng, b, small.len()).into_vec();
                for (&c, &r) in small.iter().zip(&picks) {
                    centroids[c * d..(c + 1) * d].copy_from_slice(&batch[r * d..(r + 1) * d]);
                }
                let kept = (0..k)
                    .filter(|c| !small.contains(c))
                    .map(|c| counts[c])
                    .fold(f64::INFINITY, f64::min);
                for &c in &small {
                    counts[c] = if kept.is_finite() { kept } else { 0.0 };
                }
            }
        }
        n_steps += 1;
        if step == 0 {
            continue;
        }
        let shift: f64 = centroids
            .iter()
            .zip(&old)
            .map(|(a, o)| (a - o).powi(2))
            .sum();
        let alpha = (b as f64 * 2.0 / (n as f64 + 1.0)).min(1.0);
        let mean = batch_inertia / b as f64;
        let e = ewa.map_or(mean, |e| e * (1.0 - alpha) + mean * alpha);
        ewa = Some(e);
        if params.tol > 0.0 && shift <= tol_abs {
            break;
        }
        if ewa_min.is_none_or(|m| e < m) {
            no_improvement = 0;
            ewa_min = Some(e);
        } else {
            no_improvement += 1;
        }
        if params
            .max_no_improvement
            .is_some_and(|m| no_improvement >= m)
        {
            break;
        }
    }
    let (labels, dist) = assign(x, d, &centroids);
    Ok(ReferenceMiniBatch {
        centroids,
        counts,
        n_steps,
        labels,
        inertia: dist.iter().sum(),
    })
}
