//! Every public fit of K-Means and mini-batch K-Means, and the one route a Lloyd fit takes
//! ([`KMeans::route`]): the parameters and the shape validated once, the rows brought into
//! f32's comfortable range once (a power of two, `at_scale`), then where they live decided
//! once: device data are used where they are; host data (a [`Matrix`](crate::Matrix) or any
//! [`RowSource`]) go through `stream::device_rows`, which uploads them once when they fit the
//! memory budget and streams them piece by piece otherwise. The Lloyd loop (`lloyd`) then
//! runs over the workspace, the streamed rows or the partitions, and the model is built here
//! from what it returns.

use std::borrow::Cow;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::lloyd::{fit_restarts, Best, Settings};
use super::minibatch_partial::MiniBatchKMeansFit;
use super::model::Elapsed;
use super::partitions::Partitioned;
use super::remote::{Driven, RemoteKMeans};
use super::stream::{device_rows, Streamed};
use super::workspace::Workspace;
use super::{seeding, KMeans, KMeansInit, KMeansModel, KMeansStats, MiniBatchKMeans};
use crate::data::{check_sample_weights, weights_in_range};
use crate::error::Result;
use crate::gpu::stream::DeviceRows;
use crate::gpu::{Gpu, GpuInput, GpuMatrix};
use crate::kernels::primitives::rows::{in_f32_range, normalize_rows};
use crate::origin::Centred;
use crate::progress::OnIteration;
use crate::source::{check_shape, RowSource, Scaled};

