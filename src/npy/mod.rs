//! Reading NumPy `.npy` arrays into f32 matrices and u32 labels: the `.npy` half of
//! [`crate::io`] and the parser of the bundled datasets (stored as `.npy` bytes), hence
//! compiled with either feature.
//!
//! Float dtypes (`f4`, `f8`) and integer dtypes (`i1`..`i8`, `u1`..`u8`) of either byte order
//! are converted to f32 (labels: to u32, refusing negative or too large values). A 1-D array
//! is read as N x 1; Fortran-order 2-D arrays are refused rather than silently transposed.
//! Every value must be finite, and an f64 too large for f32 is an [`Error::Format`] rather
//! than a silent infinity.
//!
//! Nothing in a header is trusted: it is parsed here, strictly (the dictionary numpy writes,
//! at most [`MAX_HEADER_LEN`] bytes); the shape's product and its size in bytes are checked
//! arithmetic; and the data must be exactly as long as the shape says, for every dtype (a
//! file whose length is known is checked before any value is read, a stream as it ends).
//! Values are read a piece at a time, never more than the header promises.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};

mod dict;
mod header;
#[cfg(test)]
mod tests;

use header::{read_full, Kind, Value};
pub(crate) use header::{read_header, Header};

/// Bytes decoded per read.
const PIECE_BYTES: usize = 1 << 16;

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

/// Reads `count` values of `dtype` from `r` a piece at a time, calling `each(index, value)`;
/// then, when `exact_end` (the data length was not checked against the file's), checks that
/// the stream ends there.
///
/// Errors: [`Error::Format`] when the data end early or go on past the shape; [`Error::Io`];
/// those of `each`.
fn read_values(
    r: &mut impl Read,
    header: &Header,
    count: u64,
    exact_end: bool,
    path: &Path,
    mut each: impl FnMut(u64, Value) -> Result<()>,
) -> Result<()> {
    let size = header.dtype.size;
    let mut buf = vec![0u8; PIECE_BYTES / size * size];
    let mut index = 0u64;
    while index < count {
        let want = ((count - index).min((buf.len() / size) as u64) as usize) * size;
        let got = read_full(r, &mut buf[..want], path)?;
        for bytes in buf[..got - got % size].chunks_exact(size) {
            each(index, header.dtype.decode(bytes))?;
            index += 1;
        }
        if got < want {
            return Err(Error::format(
                path,
                format!(
                    "not a valid .npy file: the data end after {index} of the {count} values \
                     its header's shape {} promises",
                    header.shape_text()
                ),
            ));
        }
    }
    if exact_end && read_full(r, &mut [0u8; 1], path)? != 0 {
        return Err(Error::format(
            path,
            format!(
                "not a valid .npy file: the data go on past the {count} values its header's \
                 shape {} promises",
                header.shape_text()
            ),
        ));
    }
    Ok(())
}

/// Narrows one value to f32, refusing non-finite values and values beyond f32's range.
/// `line` (CSV), `row` and `col` place it as a person counts, from 1.
pub(crate) fn narrow(
    v: f64,
    path: &Path,
    line: Option<usize>,
    row: usize,
    col: usize,
) -> Result<f32> {
    if !v.is_finite() {
        return Err(Error::NonFiniteInFile {
            path: path.to_path_buf(),
            line,
            row,
            col,
            value: format!("{v}"),
        });
    }
    let f = v as f32;
    if !f.is_finite() {
        let place = match line {
            Some(line) => format!("line {line}, field {col}"),
            None => format!("row {row}, column {col}"),
        };
        return Err(Error::format(
            path,
            format!(
                "{place}: {v} is too large for f32 (whose largest value is {:e})",
                f32::MAX
            ),
        ));
    }
    Ok(f)
}

/// Parses a `.npy` matrix from `reader`; `file_len` is the whole file's length when known
/// (a regular file: the data length is then checked before any value is read), `path` names
/// the source in errors.
pub(crate) fn npy_matrix_from_reader(
    mut reader: impl Read,
    file_len: Option<u64>,
    path: &Path,
) -> Result<Dataset> {
    let header = read_header(&mut reader, path)?;
    let (n_rows, n_features) = header.matrix_shape(path)?;
    if let Some(len) = file_len {
        header.check_file_len(len, path)?;
    }
    let count = n_rows * n_features;
    // Reserve what the header promises only when the file's length backs the promise.
    let reserve = match file_len {
        Some(_) => count,
        None => count.min(1 << 20),
    };
    let mut data = Vec::with_capacity(reserve);
    read_values(
        &mut reader,
        &header,
        count as u64,
        file_len.is_none(),
        path,
        |i, v| {
            let i = i as usize;
            let (row, col) = (i / n_features + 1, i % n_features + 1);
            data.push(narrow(v.as_f64(), path, None, row, col)?);
            Ok(())
        },
    )?;
    Ok(Dataset {
        data,
        n_rows,
        n_features,
    })
}

