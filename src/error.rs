//! The one error type of the crate.
//!
//! Every fallible public function returns [`Result<T>`]. Bad input (empty data, non-finite
//! values, impossible parameters) and GPU trouble (no adapter, limits, memory, device loss) each
//! have their own variant so callers can match on them; none of them panics.

use std::path::PathBuf;

/// Shorthand for `std::result::Result<T, wgpu_unsupervised::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input has no rows (or no columns).
    #[error("empty data: {what} has no {missing}")]
    EmptyData {
        /// What was empty (e.g. "input matrix").
        what: &'static str,
        /// "rows" or "columns".
        missing: &'static str,
    },
    /// The flat data length is not a multiple of the number of features.
    #[error("shape mismatch: {len} values cannot be split into rows of {n_features} features")]
    Shape {
        /// Number of values given.
        len: usize,
        /// Number of features per row.
        n_features: usize,
    },
    /// A NaN or infinity in the input, with its position.
    #[error("non-finite value ({value}) at row {row}, column {col}")]
    NonFinite {
        /// Row index (0-based).
        row: usize,
        /// Column index (0-based).
        col: usize,
        /// The offending value as text ("NaN", "inf", "-inf").
        value: String,
    },
    /// A NaN or infinity read from a file, at its place as a person counts it (from 1): the
    /// line and field of a `.csv` file, the row and column of a `.npy` array. (Data handed
    /// over in memory report [`Error::NonFinite`], whose row and column count from 0.)
    #[error("{path}: {}: {value} is not a finite number; every value must be finite (fill it in or remove the row)", place(*line, *row, *col))]
    NonFiniteInFile {
        /// The file.
        path: PathBuf,
        /// The line of a `.csv` file (from 1, header and blank lines counted); `None` for a
        /// `.npy` array.
        line: Option<usize>,
        /// The data row (from 1; header and blank lines not counted).
        row: usize,
        /// The column (from 1).
        col: usize,
        /// The offending value as text ("NaN", "inf", "-inf").
        value: String,
    },
    /// More clusters (or components) asked for than there are samples.
    #[error("k = {k} is larger than the number of samples n = {n}")]
    TooFewSamples {
        /// Requested number of clusters.
        k: usize,
        /// Number of samples.
        n: usize,
    },
    /// New data with a different feature count than the model was fitted on.
    #[error("feature count mismatch: the model has {expected} features, the data has {found}")]
    FeatureMismatch {
        /// Features the model expects.
        expected: usize,
        /// Features in the data.
        found: usize,
    },
    /// A parameter outside its valid range.
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter {
        /// Parameter name as in the builder.
        name: &'static str,
        /// Why it is invalid.
        reason: String,
    },
    /// An iterative method stopped at its iteration cap before meeting its tolerance. Nothing
    /// unconverged is returned as if it were a result.
    #[error("{what} did not converge: residual {residual:e} after {iterations} iterations (raise max_iter or tol)")]
    NotConverged {
        /// The method (e.g. "PCA power iteration").
        what: &'static str,
        /// The largest relative residual at the last iteration.
        residual: f64,
        /// Iterations run.
        iterations: usize,
    },
    /// The work needs more device memory than is available (or than the configured budget).
    #[error("out of device memory: {what}{}", sizes(*requested, *available))]
    OutOfDeviceMemory {
        /// What was being allocated.
        what: String,
        /// Bytes requested, when known (the driver does not say).
        requested: Option<u64>,
        /// Bytes available under the budget set with `Gpu::set_memory_budget`, when known.
        available: Option<u64>,
    },
    /// A size exceeds a hard device limit that chunking cannot work around.
    #[error("{what} ({requested}) exceeds the device limit {limit_name} = {limit}")]
    DeviceLimit {
        /// What was too large.
        what: String,
        /// The size asked for.
        requested: u64,
        /// Name of the wgpu limit.
        limit_name: &'static str,
        /// The device's value of that limit.
        limit: u64,
    },
    /// No GPU adapter (not even a software one) could be found.
    #[error("no GPU adapter found ({detail}). Install a Vulkan driver; for a software one on Debian/Ubuntu: `apt-get install mesa-vulkan-drivers` (lavapipe)")]
    NoAdapter {
        /// What was tried.
        detail: String,
    },
    /// The device was lost (driver reset, `Device::destroy`, GPU removed).
    #[error("GPU device lost: {0}")]
    DeviceLost(String),
    /// A wgpu validation or internal error (a bug in this crate or a misuse of a caller's buffer).
    #[error("GPU error: {0}")]
    Gpu(String),
    /// A buffer handed in by the caller does not fit the request.
    #[error("invalid buffer: {0}")]
    InvalidBuffer(String),
    /// File reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A fitted model whose parts do not fit together (array lengths against its sizes,
    /// non-finite values, weights that do not sum to 1, covariances that are not positive
    /// definite, ...): what each model's `validate` reports, e.g. when deserializing an edited
    /// model file.
    #[error("inconsistent model ({kind}): {reason}")]
    InvalidModel {
        /// The model type: "K-Means", "PCA" or "Gaussian mixture".
        kind: &'static str,
        /// Which part does not fit, and why.
        reason: String,
    },
    /// Text that is not a model file of this library: not a JSON object, no or an unknown
    /// `format`, an unsupported `version`, or a `model` of the wrong shape (from
    /// `Model::from_json_str`; `Model::load` reports it as [`Error::Format`] with the path).
    #[error("{reason}")]
    ModelFormat {
        /// What is wrong with the text.
        reason: String,
    },
    /// A [`RowSource`](crate::source::RowSource) delivered something other than it
    /// declared: another number of rows, or values that are not whole rows.
    #[error("row source: {reason}")]
    Source {
        /// What it declared and what it delivered.
        reason: String,
    },
    /// A result in the data's units lies beyond f32's range (±3.4·10³⁸), although the data
    /// are valid f32 (distances between values near f32's limit). The fits and evaluations
    /// compute at a power-of-two scale where nothing overflows, so this is only met where
    /// the answer itself is not representable.
    #[error("{what} cannot be represented in f32 (beyond ±3.4e38): rescale the data")]
    OutOfRange {
        /// The result.
        what: String,
    },
    /// A value the GPU would have to hold in f32 that f32 cannot hold: float64 data whose
    /// spread about their mean lies outside f32's range (below its smallest normal value,
    /// 1.2·10⁻³⁸, or above its largest, 3.4·10³⁸), or a float64 value beyond f32's range
    /// where it is not centred (module `origin`). The data are valid; they need rescaling.
    #[error("{what} is {value:e}, outside the range of float32 (1.2e-38 to 3.4e38) in which the GPU computes: multiply the data by a constant first")]
    Float32Range {
        /// What could not be held.
        what: String,
        /// Its value.
        value: f64,
    },
    /// A file's content could not be understood.
    #[error("{path}: {reason}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