impl KMeans {
    /// Fits on host or device data: `n_init` restarts, keeping the lowest inertia.
    ///
    /// Host data larger than the device-memory budget ([`Gpu::set_memory_budget`]) are
    /// streamed as by [`KMeans::fit_source`]; everything else is uploaded once.
    ///
    /// Errors: invalid parameters ([`Error::InvalidParameter`](crate::Error::InvalidParameter),
    /// [`Error::TooFewSamples`](crate::Error::TooFewSamples)), and the GPU errors of
    /// [`GpuMatrix::upload`] and of the kernels.
    pub fn fit(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<KMeansModel> {
        if let Some(c) = Centred::of_input(x, None)? {
            return c.fit(self, |p, c| p.fit(gpu, c));
        }
        self.route(gpu, Rows::of(gpu, x)?, None, &mut self.generator())
    }

    /// [`KMeans::fit`] with a weight per row (scikit-learn's `sample_weight`): the centroids
    /// are weighted means, the inertia is Σ w·‖x − c‖², k-means++ draws ∝ w·D² (its first
    /// centre ∝ w), random init ∝ w, and `tol` is relative to the weighted variance. An
    /// integer weight equals repeating the row that many times.
    ///
    /// Errors: weights that are not one per row, not finite and non-negative, or all zero
    /// ([`Error::InvalidParameter`](crate::Error::InvalidParameter)), and those of
    /// [`KMeans::fit`].
    pub fn fit_weighted(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
        sample_weight: &[f32],
    ) -> Result<KMeansModel> {
        check_sample_weights(sample_weight, x.shape().0)?;
        if let Some(c) = Centred::of_input(x, None)? {
            return c.fit(self, |p, c| p.fit_weighted(gpu, c, sample_weight));
        }
        let (w, scale) = weights_in_range(sample_weight);
        let rows = Rows::of(gpu, x)?;
        let model = self.route(gpu, rows, Some(&w), &mut self.generator())?;
        Ok(model.reweighted(1.0 / scale as f64))
    }

    /// Fits on a [`RowSource`]: a host [`Matrix`](crate::Matrix),
    /// [`RowChunks`](crate::source::RowChunks) or a `.npy` file read piece by piece
    /// (`io::NpyRows`), which need fit neither on the device nor in host memory.
    ///
    /// When the rows fit the device-memory budget ([`Gpu::set_memory_budget`]) they are
    /// uploaded once and the fit is that of [`KMeans::fit`]; otherwise every iteration
    /// streams them through one buffer of at most 128 MiB (see [`crate::source`]), and
    /// k-means++ seeds from a sample (module docs of `kmeans::seeding`). The host keeps each
    /// row's label and distance (8 bytes a row).
    ///
    /// Errors: those of [`KMeans::fit`], and the source's
    /// ([`Error::Source`](crate::Error::Source), [`Error::NonFinite`](crate::Error::NonFinite)
    /// with the global row).
    pub fn fit_source(&self, gpu: &Gpu, source: &(impl RowSource + ?Sized)) -> Result<KMeansModel> {
        if let Some(c) = Centred::of_source(source, None)? {
            return c.fit(self, |p, c| p.fit_source(gpu, c));
        }
        self.route(gpu, Rows::Host(source), None, &mut self.generator())
    }

    /// [`KMeans::fit_source`] with a weight per row (see [`KMeans::fit_weighted`]); the
    /// weights stay on the host and stream with their rows.
    ///
    /// Errors: those of [`KMeans::fit_weighted`] and [`KMeans::fit_source`].
    pub fn fit_source_weighted(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        sample_weight: &[f32],
    ) -> Result<KMeansModel> {
        check_sample_weights(sample_weight, source.shape().0)?;
        if let Some(c) = Centred::of_source(source, None)? {
            return c.fit(self, |p, c| p.fit_source_weighted(gpu, c, sample_weight));
        }
        let (w, scale) = weights_in_range(sample_weight);
        let model = self.route(gpu, Rows::Host(source), Some(&w), &mut self.generator())?;
        Ok(model.reweighted(1.0 / scale as f64))
    }

    /// Fits on rows split across devices: partition i (its rows numbered after those of
    /// partitions 0..i) runs on `parts[i].0` — several [`Gpu`]s from [`Gpu::all`], or
    /// several devices opened on one adapter. Each partition streams its rows under its own
    /// device's budget; every iteration merges the partitions' [`KMeansStats`] in partition
    /// order (module docs of `kmeans::partitions`). The model equals a fit of all rows on one
    /// device within f32 rounding, and its labels follow the partitions in order.
    ///
    /// Errors: no partitions, partitions with different feature counts
    /// ([`Error::FeatureMismatch`](crate::Error::FeatureMismatch)), and those of
    /// [`KMeans::fit_source`].
    pub fn fit_partitions<'a>(
        &self,
        parts: &[(&'a Gpu, &'a (dyn RowSource + 'a))],
    ) -> Result<KMeansModel> {
        self.require_euclidean("fit_partitions")?;
        let mut data = Partitioned::open(parts, self.k)?;
        let (n, d) = super::lloyd::LloydData::shape(&data);
        self.validate(n, d)?;
        let mut rng = self.generator();
        let best = fit_restarts(&self.settings(), &mut data, &mut rng, |data, rng| {
            data.start(self, rng)
        })?;
        Ok(self.model(d, best))
    }

    /// Fits on rows split into partitions that live elsewhere (other processes or machines),
    /// reached through `remote` (module docs of `kmeans::remote`): the loop of
    /// [`KMeans::fit`] with every pass a round of requests to the partitions and their
    /// statistics merged in f64 in partition order. The model equals a single-device fit of
    /// all rows (partitions in order) from the same start within f32 rounding. The labels
    /// stay with the partitions: the model has none (ask each partition for
    /// [`KMeansRequest::Labels`](crate::kmeans::KMeansRequest::Labels), or predict).
    ///
    /// Errors: the cosine metric (not supported across partitions yet), no rows or
    /// features, the parameter errors of [`KMeans::validate`] for all rows, replies that do
    /// not fit their requests ([`Error::Source`](crate::Error::Source)), and whatever
    /// `remote` returns.
    pub fn fit_remote(&self, remote: &mut (impl RemoteKMeans + ?Sized)) -> Result<KMeansModel> {
        self.fit_remote_continuing(remote, &mut self.generator())
    }

    /// [`KMeans::fit_remote`] drawing its starts from `rng` (see [`KMeans::fit_continuing`]).
    pub(crate) fn fit_remote_continuing(
        &self,
        remote: &mut (impl RemoteKMeans + ?Sized),
        rng: &mut ChaCha8Rng,
    ) -> Result<KMeansModel> {
        self.require_euclidean("fit_remote")?;
        let mut data = Driven::open(remote)?;
        let (n, d) = super::lloyd::LloydData::shape(&data);
        self.validate(n, d)?;
        let best = fit_restarts(&self.settings(), &mut data, rng, |data, rng| {
            data.start(self, rng)
        })?;
        Ok(self.model(d, best))
    }

    /// One assignment pass of `source` against `centroids` (K x D, row-major) on the
    /// device: the per-cluster sums that merge across chunks, devices and machines (see
    /// [`KMeansStats`]). A driver runs it on each partition, merges, and takes
    /// [`KMeansStats::next_centroids`]. (`changed` is 0: a single pass has no previous
    /// labels.)
    ///
    /// Errors: centroids that are not whole rows of D features or are not finite, and the
    /// errors of [`KMeans::fit_source`].
    pub fn pass_stats(
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        centroids: &[f32],
    ) -> Result<KMeansStats> {
        Self::pass_stats_of(gpu, source, centroids, None)
    }

    /// [`KMeans::pass_stats`] of rows with a weight each (see [`KMeans::fit_weighted`]).
    ///
    /// Errors: those of [`KMeans::pass_stats`] and of the weights.
    pub fn pass_stats_weighted(
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        centroids: &[f32],
        sample_weight: &[f32],
    ) -> Result<KMeansStats> {
        let (n, _) = check_shape(source)?;
        check_sample_weights(sample_weight, n)?;
        Self::pass_stats_of(gpu, source, centroids, Some(sample_weight))
    }

    /// The initial centroids of the first restart (K x D, row-major), as [`KMeans::fit`]
    /// draws them from `self.seed`: the k-means++ (scikit-learn's `kmeans_plusplus`),
    /// k-means‖ or random seeding on its own. With the cosine metric they are rows of the
    /// normalised data.
    ///
    /// Errors: those of [`KMeans::fit`] before its Lloyd iterations.
    pub fn initial_centroids(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<Vec<f32>> {
        let (n, d) = x.shape();
        self.validate(n, d)?;
        let x = x.on_gpu(gpu)?;
        let rows = self.on_metric(gpu, &x)?;
        let ws = Workspace::weighted(gpu, &rows, self.k, None)?;
        seeding::resident_start(&ws, self, &mut self.generator())
    }

    /// The seeds of the k-means++ initialisation and the rows they were taken from:
    /// scikit-learn's `kmeans_plusplus(X, n_clusters, sample_weight, random_state)`.
    ///
    /// Greedy k-means++ (`2 + ln K` D²-sampled candidates per step, the one lowering the
    /// potential most kept) on the device, from `self.seed`, with optional sample weights
    /// (one per row, as for [`KMeans::fit_weighted`]). The seeds are those
    /// [`KMeans::initial_centroids`] gives with `KMeansInit::KMeansPlusPlus` and the same
    /// seed; with the cosine metric they are rows of the normalised data. Returns (K x D
    /// seeds row-major, the K row indices, distinct unless rows repeat).
    ///
    /// Errors: those of [`KMeans::fit`] before its Lloyd iterations, and bad weights.
    pub fn kmeans_plusplus(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
        sample_weight: Option<&[f32]>,
    ) -> Result<(Vec<f32>, Vec<usize>)> {
        let (n, d) = x.shape();
        self.validate(n, d)?;
        if let Some(w) = sample_weight {
            check_sample_weights(w, n)?;
        }
        if let Some(c) = Centred::of_input(x, None)? {
            // The seeds are rows: the centred ones moved back (f32, as every seed).
            let (seeds, rows) = self.kmeans_plusplus(gpu, &c, sample_weight)?;
            let mut seeds: Vec<f64> = seeds.iter().map(|&v| v as f64).collect();
            crate::origin::translate_rows(&mut seeds, c.origin());
            return Ok((seeds.iter().map(|&v| v as f32).collect(), rows));
        }
        let x = x.on_gpu(gpu)?;
        let rows = self.on_metric(gpu, &x)?;
        let rows_and_weights = (self.k, sample_weight);
        let mut rng = self.generator();
        seeding::kmeans_plus_plus(
            gpu,
            &rows,
            rows_and_weights,
            &mut rng,
            self.n_local_trials(),
        )
    }

    /// The generator a fit draws every restart's start from, seeded with `seed`.
    fn generator(&self) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.seed)
    }

    /// [`KMeans::fit`] (`weights`: [`KMeans::fit_weighted`]) drawing its starts from `rng`
    /// rather than from `seed`: the K-Means start of a Gaussian mixture continues the
    /// mixture's generator, as scikit-learn's does (so a mixture seeded s starts from the
    /// labels of `KMeans::new(k).seed(s)`).
    pub(crate) fn fit_continuing(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
        weights: Option<&[f32]>,
        rng: &mut ChaCha8Rng,
    ) -> Result<KMeansModel> {
        self.route(gpu, Rows::of(gpu, x)?, weights, rng)
    }

    /// [`KMeans::fit_source`] drawing its starts from `rng` (see [`KMeans::fit_continuing`]).
    pub(crate) fn fit_source_continuing(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        weights: Option<&[f32]>,
        rng: &mut ChaCha8Rng,
    ) -> Result<KMeansModel> {
        self.route(gpu, Rows::Host(source), weights, rng)
    }

    /// The one route of a Lloyd fit: the parameters and the shape validated once; the rows
    /// multiplied by the power of two that brings them into f32's comfortable range
    /// ([`in_f32_range`] on the device, [`Scaled`] for a source; not on the unit sphere),
    /// the model brought back to the caller's units ([`KMeans::at_scale`]); then device rows
    /// fitted where they are, host rows where `stream::device_rows` puts them.
    ///
    /// Errors: those of [`KMeans::fit`].
    fn route<S: RowSource + ?Sized>(
        &self,
        gpu: &Gpu,
        rows: Rows<'_, S>,
        weights: Option<&[f32]>,
        rng: &mut ChaCha8Rng,
    ) -> Result<KMeansModel> {
        let (n, d) = rows.shape()?;
        self.validate(n, d)?;
        let spherical = self.metric.is_spherical();
        match rows {
            Rows::Device(x) if spherical => self.fit_resident(gpu, &x, weights, rng),
            Rows::Device(x) => {
                let (x, scale) = in_f32_range(gpu, &x)?;
                self.at_scale(scale, |p| p.fit_resident(gpu, &x, weights, rng))
            }
            Rows::Host(source) if spherical => self.fit_host(gpu, source, weights, rng),
            Rows::Host(source) => {
                let scaled = Scaled::of(source)?;
                self.at_scale(scaled.scale(), |p| p.fit_host(gpu, &scaled, weights, rng))
            }
        }
    }

    /// `fit` run on data multiplied by `scale` (a power of two, from [`in_f32_range`] or
    /// [`Scaled`]), with given centroids multiplied alike, and its model brought back to the
    /// caller's units: centroids / scale, inertia / scale². The labels, iterations and
    /// convergence do not change (`tol` is relative to the data's variance), so data
    /// scaled by 1e-30 or 1e20 give the model of unscaled data.
    fn at_scale(
        &self,
        scale: f32,
        fit: impl FnOnce(&KMeans) -> Result<KMeansModel>,
    ) -> Result<KMeansModel> {
        if scale == 1.0 {
            return fit(self);
        }
        let mut scaled = self.clone();
        at_scale_of(&mut scaled.init, &mut scaled.on_iteration, scale);
        let mut model = fit(&scaled)?.rescaled(1.0 / scale);
        model.params = KMeans {
            on_iteration: None,
            ..self.clone()
        };
        Ok(model)
    }

    /// Host rows of a validated shape, in f32's comfortable range (or on the unit sphere):
    /// resident when they fit the budget, else streamed (decided once, by
    /// `stream::device_rows`).
    fn fit_host(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        weights: Option<&[f32]>,
        rng: &mut ChaCha8Rng,
    ) -> Result<KMeansModel> {
        let (_, d) = source.shape();
        let rows = device_rows(gpu, source, self.k, weights.is_some())?;
        if let DeviceRows::Resident(x) = &rows {
            return self.fit_resident(gpu, x, weights, rng);
        }
        self.require_euclidean("a streamed fit (rows over the device-memory budget)")?;
        let mut data = Streamed::new(gpu, source, rows, self.k, weights)?;
        let best = fit_restarts(&self.settings(), &mut data, rng, |data, rng| {
            data.start(self, rng)
        })?;
        Ok(self.model(d, best))
    }

    /// The fit on rows that are all on the device.
    fn fit_resident(
        &self,
        gpu: &Gpu,
        x: &GpuMatrix,
        weights: Option<&[f32]>,
        rng: &mut ChaCha8Rng,
    ) -> Result<KMeansModel> {
        let rows = self.on_metric(gpu, x)?;
        let mut ws = Workspace::weighted(gpu, &rows, self.k, weights)?;
        let best = fit_restarts(&self.settings(), &mut ws, rng, |ws, rng| {
            seeding::resident_start(ws, self, rng)
        })?;
        Ok(self.model(x.n_features(), best))
    }

    /// One statistics pass of host rows (resident or streamed).
    fn pass_stats_of(
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        centroids: &[f32],
        weights: Option<&[f32]>,
    ) -> Result<KMeansStats> {
        let (_, d) = check_shape(source)?;
        let k = KMeansStats::empty(centroids, d)?.k();
        crate::data::check_finite(centroids, d)?;
        let mut stats = Streamed::open(gpu, source, k, weights)?.stats(centroids)?;
        stats.changed = 0;
        Ok(stats)
    }

    /// The rows the metric clusters: `x`, or its rows normalised to unit length for the
    /// cosine metric.
    fn on_metric<'x>(&self, gpu: &Gpu, x: &'x GpuMatrix) -> Result<Cow<'x, GpuMatrix>> {
        if self.metric.is_spherical() {
            return Ok(Cow::Owned(normalize_rows(gpu, x)?));
        }
        Ok(Cow::Borrowed(x))
    }

