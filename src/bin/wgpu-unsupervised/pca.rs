//! `wgpu-unsupervised pca --input X --components 50|0.95|mle [--whiten] [--no-center]
//! [--standardize] [--solver auto|full|power|matrix-free] [--tol F] [--max-iter N] [--seed N]
//! [--ddof 0|1] [--score] [--incremental ROWS] [--max-gpu-memory SIZE] [--output Z.npy] [--model m.json] [--plot spectrum.svg] [--json]`
//!
//! Fits PCA (see [`wgpu_unsupervised::Pca`]), then writes the N x M projections of the
//! training rows as a 2-D `f4` `.npy` array to `--output` and the model to `--model`.
//! `--components` written as an integer (`50`) keeps exactly that many components; written
//! with a decimal point or an exponent (`0.95`, `1.0`, `5e-1`) it is a fraction of the
//! variance in (0, 1]: the fewest components whose cumulative explained-variance ratio
//! exceeds it (`1.0` keeps all min(N, D)); `mle` chooses it by Minka's MLE. `--plot` draws the explained-variance ratio of the
//! kept components and its cumulative sum as SVG. `--json` keys: `algorithm`, `n`, `d`,
//! `n_components`, `explained_variance_ratio`, `solver`, `n_iter`, `noise_variance`, `score`
//! (with `--score`: the mean log-likelihood under probabilistic PCA), `fit_seconds`,
//! `adapter`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use wgpu_unsupervised::io::InputMatrix;
use wgpu_unsupervised::{
    plot, selection, Components, Gpu, GpuInput, IncrementalPca, Matrix, Matrix64, Pca, PcaModel,
    PcaSolver, RowSource,
};

use crate::flow::{timed, Context, Human, Outputs, Report, Staging, Task};
use crate::progress::Bar;
use crate::{choices, CliResult, Failure};

/// Arguments of `pca`.
#[derive(Debug, clap::Args)]
pub struct PcaArgs {
    /// Input matrix, one row per sample: .npy (2-D, C order) or .csv (optional header).
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Components to keep. An integer M (no decimal point, e.g. 50) keeps exactly M, in
    /// 1..=min(N, D). A number with a decimal point or an exponent (e.g. 0.95, 1.0, 5e-1) is a
    /// fraction of the variance in (0, 1]: the fewest components whose cumulative
    /// explained-variance ratio exceeds it; 1.0 keeps all min(N, D). `mle` picks the count by
    /// Minka's MLE (needs N >= D). Fractions and mle need the full solver (auto picks it).
    #[arg(long, value_name = "M|F|mle", allow_negative_numbers = true)]
    components: String,
    /// Scale the projections to unit variance (divide by the square root of each
    /// component's variance).
    #[arg(long)]
    whiten: bool,
    /// Do not subtract the column means (analyses XᵀX/(N − ddof) instead of the covariance).
    #[arg(long)]
    no_center: bool,
    /// Divide every feature by its standard deviation first.
    #[arg(long)]
    standardize: bool,
    /// Eigen-solver [default: auto].
    #[arg(long, value_name = "SOLVER", value_parser = choices::pca_solver())]
    solver: Option<PcaSolver>,
    /// Power iteration: stop when every residual ‖S·v − λv‖ ≤ tol·λ₁ [default: 1e-5].
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    tol: Option<f64>,
    /// Power iteration: iteration cap; not converging is an error (exit 1) [default: 1000].
    #[arg(long, value_name = "N")]
    max_iter: Option<usize>,
    /// Seed of the power iteration's random start [default: 0].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Covariance divisor N − ddof: 0 or 1 [default: 1].
    #[arg(long, value_name = "0|1")]
    ddof: Option<usize>,
    /// Write the N x M projections of the input here (.npy, dtype f4, or .csv).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write the fitted model here (JSON).
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Draw the explained-variance ratio of the kept components and its cumulative sum
    /// here (.svg).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Fit chunk by chunk: merge the exact moments of every ROWS rows (incremental PCA;
    /// the same model as a full fit within f32 rounding). Needs the full or power solver.
    #[arg(long, value_name = "ROWS", value_parser = clap::value_parser!(u64).range(1..))]
    incremental: Option<u64>,
    /// Device-memory budget, e.g. 512MiB or 2GiB (B, KiB, MiB, GiB, TiB): data beyond it
    /// stream through the GPU a piece at a time, projections are made a slice at a time.
    #[arg(long, value_name = "SIZE", value_parser = choices::memory_size)]
    max_gpu_memory: Option<u64>,
    /// Also report the mean log-likelihood of the input under the probabilistic PCA model
    /// (scikit-learn's score; needs a noise variance > 0, i.e. fewer than D components).
    #[arg(long)]
    score: bool,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// The one-line `--json` report of `pca`.
#[derive(Serialize)]
struct PcaReport<'a> {
    /// Always "pca".
    algorithm: &'static str,
    /// Rows of the input.
    n: usize,
    /// Features of the input.
    d: usize,
    /// Components kept, M.
    n_components: usize,
    /// Explained-variance ratio of each kept component (descending).
    explained_variance_ratio: &'a [f64],
    /// The solver that ran: "full", "power" or "matrix-free".
    solver: &'static str,
    /// Power-iteration steps (0 for the full eigendecomposition).
    n_iter: usize,
    /// The mean variance of the discarded directions (probabilistic PCA's σ²).
    noise_variance: f64,
    /// Mean log-likelihood of the input (only with `--score`).
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<f64>,
    /// Wall time of the fit (data upload included, GPU start-up, projections and file I/O
    /// excluded).
    fit_seconds: f64,
    /// Adapter name.
    adapter: &'a str,
}

