//! The Lloyd loop, written once over [`LloydData`]: rows that are all on the device (the
//! workspace), streamed piece by piece (`stream`), or split across devices (`partitions`).
//!
//! One iteration is one assignment pass against centroids c⁽ᵗ⁾, which gives per cluster the
//! weight Wₖ, the deviation sums Σw(x − cₖ) and J = Σw‖x − c_{c(x)}‖²; then
//! c⁽ᵗ⁺¹⁾ₖ = cₖ + Σw(x − cₖ)/Wₖ (on the unit sphere again for the cosine metric), a cluster
//! left without weight re-seeded at the row farthest from its centroid. Stops when no label
//! changes, when Σₖ‖c⁽ᵗ⁺¹⁾ₖ − c⁽ᵗ⁾ₖ‖² ≤ tol·(mean feature variance), or after `max_iter`.
//! Restarts keep the run of least inertia.
//!
//! Rows that are all on one device run the loop ahead of the host ([`lloyd_ahead`]): each
//! submission updates the centroids on the device from the previous pass's sums
//! (`kernels::centroids::advance`), repairs empty clusters there by the host loop's rule
//! (`kernels::centroids::repair`) and runs the next pass, so the GPU never waits for the host
//! between iterations. K x D never comes back: each pass reports a few words (the update's
//! decision and squared shift, the pass's per-cluster Σw·d²), read one submission behind, or
//! for a fixed count without a callback only at window ends ([`window_end`]). The decisions
//! are the host loop's, in its order. The device marks the loop finished, so that a
//! submission already in flight changes nothing: its pass runs against the final centroids
//! and makes the labels agree with them. More empty clusters than a step repairs stop the
//! device (centroids kept); the host repairs them from a pass it reads in full and starts the
//! device again. The update is f32 on the device where the host loop's is f64 (the same sums,
//! rounded once more): results agree with the host loop to f32 rounding, and are the same,
//! bit for bit, from run to run on one adapter.
//!
//! This file is a leaf of its folder but for the statistics it consumes: it knows nothing of
//! the parameters' types or the workspace. What it needs of them arrives as a [`Settings`]
//! and, per iteration, the pass's [`KMeansStats`] (the same sums the kernels wrote, merged in
//! f64: one shape from the device to the update).

use rand_chacha::ChaCha8Rng;

use super::stats::KMeansStats;
use crate::error::{Error, Result};
use crate::kernels::centroids::advance::{Decision, Outcome};
use crate::progress::{fit_done, Algorithm, OnIteration, Progress};

/// What the Lloyd loop needs of the data.
pub(super) trait LloydData {
    /// Rows and features.
    fn shape(&self) -> (usize, usize);
    /// One assignment pass against `centroids` (K x D). The rows' labels and distances are
    /// kept for [`LloydData::labels_and_distances`].
    fn pass(&mut self, centroids: &[f32]) -> Result<KMeansStats>;
    /// Every row's label and squared distance from the last pass.
    fn labels_and_distances(&mut self) -> Result<(Vec<u32>, Vec<f32>)>;
    /// The labels the model keeps of the last pass: every row's, or none where the rows
    /// live elsewhere (remote partitions keep theirs).
    fn final_labels(&mut self) -> Result<Vec<u32>> {
        Ok(self.labels_and_distances()?.0)
    }
    /// The first rows of the repair's order over the last pass (squared distance descending,
    /// row ascending) as (row, label, squared distance): at least `at_least` of them, or all.
    /// By default every row's, from [`LloydData::labels_and_distances`]; rows resident on the
    /// device select them there instead of reading N rows back.
    fn farthest_rows(&mut self, at_least: usize) -> Result<Vec<(usize, u32, f32)>> {
        let _ = at_least;
        every_row_by_distance(self)
    }
    /// The rows `indices`, row-major, in that order.
    fn rows(&mut self, indices: &[usize]) -> Result<Vec<f32>>;
    /// Every row's sample weight, when the rows are weighted.
    fn row_weights(&self) -> Option<&[f32]>;
    /// The rows as a loop the device runs ahead of the host (all of them on one device),
    /// when they can be one ([`lloyd_ahead`]).
    fn ahead(&mut self) -> Option<&mut dyn RunsAhead> {
        None
    }
}

