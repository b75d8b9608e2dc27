//! The flow every data command follows: read, check, compute, write, report.
//!
//! A command describes itself as a [`Task`] (its input, its output files, its checks, its
//! GPU work, its writes, its report) and [`run`] carries it out in a fixed order, so that
//! the promises of the program hold for every command alike:
//!
//! 1. output names are checked (extensions, no two outputs naming one file): exit 2;
//! 2. the input matrix is read and validated, then the task checks its arguments against
//!    it: exit 2;
//! 3. the output directories are checked: exit 1, as a failed write would be;
//! 4. only then is the GPU opened (slow on a software adapter) and the work done;
//! 5. outputs are written only after the work succeeded, each atomically by the library;
//! 6. the report is printed: one line of JSON with `--json`, else the human lines, which
//!    always start with the adapter.

use std::fmt::Display;
use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

use serde::Serialize;
use wgpu_unsupervised::{io, AdapterOptions, Gpu, GpuInfo, Matrix};

use crate::{CliResult, Failure};

/// One data command, carried out by [`run`].
pub trait Task {
    /// What the GPU work produces (a model, labels, timings, ...).
    type Outcome;

    /// The input matrix (`--input`).
    fn input(&self) -> &Path;

    /// The files the command will write, checked before any work.
    fn outputs(&self) -> Outputs<'_>;

    /// Whether to print the one-line JSON report (`--json`).
    fn json(&self) -> bool;

    /// Checks the arguments against the validated input (exit 2), and reads any further
    /// input file; runs before the GPU starts.
    /// The device-memory budget asked for (`--max-gpu-memory`): the fits stream data that
    /// exceed it.
    fn max_gpu_memory(&self) -> Option<u64> {
        None
    }

    fn check(&mut self, _x: &Matrix<'_>) -> CliResult {
        Ok(())
    }

    /// The work on the GPU.
    fn compute(&self, gpu: &Gpu, x: Matrix<'_>) -> CliResult<Self::Outcome>;

    /// Writes the outputs; called only once [`Task::compute`] succeeded.
    fn write(&self, _run: &Context<'_>, _outcome: &Self::Outcome) -> CliResult {
        Ok(())
    }

    /// The report of a successful run.
    fn report(&self, run: &Context<'_>, outcome: &Self::Outcome) -> CliResult<Report>;
}

/// What the writes and the report may need: the adapter and the input.
pub struct Context<'a> {
    /// The adapter that did the work.
    pub info: &'a GpuInfo,
    /// The input path, as given.
    pub input: &'a Path,
    /// Rows of the input, N.
    pub n: usize,
    /// Columns of the input, D.
    pub d: usize,
}

impl Context<'_> {
    /// The `input:` value of the human reports: the path and its shape.
    pub fn input_line(&self) -> String {
        format!(
            "{} ({} rows x {} features)",
            self.input.display(),
            self.n,
            self.d
        )
    }
}

/// Carries out `task` in the order of the module docs.
pub fn run<T: Task>(mut task: T) -> CliResult {
    task.outputs().check_names()?;
    // Memory-mapped when it can be: fits stream what exceeds --max-gpu-memory.
    let data = io::open_matrix(task.input()).map_err(Failure::input)?;
    let x = data.matrix().map_err(Failure::input)?;
    task.check(&x)?;
    let gpu = open_gpu(&task.outputs())?;
    if let Some(bytes) = task.max_gpu_memory() {
        gpu.set_memory_budget(bytes);
    }
    let outcome = task.compute(&gpu, x)?;
    let run = Context {
        info: gpu.info(),
        input: task.input(),
        n: x.n_rows(),
        d: x.n_features(),
    };
    task.write(&run, &outcome)?;
    task.report(&run, &outcome)?
        .after_adapter(run.info)
        .print(task.json())
}

/// The adapter `--adapter` asked for (the default options when it was not given).
static ADAPTER: OnceLock<AdapterOptions> = OnceLock::new();

/// Records the global `--adapter` selector, parsed by the library (exit 2 when it is
/// malformed), before any command runs.
pub fn choose_adapter(selector: Option<&str>) -> CliResult {
    let options = match selector {
        Some(s) => AdapterOptions::from_selector(s).map_err(Failure::from)?,
        None => AdapterOptions::default(),
    };
    // Set once per process: `run` calls this once, before the command.
    let _ = ADAPTER.set(options);
    Ok(())
}

