//! Device-resident data: [`GpuMatrix`] (N x D f32 rows in chunks) and [`GpuVector`]
//! (one value per row, chunked the same way).
//!
//! A single storage binding is limited (`max_storage_buffer_binding_size`, often 128 MiB to
//! 4 GiB) and so is a single buffer, so a matrix is a list of chunks of whole rows, each small
//! enough to bind. Kernels run once per chunk; per-chunk partial results are combined on the
//! device or in f64 on the host.

use bytemuck::Pod;

use super::batch::{Batch, Bind};
use super::context::Gpu;
use super::device_buffer::DeviceBuffer;
use crate::data::Matrix;
use crate::error::{Error, Result};

/// One bindable run of whole rows.
#[derive(Debug, Clone)]
pub(crate) struct Chunk {
    pub buffer: wgpu::Buffer,
    /// Byte offset of the binding (aligned to `min_storage_buffer_offset_alignment`).
    pub bind_offset: u64,
    /// Byte size of the binding.
    pub bind_size: u64,
    /// Index of the chunk's first value inside the binding (non-zero when the chunk starts
    /// between alignment boundaries of a caller's buffer).
    pub x_offset: u32,
    /// Global index of the chunk's first row.
    pub row_start: usize,
    /// Rows in the chunk.
    pub n_rows: usize,
}

impl Chunk {
    pub(crate) fn bind(&self) -> Bind<'_> {
        Bind::Range(&self.buffer, self.bind_offset, self.bind_size)
    }
}

/// One chunk of a [`GpuMatrix`] as the crate's kernels bind it: a run of whole rows inside one
/// buffer, for binding in your own passes ([`GpuMatrix::chunk_views`]).
///
/// Row `first_row + i`, feature `j` is the f32 at byte
/// `byte_offset + 4 * (i * n_features + j)` of `buffer`. A storage binding must start at a
/// multiple of `min_storage_buffer_offset_alignment`, so [`MatrixChunk::binding`] starts at
/// `binding_offset` (at or before `byte_offset`) and the rows begin `first_value` f32 values
/// into it; the gap is 0 for matrices the crate made.
#[derive(Debug, Clone, Copy)]
pub struct MatrixChunk<'a> {
    /// The buffer holding the rows (yours, for [`GpuMatrix::from_buffer`]).
    pub buffer: &'a wgpu::Buffer,
    /// Byte offset of the chunk's first row in `buffer`.
    pub byte_offset: u64,
    /// Bytes of the chunk's rows: `n_rows * n_features * 4`.
    pub byte_len: u64,
    /// Global index of the chunk's first row.
    pub first_row: usize,
    /// Rows in the chunk.
    pub n_rows: usize,
    /// Aligned start of the binding, at or before `byte_offset`.
    pub binding_offset: u64,
    /// Size of the binding in bytes (the gap before the rows included).
    pub binding_size: u64,
    /// Index of the first row's first value inside the binding, in f32 values.
    pub first_value: u32,
}

impl<'a> MatrixChunk<'a> {
    /// The aligned storage binding that covers the chunk.
    pub fn binding(&self) -> wgpu::BufferBinding<'a> {
        wgpu::BufferBinding {
            buffer: self.buffer,
            offset: self.binding_offset,
            size: wgpu::BufferSize::new(self.binding_size),
        }
    }
}

/// One chunk of a [`GpuVector`]: the values of a run of rows, from byte 0 of its own buffer
/// ([`GpuVector::chunk_views`]).
#[derive(Debug, Clone, Copy)]
pub struct VectorChunk<'a> {
    /// The buffer; value `i` of the chunk (row `first_row + i`) is element `i`.
    pub buffer: &'a wgpu::Buffer,
    /// Global index of the chunk's first row.
    pub first_row: usize,
    /// Values (rows) in the chunk.
    pub n_rows: usize,
    /// Bytes of the chunk's values: `n_rows` times the value's size.
    pub byte_len: u64,
}

