//! `.npy` matrices read a piece at a time: [`NpyRows`], a [`RowSource`] (and a [`GpuInput`])
//! over a file that need not fit in RAM, and [`open_matrix`], what the command-line program
//! reads its inputs with.
//!
//! The rows are read with positioned reads (`pread`), one piece per call, never mapped: the
//! file's pages go through the operating system's page cache, so a file read again on every
//! pass of a fit is served from memory when it fits there, and a file larger than RAM streams
//! while the process holds only the piece in hand. A file that shrinks while it is read (cut
//! short by another process) gives a clear [`Error::Format`] naming it, not a signal, and
//! every piece is checked for NaN and infinity as it is read: by one vectorised scan on the
//! thread that reads it, which a fit runs one piece ahead of the GPU (module
//! `gpu::stream`), so the check costs the fit no time of its own. Opening a file reads its
//! header only: a pass over every value there would cost a whole read of the file (seconds
//! at 5 GB) before the fit's own.

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::data::Matrix;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, GpuInput, GpuMatrix};
use crate::npy::{npy_matrix64_from_reader, read_header, Dataset, Dataset64, Header};
use crate::origin::Matrix64;
use crate::source::RowSource;

/// A C-order `.npy` matrix of f32 in this machine's byte order (little-endian `f4` on every
/// common machine; 2-D, or 1-D read as N x 1), read a piece at a time with positioned reads
/// (module docs). Opening it checks the header and the length; every value is checked as
/// the piece holding it is read, so a NaN or infinity is an error of the first pass that
/// reaches it (before any result of that pass).
///
/// The file may be read by other processes meanwhile. If it is cut short while open, the
/// next read past its new end fails with an [`Error::Format`] saying so.
#[derive(Debug)]
pub struct NpyRows {
    file: File,
    path: PathBuf,
    /// Where the data start.
    offset: u64,
    n_rows: usize,
    n_features: usize,
}

/// What a fit reads: a `.npy` file read a piece at a time, or (other dtypes, `.csv`, pipes)
/// the values read into memory.
#[derive(Debug)]
pub enum InputMatrix {
    /// A `.npy` file of f32, read a piece at a time.
    File(NpyRows),
    /// Values read whole by [`read_matrix`](super::read_matrix).
    Read(Dataset),
    /// A `.npy` file of f64 (`f8`), read whole and kept in f64: the fits centre it in f64
    /// before the f32 cast (module [`origin`](crate::origin)).
    Read64(Dataset64),
}

impl InputMatrix {
    /// Rows N and features D.
    pub fn shape(&self) -> (usize, usize) {
        match self {
            InputMatrix::File(rows) => (rows.n_rows, rows.n_features),
            InputMatrix::Read(d) => (d.n_rows, d.n_features),
            InputMatrix::Read64(d) => (d.n_rows, d.n_features),
        }
    }

    /// The f64 values of an `f8` file as a matrix view (`None` for every other input).
    ///
    /// Errors: those of [`Matrix64::new`] for a [`Dataset64`] whose fields do not fit.
    pub fn wide(&self) -> Result<Option<Matrix64<'_>>> {
        match self {
            InputMatrix::Read64(d) => view64(d).map(Some),
            _ => Ok(None),
        }
    }

    /// Every value in memory, row-major: borrowed when they were read whole, read from the
    /// file otherwise (N x D f32 of host memory).
    ///
    /// Errors: those of [`NpyRows::read_all`].
    pub fn values(&self) -> Result<Cow<'_, [f32]>> {
        match self {
            InputMatrix::File(rows) => rows.read_all().map(Cow::Owned),
            InputMatrix::Read(d) => Ok(Cow::Borrowed(&d.data)),
            InputMatrix::Read64(d) => view64(d)?
                .gather(&(0..d.n_rows).collect::<Vec<_>>())
                .map(Cow::Owned),
        }
    }

    /// The values read whole, as a matrix view, when they were (`None` for a file read a
    /// piece at a time).
    ///
    /// Errors: those of [`Matrix::new`] for a [`Dataset`] whose fields do not fit together.
    pub fn in_memory(&self) -> Result<Option<Matrix<'_>>> {
        match self {
            InputMatrix::File(_) | InputMatrix::Read64(_) => Ok(None),
            InputMatrix::Read(d) => view(d).map(Some),
        }
    }
}

