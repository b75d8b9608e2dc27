//! `wgpu-unsupervised`: K-Means on the GPU from the command line.
//!
//! Commands:
//!
//! * `wgpu-unsupervised kmeans --input X.{npy,csv} --k 8 [--n-init N] [--max-iter N]
//!   [--tol F] [--seed N] [--init k-means++|random] [--output labels.npy]
//!   [--model model.json] [--json]`
//!
//!   Fits K-Means on the matrix in `--input` (one row per sample), then writes the training
//!   labels as a 1-D `u4` `.npy` array to `--output` and the fitted model as JSON to
//!   `--model`, when given. Parameters left out keep the library's defaults (see
//!   [`wgpu_unsupervised::KMeans`]).
//! * `wgpu-unsupervised predict --model model.json --input X --output labels.npy [--json]`
//!
//!   Assigns every row of `--input` to the nearest centroid of a saved model.
//! * `wgpu-unsupervised info [--json]`
//!
//!   Prints the adapter the program would use (name, backend, device type, driver) and the
//!   device limits that matter to the crate.
//!
//! Inputs are read by [`wgpu_unsupervised::io::read_matrix`]: `.npy` (2-D, C order, float or
//! integer dtype) or numeric `.csv` with an optional header line. Every value must be finite.
//!
//! With `--json` a command prints exactly one line of JSON on stdout and nothing else;
//! without it, a short human report. Outputs are written only once the computation has
//! succeeded, each atomically (a temporary file renamed over the target), so a failure never
//! leaves a partial file.
//!
//! The model file is a JSON envelope
//! `{"format":"wgpu-unsupervised/kmeans","version":1,"model":{..}}` around the serde form of
//! [`wgpu_unsupervised::KMeansModel`]; `predict` refuses other formats, other versions and
//! models whose parts do not fit together.
//!
//! Exit status: 0 on success; 2 for usage errors, invalid parameters and unreadable or
//! invalid input files (data or model); 1 for runtime failures (no adapter, GPU errors,
//! device lost, out of memory, outputs that cannot be written). Errors are reported as one
//! line, `error: <message>`, on stderr.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};
use wgpu_unsupervised::io::{self, Dataset};
use wgpu_unsupervised::{Error, Gpu, GpuInfo, KMeans, KMeansInit, KMeansModel, Matrix};

/// The `format` field of a model file written by this program.
const MODEL_FORMAT: &str = "wgpu-unsupervised/kmeans";

/// The `version` field of a model file written by this program (the only one it reads).
const MODEL_VERSION: u64 = 1;

/// Exit status for invalid parameters and unreadable or invalid inputs (clap uses it too).
const EXIT_INVALID: u8 = 2;

/// Exit status for runtime failures (GPU, device, writing outputs).
const EXIT_RUNTIME: u8 = 1;

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(
    name = "wgpu-unsupervised",
    version,
    about = "K-Means clustering on any GPU through wgpu",
    long_about = "K-Means clustering on any GPU through wgpu (Vulkan, Metal, DX12, GL or the \
                  lavapipe software driver).\n\nExit status: 0 success, 2 invalid arguments or \
                  input files, 1 runtime failure (GPU, writing outputs)."
)]
struct Cli {
    /// The command to run.
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Fit K-Means on a matrix; optionally save the labels and the model.
    Kmeans(KmeansArgs),
    /// Assign the rows of a matrix to the centroids of a saved model.
    Predict(PredictArgs),
    /// Show the GPU adapter and its limits.
    Info(InfoArgs),
}

/// Arguments of `kmeans`.
#[derive(Debug, clap::Args)]
struct KmeansArgs {
    /// Input matrix, one row per sample: .npy (2-D, C order) or .csv (optional header).
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Number of clusters.
    #[arg(long, value_name = "K")]
    k: usize,
    /// Independent restarts; the lowest inertia wins [default: 1].
    #[arg(long, value_name = "N")]
    n_init: Option<usize>,
    /// Maximum Lloyd iterations per restart [default: 300].
    #[arg(long, value_name = "N")]
    max_iter: Option<usize>,
    /// Convergence tolerance, relative to the mean feature variance [default: 1e-4].
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    tol: Option<f64>,
    /// Random seed; the same seed gives the same result on the same adapter [default: 0].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Initialisation method [default: k-means++].
    #[arg(long, value_enum, value_name = "METHOD")]
    init: Option<InitArg>,
    /// Write the training labels here (.npy, dtype u4).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write the fitted model here (JSON).
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// Arguments of `predict`.
#[derive(Debug, clap::Args)]
struct PredictArgs {
    /// Model file written by `kmeans --model`.
    #[arg(long, value_name = "FILE")]
    model: PathBuf,
    /// Input matrix with the model's number of features: .npy or .csv.
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Write the labels here (.npy, dtype u4).
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// Arguments of `info`.
#[derive(Debug, clap::Args)]
struct InfoArgs {
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// The `--init` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum InitArg {
    /// Greedy k-means++ seeding.
    #[value(name = "k-means++", alias = "kmeans++")]
    KMeansPlusPlus,
    /// K distinct rows chosen uniformly at random.
    Random,
}

impl InitArg {
    /// The library's initialisation for this choice.
    fn to_init(self) -> KMeansInit {
        match self {
            InitArg::KMeansPlusPlus => KMeansInit::KMeansPlusPlus,
            InitArg::Random => KMeansInit::Random,
        }
    }
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
    /// A failure caused by the user's parameters or input files (exit 2).
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

