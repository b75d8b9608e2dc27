//! The EM loop on the device: starting parameters of each initialisation, the M-step from
//! the moment sums, E- and M-steps until the lower bound settles, restarts (algorithm in the
//! parent module).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::math::{covariances_from_precisions, precision_cholesky_quoting};
use super::stats::{full, parameters_from_sums, weights_of};
use super::workspace::{Parameters, Run, Workspace};
use super::{GaussianMixture, GaussianMixtureModel, GmmInit, InitialParameters};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, GpuInput, GpuMatrix};
use crate::kernels::rows;
use crate::progress::{fit_done, Algorithm, Progress};

impl GaussianMixture {
    /// Fits a mixture to host or device data by EM (module docs), `n_init` times, keeping
    /// the highest final lower bound.
    ///
    /// Host data that do not fit the device-memory budget ([`Gpu::set_memory_budget`])
    /// next to the fit's per-row buffers are streamed as [`GaussianMixture::fit_source`]
    /// does; device data are used where they are.
    ///
    /// Not converging within `max_iter` is not an error: the model comes back with
    /// `converged() == false`.
    ///
    /// Errors: the parameter errors of [`GaussianMixture::validate`] (k > n is
    /// [`Error::TooFewSamples`]); [`Error::InvalidParameter`] named `reg_covar` when a
    /// covariance stops being positive definite (naming the component), `init` for given
    /// precisions that are not positive definite, `x` when the log-likelihood is not finite
    /// (data of extreme scale); [`Error::NonFinite`] for NaN/inf in host data; the GPU errors
    /// of the upload and the kernels.
    pub fn fit(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<GaussianMixtureModel> {
        let (n, d) = x.shape();
        self.validate(n, d)?;
        if let Some(source) = x.as_source() {
            if super::stream::must_stream(gpu, n, d, self) {
                return self.fit_source(gpu, source);
            }
        }
        let xg = x.on_gpu(gpu)?;
        self.fit_resident(gpu, &xg, None)
    }

    /// [`GaussianMixture::fit`] with a weight per row: the M-step sums are Σ w·r, Σ w·r·x
    /// and Σ w·r·(x − μ)(x − μ)ᵀ (so πₖ = Σw·rₖ / Σw), the lower bound is the weighted mean
    /// log-likelihood Σ w·log p / Σ w, and the K-Means and k-means++ starts are weighted. An
    /// integer weight equals repeating the row that many times. Host data over the budget
    /// stream as by [`GaussianMixture::fit_source_weighted`].
    ///
    /// Errors: weights that are not one per row, finite and non-negative, or all zero
    /// ([`Error::InvalidParameter`] `sample_weight`), and those of [`GaussianMixture::fit`].
    pub fn fit_weighted(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
        sample_weight: &[f32],
    ) -> Result<GaussianMixtureModel> {
        let (n, d) = x.shape();
        self.validate(n, d)?;
        crate::data::check_sample_weights(sample_weight, n)?;
        if let Some(source) = x.as_source() {
            if super::stream::must_stream(gpu, n, d, self) {
                return self.fit_source_maybe_weighted(gpu, source, Some(sample_weight));
            }
        }
        let xg = x.on_gpu(gpu)?;
        self.fit_resident(gpu, &xg, Some(sample_weight))
    }

    /// The fit on rows that are all on the device.
    pub(super) fn fit_resident(
        &self,
        gpu: &Gpu,
        x: &GpuMatrix,
        weights: Option<&[f32]>,
    ) -> Result<GaussianMixtureModel> {
        let mut ws = Workspace::new(gpu, x, self.k, self.covariance_type, true)?;
        if let Some(w) = weights {
            ws.weigh(w);
        }
        fit_restarts(self, x.n_features(), &mut ws)
    }
}

/// What EM needs of the data, resident or streamed.
pub(super) trait EmData {
    /// The starting parameters of one initialisation (parent module docs).
    fn initial_parameters(
        &mut self,
        params: &GaussianMixture,
        rng: &mut ChaCha8Rng,
    ) -> Result<Parameters>;

    /// One EM iteration from `p`: the mean log-likelihood of its E-step (checked finite
    /// with [`check_lower_bound`] before the M-step) and the M-step's parameters.
    fn step(&mut self, p: &Parameters, reg_covar: f64) -> Result<(f64, Parameters)>;

