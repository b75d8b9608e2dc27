//! `wgpu-unsupervised gmm --input X --k 5 [--covariance full|tied|diag|spherical]
//! [--n-init N] [--max-iter N] [--tol F] [--reg-covar F] [--seed N]
//! [--init kmeans|kmeans++|random] [--weights-init W] [--means-init M] [--precisions-init P]
//! [--warm-start m.json] [--max-gpu-memory SIZE] [--sample-weight w.npy]
//! [--output labels.npy] [--proba P.npy] [--model m.json]
//! [--json]`
//!
//! Fits a Gaussian mixture by EM (see [`wgpu_unsupervised::GaussianMixture`]), then writes the
//! training labels (most probable component, `u4`) to `--output`, the N x K responsibilities
//! p(k | xᵢ) (`f4`, rows summing to 1) to `--proba` and the model to `--model`, when given.
//! `--weights-init`, `--means-init` and `--precisions-init` (scikit-learn's names) replace
//! those parts of the start that `--init` computes; `--warm-start` starts from a saved
//! model's parameters (scikit-learn's `warm_start`).
//! The report gives the mean log-likelihood of the training rows under the fitted model, the
//! BIC and (human report) the AIC. `--json` keys: `algorithm`, `n`, `d`, `k`, `covariance`,
//! `log_likelihood`, `bic`, `n_iter`, `converged`, `fit_seconds`, `adapter`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use wgpu_unsupervised::io::InputMatrix;
use wgpu_unsupervised::{
    io, CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit, Gpu, GpuInput, Matrix,
    RowSource,
};

use crate::flow::{
    iterations, read_sample_weights, timed, Context, Human, Inputs, Outputs, Report, Staging, Task,
};
use crate::progress::Bar;
use crate::{choices, CliResult, Failure};

/// Arguments of `gmm`.
#[derive(Debug, clap::Args)]
pub struct GmmArgs {
    /// Input matrix, one row per sample: .npy (2-D, C order) or .csv (optional header).
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Number of mixture components.
    #[arg(long, value_name = "K")]
    k: usize,
    /// Shape of the component covariances [default: full].
    #[arg(long, value_name = "TYPE", value_parser = choices::covariance())]
    covariance: Option<CovarianceType>,
    /// Independent initialisations; the highest final log-likelihood bound wins
    /// [default: 1].
    #[arg(long, value_name = "N")]
    n_init: Option<usize>,
    /// Maximum EM iterations per initialisation [default: 100].
    #[arg(long, value_name = "N")]
    max_iter: Option<usize>,
    /// Convergence threshold on the change of the mean per-sample log-likelihood bound
    /// [default: 1e-3].
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    tol: Option<f64>,
    /// Added to every covariance diagonal, keeping it positive definite [default: 1e-6].
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    reg_covar: Option<f64>,
    /// Random seed; the same seed gives the same result on the same adapter [default: 0].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Initial responsibilities [default: kmeans].
    #[arg(long, value_name = "METHOD", value_parser = choices::gmm_init())]
    init: Option<GmmInit>,
    /// Starting mixing weights: K values summing to 1 (.npy or .csv); replaces those --init
    /// computes (scikit-learn's weights_init).
    #[arg(long, value_name = "FILE")]
    weights_init: Option<PathBuf>,
    /// Starting means: K x D (.npy or .csv); scikit-learn's means_init.
    #[arg(long, value_name = "FILE")]
    means_init: Option<PathBuf>,
    /// Starting precisions (inverse covariances; scikit-learn's precisions_init), as rows:
    /// full, the K D x D matrices stacked (K·D x D); tied, D x D; diag, K x D; spherical, K
    /// values.
    #[arg(long, value_name = "FILE")]
    precisions_init: Option<PathBuf>,
    /// Start from the weights, means and precisions of this saved Gaussian-mixture model
    /// (written by `gmm --model`; its covariance type is used), one run.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["init", "weights_init", "means_init", "precisions_init", "covariance"])]
    warm_start: Option<PathBuf>,
    /// Write the training labels (most probable component) here (.npy, dtype u4, or .csv).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write the N x K responsibilities p(k | x) of the training rows here (.npy, dtype f4, or .csv).
    #[arg(long, value_name = "FILE")]
    proba: Option<PathBuf>,
    /// Write the fitted model here (JSON).
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
    /// A weight per row (.npy or .csv, one value per row): an integer weight counts as that
    /// many copies of the row; the reported log-likelihood is then Σ w·log p / Σ w.
    #[arg(long, value_name = "FILE")]
    sample_weight: Option<PathBuf>,
    /// Device-memory budget, e.g. 512MiB or 2GiB (B, KiB, MiB, GiB, TiB): data beyond it
    /// stream through the GPU a piece at a time on every EM iteration; the scores and
    /// probabilities are computed a slice at a time.
    #[arg(long, value_name = "SIZE", value_parser = choices::memory_size)]
    max_gpu_memory: Option<u64>,
}