    /// A library error from reading an input file: always the input's fault (exit 2).
    fn input(e: Error) -> Self {
        Self::invalid(e.to_string())
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
            | Error::FeatureMismatch { .. }
            | Error::Format { .. } => EXIT_INVALID,
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

/// The model file: a format envelope around the serialized model (borrowed for writing).
#[derive(Serialize)]
struct ModelFileOut<'a> {
    /// Always [`MODEL_FORMAT`].
    format: &'static str,
    /// Always [`MODEL_VERSION`].
    version: u64,
    /// The fitted model.
    model: &'a KMeansModel,
}

/// The envelope of a model file as read, before its fields are checked.
#[derive(Deserialize)]
struct ModelFileIn {
    /// Must be [`MODEL_FORMAT`].
    format: Option<serde_json::Value>,
    /// Must be [`MODEL_VERSION`].
    version: Option<serde_json::Value>,
    /// The model, deserialized once the envelope is accepted.
    model: Option<serde_json::Value>,
}

/// The one-line `--json` report of `kmeans`.
#[derive(Serialize)]
struct FitReport<'a> {
    /// Always "kmeans".
    algorithm: &'static str,
    /// Rows of the input.
    n: usize,
    /// Features of the input.
    d: usize,
    /// Number of clusters.
    k: usize,
    /// Final within-cluster sum of squares.
    inertia: f64,
    /// Lloyd iterations of the kept restart.
    n_iter: usize,
    /// Whether the kept restart converged before `max_iter`.
    converged: bool,
    /// Wall time of the fit (data upload included, GPU start-up and file I/O excluded).
    fit_seconds: f64,
    /// Adapter name.
    adapter: &'a str,
}

/// The one-line `--json` report of `predict`.
#[derive(Serialize)]
struct PredictReport<'a> {
    /// Always "kmeans".
    algorithm: &'static str,
    /// Always "predict".
    command: &'static str,
    /// Rows of the input.
    n: usize,
    /// Features of the input.
    d: usize,
    /// Number of clusters of the model.
    k: usize,
    /// Adapter name.
    adapter: &'a str,
    /// Wall time of the prediction (upload and readback included).
    seconds: f64,
}

/// Parses the arguments, runs the command and turns any failure into one line on stderr.
fn main() -> ExitCode {
    let cli = Cli::parse();
    // A panic would be a bug, but it should still end as one `error:` line and exit 1.
    std::panic::set_hook(Box::new(|info| {
        let message = one_line(&format!("internal error (a bug, please report it): {info}"));
        let _ = writeln!(std::io::stderr(), "error: {message}");
    }));
    let outcome = std::panic::catch_unwind(|| run(cli));
    match outcome {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(failure)) => {
            let _ = writeln!(std::io::stderr(), "error: {}", one_line(&failure.message));
            ExitCode::from(failure.code)
        }
        Err(_) => ExitCode::from(EXIT_RUNTIME),
    }
}

/// Runs one command.
fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Kmeans(args) => kmeans(args),
        Command::Predict(args) => predict(args),
        Command::Info(args) => info(args),
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

/// Writes `text` and a newline to stdout, reporting a closed or failing stdout.
fn emit(text: &str) -> CliResult {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| Failure::runtime(format!("cannot write to stdout: {e}")))
}

/// Serializes a report as one line of JSON and prints it.
fn emit_json(report: &impl Serialize) -> CliResult {
    let line = serde_json::to_string(report)
        .map_err(|e| Failure::runtime(format!("cannot serialize the report: {e}")))?;
    emit(&line)
}

/// Opens the best adapter (exit 1 when there is none).
fn open_gpu() -> CliResult<Gpu> {
    Gpu::new().map_err(Failure::from)
}

/// Reads the input matrix (any failure is the input's: exit 2).
fn read_input(path: &Path) -> CliResult<Dataset> {
    io::read_matrix(path).map_err(Failure::input)
}

