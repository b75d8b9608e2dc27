//! `wgpu-unsupervised evaluate --input X --labels y.npy [--truth t.npy] [--sample-size N]
//! [--seed N] [--precomputed] [--json]`
//!
//! Judges a labelling of `--input` (one integer label per row, `.npy` 1-D or `.csv`, read
//! by `wgpu_unsupervised::io::read_labels`) with [`wgpu_unsupervised::metrics::evaluate`]:
//! the silhouette (on the GPU; on a random sample of `--sample-size` rows drawn with
//! `--seed` when given), Calinski–Harabasz, Davies–Bouldin and the inertia around the
//! clusters' means, and with `--truth` the agreement scores. The first three need
//! 2 ≤ clusters ≤ N − 1: for one cluster or all singletons they are left out and the reason
//! is given (`undefined` in JSON), while the inertia and the agreement scores are reported.
//! With `--precomputed` the input is an N x N distance matrix: the silhouette comes from it
//! ([`wgpu_unsupervised::metrics::evaluate_precomputed`]) and the criteria that need the
//! points are `undefined`. `--json` keys: `n`, `d`, `k`, `silhouette`,
//! `calinski_harabasz`, `davies_bouldin`, `inertia` (each when defined), `undefined` (an
//! object naming each left-out key with the reason), with `--truth` the agreement keys
//! `rand_index`, `adjusted_rand_index`, `mutual_information`,
//! `normalized_mutual_information`, `adjusted_mutual_information`, `homogeneity`,
//! `completeness`, `v_measure`, `fowlkes_mallows`, then `silhouette_rows`, `seconds`,
//! `adapter`. No number field is ever `null`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use wgpu_unsupervised::io::InputMatrix;
use wgpu_unsupervised::metrics::{self, Evaluation};
use wgpu_unsupervised::{io, Gpu, Matrix};

use crate::flow::{timed, whole, Context, Human, Inputs, Outputs, Report, Task};
use crate::{CliResult, Failure};

/// Arguments of `evaluate`.
#[derive(Debug, clap::Args)]
pub struct EvaluateArgs {
    /// Input matrix, one row per sample: .npy (2-D, C order) or .csv (optional header).
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// The labelling to judge, one integer label per row (.npy 1-D integer, or .csv).
    #[arg(long, value_name = "FILE")]
    labels: PathBuf,
    /// True labels, one per row: adds the Rand index and the adjusted Rand index.
    #[arg(long, value_name = "FILE")]
    truth: Option<PathBuf>,
    /// Silhouette on a random sample of this many rows (at least 3, so that the sample can
    /// hold 2 clusters of which one has two rows) instead of all rows.
    #[arg(long, value_name = "N", conflicts_with = "precomputed")]
    sample_size: Option<usize>,
    /// The input is an N x N matrix of distances between the points (scikit-learn's
    /// metric="precomputed"): the silhouette comes from it; the criteria that need the
    /// points' coordinates are reported as not defined.
    #[arg(long)]
    precomputed: bool,
    /// Seed of the silhouette's random sample [default: 0].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// The one-line `--json` report of `evaluate`.
#[derive(Serialize)]
struct EvaluateReport<'a> {
    /// Rows of the input.
    n: usize,
    /// Features of the input (N with `--precomputed`).
    d: usize,
    /// Distinct labels in `--labels`.
    k: usize,
    /// The criteria that are defined, `undefined` for the others, the agreement scores.
    #[serde(flatten)]
    evaluation: &'a Evaluation,
    /// Rows the silhouette was computed on (0 when it is not defined).
    silhouette_rows: usize,
    /// Wall time of the metrics (upload included, GPU start-up and file I/O excluded).
    seconds: f64,
    /// Adapter name.
    adapter: &'a str,
}

/// The `evaluate` command.
pub struct Evaluate {
    /// The command line.
    args: EvaluateArgs,
    /// `--labels`, read and checked against the input.
    labels: Vec<u32>,
    /// `--truth`, read and checked against the input.
    truth: Option<Vec<u32>>,
    /// Distinct labels in `--labels`.
    k: usize,
}

impl Evaluate {
    /// The command for `args`; refuses a sample too small for a silhouette (exit 2).
    pub fn new(args: EvaluateArgs) -> CliResult<Self> {
        if let Some(m) = args.sample_size.filter(|&m| m < 3) {
            return Err(Failure::invalid(format!(
                "--sample-size must be at least 3, got {m}: the silhouette needs at least 2 \
                 clusters and fewer clusters than rows among the sampled rows"
            )));
        }
        Ok(Self {
            args,
            labels: Vec::new(),
            truth: None,
            k: 0,
        })
    }
}

/// Reads a labels file given to `flag` and checks it has one label per row (exit 2).
fn read_row_labels(path: &Path, flag: &str, n: usize) -> CliResult<Vec<u32>> {
    let labels = io::read_labels(path).map_err(|e| Failure::input(path, e))?;
    if labels.len() != n {
        return Err(Failure::invalid(format!(
            "{}: {flag} has {} labels but the input has {n} rows",
            path.display(),
            labels.len()
        )));
    }
    Ok(labels)
}

