//! Reading matrices and labels from `.npy` / `.csv` files, and writing results atomically.
//!
//! Formats read, chosen by the file extension (case-insensitive):
//!
//! * `.npy` (NumPy format, via `npyz`): a 2-D C-order array, or a 1-D array read as N x 1.
//!   Float dtypes (`f4`, `f8`) and integer dtypes (`i1`..`i8`, `u1`..`u8`) of either byte
//!   order are converted to f32. Fortran-order 2-D arrays are refused rather than silently
//!   transposed.
//! * `.csv`: numbers separated by commas, one row per line. Blank lines are skipped; the first
//!   non-blank line is taken as a header when one of its fields is not a number. Every row
//!   must have as many fields as the first.
//!
//! Every value must be finite: a NaN or infinity is reported as [`Error::NonFinite`] with its
//! 0-based data row and column (header and blank lines not counted). An f64 value too large
//! for f32 is an [`Error::Format`] rather than a silent infinity.
//!
//! Results are written as `.npy` (`u4` labels, `f4` matrices) or `.csv` (no header, one row a
//! line, f32 values in their shortest round-trip form), chosen by the extension
//! ([`write_labels`], [`write_matrix`]).
//!
//! Writes go to a temporary file in the target's directory, which is flushed, synced and
//! then renamed over the target. A reader therefore sees either the old file or the complete
//! new one, never a half-written one, and a failed write leaves the old file as it was.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use npyz::WriterBuilder;

use crate::atomic::{write_atomic, write_text};
use crate::error::{Error, Result};
use crate::npy::{npy_labels_from_reader, npy_matrix_from_reader};

mod csv;
mod mapped;
#[cfg(test)]
mod tests;

pub use crate::npy::Dataset;
pub use mapped::{open_matrix, InputMatrix, NpyRows};

use csv::{csv_labels, csv_matrix, write_csv_rows};

fn extension(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}

fn open(path: &Path) -> Result<BufReader<File>> {
    File::open(path)
        .map(BufReader::new)
        .map_err(|e| Error::io(path, e))
}

fn read_text(path: &Path) -> Result<String> {
    let mut text = String::new();
    open(path)?
        .read_to_string(&mut text)
        .map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData => Error::format(path, "not UTF-8 text"),
            _ => Error::io(path, e),
        })?;
    Ok(text)
}

/// Reads a numeric matrix from a `.npy` or `.csv` file (see the module docs for the rules).
///
/// Errors: [`Error::Io`] when the file cannot be read, [`Error::Format`] for an unknown
/// extension or content that does not follow the rules (the reason names the line or the
/// dtype), [`Error::NonFinite`] with row and column, [`Error::EmptyData`] for no rows or no
/// columns.
pub fn read_matrix(path: &Path) -> Result<Dataset> {
    match extension(path).as_deref() {
        Some("npy") => npy_matrix_from_reader(open(path)?, path),
        Some("csv") => csv_matrix(&read_text(path)?, path),
        _ => Err(Error::format(
            path,
            "unsupported file type: expected a .npy or .csv extension",
        )),
    }
}

/// Reads integer class labels from a `.npy` file (1-D, or N x 1, of an integer dtype) or a
/// `.csv` file (one label per line, optional header line, blank lines skipped).
///
/// Errors: [`Error::Io`], [`Error::Format`] (non-integer dtype or field, negative or too
/// large value, several fields on a line, unknown extension), [`Error::EmptyData`].
pub fn read_labels(path: &Path) -> Result<Vec<u32>> {
    match extension(path).as_deref() {
        Some("npy") => npy_labels_from_reader(open(path)?, path),
        Some("csv") => csv_labels(&read_text(path)?, path),
        _ => Err(Error::format(
            path,
            "unsupported file type: expected a .npy or .csv extension",
        )),
    }
}

/// How a result file is written, from its extension.
enum OutputFormat {
    Npy,
    Csv,
}

