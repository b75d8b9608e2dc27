//! Streaming a [`RowSource`] through a bounded device buffer.
//!
//! A fit over a source asks for [`DeviceRows`]: when all N rows fit in the device-memory
//! budget (next to what the fit itself needs per row and in all), they are uploaded once and
//! stay for the whole fit; otherwise each pass streams them through one data buffer of at
//! most [`STREAM_PIECE_BYTES`], so the device holds a bounded amount whatever N is.
//!
//! Reading the source (a file's pages, a user's iterator, the finiteness check) runs on a
//! second thread one piece ahead of the GPU: while the GPU works on piece i, piece i+1 is
//! read into the second of two host buffers (a channel of depth one), then written to the
//! device buffer as soon as piece i's results are back. The host holds at most three pieces.
//! (wgpu drives one queue, on which copies and kernels run in order, so overlapping the
//! source's reads with the GPU is what double buffering can win here.)

use super::buffer::Chunk;
use super::device_buffer::DeviceBuffer;
use super::{Gpu, GpuMatrix};
use crate::error::{Error, Result};
use crate::source::RowSource;

/// The most bytes of data one streamed piece holds (device buffer and each host buffer).
pub(crate) const STREAM_PIECE_BYTES: u64 = 128 << 20;

/// Where a fit's data lives on the device: all of it, or one piece at a time.
pub(crate) enum DeviceRows<'s, S: RowSource + ?Sized> {
    /// Every row, uploaded once (in as many chunks as the binding limit asks for).
    Resident(GpuMatrix),
    /// One buffer of `capacity` rows, refilled from `source` on every pass.
    Streamed {
        source: &'s S,
        slot: DeviceBuffer<f32>,
        capacity: usize,
    },
}

impl<'s, S: RowSource + ?Sized> DeviceRows<'s, S> {
    /// Decides, once for the whole fit, how `source` lives on the device for a fit that
    /// needs `row_extra` bytes per row on the device besides the row itself (labels,
    /// distances, responsibilities) and `fixed` bytes in all (statistics, parameters), under
    /// the budget set with [`Gpu::set_memory_budget`]: resident when N rows and the fit's
    /// buffers fit the budget, else streamed through one buffer of at most
    /// [`STREAM_PIECE_BYTES`] (and at most one binding, [`Gpu::set_max_chunk_bytes`]).
    ///
    /// Errors: [`Error::OutOfDeviceMemory`] when not even one row fits next to `fixed`.
    pub(crate) fn new(gpu: &Gpu, source: &'s S, row_extra: u64, fixed: u64) -> Result<Self> {
        let (n, d) = crate::source::check_shape(source)?;
        let row_bytes = d as u64 * 4;
        let per_row = row_bytes + row_extra;
        let budget = gpu.memory_budget();
        let room = budget.saturating_sub(fixed);
        if room < per_row {
            return Err(Error::OutOfDeviceMemory {
                what: format!(
                    "streaming rows of {d} features: {fixed} bytes of statistics and one row of \
                     {per_row} bytes exceed the device-memory budget"
                ),
                requested: Some(fixed + per_row),
                available: Some(budget),
            });
        }
        let fits = room / per_row;
        if n as u64 <= fits {
            return Ok(DeviceRows::Resident(upload(gpu, source)?));
        }
        let chunk_rows = (gpu.chunk_byte_limit() / row_bytes).max(1);
        let capacity = fits
            .min(chunk_rows)
            .min((STREAM_PIECE_BYTES / row_bytes).max(1)) as usize;
        let slot = gpu.scoped("allocating the streaming buffer", || {
            Ok(DeviceBuffer::zeroed(gpu, "streamed rows", capacity * d))
        })?;
        Ok(DeviceRows::Streamed {
            source,
            slot,
            capacity,
        })
    }

    /// Rows a piece may hold: what per-row device buffers must be sized for.
    pub(crate) fn capacity(&self) -> usize {
        match self {
            DeviceRows::Resident(x) => x.n_rows(),
            DeviceRows::Streamed { capacity, .. } => *capacity,
        }
    }

    /// A matrix of [`DeviceRows::capacity`] rows shaped like every piece: what per-row and
    /// per-block buffers are sized from.
    pub(crate) fn capacity_view(&self) -> GpuMatrix {
        match self {
            DeviceRows::Resident(x) => x.clone(),
            DeviceRows::Streamed {
                source,
                slot,
                capacity,
            } => view(slot, *capacity, source.shape().1),
        }
    }

