//! What every CLI test needs: running the program, reading what it did, small data files,
//! and the runner of the invalid-argument tables.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use wgpu_unsupervised::{datasets, io};

/// What starts every error line of the program.
pub const PREFIX: &str = "wgpu-unsupervised: error: ";

/// Runs the program with `args` in the test's own environment.
pub fn cli(args: &[&str]) -> Output {
    command(args)
        .output()
        .expect("the wgpu-unsupervised binary runs")
}

/// The program with `args`, not started yet. Its autotuner keeps nothing across runs, so
/// the tests leave the user's tuning cache alone.
pub fn command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wgpu-unsupervised"));
    command.args(args);
    command.env("WGPU_UNSUPERVISED_TUNING_CACHE", "off");
    command
}

/// The best adapter for the tests that check the program's output against the library, its
/// autotuner keeping nothing across processes (as [`command`]'s).
pub fn gpu() -> wgpu_unsupervised::Gpu {
    let gpu = wgpu_unsupervised::Gpu::new().expect("the CLI tests need a wgpu adapter");
    gpu.set_tuning_cache(wgpu_unsupervised::TuningCache::Off);
    gpu
}

/// The path as a `&str` (temporary directories have UTF-8 names here).
pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts success with nothing on stderr (no driver or loader chatter either) and returns
/// stdout.
pub fn ok(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "expected success\nstdout: {}\nstderr: {}",
        stdout(out),
        stderr(out)
    );
    assert!(
        out.stderr.is_empty(),
        "stderr of a success: {:?}",
        stderr(out)
    );
    stdout(out)
}

/// Asserts the exit status `code`, nothing on stdout and exactly one line on stderr, the
/// program's prefixed error; returns that line.
pub fn fails(out: &Output, code: i32) -> String {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(code),
        "expected exit {code}\nstdout: {}\nstderr: {err}",
        stdout(out)
    );
    assert!(out.stdout.is_empty(), "stdout: {}", stdout(out));
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one error line expected, got: {err:?}");
    assert!(lines[0].starts_with(PREFIX), "{err:?}");
    lines[0].to_string()
}

/// Asserts a usage error found by the argument parser: exit 2, nothing on stdout, the
/// prefixed error first on stderr, then usage lines; returns all of stderr.
pub fn usage_fails(out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(out.stdout.is_empty(), "stdout: {}", stdout(out));
    assert!(err.starts_with(PREFIX), "{err:?}");
    err
}

/// Parses stdout of a success as exactly one line of JSON.
pub fn json_line(out: &Output) -> Value {
    let text = ok(out);
    assert!(text.ends_with('\n'), "{text:?}");
    assert_eq!(
        text.lines().count(),
        1,
        "exactly one line expected: {text:?}"
    );
    serde_json::from_str(text.trim_end()).unwrap_or_else(|e| panic!("{e}: {text:?}"))
}

/// Sorted keys of a JSON object.
pub fn sorted_keys(report: &Value) -> Vec<String> {
    let mut keys: Vec<String> = report.as_object().unwrap().keys().cloned().collect();
    keys.sort_unstable();
    keys
}

/// Writes `n` x `d` Gaussian blobs around `centers` centres to `dir/name` (.npy, f4).
pub fn blobs_npy(dir: &Path, name: &str, n: usize, d: usize, centers: usize, seed: u64) -> PathBuf {
    let (x, _, _) = datasets::make_blobs(n, d, centers, 0.5, (-10.0, 10.0), seed).unwrap();
    let path = dir.join(name);
    io::write_npy_f32(&path, &x, &[n as u64, d as u64]).unwrap();
    path
}

/// Every file in `dir`, sorted.
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A file of the repository's test data.
fn test_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The bundled iris matrix (150 x 4).
pub fn iris() -> PathBuf {
    test_data("iris_X.npy")
}

/// The bundled iris species (150 labels, 3 classes).
pub fn iris_labels() -> PathBuf {
    test_data("iris_y.npy")
}

/// The bundled digits matrix (1797 x 64).
pub fn digits() -> PathBuf {
    test_data("digits_X.npy")
}

/// Reads a 2-D .npy written by the program, checking its shape.
pub fn read_2d(path: &Path, n: usize, d: usize) -> Vec<f32> {
    let m = io::read_matrix(path).unwrap();
    assert_eq!((m.n_rows, m.n_features), (n, d), "{}", path.display());
    m.data
}

