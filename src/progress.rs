//! Progress of the iterative fits: `tracing` events and an optional callback that can stop a
//! fit early.
//!
//! Every iteration of K-Means (Lloyd), Gaussian-mixture EM and the PCA block power iteration
//! produces one [`Iteration`]: which fit, which restart, the iteration number, the objective
//! and its change, and the time since the restart began. It is
//!
//! - emitted as a `tracing` event at level DEBUG, target `wgpu_unsupervised::kmeans`,
//!   `wgpu_unsupervised::gmm` or `wgpu_unsupervised::pca`, with the fields `run`,
//!   `iteration`, the objective (`inertia`, `lower_bound` or `residual`), its change
//!   (`shift` or `change`) and `seconds`; each fit ends with one INFO event (`n` for K-Means
//!   and EM, `d`, `n_iter`, `converged`, `seconds`). Without a subscriber
//!   (`tracing-subscriber`, or the CLI's `--verbose`) an event costs a check of one atomic;
//! - passed to the callback set with `on_iteration` on [`KMeans`](crate::KMeans),
//!   [`MiniBatchKMeans`](crate::MiniBatchKMeans) (one iteration per batch step: the batch's
//!   inertia and the centroid shift), [`GaussianMixture`](crate::GaussianMixture) or
//!   [`Pca`](crate::Pca). Returning
//!   [`ControlFlow::Break`] stops the fit after that iteration: the model is returned as it
//!   stands, with `converged() == false` (PCA: the components of that iteration), and the
//!   restarts not yet run are skipped.
//!
//! The values are those the loop reads back anyway (no extra GPU work): the inertia of the
//! iteration's assignment and the squared centroid shift for K-Means, the mean
//! log-likelihood lower bound and its change for EM, the largest relative Ritz residual for
//! PCA (with the change of the largest Ritz value).
//!
//! ```
//! use std::ops::ControlFlow;
//! use std::sync::{Arc, Mutex};
//! use wgpu_unsupervised::{datasets, Gpu, KMeans, Matrix};
//!
//! let gpu = Gpu::new()?;
//! let (rows, _, _) = datasets::make_blobs(500, 2, 4, 1.0, (-10.0, 10.0), 3)?;
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let log = seen.clone();
//! let model = KMeans::new(4)
//!     .init(wgpu_unsupervised::KMeansInit::Random)
//!     .tol(0.0)
//!     .on_iteration(move |it| {
//!         log.lock().unwrap().push(it.objective);
//!         // Stop after the second iteration.
//!         if it.iteration == 2 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
//!     })
//!     .fit(&gpu, &Matrix::new(&rows, 2)?)?;
//! assert_eq!(model.n_iter(), 2);
//! assert!(!model.converged());
//! assert_eq!(seen.lock().unwrap().as_slice(), model.inertia_history());
//! # Ok::<(), wgpu_unsupervised::Error>(())
//! ```

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Which fit an [`Iteration`] belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Algorithm {
    /// K-Means (Lloyd iterations).
    KMeans,
    /// Mini-batch K-Means (one iteration per batch step).
    MiniBatchKMeans,
    /// Gaussian-mixture EM.
    GaussianMixture,
    /// PCA by block power iteration.
    Pca,
    /// Spectral clustering's block power iteration on the normalised affinity.
    SpectralClustering,
}

/// One iteration of a fit, as the callback and the `tracing` events see it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Iteration {
    /// The fit.
    pub algorithm: Algorithm,
    /// Restart (initialisation) index, from 0.
    pub run: usize,
    /// Iteration within the restart, from 1.
    pub iteration: usize,
    /// K-Means: the inertia of this iteration's assignment (the model's `inertia_history`);
    /// EM: the mean log-likelihood lower bound after this iteration; PCA: the largest
    /// relative Ritz residual.
    pub objective: f64,
    /// K-Means: the total squared centroid shift of the update (0 when no label changed);
    /// EM: the change of the lower bound (infinite at the first iteration); PCA: the change
    /// of the largest Ritz value (NaN at the first iteration).
    pub change: f64,
    /// Time since the restart began.
    pub elapsed: Duration,
}

/// The callback type of `on_iteration`.
type Callback = dyn Fn(&Iteration) -> ControlFlow<()> + Send + Sync;

