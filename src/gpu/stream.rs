//! Streaming a [`RowSource`] through a bounded device buffer.
//!
//! A fit over a source asks for [`DeviceRows`]: when all N rows fit in the device-memory
//! budget (next to what the fit itself needs per row and in all), they are uploaded once and
//! stay for the whole fit; otherwise each pass streams them through one data buffer of at
//! most [`STREAM_PIECE_BYTES`], so the device holds a bounded amount whatever N is.
//!
//! Reading the source (a file's pages, a user's iterator, the finiteness check) runs on a
//! second thread one piece ahead of the GPU: while the GPU works on piece i, piece i+1 is
//! read into the second of two host buffers (a channel of depth one). The device has two
//! piece buffers too: a pass whose work submits a piece and collects its results apart
//! ([`DeviceRows::pass_ahead`]) writes piece i+1 into the other buffer (the host's copy into
//! wgpu's staging memory, the costly part of an upload) and submits it while the GPU still
//! works on piece i, and only then waits for piece i's results; so the GPU has the next
//! piece queued when it finishes one. The host holds at most three pieces. (wgpu drives one
//! queue, on which copies and kernels run in order: what overlaps the GPU's work is the
//! source's reads and the host's side of each upload.)

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
    /// Two buffers of `capacity` rows, refilled from `source` in turn on every pass.
    Streamed {
        source: &'s S,
        slots: [DeviceBuffer<f32>; 2],
        capacity: usize,
    },
}

impl<'s, S: RowSource + ?Sized> DeviceRows<'s, S> {
    /// Decides, once for the whole fit, how `source` lives on the device for a fit that
    /// needs `row_extra` bytes per row on the device besides the row itself (labels,
    /// distances, responsibilities) and `fixed` bytes in all (statistics, parameters), under
    /// the budget set with [`Gpu::set_memory_budget`]: resident when N rows and the fit's
    /// buffers fit the budget, else streamed through two buffers of at most
    /// [`STREAM_PIECE_BYTES`] each (and at most one binding, [`Gpu::set_max_chunk_bytes`]).
    ///
    /// Errors: [`Error::OutOfDeviceMemory`] when not even one row fits next to `fixed`.
    pub(crate) fn new(gpu: &Gpu, source: &'s S, row_extra: u64, fixed: u64) -> Result<Self> {
        Self::with_resident_extra(gpu, source, row_extra, fixed, 0)
    }

    /// [`DeviceRows::new`] for a fit that needs `resident_extra` bytes more when its rows are
    /// resident (K-Means' loop ahead on the device; a streamed fit never runs it).
    pub(crate) fn with_resident_extra(
        gpu: &Gpu,
        source: &'s S,
        row_extra: u64,
        fixed: u64,
        resident_extra: u64,
    ) -> Result<Self> {
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
        let fits = budget.saturating_sub(fixed + resident_extra) / per_row;
        if n as u64 <= fits {
            return Ok(DeviceRows::Resident(upload(gpu, source)?));
        }
        // A piece's rows take two buffers (the one the GPU works on, the one being filled);
        // the per-row buffers of the fit are sized for one piece.
        let room_for_pieces = room / (per_row + row_bytes);
        if room_for_pieces == 0 {
            return Err(Error::OutOfDeviceMemory {
                what: format!(
                    "streaming rows of {d} features: {fixed} bytes of statistics and one row of \
                     {per_row} bytes with its second buffer exceed the device-memory budget"
                ),
                requested: Some(fixed + per_row + row_bytes),
                available: Some(budget),
            });
        }
        let chunk_rows = (gpu.chunk_byte_limit() / row_bytes).max(1);
        let capacity = room_for_pieces
            .min(chunk_rows)
            .min((STREAM_PIECE_BYTES / row_bytes).max(1)) as usize;
        let slots = gpu.scoped("allocating the streaming buffers", || {
            Ok([0, 1].map(|_| DeviceBuffer::zeroed(gpu, "streamed rows", capacity * d)))
        })?;
        Ok(DeviceRows::Streamed {
            source,
            slots,
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
                slots,
                capacity,
            } => view(&slots[0], *capacity, source.shape().1),
        }
    }

