//! Reading NumPy `.npy` arrays into f32 matrices and u32 labels: the `.npy` half of
//! [`crate::io`] and the parser of the bundled datasets (stored as `.npy` bytes), hence
//! compiled with either feature.
//!
//! Float dtypes (`f4`, `f8`) and integer dtypes (`i1`..`i8`, `u1`..`u8`) of either byte order
//! are converted to f32 (labels: to u32, refusing negative or too large values). A 1-D array
//! is read as N x 1; Fortran-order 2-D arrays are refused rather than silently transposed.
//! Every value must be finite, and an f64 too large for f32 is an [`Error::Format`] rather
//! than a silent infinity. The header's sizes are not trusted for allocations.

use std::io::{self, Read};
use std::path::Path;

use npyz::{DType, NpyFile, Order, TypeChar};

use crate::error::{Error, Result};

/// A matrix read from a file: `n_rows` x `n_features` values, row-major f32.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Row-major values, `n_rows * n_features` of them.
    pub data: Vec<f32>,
    /// Number of rows (samples).
    pub n_rows: usize,
    /// Number of columns (features).
    pub n_features: usize,
}

/// npyz reports malformed content as io errors; those are format problems, not I/O failures.
pub(crate) fn npy_err(path: &Path, e: io::Error) -> Error {
    match e.kind() {
        io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => {
            Error::format(path, format!("not a valid .npy file: {e}"))
        }
        _ => Error::io(path, e),
    }
}

/// Narrows one value to f32, refusing non-finite values and values beyond f32's range.
pub(crate) fn narrow(v: f64, row: usize, col: usize, path: &Path) -> Result<f32> {
    if !v.is_finite() {
        return Err(Error::NonFinite {
            row,
            col,
            value: format!("{v}"),
        });
    }
    let f = v as f32;
    if !f.is_finite() {
        return Err(Error::format(
            path,
            format!("value {v} at row {row}, column {col} is too large for f32"),
        ));
    }
    Ok(f)
}

/// Reads every element of `npy` as `T`, widens it with `widen` and narrows it to f32.
fn npy_values_f32<R: Read, T: npyz::Deserialize>(
    npy: NpyFile<R>,
    widen: fn(T) -> f64,
    n_features: usize,
    path: &Path,
) -> Result<Vec<f32>> {
    // The header's length is untrusted: cap the up-front reservation.
    let mut out = Vec::with_capacity((npy.len() as usize).min(1 << 20));
    let reader = npy
        .data::<T>()
        .map_err(|e| Error::format(path, e.to_string()))?;
    for (i, v) in reader.enumerate() {
        let v = widen(v.map_err(|e| npy_err(path, e))?);
        out.push(narrow(v, i / n_features, i % n_features, path)?);
    }
    Ok(out)
}

fn usize_dim(v: u64, path: &Path) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::format(path, format!("dimension {v} is too large")))
}

