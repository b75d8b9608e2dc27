//! `wgpu-unsupervised spectral --input X.{npy,csv} --k K [--affinity rbf|nearest-neighbors]
//! [--gamma G] [--n-neighbors N] [--normalize-rows] [--n-init N] [--seed N]
//! [--output labels.npy] [--json]`
//!
//! Spectral clustering ([`wgpu_unsupervised::SpectralClustering`]) of the rows of `--input`:
//! an RBF (`--gamma`, default 1) or k-nearest-neighbour (`--n-neighbors`, default 10) graph,
//! its normalised Laplacian's eigenvectors, K-Means on them. Writes the labels to `--output`
//! when given. `--json` keys: `algorithm` ("spectral"), `n`, `d`, `k`, `affinity`,
//! `eigenvalues`, `n_iter`, `fit_seconds`, `adapter`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use wgpu_unsupervised::io::InputMatrix;
use wgpu_unsupervised::{Affinity, Gpu, SpectralClustering, SpectralModel};

use crate::flow::{timed, Context, Human, Outputs, Report, Staging, Task};
use crate::{CliResult, Failure};

/// The graph option's values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum AffinityName {
    /// exp(−γ‖x − y‖²) between every pair of rows.
    Rbf,
    /// Each row's nearest rows, symmetrised.
    NearestNeighbors,
}

/// Arguments of `spectral`.
#[derive(Debug, clap::Args)]
pub struct SpectralArgs {
    /// Input matrix, one row per sample: .npy (2-D, C order) or .csv (optional header).
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Number of clusters (at least 2).
    #[arg(long, value_name = "K")]
    k: usize,
    /// The graph between rows [default: rbf].
    #[arg(long, value_enum, value_name = "GRAPH")]
    affinity: Option<AffinityName>,
    /// RBF only: γ of exp(−γ‖x − y‖²) [default: 1].
    #[arg(long, value_name = "G", allow_negative_numbers = true)]
    gamma: Option<f64>,
    /// nearest-neighbors only: neighbours per row, the row itself included [default: 10].
    #[arg(long, value_name = "N")]
    n_neighbors: Option<usize>,
    /// Restarts of the K-Means on the embedding [default: 10].
    #[arg(long, value_name = "N")]
    n_init: Option<usize>,
    /// Scale each embedding row to unit length before K-Means (Ng–Jordan–Weiss).
    #[arg(long)]
    normalize_rows: bool,
    /// Random seed; the same seed gives the same result on the same adapter [default: 0].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Write the labels here (.npy, dtype u4, or .csv).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// The one-line `--json` report of `spectral`.
#[derive(Serialize)]
struct SpectralReport<'a> {
    algorithm: &'static str,
    n: usize,
    d: usize,
    k: usize,
    affinity: &'static str,
    eigenvalues: &'a [f64],
    n_iter: usize,
    fit_seconds: f64,
    adapter: &'a str,
}

/// The `spectral` command.
pub struct Spectral {
    args: SpectralArgs,
    params: SpectralClustering,
}

impl Spectral {
    /// The command for `args`: an option of the other graph is an invalid argument (exit 2).
    pub fn new(args: SpectralArgs) -> CliResult<Self> {
        let affinity = match args.affinity.unwrap_or(AffinityName::Rbf) {
            AffinityName::Rbf => {
                if args.n_neighbors.is_some() {
                    return Err(Failure::invalid(
                        "--n-neighbors applies to --affinity nearest-neighbors only",
                    ));
                }
                Affinity::Rbf {
                    gamma: args.gamma.unwrap_or(1.0),
                }
            }
            AffinityName::NearestNeighbors => {
                if args.gamma.is_some() {
                    return Err(Failure::invalid("--gamma applies to --affinity rbf only"));
                }
                Affinity::NearestNeighbors {
                    n_neighbors: args.n_neighbors.unwrap_or(10),
                }
            }
        };
        let mut params = SpectralClustering::new(args.k)
            .affinity(affinity)
            .normalize_rows(args.normalize_rows);
        if let Some(n_init) = args.n_init {
            params = params.n_init(n_init);
        }
        if let Some(seed) = args.seed {
            params = params.seed(seed);
        }
        Ok(Self { args, params })
    }
}

impl Task for Spectral {
    /// The model and the fit's wall time.
    type Outcome = (SpectralModel, f64);

    fn input(&self) -> &Path {
        &self.args.input
    }

    fn outputs(&self) -> Outputs<'_> {
        Outputs::none().array("--output", self.args.output.as_deref(), "labels")
    }

    fn json(&self) -> bool {
        self.args.json
    }

    fn check(&mut self, n: usize, _d: usize) -> CliResult {
        Ok(self.params.validate(n)?)
    }

    fn compute(&self, gpu: &Gpu, x: &InputMatrix) -> CliResult<Self::Outcome> {
        timed(|| Ok(self.params.fit(gpu, x)?))
    }

    fn write(
        &self,
        _run: &Context<'_>,
        (model, _): &Self::Outcome,
        out: &mut Staging,
    ) -> CliResult {
        if let Some(path) = &self.args.output {
            out.labels(path, model.labels())?;
        }
        Ok(())
    }

    fn report(&self, run: &Context<'_>, (model, fit_seconds): &Self::Outcome) -> CliResult<Report> {
        let p = &self.params;
        let graph = match p.affinity {
            Affinity::Rbf { gamma } => format!("rbf, gamma {gamma}"),
            Affinity::NearestNeighbors { n_neighbors } => {
                format!("nearest-neighbors, n_neighbors {n_neighbors}")
            }
        };
        let mut human = Human::new();
        human
            .line("input", run.input_line())
            .line(
                "spectral",
                format!("k = {}, {graph}, n_init {}, seed {}", p.k, p.n_init, p.seed),
            )
            .line("eigenvalues", format!("{:.6?}", model.eigenvalues()))
            .line("iterations", model.n_iter())
            .line("fit time", format!("{fit_seconds:.3} s"))
            .file("labels", self.args.output.as_deref(), "--output FILE.npy");
        let json = SpectralReport {
            algorithm: "spectral",
            n: run.n,
            d: run.d,
            k: p.k,
            affinity: p.affinity.name(),
            eigenvalues: model.eigenvalues(),
            n_iter: model.n_iter(),
            fit_seconds: *fit_seconds,
            adapter: &run.info.name,
        };
        Report::new(&json, human)
    }
}
