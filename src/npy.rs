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

use std::io::{self, Read};
use std::path::Path;

use crate::error::{Error, Result};

/// The longest header read, in bytes. numpy writes headers of a few hundred bytes, and its
/// own reader refuses those over 10 000 unless told otherwise.
pub(crate) const MAX_HEADER_LEN: usize = 1 << 16;

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

/// The kind of number a dtype holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// IEEE float (`f`).
    Float,
    /// Signed integer (`i`).
    Int,
    /// Unsigned integer (`u`).
    Uint,
}

/// A plain numeric dtype: kind, size in bytes and byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dtype {
    /// Float, signed or unsigned integer.
    pub kind: Kind,
    /// Bytes per value: 4 or 8 for floats, 1, 2, 4 or 8 for integers.
    pub size: usize,
    /// Whether the bytes are big-endian.
    pub big_endian: bool,
}

/// One decoded value.
#[derive(Debug, Clone, Copy)]
enum Value {
    Float(f64),
    Int(i64),
    Uint(u64),
}

impl Value {
    fn as_f64(self) -> f64 {
        match self {
            Value::Float(v) => v,
            Value::Int(v) => v as f64,
            Value::Uint(v) => v as f64,
        }
    }
}

impl Dtype {
    /// The dtype a `descr` string names (`<f4`, `>i8`, `|u1`, `f8`, ...), if it is one this
    /// reader supports.
    fn parse(descr: &str) -> Option<Self> {
        let (big_endian, rest) = match descr.as_bytes().first()? {
            b'<' => (false, &descr[1..]),
            b'>' => (true, &descr[1..]),
            b'|' | b'=' => (cfg!(target_endian = "big"), &descr[1..]),
            _ => (cfg!(target_endian = "big"), descr),
        };
        let kind = match rest.as_bytes().first()? {
            b'f' => Kind::Float,
            b'i' => Kind::Int,
            b'u' => Kind::Uint,
            _ => return None,
        };
        let size: usize = rest[1..].parse().ok()?;
        let fits = match kind {
            Kind::Float => matches!(size, 4 | 8),
            Kind::Int | Kind::Uint => matches!(size, 1 | 2 | 4 | 8),
        };
        // `|` means "byte order does not apply": only for one-byte values.
        if !fits || (descr.starts_with('|') && size != 1) {
            return None;
        }
        Some(Self {
            kind,
            size,
            big_endian,
        })
    }

    /// Whether the values are f32 in this machine's byte order (what can be read in place).
    #[cfg(feature = "io")]
    pub(crate) fn is_native_f32(&self) -> bool {
        self.kind == Kind::Float && self.size == 4 && self.big_endian == cfg!(target_endian = "big")
    }

    /// The value held by `bytes` (`self.size` of them).
    fn decode(&self, bytes: &[u8]) -> Value {
        let mut raw = 0u64;
        let mut push = |b: &u8| raw = (raw << 8) | u64::from(*b);
        if self.big_endian {
            bytes.iter().for_each(&mut push);
        } else {
            bytes.iter().rev().for_each(&mut push);
        }
        let bits = 8 * self.size as u32;
        match (self.kind, self.size) {
            (Kind::Float, 4) => Value::Float(f32::from_bits(raw as u32) as f64),
            (Kind::Float, _) => Value::Float(f64::from_bits(raw)),
            // Sign extension from `bits` bits.
            (Kind::Int, _) => Value::Int(((raw << (64 - bits)) as i64) >> (64 - bits)),
            (Kind::Uint, _) => Value::Uint(raw),
        }
    }
}

/// What a `.npy` header says.
#[derive(Debug, Clone)]
pub(crate) struct Header {
    /// The dtype of the values.
    pub dtype: Dtype,
    /// The `descr` text, for messages.
    pub descr: String,
    /// Whether the array is stored in Fortran (column-major) order.
    pub fortran: bool,
    /// The shape.
    pub shape: Vec<u64>,
    /// Where the data start: magic, version, header length and header.
    pub data_offset: u64,
}

impl Header {
    /// The shape as Python prints it: `(5, 0)`, `(7,)`.
    pub(crate) fn shape_text(&self) -> String {
        shape_text(&self.shape)
    }

