//! `wgpu-unsupervised select-k --input X --algorithm kmeans|gmm [--k-min 1] [--k-max K]
//! [--criterion elbow|gap|bic|aic] [--covariance full|tied|diag|spherical] [--n-refs B]
//! [--n-init N] [--max-iter N] [--seed N] [--plot curve.svg] [--json]`
//!
//! Fits the model for every k in `--k-min..=--k-max` (`--k-max` 15 by default, or the number
//! of rows when there are fewer; data uploaded once; K-Means with 3
//! restarts per fit unless `--n-init` says otherwise, as one poor local optimum can bend a
//! curve) and prints the curve and the suggested k (see [`wgpu_unsupervised::selection`]):
//! for `kmeans` the gap statistic (default; `--n-refs` uniform reference sets, default 10:
//! the smallest k with Gap(k) ≥ Gap(k+1) − s_{k+1}) or the elbow (the largest second
//! difference of log inertia); for `gmm` the BIC (default) or AIC (lowest wins). `--plot`
//! draws the curve and the suggested k as SVG. `--json` keys: `algorithm`, `criterion`,
//! `n`, `d`, `k` (array), `values` (array: inertia for elbow and gap, BIC or AIC), with gap
//! also `gap`, `s_k` (arrays) and `n_refs`, then `suggested_k`, `seconds`, `adapter`.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde::Serialize;
use wgpu_unsupervised::io::InputMatrix;
use wgpu_unsupervised::{
    plot, selection, CovarianceType, Criterion, GaussianMixture, Gpu, GpuInput, KMeans, Matrix,
};

use crate::flow::{timed, whole, Context, Human, Outputs, Report, Staging, Task};
use crate::{choices, CliResult, Failure};

/// Arguments of `select-k`.
#[derive(Debug, clap::Args)]
pub struct SelectKArgs {
    /// Input matrix, one row per sample: .npy (2-D, C order) or .csv (optional header).
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// The model fitted for each k.
    #[arg(long, value_enum, value_name = "ALGORITHM")]
    algorithm: Algorithm,
    /// Smallest k tried.
    #[arg(long, value_name = "K", default_value_t = 1)]
    k_min: usize,
    /// Largest k tried (at most the number of rows) [default: 15, or the number of rows when
    /// there are fewer].
    #[arg(long, value_name = "K")]
    k_max: Option<usize>,
    /// Criterion: elbow or gap for kmeans, bic or aic for gmm [default: gap for kmeans, bic
    /// for gmm].
    #[arg(long, value_name = "CRITERION", value_parser = choices::criterion())]
    criterion: Option<Criterion>,
    /// gmm only: shape of the component covariances [default: full].
    #[arg(long, value_name = "TYPE", value_parser = choices::covariance())]
    covariance: Option<CovarianceType>,
    /// gap only: number B of uniform reference data sets [default: 10].
    #[arg(long, value_name = "B")]
    n_refs: Option<usize>,
    /// Restarts (kmeans) or initialisations (gmm) of every fit [default: 3 for kmeans, whose
    /// curves a poor local optimum at one k can mislead; 1 for gmm].
    #[arg(long, value_name = "N")]
    n_init: Option<usize>,
    /// Iteration cap of every fit [default: 300 for kmeans, 100 for gmm].
    #[arg(long, value_name = "N")]
    max_iter: Option<usize>,
    /// Seed of the fits and of the gap statistic's reference sets [default: 0].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Draw the curve and the suggested k here (.svg).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// The `select-k --algorithm` choices: which model is fitted for every k.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Algorithm {
    /// K-Means (criteria elbow, gap).
    Kmeans,
    /// Gaussian mixtures (criteria bic, aic).
    Gmm,
}

impl Algorithm {
    /// The name on the command line and in the report.
    fn name(self) -> &'static str {
        match self {
            Algorithm::Kmeans => "kmeans",
            Algorithm::Gmm => "gmm",
        }
    }
}

/// The one-line `--json` report of `select-k`.
#[derive(Serialize)]
struct SelectKReport<'a> {
    /// "kmeans" or "gmm".
    algorithm: &'static str,
    /// "elbow", "gap", "bic" or "aic".
    criterion: &'static str,
    /// Rows of the input.
    n: usize,
    /// Features of the input.
    d: usize,
    /// The candidate k, k_min..=k_max.
    k: &'a [usize],
    /// The curve at each k: inertia (elbow, and W_k for gap), BIC or AIC.
    values: &'a [f64],
    /// Gap(k) (gap only).
    #[serde(skip_serializing_if = "Option::is_none")]
    gap: Option<&'a [f64]>,
    /// s_k = sd_k √(1 + 1/B) (gap only).
    #[serde(skip_serializing_if = "Option::is_none")]
    s_k: Option<&'a [f64]>,
    /// Number of reference sets B (gap only).
    #[serde(skip_serializing_if = "Option::is_none")]
    n_refs: Option<usize>,
    /// The suggested k.
    suggested_k: usize,
    /// Wall time of all the fits (uploads included, GPU start-up and file I/O excluded).
    seconds: f64,
    /// Adapter name.
    adapter: &'a str,
}

