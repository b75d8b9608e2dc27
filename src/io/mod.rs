//! Reading matrices and labels from `.npy` / `.csv` files, and writing results atomically.
//!
//! Formats read, chosen by the file extension (case-insensitive):
//!
//! * `.npy` (NumPy format): a 2-D C-order array, or a 1-D array read as N x 1. Float dtypes
//!   (`f4`, `f8`) and integer dtypes (`i1`..`i8`, `u1`..`u8`) of either byte order are
//!   converted to f32. Fortran-order 2-D arrays are refused rather than silently transposed.
//!   The header is not trusted: its size is bounded, its shape's product is checked
//!   arithmetic, and the data must be exactly as long as the shape says, for every dtype.
//! * `.csv`: numbers separated by commas, one row per line, read a line at a time. Blank
//!   lines are skipped; the first non-blank line is a header only when it holds no number at
//!   all. Every field of a data row must be a number (an empty field or `NA` is an error naming
//!   its line), and every row must have as many fields as the first. A NUL byte or a field
//!   longer than [`MAX_FIELD_BYTES`] ends the reading at once (binary or endless input).
//!
//! Every value must be finite: a NaN or infinity is reported as [`Error::NonFiniteInFile`]
//! naming the file and placing the value as a person counts (line and field of a `.csv`, row
//! and column of a `.npy`, from 1). An f64 value too large for f32 is an [`Error::Format`]
//! rather than a silent infinity. A directory is refused with a message that says so; a pipe
//! or device is read as a stream, within the same bounds.
//!
//! Results are written as `.npy` (`u4` labels, `f4` matrices) or `.csv` (no header, one row a
//! line, f32 values in their shortest round-trip form), chosen by the extension
//! ([`write_labels`], [`write_matrix`]).
//!
//! Writes go to a temporary file in the target's directory, which is flushed, synced and
//! then renamed over the target. A reader therefore sees either the old file or the complete
//! new one, never a half-written one, and a failed write leaves the old file as it was.
//! [`OutputSet`] writes several files as one set: all or none.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use npyz::WriterBuilder;

use crate::atomic::write_atomic;
use crate::error::{Error, Result};
use crate::npy::{npy_labels_from_reader, npy_matrix_from_reader};

mod csv;
#[cfg(test)]
mod fuzz;
mod rows;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod upload_tests;

pub use crate::atomic::OutputSet;
pub use crate::npy::{Dataset, Dataset64};
pub use csv::MAX_FIELD_BYTES;
pub use rows::{open_matrix, InputMatrix, NpyRows};

use csv::{csv_labels, csv_matrix, write_csv_rows};

fn extension(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}

/// Opens `path` for reading: a buffered reader and, for a regular file, its length (a pipe
/// or a device has none and is read as a stream).
///
/// Errors: [`Error::Io`] when it cannot be opened; [`Error::Format`] for a directory.
pub(crate) fn open(path: &Path) -> Result<(BufReader<File>, Option<u64>)> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if meta.is_dir() {
        return Err(not_a_file(path));
    }
    let len = meta.is_file().then_some(meta.len());
    Ok((BufReader::with_capacity(1 << 16, file), len))
}

/// The error for a directory given where a data file belongs.
pub(crate) fn not_a_file(path: &Path) -> Error {
    Error::format(path, "is a directory, not a file; give the path of a file")
}

/// Reads a numeric matrix in `format` from any reader (standard input, a network stream, a
/// file already open), as [`read_matrix`] reads a file: the same rules, the same bounds,
/// errors naming `name`. A `.npy` stream must end where its shape says.
///
/// Errors: those of [`read_matrix`].
pub fn read_matrix_from(reader: impl Read, format: FileFormat, name: &Path) -> Result<Dataset> {
    match format {
        FileFormat::Npy => npy_matrix_from_reader(reader, None, name),
        FileFormat::Csv => csv_matrix(BufReader::new(reader), name),
    }
}

/// Reads labels in `format` from any reader, as [`read_labels`] reads a file; errors name
/// `name`.
///
/// Errors: those of [`read_labels`].
pub fn read_labels_from(reader: impl Read, format: FileFormat, name: &Path) -> Result<Vec<u32>> {
    match format {
        FileFormat::Npy => npy_labels_from_reader(reader, None, name),
        FileFormat::Csv => csv_labels(BufReader::new(reader), name),
    }
}