/// The adapter options in force (`--adapter`, else the library's defaults).
pub fn adapter_options() -> &'static AdapterOptions {
    ADAPTER.get_or_init(AdapterOptions::default)
}

/// Checks that `outputs` can be written, then opens the adapter `--adapter` chose, or the
/// best one (exit 1 when either fails).
pub fn open_gpu(outputs: &Outputs<'_>) -> CliResult<Gpu> {
    outputs.check_writable()?;
    Gpu::with_options(adapter_options()).map_err(Failure::from)
}

/// Reads `--sample-weight`: one value per row of the input (a 1-D or N x 1 `.npy`, or a
/// `.csv` column); the library checks the values (finite, non-negative, not all zero).
pub fn read_sample_weights(path: &Path, n_rows: usize) -> CliResult<Vec<f32>> {
    let w = io::read_matrix(path).map_err(Failure::input)?;
    if w.n_features != 1 || w.n_rows != n_rows {
        return Err(Failure::invalid(format!(
            "{}: expected {n_rows} weights (one per row), found {} x {}",
            path.display(),
            w.n_rows,
            w.n_features
        )));
    }
    Ok(w.data)
}

/// Runs `work` and measures its wall time in seconds.
pub fn timed<T>(work: impl FnOnce() -> CliResult<T>) -> CliResult<(T, f64)> {
    let start = Instant::now();
    let value = work()?;
    Ok((value, start.elapsed().as_secs_f64()))
}

/// What kind of file an output is, for its name check.
enum FileKind {
    /// An array holding `what` (labels, projections, ...): the name must end in `.npy` or
    /// `.csv`, which picks the format.
    Array {
        /// What the array holds, for the message.
        what: &'static str,
    },
    /// An SVG plot: the name must end in `.svg`.
    Svg,
    /// A model file: any name.
    Model,
}

/// One output file: the option that names it, its path, its kind.
struct OutputFile<'a> {
    /// The option, e.g. `--output`.
    flag: &'static str,
    /// The path given to it.
    path: &'a Path,
    /// What the file is.
    kind: FileKind,
}

/// The files a command writes, declared up front so that they are checked before any work.
#[derive(Default)]
pub struct Outputs<'a> {
    /// The files given on the command line (options left out are not listed).
    files: Vec<OutputFile<'a>>,
}

impl<'a> Outputs<'a> {
    /// No outputs.
    pub fn none() -> Self {
        Self::default()
    }

    /// An array holding `what`, written as `.npy` or `.csv` (the extension decides) to the
    /// path given to `flag` (if given).
    pub fn array(self, flag: &'static str, path: Option<&'a Path>, what: &'static str) -> Self {
        self.with(flag, path, FileKind::Array { what })
    }

    /// An SVG plot, written to the `--plot` path (if given).
    pub fn plot(self, path: Option<&'a Path>) -> Self {
        self.with("--plot", path, FileKind::Svg)
    }

    /// A model file, written to the `--model` path (if given).
    pub fn model(self, path: Option<&'a Path>) -> Self {
        self.with("--model", path, FileKind::Model)
    }

    fn with(mut self, flag: &'static str, path: Option<&'a Path>, kind: FileKind) -> Self {
        if let Some(path) = path {
            self.files.push(OutputFile { flag, path, kind });
        }
        self
    }

    /// Checks every name: the extension its kind needs, and no two outputs naming the same
    /// file (exit 2).
    pub fn check_names(&self) -> CliResult {
        for file in &self.files {
            let (fits, message) = match file.kind {
                FileKind::Array { what } => (
                    io::is_output_path(file.path),
                    format!(
                        "{what} are written as NumPy arrays or CSV; give {} a .npy or .csv file name",
                        file.flag
                    ),
                ),
                FileKind::Svg => (
                    file.path
                        .extension()
                        .and_then(|e| e.to_str())
                        .is_some_and(|e| e.eq_ignore_ascii_case("svg")),
                    format!(
                        "plots are written as SVG; give {} a .svg file name",
                        file.flag
                    ),
                ),
                FileKind::Model => continue,
            };
            if !fits {
                return Err(Failure::invalid(format!(
                    "{}: {message}",
                    file.path.display()
                )));
            }
        }
        for (i, file) in self.files.iter().enumerate() {
            if let Some(other) = self.files[i + 1..].iter().find(|o| o.path == file.path) {
                return Err(Failure::invalid(format!(
                    "{} and {} name the same file ({})",
                    file.flag,
                    other.flag,
                    file.path.display()
                )));
            }
        }
        Ok(())
    }

