//! Every public fit of a Gaussian mixture, and the one place where a fit decides how its
//! rows live on the device: device data are used where they are; host data (a
//! [`Matrix`](crate::Matrix) or any [`RowSource`]) go through `stream::device_rows`, which
//! uploads them once when they fit the memory budget next to the N x K responsibilities and
//! streams them piece by piece otherwise. The EM loop (`em`) then runs over the workspace or
//! the streamed rows, and the model is built here from what it returns.

use super::em::{fit_restarts, Best, Settings};
use super::passes::Fill;
use super::remote::{Driven, RemoteGaussianMixture};
use super::stream::{device_rows, Streamed};
use super::workspace::{Purpose, Workspace};
use super::{
    check_responsibilities, seeding, CovarianceType, GaussianMixture, GaussianMixtureModel,
    GaussianParameters, GmmInit, GmmStats,
};
use crate::data::{check_sample_weights, weights_in_range};
use crate::error::{Error, Result};
use crate::gpu::stream::DeviceRows;
use crate::gpu::{Gpu, GpuInput, GpuMatrix};
use crate::kernels::primitives::rows::in_f32_range;
use crate::origin::Centred;
use crate::source::{check_shape, RowSource, Scaled};

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
        if let Some(c) = Centred::of_input(x, None)? {
            return c.fit(self, |p, c| p.fit(gpu, c));
        }
        self.fit_input(gpu, x, None)
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
        check_sample_weights(sample_weight, n)?;
        if let Some(c) = Centred::of_input(x, None)? {
            return c.fit(self, |p, c| p.fit_weighted(gpu, c, sample_weight));
        }
        // The mixture does not depend on the weights' scale; their f32 sums do.
        self.fit_input(gpu, x, Some(&weights_in_range(sample_weight).0))
    }

    /// Fits on a [`RowSource`]: a host [`Matrix`](crate::Matrix),
    /// [`RowChunks`](crate::source::RowChunks) or a `.npy` file read piece by piece
    /// (`io::NpyRows`), which need fit neither on the device nor in host memory.
    ///
    /// When the rows fit the device-memory budget ([`Gpu::set_memory_budget`]) next to the
    /// N x K responsibilities, they are uploaded once and the fit is that of
    /// [`GaussianMixture::fit`]; otherwise every EM iteration streams them through one
    /// buffer of at most 128 MiB, merging per-piece [`GmmStats`] (module docs of
    /// `gmm::stream`; how the starts differ: `gmm::seeding`). The host keeps each row's
    /// label (4 bytes a row).
    ///
    /// Errors: those of [`GaussianMixture::fit`], and the source's ([`Error::Source`],
    /// [`Error::NonFinite`] with the global row).
    pub fn fit_source(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
    ) -> Result<GaussianMixtureModel> {
        if let Some(c) = Centred::of_source(source, None)? {
            return c.fit(self, |p, c| p.fit_source(gpu, c));
        }
        self.fit_rows(gpu, source, None)
    }

    /// [`GaussianMixture::fit_source`] with a weight per row (see
    /// [`GaussianMixture::fit_weighted`]); the weights stay on the host and stream with their
    /// rows.
    ///
    /// Errors: those of the weights and of [`GaussianMixture::fit_source`].
    pub fn fit_source_weighted(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        sample_weight: &[f32],
    ) -> Result<GaussianMixtureModel> {
        let (n, _) = check_shape(source)?;
        check_sample_weights(sample_weight, n)?;
        if let Some(c) = Centred::of_source(source, None)? {
            return c.fit(self, |p, c| p.fit_source_weighted(gpu, c, sample_weight));
        }
        self.fit_rows(gpu, source, Some(&weights_in_range(sample_weight).0))
    }

    /// Fits a mixture to rows split into partitions that live elsewhere (other processes or
    /// machines), reached through `remote` (module docs of `gmm::remote`): the EM loop of
    /// [`GaussianMixture::fit`] with every iteration one round of requests and the
    /// statistics merged in f64 in partition order. From the same start the model equals a
    /// single-device fit of all rows (partitions in order) within f32 rounding. The labels
    /// stay with the partitions: the model has none (ask each partition for
    /// [`GmmRequest::Labels`](crate::gmm::GmmRequest::Labels), or predict).
    ///
    /// Errors: no rows or features, the parameter errors of [`GaussianMixture::validate`]
    /// for all rows, those of [`GaussianMixture::fit`], replies that do not fit their
    /// requests ([`Error::Source`]), and whatever `remote` returns.
    pub fn fit_remote(
        &self,
        remote: &mut (impl RemoteGaussianMixture + ?Sized),
    ) -> Result<GaussianMixtureModel> {
        let params = self.resolved_init();
        let mut data = Driven::open(remote, self.covariance_type)?;
        let (n, d) = data.shape();
        self.validate(n, d)?;
        let best = fit_restarts(&params.settings(), d, &mut data, |data, rng| {
            data.start(&params, rng)
        })?;
        Ok(params.model(d, best))
    }

    /// One E-step pass of `source` with the parameters of `model` on the device: the
    /// statistics that merge across pieces, devices and machines (see [`GmmStats`]). A
    /// driver runs it on each partition, merges, takes [`GmmStats::next_parameters`] (with
    /// the fit's `reg_covar`), builds the next model with
    /// [`GaussianMixtureModel::from_parameters`], and repeats; the mean log-likelihood of
    /// the merged statistics is the lower bound that decides convergence.
    ///
    /// Errors: [`Error::FeatureMismatch`] when the source's rows are not of the model's
    /// features, and the errors of [`GaussianMixture::fit_source`].
    pub fn pass_stats(
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        model: &GaussianMixtureModel,
    ) -> Result<GmmStats> {
        let (_, d) = check_shape(source)?;
        if d != model.n_features() {
            return Err(Error::FeatureMismatch {
                expected: model.n_features(),
                found: d,
            });
        }
        let (k, t) = (model.k(), model.covariance_type());
        let rows = device_rows(gpu, source, k, t)?;
        let mut data = Streamed::new(gpu, source, rows, k, t, None)?;
        data.estep_stats(&model.parameters())
    }

    /// Starts the next fit from a fitted model's parameters (scikit-learn's `warm_start`):
    /// sets `init` to [`GmmInit::Given`] with the model's weights, means and precisions, the
    /// covariance type to the model's, and carries its lower bound over (the first
    /// iteration's change is measured from it, so refits of a few iterations each detect
    /// convergence as one long fit would).
    pub fn warm_start(mut self, model: &GaussianMixtureModel) -> Self {
        self.covariance_type = model.covariance_type();
        self.init = GmmInit::Given(model.initial_parameters());
        self.warm_lower_bound = Some(model.lower_bound());
        self
    }

    /// Host or device data: device data as they are, host data as rows whose place
    /// [`GaussianMixture::fit_rows`] decides.
    fn fit_input(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
        weights: Option<&[f32]>,
    ) -> Result<GaussianMixtureModel> {
        let (n, d) = x.shape();
        self.validate(n, d)?;
        match x.as_source() {
            Some(source) => self.fit_rows(gpu, source, weights),
            None => {
                let x = x.on_gpu(gpu)?;
                let (x, scale) = in_f32_range(gpu, &x)?;
                self.at_scale(scale, d, |p| p.fit_resident(gpu, &x, weights))
            }
        }
    }

    /// `fit` run on data multiplied by `scale` (a power of two, from [`in_f32_range`] or
    /// [`Scaled`]), its model brought back to the caller's units. Under y = s·x, means scale
    /// by s, covariances and `reg_covar` by s², precisions by 1/s², and log-densities shift
    /// by −D·ln s (p_y(y) = p_x(y/s)/s^D); responsibilities, labels, iterations and
    /// convergence (on changes of the lower bound) do not change. So data scaled by 1e-30 or
    /// 1e20 give the mixture of unscaled data, `reg_covar` staying in the data's units as in
    /// scikit-learn.
    fn at_scale(
        &self,
        scale: f32,
        d: usize,
        fit: impl FnOnce(&GaussianMixture) -> Result<GaussianMixtureModel>,
    ) -> Result<GaussianMixtureModel> {
        if scale == 1.0 {
            return fit(self);
        }
        let s = scale as f64;
        let shift = d as f64 * s.ln();
        let mut scaled = self.clone();
        scaled.reg_covar *= s * s;
        scaled.warm_lower_bound = self.warm_lower_bound.map(|lb| lb - shift);
        scaled.on_iteration = self
            .on_iteration
            .as_ref()
            .map(|f| f.in_caller_units(1.0, shift));
        let scale_start = |means: Option<&mut Vec<f64>>, precisions: Option<&mut Vec<f64>>| {
            means.into_iter().flatten().for_each(|m| *m *= s);
            precisions.into_iter().flatten().for_each(|p| *p /= s * s);
        };
        if let GmmInit::Given(p) = &mut scaled.init {
            scale_start(Some(&mut p.means), Some(&mut p.precisions));
        }
        let o = &mut scaled.init_overrides;
        scale_start(o.means.as_mut(), o.precisions.as_mut());
        let mut model = fit(&scaled)?.rescaled(1.0 / s);
        model.params = GaussianMixture {
            on_iteration: None,
            ..self.clone()
        };
        Ok(model)
    }

    /// The fit of host rows: resident when they fit the budget, else streamed (decided
    /// once, by `stream::device_rows`).
    fn fit_rows(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        weights: Option<&[f32]>,
    ) -> Result<GaussianMixtureModel> {
        let (n, d) = check_shape(source)?;
        self.validate(n, d)?;
        let scaled = Scaled::of(source)?;
        self.at_scale(scaled.scale(), d, |p| {
            p.fit_rows_in_range(gpu, &scaled, weights)
        })
    }

    /// [`GaussianMixture::fit_rows`] of rows in f32's comfortable range.
    fn fit_rows_in_range(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        weights: Option<&[f32]>,
    ) -> Result<GaussianMixtureModel> {
        let (_, d) = check_shape(source)?;
        let (k, t) = (self.k, self.covariance_type);
        let rows = device_rows(gpu, source, k, t)?;
        if let DeviceRows::Resident(x) = &rows {
            return self.fit_resident(gpu, x, weights);
        }
        let params = self.resolved_init();
        let mut data = Streamed::new(gpu, source, rows, k, t, weights)?;
        let best = fit_restarts(&params.settings(), d, &mut data, |data, rng| {
            seeding::streamed_start(data, &params, rng)
        })?;
        Ok(params.model(d, best))
    }

    /// The fit on rows that are all on the device.
    fn fit_resident(
        &self,
        gpu: &Gpu,
        x: &GpuMatrix,
        weights: Option<&[f32]>,
    ) -> Result<GaussianMixtureModel> {
        let params = self.resolved_init();
        let mut ws = Workspace::new(gpu, x, self.k, self.covariance_type, Purpose::Fit)?;
        if let Some(w) = weights {
            ws.weigh(w);
        }
        let best = fit_restarts(&params.settings(), x.n_features(), &mut ws, |ws, rng| {
            seeding::resident_start(ws, &params, rng)
        })?;
        Ok(params.model(x.n_features(), best))
    }

    /// What the EM loop needs of these parameters.
    fn settings(&self) -> Settings<'_> {
        Settings {
            runs: match self.init {
                GmmInit::Given(_) => 1,
                _ => self.n_init,
            },
            seed: self.seed,
            max_iter: self.max_iter,
            tol: self.tol,
            reg_covar: self.reg_covar,
            start_lower_bound: self.warm_lower_bound.unwrap_or(f64::NEG_INFINITY),
            on_iteration: self.on_iteration.as_ref(),
        }
    }

    /// The model of the run the loop kept.
    fn model(&self, d: usize, best: Best) -> GaussianMixtureModel {
        let Best { run, labels } = best;
        let p = run.parameters;
        GaussianMixtureModel {
            params: GaussianMixture {
                on_iteration: None,
                ..self.clone()
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
        }
    }
}