/// Opens a matrix file for a fit: `.npy` files of f32 in this machine's byte order are read a
/// piece at a time ([`NpyRows`]); `.npy` files of f64 are read whole and kept in f64
/// ([`InputMatrix::Read64`]: centred in f64 before the f32 cast); everything else (other
/// dtypes, `.csv`, pipes) is read whole by [`read_matrix`](super::read_matrix).
///
/// Errors: those of [`NpyRows::open`] and [`read_matrix`](super::read_matrix).
pub fn open_matrix(path: &Path) -> Result<InputMatrix> {
    if super::extension(path).as_deref() == Some("npy") {
        if let Some(rows) = NpyRows::try_open(path)? {
            return Ok(InputMatrix::File(rows));
        }
        let (reader, len) = super::open(path)?;
        if let Some(wide) = npy_matrix64_from_reader(reader, len, path)? {
            return Ok(InputMatrix::Read64(wide));
        }
    }
    super::read_matrix(path).map(InputMatrix::Read)
}

/// Reads `buf.len()` bytes at `offset`, or fails with `UnexpectedEof` past the end.
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let (mut buf, mut offset) = (buf, offset);
        while !buf.is_empty() {
            match std::os::windows::fs::FileExt::seek_read(file, buf, offset) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(k) => {
                    buf = &mut buf[k..];
                    offset += k as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = (file, buf, offset);
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "positioned reads are not available on this platform",
        ))
    }
}

impl NpyRows {
    /// Opens `path` and checks its header and length (the values are checked as they are
    /// read: [`NpyRows::read_rows`]).
    ///
    /// Errors: [`Error::Io`], [`Error::Format`] (not a `.npy` file, not 1-D or 2-D, Fortran
    /// order, a dtype other than f32 in this machine's byte order, a length other than the
    /// shape's, not a regular file), [`Error::EmptyData`].
    pub fn open(path: &Path) -> Result<Self> {
        Self::try_open(path)?.ok_or_else(|| {
            Error::format(
                path,
                "only regular files of C-order f32 in this machine's byte order are read a \
                 piece at a time; read others with io::read_matrix",
            )
        })
    }

    /// `None` when the file is a `.npy` matrix that cannot be read in place as f32 (another
    /// dtype or byte order, or a pipe or device), so the caller can read it whole instead.
    fn try_open(path: &Path) -> Result<Option<Self>> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let meta = file.metadata().map_err(|e| Error::io(path, e))?;
        if meta.is_dir() {
            return Err(super::not_a_file(path));
        }
        if !meta.is_file() {
            return Ok(None);
        }
        let header: Header = read_header(&mut std::io::BufReader::new(&file), path)?;
        if !header.dtype.is_native_f32() {
            return Ok(None);
        }
        let (n_rows, n_features) = header.matrix_shape(path)?;
        header.check_file_len(meta.len(), path)?;
        Ok(Some(Self {
            file,
            path: path.to_path_buf(),
            offset: header.data_offset,
            n_rows,
            n_features,
        }))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads rows `first..first + out.len() / D` into `out` and checks their values.
    ///
    /// Errors: [`Error::Format`] when the file has shrunk below them since it was opened,
    /// [`Error::NonFiniteInFile`] (rows counted from 1), [`Error::Io`].
    pub fn read_rows(&self, first: usize, out: &mut [f32]) -> Result<()> {
        let d = self.n_features;
        let rows = out.len() / d;
        if !out.len().is_multiple_of(d)
            || first.checked_add(rows).is_none_or(|end| end > self.n_rows)
        {
            return Err(Error::Source {
                reason: format!(
                    "rows {first}..{} of {} asked for, in a buffer of {} values",
                    first.saturating_add(rows),
                    self.n_rows,
                    out.len()
                ),
            });
        }
        let at = self.offset + (first as u64) * (d as u64) * 4;
        read_at(&self.file, bytemuck::cast_slice_mut(out), at).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => self.shrunk(),
            _ => Error::io(&self.path, e),
        })?;
        match crate::data::first_non_finite(out) {
            None => Ok(()),
            Some(i) => Err(Error::NonFiniteInFile {
                path: self.path.clone(),
                line: None,
                row: first + i / d + 1,
                col: i % d + 1,
                value: format!("{}", out[i]),
            }),
        }
    }

    /// The error for a file cut short while it was open.
    fn shrunk(&self) -> Error {
        let expected = self.offset + (self.n_rows as u64) * (self.n_features as u64) * 4;
        let now = match self.file.metadata() {
            Ok(m) => format!("it now has {} bytes", m.len()),
            Err(e) => format!("its size cannot be read ({e})"),
        };
        Error::format(
            &self.path,
            format!(
                "the file shrank while it was being read: its header promises {} x {} f4 \
                 values ({expected} bytes), {now}; another program changed it during the run, \
                 so run again once it is complete",
                self.n_rows, self.n_features
            ),
        )
    }

    /// Every value, row-major, read into memory (N x D f32).
    ///
    /// Errors: those of [`NpyRows::read_rows`].
    pub fn read_all(&self) -> Result<Vec<f32>> {
        let mut values = vec![0f32; self.n_rows * self.n_features];
        let piece = (1 << 24) / self.n_features.max(1);
        for (i, part) in values
            .chunks_mut(piece.max(1) * self.n_features)
            .enumerate()
        {
            self.read_rows(i * piece.max(1), part)?;
        }
        Ok(values)
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
        let (n, d) = (self.n_rows, self.n_features);
        let step = max_rows.clamp(1, n);
        let mut buf = vec![0f32; step * d];
        let mut first = 0;
        while first < n {
            let rows = step.min(n - first);
            let piece = &mut buf[..rows * d];
            self.read_rows(first, piece)?;
            visit(first, piece)?;
            first += rows;
        }
        Ok(())
    }

    fn gather(&self, indices: &[usize]) -> Result<Vec<f32>> {
        let d = self.n_features;
        let mut out = vec![0f32; indices.len() * d];
        for (&i, row) in indices.iter().zip(out.chunks_mut(d)) {
            if i >= self.n_rows {
                return Err(Error::Source {
                    reason: format!("row {i} was asked for, the source has {}", self.n_rows),
                });
            }
            self.read_rows(i, row)?;
        }
        Ok(out)
    }
}