/// A callback run after every iteration (set with `on_iteration` on the parameters).
///
/// Cloning shares the callback. Two are equal when they are the same callback, so parameters
/// that carry one still compare; it is never serialized (parameters read from a file have
/// none).
#[derive(Clone)]
pub struct OnIteration(Arc<Callback>);

impl OnIteration {
    /// Wraps `f`.
    pub fn new(f: impl Fn(&Iteration) -> ControlFlow<()> + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// This callback, seeing the objective of a fit run on rescaled data as `factor` ·
    /// objective + `offset` and its change as `factor` · change: the caller's units (see
    /// [`crate::data::range_scale`]).
    pub(crate) fn in_caller_units(&self, factor: f64, offset: f64) -> Self {
        let inner = self.0.clone();
        Self::new(move |it| {
            let mut it = it.clone();
            it.objective = it.objective * factor + offset;
            it.change *= factor;
            inner(&it)
        })
    }
}

impl std::fmt::Debug for OnIteration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnIteration(..)")
    }
}

impl PartialEq for OnIteration {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// One restart's progress: emits the events and runs the callback.
pub(crate) struct Progress<'a> {
    algorithm: Algorithm,
    run: usize,
    start: Instant,
    callback: Option<&'a OnIteration>,
}

impl<'a> Progress<'a> {
    /// The progress of restart `run` of `algorithm`, starting now.
    pub(crate) fn new(algorithm: Algorithm, run: usize, callback: Option<&'a OnIteration>) -> Self {
        Self {
            algorithm,
            run,
            start: Instant::now(),
            callback,
        }
    }

    /// Reports iteration `iteration`; `Break` when the callback asks to stop.
    pub(crate) fn iteration(
        &self,
        iteration: usize,
        objective: f64,
        change: f64,
    ) -> ControlFlow<()> {
        let it = Iteration {
            algorithm: self.algorithm,
            run: self.run,
            iteration,
            objective,
            change,
            elapsed: self.start.elapsed(),
        };
        let seconds = it.elapsed.as_secs_f64();
        match self.algorithm {
            Algorithm::KMeans => tracing::debug!(
                target: "wgpu_unsupervised::kmeans",
                run = it.run, iteration, inertia = objective, shift = change, seconds,
                "K-Means iteration"
            ),
            Algorithm::MiniBatchKMeans => tracing::debug!(
                target: "wgpu_unsupervised::kmeans",
                step = iteration, batch_inertia = objective, shift = change, seconds,
                "mini-batch step"
            ),
            Algorithm::GaussianMixture => tracing::debug!(
                target: "wgpu_unsupervised::gmm",
                run = it.run, iteration, lower_bound = objective, change, seconds,
                "EM iteration"
            ),
            Algorithm::Pca => tracing::debug!(
                target: "wgpu_unsupervised::pca",
                iteration, residual = objective, change, seconds,
                "power iteration"
            ),
            Algorithm::SpectralClustering => tracing::debug!(
                target: "wgpu_unsupervised::spectral",
                iteration, residual = objective, change, seconds,
                "spectral power iteration"
            ),
        }
        match self.callback {
            Some(f) => (f.0)(&it),
            None => ControlFlow::Continue(()),
        }
    }
}

/// The INFO event at the end of a fit (`n` is not reported for PCA).
pub(crate) fn fit_done(
    algorithm: Algorithm,
    n: usize,
    d: usize,
    n_iter: usize,
    converged: bool,
    start: Instant,
) {
    let seconds = start.elapsed().as_secs_f64();
    match algorithm {
        Algorithm::KMeans => tracing::info!(
            target: "wgpu_unsupervised::kmeans",
            n, d, n_iter, converged, seconds, "K-Means fit done"
        ),
        Algorithm::MiniBatchKMeans => tracing::info!(
            target: "wgpu_unsupervised::kmeans",
            n, d, n_iter, converged, seconds, "mini-batch K-Means fit done"
        ),
        Algorithm::GaussianMixture => tracing::info!(
            target: "wgpu_unsupervised::gmm",
            n, d, n_iter, converged, seconds, "Gaussian-mixture fit done"
        ),
        // The power iteration sees only the D x D operator, not the rows.
        Algorithm::Pca => tracing::info!(
            target: "wgpu_unsupervised::pca",
            d, n_iter, converged, seconds, "PCA power iteration done"
        ),
        Algorithm::SpectralClustering => tracing::info!(
            target: "wgpu_unsupervised::spectral",
            n = d, n_iter, converged, seconds, "spectral embedding done"
        ),
    }
}