/// Checks a labels output path before any work: it must end in `.npy` (exit 2).
fn check_labels_extension(path: &Path) -> CliResult {
    let is_npy = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"));
    if is_npy {
        Ok(())
    } else {
        Err(Failure::invalid(format!(
            "{}: labels are written as NumPy arrays; give --output a .npy file name",
            path.display()
        )))
    }
}

/// Checks, before the computation, that an output can be created where asked: its directory
/// exists and the path is not a directory (exit 1 otherwise, as a failed write would).
fn check_writable(path: &Path) -> CliResult {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(Failure::runtime(format!(
            "{}: cannot write: directory {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    if path.is_dir() {
        return Err(Failure::runtime(format!(
            "{}: cannot write: it is a directory",
            path.display()
        )));
    }
    Ok(())
}

/// The human-readable name of an initialisation.
fn init_name(init: &KMeansInit) -> &'static str {
    match init {
        KMeansInit::KMeansPlusPlus => "k-means++",
        KMeansInit::Random => "random",
        KMeansInit::Centroids(_) => "given centroids",
    }
}

/// `kmeans`: read, validate, fit, then write the outputs and report.
fn kmeans(args: KmeansArgs) -> CliResult {
    let mut params = KMeans::new(args.k);
    if let Some(n_init) = args.n_init {
        params = params.n_init(n_init);
    }
    if let Some(max_iter) = args.max_iter {
        params = params.max_iter(max_iter);
    }
    if let Some(tol) = args.tol {
        params = params.tol(tol);
    }
    if let Some(seed) = args.seed {
        params = params.seed(seed);
    }
    if let Some(init) = args.init {
        params = params.init(init.to_init());
    }
    if let Some(output) = &args.output {
        check_labels_extension(output)?;
    }
    if let (Some(output), Some(model)) = (&args.output, &args.model) {
        if output == model {
            return Err(Failure::invalid(format!(
                "--output and --model name the same file ({})",
                output.display()
            )));
        }
    }

    // Everything the user can get wrong is checked before the (slow) GPU start-up.
    let data = read_input(&args.input)?;
    let x = Matrix::new(&data.data, data.n_features).map_err(Failure::input)?;
    params.validate(data.n_rows, data.n_features)?;
    for path in [&args.output, &args.model].into_iter().flatten() {
        check_writable(path)?;
    }

    let gpu = open_gpu()?;
    let start = Instant::now();
    let model = params.fit(&gpu, &x)?;
    let fit_seconds = start.elapsed().as_secs_f64();

    // Outputs only after a successful fit; each write is atomic.
    if let Some(path) = &args.model {
        let file = ModelFileOut {
            format: MODEL_FORMAT,
            version: MODEL_VERSION,
            model: &model,
        };
        let text = serde_json::to_string(&file)
            .map_err(|e| Failure::runtime(format!("cannot serialize the model: {e}")))?;
        io::write_string(path, &(text + "\n")).map_err(Failure::output)?;
    }
    if let Some(path) = &args.output {
        io::write_npy_u32(path, model.labels()).map_err(Failure::output)?;
    }

    let info = gpu.info();
    if args.json {
        return emit_json(&FitReport {
            algorithm: "kmeans",
            n: data.n_rows,
            d: data.n_features,
            k: model.k(),
            inertia: model.inertia(),
            n_iter: model.n_iter(),
            converged: model.converged(),
            fit_seconds,
            adapter: &info.name,
        });
    }
    let mut report = vec![
        format!("adapter:    {info}"),
        format!(
            "input:      {} ({} rows x {} features)",
            args.input.display(),
            data.n_rows,
            data.n_features
        ),
        format!(
            "k-means:    k = {}, init {}, n_init {}, max_iter {}, tol {}, seed {}",
            params.k,
            init_name(&params.init),
            params.n_init,
            params.max_iter,
            params.tol,
            params.seed
        ),
        format!("inertia:    {}", model.inertia()),
        format!(
            "iterations: {} ({})",
            model.n_iter(),
            if model.converged() {
                "converged"
            } else {
                "not converged: max_iter reached"
            }
        ),
        format!("fit time:   {fit_seconds:.3} s"),
    ];
    report.push(match &args.output {
        Some(p) => format!("labels:     {}", p.display()),
        None => "labels:     not written (use --output FILE.npy)".to_string(),
    });
    report.push(match &args.model {
        Some(p) => format!("model:      {}", p.display()),
        None => "model:      not written (use --model FILE.json)".to_string(),
    });
    emit(&report.join("\n"))
}

/// Reads and checks a model file: envelope, format, version, then the model's consistency.
/// Every failure is the file's fault (exit 2) and names the file.
fn load_model(path: &Path) -> CliResult<KMeansModel> {
    let bad = |reason: String| {
        Failure::from(Error::Format {
            path: path.to_path_buf(),
            reason,
        })
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::input(match e.kind() {
            std::io::ErrorKind::InvalidData => Error::Format {
                path: path.to_path_buf(),
                reason: "not a model file: not UTF-8 text".into(),
            },
            _ => Error::Io {
                path: path.to_path_buf(),
                source: e,
            },
        })
    })?;
    let envelope: ModelFileIn = serde_json::from_str(&text)
        .map_err(|e| bad(format!("not a model file: invalid JSON object ({e})")))?;
    match &envelope.format {
        Some(serde_json::Value::String(f)) if f == MODEL_FORMAT => {}
        Some(other) => {
            return Err(bad(format!(
                "not a K-Means model of this program: format is {other}, \
                 expected \"{MODEL_FORMAT}\""
            )))
        }
        None => {
            return Err(bad(format!(
                "not a model file: no \"format\" field (expected \"{MODEL_FORMAT}\")"
            )))
        }
    }
    match &envelope.version {
        Some(v) if v.as_u64() == Some(MODEL_VERSION) => {}
        Some(v) => {
            return Err(bad(format!(
                "unsupported model version {v}: this program reads version {MODEL_VERSION}"
            )))
        }
        None => return Err(bad("not a model file: no \"version\" field".into())),
    }
    let value = envelope
        .model
        .ok_or_else(|| bad("not a model file: no \"model\" field".into()))?;
    let model: KMeansModel =
        serde_json::from_value(value).map_err(|e| bad(format!("invalid model: {e}")))?;

    // The serde form is not validated on the way in: check the parts fit together.
    let (k, d) = (model.k(), model.n_features());
    if k == 0 || d == 0 || k.checked_mul(d) != Some(model.centroids().len()) {
        return Err(bad(format!(
            "inconsistent model: {} centroid values for k = {k} clusters of d = {d} features",
            model.centroids().len()
        )));
    }
    KMeansModel::from_centroids(model.centroids().to_vec(), d)
        .map_err(|e| bad(format!("inconsistent model: {e}")))?;
    Ok(model)
}