impl<'a> VectorChunk<'a> {
    /// The storage binding of the chunk's values (from byte 0, `byte_len` bytes), as
    /// [`MatrixChunk::binding`] gives for a matrix chunk.
    pub fn binding(&self) -> wgpu::BufferBinding<'a> {
        wgpu::BufferBinding {
            buffer: self.buffer,
            offset: 0,
            size: wgpu::BufferSize::new(self.byte_len.max(4)),
        }
    }
}

/// An N x D matrix of f32 rows on the GPU, split into chunks of whole rows that each fit in
/// one storage binding.
///
/// Build it with [`GpuMatrix::upload`] (from a validated host [`Matrix`]) or
/// [`GpuMatrix::from_buffer`] (from a `wgpu::Buffer` you already have: no copy is made).
#[derive(Debug, Clone)]
pub struct GpuMatrix {
    chunks: Vec<Chunk>,
    n_rows: usize,
    n_features: usize,
}

/// Rows per chunk for rows of `n_features` f32 values on this device.
pub(crate) fn rows_per_chunk(gpu: &Gpu, n_features: usize) -> Result<usize> {
    let row_bytes = n_features as u64 * 4;
    let limit = gpu.chunk_byte_limit();
    if row_bytes > limit {
        return Err(Error::DeviceLimit {
            what: format!("one row of {n_features} f32 features ({row_bytes} bytes)"),
            requested: row_bytes,
            limit_name: "max_storage_buffer_binding_size",
            limit,
        });
    }
    Ok((limit / row_bytes) as usize)
}

pub(crate) fn check_budget(gpu: &Gpu, what: &str, bytes: u64) -> Result<()> {
    let budget = gpu.memory_budget();
    if bytes > budget {
        return Err(Error::OutOfDeviceMemory {
            what: what.to_string(),
            requested: Some(bytes),
            available: Some(budget),
        });
    }
    Ok(())
}

impl GpuMatrix {
    /// Copies a validated host matrix to the device, in chunks sized to the device limits.
    ///
    /// Errors: [`Error::OutOfDeviceMemory`] past the budget set with
    /// [`Gpu::set_memory_budget`] or when the driver runs out, [`Error::DeviceLimit`] when a
    /// single row is wider than a binding.
    pub fn upload(gpu: &Gpu, m: &Matrix<'_>) -> Result<Self> {
        let d = m.n_features();
        let n = m.n_rows();
        let total = n as u64 * d as u64 * 4;
        check_budget(gpu, "the data matrix", total)?;
        let per_chunk = rows_per_chunk(gpu, d)?;
        let chunks = gpu.scoped("uploading the data matrix", || {
            let mut chunks = Vec::new();
            let mut row_start = 0;
            while row_start < n {
                let rows = per_chunk.min(n - row_start);
                let values = &m.as_slice()[row_start * d..(row_start + rows) * d];
                let bytes = rows as u64 * d as u64 * 4;
                let buffer = gpu.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("GpuMatrix chunk"),
                    size: bytes,
                    usage: wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::COPY_DST
                        | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                gpu.write_bytes(&buffer, 0, bytemuck::cast_slice(values));
                chunks.push(Chunk {
                    buffer,
                    bind_offset: 0,
                    bind_size: bytes,
                    x_offset: 0,
                    row_start,
                    n_rows: rows,
                });
                row_start += rows;
            }
            Ok(chunks)
        })?;
        Ok(Self {
            chunks,
            n_rows: n,
            n_features: d,
        })
    }

