//! Applying a saved model.
//!
//! * `wgpu-unsupervised predict --model model.json --input X --output out.npy
//!   [--proba P.npy] [--json]`
//!
//!   A K-Means model assigns every row to its nearest centroid (labels, `u4`); a
//!   Gaussian-mixture model assigns it to its most probable component (labels, `u4`) and,
//!   with `--proba`, writes the N x K responsibilities (`f4`; `--proba` is refused for other
//!   models); a PCA model projects the rows, as `transform` does. `--json` keys for labels:
//!   `algorithm`, `command`, `n`, `d`, `k`, `adapter`, `seconds`.
//! * `wgpu-unsupervised transform --model m.json --input X --output Z.npy [--inverse] [--json]`
//!
//!   Projects every row of `--input` with a saved PCA model (N x M, `f4`); with `--inverse`,
//!   reconstructs N x D rows from N x M projections. With a K-Means model, writes every
//!   row's distances to the K centroids (N x K, `f4`; scikit-learn's `KMeans.transform`;
//!   chord distances for the cosine metric). `--json` keys: `algorithm` ("pca" or
//!   "kmeans"), `command`, `inverse`, `n`, `d`, `n_components` (the result's columns: M, or
//!   K for K-Means), `n_features`, `adapter`, `seconds`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use wgpu_unsupervised::io::InputMatrix;
use wgpu_unsupervised::model_file::{Model, GMM_FORMAT, PCA_FORMAT};
use wgpu_unsupervised::{Error, GaussianMixtureModel, Gpu, KMeansModel, PcaModel};

use crate::flow::{self, timed, Context, Human, Inputs, Outputs, Report, Staging, Task};
use crate::{CliResult, Failure};

/// Arguments of `predict`.
#[derive(Debug, clap::Args)]
pub struct PredictArgs {
    /// Model file written by `kmeans --model`, `gmm --model` or `pca --model`.
    #[arg(long, value_name = "FILE")]
    model: PathBuf,
    /// Input matrix with the model's number of features: .npy or .csv.
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Write the result here (.npy, or .csv: the extension decides): labels (u4) for K-Means
    /// and Gaussian mixtures, N x M projections (f4) for PCA.
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
    /// Gaussian-mixture models only: also write the N x K responsibilities p(k | x) here
    /// (.npy, dtype f4, or .csv).
    #[arg(long, value_name = "FILE")]
    proba: Option<PathBuf>,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// Arguments of `transform`.
#[derive(Debug, clap::Args)]
pub struct TransformArgs {
    /// Model file written by `pca --model` (projections) or `kmeans --model` (distances to
    /// the centroids).
    #[arg(long, value_name = "FILE")]
    model: PathBuf,
    /// Input matrix: N x D rows (N x M projections with --inverse), .npy or .csv.
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Write the projections (reconstructions with --inverse) here (.npy, dtype f4, or .csv).
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
    /// PCA models only: reconstruct N x D rows from N x M projections instead of projecting.
    #[arg(long)]
    inverse: bool,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// The one-line `--json` report of `predict` with a K-Means or Gaussian-mixture model.
#[derive(Serialize)]
struct PredictReport<'a> {
    /// "kmeans" or "gmm".
    algorithm: &'static str,
    /// Always "predict".
    command: &'static str,
    /// Rows of the input.
    n: usize,
    /// Features of the input.
    d: usize,
    /// Number of clusters (components) of the model.
    k: usize,
    /// Adapter name.
    adapter: &'a str,
    /// Wall time of the prediction (upload and readback included).
    seconds: f64,
}

/// The one-line `--json` report of `transform`, and of `predict` with a PCA model.
#[derive(Serialize)]
struct TransformReport<'a> {
    /// "pca" or "kmeans".
    algorithm: &'static str,
    /// "transform" or "predict".
    command: &'static str,
    /// Whether the rows were reconstructed (`--inverse`) rather than projected.
    inverse: bool,
    /// Rows of the input.
    n: usize,
    /// Columns of the input (D, or M with `--inverse`).
    d: usize,
    /// Columns of the result's rows: the components M (K distances for K-Means).
    n_components: usize,
    /// Features of the model, D.
    n_features: usize,
    /// Adapter name.
    adapter: &'a str,
    /// Wall time of the projection (upload and readback included).
    seconds: f64,
}

