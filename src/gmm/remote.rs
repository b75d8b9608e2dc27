//! Gaussian mixtures over partitions that live elsewhere (other processes or machines),
//! driven by the caller: the mixture counterpart of `kmeans::remote`.
//!
//! - On each worker a [`GmmPartition`] keeps one partition's rows on its device across EM
//!   iterations and answers [`GmmRequest`]s ([`GmmPartition::answer`]) with the same kernels
//!   and per-piece statistics as a streamed fit (module `stream`): the E-step for given
//!   parameters fused with the first moments, then the scatter about the partition's own
//!   component means, as [`GmmStats`].
//! - On the driver [`GaussianMixture::fit_remote`] runs the EM loop of
//!   [`GaussianMixture::fit`] (restarts, `tol` on the lower bound, the best run kept, the
//!   given overrides) and merges the partitions' statistics in f64, in partition order,
//!   by Chan's pairwise formulas; each EM iteration is one round of requests. The model
//!   equals a single-device fit of all rows from the same start within f32 rounding.
//!
//! Requests are pure (their replies depend on the request and the rows only), so an engine
//! may retry them or recompute a lost partition elsewhere. The driver receives statistics of
//! K x D (or K x D x D) values per partition and round, never a value per row: the model has
//! no training labels (each partition gives its own, [`GmmRequest::Labels`]).
//!
//! **Starts.** Given parameters are used as they are. `KMeans` runs
//! [`KMeans::fit_remote`](crate::KMeans::fit_remote) on the same partitions, drawing from
//! the mixture's own generator as the single-device start does (its k-means++ start on a
//! sample, module docs of `kmeans::remote`), `KMeansPlusPlus` seeds on a sample; both then
//! take one-hot responsibilities of each row's nearest centroid, as the single-device fit
//! does with its K-Means labels. `Random` draws each partition's responsibilities from its
//! own ChaCha8 stream (seeded once per restart from the fit's stream, numbered by the
//! partition), so it starts elsewhere than a single-device fit. The initial M-step is one
//! round like the iterations'. Weights, means or precisions given on their own
//! (`InitOverrides`) then replace those of the start, as in every fit (module `seeding`).

use std::borrow::Cow;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::em::{check_lower_bound, EmData, Parameters};
use super::math::covariance_len;
use super::passes::Fill;
use super::seeding::{given_parameters, override_start};
use super::stats::GmmStats;
use super::stream::piece_stats;
use super::workspace::{sum_log_density, Purpose, Workspace};
use super::{CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit};
use crate::data::Matrix;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, GpuMatrix};
use crate::kmeans::{remote_plus_plus_seeds, remote_rows, KMeans, KMeansModel, RemoteKMeans};

/// The parameters of a mixture as requests carry them: the E-step needs the precision
/// factors, which are sent rather than recomputed on every partition.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MixtureParameters {
    /// Covariance shape (the layout of `covariances` and `precisions_cholesky`).
    pub covariance_type: CovarianceType,
    /// Mixing weights πₖ (K).
    pub weights: Vec<f64>,
    /// Means, K x D row-major.
    pub means: Vec<f64>,
    /// Covariances in the layout of the type.
    pub covariances: Vec<f64>,
    /// Cholesky factors of the precisions, in the layout of
    /// [`GaussianMixtureModel::precisions_cholesky`].
    pub precisions_cholesky: Vec<f64>,
}

impl MixtureParameters {
    /// The parameters of a fitted (or built) model.
    pub fn of(model: &GaussianMixtureModel) -> Self {
        Self::from_parameters(model.covariance_type(), model.parameters())
    }

    fn from_parameters(covariance_type: CovarianceType, p: Parameters) -> Self {
        Self {
            covariance_type,
            weights: p.weights,
            means: p.means,
            covariances: p.covariances,
            precisions_cholesky: p.precisions_cholesky,
        }
    }