/// What the loop needs of the parameters.
pub(super) struct Settings<'a> {
    /// Restarts to run (1 for given centroids).
    pub(super) runs: usize,
    /// Iterations per restart.
    pub(super) max_iter: usize,
    /// Tolerance on the squared centroid shift, relative to the mean feature variance.
    pub(super) tol: f64,
    /// Exactly `max_iter` iterations: no tolerance test, no stop on unchanged labels.
    pub(super) fixed: bool,
    /// Rows and centroids on the unit sphere (cosine metric).
    pub(super) spherical: bool,
    /// From the summed squared distances to the reported objective (½ for cosine).
    pub(super) objective_scale: f64,
    /// The progress callback.
    pub(super) on_iteration: Option<&'a OnIteration>,
}

/// One restart's result.
pub(super) struct Run {
    pub(super) centroids: Vec<f32>,
    pub(super) inertia: f64,
    pub(super) n_iter: usize,
    pub(super) converged: bool,
    pub(super) history: Vec<f64>,
    /// The progress callback asked to stop.
    pub(super) stopped: bool,
}

/// The kept restart, its rows' labels, and the seconds all restarts spent seeding.
pub(super) struct Best {
    pub(super) run: Run,
    pub(super) labels: Vec<u32>,
    pub(super) init_seconds: f64,
}

/// Mean over features of the (weighted) population variance, from one pass with a single
/// "centroid" s (the first row): Σᵢwᵢ‖xᵢ − μ‖² = Σᵢwᵢ‖xᵢ − s‖² − W‖μ − s‖², W = Σw (N
/// unweighted). Weighted, so that integer weights and repeated rows get the same tolerance.
pub(super) fn mean_variance(data: &mut impl LloydData) -> Result<f64> {
    let (_, d) = data.shape();
    let shift = data.rows(&[0])?;
    let pass = data.pass(&shift)?;
    let n = pass.weights[0];
    let offset_sq: f64 = pass.deviation_sums[..d]
        .iter()
        .map(|&s| (s / n).powi(2))
        .sum();
    Ok(((pass.inertia() - n * offset_sq) / (n * d as f64)).max(0.0))
}

/// Scales each K x D centroid row to unit length; a row of zeros keeps `previous`'s row (the
/// centroid before the update), or is an error when there is none (given centroids).
pub(super) fn normalize_centroids(c: &mut [f64], d: usize, previous: Option<&[f32]>) -> Result<()> {
    for (k, row) in c.chunks_mut(d).enumerate() {
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm > 0.0 && norm.is_finite() {
            row.iter_mut().for_each(|v| *v /= norm);
        } else if let Some(prev) = previous {
            for (v, &p) in row.iter_mut().zip(&prev[k * d..(k + 1) * d]) {
                *v = p as f64;
            }
        } else {
            return Err(Error::invalid(
                "init",
                format!("centroid {k} is all zeros: cosine K-Means needs a direction"),
            ));
        }
    }
    Ok(())
}

/// Every row in the repair's order: squared distance descending, row ascending.
pub(super) fn every_row_by_distance<D: LloydData + ?Sized>(
    data: &mut D,
) -> Result<Vec<(usize, u32, f32)>> {
    let (labels, dists) = data.labels_and_distances()?;
    let mut order: Vec<(usize, u32, f32)> = (0..labels.len())
        .map(|r| (r, labels[r], dists[r]))
        .collect();
    order.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    Ok(order)
}

