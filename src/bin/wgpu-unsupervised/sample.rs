//! `wgpu-unsupervised sample --model gmm.json --n N [--seed S] --output X.npy
//! [--labels y.npy] [--json]`
//!
//! Draws N rows from a saved Gaussian mixture ([`GaussianMixtureModel::sample`],
//! scikit-learn's `GaussianMixture.sample`): the count of each component from the weights,
//! then Gaussian rows from its mean and covariance, grouped by component. Writes the N x D
//! rows (`f4`) to `--output` and, with `--labels`, the component of each row (`u4`), as one
//! set: both or neither, and only once every check and the draws succeeded. Runs on the host;
//! no GPU is opened. `--json` keys: `algorithm` ("gmm"), `command` ("sample"),
//! `n`, `d`, `k`, `seed`, `seconds`.

use std::path::PathBuf;

use serde::Serialize;
use wgpu_unsupervised::GaussianMixtureModel;

use crate::flow::{timed, Human, Outputs, Report, Staging};
use crate::{CliResult, Failure};

/// Arguments of `sample`.
#[derive(Debug, clap::Args)]
pub struct SampleArgs {
    /// Gaussian-mixture model file written by `gmm --model`.
    #[arg(long, value_name = "FILE")]
    model: PathBuf,
    /// Number of rows to draw.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    n: u64,
    /// Seed of the draws; the same seed gives the same rows [default: 0].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Write the N x D rows here (.npy, dtype f4, or .csv).
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
    /// Also write the component of every row here (.npy, dtype u4, or .csv).
    #[arg(long, value_name = "FILE")]
    labels: Option<PathBuf>,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// The one-line `--json` report of `sample`.
#[derive(Serialize)]
struct SampleReport {
    /// Always "gmm".
    algorithm: &'static str,
    /// Always "sample".
    command: &'static str,
    /// Rows drawn.
    n: usize,
    /// Features of the model.
    d: usize,
    /// Components of the model.
    k: usize,
    /// The seed of the draws.
    seed: u64,
    /// Wall time of the draws.
    seconds: f64,
}

/// `sample`: loads the model, draws, writes the rows (and labels), reports.
pub fn sample(args: SampleArgs) -> CliResult {
    let outputs = Outputs::none()
        .array("--output", Some(&args.output), "samples")
        .array("--labels", args.labels.as_deref(), "labels");
    outputs.check_names(&vec![("--model", &*args.model)])?;
    let model =
        GaussianMixtureModel::load(&args.model).map_err(|e| Failure::input(&args.model, e))?;
    outputs.check_writable()?;
    let (n, seed) = (args.n as usize, args.seed.unwrap_or(0));
    let ((rows, labels), seconds) = timed(|| Ok(model.sample(n, seed)?))?;
    let d = model.n_features();
    let rows32: Vec<f32> = rows.iter().map(|&v| v as f32).collect();
    let mut staged = Staging::new();
    staged.rows(&args.output, &rows32, n, d)?;
    if let Some(path) = &args.labels {
        staged.labels(path, &labels)?;
    }
    let mut human = Human::new();
    human
        .line(
            "model",
            format!(
                "{} (Gaussian mixture, {} components of {d} features)",
                args.model.display(),
                model.k()
            ),
        )
        .line(
            "samples",
            format!("{} ({n} x {d}, seed {seed})", args.output.display()),
        );
    if let Some(path) = &args.labels {
        human.line("labels", path.display());
    }
    human.line("time", format!("{seconds:.3} s"));
    let json = SampleReport {
        algorithm: "gmm",
        command: "sample",
        n,
        d,
        k: model.k(),
        seed,
        seconds,
    };
    let report = Report::new(&json, human)?;
    staged.commit()?;
    report.print(args.json)
}