    /// K after checking the parts fit together for D features: K weights, K x D means,
    /// covariances and factors of the type's length, every value finite.
    fn check(&self, d: usize) -> Result<usize> {
        let k = self.weights.len();
        let len = covariance_len(self.covariance_type, k, d);
        let fits = k > 0
            && self.means.len() == k * d
            && Some(self.covariances.len()) == len
            && Some(self.precisions_cholesky.len()) == len;
        if !fits {
            return Err(Error::invalid(
                "parameters",
                format!("mixture parameters whose lengths do not fit K = {k}, D = {d} and {} covariances", self.covariance_type),
            ));
        }
        let finite = [
            &self.weights,
            &self.means,
            &self.covariances,
            &self.precisions_cholesky,
        ]
        .iter()
        .all(|v| v.iter().all(|x| x.is_finite()));
        if !finite {
            return Err(Error::invalid(
                "parameters",
                "mixture parameters that are not finite",
            ));
        }
        Ok(k)
    }

    fn parameters(&self) -> Parameters {
        Parameters {
            weights: self.weights.clone(),
            means: self.means.clone(),
            covariances: self.covariances.clone(),
            precisions_cholesky: self.precisions_cholesky.clone(),
        }
    }
}

/// Where a partition's initial responsibilities come from.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum GmmStart {
    /// One-hot responsibilities of each row's nearest centroid (K x D row-major).
    Nearest {
        /// The centroids.
        centroids: Vec<f32>,
    },
    /// Uniform random responsibilities normalised per row, drawn in row order from ChaCha8
    /// seeded with `seed` on stream `partition`.
    Random {
        /// Components K.
        k: usize,
        /// Seed of the streams (one per restart).
        seed: u64,
        /// This partition's position among the fit's partitions.
        partition: u32,
    },
}

/// What a driver asks of one partition ([`GmmPartition::answer`]).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum GmmRequest {
    /// The E-step statistics for these parameters: [`GmmReply::Stats`].
    EStep {
        /// The parameters of the E-step.
        parameters: MixtureParameters,
    },
    /// The statistics of initial responsibilities, first moments about `shift` (K x D):
    /// [`GmmReply::Stats`].
    Start {
        /// The responsibilities.
        start: GmmStart,
        /// Covariance shape of the mixture to fit.
        covariance_type: CovarianceType,
        /// The shifts of the first moments, K x D (the same on every partition).
        shift: Vec<f64>,
    },
    /// The most probable component of every row: [`GmmReply::Labels`].
    Labels {
        /// The parameters.
        parameters: MixtureParameters,
    },
}

/// A partition's answer to a [`GmmRequest`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum GmmReply {
    /// Statistics of the partition's rows.
    Stats(GmmStats),
    /// One label per row.
    Labels(Vec<u32>),
}

/// One partition's rows on a device, kept across EM iterations (the worker side of
/// [`GaussianMixture::fit_remote`]; module docs). The device workspace is kept between
/// requests of the same K and covariance type.
pub struct GmmPartition<'g> {
    gpu: &'g Gpu,
    x: GpuMatrix,
    ws: Option<Workspace<'g>>,
}

impl<'g> GmmPartition<'g> {
    /// The partition whose rows are `x`, on `gpu` (where `x` lives).
    pub fn new(gpu: &'g Gpu, x: GpuMatrix) -> Self {
        Self { gpu, x, ws: None }
    }

    /// Uploads host rows (validated) as a partition.
    ///
    /// Errors: those of [`GpuMatrix::upload`].
    pub fn upload(gpu: &'g Gpu, rows: &Matrix<'_>) -> Result<Self> {
        Ok(Self::new(gpu, GpuMatrix::upload(gpu, rows)?))
    }

    /// Rows and features of the partition.
    pub fn shape(&self) -> (usize, usize) {
        (self.x.n_rows(), self.x.n_features())
    }

