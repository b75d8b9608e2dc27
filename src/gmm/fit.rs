//! The EM loop on the device: starting parameters of each initialisation, the M-step from
//! the moment sums, E- and M-steps until the lower bound settles, restarts (algorithm in the
//! parent module).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::math::{covariances_from_precisions, precision_cholesky_quoting};
use super::workspace::{Parameters, Run, Workspace};
use super::{CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, GpuInput};
use crate::kernels::rows;

impl GaussianMixture {
    /// Fits a mixture to host or device data by EM (module docs), `n_init` times, keeping
    /// the highest final lower bound.
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
        let xg = x.on_gpu(gpu)?;
        let ws = Workspace::new(gpu, &xg, self.k, self.covariance_type, true)?;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let runs = match self.init {
            GmmInit::Given(_) => 1,
            _ => self.n_init,
        };
        let mut best: Option<Run> = None;
        for _ in 0..runs {
            let start = ws.initial_parameters(self, &mut rng)?;
            let run = ws.em(start, self)?;
            // Strictly higher, so that among equal runs the earliest wins (as the reference).
            if best
                .as_ref()
                .is_none_or(|b| run.lower_bound > b.lower_bound)
            {
                best = Some(run);
            }
        }
        let run = best.expect("at least one initialisation ran");
        // The final E-step: labels that agree with the returned parameters.
        let labels = ws.labels(&run.parameters)?;
        let p = run.parameters;
        Ok(GaussianMixtureModel {
            params: self.clone(),
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
        let nk: Vec<f64> = (0..k)
            .map(|c| first[c * (d + 1) + d].max(0.0) + 10.0 * f64::EPSILON)
            .collect();
        let total: f64 = nk.iter().sum();
        let weights: Vec<f64> = nk.iter().map(|v| v / total).collect();
        let means: Vec<f64> = (0..k * d)
            .map(|e| {
                let (c, j) = (e / d, e % d);
                shift[e] + first[c * (d + 1) + j] / nk[c]
            })
            .collect();
        let second = self.second_moments(&means)?;
        let covariances = match self.covariance_type {
            CovarianceType::Full | CovarianceType::Tied => {
                // Mirror the upper triangle the kernel wrote.
                let scatter = |c: usize, i: usize, j: usize| {
                    let (a, b) = if j >= i { (i, j) } else { (j, i) };
                    second[c * d * d + a * d + b]
                };
                if self.covariance_type == CovarianceType::Full {
                    let mut cov = Vec::with_capacity(k * d * d);
                    for (c, n) in nk.iter().enumerate() {
                        for i in 0..d {
                            for j in 0..d {
                                let reg = if i == j { reg_covar } else { 0.0 };
                                cov.push(scatter(c, i, j) / n + reg);
                            }
                        }
                    }
                    cov
                } else {
                    let mut cov = Vec::with_capacity(d * d);
                    for i in 0..d {
                        for j in 0..d {
                            let s: f64 = (0..k).map(|c| scatter(c, i, j)).sum();
                            let reg = if i == j { reg_covar } else { 0.0 };
                            cov.push(s / total + reg);
                        }
                    }
                    cov
                }
            }
            CovarianceType::Diag | CovarianceType::Spherical => {
                let var = |c: usize, j: usize| second[c * (d + 1) + j] / nk[c] + reg_covar;
                if self.covariance_type == CovarianceType::Diag {
                    (0..k * d).map(|e| var(e / d, e % d)).collect()
                } else {
                    (0..k)
                        .map(|c| (0..d).map(|j| var(c, j)).sum::<f64>() / d as f64)
                        .collect()
                }
            }
        };
        let precisions_cholesky =
            precision_cholesky_quoting(&covariances, self.covariance_type, k, d, Some(reg_covar))?;
        Ok(Parameters {
            weights,
            means,
            covariances,
            precisions_cholesky,
        })
    }

    /// The M-step for the responsibilities on the device, shifting the first moments by
    /// `shift` (K x D) or, without one, by the first row of the data for every component.
    pub(super) fn mstep(&self, shift: Option<&[f64]>, reg_covar: f64) -> Result<Parameters> {
        let shift = match shift {
            Some(s) => s.to_vec(),
            None => {
                let row = rows::read_rows(self.gpu, self.x, &[0])?;
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
                    .seed(rng.random::<u64>())
                    .fit(self.gpu, self.x)?;
                self.responsibilities_from_labels(km.labels())?;
            }
            GmmInit::KMeansPlusPlus => {
                let seeds = crate::kmeans::plus_plus_seeds(self.gpu, self.x, k, rng)?;
                let labels = crate::kmeans::KMeansModel::from_centroids(seeds, d)?
                    .predict(self.gpu, self.x)?;
                self.responsibilities_from_labels(&labels)?;
            }
            GmmInit::Random => self.random_responsibilities(rng),
            GmmInit::Given(g) => {
                let covariances =
                    covariances_from_precisions(&g.precisions, self.covariance_type, d)?;
                let precisions_cholesky = precision_cholesky_quoting(
                    &covariances,
                    self.covariance_type,
                    k,
                    d,
                    Some(params.reg_covar),
                )?;
                return Ok(Parameters {
                    weights: g.weights.clone(),
                    means: g.means.clone(),
                    covariances,
                    precisions_cholesky,
                });
            }
        }
        self.mstep(None, params.reg_covar)
    }

    /// EM from `start` until the lower bound changes by less than `tol` or `max_iter` runs out.
    pub(super) fn em(&self, start: Parameters, params: &GaussianMixture) -> Result<Run> {
        let mut p = start;
        let mut lower_bound = f64::NEG_INFINITY;
        let mut history = Vec::new();
        let mut converged = false;
        let mut n_iter = 0;
        for iter in 1..=params.max_iter {
            let prev = lower_bound;
            let (lb, first) = self.estep_and_first_moments(&p)?;
            lower_bound = lb;
            if !lower_bound.is_finite() {
                return Err(Error::invalid(
                    "x",
                    "the log-likelihood is not finite (data of extreme scale?); rescale the data",
                ));
            }
            p = self.mstep_from(&first, &p.means, params.reg_covar)?;
            history.push(lower_bound);
            n_iter = iter;
            if (lower_bound - prev).abs() < params.tol {
                converged = true;
                break;
            }
        }
        Ok(Run {
            parameters: p,
            converged,
            n_iter,
            lower_bound,
            history,
        })
    }
}