/// The `pca` command.
pub struct PcaFit {
    /// The command line.
    args: PcaArgs,
    /// `--components`, parsed.
    components: Components,
    /// The parameters it asks for, the library's defaults elsewhere.
    params: Pca,
    /// The progress bar of the power iteration on a terminal.
    bar: Option<Bar>,
}

/// What a `pca` run produced.
pub struct Fitted {
    /// The fitted model.
    model: PcaModel,
    /// Wall time of the fit.
    fit_seconds: f64,
    /// The N x M projections and their wall time, computed only when `--output` asks.
    projections: Option<(Vec<f32>, f64)>,
    /// The mean log-likelihood of the input, computed only when `--score` asks.
    score: Option<f64>,
}

impl PcaFit {
    /// The command for `args`: parses `--components` and refuses a fraction with a solver
    /// that cannot honour it (exit 2).
    pub fn new(args: PcaArgs) -> CliResult<Self> {
        let components = parse_components(&args.components)?;
        let mut params = Pca::new(components)
            .whiten(args.whiten)
            .center(!args.no_center)
            .standardize(args.standardize);
        if let Some(solver) = args.solver {
            params = params.solver(solver);
        }
        if let Some(tol) = args.tol {
            params = params.tol(tol);
        }
        if let Some(max_iter) = args.max_iter {
            params = params.max_iter(max_iter);
        }
        if let Some(seed) = args.seed {
            params = params.seed(seed);
        }
        if let Some(ddof) = args.ddof {
            params = params.ddof(ddof);
        }
        if !matches!(components, Components::Count(_))
            && matches!(params.solver, PcaSolver::Power | PcaSolver::MatrixFree)
        {
            return Err(Failure::invalid(format!(
                "--components {} (a fraction of the variance, or mle) needs the whole spectrum: \
                 use --solver full (or auto), or give an integer count for --solver {}",
                args.components.trim(),
                params.solver
            )));
        }
        let mut params = params;
        let bar = Bar::attach(
            args.json,
            "power iteration",
            params.max_iter,
            &mut params.on_iteration,
        );
        Ok(Self {
            args,
            components,
            params,
            bar,
        })
    }
}

impl Task for PcaFit {
    type Outcome = Fitted;

    fn input(&self) -> &Path {
        &self.args.input
    }

