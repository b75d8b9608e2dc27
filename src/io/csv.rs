//! Numeric `.csv` files: numbers separated by commas, one row per line. Blank lines
//! are skipped; the first non-blank line is taken as a header when one of its fields is not
//! a number. Every row must have as many fields as the first; labels are one integer per
//! line.
//!
//! Written files have no header (what the reader and NumPy's `loadtxt(delimiter=",")` take as
//! they are) and `\n` line ends. Each f32 is written in Rust's shortest form that parses back
//! to the same f32 (`1.5`, `0.1`, `-3e-8`), so a matrix written and read back is bitwise the
//! one written.

use std::io::{self, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::npy::{narrow, Dataset};

/// Non-blank lines of `text` as (1-based line number, trimmed line), BOM removed.
fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.strip_prefix('\u{feff}')
        .unwrap_or(text)
        .lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty())
}

pub(super) fn csv_matrix(text: &str, path: &Path) -> Result<Dataset> {
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
                return Err(Error::format(
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
                Error::format(
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

pub(super) fn csv_labels(text: &str, path: &Path) -> Result<Vec<u32>> {
    let mut labels = Vec::new();
    for (k, (line_no, line)) in content_lines(text).enumerate() {
        if line.contains(',') {
            return Err(Error::format(
                path,
                format!("line {line_no}: expected one label per line"),
            ));
        }
        match line.parse::<u32>() {
            Ok(v) => labels.push(v),
            // A first line that is not a number of any kind is a header.
            Err(_) if k == 0 && line.parse::<f64>().is_err() => continue,
            Err(_) => {
                return Err(Error::format(
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

/// Writes `values` (rows of `cols` values, row-major) as CSV rows.
pub(super) fn write_csv_rows<T: std::fmt::Display>(
    w: &mut impl Write,
    values: &[T],
    cols: usize,
) -> io::Result<()> {
    for row in values.chunks(cols.max(1)) {
        for (j, v) in row.iter().enumerate() {
            if j > 0 {
                w.write_all(b",")?;
            }
            write!(w, "{v}")?;
        }
        w.write_all(b"\n")?;
    }
    Ok(())
}
