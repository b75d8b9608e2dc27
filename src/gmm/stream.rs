//! EM over a [`RowSource`]: data that need not fit on the device.
//!
//! The resident fit keeps the N x K responsibilities on the device between the E-step and
//! the M-step; a streamed fit cannot, so it needs statistics that merge. Every EM iteration
//! is **one pass** over the source; for each piece of rows on the device, the same kernels
//! as the resident fit run:
//!
//! 1. the E-step for the current parameters θ, fused with Σ r and Σ r (x − sₖ) about the
//!    E-step means sₖ (as the resident fit), and the per-block sums of log p;
//! 2. on the host, the piece's component means mₖ = sₖ + Σ r (x − sₖ) / Σ r (sₖ where the
//!    piece gives a component no weight);
//! 3. with the responsibilities still on the device, the scatter Σ r (x − mₖ)(x − mₖ)ᵀ
//!    about the piece's own means (its diagonal for Diag and Spherical).
//!
//! The piece's [`GmmStats`] merge into the pass's by Chan's pairwise formulas (module docs of
//! `stats`), and the M-step takes the merged statistics. The model is the resident one
//! within f32 rounding: the sums run in the same kernels, only cut at other row boundaries,
//! and the merge is exact in f64. Each piece runs two device submissions (the second needs
//! the piece's means), as the resident fit does for the whole data.
//!
//! **Initialisation.** `Given` parameters are used as they are, and `Random` draws the same
//! ChaCha8 stream row by row, so both start exactly where the resident fit starts (up to
//! rounding in the first M-step). `KMeans` runs [`KMeans::fit_source`] with the same seed:
//! when K-Means' smaller per-row needs let its rows stay on the device, that is the
//! resident K-Means fit; when it streams too, its k-means++ seeds come from a sample (see
//! `kmeans::stream`), so the start can differ from a resident fit's. `KMeansPlusPlus`
//! seeds on a uniform sample of `max(10 000, 256·K)` rows (at most a piece; all rows when
//! they fit in one), then labels every row by its nearest seed in a pass. The initial
//! M-step is a pass like the iterations', from the one-hot or random responsibilities.
//!
//! Training labels come from a last pass with the returned parameters, kept on the host
//! (4 bytes a row).

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::fit::{check_lower_bound, fit_restarts, given_parameters, EmData};
use super::math::covariance_len;
use super::stats::{full, GmmStats};
use super::workspace::{sum_log_density, Parameters, Workspace};
use super::{CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit};
use crate::data::Matrix;
use crate::error::{Error, Result};
use crate::gpu::stream::DeviceRows;
use crate::gpu::{Gpu, GpuMatrix};
use crate::kmeans::{weighted_plus_plus_seeds, KMeans, KMeansModel};
use crate::source::{check_shape, RowSource};

/// Device bytes per row besides the row: K responsibilities, log p and the label, and
/// (rounded up) its share of the per-block log p sums.
fn row_extra_bytes(k: usize) -> u64 {
    4 * k as u64 + 9
}

/// Device bytes a fit needs besides the rows: per-block M-step sums (at most 64 MiB, see
/// the workspace), their totals and the parameters.
fn fixed_bytes(n: usize, d: usize, k: usize, covariance_type: CovarianceType) -> u64 {
    let (k64, d64) = (k as u64, d as u64);
    let first = k64 * (d64 + 1);
    let outputs = if full(covariance_type) {
        (k64.saturating_mul(d64).saturating_mul(d64)).max(first)
    } else {
        first
    };
    let partials = (n.div_ceil(256) as u64)
        .saturating_mul(outputs.saturating_mul(4))
        .min(64 << 20);
    let covariances = covariance_len(covariance_type, k, d).unwrap_or(usize::MAX) as u64;
    let parameters = (3 * k64)
        .saturating_mul(d64)
        .saturating_add(covariances)
        .saturating_add(k64);
    partials
        .saturating_add(outputs.saturating_mul(4))
        .saturating_add(parameters.saturating_mul(4))
        .saturating_add(1024)
}

/// True when host data of `n` x `d` must stream to stay within the memory budget.
pub(super) fn must_stream(gpu: &Gpu, n: usize, d: usize, params: &GaussianMixture) -> bool {
    let (k, t) = (params.k, params.covariance_type);
    let need = (n as u64)
        .saturating_mul(d as u64 * 4 + row_extra_bytes(k))
        .saturating_add(fixed_bytes(n, d, k, t));
    need > gpu.memory_budget()
}

/// How the rows of `source` live on the device for a mixture of K components.
fn device_rows<'s, S: RowSource + ?Sized>(
    gpu: &Gpu,
    source: &'s S,
    k: usize,
    covariance_type: CovarianceType,
) -> Result<DeviceRows<'s, S>> {
    let (n, d) = check_shape(source)?;
    let fixed = fixed_bytes(n, d, k, covariance_type);
    DeviceRows::new(gpu, source, row_extra_bytes(k), fixed)
}

