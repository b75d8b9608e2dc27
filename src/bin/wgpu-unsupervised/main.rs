//! `wgpu-unsupervised`: K-Means, PCA and Gaussian mixtures on the GPU from the command line.
//!
//! A thin layer over the library: arguments are parsed here, every check of data, parameters
//! and model files is the library's, and every command runs through one shared flow
//! ([`flow`]). One module per command family documents its commands and report keys:
//! [`kmeans`], [`gmm`], [`pca`], [`predict`] (`predict` and `transform`), [`evaluate`],
//! [`select_k`] (`select-k`), [`spectral`], [`sample`] and [`info`].
//!
//! Inputs are read by `wgpu_unsupervised::io::open_matrix`: `.npy` (2-D, C order, float or
//! integer dtype; f32 read a piece at a time, f64 kept in f64 and centred by every fit,
//! prediction and metric) or numeric `.csv` with an optional header line (one that holds no
//! number at all). Every value must be finite.
//!
//! With `--json` a command prints exactly one line of JSON on stdout and nothing else;
//! without it, a short human report. No output may be one of the command's inputs (exit 2,
//! before any work). Outputs are written as one set once the computation has succeeded and
//! its report has been checked: each to a temporary file first, then all renamed over their
//! targets, so a failure leaves no new file and changes no existing one ([`outputs`]). Every
//! check that does not need the GPU (arguments, output names and folders, the input, model
//! files) happens before the GPU starts.
//!
//! Model files are the library's (`wgpu_unsupervised::model_file`): a JSON envelope
//! `{"format":..,"version":1,"model":{..}}`, written atomically by `--model` and read by
//! `predict` and `transform`, which refuse other formats, other versions and models whose
//! parts do not fit together (the library's `validate`).
//!
//! Exit status: 0 on success; 2 for usage errors, invalid parameters and unreadable or
//! invalid input files (data or model), and for a mixture whose covariance stops being
//! positive definite (raise `--reg-covar`); 1 for runtime failures (no adapter, GPU errors,
//! device lost, out of memory, a power iteration that did not converge, outputs that cannot
//! be written). Errors are reported on stderr as `wgpu-unsupervised: error: <message>`, one
//! line, so that they cannot be mistaken for a driver's messages; a successful run prints
//! nothing on stderr (see [`headless`] for the one driver message that had to be avoided).

mod bench;
mod choices;
mod evaluate;
mod flow;
mod gmm;
mod headless;
mod info;
mod kmeans;
mod outputs;
mod pca;
mod predict;
mod progress;
mod sample;
mod select_k;
mod spectral;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use wgpu_unsupervised::Error;

/// Exit status for invalid parameters and unreadable or invalid inputs (clap uses it too).
const EXIT_INVALID: u8 = 2;

/// Exit status for runtime failures (GPU, device, writing outputs).
const EXIT_RUNTIME: u8 = 1;

/// What starts every error line, so that it cannot be confused with the `error: ` lines that
/// drivers and loaders print on the same stderr.
const ERROR_PREFIX: &str = "wgpu-unsupervised: error: ";

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(
    name = "wgpu-unsupervised",
    version,
    about = "K-Means clustering, PCA and Gaussian mixtures on any GPU through wgpu",
    long_about = "K-Means clustering, PCA and Gaussian mixtures on any GPU through wgpu \
                  (Vulkan, Metal, DX12, GL or the lavapipe software driver).\n\nExit status: \
                  0 success, 2 invalid arguments or input files, 1 runtime failure (GPU, a \
                  power iteration that did not converge, writing outputs)."
)]
struct Cli {
    /// The command to run.
    #[command(subcommand)]
    command: Command,
    /// Which GPU adapter to use: a number from `info --all`, or a part of the adapter's
    /// name, optionally after a backend and a colon (`1`, `llvmpipe`, `vulkan:nvidia`, `gl:`).
    /// By default the best one (discrete > integrated > software), as `info` shows.
    #[arg(long, global = true, value_name = "SELECTOR")]
    adapter: Option<String>,
    /// Print every iteration of the fits (restart, iteration, objective, change, seconds)
    /// and a summary per fit on stderr, as the library's `tracing` events.
    #[arg(long, short, global = true)]
    verbose: bool,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Fit K-Means on a matrix; optionally save the labels and the model.
    Kmeans(kmeans::KmeansArgs),
    /// Spectral clustering: an RBF or nearest-neighbour graph, its Laplacian's eigenvectors,
    /// K-Means on them (clusters that are connected but not convex).
    Spectral(spectral::SpectralArgs),
    /// Fit a Gaussian mixture by EM; optionally save the labels, the responsibilities and the
    /// model.
    Gmm(gmm::GmmArgs),
    /// Apply a saved model: K-Means or Gaussian-mixture labels (and mixture
    /// responsibilities), or PCA projections.
    Predict(predict::PredictArgs),
    /// Draw rows from a saved Gaussian-mixture model.
    Sample(sample::SampleArgs),
    /// Fit PCA on a matrix; optionally save the projections and the model.
    Pca(pca::PcaArgs),
    /// Project a matrix with a saved PCA model (or reconstruct it with --inverse), or
    /// measure its distances to a saved K-Means model's centroids.
    Transform(predict::TransformArgs),
    /// Show the GPU adapter and its limits.
    Info(info::InfoArgs),
    /// Time the hot kernels and the end-to-end fits against the adapter's measured
    /// ceilings (GFLOP/s, GB/s, roofline efficiency).
    Bench(bench::BenchArgs),
    /// Judge a labelling of a matrix: silhouette, Calinski–Harabasz, Davies–Bouldin,
    /// inertia, and the (adjusted) Rand index against true labels.
    Evaluate(evaluate::EvaluateArgs),
    /// Choose the number of clusters or components: elbow or gap statistic for K-Means,
    /// BIC or AIC for Gaussian mixtures, over a range of k.
    SelectK(select_k::SelectKArgs),
}