    /// [`GpuMatrix::from_buffer`] without the pass that looks for NaN and infinity, for
    /// callers who already know their values are finite (a pipeline that wrote them). The
    /// shape, usage, offset and size checks still apply, and so does the check that this
    /// device can bind the buffer: a destroyed buffer, or one of another device of the same
    /// wgpu instance, is [`Error::InvalidBuffer`] here rather than a kernel's error later.
    ///
    /// The buffer must belong to `gpu`'s device: wrap your own device with
    /// [`Gpu::from_wgpu`] so that your buffers and the crate's share it. A buffer from
    /// another wgpu *instance* cannot be detected (wgpu 30 gives a buffer no way to name its
    /// device or instance) and makes wgpu panic or misbehave when it is used.
    ///
    /// Nothing unsafe happens with a non-finite value, but every result computed from it is
    /// meaningless (a NaN distance never wins a comparison, a NaN sum spreads), so skip the
    /// check only when the data cannot hold one.
    pub fn from_buffer_unchecked(
        gpu: &Gpu,
        buffer: &wgpu::Buffer,
        byte_offset: u64,
        n_rows: usize,
        n_features: usize,
    ) -> Result<Self> {
        if n_rows == 0 || n_features == 0 {
            return Err(Error::EmptyData {
                what: "buffer view",
                missing: if n_rows == 0 { "rows" } else { "columns" },
            });
        }
        if !buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
            return Err(Error::InvalidBuffer(
                "the buffer needs wgpu::BufferUsages::STORAGE".into(),
            ));
        }
        if !byte_offset.is_multiple_of(4) {
            return Err(Error::InvalidBuffer(format!(
                "byte_offset {byte_offset} is not a multiple of 4"
            )));
        }
        let needed = (n_rows as u64)
            .checked_mul(n_features as u64 * 4)
            .and_then(|bytes| bytes.checked_add(byte_offset));
        if needed.is_none_or(|needed| needed > buffer.size()) {
            return Err(Error::InvalidBuffer(format!(
                "{n_rows} x {n_features} f32 from byte {byte_offset} needs more than the buffer's {} bytes",
                buffer.size()
            )));
        }
        let align = gpu.info().min_storage_buffer_offset_alignment.max(4) as u64;
        let per_chunk = rows_per_chunk(gpu, n_features)?;
        let first_bytes = per_chunk.min(n_rows) as u64 * n_features as u64 * 4;
        let first_offset = byte_offset / align * align;
        check_usable(
            gpu,
            buffer,
            first_offset,
            byte_offset - first_offset + first_bytes,
        )?;
        let mut chunks = Vec::new();
        let mut row_start = 0;
        while row_start < n_rows {
            let rows = per_chunk.min(n_rows - row_start);
            let start = byte_offset + row_start as u64 * n_features as u64 * 4;
            let bind_offset = start / align * align;
            let gap = start - bind_offset;
            chunks.push(Chunk {
                buffer: buffer.clone(),
                bind_offset,
                bind_size: gap + rows as u64 * n_features as u64 * 4,
                x_offset: (gap / 4) as u32,
                row_start,
                n_rows: rows,
            });
            row_start += rows;
        }
        Ok(Self {
            chunks,
            n_rows,
            n_features,
        })
    }

    /// Number of rows N.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Number of features D.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// Number of chunks the rows are split into.
    pub fn n_chunks(&self) -> usize {
        self.chunks.len()
    }

    /// The most rows one chunk holds: every chunk but the last has this many. It follows the
    /// device's binding limit (and [`Gpu::set_max_chunk_bytes`]) at the time the matrix was
    /// made.
    pub fn rows_per_chunk(&self) -> usize {
        self.chunks.iter().map(|c| c.n_rows).max().unwrap_or(0)
    }

    /// The chunks in row order: buffer, offsets and rows of each, to bind the data in your
    /// own passes.
    pub fn chunk_views(&self) -> impl ExactSizeIterator<Item = MatrixChunk<'_>> {
        let row_bytes = self.n_features as u64 * 4;
        self.chunks.iter().map(move |c| MatrixChunk {
            buffer: &c.buffer,
            byte_offset: c.bind_offset + c.x_offset as u64 * 4,
            byte_len: c.n_rows as u64 * row_bytes,
            first_row: c.row_start,
            n_rows: c.n_rows,
            binding_offset: c.bind_offset,
            binding_size: c.bind_size,
            first_value: c.x_offset,
        })
    }

    pub(crate) fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }

    /// Builds a matrix from chunks written by a kernel (our own buffers, offset 0).
    pub(crate) fn from_chunks(chunks: Vec<Chunk>, n_rows: usize, n_features: usize) -> Self {
        Self {
            chunks,
            n_rows,
            n_features,
        }
    }

    /// A new matrix of `out_cols` values per row of `self`, written by a kernel that `record`
    /// dispatches for one run of rows at a time: `record(batch, chunk, first, rows, out)`
    /// must fill `out` (rows x out_cols) from rows `first .. first + rows` of `chunk`.
    ///
    /// The output keeps the input's chunking: output chunk i holds the rows of input chunk i,
    /// unless their outputs would not fit one binding (more output than input columns), in
    /// which case those rows are split into consecutive output chunks of at most
    /// `chunk limit / (4·out_cols)` rows. [`GpuMatrix::chunk_views`] gives each chunk's rows.
    pub(crate) fn map_rows(
        &self,
        gpu: &Gpu,
        out_cols: usize,
        what: &str,
        record: impl FnMut(&mut Batch<'_>, &Chunk, usize, usize, &DeviceBuffer<f32>) -> Result<()>,
    ) -> Result<GpuMatrix> {
        gpu.scoped(what, || {
            let mut batch = Batch::new(gpu, what);
            let out = self.map_rows_in(gpu, &mut batch, out_cols, what, record)?;
            batch.finish()?;
            Ok(out)
        })
    }

    /// [`GpuMatrix::map_rows`] recorded into `batch` (nothing submitted).
    pub(crate) fn map_rows_in(
        &self,
        gpu: &Gpu,
        batch: &mut Batch<'_>,
        out_cols: usize,
        what: &str,
        mut record: impl FnMut(&mut Batch<'_>, &Chunk, usize, usize, &DeviceBuffer<f32>) -> Result<()>,
    ) -> Result<GpuMatrix> {
        check_budget(gpu, what, self.n_rows as u64 * out_cols as u64 * 4)?;
        let out_rows = (gpu.chunk_byte_limit() / (out_cols as u64 * 4)).max(1) as usize;
        let mut out = Vec::new();
        for chunk in &self.chunks {
            let mut first = 0;
            while first < chunk.n_rows {
                let rows = out_rows.min(chunk.n_rows - first);
                let buffer = DeviceBuffer::zeroed(gpu, what, rows * out_cols);
                record(batch, chunk, first, rows, &buffer)?;
                out.push(Chunk {
                    buffer: buffer.raw().clone(),
                    bind_offset: 0,
                    bind_size: (rows * out_cols * 4) as u64,
                    x_offset: 0,
                    row_start: chunk.row_start + first,
                    n_rows: rows,
                });
                first += rows;
            }
        }
        Ok(GpuMatrix::from_chunks(out, self.n_rows, out_cols))
    }

    /// Reads the whole matrix back to the host (row-major). Needs `COPY_SRC` on the
    /// buffers, which matrices made by this crate always have.
    pub fn to_host(&self, gpu: &Gpu) -> Result<Vec<f32>> {
        gpu.scoped("reading a matrix back", || {
            let mut batch = Batch::new(gpu, "GpuMatrix::to_host");
            let mut handles = Vec::new();
            for c in &self.chunks {
                if !c.buffer.usage().contains(wgpu::BufferUsages::COPY_SRC) {
                    return Err(Error::InvalidBuffer(
                        "reading back needs wgpu::BufferUsages::COPY_SRC".into(),
                    ));
                }
                let start = c.bind_offset + c.x_offset as u64 * 4;
                let bytes = c.n_rows as u64 * self.n_features as u64 * 4;
                handles.push(batch.read(&c.buffer, start, bytes));
            }
            let back = batch.finish()?;
            Ok(handles.into_iter().flat_map(|h| back.f32s(h)).collect())
        })
    }
}

/// Refuses a caller's buffer this device cannot bind: destroyed, or made by another device
/// of the same wgpu instance. A storage binding of `size` bytes from `offset` is made in an
/// error scope and dropped, so the mistake is named when the view is made rather than by a
/// kernel later.
///
/// wgpu gives a buffer no way to name its device, so a buffer from another wgpu *instance*
/// cannot be told apart here; [`GpuMatrix::from_buffer_unchecked`] says so.
fn check_usable(gpu: &Gpu, buffer: &wgpu::Buffer, offset: u64, size: u64) -> Result<()> {
    let probe = gpu.scoped("checking the caller's buffer", || {
        let layout = gpu
            .device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("buffer check"),
                entries: &[wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Storage { read_only: true },
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                }],
            });
        let _binding = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("buffer check"),
            layout: &layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset,
                    size: wgpu::BufferSize::new(size),
                }),
            }],
        });
        Ok(())
    });
    probe.map_err(|e| {
        Error::InvalidBuffer(format!(
            "this device cannot use the buffer (destroyed, or made by another device?): {e}"
        ))
    })
}