/// A matrix of f64 values read from a file (an `f8` `.npy`): `n_rows` x `n_features`,
/// row-major, kept in f64 so that the fits centre them in f64 before the f32 cast (module
/// [`origin`](crate::origin)).
#[cfg(feature = "io")]
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset64 {
    /// Row-major values, `n_rows * n_features` of them.
    pub data: Vec<f64>,
    /// Number of rows (samples).
    pub n_rows: usize,
    /// Number of columns (features).
    pub n_features: usize,
}

/// Parses a `.npy` matrix of f64 values (`f8` of either byte order) from `reader`, every
/// value checked finite; `file_len` and `path` as for [`npy_matrix_from_reader`]. `None`
/// when the file holds another dtype (read it with [`npy_matrix_from_reader`]).
#[cfg(feature = "io")]
pub(crate) fn npy_matrix64_from_reader(
    mut reader: impl Read,
    file_len: Option<u64>,
    path: &Path,
) -> Result<Option<Dataset64>> {
    let header = read_header(&mut reader, path)?;
    if !(header.dtype.kind == Kind::Float && header.dtype.size == 8) {
        return Ok(None);
    }
    let (n_rows, n_features) = header.matrix_shape(path)?;
    if let Some(len) = file_len {
        header.check_file_len(len, path)?;
    }
    let count = n_rows * n_features;
    let mut data = Vec::with_capacity(if file_len.is_some() {
        count
    } else {
        count.min(1 << 20)
    });
    read_values(
        &mut reader,
        &header,
        count as u64,
        file_len.is_none(),
        path,
        |i, v| {
            let i = i as usize;
            let v = v.as_f64();
            if !v.is_finite() {
                // The same error as every other dtype's (row and column from 1).
                narrow(v, path, None, i / n_features + 1, i % n_features + 1)?;
            }
            data.push(v);
            Ok(())
        },
    )?;
    Ok(Some(Dataset64 {
        data,
        n_rows,
        n_features,
    }))
}

/// Parses `.npy` labels (1-D or N x 1, an integer dtype) from `reader`; `file_len` and
/// `path` as for [`npy_matrix_from_reader`].
pub(crate) fn npy_labels_from_reader(
    mut reader: impl Read,
    file_len: Option<u64>,
    path: &Path,
) -> Result<Vec<u32>> {
    let header = read_header(&mut reader, path)?;
    if !matches!(header.shape[..], [_] | [_, 1]) {
        return Err(Error::format(
            path,
            format!(
                "labels must be a 1-D (or N x 1) array, found shape {}",
                header.shape_text()
            ),
        ));
    }
    if header.dtype.kind == Kind::Float {
        return Err(Error::format(
            path,
            format!(
                "labels must be integers, found dtype {:?}; save them with an integer dtype",
                header.descr
            ),
        ));
    }
    let (count, _) = header.data_bytes(path)?;
    if count == 0 {
        return Err(Error::EmptyData {
            what: "label file",
            missing: "rows",
        });
    }
    if let Some(len) = file_len {
        header.check_file_len(len, path)?;
    }
    let count_usize = usize::try_from(count).map_err(|_| {
        Error::format(
            path,
            format!(
                "shape {} is too large for this machine",
                header.shape_text()
            ),
        )
    })?;
    let mut labels = Vec::with_capacity(match file_len {
        Some(_) => count_usize,
        None => count_usize.min(1 << 20),
    });
    read_values(
        &mut reader,
        &header,
        count,
        file_len.is_none(),
        path,
        |i, v| {
            let label = match v {
                Value::Int(v) => u32::try_from(v).ok(),
                Value::Uint(v) => u32::try_from(v).ok(),
                Value::Float(_) => None,
            };
            match label {
                Some(label) => {
                    labels.push(label);
                    Ok(())
                }
                None => Err(Error::format(
                    path,
                    format!(
                        "row {}: label {} is not in 0..={}",
                        i + 1,
                        match v {
                            Value::Int(v) => v.to_string(),
                            Value::Uint(v) => v.to_string(),
                            Value::Float(v) => v.to_string(),
                        },
                        u32::MAX
                    ),
                )),
            }
        },
    )?;
    Ok(labels)
}
