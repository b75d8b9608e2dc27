//! The Lloyd loop, the empty-cluster repair, the tolerance scale and the restarts, written
//! once over [`LloydData`]: rows that are all on the device, or streamed piece by piece.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{KMeans, KMeansInit, KMeansModel, KMeansStats};
use crate::error::Result;

/// What the Lloyd loop needs of the data.
pub(super) trait LloydData {
    /// Rows and features.
    fn shape(&self) -> (usize, usize);
    /// One assignment pass against `centroids` (K x D): the merged statistics, with the
    /// number of labels that changed. The rows' labels and distances are kept for
    /// [`LloydData::labels_and_distances`].
    fn pass(&mut self, centroids: &[f32]) -> Result<KMeansStats>;
    /// Every row's label and squared distance from the last pass.
    fn labels_and_distances(&mut self) -> Result<(Vec<u32>, Vec<f32>)>;
    /// The rows `indices`, row-major, in that order.
    fn rows(&mut self, indices: &[usize]) -> Result<Vec<f32>>;
}

/// One restart's result.
pub(super) struct Run {
    pub(super) centroids: Vec<f32>,
    pub(super) inertia: f64,
    pub(super) n_iter: usize,
    pub(super) converged: bool,
    pub(super) history: Vec<f64>,
}

/// Mean over features of the population variance, from one pass with a single "centroid"
/// s (the first row): Σᵢ‖xᵢ − μ‖² = Σᵢ‖xᵢ − s‖² − N‖μ − s‖².
pub(super) fn mean_variance(data: &mut impl LloydData) -> Result<f64> {
    let (n, d) = data.shape();
    let n = n as f64;
    let shift = data.rows(&[0])?;
    let stats = data.pass(&shift)?;
    let offset_sq: f64 = stats.deviation_sums[..d]
        .iter()
        .map(|&s| (s / n).powi(2))
        .sum();
    Ok(((stats.inertia() - n * offset_sq) / (n * d as f64)).max(0.0))
}

/// Moves each empty cluster onto the row farthest from its centroid, taking rows only from
/// clusters with more than one member and updating the donors' means.
fn repair_empty_clusters(
    data: &mut impl LloydData,
    centroids: &mut [f64],
    counts: &mut [u64],
) -> Result<()> {
    let (_, d) = data.shape();
    let (labels, dists) = data.labels_and_distances()?;
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by(|&a, &b| dists[b].total_cmp(&dists[a]).then(a.cmp(&b)));
    let mut far = order.into_iter();
    for empty in 0..counts.len() {
        if counts[empty] != 0 {
            continue;
        }
        let Some(row) = far.by_ref().find(|&r| counts[labels[r] as usize] > 1) else {
            break;
        };
        let donor = labels[row] as usize;
        let x = data.rows(&[row])?;
        let m = counts[donor] as f64;
        for j in 0..d {
            let xj = x[j] as f64;
            centroids[donor * d + j] = (centroids[donor * d + j] * m - xj) / (m - 1.0);
            centroids[empty * d + j] = xj;
        }
        counts[donor] -= 1;
        counts[empty] = 1;
    }
    Ok(())
}

/// One Lloyd run from `init`.
fn lloyd(data: &mut impl LloydData, init: Vec<f32>, max_iter: usize, tol_abs: f64) -> Result<Run> {
    let mut centroids = init;
    let mut history = Vec::new();
    let mut converged = false;
    let mut n_iter = 0;
    for it in 0..max_iter {
        let stats = data.pass(&centroids)?;
        history.push(stats.inertia());
        n_iter = it + 1;
        // The count compares with the previous iteration's labels (or a previous restart's,
        // or zeros): meaningless on the first iteration of a run.
        if it > 0 && stats.changed == 0 {
            converged = true;
            break;
        }
        let mut counts = stats.counts.clone();
        let mut next = stats.next_centroids();
        if counts.contains(&0) {
            repair_empty_clusters(data, &mut next, &mut counts)?;
        }
        let next32: Vec<f32> = next.iter().map(|&v| v as f32).collect();
        let shift: f64 = next32
            .iter()
            .zip(&centroids)
            .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
            .sum();
        centroids = next32;
        if shift <= tol_abs {
            converged = true;
            break;
        }
    }
    // Labels and inertia consistent with the final centroids.
    let last = data.pass(&centroids)?;
    Ok(Run {
        centroids,
        inertia: last.inertia(),
        n_iter,
        converged,
        history,
    })
}

/// The restarts of a fit: `init` draws each restart's centroids; the run with the lowest
/// inertia is kept, with its labels.
pub(super) fn fit_restarts<D: LloydData>(
    params: &KMeans,
    data: &mut D,
    mut init: impl FnMut(&mut D, &mut ChaCha8Rng) -> Result<Vec<f32>>,
) -> Result<KMeansModel> {
    let (_, d) = data.shape();
    let tol_abs = if params.tol > 0.0 {
        params.tol * mean_variance(data)?
    } else {
        0.0
    };
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let runs = match params.init {
        KMeansInit::Centroids(_) => 1,
        _ => params.n_init,
    };
    let mut best: Option<(Run, Vec<u32>)> = None;
    for _ in 0..runs {
        let start = init(data, &mut rng)?;
        let run = lloyd(data, start, params.max_iter, tol_abs)?;
        if best.as_ref().is_none_or(|(b, _)| run.inertia < b.inertia) {
            let labels = data.labels_and_distances()?.0;
            best = Some((run, labels));
        }
    }
    let (run, labels) = best.expect("at least one restart ran");
    Ok(KMeansModel {
        params: params.clone(),
        n_features: d,
        centroids: run.centroids,
        labels,
        inertia: run.inertia,
        n_iter: run.n_iter,
        converged: run.converged,
        inertia_history: run.history,
    })
}