/// One value per row of a [`GpuMatrix`] (labels, distances), chunked like the matrix, kept
/// on the device. Read it with [`GpuVector::to_host`] or bind its buffers in your own work.
#[derive(Debug, Clone)]
pub struct GpuVector<T: Pod> {
    /// One buffer per chunk of the matrix, holding exactly that chunk's values.
    pub(crate) chunks: Vec<DeviceBuffer<T>>,
}

impl<T: Pod> GpuVector<T> {
    /// One zeroed buffer per chunk of `m`.
    pub(crate) fn zeroed(gpu: &Gpu, m: &GpuMatrix, label: &str) -> Self {
        Self {
            chunks: m
                .chunks()
                .iter()
                .map(|c| DeviceBuffer::zeroed(gpu, label, c.n_rows))
                .collect(),
        }
    }

    /// Total number of values (rows).
    pub fn len(&self) -> usize {
        self.chunks.iter().map(DeviceBuffer::len).sum()
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The per-chunk buffers, in row order, and the number of values in each (from byte 0).
    pub fn buffers(&self) -> impl Iterator<Item = (&wgpu::Buffer, usize)> {
        self.chunks.iter().map(|b| (b.raw(), b.len()))
    }

    /// The chunks in row order with the global index of each one's first row: a vector made
    /// for a [`GpuMatrix`] is chunked like it, so chunk `i` of both covers the same rows.
    pub fn chunk_views(&self) -> impl ExactSizeIterator<Item = VectorChunk<'_>> {
        let mut first_row = 0;
        self.chunks.iter().map(move |b| {
            let chunk = VectorChunk {
                buffer: b.raw(),
                first_row,
                n_rows: b.len(),
                byte_len: (b.len() * std::mem::size_of::<T>()) as u64,
            };
            first_row += b.len();
            chunk
        })
    }

    /// The most values one chunk holds: every chunk but the last has this many.
    pub fn rows_per_chunk(&self) -> usize {
        self.chunks.iter().map(DeviceBuffer::len).max().unwrap_or(0)
    }

    /// Reads all values back to the host.
    pub fn to_host(&self, gpu: &Gpu) -> Result<Vec<T>> {
        gpu.scoped("reading a vector back", || {
            let mut batch = Batch::new(gpu, "GpuVector::to_host");
            let handles: Vec<_> = self.chunks.iter().map(|b| batch.read_all(b)).collect();
            let back = batch.finish()?;
            Ok(handles
                .into_iter()
                .flat_map(|h| back.bytes_as::<T>(h))
                .collect())
        })
    }
}