/// Moves each empty cluster (no weight) onto the row farthest from its centroid, taking rows
/// only from clusters with more than one member and updating the donors' (weighted) means.
///
/// Only the first rows of the order can be taken: each empty cluster takes one, and each
/// cluster skips at most one (its last member), so n_empty + K rows suffice unless rows of
/// zero weight make more clusters empty on the way. Those are asked for
/// ([`LloydData::farthest_rows`]); should they run out before every empty cluster has a row,
/// the repair starts again from every row, so the result is the full order's either way.
fn repair_empty_clusters(
    data: &mut impl LloydData,
    centroids: &mut [f64],
    counts: &mut [u64],
    weights: &mut [f64],
) -> Result<()> {
    let n = data.shape().0;
    // As the loop below decides: a weight that is not positive (NaN included) is empty.
    let empty = weights.iter().filter(|&&w| w <= 0.0 || w.is_nan()).count();
    let far = data.farthest_rows(empty + counts.len())?;
    if far.len() >= n {
        return take_farthest(data, &far, centroids, counts, weights).map(|_| ());
    }
    let start = (centroids.to_vec(), counts.to_vec(), weights.to_vec());
    if take_farthest(data, &far, centroids, counts, weights)? {
        return Ok(());
    }
    centroids.copy_from_slice(&start.0);
    counts.copy_from_slice(&start.1);
    weights.copy_from_slice(&start.2);
    let far = every_row_by_distance(data)?;
    take_farthest(data, &far, centroids, counts, weights).map(|_| ())
}

/// The repair over `far` (a prefix of the order); false when `far` ran out first.
fn take_farthest(
    data: &mut impl LloydData,
    far: &[(usize, u32, f32)],
    centroids: &mut [f64],
    counts: &mut [u64],
    weights: &mut [f64],
) -> Result<bool> {
    let (_, d) = data.shape();
    let mut far = far.iter();
    for empty in 0..counts.len() {
        if weights[empty] > 0.0 {
            continue;
        }
        let Some(&(row, label, _)) = far.by_ref().find(|&&(_, l, _)| counts[l as usize] > 1) else {
            return Ok(false);
        };
        let donor = label as usize;
        let w = data.row_weights().map_or(1.0, |wt| wt[row] as f64);
        let x = data.rows(&[row])?;
        let m = weights[donor];
        for j in 0..d {
            let xj = x[j] as f64;
            // A donor left without weight keeps its centroid.
            if m - w > 0.0 {
                centroids[donor * d + j] = (centroids[donor * d + j] * m - w * xj) / (m - w);
            }
            centroids[empty * d + j] = xj;
        }
        counts[donor] -= 1;
        counts[empty] = 1;
        weights[donor] -= w;
        weights[empty] = w;
    }
    Ok(true)
}