    fn workspace(&mut self, k: usize, t: CovarianceType) -> Result<&Workspace<'g>> {
        let fits = self
            .ws
            .as_ref()
            .is_some_and(|ws| ws.k == k && ws.covariance_type == t);
        if !fits {
            self.ws = None;
            self.ws = Some(Workspace::new(self.gpu, &self.x, k, t, Purpose::Fit)?);
        }
        Ok(self.ws.as_ref().expect("made above"))
    }

    /// Answers one request (module docs); the reply depends on the request and the rows
    /// only.
    ///
    /// Errors: parameters whose parts do not fit the partition's D, centroids that are not
    /// whole finite rows, a K of zero, and the GPU's errors.
    pub fn answer(&mut self, request: &GmmRequest) -> Result<GmmReply> {
        let d = self.x.n_features();
        match request {
            GmmRequest::EStep { parameters } => {
                let k = parameters.check(d)?;
                let t = parameters.covariance_type;
                let p = parameters.parameters();
                let ws = self.workspace(k, t)?;
                let empty = GmmStats::empty(t, d, &p);
                let (blocks, moments) = ws.estep_and_moments(&p)?;
                let log_likelihood = sum_log_density(&blocks);
                let fill = (&Fill::EStep, true);
                let stats = piece_stats(ws, &empty, &moments, log_likelihood, fill)?;
                Ok(GmmReply::Stats(stats))
            }
            GmmRequest::Start {
                start,
                covariance_type,
                shift,
            } => {
                let k = match start {
                    GmmStart::Nearest { centroids } => centroid_count(centroids, d)?,
                    GmmStart::Random { k, .. } => *k,
                };
                Error::require_count("k", k)?;
                if shift.len() != k * d || !shift.iter().all(|v| v.is_finite()) {
                    return Err(Error::invalid(
                        "shift",
                        format!("expected K x D = {k} x {d} finite values"),
                    ));
                }
                let gpu = self.gpu;
                let ws = self.workspace(k, *covariance_type)?;
                let fill = match start {
                    GmmStart::Nearest { centroids } => {
                        let model = KMeansModel::from_centroids(centroids.clone(), d)?;
                        Fill::Labels(Cow::Owned(model.predict(gpu, &ws.x)?))
                    }
                    GmmStart::Random {
                        seed, partition, ..
                    } => {
                        let mut rng = ChaCha8Rng::seed_from_u64(*seed);
                        rng.set_stream(*partition as u64);
                        Fill::Random(Box::new(rng))
                    }
                };
                let (first, _) = ws.first_moments(shift, &fill)?;
                let about =
                    GmmStats::about(*covariance_type, d, shift.clone(), Vec::new(), Vec::new());
                Ok(GmmReply::Stats(piece_stats(
                    ws,
                    &about,
                    &first,
                    0.0,
                    (&fill, true),
                )?))
            }
            GmmRequest::Labels { parameters } => {
                let k = parameters.check(d)?;
                let ws = self.workspace(k, parameters.covariance_type)?;
                Ok(GmmReply::Labels(ws.labels(&parameters.parameters())?))
            }
        }
    }
}

/// K of row-major centroids of `d` features, after checking they are whole finite rows.
fn centroid_count(centroids: &[f32], d: usize) -> Result<usize> {
    let k = crate::kmeans::KMeansStats::empty(centroids, d)?.k();
    crate::data::check_finite(centroids, d)?;
    Ok(k)
}

/// The driver's bridge to remote partitions for mixtures: the K-Means bridge (for the
/// K-Means start and row gathering) plus the mixture requests.
pub trait RemoteGaussianMixture: RemoteKMeans {
    /// Answers of the partitions named in `requests` (partition index, request), in the
    /// same order. Requests are pure: retrying them is safe.
    fn run_mixture(&mut self, requests: Vec<(usize, GmmRequest)>) -> Result<Vec<GmmReply>>;
}

/// The remote partitions as the EM loop sees them (the data of
/// [`GaussianMixture::fit_remote`]).
pub(super) struct Driven<'p, R: RemoteGaussianMixture + ?Sized> {
    remote: &'p mut R,
    sizes: Vec<usize>,
    d: usize,
    covariance_type: CovarianceType,
}

fn mismatch(what: &str) -> Error {
    Error::Source {
        reason: format!("a remote partition answered {what}"),
    }
}

impl<'p, R: RemoteGaussianMixture + ?Sized> Driven<'p, R> {
    /// The partitions `remote` names, numbered in order, for a mixture of `covariance_type`.
    ///
    /// Errors: no rows or no features ([`Error::EmptyData`]).
    pub(super) fn open(remote: &'p mut R, covariance_type: CovarianceType) -> Result<Self> {
        let (sizes, d) = remote.partition_shapes();
        let n: usize = sizes.iter().sum();
        if n == 0 || d == 0 {
            return Err(Error::EmptyData {
                what: "partitions",
                missing: if d == 0 { "columns" } else { "rows" },
            });
        }
        Ok(Self {
            remote,
            sizes,
            d,
            covariance_type,
        })
    }