/// Parses a `.npy` matrix from `reader`; `path` only names the source in errors.
pub(crate) fn npy_matrix_from_reader(reader: impl Read, path: &Path) -> Result<Dataset> {
    let npy = NpyFile::new(reader).map_err(|e| npy_err(path, e))?;
    let shape = npy.shape().to_vec();
    let (n_rows, n_features) = match shape[..] {
        [n] => (usize_dim(n, path)?, 1),
        [n, d] => (usize_dim(n, path)?, usize_dim(d, path)?),
        _ => {
            return Err(Error::format(
                path,
                format!("expected a 1-D or 2-D array, found shape {shape:?}"),
            ))
        }
    };
    if shape.len() == 2 && npy.order() == Order::Fortran {
        return Err(Error::format(
            path,
            "the array is in Fortran (column-major) order; save it in C order, \
             e.g. with numpy.ascontiguousarray",
        ));
    }
    if n_features == 0 {
        return Err(Error::EmptyData {
            what: "input matrix",
            missing: "columns",
        });
    }
    if n_rows == 0 {
        return Err(Error::EmptyData {
            what: "input matrix",
            missing: "rows",
        });
    }

    let dtype = npy.dtype();
    let ts = match &dtype {
        DType::Plain(ts) => ts.clone(),
        other => {
            return Err(Error::format(
                path,
                format!(
                    "unsupported dtype {}: expected a numeric one",
                    other.descr()
                ),
            ))
        }
    };
    let d = n_features;
    let data = match (ts.type_char(), ts.size_field()) {
        (TypeChar::Float, 4) => npy_values_f32(npy, |v: f32| v as f64, d, path)?,
        (TypeChar::Float, 8) => npy_values_f32(npy, |v: f64| v, d, path)?,
        (TypeChar::Int, 1) => npy_values_f32(npy, |v: i8| v as f64, d, path)?,
        (TypeChar::Int, 2) => npy_values_f32(npy, |v: i16| v as f64, d, path)?,
        (TypeChar::Int, 4) => npy_values_f32(npy, |v: i32| v as f64, d, path)?,
        (TypeChar::Int, 8) => npy_values_f32(npy, |v: i64| v as f64, d, path)?,
        (TypeChar::Uint, 1) => npy_values_f32(npy, |v: u8| v as f64, d, path)?,
        (TypeChar::Uint, 2) => npy_values_f32(npy, |v: u16| v as f64, d, path)?,
        (TypeChar::Uint, 4) => npy_values_f32(npy, |v: u32| v as f64, d, path)?,
        (TypeChar::Uint, 8) => npy_values_f32(npy, |v: u64| v as f64, d, path)?,
        _ => {
            return Err(Error::format(
                path,
                format!("unsupported dtype {ts}: expected a float or integer one"),
            ))
        }
    };
    Ok(Dataset {
        data,
        n_rows,
        n_features,
    })
}

/// Reads every element of `npy` as `T` and checks it is a valid u32 label.
fn npy_labels_as<R: Read, T: npyz::Deserialize + Copy + TryInto<u32> + std::fmt::Display>(
    npy: NpyFile<R>,
    path: &Path,
) -> Result<Vec<u32>> {
    let mut out = Vec::with_capacity((npy.len() as usize).min(1 << 20));
    let reader = npy
        .data::<T>()
        .map_err(|e| Error::format(path, e.to_string()))?;
    for (i, v) in reader.enumerate() {
        let v = v.map_err(|e| npy_err(path, e))?;
        let label = v.try_into().map_err(|_| {
            Error::format(
                path,
                format!("label {v} at index {i} is not in 0..={}", u32::MAX),
            )
        })?;
        out.push(label);
    }
    Ok(out)
}

/// Parses `.npy` labels from `reader`; `path` only names the source in errors.
pub(crate) fn npy_labels_from_reader(reader: impl Read, path: &Path) -> Result<Vec<u32>> {
    let npy = NpyFile::new(reader).map_err(|e| npy_err(path, e))?;
    let shape = npy.shape().to_vec();
    if !matches!(shape[..], [_] | [_, 1]) {
        return Err(Error::format(
            path,
            format!("labels must be a 1-D (or N x 1) array, found shape {shape:?}"),
        ));
    }
    let ts = match npy.dtype() {
        DType::Plain(ts) => ts,
        other => {
            return Err(Error::format(
                path,
                format!("labels must be integers, found dtype {}", other.descr()),
            ))
        }
    };
    let labels = match (ts.type_char(), ts.size_field()) {
        (TypeChar::Int, 1) => npy_labels_as::<_, i8>(npy, path)?,
        (TypeChar::Int, 2) => npy_labels_as::<_, i16>(npy, path)?,
        (TypeChar::Int, 4) => npy_labels_as::<_, i32>(npy, path)?,
        (TypeChar::Int, 8) => npy_labels_as::<_, i64>(npy, path)?,
        (TypeChar::Uint, 1) => npy_labels_as::<_, u8>(npy, path)?,
        (TypeChar::Uint, 2) => npy_labels_as::<_, u16>(npy, path)?,
        (TypeChar::Uint, 4) => npy_labels_as::<_, u32>(npy, path)?,
        (TypeChar::Uint, 8) => npy_labels_as::<_, u64>(npy, path)?,
        _ => {
            return Err(Error::format(
                path,
                format!("labels must be integers, found dtype {ts}"),
            ))
        }
    };
    if labels.is_empty() {
        return Err(Error::EmptyData {
            what: "label file",
            missing: "rows",
        });
    }
    Ok(labels)
}