    /// What the Lloyd loop needs of these parameters.
    fn settings(&self) -> Settings<'_> {
        Settings {
            runs: self.init.runs(self.n_init),
            max_iter: self.max_iter,
            tol: self.tol,
            fixed: self.fixed_iterations,
            spherical: self.metric.is_spherical(),
            objective_scale: self.metric.objective_scale(),
            on_iteration: self.on_iteration.as_ref(),
        }
    }

    /// The model of the restart the loop kept.
    fn model(&self, d: usize, best: Best) -> KMeansModel {
        let Best {
            run,
            labels,
            init_seconds,
        } = best;
        KMeansModel {
            params: KMeans {
                on_iteration: None,
                ..self.clone()
            },
            n_features: d,
            centroids: run.centroids,
            labels,
            inertia: run.inertia,
            n_iter: run.n_iter,
            converged: run.converged,
            inertia_history: run.history,
            init_seconds: Elapsed(init_seconds),
            origin: None,
        }
    }
}

impl MiniBatchKMeans {
    /// Fits on a [`RowSource`] (rows are drawn at random: a host [`Matrix`](crate::Matrix)
    /// or an `io::NpyRows` file serve them directly; a source without random access reads
    /// one pass per batch).
    ///
    /// Errors: invalid parameters, the source's and the GPU's errors.
    pub fn fit(&self, gpu: &Gpu, source: &(impl RowSource + ?Sized)) -> Result<KMeansModel> {
        if let Some(c) = Centred::of_source(source, None)? {
            return c.fit(self, |p, c| p.fit(gpu, c));
        }
        self.fit_in_range(gpu, source, None)
    }