    /// The (rows, columns) of a matrix file: 1-D is N x 1, 2-D must be in C order, and
    /// neither may be empty.
    ///
    /// Errors: [`Error::Format`] for another number of dimensions, Fortran order, or more
    /// values than this machine can address; [`Error::EmptyData`] for no columns (checked
    /// first) or no rows.
    pub(crate) fn matrix_shape(&self, path: &Path) -> Result<(usize, usize)> {
        let (n, d) = match self.shape[..] {
            [n] => (n, 1),
            [n, d] => (n, d),
            _ => {
                return Err(Error::format(
                    path,
                    format!(
                        "expected a 1-D or 2-D array, found shape {}",
                        self.shape_text()
                    ),
                ))
            }
        };
        if self.shape.len() == 2 && self.fortran {
            return Err(Error::format(
                path,
                "the array is in Fortran (column-major) order; save it in C order, \
                 e.g. with numpy.ascontiguousarray",
            ));
        }
        if d == 0 {
            return Err(Error::EmptyData {
                what: "input matrix",
                missing: "columns",
            });
        }
        if n == 0 {
            return Err(Error::EmptyData {
                what: "input matrix",
                missing: "rows",
            });
        }
        self.data_bytes(path)?;
        let too_large = || {
            Error::format(
                path,
                format!("shape {} is too large for this machine", self.shape_text()),
            )
        };
        let n = usize::try_from(n).map_err(|_| too_large())?;
        let d = usize::try_from(d).map_err(|_| too_large())?;
        n.checked_mul(d).ok_or_else(too_large)?;
        Ok((n, d))
    }

    /// The number of values the shape holds and their size in bytes, both checked.
    ///
    /// Errors: [`Error::Format`] when either overflows 64 bits (a corrupt header).
    pub(crate) fn data_bytes(&self, path: &Path) -> Result<(u64, u64)> {
        let count = self
            .shape
            .iter()
            .try_fold(1u64, |acc, &s| acc.checked_mul(s));
        match count.and_then(|c| Some((c, c.checked_mul(self.dtype.size as u64)?))) {
            Some(sizes) => Ok(sizes),
            None => Err(Error::format(
                path,
                format!(
                    "not a valid .npy file: shape {} holds more than 2^64 bytes",
                    self.shape_text()
                ),
            )),
        }
    }

    /// Checks that a file of `file_len` bytes holds exactly the data the header promises.
    ///
    /// Errors: [`Error::Format`] naming both sizes.
    pub(crate) fn check_file_len(&self, file_len: u64, path: &Path) -> Result<()> {
        let (count, bytes) = self.data_bytes(path)?;
        let held = file_len.saturating_sub(self.data_offset);
        if held != bytes {
            return Err(Error::format(
                path,
                format!(
                    "not a valid .npy file: its header promises shape {} of dtype {} ({count} \
                     values, {bytes} bytes), but the file holds {held} bytes of data",
                    self.shape_text(),
                    self.descr
                ),
            ));
        }
        Ok(())
    }
}

/// A shape as Python prints a tuple.
fn shape_text(shape: &[u64]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
            format!("({})", dims.join(", "))
        }
    }
}

/// An [`Error::Format`] for a malformed file.
fn invalid(path: &Path, reason: impl std::fmt::Display) -> Error {
    Error::format(path, format!("not a valid .npy file: {reason}"))
}

/// Reads `buf.len()` bytes, or fewer at the end of the stream; returns how many.
fn read_full(r: &mut impl Read, buf: &mut [u8], path: &Path) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(got)
}