/// Reads the model file given to `--model` (any failure is the file's: exit 2).
fn load(path: &Path) -> CliResult<Model> {
    Model::load(path).map_err(|e| Failure::input(path, e))
}

/// What a model file holds, as the refusals name it: `a K-Means model (format "...")`.
fn described(model: &Model) -> String {
    format!("a {} model (format \"{}\")", model.name(), model.format())
}

/// `predict`: loads the model, then runs the task its kind calls for.
pub fn predict(args: PredictArgs) -> CliResult {
    // The names first: no output may be the model or the input (before the model is read).
    Outputs::none()
        .array("--output", Some(&args.output), "results")
        .array("--proba", args.proba.as_deref(), "responsibilities")
        .check_names(&vec![("--model", &*args.model), ("--input", &*args.input)])?;
    let model = load(&args.model)?;
    if args.proba.is_some() && !matches!(model, Model::GaussianMixture(_)) {
        return Err(Failure::invalid(format!(
            "{}: {}; --proba writes the responsibilities of a Gaussian-mixture model (format \
             \"{GMM_FORMAT}\", written by `gmm --model`)",
            args.model.display(),
            described(&model)
        )));
    }
    match model {
        Model::KMeans(model) => flow::run(Labels {
            model: Labelling::KMeans(model),
            args,
        }),
        Model::GaussianMixture(model) => flow::run(Labels {
            model: Labelling::Mixture(Box::new(model)),
            args,
        }),
        Model::Pca(model) => flow::run(Projection {
            model: Transformer::Pca(model),
            model_path: args.model,
            input: args.input,
            output: args.output,
            inverse: false,
            json: args.json,
            command: "predict",
        }),
    }
}

/// `transform`: loads a PCA model, then projects (or reconstructs) the input, or a K-Means
/// model, then measures the distances to its centroids.
pub fn transform(args: TransformArgs) -> CliResult {
    Outputs::none()
        .array("--output", Some(&args.output), "results")
        .check_names(&vec![("--model", &*args.model), ("--input", &*args.input)])?;
    let model = match load(&args.model)? {
        Model::Pca(model) => Transformer::Pca(model),
        Model::KMeans(model) if !args.inverse => Transformer::KMeans(model),
        other => {
            let instead = match other {
                Model::GaussianMixture(_) => "; use predict for labels and responsibilities",
                _ => " (--inverse reconstructs from PCA projections only)",
            };
            return Err(Failure::invalid(format!(
                "{}: {}; transform needs a PCA model (format \"{PCA_FORMAT}\", written by \
                 `pca --model`) or a K-Means model{instead}",
                args.model.display(),
                described(&other)
            )));
        }
    };
    flow::run(Projection {
        model,
        model_path: args.model,
        input: args.input,
        output: args.output,
        inverse: args.inverse,
        json: args.json,
        command: "transform",
    })
}

/// A model that maps rows to new coordinates.
enum Transformer {
    /// Projections onto the components (reconstructions with `--inverse`).
    Pca(PcaModel),
    /// Distances to the centroids.
    KMeans(KMeansModel),
}

impl Transformer {
    /// Features the model reads, D.
    fn n_features(&self) -> usize {
        match self {
            Transformer::Pca(m) => m.n_features(),
            Transformer::KMeans(m) => m.n_features(),
        }
    }

    /// Columns of a transformed row: M components or K distances.
    fn n_outputs(&self) -> usize {
        match self {
            Transformer::Pca(m) => m.n_components(),
            Transformer::KMeans(m) => m.k(),
        }
    }
}

