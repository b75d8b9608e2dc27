//! The `.npy` header: magic, version, length and the dictionary numpy writes, parsed
//! strictly and bounded; the dtypes this reader supports and how their bytes decode.

use std::io::{self, Read};
use std::path::Path;

use super::dict::{parse_dict, Lit};
use crate::error::{Error, Result};

/// The longest header read, in bytes. numpy writes headers of a few hundred bytes, and its
/// own reader refuses those over 10 000 unless told otherwise.
pub(crate) const MAX_HEADER_LEN: usize = 1 << 16;

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
pub(super) enum Value {
    Float(f64),
    Int(i64),
    Uint(u64),
}

impl Value {
    pub(super) fn as_f64(self) -> f64 {
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
    pub(super) fn parse(descr: &str) -> Option<Self> {
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
    pub(super) fn decode(&self, bytes: &[u8]) -> Value {
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
pub(super) fn read_full(r: &mut impl Read, buf: &mut [u8], path: &Path) -> Result<usize> {
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