/// A failed command: the message for stderr and the exit status.
#[derive(Debug)]
struct Failure {
    /// What went wrong (may span lines; [`main`] joins them).
    message: String,
    /// The exit status, [`EXIT_INVALID`] or [`EXIT_RUNTIME`].
    code: u8,
}

impl Failure {
    /// A failure caused by the user's arguments or input files (exit 2).
    fn invalid(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: EXIT_INVALID,
        }
    }

    /// A failure of the machine rather than of the input (exit 1).
    fn runtime(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: EXIT_RUNTIME,
        }
    }

    /// A library error from reading the input file `path` (data, labels or model): always
    /// the input's fault (exit 2), even when it is an I/O error such as a missing file. The
    /// message names the file, also when the library's does not.
    fn input(path: &std::path::Path, e: Error) -> Self {
        match e {
            Error::Io { .. } | Error::Format { .. } | Error::NonFiniteInFile { .. } => {
                Self::invalid(e.to_string())
            }
            other => Self::invalid(format!("{}: {other}", path.display())),
        }
    }

    /// A library error from writing an output: always a runtime failure (exit 1).
    fn output(e: Error) -> Self {
        Self::runtime(e.to_string())
    }
}

impl From<Error> for Failure {
    /// Classifies a library error by its kind: bad data or parameters exit 2, anything the
    /// GPU, the device or the file system did exits 1.
    fn from(e: Error) -> Self {
        let code = match e {
            Error::InvalidParameter { .. }
            | Error::TooFewSamples { .. }
            | Error::EmptyData { .. }
            | Error::Shape { .. }
            | Error::NonFinite { .. }
            | Error::NonFiniteInFile { .. }
            | Error::FeatureMismatch { .. }
            | Error::Format { .. }
            | Error::Source { .. }
            | Error::OutOfRange { .. }
            | Error::InvalidModel { .. }
            | Error::ModelFormat { .. } => EXIT_INVALID,
            _ => EXIT_RUNTIME,
        };
        Self {
            message: e.to_string(),
            code,
        }
    }
}

/// Shorthand for the commands' results.
type CliResult<T = ()> = Result<T, Failure>;

/// Parses the arguments, runs the command and turns any failure into one prefixed line on
/// stderr.
fn main() -> ExitCode {
    // Before anything else: it may set an environment variable, which is only sound while
    // the process has a single thread.
    headless::avoid_window_system_probe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    // A panic would be a bug, but it should still end as one error line and exit 1.
    std::panic::set_hook(Box::new(|info| {
        let message = one_line(&format!("internal error (a bug, please report it): {info}"));
        let _ = writeln!(std::io::stderr(), "{ERROR_PREFIX}{message}");
    }));
    match std::panic::catch_unwind(|| run(cli)) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(failure)) => {
            let _ = writeln!(
                std::io::stderr(),
                "{ERROR_PREFIX}{}",
                one_line(&failure.message)
            );
            ExitCode::from(failure.code)
        }
        Err(_) => ExitCode::from(EXIT_RUNTIME),
    }
}

/// Reports what clap found wrong with the command line (exit 2), or prints the help or
/// version it was asked for (exit 0). Its usage errors get the program's prefix like every
/// other error; its help and version text stay as clap writes them.
fn usage_error(e: clap::Error) -> ExitCode {
    if !e.use_stderr() {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    // clap renders "error: <what>" then usage lines (or, with no subcommand, the help):
    // keep them, with the program's prefix on the error line.
    let text = e.render().to_string();
    let _ = match text.strip_prefix("error: ") {
        Some(rest) => write!(std::io::stderr(), "{ERROR_PREFIX}{rest}"),
        None => write!(std::io::stderr(), "{text}"),
    };
    ExitCode::from(EXIT_INVALID)
}

/// Runs one command.
fn run(cli: Cli) -> CliResult {
    flow::choose_adapter(cli.adapter.as_deref())?;
    progress::show_events(cli.verbose);
    match cli.command {
        Command::Kmeans(args) => flow::run(kmeans::Kmeans::new(args)),
        Command::Gmm(args) => flow::run(gmm::Gmm::new(args)),
        Command::Spectral(args) => flow::run(spectral::Spectral::new(args)?),
        Command::Pca(args) => flow::run(pca::PcaFit::new(args)?),
        Command::Predict(args) => predict::predict(args),
        Command::Transform(args) => predict::transform(args),
        Command::Sample(args) => sample::sample(args),
        Command::Evaluate(args) => flow::run(evaluate::Evaluate::new(args)?),
        Command::SelectK(args) => flow::run(select_k::SelectK::new(args)?),
        Command::Info(args) => info::info(args),
        Command::Bench(args) => bench::bench(args),
    }
}

/// Joins the lines of a (possibly multi-line, e.g. wgpu validation) message into one.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