    /// The most probable component of every row under `p`.
    fn labels(&mut self, p: &Parameters) -> Result<Vec<u32>>;
}

/// The restarts, each run by EM to the end, the best kept, and its final labels.
pub(super) fn fit_restarts(
    params: &GaussianMixture,
    d: usize,
    data: &mut impl EmData,
) -> Result<GaussianMixtureModel> {
    let params = &params.resolved_init();
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let runs = match params.init {
        GmmInit::Given(_) => 1,
        _ => params.n_init,
    };
    let began = std::time::Instant::now();
    let mut best: Option<Run> = None;
    for r in 0..runs {
        let progress = Progress::new(Algorithm::GaussianMixture, r, params.on_iteration.as_ref());
        let start = params.override_start(data.initial_parameters(params, &mut rng)?, d)?;
        let run = em(data, start, params, &progress)?;
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
    let p = run.parameters;
    fit_done(
        Algorithm::GaussianMixture,
        labels.len(),
        d,
        run.n_iter,
        run.converged,
        began,
    );
    Ok(GaussianMixtureModel {
        params: GaussianMixture {
            on_iteration: None,
            ..params.clone()
        },
        n_features: d,
        weights: p.weights,
        means: p.means,
        covariances: p.covariances,
        precisions_cholesky: p.precisions_cholesky,
        converged: run.converged,
        n_iter: run.n_iter,
        lower_bound: run.lower_bound,
        lower_bound_history: run.history,
        labels,
    })
}

/// EM from `start` until the lower bound changes by less than `tol` or `max_iter` runs out.
fn em(
    data: &mut impl EmData,
    start: Parameters,
    params: &GaussianMixture,
    progress: &Progress<'_>,
) -> Result<Run> {
    let mut p = start;
    let mut lower_bound = f64::NEG_INFINITY;
    let mut history = Vec::new();
    let mut converged = false;
    let mut stopped = false;
    let mut n_iter = 0;
    for iter in 1..=params.max_iter {
        let prev = lower_bound;
        (lower_bound, p) = data.step(&p, params.reg_covar)?;
        history.push(lower_bound);
        n_iter = iter;
        let flow = progress.iteration(iter, lower_bound, lower_bound - prev);
        if (lower_bound - prev).abs() < params.tol {
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

/// The starting parameters given by the caller, with their covariances and factors.
pub(super) fn given_parameters(
    g: &InitialParameters,
    params: &GaussianMixture,
    d: usize,
) -> Result<Parameters> {
    let t = params.covariance_type;
    let covariances = covariances_from_precisions(&g.precisions, t, d)?;
    let precisions_cholesky =
        precision_cholesky_quoting(&covariances, t, params.k, d, Some(params.reg_covar))?;
    Ok(Parameters {
        weights: g.weights.clone(),
        means: g.means.clone(),
        covariances,
        precisions_cholesky,
    })
}

impl EmData for Workspace<'_> {
    fn initial_parameters(
        &mut self,
        params: &GaussianMixture,
        rng: &mut ChaCha8Rng,
    ) -> Result<Parameters> {
        Workspace::initial_parameters(self, params, rng)
    }

    fn step(&mut self, p: &Parameters, reg_covar: f64) -> Result<(f64, Parameters)> {
        let (lower_bound, first) = self.estep_and_first_moments(p)?;
        check_lower_bound(lower_bound)?;
        Ok((lower_bound, self.mstep_from(&first, &p.means, reg_covar)?))
    }

    fn labels(&mut self, p: &Parameters) -> Result<Vec<u32>> {
        Workspace::labels(self, p)
    }
}

impl Workspace<'_> {
    /// The M-step from first-moment sums around `shift`: weights and means on the host, the
    /// centred covariances from a second pass, then the precision factors.
    pub(super) fn mstep_from(
        &self,
        first: &[f64],
        shift: &[f64],
        reg_covar: f64,
    ) -> Result<Parameters> {
        let (k, d) = (self.k, self.d);
        let (nk, weights) = weights_of(&(0..k).map(|c| first[c * (d + 1) + d]).collect::<Vec<_>>());
        let means: Vec<f64> = (0..k * d)
            .map(|e| {
                let (c, j) = (e / d, e % d);
                shift[e] + first[c * (d + 1) + j] / nk[c]
            })
            .collect();
        let second = self.second_moments(&means)?;
        let full = full(self.covariance_type);
        // The kernel writes the upper triangle of a full scatter, the diagonal otherwise.
        let scatter = |c: usize, i: usize, j: usize| {
            if full {
                let (a, b) = if j >= i { (i, j) } else { (j, i) };
                second[c * d * d + a * d + b]
            } else {
                second[c * (d + 1) + j]
            }
        };
        let t = self.covariance_type;
        parameters_from_sums(t, d, nk, weights, means, scatter, reg_covar)
    }

    /// The M-step for the responsibilities on the device, shifting the first moments by
    /// `shift` (K x D) or, without one, by the first row of the data for every component.
    pub(super) fn mstep(&self, shift: Option<&[f64]>, reg_covar: f64) -> Result<Parameters> {
        let shift = match shift {
            Some(s) => s.to_vec(),
            None => {
                let row = rows::read_rows(self.gpu, &self.x, &[0])?;
                (0..self.k)
                    .flat_map(|_| row.iter().map(|&v| v as f64))
                    .collect()
            }
        };
        let first = self.first_moments(&shift)?;
        self.mstep_from(&first, &shift, reg_covar)
    }

    /// The starting parameters of one initialisation (parent module docs).
    pub(super) fn initial_parameters(
        &self,
        params: &GaussianMixture,
        rng: &mut ChaCha8Rng,
    ) -> Result<Parameters> {
        let (k, d) = (self.k, self.d);
        match &params.init {
            GmmInit::KMeans => {
                let km = crate::kmeans::KMeans::new(k)
                    .n_init(1)
                    .seed(rng.random::<u64>());
                let km = match self.host_weights() {
                    None => km.fit(self.gpu, &self.x)?,
                    Some(w) => km.fit_weighted(self.gpu, &self.x, w)?,
                };
                self.responsibilities_from_labels(km.labels())?;
            }
            GmmInit::KMeansPlusPlus => {
                let seeds = crate::kmeans::weighted_plus_plus_seeds(
                    self.gpu,
                    &self.x,
                    k,
                    self.host_weights(),
                    rng,
                )?;
                let labels = crate::kmeans::KMeansModel::from_centroids(seeds, d)?
                    .predict(self.gpu, &self.x)?;
                self.responsibilities_from_labels(&labels)?;
            }
            GmmInit::Random => self.random_responsibilities(rng),
            GmmInit::Given(g) => return given_parameters(g, params, d),
        }
        self.weigh_initial()?;
        self.mstep(None, params.reg_covar)
    }
}