/// A model that labels rows.
enum Labelling {
    /// Nearest centroid.
    KMeans(KMeansModel),
    /// Most probable component; responsibilities with `--proba`.
    Mixture(Box<GaussianMixtureModel>),
}

impl Labelling {
    /// Features the model was fitted on, D.
    fn n_features(&self) -> usize {
        match self {
            Labelling::KMeans(m) => m.n_features(),
            Labelling::Mixture(m) => m.n_features(),
        }
    }

    /// Clusters or components, K.
    fn k(&self) -> usize {
        match self {
            Labelling::KMeans(m) => m.k(),
            Labelling::Mixture(m) => m.k(),
        }
    }
}

/// `predict` with a K-Means or Gaussian-mixture model.
struct Labels {
    /// The model.
    model: Labelling,
    /// The command line.
    args: PredictArgs,
}

/// What a labelling produced: labels, responsibilities when asked, wall time.
type Labelled = ((Vec<u32>, Option<Vec<f32>>), f64);

/// Refuses data whose width is not the model's (exit 2), before the GPU starts.
fn check_features(expected: usize, found: usize) -> CliResult {
    if found == expected {
        return Ok(());
    }
    Err(Failure::from(Error::FeatureMismatch { expected, found }))
}

impl Task for Labels {
    type Outcome = Labelled;

    fn input(&self) -> &Path {
        &self.args.input
    }

    fn inputs(&self) -> Inputs<'_> {
        vec![("--input", &self.args.input), ("--model", &self.args.model)]
    }

    fn outputs(&self) -> Outputs<'_> {
        Outputs::none()
            .array("--output", Some(&self.args.output), "labels")
            .array("--proba", self.args.proba.as_deref(), "responsibilities")
    }

    fn json(&self) -> bool {
        self.args.json
    }

    fn check(&mut self, _n: usize, d: usize) -> CliResult {
        check_features(self.model.n_features(), d)
    }

    fn compute(&self, gpu: &Gpu, x: &InputMatrix) -> CliResult<Labelled> {
        timed(|| match &self.model {
            Labelling::KMeans(model) => Ok((model.predict(gpu, x)?, None)),
            Labelling::Mixture(model) => {
                // One E-step gives both the labels and the responsibilities.
                let evaluation = model.evaluate_gpu(gpu, x)?;
                let proba = match &self.args.proba {
                    Some(_) => Some(evaluation.responsibilities.to_host(gpu)?),
                    None => None,
                };
                Ok((evaluation.labels.to_host(gpu)?, proba))
            }
        })
    }

    fn write(
        &self,
        run: &Context<'_>,
        ((labels, proba), _): &Labelled,
        out: &mut Staging,
    ) -> CliResult {
        out.labels(&self.args.output, labels)?;
        if let (Some(path), Some(proba)) = (&self.args.proba, proba) {
            out.rows(path, proba, run.n, self.model.k())?;
        }
        Ok(())
    }

    fn report(&self, run: &Context<'_>, (_, seconds): &Labelled) -> CliResult<Report> {
        let (k, n) = (self.model.k(), run.n);
        let (algorithm, described) = match &self.model {
            Labelling::KMeans(m) => ("kmeans", format!("k = {k}, d = {}", m.n_features())),
            Labelling::Mixture(m) => (
                "gmm",
                format!(
                    "Gaussian mixture, k = {k}, d = {}, {} covariances",
                    m.n_features(),
                    m.covariance_type().name()
                ),
            ),
        };
        let mut human = Human::new();
        human
            .line(
                "model",
                format!("{} ({described})", self.args.model.display()),
            )
            .line("input", run.input_line())
            .line("time", format!("{seconds:.3} s"))
            .line("labels", self.args.output.display());
        if let Some(p) = &self.args.proba {
            human.line("proba", format!("{} ({n} x {k})", p.display()));
        }
        let json = PredictReport {
            algorithm,
            command: "predict",
            n,
            d: run.d,
            k,
            adapter: &run.info.name,
            seconds: *seconds,
        };
        Report::new(&json, human)
    }
}