/// The format `path`'s extension names (`.npy` or `.csv`, any case).
fn output_format(path: &Path) -> Result<OutputFormat> {
    match extension(path).as_deref() {
        Some("npy") => Ok(OutputFormat::Npy),
        Some("csv") => Ok(OutputFormat::Csv),
        _ => Err(Error::format(
            path,
            "unsupported output type: expected a .npy or .csv extension",
        )),
    }
}

/// Whether [`write_labels`] and [`write_matrix`] can write `path`: its extension is `.npy`
/// or `.csv` (any case).
pub fn is_output_path(path: &Path) -> bool {
    output_format(path).is_ok()
}

/// Writes labels atomically in the format the extension names: a 1-D `u4` `.npy` array, or
/// a `.csv` file with one integer a line and no header.
///
/// Errors: [`Error::Format`] for another extension; [`Error::Io`] with `path` when writing
/// fails, the old file then being untouched.
pub fn write_labels(path: &Path, labels: &[u32]) -> Result<()> {
    match output_format(path)? {
        OutputFormat::Npy => write_npy_u32(path, labels),
        OutputFormat::Csv => write_atomic(path, |w| write_csv_rows(w, labels, 1)),
    }
}

/// Writes an `n_rows` x `cols` row-major f32 matrix atomically in the format the extension
/// names: a 2-D `f4` `.npy` array, or a `.csv` file (no header, one row a line, each value
/// in its shortest form that reads back as the same f32).
///
/// Errors: [`Error::InvalidParameter`] when `data` does not hold `n_rows` x `cols` values,
/// [`Error::Format`] for another extension, [`Error::Io`] with `path` when writing fails.
pub fn write_matrix(path: &Path, data: &[f32], n_rows: usize, cols: usize) -> Result<()> {
    let format = output_format(path)?;
    if n_rows.checked_mul(cols) != Some(data.len()) {
        return Err(Error::invalid(
            "shape",
            format!("{n_rows} x {cols} does not hold {} values", data.len()),
        ));
    }
    match format {
        OutputFormat::Npy => write_npy_f32(path, data, &[n_rows as u64, cols as u64]),
        OutputFormat::Csv => write_atomic(path, |w| write_csv_rows(w, data, cols)),
    }
}

/// Writes `labels` as a 1-D `.npy` array of dtype `u4`, atomically.
///
/// Errors: [`Error::Io`] with `path` when writing fails; the old file is then untouched.
pub fn write_npy_u32(path: &Path, labels: &[u32]) -> Result<()> {
    write_atomic(path, |w| {
        let mut npy = npyz::WriteOptions::<u32>::new()
            .default_dtype()
            .shape(&[labels.len() as u64])
            .writer(w)
            .begin_nd()?;
        npy.extend(labels.iter().copied())?;
        npy.finish()
    })
}

/// Writes `data` as a C-order `.npy` array of dtype `f4` and the given `shape`, atomically.
///
/// Errors: [`Error::InvalidParameter`] when the shape's product is not `data.len()`;
/// [`Error::Io`] with `path` when writing fails, the old file then being untouched.
pub fn write_npy_f32(path: &Path, data: &[f32], shape: &[u64]) -> Result<()> {
    let count = shape.iter().try_fold(1u64, |acc, &s| acc.checked_mul(s));
    if count != Some(data.len() as u64) {
        return Err(Error::invalid(
            "shape",
            format!("shape {shape:?} does not hold {} values", data.len()),
        ));
    }
    write_atomic(path, |w| {
        let mut npy = npyz::WriteOptions::<f32>::new()
            .default_dtype()
            .shape(shape)
            .writer(w)
            .begin_nd()?;
        npy.extend(data.iter().copied())?;
        npy.finish()
    })
}

/// Writes `text` to `path`, atomically.
///
/// Errors: [`Error::Io`] with `path` when writing fails; the old file is then untouched.
pub fn write_string(path: &Path, text: &str) -> Result<()> {
    write_text(path, text)
}