impl Task for Evaluate {
    /// The metrics and their wall time.
    type Outcome = (Evaluation, f64);

    fn input(&self) -> &Path {
        &self.args.input
    }

    fn inputs(&self) -> Inputs<'_> {
        let mut inputs = vec![("--input", self.args.input.as_path())];
        inputs.push(("--labels", &self.args.labels));
        if let Some(path) = &self.args.truth {
            inputs.push(("--truth", path));
        }
        inputs
    }

    fn outputs(&self) -> Outputs<'_> {
        Outputs::none()
    }

    fn json(&self) -> bool {
        self.args.json
    }

    fn check(&mut self, n: usize, d: usize) -> CliResult {
        if self.args.precomputed && d != n {
            return Err(Failure::invalid(format!(
                "{}: --precomputed needs an N x N distance matrix, got {n} x {d}",
                self.args.input.display()
            )));
        }
        self.labels = read_row_labels(&self.args.labels, "--labels", n)?;
        self.truth = match &self.args.truth {
            Some(path) => Some(read_row_labels(path, "--truth", n)?),
            None => None,
        };
        let mut distinct = self.labels.clone();
        distinct.sort_unstable();
        distinct.dedup();
        self.k = distinct.len();
        Ok(())
    }

    fn compute(&self, gpu: &Gpu, x: &InputMatrix) -> CliResult<Self::Outcome> {
        let (n, d) = x.shape();
        // f64 files keep their values: distances checked at f64's tolerance, data centred
        // in f64 (module `origin`).
        let input = |e| Failure::input(&self.args.input, e);
        if let Some(wide) = x.wide().map_err(input)? {
            let truth = self.truth.as_deref();
            if self.args.precomputed {
                let (slice, labels) = (wide.as_slice(), &self.labels);
                return timed(|| Ok(metrics::evaluate_precomputed(slice, n, labels, truth)?));
            }
            let (size, seed) = (self.args.sample_size, self.args.seed.unwrap_or(0));
            return timed(|| {
                Ok(metrics::evaluate(
                    gpu,
                    &wide,
                    &self.labels,
                    truth,
                    size,
                    seed,
                )?)
            });
        }
        let values = whole(&self.args.input, x)?;
        let x = Matrix::new(&values, d).map_err(|e| Failure::input(&self.args.input, e))?;
        if self.args.precomputed {
            return timed(|| {
                Ok(metrics::evaluate_precomputed(
                    x.as_slice(),
                    n,
                    &self.labels,
                    self.truth.as_deref(),
                )?)
            });
        }
        timed(|| {
            Ok(metrics::evaluate(
                gpu,
                &x,
                &self.labels,
                self.truth.as_deref(),
                self.args.sample_size,
                self.args.seed.unwrap_or(0),
            )?)
        })
    }

    fn report(&self, run: &Context<'_>, (e, seconds): &Self::Outcome) -> CliResult<Report> {
        let n = run.n;
        let silhouette_rows = match e.silhouette {
            Some(_) => self.args.sample_size.map_or(n, |m| m.min(n)),
            None => 0,
        };
        let mut human = Human::new();
        human.line("input", run.input_line()).line(
            "labels",
            format!("{} ({} clusters)", self.args.labels.display(), self.k),
        );
        let criteria: [(&'static str, &str, Option<f64>, &str); 4] = [
            (
                "silhouette",
                "silhouette",
                e.silhouette,
                "in [-1, 1], higher is better",
            ),
            (
                "calinski-harabasz",
                "calinski_harabasz",
                e.calinski_harabasz,
                "higher is better",
            ),
            (
                "davies-bouldin",
                "davies_bouldin",
                e.davies_bouldin,
                "lower is better",
            ),
            (
                "inertia",
                "inertia",
                e.inertia,
                "within-cluster sum of squares",
            ),
        ];
        for (label, key, value, note) in criteria {
            match (value, e.undefined.get(key)) {
                (Some(v), _) if key == "silhouette" => human.line(
                    label,
                    format!("{v} (on {silhouette_rows} of {n} rows; {note})"),
                ),
                (Some(v), _) => human.line(label, format!("{v} ({note})")),
                (None, reason) => human.line(
                    label,
                    format!("not defined: {}", reason.map_or("", String::as_str)),
                ),
            };
        }
        if let (Some(a), Some(path)) = (&e.agreement, &self.args.truth) {
            human
                .line("truth", path.display())
                .line("rand index", a.rand_index)
                .line("adjusted rand index", a.adjusted_rand_index)
                .line(
                    "mutual information",
                    format!("{} nats", a.mutual_information),
                )
                .line("normalized mutual info", a.normalized_mutual_information)
                .line("adjusted mutual info", a.adjusted_mutual_information)
                .line("homogeneity", a.homogeneity)
                .line("completeness", a.completeness)
                .line("v-measure", a.v_measure)
                .line("fowlkes-mallows", a.fowlkes_mallows);
        }
        human.line("time", format!("{seconds:.3} s"));
        let json = EvaluateReport {
            n,
            d: run.d,
            k: self.k,
            evaluation: e,
            silhouette_rows,
            seconds: *seconds,
            adapter: &run.info.name,
        };
        Report::new(&json, human)
    }
}