/// Where a value sits in a file, as [`Error::NonFiniteInFile`] shows it.
fn place(line: Option<usize>, row: usize, col: usize) -> String {
    match line {
        Some(line) => format!("line {line}, field {col}"),
        None => format!("row {row}, column {col}"),
    }
}

fn sizes(requested: Option<u64>, available: Option<u64>) -> String {
    match (requested, available) {
        (Some(r), Some(a)) => format!(" needs {r} bytes, {a} available"),
        (Some(r), None) => format!(" needs {r} bytes"),
        _ => String::new(),
    }
}

impl Error {
    /// `Ok` for a count of at least one, else an [`Error::InvalidParameter`] naming it.
    pub(crate) fn require_count(name: &'static str, value: usize) -> Result<()> {
        if value == 0 {
            return Err(Error::invalid(name, "must be at least 1"));
        }
        Ok(())
    }

    /// `Ok` for a finite value >= 0, else an [`Error::InvalidParameter`] naming it.
    pub(crate) fn require_non_negative(name: &'static str, value: f64) -> Result<()> {
        if !(value.is_finite() && value >= 0.0) {
            return Err(Error::invalid(
                name,
                format!("must be finite and >= 0, got {value}"),
            ));
        }
        Ok(())
    }

    /// An [`Error::Format`] for `path`.
    #[cfg(any(feature = "io", feature = "datasets"))]
    pub(crate) fn format(path: &std::path::Path, reason: impl Into<String>) -> Self {
        Error::Format {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }

    /// An [`Error::Io`] for `path`.
    #[cfg(any(feature = "io", feature = "datasets", feature = "plot"))]
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn invalid(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidParameter {
            name,
            reason: reason.into(),
        }
    }
}