    /// [`MiniBatchKMeans::fit`] with a weight per row (scikit-learn's `sample_weight`):
    /// batches carry their rows' weights, the running counts are weight sums, seeding and
    /// reassignment draw ∝ w, the inertia is weighted.
    ///
    /// Errors: weights that are not one per row, finite and non-negative, or all zero, and
    /// those of [`MiniBatchKMeans::fit`].
    pub fn fit_weighted(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        sample_weight: &[f32],
    ) -> Result<KMeansModel> {
        let (n, _) = check_shape(source)?;
        check_sample_weights(sample_weight, n)?;
        if let Some(c) = Centred::of_source(source, None)? {
            return c.fit(self, |p, c| p.fit_weighted(gpu, c, sample_weight));
        }
        let (w, scale) = weights_in_range(sample_weight);
        let model = self.fit_in_range(gpu, source, Some(&w))?;
        Ok(model.reweighted(1.0 / scale as f64))
    }

    /// The mini-batch fit of `source` multiplied by the power of two that brings it into
    /// f32's comfortable range ([`Scaled`]), its model back in the data's units (as
    /// [`KMeans::at_scale`] does for Lloyd's).
    fn fit_in_range(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        weights: Option<&[f32]>,
    ) -> Result<KMeansModel> {
        check_shape(source)?;
        let scaled = Scaled::of(source)?;
        let scale = scaled.scale();
        if scale == 1.0 {
            return super::minibatch::fit(self, gpu, source, weights);
        }
        let mut params = self.clone();
        at_scale_of(&mut params.init, &mut params.on_iteration, scale);
        let mut model =
            super::minibatch::fit(&params, gpu, &scaled, weights)?.rescaled(1.0 / scale);
        model.params.init = self.init.clone();
        Ok(model)
    }