/// The rows on the device (streamed, or resident for [`GaussianMixture::pass_stats`]) and
/// one workspace sized for a piece.
struct Streamed<'a, S: RowSource + ?Sized> {
    gpu: &'a Gpu,
    source: &'a S,
    rows: DeviceRows<'a, S>,
    ws: Workspace<'a>,
}

impl<'a, S: RowSource + ?Sized> Streamed<'a, S> {
    fn new(
        gpu: &'a Gpu,
        source: &'a S,
        rows: DeviceRows<'a, S>,
        k: usize,
        t: CovarianceType,
        weights: Option<&'a [f32]>,
    ) -> Result<Self> {
        let mut ws = Workspace::new(gpu, &rows.capacity_view(), k, t, true)?;
        if let Some(w) = weights {
            ws.weigh(w);
        }
        Ok(Self {
            gpu,
            source,
            rows,
            ws,
        })
    }

    /// One pass: each piece's statistics from its first moments about `total.means` (after
    /// `prepare` left the piece's responsibilities on the device, or `p`'s E-step computed
    /// them), merged into `total`.
    fn pass(
        &mut self,
        mut total: GmmStats,
        p: Option<&Parameters>,
        mut prepare: impl FnMut(&Workspace<'_>, usize) -> Result<()>,
    ) -> Result<GmmStats> {
        let Self { gpu, rows, ws, .. } = self;
        rows.pass(gpu, |piece, first_row| {
            ws.use_piece(piece);
            ws.weigh_piece(first_row);
            prepare(ws, first_row)?;
            let (first, log_likelihood) = match p {
                Some(p) => {
                    let (blocks, first) = ws.estep_and_first_sums(p)?;
                    (first, sum_log_density(&blocks))
                }
                None => {
                    ws.weigh_initial()?;
                    (ws.first_moments(&total.means)?, 0.0)
                }
            };
            let piece_stats = piece_stats(ws, &total, &first, log_likelihood)?;
            total.merge(&piece_stats)
        })?;
        Ok(total)
    }

    /// The statistics of the E-step for `p` over all rows.
    fn estep_stats(&mut self, p: &Parameters) -> Result<GmmStats> {
        let empty = GmmStats::empty(self.ws.covariance_type, self.ws.d, p);
        self.pass(empty, Some(p), |_, _| Ok(()))
    }

    /// The initial M-step: the parameters of the responsibilities `prepare` leaves on the
    /// device for each piece, about the first row (as the resident fit).
    fn responsibility_parameters(
        &mut self,
        reg_covar: f64,
        prepare: impl FnMut(&Workspace<'_>, usize) -> Result<()>,
    ) -> Result<Parameters> {
        let (k, d) = (self.ws.k, self.ws.d);
        let row = self.source.gather(&[0])?;
        let shift = (0..k).flat_map(|_| row.iter().map(|&v| v as f64)).collect();
        let empty = GmmStats::about(self.ws.covariance_type, d, shift, Vec::new(), Vec::new());
        self.pass(empty, None, prepare)?.next(reg_covar)
    }

    /// k-means++ seeds drawn from a uniform sample of the rows (module docs).
    fn sampled_seeds(&self, k: usize, rng: &mut ChaCha8Rng) -> Result<Vec<f32>> {
        let (n, d) = self.source.shape();
        let m = crate::kmeans::plus_plus_sample_size(n, self.rows.capacity(), k);
        let mut idx = rand::seq::index::sample(rng, n, m).into_vec();
        idx.sort_unstable();
        let rows = self.source.gather(&idx)?;
        let weights: Option<Vec<f32>> = self
            .ws
            .host_weights()
            .map(|w| idx.iter().map(|&i| w[i]).collect());
        let sample = GpuMatrix::upload(self.gpu, &Matrix::new(&rows, d)?)?;
        weighted_plus_plus_seeds(self.gpu, &sample, k, weights.as_deref(), rng)
    }
}

/// The statistics of the piece in `ws`, from its first moments `first` (K x (D + 1)) about
/// `total.means`: its component means on the host, then the scatter about them on the
/// device (module docs).
pub(super) fn piece_stats(
    ws: &Workspace<'_>,
    total: &GmmStats,
    first: &[f64],
    log_likelihood: f64,
) -> Result<GmmStats> {
    let (k, d, t) = (ws.k, ws.d, ws.covariance_type);
    let (weights, factors) = (total.weights.clone(), total.precisions_cholesky.clone());
    let mut piece = GmmStats::about(t, d, total.means.clone(), weights, factors);
    piece.n_rows = ws.x.n_rows() as u64;
    piece.weight_total = ws.weight_total();
    piece.log_likelihood = log_likelihood;
    for c in 0..k {
        let n = first[c * (d + 1) + d].max(0.0);
        piece.resp_sums[c] = n;
        if n > 0.0 {
            for j in 0..d {
                piece.component_means[c * d + j] += first[c * (d + 1) + j] / n;
            }
        }
    }
    let second = ws.second_moments(&piece.component_means)?;
    if full(t) {
        // The kernel writes the upper triangle; the statistics hold the symmetric matrix.
        for c in 0..k {
            for i in 0..d {
                for j in 0..d {
                    let (a, b) = if j >= i { (i, j) } else { (j, i) };
                    piece.scatter[c * d * d + i * d + j] = second[c * d * d + a * d + b];
                }
            }
        }
    } else {
        for c in 0..k {
            for j in 0..d {
                piece.scatter[c * d + j] = second[c * (d + 1) + j];
            }
        }
    }
    Ok(piece)
}

impl<S: RowSource + ?Sized> EmData for Streamed<'_, S> {
    fn initial_parameters(
        &mut self,
        params: &GaussianMixture,
        rng: &mut ChaCha8Rng,
    ) -> Result<Parameters> {
        let (k, d) = (params.k, self.ws.d);
        let reg = params.reg_covar;
        match &params.init {
            GmmInit::KMeans => {
                let km = KMeans::new(k).n_init(1).seed(rng.random::<u64>());
                let km = match self.ws.host_weights() {
                    None => km.fit_source(self.gpu, self.source)?,
                    Some(w) => km.fit_source_weighted(self.gpu, self.source, w)?,
                };
                let labels = km.labels();
                self.responsibility_parameters(reg, |ws, first| {
                    ws.responsibilities_from_labels(&labels[first..first + ws.x.n_rows()])
                })
            }
            GmmInit::KMeansPlusPlus => {
                let seeds = KMeansModel::from_centroids(self.sampled_seeds(k, rng)?, d)?;
                let gpu = self.gpu;
                self.responsibility_parameters(reg, |ws, _| {
                    ws.responsibilities_from_labels(&seeds.predict(gpu, &ws.x)?)
                })
            }
            GmmInit::Random => self.responsibility_parameters(reg, |ws, _| {
                ws.random_responsibilities(rng);
                Ok(())
            }),
            GmmInit::Given(g) => given_parameters(g, params, d),
        }
    }

    fn step(&mut self, p: &Parameters, reg_covar: f64) -> Result<(f64, Parameters)> {
        let stats = self.estep_stats(p)?;
        let lower_bound = stats.mean_log_likelihood();
        check_lower_bound(lower_bound)?;
        Ok((lower_bound, stats.next(reg_covar)?))
    }

    fn labels(&mut self, p: &Parameters) -> Result<Vec<u32>> {
        let mut labels = Vec::with_capacity(self.source.shape().0);
        let Self { gpu, rows, ws, .. } = self;
        rows.pass(gpu, |piece, first_row| {
            ws.use_piece(piece);
            ws.weigh_piece(first_row);
            labels.extend(ws.labels(p)?);
            Ok(())
        })?;
        Ok(labels)
    }
}

impl GaussianMixture {
    /// Fits on a [`RowSource`]: a host [`Matrix`], [`RowChunks`](crate::source::RowChunks)
    /// or a memory-mapped `.npy` file (`io::NpyRows`), which need fit neither on the device
    /// nor in host memory.
    ///
    /// When the rows fit the device-memory budget ([`Gpu::set_memory_budget`]) next to the
    /// N x K responsibilities, they are uploaded once and the fit is that of
    /// [`GaussianMixture::fit`]; otherwise every EM iteration streams them through one
    /// buffer of at most 128 MiB, merging per-piece [`GmmStats`] (module docs of
    /// `gmm::stream`, which also say how the K-Means and k-means++ starts differ). The host
    /// keeps each row's label (4 bytes a row).
    ///
    /// Errors: those of [`GaussianMixture::fit`], and the source's ([`Error::Source`],
    /// [`Error::NonFinite`] with the global row).
    pub fn fit_source(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
    ) -> Result<GaussianMixtureModel> {
        self.fit_source_maybe_weighted(gpu, source, None)
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
        crate::data::check_sample_weights(sample_weight, n)?;
        self.fit_source_maybe_weighted(gpu, source, Some(sample_weight))
    }

    pub(super) fn fit_source_maybe_weighted(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        weights: Option<&[f32]>,
    ) -> Result<GaussianMixtureModel> {
        let (n, d) = check_shape(source)?;
        self.validate(n, d)?;
        let (k, t) = (self.k, self.covariance_type);
        let rows = device_rows(gpu, source, k, t)?;
        if let DeviceRows::Resident(x) = &rows {
            return self.fit_resident(gpu, x, weights);
        }
        let mut data = Streamed::new(gpu, source, rows, k, t, weights)?;
        fit_restarts(self, d, &mut data)
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
}