impl GpuInput for NpyRows {
    fn shape(&self) -> (usize, usize) {
        (self.n_rows, self.n_features)
    }

    /// Uploads the file a piece at a time (read and checked one piece ahead of the upload;
    /// never the whole file in host memory).
    fn on_gpu(&self, gpu: &Gpu) -> Result<Cow<'_, GpuMatrix>> {
        Ok(Cow::Owned(crate::gpu::stream::upload_source(gpu, self)?))
    }

    fn as_source(&self) -> Option<&dyn RowSource> {
        Some(self)
    }
}

impl RowSource for InputMatrix {
    fn shape(&self) -> (usize, usize) {
        InputMatrix::shape(self)
    }

    fn visit_rows(
        &self,
        max_rows: usize,
        visit: &mut dyn FnMut(usize, &[f32]) -> Result<()>,
    ) -> Result<()> {
        match self {
            InputMatrix::File(rows) => rows.visit_rows(max_rows, visit),
            InputMatrix::Read(d) => view(d)?.visit_rows(max_rows, visit),
            InputMatrix::Read64(d) => view64(d)?.visit_rows(max_rows, visit),
        }
    }

    fn gather(&self, indices: &[usize]) -> Result<Vec<f32>> {
        match self {
            InputMatrix::File(rows) => rows.gather(indices),
            InputMatrix::Read(d) => view(d)?.gather(indices),
            InputMatrix::Read64(d) => view64(d)?.gather(indices),
        }
    }

    fn f64_rows(&self) -> Option<Cow<'_, [f64]>> {
        match self {
            InputMatrix::Read64(d) => Some(Cow::Borrowed(&d.data)),
            _ => None,
        }
    }

    /// A read f32 file's values, once they pass the checks of a [`Matrix`].
    fn rows_in_memory(&self) -> Option<&[f32]> {
        match self {
            InputMatrix::Read(d) => view(d).ok().map(|_| d.data.as_slice()),
            _ => None,
        }
    }
}

impl GpuInput for InputMatrix {
    fn shape(&self) -> (usize, usize) {
        InputMatrix::shape(self)
    }

    fn on_gpu(&self, gpu: &Gpu) -> Result<Cow<'_, GpuMatrix>> {
        match self {
            InputMatrix::File(rows) => rows.on_gpu(gpu),
            InputMatrix::Read(d) => Ok(Cow::Owned(GpuMatrix::upload(gpu, &view(d)?)?)),
            InputMatrix::Read64(d) => Ok(Cow::Owned(view64(d)?.on_gpu(gpu)?.into_owned())),
        }
    }

    fn as_source(&self) -> Option<&dyn RowSource> {
        Some(self)
    }

    fn f64_rows(&self) -> Option<Cow<'_, [f64]>> {
        RowSource::f64_rows(self)
    }
}

/// The matrix view of f64 values read whole, checked as [`view`] checks.
fn view64(d: &Dataset64) -> Result<Matrix64<'_>> {
    let m = Matrix64::new(&d.data, d.n_features)?;
    if m.n_rows() != d.n_rows {
        return Err(Error::Shape {
            len: d.data.len(),
            n_features: d.n_features,
        });
    }
    Ok(m)
}

/// The matrix view of values read whole, checked (a [`Dataset`]'s fields are public, so its
/// shape and values are not taken on trust).
fn view(d: &Dataset) -> Result<Matrix<'_>> {
    let m = Matrix::new(&d.data, d.n_features)?;
    if m.n_rows() != d.n_rows {
        return Err(Error::Shape {
            len: d.data.len(),
            n_features: d.n_features,
        });
    }
    Ok(m)
}