/// `predict`: load the model, read and check the input, assign, write and report.
fn predict(args: PredictArgs) -> CliResult {
    check_labels_extension(&args.output)?;
    let model = load_model(&args.model)?;
    let data = read_input(&args.input)?;
    let x = Matrix::new(&data.data, data.n_features).map_err(Failure::input)?;
    if data.n_features != model.n_features() {
        return Err(Failure::from(Error::FeatureMismatch {
            expected: model.n_features(),
            found: data.n_features,
        }));
    }
    check_writable(&args.output)?;

    let gpu = open_gpu()?;
    let start = Instant::now();
    let labels = model.predict(&gpu, &x)?;
    let seconds = start.elapsed().as_secs_f64();
    io::write_npy_u32(&args.output, &labels).map_err(Failure::output)?;

    let info = gpu.info();
    if args.json {
        return emit_json(&PredictReport {
            algorithm: "kmeans",
            command: "predict",
            n: data.n_rows,
            d: data.n_features,
            k: model.k(),
            adapter: &info.name,
            seconds,
        });
    }
    emit(
        &[
            format!("adapter:    {info}"),
            format!(
                "model:      {} (k = {}, d = {})",
                args.model.display(),
                model.k(),
                model.n_features()
            ),
            format!(
                "input:      {} ({} rows x {} features)",
                args.input.display(),
                data.n_rows,
                data.n_features
            ),
            format!("time:       {seconds:.3} s"),
            format!("labels:     {}", args.output.display()),
        ]
        .join("\n"),
    )
}

/// `info`: the adapter and its limits.
fn info(args: InfoArgs) -> CliResult {
    let gpu = open_gpu()?;
    let info: &GpuInfo = gpu.info();
    if args.json {
        return emit_json(info);
    }
    let driver = if info.driver.is_empty() {
        "(not reported)"
    } else {
        info.driver.as_str()
    };
    emit(
        &[
            format!("adapter:     {}", info.name),
            format!("backend:     {}", info.backend),
            format!("device type: {}", info.device_type),
            format!("driver:      {driver}"),
            "limits:".to_string(),
            format!(
                "  max_storage_buffer_binding_size:       {} bytes ({} MiB)",
                info.max_storage_buffer_binding_size,
                info.max_storage_buffer_binding_size >> 20
            ),
            format!(
                "  max_buffer_size:                       {} bytes ({} MiB)",
                info.max_buffer_size,
                info.max_buffer_size >> 20
            ),
            format!(
                "  max_compute_workgroups_per_dimension:  {}",
                info.max_compute_workgroups_per_dimension
            ),
            format!(
                "  max_compute_invocations_per_workgroup: {}",
                info.max_compute_invocations_per_workgroup
            ),
            format!(
                "  min_storage_buffer_offset_alignment:   {}",
                info.min_storage_buffer_offset_alignment
            ),
        ]
        .join("\n"),
    )
}
