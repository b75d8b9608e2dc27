//! Memory-mapped `.npy` matrices: [`NpyRows`], a [`RowSource`] over a file that need not fit
//! in RAM, and [`open_matrix`], what the command-line fits read their input with.

use std::fs::File;
use std::path::Path;

use npyz::{DType, NpyFile, Order, TypeChar};

use crate::data::Matrix;
use crate::error::{Error, Result};
use crate::npy::{npy_err, Dataset};
use crate::source::RowSource;

/// A C-order little-endian `f4` `.npy` matrix (2-D, or 1-D read as N x 1), memory-mapped: the
/// operating system pages it in as the fits stream it, so a file larger than RAM works and
/// the host holds no copy. Every value is checked once, when the file is opened.
///
/// The file must not be changed or truncated by another process while it is open (the map
/// would change under the fit, or the process would be killed by SIGBUS on truncation).
pub struct NpyRows {
    map: memmap2::Mmap,
    offset: usize,
    n_rows: usize,
    n_features: usize,
}

/// What a fit reads: a mapped file, or (dtypes other than little-endian `f4`, `.csv`) the
/// values read into memory.
pub enum InputMatrix {
    /// A memory-mapped `.npy` file.
    Mapped(NpyRows),
    /// Values read whole by [`read_matrix`](super::read_matrix).
    Read(Dataset),
}

impl InputMatrix {
    /// The validated matrix view.
    ///
    /// Errors: those of [`Matrix::new`] for data read whole (mapped files are checked when
    /// opened).
    pub fn matrix(&self) -> Result<Matrix<'_>> {
        match self {
            InputMatrix::Mapped(m) => Ok(m.matrix()),
            InputMatrix::Read(d) => Matrix::new(&d.data, d.n_features),
        }
    }
}

/// Opens a matrix file for a fit: little-endian `f4` `.npy` files are memory-mapped
/// ([`NpyRows`]); everything else goes through [`read_matrix`](super::read_matrix).
///
/// Errors: those of [`NpyRows::open`] and [`read_matrix`](super::read_matrix).
pub fn open_matrix(path: &Path) -> Result<InputMatrix> {
    if super::extension(path).as_deref() == Some("npy") {
        if let Some(rows) = NpyRows::try_open(path)? {
            return Ok(InputMatrix::Mapped(rows));
        }
    }
    super::read_matrix(path).map(InputMatrix::Read)
}

impl NpyRows {
    /// Maps `path` and checks it.
    ///
    /// Errors: [`Error::Io`], [`Error::Format`] (not a `.npy` file, not 1-D or 2-D, Fortran
    /// order, a dtype other than little-endian `f4`), [`Error::EmptyData`],
    /// [`Error::NonFinite`] with row and column.
    pub fn open(path: &Path) -> Result<Self> {
        Self::try_open(path)?.ok_or_else(|| {
            Error::format(
                path,
                "only C-order little-endian f4 arrays can be mapped; read others with io::read_matrix",
            )
        })
    }

    /// `None` when the file is a `.npy` matrix that cannot be mapped as f32 (another dtype or
    /// byte order, unaligned data), so the caller can read it whole instead.
    fn try_open(path: &Path) -> Result<Option<Self>> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        // SAFETY: the map is read-only and private to this value; the docs ask callers not to
        // change the file while it is open, as every memory-mapping reader must.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        let npy = NpyFile::new(&map[..]).map_err(|e| npy_err(path, e))?;
        let shape = npy.shape().to_vec();
        let (n_rows, n_features) = match shape[..] {
            [n] => (n as usize, 1),
            [n, d] => (n as usize, d as usize),
            _ => return Ok(None), // read_matrix gives the error
        };
        let ts = match npy.dtype() {
            DType::Plain(ts) => ts,
            _ => return Ok(None),
        };
        let little = ts.endianness() == npyz::Endianness::Little && cfg!(target_endian = "little");
        if ts.type_char() != TypeChar::Float
            || ts.size_field() != 4
            || !little
            || (shape.len() == 2 && npy.order() == Order::Fortran)
        {
            return Ok(None);
        }
        // The data start after the magic, the version, the header length and the header.
        let offset = match map[6] {
            1 => 10 + u16::from_le_bytes([map[8], map[9]]) as usize,
            _ => 12 + u32::from_le_bytes([map[8], map[9], map[10], map[11]]) as usize,
        };
        let bytes = n_rows
            .checked_mul(n_features)
            .and_then(|v| v.checked_mul(4));
        if bytes.and_then(|b| b.checked_add(offset)) != Some(map.len()) {
            return Err(Error::format(
                path,
                format!(
                    "the header promises {n_rows} x {n_features} f4 values, the file has {} bytes of data",
                    map.len().saturating_sub(offset)
                ),
            ));
        }
        if !(map.as_ptr() as usize + offset).is_multiple_of(4) {
            return Ok(None);
        }
        let rows = Self {
            map,
            offset,
            n_rows,
            n_features,
        };
        // Empty shapes and non-finite values are reported as for any matrix.
        Matrix::new(rows.values(), n_features.max(1)).and_then(|m| {
            if n_features == 0 {
                Err(Error::EmptyData {
                    what: "input matrix",
                    missing: "columns",
                })
            } else {
                Ok(m)
            }
        })?;
        Ok(Some(rows))
    }

    fn values(&self) -> &[f32] {
        bytemuck::cast_slice(&self.map[self.offset..])
    }

    /// The mapped values as a matrix view (checked when the file was opened).
    pub fn matrix(&self) -> Matrix<'_> {
        Matrix::checked(self.values(), self.n_rows, self.n_features)
    }
}

impl RowSource for NpyRows {
    fn shape(&self) -> (usize, usize) {
        (self.n_rows, self.n_features)
    }

    fn visit_rows(
        &self,
        max_rows: usize,
        visit: &mut dyn FnMut(usize, &[f32]) -> Result<()>,
    ) -> Result<()> {
        self.matrix().visit_rows(max_rows, visit)
    }

    fn gather(&self, indices: &[usize]) -> Result<Vec<f32>> {
        self.matrix().gather(indices)
    }
}