/// Reads and checks the magic, the version and the header.
///
/// Errors: [`Error::Format`] for anything that is not a `.npy` header of a plain numeric
/// dtype this reader supports; [`Error::Io`] when reading fails.
pub(crate) fn read_header(r: &mut impl Read, path: &Path) -> Result<Header> {
    let mut pre = [0u8; 8];
    let got = read_full(r, &mut pre, path)?;
    if got < 8 || &pre[..6] != b"\x93NUMPY" {
        return Err(Error::format(
            path,
            "not a .npy file: it does not start with the NumPy magic \\x93NUMPY",
        ));
    }
    let len_bytes = match pre[6] {
        1 => 2,
        2 | 3 => 4,
        major => {
            return Err(invalid(
                path,
                format!("unknown format version {major}.{}", pre[7]),
            ))
        }
    };
    let mut len = [0u8; 4];
    if read_full(r, &mut len[..len_bytes], path)? < len_bytes {
        return Err(invalid(path, "the file ends inside its header"));
    }
    let header_len = u32::from_le_bytes(len) as usize;
    if header_len > MAX_HEADER_LEN {
        return Err(invalid(
            path,
            format!("a header of {header_len} bytes (at most {MAX_HEADER_LEN} are read)"),
        ));
    }
    let mut text = vec![0u8; header_len];
    if read_full(r, &mut text, path)? < header_len {
        return Err(invalid(path, "the file ends inside its header"));
    }
    let text = std::str::from_utf8(&text).map_err(|_| invalid(path, "its header is not text"))?;
    let fields = parse_dict(text).map_err(|reason| invalid(path, reason))?;
    let data_offset = (8 + len_bytes + header_len) as u64;
    header_from_fields(fields, data_offset, path)
}

/// The three keys of a header, interpreted.
fn header_from_fields(fields: Vec<(String, Lit)>, data_offset: u64, path: &Path) -> Result<Header> {
    let mut descr = None;
    let mut fortran = None;
    let mut shape = None;
    for (key, value) in fields {
        let slot_taken = match key.as_str() {
            "descr" => descr.replace(value).is_some(),
            "fortran_order" => fortran.replace(value).is_some(),
            "shape" => shape.replace(value).is_some(),
            other => return Err(invalid(path, format!("unexpected header key {other:?}"))),
        };
        if slot_taken {
            return Err(invalid(path, format!("the header repeats the key {key:?}")));
        }
    }
    let missing = |key: &str| invalid(path, format!("the header has no {key:?}"));
    let descr = match descr.ok_or_else(|| missing("descr"))? {
        Lit::Str(s) => s,
        Lit::Seq(_) => {
            return Err(Error::format(
                path,
                "unsupported dtype: a structured (record) array; expected a plain float or \
                 integer one",
            ))
        }
        _ => return Err(invalid(path, "its descr is not a string")),
    };
    let dtype = Dtype::parse(&descr).ok_or_else(|| {
        Error::format(
            path,
            format!(
                "unsupported dtype {descr:?}: expected a float (f4, f8) or integer (i1..i8, \
                 u1..u8) one"
            ),
        )
    })?;
    let fortran = match fortran.ok_or_else(|| missing("fortran_order"))? {
        Lit::Bool(b) => b,
        _ => return Err(invalid(path, "its fortran_order is not True or False")),
    };
    let shape = match shape.ok_or_else(|| missing("shape"))? {
        Lit::Seq(dims) => dims
            .into_iter()
            .map(|dim| match dim {
                Lit::Int(Some(v)) => Ok(v),
                Lit::Int(None) => Err(invalid(path, "a dimension of its shape is too large")),
                Lit::NegInt => Err(invalid(path, "a dimension of its shape is negative")),
                _ => Err(invalid(
                    path,
                    "its shape holds something other than integers",
                )),
            })
            .collect::<Result<Vec<u64>>>()?,
        _ => return Err(invalid(path, "its shape is not a tuple")),
    };
    Ok(Header {
        dtype,
        descr,
        fortran,
        shape,
        data_offset,
    })
}

/// A Python literal of a header.
#[derive(Debug)]
enum Lit {
    Str(String),
    Bool(bool),
    /// A non-negative integer; `None` past u64.
    Int(Option<u64>),
    NegInt,
    None,
    Seq(Vec<Lit>),
}

/// Nesting allowed in a header's values (a structured dtype nests a few levels).
const MAX_DEPTH: usize = 16;

/// A strict parser of the dictionary literal numpy writes.
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

