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
//! Writes go to a temporary file in the target's directory, which is flushed, synced and
//! then renamed over the target. A reader therefore sees either the old file or the complete
//! new one, never a half-written one, and a failed write leaves the old file as it was.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

use npyz::{DType, NpyFile, Order, TypeChar, WriterBuilder};

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

fn format_err(path: &Path, reason: impl Into<String>) -> Error {
    Error::Format {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn io_err(path: &Path, source: io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// npyz reports malformed content as io errors; those are format problems, not I/O failures.
fn npy_err(path: &Path, e: io::Error) -> Error {
    match e.kind() {
        io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => {
            format_err(path, format!("not a valid .npy file: {e}"))
        }
        _ => io_err(path, e),
    }
}

fn extension(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}

fn open(path: &Path) -> Result<BufReader<File>> {
    File::open(path)
        .map(BufReader::new)
        .map_err(|e| io_err(path, e))
}

fn read_text(path: &Path) -> Result<String> {
    let mut text = String::new();
    open(path)?
        .read_to_string(&mut text)
        .map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData => format_err(path, "not UTF-8 text"),
            _ => io_err(path, e),
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
        _ => Err(format_err(
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
        _ => Err(format_err(
            path,
            "unsupported file type: expected a .npy or .csv extension",
        )),
    }
}

/// Narrows one value to f32, refusing non-finite values and values beyond f32's range.
fn narrow(v: f64, row: usize, col: usize, path: &Path) -> Result<f32> {
    if !v.is_finite() {
        return Err(Error::NonFinite {
            row,
            col,
            value: format!("{v}"),
        });
    }
    let f = v as f32;
    if !f.is_finite() {
        return Err(format_err(
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
        .map_err(|e| format_err(path, e.to_string()))?;
    for (i, v) in reader.enumerate() {
        let v = widen(v.map_err(|e| npy_err(path, e))?);
        out.push(narrow(v, i / n_features, i % n_features, path)?);
    }
    Ok(out)
}

fn usize_dim(v: u64, path: &Path) -> Result<usize> {
    usize::try_from(v).map_err(|_| format_err(path, format!("dimension {v} is too large")))
}

/// Parses a `.npy` matrix from `reader`; `path` only names the source in errors.
pub(crate) fn npy_matrix_from_reader(reader: impl Read, path: &Path) -> Result<Dataset> {
    let npy = NpyFile::new(reader).map_err(|e| npy_err(path, e))?;
    let shape = npy.shape().to_vec();
    let (n_rows, n_features) = match shape[..] {
        [n] => (usize_dim(n, path)?, 1),
        [n, d] => (usize_dim(n, path)?, usize_dim(d, path)?),
        _ => {
            return Err(format_err(
                path,
                format!("expected a 1-D or 2-D array, found shape {shape:?}"),
            ))
        }
    };
    if shape.len() == 2 && npy.order() == Order::Fortran {
        return Err(format_err(
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
            return Err(format_err(
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
            return Err(format_err(
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
        .map_err(|e| format_err(path, e.to_string()))?;
    for (i, v) in reader.enumerate() {
        let v = v.map_err(|e| npy_err(path, e))?;
        let label = v.try_into().map_err(|_| {
            format_err(
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
        return Err(format_err(
            path,
            format!("labels must be a 1-D (or N x 1) array, found shape {shape:?}"),
        ));
    }
    let ts = match npy.dtype() {
        DType::Plain(ts) => ts,
        other => {
            return Err(format_err(
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
            return Err(format_err(
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

/// Non-blank lines of `text` as (1-based line number, trimmed line), BOM removed.
fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.strip_prefix('\u{feff}')
        .unwrap_or(text)
        .lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty())
}

fn csv_matrix(text: &str, path: &Path) -> Result<Dataset> {
    let mut data = Vec::new();
    let mut n_rows = 0;
    // Field count and the line it was taken from, for the ragged-row message.
    let mut width: Option<(usize, usize)> = None;
    for (k, (line_no, line)) in content_lines(text).enumerate() {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let numbers: Vec<Option<f64>> = fields.iter().map(|f| f.parse().ok()).collect();
        if k == 0 && numbers.iter().any(Option::is_none) {
            continue; // header
        }
        match width {
            None => width = Some((fields.len(), line_no)),
            Some((w, first)) if w != fields.len() => {
                return Err(format_err(
                    path,
                    format!(
                        "line {line_no} has {} fields, but line {first} has {w}",
                        fields.len()
                    ),
                ))
            }
            Some(_) => {}
        }
        for (col, (field, number)) in fields.iter().zip(&numbers).enumerate() {
            let v = number.ok_or_else(|| {
                format_err(
                    path,
                    format!(
                        "line {line_no}, field {}: {field:?} is not a number",
                        col + 1
                    ),
                )
            })?;
            data.push(narrow(v, n_rows, col, path)?);
        }
        n_rows += 1;
    }
    match width {
        Some((n_features, _)) => Ok(Dataset {
            data,
            n_rows,
            n_features,
        }),
        None => Err(Error::EmptyData {
            what: "input matrix",
            missing: "rows",
        }),
    }
}

fn csv_labels(text: &str, path: &Path) -> Result<Vec<u32>> {
    let mut labels = Vec::new();
    for (k, (line_no, line)) in content_lines(text).enumerate() {
        if line.contains(',') {
            return Err(format_err(
                path,
                format!("line {line_no}: expected one label per line"),
            ));
        }
        match line.parse::<u32>() {
            Ok(v) => labels.push(v),
            // A first line that is not a number of any kind is a header.
            Err(_) if k == 0 && line.parse::<f64>().is_err() => continue,
            Err(_) => {
                return Err(format_err(
                    path,
                    format!(
                        "line {line_no}: {line:?} is not a label (an integer in 0..={})",
                        u32::MAX
                    ),
                ))
            }
        }
    }
    if labels.is_empty() {
        return Err(Error::EmptyData {
            what: "label file",
            missing: "rows",
        });
    }
    Ok(labels)
}

/// Writes through a temporary file in the target's directory, then renames it over `path`.
fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&mut File>) -> io::Result<()>,
) -> Result<()> {
    let err = |e| io_err(path, e);
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
    {
        let mut w = BufWriter::new(tmp.as_file_mut());
        write(&mut w).map_err(err)?;
        w.flush().map_err(err)?;
    }
    // Temp files are created owner-only; keep the old file's mode, or use the usual 0644,
    // so the result is not less readable than a plainly created file.
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => tmp
            .as_file()
            .set_permissions(m.permissions())
            .map_err(err)?,
        _ => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                tmp.as_file()
                    .set_permissions(std::fs::Permissions::from_mode(0o644))
                    .map_err(err)?;
            }
        }
    }
    // Synced before the rename, so a crash cannot leave a renamed but empty file.
    tmp.as_file().sync_all().map_err(err)?;
    // On failure the temp file is dropped, which deletes it.
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
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
    write_atomic(path, |w| w.write_all(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write_npy<T: npyz::AutoSerialize + Copy>(
        path: &Path,
        data: &[T],
        shape: &[u64],
        order: Order,
    ) {
        let mut f = File::create(path).unwrap();
        let mut w = npyz::WriteOptions::<T>::new()
            .default_dtype()
            .shape(shape)
            .order(order)
            .writer(&mut f)
            .begin_nd()
            .unwrap();
        w.extend(data.iter().copied()).unwrap();
        w.finish().unwrap();
    }

    #[test]
    fn npy_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.npy");
        let data = [1.5f32, -2.0, 3.25, 4.0, 5.0, 6.0];
        write_npy_f32(&p, &data, &[3, 2]).unwrap();
        let ds = read_matrix(&p).unwrap();
        assert_eq!((ds.n_rows, ds.n_features), (3, 2));
        assert_eq!(ds.data, data);

        let lp = dir.path().join("labels.npy");
        write_npy_u32(&lp, &[0, 2, 1, 7]).unwrap();
        assert_eq!(read_labels(&lp).unwrap(), vec![0, 2, 1, 7]);

        // Overwriting replaces the content.
        write_npy_u32(&lp, &[3]).unwrap();
        assert_eq!(read_labels(&lp).unwrap(), vec![3]);

        assert!(matches!(
            write_npy_f32(&p, &data, &[4, 2]),
            Err(Error::InvalidParameter { name: "shape", .. })
        ));
        assert_eq!(read_matrix(&p).unwrap().data, data);
    }

    #[test]
    fn npy_dtypes_and_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f8.npy");
        write_npy(&p, &[0.1f64, 2.0, 1e10, -4.0], &[2, 2], Order::C);
        let ds = read_matrix(&p).unwrap();
        assert_eq!(ds.data, vec![0.1f32, 2.0, 1e10, -4.0]);

        let p = dir.path().join("i4.npy");
        write_npy(&p, &[1i32, -2, 3], &[3], Order::C);
        let ds = read_matrix(&p).unwrap();
        assert_eq!((ds.n_rows, ds.n_features), (3, 1));
        assert_eq!(ds.data, vec![1.0, -2.0, 3.0]);
        assert!(read_labels(&p).is_err()); // -2 is not a label

        let p = dir.path().join("i8.npy");
        write_npy(&p, &[5i64, 6], &[1, 2], Order::C);
        assert_eq!(read_matrix(&p).unwrap().data, vec![5.0, 6.0]);

        let p = dir.path().join("u1.npy");
        write_npy(&p, &[255u8, 0, 9], &[3], Order::C);
        assert_eq!(read_matrix(&p).unwrap().data, vec![255.0, 0.0, 9.0]);
        assert_eq!(read_labels(&p).unwrap(), vec![255, 0, 9]);

        let p = dir.path().join("i8labels.npy");
        write_npy(&p, &[1i64, 0, 2], &[3, 1], Order::C);
        assert_eq!(read_labels(&p).unwrap(), vec![1, 0, 2]);

        let p = dir.path().join("big.npy");
        write_npy(&p, &[1e300f64], &[1, 1], Order::C);
        let e = read_matrix(&p).unwrap_err();
        assert!(
            matches!(&e, Error::Format { reason, .. } if reason.contains("f32")),
            "{e}"
        );

        let p = dir.path().join("nan.npy");
        write_npy(&p, &[1.0f64, 2.0, 3.0, f64::NAN], &[2, 2], Order::C);
        assert!(matches!(
            read_matrix(&p),
            Err(Error::NonFinite { row: 1, col: 1, .. })
        ));
        assert!(matches!(read_labels(&p), Err(Error::Format { .. })));

        let p = dir.path().join("3d.npy");
        write_npy(&p, &[1.0f32; 8], &[2, 2, 2], Order::C);
        assert!(matches!(read_matrix(&p), Err(Error::Format { .. })));

        let p = dir.path().join("empty.npy");
        write_npy::<f32>(&p, &[], &[0, 3], Order::C);
        assert!(matches!(read_matrix(&p), Err(Error::EmptyData { .. })));

        let p = dir.path().join("junk.npy");
        fs::write(&p, b"not numpy at all").unwrap();
        assert!(matches!(read_matrix(&p), Err(Error::Format { .. })));
    }

    #[test]
    fn fortran_order_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.npy");
        write_npy(
            &p,
            &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0],
            &[2, 3],
            Order::Fortran,
        );
        let e = read_matrix(&p).unwrap_err();
        assert!(
            matches!(&e, Error::Format { reason, .. } if reason.contains("Fortran")),
            "{e}"
        );
    }

    #[test]
    fn csv_with_and_without_header() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.csv");
        fs::write(&p, "1,2,3\n\n4.5, -5e1 ,6\r\n").unwrap();
        let ds = read_matrix(&p).unwrap();
        assert_eq!((ds.n_rows, ds.n_features), (2, 3));
        assert_eq!(ds.data, vec![1.0, 2.0, 3.0, 4.5, -50.0, 6.0]);

        let p = dir.path().join("h.CSV");
        fs::write(&p, "\u{feff}\nsepal,petal\n1,2\n3,4\n\n").unwrap();
        let ds = read_matrix(&p).unwrap();
        assert_eq!((ds.n_rows, ds.n_features), (2, 2));
        assert_eq!(ds.data, vec![1.0, 2.0, 3.0, 4.0]);

        let p = dir.path().join("only_header.csv");
        fs::write(&p, "a,b\n\n").unwrap();
        assert!(matches!(read_matrix(&p), Err(Error::EmptyData { .. })));
        let p = dir.path().join("nothing.csv");
        fs::write(&p, "").unwrap();
        assert!(matches!(read_matrix(&p), Err(Error::EmptyData { .. })));
    }

    #[test]
    fn csv_errors_name_the_place() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ragged.csv");
        fs::write(&p, "x,y\n1,2\n\n3,4,5\n").unwrap();
        let e = read_matrix(&p).unwrap_err();
        assert!(
            matches!(&e, Error::Format { reason, .. } if reason.contains("line 4")),
            "{e}"
        );

        let p = dir.path().join("nan.csv");
        fs::write(&p, "a,b\n1,2\n3,NaN\n").unwrap();
        let e = read_matrix(&p).unwrap_err();
        assert!(matches!(e, Error::NonFinite { row: 1, col: 1, .. }), "{e}");
        let p = dir.path().join("inf.csv");
        fs::write(&p, "1,2\n-inf,0\n").unwrap();
        assert!(matches!(
            read_matrix(&p),
            Err(Error::NonFinite { row: 1, col: 0, .. })
        ));

        let p = dir.path().join("word.csv");
        fs::write(&p, "1,2\n3,four\n").unwrap();
        let e = read_matrix(&p).unwrap_err();
        assert!(
            matches!(&e, Error::Format { reason, .. } if reason.contains("line 2, field 2")),
            "{e}"
        );
    }

    #[test]
    fn labels_csv() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("y.csv");
        fs::write(&p, "label\n0\n2\n\n1\n").unwrap();
        assert_eq!(read_labels(&p).unwrap(), vec![0, 2, 1]);
        fs::write(&p, "0\n-1\n").unwrap();
        let e = read_labels(&p).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        fs::write(&p, "0,1\n").unwrap();
        assert!(matches!(read_labels(&p), Err(Error::Format { .. })));
        fs::write(&p, "\n").unwrap();
        assert!(matches!(read_labels(&p), Err(Error::EmptyData { .. })));
    }

    #[test]
    fn bad_paths() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.npy");
        let e = read_matrix(&missing).unwrap_err();
        assert!(
            matches!(&e, Error::Io { path, .. } if path == &missing),
            "{e}"
        );
        let e = read_matrix(&dir.path().join("x.txt")).unwrap_err();
        assert!(matches!(e, Error::Format { .. }), "{e}");
        let e = write_string(&dir.path().join("no/such/dir/out.txt"), "x").unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
    }

    #[test]
    fn atomic_writes_leave_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("report.json");
        write_string(&p, "old").unwrap();
        write_string(&p, "new").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        write_npy_f32(&dir.path().join("c.npy"), &[1.0], &[1, 1]).unwrap();
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, vec!["c.npy", "report.json"]);

        // Renaming over a directory fails: error with the path, nothing left behind.
        let blocked = dir.path().join("blocked");
        fs::create_dir(&blocked).unwrap();
        fs::write(blocked.join("inside"), "keep").unwrap();
        let e = write_string(&blocked, "x").unwrap_err();
        assert!(
            matches!(&e, Error::Io { path, .. } if path == &blocked),
            "{e}"
        );
        assert_eq!(fs::read_to_string(blocked.join("inside")).unwrap(), "keep");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 3);

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o644);
        }
    }
}