/// The one-line `--json` report of `gmm`.
#[derive(Serialize)]
struct GmmReport<'a> {
    /// Always "gmm".
    algorithm: &'static str,
    /// Rows of the input.
    n: usize,
    /// Features of the input.
    d: usize,
    /// Number of components.
    k: usize,
    /// "full", "tied", "diag" or "spherical".
    covariance: &'static str,
    /// Mean per-sample log-likelihood (1/N) Σᵢ log p(xᵢ) of the training rows under the
    /// fitted model.
    log_likelihood: f64,
    /// Bayesian information criterion −2 log L + p log N on the training rows.
    bic: f64,
    /// EM iterations of the kept initialisation.
    n_iter: usize,
    /// Whether the kept initialisation converged before `max_iter`.
    converged: bool,
    /// Wall time of the fit (data upload included, GPU start-up, scoring and file I/O
    /// excluded).
    fit_seconds: f64,
    /// Adapter name.
    adapter: &'a str,
}

/// The `gmm` command.
pub struct Gmm {
    /// The command line.
    args: GmmArgs,
    /// The parameters it asks for, the library's defaults elsewhere.
    params: GaussianMixture,
    /// `--sample-weight`, read when the input is checked.
    weights: Option<Vec<f32>>,
    /// The progress bar on a terminal.
    bar: Option<Bar>,
}

/// What a `gmm` run produced: the model and its score on the training rows.
pub struct Fitted {
    /// The fitted mixture.
    model: GaussianMixtureModel,
    /// Mean log-likelihood of the training rows.
    log_likelihood: f64,
    /// BIC on the training rows.
    bic: f64,
    /// AIC on the training rows.
    aic: f64,
    /// The N x K responsibilities, read back only when `--proba` asks for them.
    proba: Option<Vec<f32>>,
    /// Wall time of the fit.
    fit_seconds: f64,
    /// Wall time of the scoring E-step (and readback).
    score_seconds: f64,
}

impl Gmm {
    /// The command for `args`; the parameters are validated against the input later.
    pub fn new(args: GmmArgs) -> Self {
        let mut params = GaussianMixture::new(args.k);
        if let Some(covariance) = args.covariance {
            params = params.covariance(covariance);
        }
        if let Some(n_init) = args.n_init {
            params = params.n_init(n_init);
        }
        if let Some(max_iter) = args.max_iter {
            params = params.max_iter(max_iter);
        }
        if let Some(tol) = args.tol {
            params = params.tol(tol);
        }
        if let Some(reg_covar) = args.reg_covar {
            params = params.reg_covar(reg_covar);
        }
        if let Some(seed) = args.seed {
            params = params.seed(seed);
        }
        if let Some(init) = &args.init {
            params = params.init(init.clone());
        }
        let bar = Bar::attach(args.json, "EM", params.max_iter, &mut params.on_iteration);
        Self {
            args,
            params,
            weights: None,
            bar,
        }
    }

    /// The fitted model, the progress bar cleared.
    fn fitted<T>(&self, fit: CliResult<T>) -> CliResult<T> {
        if let Some(bar) = &self.bar {
            bar.clear();
        }
        fit
    }
}