/// The M-step on the GPU: the weights, means and (centred) covariances of soft assignments
/// `resp` (N x K row-major, non-negative, finite) of the rows of `x`, with `reg_covar` added
/// to the diagonals (scikit-learn's `_estimate_gaussian_parameters` plus the weight
/// normalisation). Useful on its own, e.g. for class-conditional Gaussians of given labels.
///
/// Errors: [`Error::InvalidParameter`] for k = 0, `resp` of the wrong length or with
/// negative or non-finite values, a negative or non-finite `reg_covar`; the errors of the
/// upload and the kernels.
pub fn estimate_gaussian_parameters(
    gpu: &Gpu,
    x: &impl GpuInput,
    resp: &[f32],
    k: usize,
    covariance_type: CovarianceType,
    reg_covar: f64,
) -> Result<GaussianParameters> {
    if let Some(c) = Centred::of_input(x, None)? {
        let mut p = estimate_gaussian_parameters(gpu, &c, resp, k, covariance_type, reg_covar)?;
        crate::origin::translate_rows(&mut p.means, c.origin());
        return Ok(p);
    }
    let (n, _) = x.shape();
    Error::require_count("k", k)?;
    Error::require_non_negative("reg_covar", reg_covar)?;
    check_responsibilities(resp, n, k)?;
    let xg = x.on_gpu(gpu)?;
    let ws = Workspace::new(gpu, &xg, k, covariance_type, Purpose::Fit)?;
    let (p, _) = ws.mstep(&Fill::Host(resp), reg_covar)?;
    Ok(GaussianParameters {
        weights: p.weights,
        means: p.means,
        covariances: p.covariances,
    })
}
