//! The files a command reads and writes, checked before any work, and its outputs written as
//! one set.
//!
//! Before anything is read or computed:
//!
//! 1. every output name has the extension its kind needs (exit 2);
//! 2. no output is the same file as another output or as any input of the command: the same
//!    device and inode, or the same canonical path (`out/../out/./x.npy` is `out/x.npy`, and a
//!    link to the input is the input) (exit 2);
//! 3. once the inputs are read, every output's directory exists and no output is a directory
//!    (exit 1, as the failed write would be).
//!
//! After the work: each output is written in full to a temporary file beside its target
//! ([`Staging`], the library's `io::OutputSet`), the report is built and checked, and only
//! then are all the files renamed into place. A failure at any step leaves no new file and
//! changes no existing one.

use std::path::{Path, PathBuf};

use wgpu_unsupervised::io::{self, OutputSet};

use crate::{CliResult, Failure};

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

/// The files a command reads: the option and the path given to it.
pub type Inputs<'a> = Vec<(&'static str, &'a Path)>;

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

    /// Checks every name (the extension its kind needs), then that no output is the same file
    /// as another output or as one of `inputs` (exit 2, before any work).
    pub fn check_names(&self, inputs: &Inputs<'_>) -> CliResult {
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
        let outputs: Vec<Identity> = self.files.iter().map(|f| Identity::of(f.path)).collect();
        for (i, file) in self.files.iter().enumerate() {
            if let Some(j) = (i + 1..self.files.len()).find(|&j| outputs[i].same(&outputs[j])) {
                return Err(Failure::invalid(format!(
                    "{} and {} name the same file ({}); give each output its own file",
                    file.flag,
                    self.files[j].flag,
                    file.path.display()
                )));
            }
            for (flag, input) in inputs {
                if outputs[i].same(&Identity::of(input)) {
                    return Err(Failure::invalid(format!(
                        "{} {} is the same file as {flag} {}: writing it would destroy the \
                         input; give {} another file name",
                        file.flag,
                        file.path.display(),
                        input.display(),
                        file.flag
                    )));
                }
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
                    "{}: cannot write {}: directory {} does not exist; create it first",
                    path.display(),
                    file.flag,
                    dir.display()
                )));
            }
            if path.is_dir() {
                return Err(Failure::runtime(format!(
                    "{}: cannot write {}: it is a directory; give a file name",
                    path.display(),
                    file.flag
                )));
            }
        }
        Ok(())
    }
}

/// What makes two paths the same file: the device and inode of an existing file, and the
/// canonical path (of the file, or of its directory joined with its name when it does not
/// exist yet).
struct Identity {
    /// (device, inode) of the existing file the path leads to (links followed).
    id: Option<(u64, u64)>,
    /// The canonical path, when it could be worked out.
    canonical: Option<PathBuf>,
}

impl Identity {
    fn of(path: &Path) -> Self {
        let id = std::fs::metadata(path).ok().and_then(|m| file_id(&m));
        let canonical = std::fs::canonicalize(path).ok().or_else(|| {
            let name = path.file_name()?;
            let dir = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            Some(std::fs::canonicalize(dir).ok()?.join(name))
        });
        Self { id, canonical }
    }

    fn same(&self, other: &Identity) -> bool {
        (self.id.is_some() && self.id == other.id)
            || (self.canonical.is_some() && self.canonical == other.canonical)
    }
}

/// The (device, inode) of a file, where the platform has them.
#[cfg(unix)]
fn file_id(m: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((m.dev(), m.ino()))
}

/// The (device, inode) of a file, where the platform has them.
#[cfg(not(unix))]
fn file_id(_m: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// A command's outputs, staged in temporary files until [`Staging::commit`].
#[derive(Default)]
pub struct Staging {
    set: OutputSet,
}

impl Staging {
    /// Nothing staged.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stages labels as a 1-D `u4` `.npy` array or a one-column `.csv` (exit 1 on failure).
    pub fn labels(&mut self, path: &Path, labels: &[u32]) -> CliResult {
        self.set.labels(path, labels).map_err(Failure::output)
    }

    /// Stages an `n` x `cols` row-major matrix as a 2-D `f4` `.npy` array or a `.csv` (exit
    /// 1 on failure).
    pub fn rows(&mut self, path: &Path, values: &[f32], n: usize, cols: usize) -> CliResult {
        self.set
            .matrix(path, values, n, cols)
            .map_err(Failure::output)
    }

    /// Stages a text file, such as a model file (exit 1 on failure).
    pub fn text(&mut self, path: &Path, text: &str) -> CliResult {
        self.set.text(path, text).map_err(Failure::output)
    }

    /// The library's set, for the plot functions that stage into it.
    pub fn set(&mut self) -> &mut OutputSet {
        &mut self.set
    }

    /// Renames every staged file into place (exit 1 on failure, the files renamed before it
    /// put back).
    pub fn commit(self) -> CliResult {
        self.set.commit().map_err(Failure::output)
    }
}