    /// Checks that every output can be created where asked: its directory exists and the path
    /// is not a directory (exit 1, as the failed write would be).
    pub fn check_writable(&self) -> CliResult {
        for file in &self.files {
            let path = file.path;
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
        }
        Ok(())
    }
}

/// Writes labels as a 1-D `u4` `.npy` array or a one-column `.csv`, atomically (exit 1 on
/// failure).
pub fn write_labels(path: &Path, labels: &[u32]) -> CliResult {
    io::write_labels(path, labels).map_err(Failure::output)
}

/// Writes an `n` x `cols` row-major matrix as a 2-D `f4` `.npy` array or a `.csv`,
/// atomically (exit 1 on failure).
pub fn write_rows(path: &Path, values: &[f32], n: usize, cols: usize) -> CliResult {
    io::write_matrix(path, values, n, cols).map_err(Failure::output)
}

/// The human report: `label: value` lines with the values aligned, and free lines (tables).
#[derive(Default)]
pub struct Human {
    /// (label, text); an empty label marks a free line, printed as it is.
    lines: Vec<(&'static str, String)>,
}

impl Human {
    /// An empty report.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `label: value`.
    pub fn line(&mut self, label: &'static str, value: impl Display) -> &mut Self {
        self.lines.push((label, value.to_string()));
        self
    }

    /// Adds the line of an optional output: its path, or how to ask for it.
    pub fn file(&mut self, label: &'static str, path: Option<&Path>, hint: &str) -> &mut Self {
        match path {
            Some(p) => self.line(label, p.display()),
            None => self.line(label, format!("not written (use {hint})")),
        }
    }

    /// Adds a line printed as it is (table rows, blank lines).
    pub fn free(&mut self, text: impl Into<String>) -> &mut Self {
        self.lines.push(("", text.into()));
        self
    }

    /// The lines, values aligned one space after the longest label.
    fn render(&self) -> String {
        let width = self.lines.iter().map(|(l, _)| l.len()).max().unwrap_or(0) + 1;
        let lines: Vec<String> = self
            .lines
            .iter()
            .map(|(label, text)| match label {
                &"" => text.clone(),
                _ => format!("{:width$} {text}", format!("{label}:")),
            })
            .collect();
        lines.join("\n")
    }
}

/// The `iterations:` value of the fit reports: the count and whether the fit converged.
pub fn iterations(n_iter: usize, converged: bool) -> String {
    let state = if converged {
        "converged"
    } else {
        "not converged: max_iter reached"
    };
    format!("{n_iter} ({state})")
}

/// A command's report in both forms; [`Report::print`] chooses.
pub struct Report {
    /// The one-line JSON form.
    json: String,
    /// The human form.
    human: Human,
}

impl Report {
    /// A report whose JSON form is `machine` serialized on one line. serde_json writes a
    /// NaN or infinite number as `null`: such a report is refused (exit 1, naming the key)
    /// rather than printed, since a `null` in a number field would pass silently.
    pub fn new(machine: &impl Serialize, human: Human) -> CliResult<Self> {
        let cannot =
            |e: serde_json::Error| Failure::runtime(format!("cannot serialize the report: {e}"));
        let json = serde_json::to_string(machine).map_err(cannot)?;
        let value: serde_json::Value = serde_json::from_str(&json).map_err(cannot)?;
        if let Some(key) = null_key(&value, "") {
            return Err(Failure::runtime(format!(
                "the report's `{key}` is not a finite number"
            )));
        }
        Ok(Self { json, human })
    }

    /// The same report with an `adapter:` line first in its human form.
    fn after_adapter(mut self, info: &GpuInfo) -> Self {
        self.human.lines.insert(0, ("adapter", info.to_string()));
        self
    }

    /// Prints the JSON line with `json`, else the human lines.
    pub fn print(self, json: bool) -> CliResult {
        emit(&if json { self.json } else { self.human.render() })
    }
}

/// The path of the first `null` in a JSON value (keys joined by dots, array positions in
/// brackets), if any.
fn null_key(value: &serde_json::Value, at: &str) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::Null => Some(at.to_string()),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            null_key(
                v,
                &if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                },
            )
        }),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| null_key(v, &format!("{at}[{i}]"))),
        _ => None,
    }
}

/// Writes `text` and a newline to stdout, reporting a closed or failing stdout (exit 1).
fn emit(text: &str) -> CliResult {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| Failure::runtime(format!("cannot write to stdout: {e}")))
}