    fn outputs(&self) -> Outputs<'_> {
        Outputs::none()
            .plot(self.args.plot.as_deref())
            .array("--output", self.args.output.as_deref(), "projections")
            .model(self.args.model.as_deref())
    }

    fn json(&self) -> bool {
        self.args.json
    }

    fn max_gpu_memory(&self) -> Option<u64> {
        self.args.max_gpu_memory
    }

    fn check(&mut self, n: usize, d: usize) -> CliResult {
        Ok(self.params.validate(n, d)?)
    }

    fn compute(&self, gpu: &Gpu, x: &InputMatrix) -> CliResult<Fitted> {
        let fitted = self.fit_and_project(gpu, x);
        if let Some(bar) = &self.bar {
            bar.clear();
        }
        fitted
    }
    fn write(&self, run: &Context<'_>, fitted: &Fitted, out: &mut Staging) -> CliResult {
        let model = &fitted.model;
        if let Some(path) = &self.args.model {
            out.text(path, &model.to_json_string())?;
        }
        if let (Some(path), Some((z, _))) = (&self.args.output, &fitted.projections) {
            out.rows(path, z, run.n, model.n_components())?;
        }
        if let Some(path) = &self.args.plot {
            plot::stage_spectrum(out.set(), path, &selection::pca_spectrum(model))
                .map_err(Failure::output)?;
        }
        Ok(())
    }

    fn report(&self, run: &Context<'_>, fitted: &Fitted) -> CliResult<Report> {
        let (model, params) = (&fitted.model, &self.params);
        let (n, d, m) = (run.n, run.d, model.n_components());
        let ratios = model.explained_variance_ratio();
        let shown: Vec<String> = ratios
            .iter()
            .take(8)
            .map(|r| format!("{:.2}%", 100.0 * r))
            .collect();
        let more = if ratios.len() > shown.len() {
            ", …"
        } else {
            ""
        };
        let requested = match self.components {
            Components::Count(c) => format!("{c} requested"),
            Components::Fraction(f) => format!("fraction {f} of the variance requested"),
            Components::Mle => "chosen by Minka's MLE".to_string(),
        };
        let mut options = vec![if params.center {
            "centred"
        } else {
            "not centred"
        }];
        if params.standardize {
            options.push("standardised");
        }
        if params.whiten {
            options.push("whitened");
        }
        let solver = match model.solver() {
            PcaSolver::Power | PcaSolver::MatrixFree => format!(
                "{} ({} iterations, tol {}, seed {})",
                model.solver(),
                model.n_iter(),
                params.tol,
                params.seed
            ),
            other => format!("{other} (eigendecomposition)"),
        };
        let mut human = Human::new();
        human
            .line("input", run.input_line())
            .line(
                "pca",
                format!("{}, ddof {}", options.join(", "), params.ddof),
            )
            .line("components", format!("{m} of {d} kept ({requested})"))
            .line(
                "explained",
                format!(
                    "{:.2}% cumulative ({}{more})",
                    100.0 * ratios.iter().sum::<f64>(),
                    shown.join(", ")
                ),
            )
            .line("solver", solver)
            .line("noise variance", model.noise_variance())
            .line("fit time", format!("{:.3} s", fitted.fit_seconds));
        if let Some(score) = fitted.score {
            human.line(
                "score",
                format!("{score} (mean log-likelihood of the input)"),
            );
        }
        match (&self.args.output, &fitted.projections) {
            (Some(p), Some((_, seconds))) => human.line(
                "projections",
                format!("{} ({n} x {m}, {seconds:.3} s)", p.display()),
            ),
            _ => human.line("projections", "not written (use --output FILE.npy)"),
        };
        human.file("model", self.args.model.as_deref(), "--model FILE.json");
        if let Some(p) = &self.args.plot {
            human.line("plot", p.display());
        }
        let json = PcaReport {
            algorithm: "pca",
            n,
            d,
            n_components: m,
            explained_variance_ratio: ratios,
            solver: model.solver().name(),
            n_iter: model.n_iter(),
            noise_variance: model.noise_variance(),
            score: fitted.score,
            fit_seconds: fitted.fit_seconds,
            adapter: &run.info.name,
        };
        Report::new(&json, human)
    }
}

/// Parses `--components`: digits only are a count, any other finite number a fraction of the
/// variance (exit 2 for anything else, naming the rule).
fn parse_components(text: &str) -> CliResult<Components> {
    let text = text.trim();
    let rule = "an integer count M >= 1, a fraction of the variance in (0, 1] written \
                with a decimal point (e.g. 0.95), or mle";
    if text.eq_ignore_ascii_case("mle") {
        return Ok(Components::Mle);
    }
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return match text.parse::<usize>() {
            Ok(0) => Err(Failure::invalid(format!(
                "invalid --components 0: keep at least one component ({rule})"
            ))),
            Ok(m) => Ok(Components::Count(m)),
            Err(_) => Err(Failure::invalid(format!(
                "invalid --components {text}: too large ({rule})"
            ))),
        };
    }
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 && f <= 1.0 => Ok(Components::Fraction(f)),
        Ok(f) if f.is_finite() && f > 1.0 => Err(Failure::invalid(format!(
            "invalid --components {text}: a number with a decimal point is a fraction of the \
             variance and must be in (0, 1]; write an integer for a count"
        ))),
        _ => Err(Failure::invalid(format!(
            "invalid --components {text:?}: expected {rule}"
        ))),
    }
}