/// `transform`, and `predict` with a PCA model: projections or, with `inverse`,
/// reconstructions.
struct Projection {
    /// The model.
    model: Transformer,
    /// Where it was read from, for the report.
    model_path: PathBuf,
    /// The rows (N x D) or, with `inverse`, the projections (N x M).
    input: PathBuf,
    /// Where the result goes.
    output: PathBuf,
    /// Reconstruct instead of projecting.
    inverse: bool,
    /// `--json`.
    json: bool,
    /// "transform" or "predict", for the report.
    command: &'static str,
}

impl Projection {
    /// Columns of the result: M when projecting, D when reconstructing, K for K-Means.
    fn result_columns(&self) -> usize {
        if self.inverse {
            self.model.n_features()
        } else {
            self.model.n_outputs()
        }
    }
}

impl Projection {
    /// What the result's rows are.
    fn result_name(&self) -> &'static str {
        match (&self.model, self.inverse) {
            (Transformer::KMeans(_), _) => "distances",
            (_, true) => "reconstructions",
            (_, false) => "projections",
        }
    }
}

impl Task for Projection {
    /// The N x M projections (N x D reconstructions) and their wall time.
    type Outcome = (Vec<f32>, f64);

    fn input(&self) -> &Path {
        &self.input
    }

    fn inputs(&self) -> Inputs<'_> {
        vec![("--input", &self.input), ("--model", &self.model_path)]
    }

    fn outputs(&self) -> Outputs<'_> {
        Outputs::none().array("--output", Some(&self.output), self.result_name())
    }

    fn json(&self) -> bool {
        self.json
    }

    fn check(&mut self, _n: usize, d: usize) -> CliResult {
        let m = self.model.n_outputs();
        if self.inverse && d != m {
            return Err(Failure::invalid(format!(
                "feature count mismatch: --inverse reads N x M projections and the model has \
                 M = {m} components, the data has {d} columns"
            )));
        }
        if self.inverse {
            return Ok(());
        }
        check_features(self.model.n_features(), d)
    }

    fn compute(&self, gpu: &Gpu, x: &InputMatrix) -> CliResult<Self::Outcome> {
        timed(|| match (&self.model, self.inverse) {
            (Transformer::Pca(m), true) => Ok(m.inverse_transform(gpu, x)?),
            (Transformer::Pca(m), false) => Ok(m.transform(gpu, x)?),
            (Transformer::KMeans(m), _) => Ok(m.transform(gpu, x)?),
        })
    }

    fn write(
        &self,
        run: &Context<'_>,
        (values, _): &Self::Outcome,
        out: &mut Staging,
    ) -> CliResult {
        out.rows(&self.output, values, run.n, self.result_columns())
    }

    fn report(&self, run: &Context<'_>, (_, seconds): &Self::Outcome) -> CliResult<Report> {
        let (m, d, n) = (self.model.n_outputs(), self.model.n_features(), run.n);
        let cols = self.result_columns();
        let result = self.result_name();
        let (algorithm, described) = match &self.model {
            Transformer::Pca(_) => ("pca", format!("PCA, {m} components of {d} features")),
            Transformer::KMeans(_) => ("kmeans", format!("K-Means, {m} centroids of {d} features")),
        };
        let mut human = Human::new();
        human
            .line(
                "model",
                format!("{} ({described})", self.model_path.display()),
            )
            .line(
                "input",
                format!("{} ({n} rows x {} columns)", run.input.display(), run.d),
            )
            .line("time", format!("{seconds:.3} s"))
            .line(result, format!("{} ({n} x {cols})", self.output.display()));
        let json = TransformReport {
            algorithm,
            command: self.command,
            inverse: self.inverse,
            n,
            d: run.d,
            n_components: m,
            n_features: d,
            adapter: &run.info.name,
            seconds: *seconds,
        };
        Report::new(&json, human)
    }
}