    /// One pass: `work(piece, first_row)` for each piece of rows on the device, in order.
    /// The piece is valid only during the call.
    pub(crate) fn pass(
        &self,
        gpu: &Gpu,
        mut work: impl FnMut(&GpuMatrix, usize) -> Result<()>,
    ) -> Result<()> {
        /// Work that does everything when it is submitted.
        struct AtOnce<F>(F);
        impl<F: FnMut(&GpuMatrix, usize) -> Result<()>> PieceWork for AtOnce<F> {
            type Submitted = ();
            fn submit(&mut self, piece: &GpuMatrix, first_row: usize) -> Result<()> {
                (self.0)(piece, first_row)
            }
            fn collect(&mut self, (): ()) -> Result<()> {
                Ok(())
            }
        }
        self.pass_ahead(gpu, &mut AtOnce(&mut work))
    }

    /// One pass of `work` in two halves ([`PieceWork`]), pieces in order. Streamed, the next
    /// piece is uploaded and submitted before the previous one's results are collected, so
    /// the GPU has it queued when it finishes.
    pub(crate) fn pass_ahead<W: PieceWork + ?Sized>(&self, gpu: &Gpu, work: &mut W) -> Result<()> {
        match self {
            DeviceRows::Resident(x) => {
                let submitted = work.submit(x, 0)?;
                work.collect(submitted)
            }
            DeviceRows::Streamed {
                source,
                slots,
                capacity,
            } => stream(gpu, *source, *capacity, slots, work),
        }
    }
}

/// A pass's work on each piece, in two halves: `submit` records and submits it without
/// waiting; `collect` takes its results. Between the two, the next piece is submitted:
/// `submit` may change what a submitted piece still reads back only through the queue (whose
/// writes follow the submissions before them), and must leave the piece's own results to
/// its `collect`.
pub(crate) trait PieceWork {
    /// What a submitted piece's results are collected from.
    type Submitted;
    /// Records and submits the work on `piece`, the rows from `first_row` on.
    fn submit(&mut self, piece: &GpuMatrix, first_row: usize) -> Result<Self::Submitted>;
    /// Takes the results of a submitted piece.
    fn collect(&mut self, submitted: Self::Submitted) -> Result<()>;
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
/// binding limit, as [`GpuMatrix::upload`] cuts a host matrix. Rows held in memory are
/// copied from where they are; any other source is read (and its values checked) one piece
/// ahead on a second thread ([`read_ahead`]), while this thread copies the piece before into
/// wgpu's staging memory ([`Gpu::write_bytes`]).
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
        let piece_rows = (STREAM_PIECE_BYTES / (d as u64 * 4)).max(1) as usize;
        read_ahead(source, piece_rows, |first, rows| {
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
            // Start the copy now: the staging memory of this piece is freed once it is done.
            gpu.queue.submit([]);
            Ok(())
        })?;
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

/// Runs one pass of `source` in pieces of at most `max_rows` rows on a second thread, one
/// piece ahead (a channel of depth one), and hands each piece to `consume` on this thread,
/// in order. Rows the source holds in memory ([`RowSource::rows_in_memory`]) are handed out
/// in place instead, with no thread and no copy. The host buffers go back to the reader once consumed and are refilled: at most
/// three exist, so a pass of any length allocates (and the system zero-fills) three pieces,
/// not one per piece. The first error ends the pass: `consume`'s own first (the reader's is
/// then only "the pass stopped"), else the reader's.
fn read_ahead<S: RowSource + ?Sized>(
    source: &S,
    max_rows: usize,
    mut consume: impl FnMut(usize, &[f32]) -> Result<()>,
) -> Result<()> {
    if let Some(values) = source.rows_in_memory() {
        // Rows already in memory: hand out their pieces in place, no reader and no copy.
        let (n, d) = source.shape();
        if values.len() != n * d {
            return Err(Error::Source {
                reason: format!(
                    "rows_in_memory lent {} values for {n} rows of {d} features",
                    values.len()
                ),
            });
        }
        let max_rows = max_rows.max(1);
        for (i, rows) in values.chunks(max_rows * d).enumerate() {
            consume(i * max_rows, rows)?;
        }
        return Ok(());
    }
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Vec<f32>)>(1);
        let (give_back, given_back) = std::sync::mpsc::channel::<Vec<f32>>();
        let reader = scope.spawn(move || {
            source.visit_rows(max_rows, &mut |first, rows| {
                let mut piece = given_back.try_recv().unwrap_or_default();
                piece.clear();
                piece.extend_from_slice(rows);
                tx.send((first, piece)).map_err(|_| Error::Source {
                    reason: "the pass stopped".into(),
                })
            })
        });
        let mut outcome = Ok(());
        for (first, rows) in rx.iter() {
            outcome = consume(first, &rows);
            if outcome.is_err() {
                break;
            }
            // The reader may have finished: then the buffer is simply dropped.
            let _ = give_back.send(rows);
        }
        // Hanging up stops a reader that is still going (its send fails).
        drop(rx);
        let read = match reader.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        outcome.and(read)
    })
}