impl Gmm {
    /// The fit under `--max-gpu-memory` or with `--sample-weight`: the library streams what
    /// exceeds the budget; the final E-step runs over slices of rows that fit it, and the
    /// log-likelihood is Σ w·log p / Σ w with weights (BIC and AIC then count Σ w rows).
    fn compute_in_slices(&self, gpu: &Gpu, x: &InputMatrix) -> CliResult<Fitted> {
        let (n, d) = x.shape();
        let (model, fit_seconds) = self.fitted(timed(|| match &self.weights {
            Some(w) => Ok(self.params.fit_weighted(gpu, x, w)?),
            None => Ok(self.params.fit(gpu, x)?),
        }))?;
        let k = model.k();
        let rows = (gpu.memory_budget() / 2 / (4 * (d + 2 * k + 2)) as u64).max(1) as usize;
        let ((log_likelihood, proba), score_seconds) = timed(|| {
            let mut total = 0.0;
            let mut proba = self.args.proba.as_ref().map(|_| Vec::with_capacity(n * k));
            x.visit_rows(rows, &mut |first, part| {
                let slice = Matrix::new(part, d)?;
                let evaluation = model.evaluate_gpu(gpu, &slice)?;
                total += match &self.weights {
                    Some(w) => evaluation
                        .log_density
                        .to_host(gpu)?
                        .iter()
                        .zip(&w[first..])
                        .filter(|(_, &wi)| wi > 0.0)
                        .map(|(&lp, &wi)| wi as f64 * lp as f64)
                        .sum(),
                    None => evaluation.mean_log_likelihood * slice.n_rows() as f64,
                };
                if let Some(p) = proba.as_mut() {
                    p.extend(evaluation.responsibilities.to_host(gpu)?);
                }
                Ok(())
            })?;
            Ok((total / self.effective_rows(n), proba))
        })?;
        let rows_counted = self.effective_rows(n).round() as usize;
        let (bic, aic) = model.information_criteria(log_likelihood, rows_counted);
        Ok(Fitted {
            model,
            log_likelihood,
            bic,
            aic,
            proba,
            fit_seconds,
            score_seconds,
        })
    }
}

impl Gmm {
    /// Σ w with weights, else N.
    fn effective_rows(&self, n: usize) -> f64 {
        match &self.weights {
            Some(w) => w.iter().map(|&v| v as f64).sum(),
            None => n as f64,
        }
    }
}

impl Task for Gmm {
    type Outcome = Fitted;

    fn input(&self) -> &Path {
        &self.args.input
    }