/// Reads a numeric matrix from a `.npy` or `.csv` file (see the module docs for the rules).
///
/// Errors: [`Error::Io`] when the file cannot be read, [`Error::Format`] for a directory, an
/// unknown extension or content that does not follow the rules (the reason names the line or
/// the dtype), [`Error::NonFiniteInFile`] with its place, [`Error::EmptyData`] for no rows or
/// no columns.
pub fn read_matrix(path: &Path) -> Result<Dataset> {
    match extension(path).as_deref() {
        Some("npy") => {
            let (reader, len) = open(path)?;
            npy_matrix_from_reader(reader, len, path)
        }
        Some("csv") => csv_matrix(open(path)?.0, path),
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
/// large value, several fields on a line, unknown extension, a directory),
/// [`Error::EmptyData`].
pub fn read_labels(path: &Path) -> Result<Vec<u32>> {
    match extension(path).as_deref() {
        Some("npy") => {
            let (reader, len) = open(path)?;
            npy_labels_from_reader(reader, len, path)
        }
        Some("csv") => csv_labels(open(path)?.0, path),
        _ => Err(Error::format(
            path,
            "unsupported file type: expected a .npy or .csv extension",
        )),
    }
}

/// The two file formats of matrices and labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// NumPy's `.npy`.
    Npy,
    /// Numbers separated by commas, one row per line.
    Csv,
}

impl FileFormat {
    /// The format `path`'s extension names (`.npy` or `.csv`, any case), if any.
    pub fn of(path: &Path) -> Option<Self> {
        match extension(path).as_deref() {
            Some("npy") => Some(FileFormat::Npy),
            Some("csv") => Some(FileFormat::Csv),
            _ => None,
        }
    }
}

/// The format `path`'s extension names (`.npy` or `.csv`, any case).
fn output_format(path: &Path) -> Result<FileFormat> {
    match FileFormat::of(path) {
        Some(format) => Ok(format),
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
    let mut set = OutputSet::new();
    set.labels(path, labels)?;
    set.commit()
}

/// Writes an `n_rows` x `cols` row-major f32 matrix atomically in the format the extension
/// names: a 2-D `f4` `.npy` array, or a `.csv` file (no header, one row a line, each value
/// in its shortest form that reads back as the same f32).
///
/// Errors: [`Error::InvalidParameter`] when `data` does not hold `n_rows` x `cols` values,
/// [`Error::Format`] for another extension, [`Error::Io`] with `path` when writing fails.
pub fn write_matrix(path: &Path, data: &[f32], n_rows: usize, cols: usize) -> Result<()> {
    let mut set = OutputSet::new();
    set.matrix(path, data, n_rows, cols)?;
    set.commit()
}

impl OutputSet {
    /// Stages labels for `path`, in the format [`write_labels`] picks.
    ///
    /// Errors: those of [`write_labels`]; nothing is staged then.
    pub fn labels(&mut self, path: &Path, labels: &[u32]) -> Result<()> {
        match output_format(path)? {
            FileFormat::Npy => self.add(path, |w| npy_u32(w, labels)),
            FileFormat::Csv => self.add(path, |w| write_csv_rows(w, labels, 1)),
        }
    }

    /// Stages an `n_rows` x `cols` matrix for `path`, in the format [`write_matrix`] picks.
    ///
    /// Errors: those of [`write_matrix`]; nothing is staged then.
    pub fn matrix(&mut self, path: &Path, data: &[f32], n_rows: usize, cols: usize) -> Result<()> {
        let format = output_format(path)?;
        if n_rows.checked_mul(cols) != Some(data.len()) {
            return Err(Error::invalid(
                "shape",
                format!("{n_rows} x {cols} does not hold {} values", data.len()),
            ));
        }
        match format {
            FileFormat::Npy => self.add(path, |w| npy_f32(w, data, &[n_rows as u64, cols as u64])),
            FileFormat::Csv => self.add(path, |w| write_csv_rows(w, data, cols)),
        }
    }
}

/// Writes a 1-D `u4` `.npy` array.
fn npy_u32(w: &mut impl std::io::Write, labels: &[u32]) -> std::io::Result<()> {
    let mut npy = npyz::WriteOptions::<u32>::new()
        .default_dtype()
        .shape(&[labels.len() as u64])
        .writer(w)
        .begin_nd()?;
    npy.extend(labels.iter().copied())?;
    npy.finish()
}

/// Writes a C-order `f4` `.npy` array of `shape`.
fn npy_f32(w: &mut impl std::io::Write, data: &[f32], shape: &[u64]) -> std::io::Result<()> {
    let mut npy = npyz::WriteOptions::<f32>::new()
        .default_dtype()
        .shape(shape)
        .writer(w)
        .begin_nd()?;
    npy.extend(data.iter().copied())?;
    npy.finish()
}

/// Writes `labels` as a 1-D `.npy` array of dtype `u4`, atomically.
///
/// Errors: [`Error::Io`] with `path` when writing fails; the old file is then untouched.
pub fn write_npy_u32(path: &Path, labels: &[u32]) -> Result<()> {
    write_atomic(path, |w| npy_u32(w, labels))
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
    write_atomic(path, |w| npy_f32(w, data, shape))
}

/// Writes `text` to `path`, atomically.
///
/// Errors: [`Error::Io`] with `path` when writing fails; the old file is then untouched.
pub fn write_string(path: &Path, text: &str) -> Result<()> {
    crate::atomic::write_text(path, text)
}