/// A streamed pass: a reader thread runs the source one piece ahead; this thread uploads
/// each piece into the slot the piece before last used (its results collected already),
/// submits it, and only then collects the previous piece's results.
fn stream<S: RowSource + ?Sized, W: PieceWork + ?Sized>(
    gpu: &Gpu,
    source: &S,
    capacity: usize,
    slots: &[DeviceBuffer<f32>; 2],
    work: &mut W,
) -> Result<()> {
    let (_, d) = source.shape();
    let mut in_flight = None;
    let mut piece = 0;
    read_ahead(source, capacity, |first, rows| {
        let n = rows.len() / d;
        let slot = &slots[piece % 2];
        piece += 1;
        slot.write(gpu, rows);
        let submitted = work.submit(&view(slot, n, d), first)?;
        match in_flight.replace(submitted) {
            Some(previous) => work.collect(previous),
            None => Ok(()),
        }
    })?;
    match in_flight.take() {
        Some(last) => work.collect(last),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Matrix;
    use crate::gpu::tests::gpu;

    /// Rows of `d` values from a slice, a run at a time (the host layer's own source).
    struct Slice<'x>(&'x [f32], usize);

    impl RowSource for Slice<'_> {
        fn shape(&self) -> (usize, usize) {
            (self.0.len() / self.1, self.1)
        }
        fn visit_rows(
            &self,
            max_rows: usize,
            visit: &mut dyn FnMut(usize, &[f32]) -> Result<()>,
        ) -> Result<()> {
            for (i, run) in self.0.chunks(max_rows * self.1).enumerate() {
                visit(i * max_rows, run)?;
            }
            Ok(())
        }
    }

    /// Records the order of the halves and what each piece held.
    struct Log<'g> {
        events: Vec<String>,
        seen: Vec<f32>,
        gpu: &'g Gpu,
    }

    impl PieceWork for Log<'_> {
        type Submitted = (usize, Vec<f32>);
        fn submit(&mut self, piece: &GpuMatrix, first_row: usize) -> Result<Self::Submitted> {
            self.events.push(format!("submit {first_row}"));
            Ok((first_row, piece.to_host(self.gpu)?))
        }
        fn collect(&mut self, (first_row, rows): Self::Submitted) -> Result<()> {
            self.events.push(format!("collect {first_row}"));
            self.seen.extend(rows);
            Ok(())
        }
    }

    #[test]
    fn a_streamed_pass_submits_each_piece_before_collecting_the_one_before() {
        let (n, d) = (1000, 3);
        let x: Vec<f32> = (0..n * d).map(|v| v as f32).collect();
        // A source read by the reader thread, and a matrix handed out in place.
        let slice = Slice(&x, d);
        let matrix = Matrix::new(&x, d).unwrap();
        assert!(slice.rows_in_memory().is_none() && matrix.rows_in_memory().is_some());
        let sources: [&dyn RowSource; 2] = [&slice, &matrix];
        for (m, pieces) in sources
            .into_iter()
            .flat_map(|m| [1usize, 3, 5].map(|p| (m, p)))
        {
            let g = gpu();
            // Room for two buffers of a piece's rows and nothing more (all rows when one).
            let rows = n.div_ceil(pieces) as u64;
            g.set_memory_budget(2 * rows * d as u64 * 4 + 100);
            let device = DeviceRows::new(&g, m, 0, 100).unwrap();
            let mut log = Log {
                events: Vec::new(),
                seen: Vec::new(),
                gpu: &g,
            };
            device.pass_ahead(&g, &mut log).unwrap();
            assert_eq!(log.seen, x, "{pieces} pieces: every row once, in order");
            let firsts: Vec<usize> = (0..pieces).map(|p| p * rows as usize).collect();
            let mut want = vec![format!("submit {}", firsts[0])];
            for w in firsts.windows(2) {
                want.push(format!("submit {}", w[1]));
                want.push(format!("collect {}", w[0]));
            }
            want.push(format!("collect {}", firsts[pieces - 1]));
            assert_eq!(log.events, want, "{pieces} pieces");
            assert_eq!(
                matches!(device, DeviceRows::Streamed { .. }),
                pieces > 1,
                "{pieces} pieces"
            );
        }
    }

    #[test]
    fn rows_are_resident_only_with_room_for_what_residence_adds() {
        let (n, d) = (40usize, 3usize);
        let x = crate::gpu::tests::random(n * d, 3);
        let m = Matrix::new(&x, d).unwrap();
        let g = gpu();
        // The rows and 100 bytes fit exactly; 64 bytes more for resident rows do not.
        g.set_memory_budget((n * d * 4) as u64 + 100);
        let resident = DeviceRows::with_resident_extra(&g, &m, 0, 100, 0).unwrap();
        assert!(matches!(resident, DeviceRows::Resident(_)));
        let streamed = DeviceRows::with_resident_extra(&g, &m, 0, 100, 64).unwrap();
        assert!(matches!(streamed, DeviceRows::Streamed { .. }));
    }

    /// A source that lends `lent` in memory while declaring `n` rows of `d`.
    struct Lends<'x> {
        lent: &'x [f32],
        n: usize,
        d: usize,
    }

    impl RowSource for Lends<'_> {
        fn shape(&self) -> (usize, usize) {
            (self.n, self.d)
        }
        fn visit_rows(
            &self,
            max_rows: usize,
            visit: &mut dyn FnMut(usize, &[f32]) -> Result<()>,
        ) -> Result<()> {
            Slice(self.lent, self.d).visit_rows(max_rows, visit)
        }
        fn rows_in_memory(&self) -> Option<&[f32]> {
            Some(self.lent)
        }
    }

    #[test]
    fn rows_lent_in_memory_of_the_wrong_length_are_an_error() {
        let g = gpu();
        let values = vec![1.0f32; 3 * 10];
        for n in [9, 11] {
            let source = Lends {
                lent: &values,
                n,
                d: 3,
            };
            match upload_source(&g, &source) {
                Err(Error::Source { reason }) => assert!(reason.contains("30 values"), "{reason}"),
                other => panic!("{n} rows declared: {other:?}"),
            }
        }
        let right = Lends {
            lent: &values,
            n: 10,
            d: 3,
        };
        assert_eq!(
            upload_source(&g, &right).unwrap().to_host(&g).unwrap(),
            values
        );
    }

    #[test]
    fn uploads_larger_than_a_write_piece_arrive_whole() {
        // 65 MiB and a row: more than one piece of Gpu::write_bytes, the last one partial.
        let d = 7;
        let n = (65 << 20) / (4 * d) + 1;
        let x: Vec<f32> = (0..n * d).map(|v| (v % 65_521) as f32 - 3e4).collect();
        let m = Matrix::new(&x, d).unwrap();
        let g = gpu();
        assert_eq!(GpuMatrix::upload(&g, &m).unwrap().to_host(&g).unwrap(), x);
        assert_eq!(upload_source(&g, &m).unwrap().to_host(&g).unwrap(), x);
        assert_eq!(
            upload_source(&g, &Slice(&x, d))
                .unwrap()
                .to_host(&g)
                .unwrap(),
            x
        );
    }
}