impl PcaFit {
    /// The fit and the projections the options ask for.
    fn fit_and_project(&self, gpu: &Gpu, x: &InputMatrix) -> CliResult<Fitted> {
        let (_, d) = x.shape();
        if self.args.max_gpu_memory.is_some() || self.args.incremental.is_some() {
            // Host rows, streamed or fed in chunks; projections made a slice at a time.
            let (model, fit_seconds) = timed(|| match self.args.incremental {
                Some(rows) => {
                    let mut inc = IncrementalPca::new(self.params.clone());
                    if let Some(wide) = x.wide()? {
                        // f64 pieces, each centred in f64 (module `origin`).
                        for part in wide.as_slice().chunks(rows as usize * d) {
                            inc.partial_fit(gpu, &Matrix64::new(part, d)?)?;
                        }
                        return Ok(inc.model(gpu)?);
                    }
                    x.visit_rows(rows as usize, &mut |_, part| {
                        inc.partial_fit(gpu, &Matrix::new(part, d)?)
                    })?;
                    Ok(inc.model(gpu)?)
                }
                None => Ok(self.params.fit(gpu, x)?),
            })?;
            let budget = gpu.memory_budget();
            let rows = (budget / 2 / (4 * (d + model.n_components()) as u64)).max(1) as usize;
            let projections = match &self.args.output {
                Some(_) => Some(timed(|| {
                    let mut z = Vec::new();
                    if let Some(wide) = x.wide()? {
                        for part in wide.as_slice().chunks(rows * d) {
                            z.extend(model.transform(gpu, &Matrix64::new(part, d)?)?);
                        }
                        return Ok(z);
                    }
                    x.visit_rows(rows, &mut |_, part| {
                        z.extend(model.transform(gpu, &Matrix::new(part, d)?)?);
                        Ok(())
                    })?;
                    Ok(z)
                })?),
                None => None,
            };
            let score = self.score(&model, x)?;
            return Ok(Fitted {
                model,
                fit_seconds,
                projections,
                score,
            });
        }
        if x.wide()?.is_some() {
            // f64 rows: the fit and the projections centre them in f64 (module `origin`).
            let (model, fit_seconds) = timed(|| Ok(self.params.fit(gpu, x)?))?;
            let projections = match &self.args.output {
                Some(_) => Some(timed(|| Ok(model.transform(gpu, x)?))?),
                None => None,
            };
            let score = self.score(&model, x)?;
            return Ok(Fitted {
                model,
                fit_seconds,
                projections,
                score,
            });
        }
        let ((xg, model), fit_seconds) = timed(|| {
            let xg = x.on_gpu(gpu)?;
            let model = self.params.fit(gpu, xg.as_ref())?;
            Ok((xg, model))
        })?;
        let projections = match &self.args.output {
            Some(_) => Some(timed(|| Ok(model.transform(gpu, xg.as_ref())?))?),
            None => None,
        };
        drop(xg);
        let score = self.score(&model, x)?;
        Ok(Fitted {
            model,
            fit_seconds,
            projections,
            score,
        })
    }

    /// The mean log-likelihood of `x` when `--score` asks for it, a slice of rows at a time.
    fn score(&self, model: &PcaModel, x: &InputMatrix) -> CliResult<Option<f64>> {
        if !self.args.score {
            return Ok(None);
        }
        let (n, d) = x.shape();
        if let Some(wide) = x.wide()? {
            return Ok(Some(model.score(&wide)?));
        }
        let mut total = 0.0;
        x.visit_rows(1 << 16, &mut |_, part| {
            total += model
                .score_samples(&Matrix::new(part, d)?)?
                .iter()
                .sum::<f64>();
            Ok(())
        })?;
        Ok(Some(total / n as f64))
    }
}