/// Checks that `path` holds one well-formed SVG document: an `<svg` root closed at the end,
/// balanced tags, and some text (axis labels).
pub fn check_svg(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let start = text.find("<svg").expect("an <svg> element");
    assert!(text[..start].trim().is_empty() || text[..start].trim().starts_with("<?xml"));
    assert!(
        text.trim_end().ends_with("</svg>"),
        "{}",
        &text[text.len() - 80..]
    );
    assert_eq!(text.matches("<svg").count(), text.matches("</svg>").count());
    assert!(text.contains("<text"), "no text in the plot");
    assert_eq!(text.matches('<').count(), text.matches('>').count());
}

/// One command line the program must refuse, and how.
pub struct Case {
    /// The arguments, separated by spaces; `{name}` stands for the fixture path `name`.
    pub args: &'static str,
    /// The exit status; `None` for a usage error of the argument parser (exit 2, several
    /// lines), `Some(code)` for the program's own one-line error.
    pub code: Option<i32>,
    /// Fragments the error must contain.
    pub expect: &'static [&'static str],
}

/// A refusal by the program itself: one prefixed error line, exit `code`.
pub const fn case(args: &'static str, code: i32, expect: &'static [&'static str]) -> Case {
    Case {
        args,
        code: Some(code),
        expect,
    }
}

/// A refusal by the argument parser (unknown option or value, missing option): exit 2.
pub const fn usage(args: &'static str, expect: &'static [&'static str]) -> Case {
    Case {
        args,
        code: None,
        expect,
    }
}

/// A temporary directory and the files a test names in its command lines: `{dir}` is the
/// directory, `{name}` a file made known with [`Fixture::name`]; `{iris}`, `{iris_y}` and
/// `{digits}` are the repository's test data.
pub struct Fixture {
    /// The directory.
    pub dir: tempfile::TempDir,
    /// Name and path of every file a command line may name.
    paths: Vec<(String, PathBuf)>,
}

impl Fixture {
    /// An empty temporary directory.
    pub fn new() -> Self {
        let mut fixture = Self {
            dir: tempfile::tempdir().unwrap(),
            paths: Vec::new(),
        };
        fixture
            .name("iris", iris())
            .name("iris_y", iris_labels())
            .name("digits", digits());
        fixture
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `name` inside the directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path().join(name)
    }

    /// Makes `path` known to the command lines as `{name}` (in place of any earlier one).
    pub fn name(&mut self, name: &str, path: PathBuf) -> &mut Self {
        self.paths.retain(|(known, _)| known != name);
        self.paths.push((name.to_string(), path));
        self
    }

    /// Writes `content` to `dir/file`, known as `{name}`.
    pub fn write(&mut self, name: &str, file: &str, content: &str) -> PathBuf {
        let path = self.file(file);
        std::fs::write(&path, content).unwrap();
        self.name(name, path.clone());
        path
    }

    /// Writes Gaussian blobs (see [`blobs_npy`]) to `{name}` = `dir/name.npy`.
    pub fn blobs(&mut self, name: &str, n: usize, d: usize, centers: usize, seed: u64) -> PathBuf {
        let path = blobs_npy(self.path(), &format!("{name}.npy"), n, d, centers, seed);
        self.name(name, path.clone());
        path
    }

    /// Runs the program with `args`: separated by spaces, placeholders replaced.
    pub fn run(&self, args: &str) -> Output {
        let args = self.args(args);
        cli(&args.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Fits a model with `args` (a command line without `--model`), writes it to
    /// `{name}` = `dir/name.json` and returns its path.
    pub fn model(&mut self, name: &str, args: &str) -> PathBuf {
        let path = self.file(&format!("{name}.json"));
        ok(&self.run(&format!("{args} --model {}", s(&path))));
        self.name(name, path.clone());
        path
    }

    /// `args` split at spaces, with every placeholder replaced by its path.
    fn args(&self, args: &str) -> Vec<String> {
        args.split_whitespace()
            .map(|arg| {
                let mut arg = arg.replace("{dir}", s(self.path()));
                for (name, path) in &self.paths {
                    arg = arg.replace(&format!("{{{name}}}"), s(path));
                }
                assert!(!arg.contains('{'), "unknown placeholder in {args:?}");
                arg
            })
            .collect()
    }

    /// Runs every case: each must fail as it says, naming what it says, and leave the
    /// directory as it was (no output, not even a partial one).
    pub fn check(&self, cases: &[Case]) {
        let before = files_in(self.path());
        for case in cases {
            let out = self.run(case.args);
            let error = match case.code {
                Some(code) => fails(&out, code),
                None => usage_fails(&out),
            };
            for fragment in case.expect {
                assert!(
                    error.contains(fragment),
                    "{:?}: {fragment:?} missing from {error:?}",
                    case.args
                );
            }
            assert_eq!(
                files_in(self.path()),
                before,
                "{:?} wrote a file",
                case.args
            );
        }
    }
}