/// Parses `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }` and its padding.
fn parse_dict(text: &str) -> std::result::Result<Vec<(String, Lit)>, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    p.ws();
    p.expect(b'{')?;
    let mut fields = Vec::new();
    loop {
        p.ws();
        if p.eat(b'}') {
            break;
        }
        let key = match p.value(0)? {
            Lit::Str(key) => key,
            _ => return Err("a header key is not a string".into()),
        };
        p.ws();
        p.expect(b':')?;
        p.ws();
        fields.push((key, p.value(0)?));
        p.ws();
        if p.eat(b'}') {
            break;
        }
        p.expect(b',')?;
    }
    p.ws();
    if p.i != p.s.len() {
        return Err("unexpected text after the header's dictionary".into());
    }
    Ok(fields)
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.i += usize::from(hit);
        hit
    }

    fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        match self.eat(c) {
            true => Ok(()),
            false => Err(format!(
                "its header is not a Python dictionary (expected {:?} at byte {})",
                c as char, self.i
            )),
        }
    }

    fn keyword(&mut self, word: &str) -> bool {
        let hit = self.s[self.i..].starts_with(word.as_bytes());
        if hit {
            self.i += word.len();
        }
        hit
    }

    fn value(&mut self, depth: usize) -> std::result::Result<Lit, String> {
        if depth > MAX_DEPTH {
            return Err("its header nests too deeply".into());
        }
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => {
                self.i += 1;
                let start = self.i;
                while let Some(c) = self.peek() {
                    if c == q {
                        let text = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                        self.i += 1;
                        return Ok(Lit::Str(text));
                    }
                    if c == b'\\' {
                        return Err("escapes in header strings are not supported".into());
                    }
                    self.i += 1;
                }
                Err("an unterminated string in its header".into())
            }
            Some(open @ (b'(' | b'[')) => {
                let close = if open == b'(' { b')' } else { b']' };
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    if self.eat(close) {
                        return Ok(Lit::Seq(items));
                    }
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    if self.eat(close) {
                        return Ok(Lit::Seq(items));
                    }
                    self.expect(b',')?;
                }
            }
            Some(b'-' | b'0'..=b'9') => {
                let negative = self.eat(b'-');
                let start = self.i;
                let mut value = Some(0u64);
                while let Some(c @ b'0'..=b'9') = self.peek() {
                    value = value
                        .and_then(|v| v.checked_mul(10))
                        .and_then(|v| v.checked_add(u64::from(c - b'0')));
                    self.i += 1;
                }
                if self.i == start {
                    return Err("a '-' without digits in its header".into());
                }
                self.eat(b'L'); // Python 2 long integers
                Ok(match negative && value != Some(0) {
                    true => Lit::NegInt,
                    false => Lit::Int(value),
                })
            }
            _ if self.keyword("True") => Ok(Lit::Bool(true)),
            _ if self.keyword("False") => Ok(Lit::Bool(false)),
            _ if self.keyword("None") => Ok(Lit::None),
            _ => Err(format!(
                "its header is not a Python dictionary (unexpected text at byte {})",
                self.i
            )),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.npy` file of `descr` and `shape` (Python text) followed by `data`.
    pub(crate) fn npy_bytes(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.as_bytes());
        out.extend(data);
        out
    }

    fn matrix(bytes: &[u8], known_len: bool) -> Result<Dataset> {
        let len = known_len.then_some(bytes.len() as u64);
        npy_matrix_from_reader(bytes, len, Path::new("t.npy"))
    }

    #[test]
    fn every_dtype_and_byte_order_decodes() {
        let cases: [(&str, Vec<u8>, f32); 8] = [
            ("<f4", 1.5f32.to_le_bytes().to_vec(), 1.5),
            (">f4", 1.5f32.to_be_bytes().to_vec(), 1.5),
            (">f8", (-2.25f64).to_be_bytes().to_vec(), -2.25),
            ("|i1", vec![0xff], -1.0),
            ("<i2", (-300i16).to_le_bytes().to_vec(), -300.0),
            (">u2", 65535u16.to_be_bytes().to_vec(), 65535.0),
            ("<i8", (-7i64).to_le_bytes().to_vec(), -7.0),
            ("|u1", vec![200], 200.0),
        ];
        for (descr, bytes, want) in cases {
            for known in [true, false] {
                let m = matrix(&npy_bytes(descr, "(1,)", &bytes), known).unwrap();
                assert_eq!(m.data, vec![want], "{descr}");
            }
        }
    }

    #[test]
    fn corrupt_shapes_and_lengths_are_refused_for_every_dtype() {
        // The case: rows x columns wraps past 2^64 for an 8-byte dtype.
        let data = vec![0u8; 100 * 8];
        let shape = format!("({}, 2)", (1u64 << 63) + 50);
        for descr in ["<f8", ">f4", "|i1", "<u2"] {
            for known in [true, false] {
                let e = matrix(&npy_bytes(descr, &shape, &data), known).unwrap_err();
                assert!(
                    e.to_string().contains("2^64") || e.to_string().contains("too large"),
                    "{descr}: {e}"
                );
            }
            // A plain mismatch: 3 x 2 promised, data for 50 values or for 5.
            for held in [50usize, 5] {
                let size = Dtype::parse(descr).unwrap().size;
                let bytes = npy_bytes(descr, "(3, 2)", &vec![0u8; held * size]);
                for known in [true, false] {
                    let e = matrix(&bytes, known).unwrap_err();
                    assert!(matches!(e, Error::Format { .. }), "{descr} {held}: {e}");
                }
            }
        }
    }

    #[test]
    fn headers_are_parsed_strictly() {
        let f4 = 1.0f32.to_le_bytes();
        let good = npy_bytes("<f4", "(1, 1)", &f4);
        assert!(matrix(&good, true).is_ok());
        let bad_headers = [
            "{'descr': '<f4', 'fortran_order': False}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), 'extra': 1}",
            "{'descr': '<f4', 'fortran_order': 0, 'shape': (1, 1)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 1)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999, 1)}",
            "{'descr': '<U4', 'fortran_order': False, 'shape': (1, 1)}",
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1, 1)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1)} junk",
            "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1, 1)}",
            "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
            "",
        ];
        for text in bad_headers {
            let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
            bytes.extend((text.len() as u16).to_le_bytes());
            bytes.extend(text.as_bytes());
            bytes.extend(f4);
            let e = matrix(&bytes, true).unwrap_err();
            assert!(matches!(e, Error::Format { .. }), "{text}: {e}");
        }
        // A header length past the bound is refused before anything is allocated.
        let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
        bytes.extend(u32::MAX.to_le_bytes());
        let e = matrix(&bytes, false).unwrap_err();
        assert!(e.to_string().contains("at most"), "{e}");
        // Not a .npy file at all, and one cut inside its header.
        assert!(matrix(&[0u8; 64], false).is_err());
        assert!(matrix(&good[..20], false).is_err());
    }

    #[test]
    fn empty_shapes_name_what_is_missing() {
        let e = matrix(&npy_bytes("<f4", "(5, 0)", &[]), true).unwrap_err();
        assert!(
            matches!(
                e,
                Error::EmptyData {
                    missing: "columns",
                    ..
                }
            ),
            "{e}"
        );
        let e = matrix(&npy_bytes("<f4", "(0, 5)", &[]), true).unwrap_err();
        assert!(
            matches!(
                e,
                Error::EmptyData {
                    missing: "rows",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn non_finite_values_are_placed_from_one() {
        let mut data = Vec::new();
        for v in [1.0f64, 2.0, 3.0, f64::NAN] {
            data.extend(v.to_le_bytes());
        }
        let e = matrix(&npy_bytes("<f8", "(2, 2)", &data), true).unwrap_err();
        assert!(
            matches!(
                e,
                Error::NonFiniteInFile {
                    row: 2,
                    col: 2,
                    line: None,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().starts_with("t.npy: row 2, column 2: NaN"),
            "{e}"
        );
    }

    #[test]
    fn labels_must_be_non_negative_integers() {
        let labels = |descr: &str, shape: &str, data: &[u8]| {
            let bytes = npy_bytes(descr, shape, data);
            npy_labels_from_reader(&bytes[..], Some(bytes.len() as u64), Path::new("y.npy"))
        };
        assert_eq!(labels("|u1", "(3,)", &[2, 0, 1]).unwrap(), vec![2, 0, 1]);
        assert_eq!(labels("|i1", "(2, 1)", &[1, 0]).unwrap(), vec![1, 0]);
        let e = labels("|i1", "(2,)", &[1, 0xff]).unwrap_err();
        assert!(e.to_string().contains("row 2: label -1"), "{e}");
        assert!(labels("<f4", "(1,)", &[0; 4]).is_err());
        assert!(labels("|u1", "(2, 2)", &[0; 4]).is_err());
        assert!(matches!(
            labels("|u1", "(0,)", &[]),
            Err(Error::EmptyData { .. })
        ));
        assert!(labels("|u1", "(4,)", &[0; 3]).is_err());
    }
}