    /// Rows and features of all partitions.
    pub(super) fn shape(&self) -> (usize, usize) {
        (self.sizes.iter().sum(), self.d)
    }

    /// The start of one restart (module docs), with the parts given on their own in place.
    /// `KMeans` continues the mixture's generator, as the single-device fit does.
    pub(super) fn start(
        &mut self,
        params: &GaussianMixture,
        rng: &mut ChaCha8Rng,
    ) -> Result<Parameters> {
        let (k, d, reg) = (params.k, self.d, params.reg_covar);
        let centroids = match &params.init {
            GmmInit::Given(g) => {
                return override_start(params, given_parameters(g, params, d)?, d);
            }
            GmmInit::Random => {
                let seed = rng.random::<u64>();
                let start = self.start_parameters(
                    |p| GmmStart::Random {
                        k,
                        seed,
                        partition: p as u32,
                    },
                    k,
                    reg,
                )?;
                return override_start(params, start, d);
            }
            GmmInit::KMeans => {
                let km = KMeans::new(k).n_init(1);
                let km = km.fit_remote_continuing(self.remote, rng)?;
                km.centroids().to_vec()
            }
            GmmInit::KMeansPlusPlus => remote_plus_plus_seeds(self.remote, k, rng)?,
        };
        let start = self.start_parameters(
            |_| GmmStart::Nearest {
                centroids: centroids.clone(),
            },
            k,
            reg,
        )?;
        override_start(params, start, d)
    }

    /// `request` sent to every partition, the replies in partition order.
    fn broadcast(&mut self, request: impl Fn(usize) -> GmmRequest) -> Result<Vec<GmmReply>> {
        let n_parts = self.sizes.len();
        let replies = self
            .remote
            .run_mixture((0..n_parts).map(|p| (p, request(p))).collect())?;
        if replies.len() != n_parts {
            return Err(mismatch(&format!(
                "{} replies to {n_parts} requests",
                replies.len()
            )));
        }
        Ok(replies)
    }

    /// The partitions' statistics merged into `total`, in partition order.
    fn merged(
        &mut self,
        mut total: GmmStats,
        request: impl Fn(usize) -> GmmRequest,
    ) -> Result<GmmStats> {
        for reply in self.broadcast(request)? {
            match reply {
                GmmReply::Stats(s) => total.merge(&s)?,
                GmmReply::Labels(_) => return Err(mismatch("labels to a statistics request")),
            }
        }
        Ok(total)
    }

    /// The initial M-step of responsibilities from `start`, about the first row.
    fn start_parameters(
        &mut self,
        start: impl Fn(usize) -> GmmStart,
        k: usize,
        reg_covar: f64,
    ) -> Result<Parameters> {
        let (d, t) = (self.d, self.covariance_type);
        let row = remote_rows(self.remote, &[0])?;
        let shift: Vec<f64> = (0..k).flat_map(|_| row.iter().map(|&v| v as f64)).collect();
        let about = GmmStats::about(t, d, shift.clone(), Vec::new(), Vec::new());
        let stats = self.merged(about, |p| GmmRequest::Start {
            start: start(p),
            covariance_type: t,
            shift: shift.clone(),
        })?;
        stats.next(reg_covar)
    }
}

impl<R: RemoteGaussianMixture + ?Sized> EmData for Driven<'_, R> {
    fn step(&mut self, p: &Parameters, reg_covar: f64) -> Result<(f64, Parameters)> {
        let (d, t) = (self.d, self.covariance_type);
        let parameters = MixtureParameters::from_parameters(t, p.clone());
        let stats = self.merged(GmmStats::empty(t, d, p), |_| GmmRequest::EStep {
            parameters: parameters.clone(),
        })?;
        let lower_bound = stats.mean_log_likelihood();
        check_lower_bound(lower_bound)?;
        Ok((lower_bound, stats.next(reg_covar)?))
    }

    /// None: the labels stay with the partitions (ask each for [`GmmRequest::Labels`], or
    /// predict), so the driver's memory does not grow with the rows.
    fn labels(&mut self, _p: &Parameters) -> Result<Vec<u32>> {
        Ok(Vec::new())
    }

    fn n_rows(&self) -> Option<usize> {
        Some(self.shape().0)
    }
}
