//! The flow every data command follows: read, check, compute, stage, report, commit.
//!
//! A command describes itself as a [`Task`] (its inputs, its output files, its checks, its
//! GPU work, its writes, its report) and [`run`] carries it out in a fixed order, so that
//! the promises of the program hold for every command alike:
//!
//! 1. output names are checked (extensions, no two outputs naming one file, no output that
//!    is one of the command's input files, by inode or canonical path): exit 2, before any
//!    file is read ([`Outputs::check_names`]);
//! 2. the input matrix is opened and validated, then the task checks its arguments against
//!    its shape and reads any further input file: exit 2;
//! 3. the output directories are checked: exit 1, as a failed write would be;
//! 4. only then is the GPU opened (slow on a software adapter) and the work done;
//! 5. every output is staged (written in full to a temporary file beside its target), and
//!    the report is built and checked;
//! 6. only then are the outputs renamed into place, all of them, and the report printed:
//!    one line of JSON with `--json`, else the human lines, which always start with the
//!    adapter. A failure before the renames leaves no new file and changes no existing one.
//!
//! A `.npy` input of f32 is read a piece at a time (`io::NpyRows`): the fits that stream
//! read it again on every pass without holding it in memory; commands that need every row
//! at once read it whole.

use std::borrow::Cow;
use std::fmt::Display;
use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

use serde::Serialize;
use wgpu_unsupervised::io::InputMatrix;
use wgpu_unsupervised::{io, AdapterOptions, Error, Gpu, GpuInfo};

pub use crate::outputs::{Inputs, Outputs, Staging};
use crate::{CliResult, Failure};

/// One data command, carried out by [`run`].
pub trait Task {
    /// What the GPU work produces (a model, labels, timings, ...).
    type Outcome;

    /// The input matrix (`--input`).
    fn input(&self) -> &Path;

    /// Every file the command reads, `--input` included, with the option naming it: no
    /// output may be one of them.
    fn inputs(&self) -> Inputs<'_> {
        vec![("--input", self.input())]
    }

    /// The files the command will write, checked before any work.
    fn outputs(&self) -> Outputs<'_>;

    /// Whether to print the one-line JSON report (`--json`).
    fn json(&self) -> bool;

    /// The device-memory budget asked for (`--max-gpu-memory`): the fits stream data that
    /// exceed it.
    fn max_gpu_memory(&self) -> Option<u64> {
        None
    }

    /// Checks the arguments against the input's `n` rows and `d` columns (exit 2), and reads
    /// any further input file; runs before the GPU starts.
    fn check(&mut self, _n: usize, _d: usize) -> CliResult {
        Ok(())
    }

    /// The work on the GPU.
    fn compute(&self, gpu: &Gpu, x: &InputMatrix) -> CliResult<Self::Outcome>;

    /// Stages the outputs; called only once [`Task::compute`] succeeded. Nothing is renamed
    /// into place before the report has been built.
    fn write(&self, _run: &Context<'_>, _outcome: &Self::Outcome, _out: &mut Staging) -> CliResult {
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
    task.outputs().check_names(&task.inputs())?;
    let data = open_input(task.input())?;
    let (n, d) = data.shape();
    task.check(n, d)?;
    let gpu = open_gpu(&task.outputs())?;
    if let Some(bytes) = task.max_gpu_memory() {
        gpu.set_memory_budget(bytes);
    }
    let outcome = task.compute(&gpu, &data)?;
    let run = Context {
        info: gpu.info(),
        input: task.input(),
        n,
        d,
    };
    let mut staged = Staging::new();
    task.write(&run, &outcome, &mut staged)?;
    let report = task.report(&run, &outcome)?.after_adapter(run.info);
    staged.commit()?;
    report.print(task.json())
}

/// Opens the input matrix (exit 2 for anything wrong with it): `.npy` files of f32 are read a
/// piece at a time, the rest whole.
pub fn open_input(path: &Path) -> CliResult<InputMatrix> {
    io::open_matrix(path).map_err(|e| Failure::input(path, e))
}

/// Every value of the input in memory as a checked matrix, for the commands that need all
/// rows at once (exit 2 when the file cannot be read).
pub fn whole<'a>(path: &Path, x: &'a InputMatrix) -> CliResult<Cow<'a, [f32]>> {
    x.values().map_err(|e| Failure::input(path, e))
}

/// The adapter `--adapter` asked for (the default options when it was not given).
static ADAPTER: OnceLock<AdapterOptions> = OnceLock::new();

/// Records the global `--adapter` selector, parsed by the library (exit 2 when it is
/// malformed), before any command runs.
pub fn choose_adapter(selector: Option<&str>) -> CliResult {
    let options = match selector {
        Some(s) => {
            let _ = SELECTOR.set(s.to_string());
            AdapterOptions::from_selector(s).map_err(Failure::from)?
        }
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
/// best one. A selector that matches none of the adapters present is the user's mistake
/// (exit 2, naming them); no adapter at all is the machine's (exit 1, with the advice to
/// install a driver).
pub fn open_gpu(outputs: &Outputs<'_>) -> CliResult<Gpu> {
    outputs.check_writable()?;
    Gpu::with_options(adapter_options()).map_err(adapter_failure)
}

/// The failure for an adapter that could not be opened (see [`open_gpu`]).
pub fn adapter_failure(e: Error) -> Failure {
    if let (Error::NoAdapter { detail }, Some(selector)) = (&e, SELECTOR.get()) {
        let present = Gpu::adapters(&AdapterOptions::default()).unwrap_or_default();
        if !present.is_empty() {
            return Failure::invalid(format!(
                "--adapter {selector} matches no adapter: {detail}; run `wgpu-unsupervised \
                 info --all` to list them, and give a number or a part of a name from that list"
            ));
        }
    }
    Failure::from(e)
}

/// The `--adapter` selector as given, for messages.
static SELECTOR: OnceLock<String> = OnceLock::new();

/// Reads `--sample-weight`: one value per row of the input (a 1-D or N x 1 `.npy`, or a
/// `.csv` column), each finite and non-negative and not all zero (exit 2 naming the file and
/// the row, counted from 1).
pub fn read_sample_weights(path: &Path, n_rows: usize) -> CliResult<Vec<f32>> {
    let w = io::read_matrix(path).map_err(|e| Failure::input(path, e))?;
    if w.n_features != 1 || w.n_rows != n_rows {
        return Err(Failure::invalid(format!(
            "{}: expected {n_rows} weights (one per row of the input), found {} x {}",
            path.display(),
            w.n_rows,
            w.n_features
        )));
    }
    if let Some(i) = w.data.iter().position(|&v| v < 0.0) {
        return Err(Failure::invalid(format!(
            "{}: row {}: weight {} is negative; every weight must be >= 0",
            path.display(),
            i + 1,
            w.data[i]
        )));
    }
    if w.data.iter().all(|&v| v == 0.0) {
        return Err(Failure::invalid(format!(
            "{}: every weight is 0; give at least one row a positive weight",
            path.display()
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
