//! Numeric `.csv` files: numbers separated by commas, one row per line, read as a stream, a
//! line at a time (never the whole file before parsing).
//!
//! Blank lines are skipped. The first non-blank line is a header only when it holds no
//! number at all (`x,y,z`); a first line with a number in it (`1,NA,3`) is data. Every field
//! of a data row must be a number: an empty field or a marker such as `NA` is a missing value
//! and an error naming its line, never a silently dropped row. Every row must have as many
//! fields as the first; labels are one integer per line.
//!
//! What is read before parsing is bounded: a field longer than [`MAX_FIELD_BYTES`] or a NUL
//! byte (binary data, such as `/dev/zero`) is an error at once, so an endless or binary input
//! fails fast instead of filling memory.
//!
//! Written files have no header (what the reader and NumPy's `loadtxt(delimiter=",")` take as
//! they are) and `\n` line ends. Each f32 is written in Rust's shortest form that parses back
//! to the same f32 (`1.5`, `0.1`, `-3e-8`), so a matrix written and read back is bitwise the
//! one written.

use std::io::{self, BufRead, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::npy::{narrow, Dataset};

/// The longest field read, in bytes: far more than any number or column name needs.
pub const MAX_FIELD_BYTES: usize = 4096;

/// The lines of a text stream, read one at a time with the bounds of the module docs.
struct Lines<R> {
    reader: R,
    path: std::path::PathBuf,
    line: Vec<u8>,
    /// 1-based number of the line last returned.
    number: usize,
    done: bool,
}

impl<R: BufRead> Lines<R> {
    fn new(reader: R, path: &Path) -> Self {
        Self {
            reader,
            path: path.to_path_buf(),
            line: Vec::new(),
            number: 0,
            done: false,
        }
    }

    /// The next line (without its end and surrounding blanks) and its number, or `None` at
    /// the end.
    fn next_line(&mut self) -> Result<Option<(usize, &str)>> {
        if self.done {
            return Ok(None);
        }
        self.line.clear();
        self.number += 1;
        let number = self.number;
        let mut field = 0usize;
        let mut any = false;
        loop {
            let buf = match self.reader.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(&self.path, e)),
            };
            if buf.is_empty() {
                self.done = true;
                if !any {
                    return Ok(None);
                }
                break;
            }
            any = true;
            let end = buf.iter().position(|&b| b == b'\n');
            let take = &buf[..end.unwrap_or(buf.len())];
            for &b in take {
                match b {
                    0 => {
                        return Err(Error::format(
                            &self.path,
                            format!(
                                "line {number}: a NUL byte; this is binary data, not a CSV text \
                                 file"
                            ),
                        ))
                    }
                    b',' => field = 0,
                    _ => field += 1,
                }
                if field > MAX_FIELD_BYTES {
                    return Err(Error::format(
                        &self.path,
                        format!(
                            "line {number}: a field longer than {MAX_FIELD_BYTES} bytes; this \
                             is not a CSV file of numbers"
                        ),
                    ));
                }
            }
            self.line.extend_from_slice(take);
            let used = take.len() + usize::from(end.is_some());
            self.reader.consume(used);
            if end.is_some() {
                break;
            }
        }
        let mut text = std::str::from_utf8(&self.line)
            .map_err(|_| Error::format(&self.path, format!("line {number}: not UTF-8 text")))?;
        if number == 1 {
            text = text.strip_prefix('\u{feff}').unwrap_or(text);
        }
        Ok(Some((number, text.trim())))
    }
}

/// Why `field` (already trimmed) is not a number, as the end of a message that names its
/// line and field.
fn not_a_number(field: &str) -> String {
    const MISSING: [&str; 8] = ["na", "n/a", "null", "none", "nil", "missing", "?", "-"];
    if field.is_empty() {
        " is empty: a missing value; fill it in or remove the row".to_string()
    } else if MISSING.contains(&field.to_ascii_lowercase().as_str()) {
        format!(": {field:?} marks a missing value; fill it in or remove the row")
    } else {
        format!(": {field:?} is not a number")
    }
}

/// Reads a numeric matrix (module docs) from `reader`; `path` names it in errors.
pub(super) fn csv_matrix(reader: impl BufRead, path: &Path) -> Result<Dataset> {
    let mut lines = Lines::new(reader, path);
    let mut data = Vec::new();
    let mut n_rows = 0;
    // Field count and the line it was taken from, for the ragged-row message.
    let mut width: Option<(usize, usize)> = None;
    let mut first = true;
    while let Some((line_no, line)) = lines.next_line()? {
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let numbers: Vec<Option<f64>> = fields.iter().map(|f| f.parse().ok()).collect();
        let was_first = std::mem::take(&mut first);
        if was_first && numbers.iter().all(Option::is_none) {
            continue; // a header: no number at all
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
        n_rows += 1;
        for (col, (field, number)) in fields.iter().zip(&numbers).enumerate() {
            let Some(v) = number else {
                let header_hint = match was_first {
                    true => " (a header line holds no number at all, so this line is data)",
                    false => "",
                };
                return Err(Error::format(
                    path,
                    format!(
                        "line {line_no}, field {}{}{header_hint}",
                        col + 1,
                        not_a_number(field)
                    ),
                ));
            };
            data.push(narrow(*v, path, Some(line_no), n_rows, col + 1)?);
        }
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

/// Reads labels (one integer per line, an optional header line) from `reader`.
pub(super) fn csv_labels(reader: impl BufRead, path: &Path) -> Result<Vec<u32>> {
    let mut lines = Lines::new(reader, path);
    let mut labels = Vec::new();
    let mut first = true;
    while let Some((line_no, line)) = lines.next_line()? {
        if line.is_empty() {
            continue;
        }
        let was_first = std::mem::take(&mut first);
        if line.contains(',') {
            return Err(Error::format(
                path,
                format!("line {line_no}: expected one label per line"),
            ));
        }
        match line.parse::<u32>() {
            Ok(v) => labels.push(v),
            // A first line that is not a number of any kind is a header.
            Err(_) if was_first && line.parse::<f64>().is_err() => continue,
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
