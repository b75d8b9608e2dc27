//! The EM loop, written once over [`EmData`]: rows on the device (the workspace) or streamed
//! piece by piece (`stream`).
//!
//! One iteration: the E-step for θ⁽ᵗ⁾ gives the responsibilities and the lower bound
//! L(θ⁽ᵗ⁾) = (1/Σw) Σᵢ wᵢ log p(xᵢ | θ⁽ᵗ⁾); the M-step gives θ⁽ᵗ⁺¹⁾ (parent module docs). EM
//! stops when |L⁽ᵗ⁾ − L⁽ᵗ⁻¹⁾| < `tol` or after `max_iter` iterations; of the restarts the
//! highest final bound wins (the earliest among equals), and the labels come from a last
//! E-step with the returned parameters.
//!
//! This file is a leaf of its folder: it defines the parameters it iterates on
//! ([`Parameters`]) and knows nothing of the builder, the workspace or the model.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::progress::{fit_done, Algorithm, OnIteration, Progress};

/// Mixture parameters in f64 (layouts in [`super::math`]).
#[derive(Debug, Clone)]
pub(super) struct Parameters {
    pub weights: Vec<f64>,
    pub means: Vec<f64>,
    pub covariances: Vec<f64>,
    pub precisions_cholesky: Vec<f64>,
}

/// The outcome of one EM run.
pub(super) struct Run {
    pub parameters: Parameters,
    pub converged: bool,
    pub n_iter: usize,
    pub lower_bound: f64,
    pub history: Vec<f64>,
    /// The progress callback asked to stop.
    pub stopped: bool,
}

/// The kept run and the labels of its final E-step.
pub(super) struct Best {
    pub run: Run,
    pub labels: Vec<u32>,
}

/// What EM needs of the data, resident or streamed.
pub(super) trait EmData {
    /// One EM iteration from `p`: the mean log-likelihood of its E-step (checked finite
    /// with [`check_lower_bound`] before the M-step) and the M-step's parameters.
    fn step(&mut self, p: &Parameters, reg_covar: f64) -> Result<(f64, Parameters)>;

    /// The most probable component of every row under `p` (none for rows that live
    /// elsewhere: remote partitions keep their labels).
    fn labels(&mut self, p: &Parameters) -> Result<Vec<u32>>;

    /// The rows, when [`EmData::labels`] does not give one label per row.
    fn n_rows(&self) -> Option<usize> {
        None
    }
}

/// What the loop needs of the fit's parameters.
pub(super) struct Settings<'a> {
    /// Restarts (1 for a given start).
    pub runs: usize,
    /// Seed of the generator every restart's start draws from.
    pub seed: u64,
    /// Iterations per restart.
    pub max_iter: usize,
    /// Least change of the lower bound that is not convergence.
    pub tol: f64,
    /// Added to the covariances' diagonals by every M-step.
    pub reg_covar: f64,
    /// The lower bound the first iteration's change is measured from: −∞, or the bound of
    /// the fit a warm start continues.
    pub start_lower_bound: f64,
    /// The progress callback.
    pub on_iteration: Option<&'a OnIteration>,
}

/// The restarts, each from the parameters `start` draws and run by EM to the end, the best
/// kept, and its final labels.
pub(super) fn fit_restarts<D: EmData>(
    settings: &Settings<'_>,
    d: usize,
    data: &mut D,
    mut start: impl FnMut(&mut D, &mut ChaCha8Rng) -> Result<Parameters>,
) -> Result<Best> {
    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
    let began = std::time::Instant::now();
    let mut best: Option<Run> = None;
    for r in 0..settings.runs {
        let progress = Progress::new(Algorithm::GaussianMixture, r, settings.on_iteration);
        let first = start(data, &mut rng)?;
        let run = em(data, first, settings, &progress)?;
        let stopped = run.stopped;
        // Strictly higher, so that among equal runs the earliest wins (as the reference).
        if best
            .as_ref()
            .is_none_or(|b| run.lower_bound > b.lower_bound)
        {
            best = Some(run);
        }
        if stopped {
            break;
        }
    }
    let run = best.expect("at least one initialisation ran");
    // The final E-step: labels that agree with the returned parameters.
    let labels = data.labels(&run.parameters)?;
    fit_done(
        Algorithm::GaussianMixture,
        data.n_rows().unwrap_or(labels.len()),
        d,
        run.n_iter,
        run.converged,
        began,
    );
    Ok(Best { run, labels })
}

/// EM from `start` until the lower bound changes by less than `tol` or `max_iter` runs out.
fn em(
    data: &mut impl EmData,
    start: Parameters,
    settings: &Settings<'_>,
    progress: &Progress<'_>,
) -> Result<Run> {
    let mut p = start;
    let mut lower_bound = settings.start_lower_bound;
    let mut history = Vec::new();
    let mut converged = false;
    let mut stopped = false;
    let mut n_iter = 0;
    for iter in 1..=settings.max_iter {
        let prev = lower_bound;
        (lower_bound, p) = data.step(&p, settings.reg_covar)?;
        history.push(lower_bound);
        n_iter = iter;
        let flow = progress.iteration(iter, lower_bound, lower_bound - prev);
        if (lower_bound - prev).abs() < settings.tol {
            converged = true;
            break;
        }
        if flow.is_break() {
            stopped = true;
            break;
        }
    }
    Ok(Run {
        parameters: p,
        stopped,
        converged,
        n_iter,
        lower_bound,
        history,
    })
}

/// The error of a lower bound that is not finite.
pub(super) fn check_lower_bound(lower_bound: f64) -> Result<()> {
    if lower_bound.is_finite() {
        Ok(())
    } else {
        Err(Error::invalid(
            "x",
            "the log-likelihood is not finite (data of extreme scale?); rescale the data",
        ))
    }
}