    /// One pass: `work(piece, first_row)` for each piece of rows on the device, in order.
    /// The piece is valid only during the call.
    pub(crate) fn pass(
        &self,
        gpu: &Gpu,
        mut work: impl FnMut(&GpuMatrix, usize) -> Result<()>,
    ) -> Result<()> {
        match self {
            DeviceRows::Resident(x) => work(x, 0),
            DeviceRows::Streamed {
                source,
                slot,
                capacity,
            } => stream(gpu, *source, *capacity, slot, &mut work),
        }
    }
}

/// A one-chunk matrix over the first `n` rows of `buffer` (a buffer this crate made).
pub(crate) fn view(buffer: &DeviceBuffer<f32>, n: usize, d: usize) -> GpuMatrix {
    debug_assert!(n * d <= buffer.len());
    let bytes = n as u64 * d as u64 * 4;
    let chunk = Chunk {
        buffer: buffer.raw().clone(),
        bind_offset: 0,
        bind_size: bytes,
        x_offset: 0,
        row_start: 0,
        n_rows: n,
    };
    GpuMatrix::from_chunks(vec![chunk], n, d)
}

/// Uploads all of `source` in chunks of whole rows sized to the binding limit, as
/// [`GpuMatrix::upload`] cuts a host matrix (a piece of the source at a time on the host).
///
/// Errors: [`Error::OutOfDeviceMemory`] past the memory budget, and the source's errors.
pub(crate) fn upload_source<S: RowSource + ?Sized>(gpu: &Gpu, source: &S) -> Result<GpuMatrix> {
    let (n, d) = crate::source::check_shape(source)?;
    super::buffer::check_budget(gpu, "the data matrix", n as u64 * d as u64 * 4)?;
    upload(gpu, source)
}

/// Uploads all of `source` (which fits the budget) in chunks of whole rows sized to the
/// binding limit, as [`GpuMatrix::upload`] cuts a host matrix.
fn upload<S: RowSource + ?Sized>(gpu: &Gpu, source: &S) -> Result<GpuMatrix> {
    let (n, d) = source.shape();
    let per_chunk = super::buffer::rows_per_chunk(gpu, d)?;
    gpu.scoped("uploading the rows", || {
        let chunks: Vec<DeviceBuffer<f32>> = (0..n.div_ceil(per_chunk))
            .map(|c| {
                let rows = per_chunk.min(n - c * per_chunk);
                DeviceBuffer::zeroed(gpu, "GpuMatrix chunk", rows * d)
            })
            .collect();
        source.visit_rows(
            (STREAM_PIECE_BYTES / (d as u64 * 4)).max(1) as usize,
            &mut |first, rows| {
                // A piece may straddle chunk boundaries: write each part where it belongs.
                let mut row = first;
                let mut values = rows;
                while !values.is_empty() {
                    let (c, at) = (row / per_chunk, row % per_chunk);
                    let take = (per_chunk - at).min(values.len() / d);
                    chunks[c].write_at(gpu, at * d, &values[..take * d]);
                    values = &values[take * d..];
                    row += take;
                }
                Ok(())
            },
        )?;
        let chunks = chunks
            .iter()
            .enumerate()
            .map(|(c, b)| Chunk {
                buffer: b.raw().clone(),
                bind_offset: 0,
                bind_size: b.len() as u64 * 4,
                x_offset: 0,
                row_start: c * per_chunk,
                n_rows: b.len() / d,
            })
            .collect();
        Ok(GpuMatrix::from_chunks(chunks, n, d))
    })
}

/// A streamed pass: a reader thread runs the source one piece ahead; this thread uploads
/// each piece and runs `work` on it.
fn stream<S: RowSource + ?Sized>(
    gpu: &Gpu,
    source: &S,
    capacity: usize,
    slot: &DeviceBuffer<f32>,
    work: &mut dyn FnMut(&GpuMatrix, usize) -> Result<()>,
) -> Result<()> {
    let (_, d) = source.shape();
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Vec<f32>)>(1);
        let reader = scope.spawn(move || {
            source.visit_rows(capacity, &mut |first, rows| {
                tx.send((first, rows.to_vec())).map_err(|_| Error::Source {
                    reason: "the pass stopped".into(),
                })
            })
        });
        let mut outcome = Ok(());
        for (first, rows) in rx.iter() {
            let n = rows.len() / d;
            slot.write(gpu, &rows);
            drop(rows);
            outcome = work(&view(slot, n, d), first);
            if outcome.is_err() {
                break;
            }
        }
        // Hanging up stops a reader that is still going (its send fails).
        drop(rx);
        let read = match reader.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        // The work's own error first: the reader's is then only "the pass stopped".
        outcome.and(read)
    })
}