    /// A mini-batch fit fed batch by batch ([`MiniBatchKMeansFit::partial_fit`]), as
    /// scikit-learn's `partial_fit`.
    pub fn partial(&self) -> MiniBatchKMeansFit {
        MiniBatchKMeansFit::new(self.clone())
    }
}

/// Where a fit's rows are: on the device (used in place, or uploaded by the caller's
/// [`GpuInput`]), or on the host as a source whose place the fit decides.
enum Rows<'a, S: RowSource + ?Sized> {
    /// Device rows.
    Device(Cow<'a, GpuMatrix>),
    /// Host rows.
    Host(&'a S),
}

impl<'a> Rows<'a, dyn RowSource + 'a> {
    /// The rows of `x`: its host source when it has one, else its device matrix.
    fn of(gpu: &Gpu, x: &'a impl GpuInput) -> Result<Self> {
        Ok(match x.as_source() {
            Some(source) => Rows::Host(source),
            None => Rows::Device(x.on_gpu(gpu)?),
        })
    }
}

impl<S: RowSource + ?Sized> Rows<'_, S> {
    /// Rows and features, neither zero.
    fn shape(&self) -> Result<(usize, usize)> {
        match self {
            Rows::Device(x) => Ok((x.n_rows(), x.n_features())),
            Rows::Host(source) => check_shape(*source),
        }
    }
}

/// The start and the progress callback of a fit run on data multiplied by `scale`: given
/// centroids multiplied alike, and the callback seeing inertias in the data's units.
fn at_scale_of(init: &mut KMeansInit, on_iteration: &mut Option<OnIteration>, scale: f32) {
    if let KMeansInit::Centroids(c) = init {
        c.iter_mut().for_each(|v| *v *= scale as f64);
    }
    let to_caller = 1.0 / (scale as f64 * scale as f64);
    *on_iteration = on_iteration
        .as_ref()
        .map(|f| f.in_caller_units(to_caller, 0.0));
}