/// A curve computed by `select-k`.
pub enum Selected {
    /// Elbow, BIC or AIC.
    Curve(selection::Curve),
    /// Gap statistic.
    Gap(selection::GapCurve),
}

/// The `select-k` command.
pub struct SelectK {
    /// The command line.
    args: SelectKArgs,
    /// The criterion asked for, or the algorithm's default.
    criterion: Criterion,
    /// Reference sets of the gap statistic.
    n_refs: usize,
    /// The K-Means fitted for every k (kmeans).
    kmeans: KMeans,
    /// The mixture fitted for every k (gmm).
    mixture: GaussianMixture,
    /// The largest k tried: `--k-max`, or its default for the input's rows.
    k_max: usize,
}

impl SelectK {
    /// The command for `args`: checks that the options fit together (exit 2).
    pub fn new(args: SelectKArgs) -> CliResult<Self> {
        let algorithm = args.algorithm;
        let criterion = match (args.criterion, algorithm) {
            (Some(c), _) => c,
            (None, Algorithm::Kmeans) => Criterion::Gap,
            (None, Algorithm::Gmm) => Criterion::Bic,
        };
        match (algorithm, criterion) {
            (Algorithm::Kmeans, Criterion::Elbow | Criterion::Gap)
            | (Algorithm::Gmm, Criterion::Bic | Criterion::Aic) => {}
            _ => {
                return Err(Failure::invalid(format!(
                    "--criterion {criterion} does not apply to --algorithm {} (kmeans: elbow \
                     or gap; gmm: bic or aic)",
                    algorithm.name()
                )))
            }
        }
        if args.covariance.is_some() && algorithm != Algorithm::Gmm {
            return Err(Failure::invalid(
                "--covariance applies only to --algorithm gmm",
            ));
        }
        if args.n_refs.is_some() && criterion != Criterion::Gap {
            return Err(Failure::invalid("--n-refs applies only to --criterion gap"));
        }
        let n_refs = args.n_refs.unwrap_or(10);
        if n_refs == 0 {
            return Err(Failure::invalid("--n-refs must be at least 1"));
        }
        if args.k_min == 0 {
            return Err(Failure::invalid("--k-min must be at least 1"));
        }
        if let Some(k_max) = args.k_max.filter(|&k_max| args.k_min > k_max) {
            return Err(Failure::invalid(format!(
                "--k-min {} is larger than --k-max {k_max}",
                args.k_min
            )));
        }
        let seed = args.seed.unwrap_or(0);
        let k_max = args.k_max.unwrap_or(DEFAULT_K_MAX);
        let mut kmeans = KMeans::new(k_max).seed(seed).n_init(3);
        let mut mixture = GaussianMixture::new(k_max).seed(seed);
        if let Some(covariance) = args.covariance {
            mixture = mixture.covariance(covariance);
        }
        if let Some(n_init) = args.n_init {
            kmeans = kmeans.n_init(n_init);
            mixture = mixture.n_init(n_init);
        }
        if let Some(max_iter) = args.max_iter {
            kmeans = kmeans.max_iter(max_iter);
            mixture = mixture.max_iter(max_iter);
        }
        Ok(Self {
            args,
            criterion,
            n_refs,
            k_max,
            kmeans,
            mixture,
        })
    }
}

/// `--k-max` when it is not given and the input has at least this many rows.
const DEFAULT_K_MAX: usize = 15;

impl Task for SelectK {
    /// The curve and the wall time of all the fits.
    type Outcome = (Selected, f64);

    fn input(&self) -> &Path {
        &self.args.input
    }