    fn inputs(&self) -> Inputs<'_> {
        let a = &self.args;
        let given = [
            ("--input", Some(&a.input)),
            ("--weights-init", a.weights_init.as_ref()),
            ("--means-init", a.means_init.as_ref()),
            ("--precisions-init", a.precisions_init.as_ref()),
            ("--warm-start", a.warm_start.as_ref()),
            ("--sample-weight", a.sample_weight.as_ref()),
        ];
        given
            .into_iter()
            .filter_map(|(flag, path)| Some((flag, path?.as_path())))
            .collect()
    }

    fn outputs(&self) -> Outputs<'_> {
        Outputs::none()
            .array("--output", self.args.output.as_deref(), "labels")
            .array("--proba", self.args.proba.as_deref(), "responsibilities")
            .model(self.args.model.as_deref())
    }

    fn json(&self) -> bool {
        self.args.json
    }

    fn max_gpu_memory(&self) -> Option<u64> {
        self.args.max_gpu_memory
    }

    fn check(&mut self, n: usize, d: usize) -> CliResult {
        let given = [
            &self.args.weights_init,
            &self.args.means_init,
            &self.args.precisions_init,
        ];
        let [weights, means, precisions] = given.map(|p| p.as_deref().map(read_values).transpose());
        let o = &mut self.params.init_overrides;
        (o.weights, o.means, o.precisions) = (weights?, means?, precisions?);
        if let Some(path) = &self.args.warm_start {
            let model = GaussianMixtureModel::load(path).map_err(|e| Failure::input(path, e))?;
            if (model.k(), model.n_features()) != (self.params.k, d) {
                return Err(Failure::invalid(format!(
                    "{}: --warm-start has {} components of {} features; --k is {} and the \
                     input has {} features",
                    path.display(),
                    model.k(),
                    model.n_features(),
                    self.params.k,
                    d
                )));
            }
            self.params = self.params.clone().warm_start(&model);
        }
        self.params.validate(n, d)?;
        if let Some(path) = &self.args.sample_weight {
            self.weights = Some(read_sample_weights(path, n)?);
        }
        Ok(())
    }

    fn compute(&self, gpu: &Gpu, x: &InputMatrix) -> CliResult<Fitted> {
        if self.args.max_gpu_memory.is_some() || self.weights.is_some() {
            return self.compute_in_slices(gpu, x);
        }
        // f64 rows are fitted and evaluated as they are (centred in f64, module `origin`);
        // f32 rows are uploaded once for both.
        let wide = x.wide()?.is_some();
        let ((xg, model), fit_seconds) = self.fitted(timed(|| {
            if wide {
                return Ok((None, self.params.fit(gpu, x)?));
            }
            let xg = x.on_gpu(gpu)?;
            let model = self.params.fit(gpu, xg.as_ref())?;
            Ok((Some(xg), model))
        }))?;
        // One E-step with the final parameters gives the mean log-likelihood of the training
        // rows (hence BIC and AIC) and the responsibilities.
        let ((log_likelihood, proba), score_seconds) = timed(|| {
            let evaluation = match &xg {
                Some(xg) => model.evaluate_gpu(gpu, xg.as_ref())?,
                None => model.evaluate_gpu(gpu, x)?,
            };
            let proba = match &self.args.proba {
                Some(_) => Some(evaluation.responsibilities.to_host(gpu)?),
                None => None,
            };
            Ok((evaluation.mean_log_likelihood, proba))
        })?;
        let (bic, aic) = model.information_criteria(log_likelihood, x.shape().0);
        Ok(Fitted {
            model,
            log_likelihood,
            bic,
            aic,
            proba,
            fit_seconds,
            score_seconds,
        })
    }

    fn write(&self, run: &Context<'_>, fitted: &Fitted, out: &mut Staging) -> CliResult {
        let model = &fitted.model;
        if let Some(path) = &self.args.model {
            out.text(path, &model.to_json_string())?;
        }
        if let Some(path) = &self.args.output {
            out.labels(path, model.labels())?;
        }
        if let (Some(path), Some(proba)) = (&self.args.proba, &fitted.proba) {
            out.rows(path, proba, run.n, model.k())?;
        }
        Ok(())
    }

    fn report(&self, run: &Context<'_>, fitted: &Fitted) -> CliResult<Report> {
        let (model, params, n) = (&fitted.model, &self.params, run.n);
        let k = model.k();
        let covariance = model.covariance_type().name();
        let weights: Vec<String> = model
            .weights()
            .iter()
            .take(8)
            .map(|w| format!("{w:.4}"))
            .collect();
        let more = if k > weights.len() { ", …" } else { "" };
        let mut human = Human::new();
        human
            .line("input", run.input_line())
            .line(
                "gmm",
                format!(
                    "k = {}, covariance {covariance}, init {}, n_init {}, max_iter {}, tol {}, \
                     reg_covar {:e}, seed {}",
                    params.k,
                    params.init,
                    params.n_init,
                    params.max_iter,
                    params.tol,
                    params.reg_covar,
                    params.seed
                ),
            )
            .line("iterations", iterations(model.n_iter(), model.converged()))
            .line(
                "log-likelihood",
                format!(
                    "{} per sample (mean over the {n} training rows)",
                    fitted.log_likelihood
                ),
            )
            .line(
                "BIC",
                format!("{} ({} free parameters)", fitted.bic, model.n_parameters()),
            )
            .line("AIC", fitted.aic)
            .line("weights", format!("{}{more}", weights.join(", ")))
            .line(
                "fit time",
                format!(
                    "{:.3} s (scoring {:.3} s)",
                    fitted.fit_seconds, fitted.score_seconds
                ),
            )
            .file("labels", self.args.output.as_deref(), "--output FILE.npy");
        match &self.args.proba {
            Some(p) => human.line("proba", format!("{} ({n} x {k})", p.display())),
            None => human.line("proba", "not written (use --proba FILE.npy)"),
        };
        human.file("model", self.args.model.as_deref(), "--model FILE.json");
        let json = GmmReport {
            algorithm: "gmm",
            n,
            d: run.d,
            k,
            covariance,
            log_likelihood: fitted.log_likelihood,
            bic: fitted.bic,
            n_iter: model.n_iter(),
            converged: model.converged(),
            fit_seconds: fitted.fit_seconds,
            adapter: &run.info.name,
        };
        Report::new(&json, human)
    }
}

/// The values of a starting-parameter file (.npy or .csv, any shape), row by row.
fn read_values(path: &Path) -> CliResult<Vec<f64>> {
    let m = io::read_matrix(path).map_err(|e| Failure::input(path, e))?;
    Ok(m.data.iter().map(|&v| v as f64).collect())
}