#[cfg(test)]
thread_local! {
    /// The tests' choice of the host loop for rows that could run ahead, on this thread.
    static HOST_LOOP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Empty clusters the loop ahead left to the host's repair, on this thread.
    static HOST_REPAIRS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Runs `f` with the host loop taken even where the rows could run ahead on the device, on
/// this thread (the tests compare whole fits each way).
#[cfg(test)]
pub(super) fn with_host_loop<R>(f: impl FnOnce() -> R) -> R {
    let was = HOST_LOOP.replace(true);
    let out = f();
    HOST_LOOP.set(was);
    out
}

/// How many times the loop ahead stopped for the host's repair on this thread, and the count
/// set back to zero (the tests tell the device's repair from the host's).
#[cfg(test)]
pub(super) fn take_host_repairs() -> usize {
    HOST_REPAIRS.replace(0)
}

fn host_loop_forced() -> bool {
    #[cfg(test)]
    if HOST_LOOP.get() {
        return true;
    }
    false
}

/// The update after a `pass` against `centroids`, on the host in f64: the next centroids
/// (empty clusters repaired, back on the unit sphere for the cosine metric) as f32, and the
/// squared shift Σₖ‖c⁽ᵗ⁺¹⁾ₖ − c⁽ᵗ⁾ₖ‖² they make.
pub(super) fn host_update(
    data: &mut impl LloydData,
    pass: KMeansStats,
    centroids: &[f32],
    spherical: bool,
) -> Result<(Vec<f32>, f64)> {
    let mut next = pass.next_centroids();
    let KMeansStats {
        mut counts,
        mut weights,
        ..
    } = pass;
    if weights.iter().any(|&w| w <= 0.0) {
        repair_empty_clusters(data, &mut next, &mut counts, &mut weights)?;
    }
    if spherical {
        normalize_centroids(&mut next, data.shape().1, Some(centroids))?;
    }
    let next32: Vec<f32> = next.iter().map(|&v| v as f32).collect();
    let shift: f64 = next32
        .iter()
        .zip(centroids)
        .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
        .sum();
    Ok((next32, shift))
}

/// One Lloyd run from `init`; with the cosine metric the updated centroids are put back on
/// the unit sphere. Rows that can run ahead on the device do ([`lloyd_ahead`]); the loop
/// below is the host's, one pass and one read-back of K x D sums per iteration.
fn lloyd(
    data: &mut impl LloydData,
    init: Vec<f32>,
    settings: &Settings<'_>,
    tol_abs: f64,
    progress: &Progress<'_>,
) -> Result<Run> {
    if !host_loop_forced() && data.ahead().is_some() {
        return lloyd_ahead(data, init, settings, tol_abs, progress);
    }
    let mut centroids = init;
    let mut history = Vec::new();
    let mut converged = false;
    let mut stopped = false;
    let mut n_iter = 0;
    let scale = settings.objective_scale;
    for it in 0..settings.max_iter {
        let pass = data.pass(&centroids)?;
        let inertia = pass.inertia();
        history.push(inertia);
        n_iter = it + 1;
        // The count compares with the previous iteration's labels (or a previous restart's,
        // or zeros): meaningless on the first iteration of a run.
        if it > 0 && pass.changed == 0 && !settings.fixed {
            converged = true;
            let _ = progress.iteration(n_iter, inertia * scale, 0.0);
            break;
        }
        let (next32, shift) = host_update(data, pass, &centroids, settings.spherical)?;
        centroids = next32;
        if shift <= tol_abs {
            converged = true;
            let _ = progress.iteration(n_iter, inertia * scale, shift);
            break;
        }
        if progress
            .iteration(n_iter, inertia * scale, shift)
            .is_break()
        {
            stopped = true;
            break;
        }
    }
    // Labels and inertia consistent with the final centroids.
    let last = data.pass(&centroids)?;
    Ok(Run {
        centroids,
        inertia: last.inertia() * scale,
        n_iter,
        converged,
        history: history.into_iter().map(|j| j * scale).collect(),
        stopped,
    })
}

/// The restarts of a fit: `init` draws each restart's centroids from `rng`; the run with the
/// lowest inertia is kept, with its labels.
pub(super) fn fit_restarts<D: LloydData>(
    settings: &Settings<'_>,
    data: &mut D,
    rng: &mut ChaCha8Rng,
    mut init: impl FnMut(&mut D, &mut ChaCha8Rng) -> Result<Vec<f32>>,
) -> Result<Best> {
    let (n, d) = data.shape();
    let began = std::time::Instant::now();
    // A fixed count tests nothing: no shift is at or below a negative tolerance, and the
    // pass that scales `tol` is not needed.
    let tol_abs = if settings.fixed {
        -1.0
    } else if settings.tol > 0.0 {
        settings.tol * mean_variance(data)?
    } else {
        0.0
    };
    let mut best: Option<(Run, Vec<u32>)> = None;
    let mut init_seconds = 0.0;
    for r in 0..settings.runs {
        let progress = Progress::new(Algorithm::KMeans, r, settings.on_iteration);
        let init_began = std::time::Instant::now();
        let mut start = init(data, rng)?;
        if settings.spherical {
            // Rows drawn from unit data are unit already; given centroids may not be.
            let mut unit: Vec<f64> = start.iter().map(|&v| v as f64).collect();
            normalize_centroids(&mut unit, d, None)?;
            start = unit.iter().map(|&v| v as f32).collect();
        }
        init_seconds += init_began.elapsed().as_secs_f64();
        let run = lloyd(data, start, settings, tol_abs, &progress)?;
        let stopped = run.stopped;
        if best.as_ref().is_none_or(|(b, _)| run.inertia < b.inertia) {
            let labels = data.final_labels()?;
            best = Some((run, labels));
        }
        if stopped {
            break;
        }
    }
    let (run, labels) = best.expect("at least one restart ran");
    fit_done(Algorithm::KMeans, n, d, run.n_iter, run.converged, began);
    Ok(Best {
        run,
        labels,
        init_seconds,
    })
}

/// What one submission's readback says: the update's outcome (none for a run's first pass,
/// which follows no update) and its pass's inertia Σₖ Σw·‖x − cₖ‖².
#[derive(Debug, Clone, Copy)]
pub(super) struct StepReport {
    pub(super) outcome: Option<Outcome>,
    pub(super) inertia: f64,
}

/// Rows that can run the Lloyd loop ahead of the host (one device holds them all).
pub(super) trait RunsAhead {
    /// Makes `centroids` the next pass's, and the loop unfinished, with this update rule:
    /// unit-length centroids, and the squared shift at or below which the loop finishes.
    fn start(&mut self, centroids: &[f32], spherical: bool, tol: f32);
    /// Submits, without waiting: with `update` (`Some(check_changed)`) the update of the
    /// last pass's centroids first, then a pass against the centroids. Its report stays on
    /// the device unless `report` (or the device's history of reports is full): a step that
    /// reports brings back the reports of the steps before it too.
    fn submit(&mut self, update: Option<bool>, report: bool) -> Result<()>;
    /// Waits for the oldest report not yet taken (for the submission that brings it back)
    /// and returns it.
    fn wait(&mut self) -> Result<StepReport>;
    /// Waits for every submission in flight; their reports, oldest first.
    fn drain(&mut self) -> Result<Vec<StepReport>>;
    /// With nothing in flight: the centroids the next pass would run against, or with
    /// `previous` those before the last move.
    fn centroids(&mut self, previous: bool) -> Result<Vec<f32>>;
}

/// How a run of the loop ended on the device.
enum End {
    /// `max_iter` passes, or a decision that finished the loop: the centroids on the device,
    /// and the inertia of the pass against them.
    OnDevice { inertia: f64 },
    /// The host holds the final centroids; the labels need a pass against them.
    OnHost(Vec<f32>),
}

/// The longest window of a fixed count's passes between two readbacks ([`window_end`]): the
/// reports the rows' device keeps (fewer where K is so large that they would not fit).
pub(super) const HISTORY_STEPS: usize = 64;

/// The last pass of the window of a fixed count's readbacks that holds pass `q` of a run
/// (from 0): windows of 1, 1, 2, 4, ... [`HISTORY_STEPS`] passes, then of that many. The
/// host reads the device's reports back at the end of each window, so a run of N passes
/// reads back about log₂ N times, and a loop the device stopped early (an empty cluster it
/// could not repair) wastes at most the rest of its window, no more passes than came before.
pub(super) fn window_end(q: usize) -> usize {
    let doubling = HISTORY_STEPS - 1;
    match q <= doubling {
        true => (q + 1).next_power_of_two() - 1,
        false => doubling + (q - doubling).div_ceil(HISTORY_STEPS) * HISTORY_STEPS,
    }
}

/// One Lloyd run from `init` with the device ahead of the host; `data.ahead()` must be
/// `Some`.
pub(super) fn lloyd_ahead<D: LloydData>(
    data: &mut D,
    init: Vec<f32>,
    settings: &Settings<'_>,
    tol_abs: f64,
    progress: &Progress<'_>,
) -> Result<Run> {
    let max_iter = settings.max_iter;
    let scale = settings.objective_scale;
    let spherical = settings.spherical;
    // A fixed count without a callback reads reports at window ends only, a window one
    // submission, the next queued first; other runs read every pass's, one submission in flight beyond it (a
    // finished loop's passes in flight are work thrown away, and after a callback's stop
    // the device keeps only the centroids before its last move).
    let quiet = settings.fixed && settings.on_iteration.is_none();
    let mut history = Vec::new();
    let (mut n_iter, mut converged, mut stopped) = (0, false, false);
    // Where the device (re)starts: the first iteration and its centroids.
    let (mut first, mut start) = (0, init);
    let end = 'run: loop {
        let ahead = ahead_of(data)?;
        ahead.start(&start, spherical, tol_abs as f32);
        ahead.submit(None, true)?;
        // The last pass submitted. Before the report of pass j is awaited, passes up to
        // j + 1 are (the update before each first), or with `quiet` those to the end of the
        // window after j's: the GPU's next work is queued.
        let mut submitted = first;
        let mut top_up = |ahead: &mut dyn RunsAhead, j: usize| -> Result<()> {
            let until = match quiet {
                true => first + window_end(window_end(j - first) + 1),
                false => j + 1,
            };
            while submitted < max_iter.min(until) {
                // The count of changed labels compares with the run's previous pass: none
                // before its first update.
                let check_changed = !settings.fixed && (submitted > first || first > 0);
                let pass = submitted + 1;
                let report = !quiet || pass == max_iter || window_end(pass - first) == pass - first;
                ahead.submit(Some(check_changed), report)?;
                submitted += 1;
            }
            Ok(())
        };
        top_up(ahead, first)?;
        // The report of pass `it`; the next holds the update after it.
        let mut last = ahead.wait()?;
        let mut it = first;
        while it < max_iter {
            history.push(last.inertia);
            n_iter = it + 1;
            let ahead = ahead_of(data)?;
            // The GPU's next work, submitted before waiting: updates and passes up to
            // it + 1 + depth, or, once the loop has finished, nothing that changes a value.
            top_up(ahead, it + 1)?;
            let report = ahead.wait()?;
            let outcome = report.outcome.ok_or_else(|| lost("an update's decision"))?;
            let inertia = last.inertia * scale;
            let shift = outcome.shift as f64;
            match outcome.decision {
                Decision::Moved => {
                    if progress.iteration(n_iter, inertia, shift).is_break() {
                        stopped = true;
                        break 'run after_stop(ahead, report)?;
                    }
                }
                Decision::Converged | Decision::Unchanged => {
                    converged = true;
                    let shown = if outcome.decision == Decision::Unchanged {
                        0.0
                    } else {
                        shift
                    };
                    let _ = progress.iteration(n_iter, inertia, shown);
                    ahead.drain()?;
                    break 'run End::OnDevice {
                        inertia: report.inertia,
                    };
                }
                Decision::Empty => {
                    #[cfg(test)]
                    HOST_REPAIRS.set(HOST_REPAIRS.get() + 1);
                    ahead.drain()?;
                    let centroids = ahead.centroids(false)?;
                    let pass = data.pass(&centroids)?;
                    let (next, shift) = host_update(data, pass, &centroids, spherical)?;
                    if shift <= tol_abs {
                        converged = true;
                        let _ = progress.iteration(n_iter, inertia, shift);
                        break 'run End::OnHost(next);
                    }
                    if progress.iteration(n_iter, inertia, shift).is_break() {
                        stopped = true;
                        break 'run End::OnHost(next);
                    }
                    (first, start) = (it + 1, next);
                    continue 'run;
                }
                Decision::Idle => return Err(lost("an update after the loop had finished")),
            }
            last = report;
            it += 1;
        }
        break End::OnDevice {
            inertia: last.inertia,
        };
    };
    let (centroids, inertia) = match end {
        End::OnDevice { inertia } => (ahead_of(data)?.centroids(false)?, inertia),
        End::OnHost(centroids) => {
            let last = data.pass(&centroids)?;
            (centroids, last.inertia())
        }
    };
    Ok(Run {
        centroids,
        inertia: inertia * scale,
        n_iter,
        converged,
        history: history.into_iter().map(|j| j * scale).collect(),
        stopped,
    })
}

/// The end of a run the progress callback stopped after an update that moved the centroids
/// (`report` its readback): the final centroids are those that update wrote, and the pass
/// of `report` ran against them, unless a submission still in flight moved them again.
fn after_stop(ahead: &mut dyn RunsAhead, report: StepReport) -> Result<End> {
    let later = ahead.drain()?;
    let moved_again = later.iter().any(|r| {
        r.outcome
            .is_some_and(|o| matches!(o.decision, Decision::Moved | Decision::Converged))
    });
    if moved_again {
        return Ok(End::OnHost(ahead.centroids(true)?));
    }
    Ok(End::OnDevice {
        inertia: report.inertia,
    })
}

fn ahead_of<D: LloydData>(data: &mut D) -> Result<&mut dyn RunsAhead> {
    data.ahead()
        .ok_or_else(|| lost("the rows no longer run ahead"))
}

fn lost(what: &str) -> Error {
    Error::Gpu(format!("the Lloyd loop on the device lost {what}"))
}