    fn outputs(&self) -> Outputs<'_> {
        Outputs::none().plot(self.args.plot.as_deref())
    }

    fn json(&self) -> bool {
        self.args.json
    }

    fn check(&mut self, n: usize, d: usize) -> CliResult {
        let k_min = self.args.k_min;
        match self.args.k_max {
            Some(k_max) if k_max > n => {
                return Err(Failure::invalid(format!(
                    "--k-max {k_max} is larger than the number of rows ({n}) of {}; give \
                     --k-max {n} or less",
                    self.args.input.display()
                )))
            }
            Some(_) => {}
            None => self.k_max = DEFAULT_K_MAX.min(n),
        }
        if k_min > self.k_max {
            return Err(Failure::invalid(format!(
                "--k-min {k_min} is larger than the number of rows ({n}) of {}",
                self.args.input.display()
            )));
        }
        self.kmeans.k = self.k_max;
        self.mixture.k = self.k_max;
        match self.args.algorithm {
            Algorithm::Kmeans => self.kmeans.validate(n, d)?,
            Algorithm::Gmm => self.mixture.validate(n, d)?,
        }
        Ok(())
    }

    fn compute(&self, gpu: &Gpu, x: &InputMatrix) -> CliResult<Self::Outcome> {
        let ks = self.args.k_min..=self.k_max;
        let seed = self.args.seed.unwrap_or(0);
        let values = match self.criterion {
            Criterion::Gap => Some(whole(&self.args.input, x)?),
            _ => None,
        };
        timed(|| {
            Ok(match (self.criterion, &values) {
                (Criterion::Gap, Some(values)) => Selected::Gap(selection::gap_statistic(
                    gpu,
                    &Matrix::new(values, x.shape().1)?,
                    ks,
                    &self.kmeans,
                    self.n_refs,
                    seed,
                )?),
                (Criterion::Elbow, _) => {
                    let xg = x.on_gpu(gpu)?;
                    Selected::Curve(selection::elbow(gpu, xg.as_ref(), ks, &self.kmeans)?)
                }
                (criterion, _) => {
                    let xg = x.on_gpu(gpu)?;
                    Selected::Curve(selection::gmm_criterion_curve(
                        gpu,
                        xg.as_ref(),
                        ks,
                        &self.mixture,
                        criterion,
                    )?)
                }
            })
        })
    }

    fn write(
        &self,
        _run: &Context<'_>,
        (selected, _): &Self::Outcome,
        out: &mut Staging,
    ) -> CliResult {
        let Some(path) = &self.args.plot else {
            return Ok(());
        };
        match selected {
            Selected::Curve(curve) => plot::stage_curve(out.set(), path, curve),
            Selected::Gap(gap) => plot::stage_gap(out.set(), path, gap),
        }
        .map_err(Failure::output)
    }

    fn report(&self, run: &Context<'_>, (selected, seconds): &Self::Outcome) -> CliResult<Report> {
        let (k, values, suggested_k) = match selected {
            Selected::Curve(c) => (&c.k, &c.values, c.suggested_k),
            Selected::Gap(g) => (&g.k, &g.inertia, g.suggested_k),
        };
        let gap = match selected {
            Selected::Gap(g) => Some(g),
            Selected::Curve(_) => None,
        };
        let criterion = self.criterion;
        let value_name = match criterion {
            Criterion::Bic => "BIC",
            Criterion::Aic => "AIC",
            _ => "inertia",
        };
        let rule = match criterion {
            Criterion::Elbow => "largest second difference of log inertia".to_string(),
            Criterion::Gap => format!(
                "smallest k with Gap(k) >= Gap(k+1) - s(k+1), {} uniform reference sets",
                self.n_refs
            ),
            _ => format!("lowest {value_name}"),
        };
        let mut human = Human::new();
        human.line("input", run.input_line()).line(
            "selection",
            format!(
                "{}, criterion {criterion} ({rule}), k = {}..={}, seed {}",
                self.args.algorithm.name(),
                self.args.k_min,
                self.k_max,
                self.args.seed.unwrap_or(0)
            ),
        );
        human.free("");
        let star = |k: usize| if k == suggested_k { " *" } else { "" };
        match gap {
            Some(g) => {
                human.free(format!(
                    "{:>5}  {:>16}  {:>12}  {:>12}",
                    "k", value_name, "gap", "s_k"
                ));
                for i in 0..g.k.len() {
                    human.free(format!(
                        "{:>5}  {:>16.6e}  {:>12.6}  {:>12.6}{}",
                        g.k[i],
                        g.inertia[i],
                        g.gap[i],
                        g.s_k[i],
                        star(g.k[i])
                    ));
                }
            }
            None => {
                human.free(format!("{:>5}  {:>16}", "k", value_name));
                for (k, v) in k.iter().zip(values) {
                    human.free(format!("{k:>5}  {v:>16.6e}{}", star(*k)));
                }
            }
        }
        human
            .free("")
            .line("suggested k", suggested_k)
            .line("time", format!("{seconds:.3} s"))
            .file("plot", self.args.plot.as_deref(), "--plot FILE.svg");
        let json = SelectKReport {
            algorithm: self.args.algorithm.name(),
            criterion: criterion.name(),
            n: run.n,
            d: run.d,
            k,
            values,
            gap: gap.map(|g| g.gap.as_slice()),
            s_k: gap.map(|g| g.s_k.as_slice()),
            n_refs: gap.map(|g| g.n_refs),
            suggested_k,
            seconds: *seconds,
            adapter: &run.info.name,
        };
        Report::new(&json, human)
    }
}
