//! Host-to-device writes of large data at the host's copy rate.
//!
//! `queue.write_buffer` copies its bytes into staging memory that wgpu allocates for the call
//! and frees once the next submission has run; the transfer starts at that submission. Two
//! things made whole-chunk writes slow on an H200 host (`examples/upload_probe.rs`, 220 MB
//! and 1 GB of f32 rows):
//! - one write of a 128 MiB chunk takes fresh staging memory the size of the chunk, and
//!   touching fresh pages costs more than the copy: 3.1-4.2 GB/s, where pieces with a
//!   submission after each (so the staging memory is given back and reused) reach 8-9 GB/s;
//! - one thread copies into that memory at 8-9 GB/s, well under what the host's memory and
//!   the PCIe link carry, so each piece is cut into parts copied on several threads, each
//!   into its own staging view ([`wgpu::Queue::write_buffer_with`]). 64 MiB pieces went up at
//!   8.8 GB/s on one thread, 17 on 2, 26-27 on 4, 28 on 8 and 28.7 on 16 threads; 16 MiB
//!   pieces peaked at 23 GB/s on 8.
//!
//! Queue writes all land before the next submission's commands whatever the submissions
//! between them, so none of this changes any ordering.

use super::context::Gpu;

/// The most bytes of one piece: small enough for wgpu to recycle its staging memory piece
/// after piece, large enough that a piece's threads and submission cost little (see the
/// module's figures).
pub(crate) const WRITE_PIECE_BYTES: usize = 64 << 20;

/// Writes of at most this many bytes are one `write_buffer` on this thread.
const PARALLEL_MIN_BYTES: usize = 4 << 20;

/// The fewest bytes one copying thread takes: a thread's start costs a few microseconds.
const PART_MIN_BYTES: usize = 1 << 20;

/// The most threads that copy one piece: 8 reached 98% of 16 threads' rate on an H200 host.
const MAX_COPY_THREADS: usize = 8;

/// Threads that copy one piece: the host's parallelism, at most [`MAX_COPY_THREADS`].
fn copy_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_COPY_THREADS)
}

/// How `len` bytes split into parts for `threads` threads: a multiple of 4 bytes (wgpu's copy
/// alignment), at least [`PART_MIN_BYTES`].
fn part_bytes(len: usize, threads: usize) -> usize {
    len.div_ceil(threads.max(1))
        .next_multiple_of(4)
        .max(PART_MIN_BYTES)
}

impl Gpu {
    /// Writes `bytes` into `buffer` from byte `offset` on through the queue: pieces of
    /// [`WRITE_PIECE_BYTES`], each copied into staging memory by up to [`MAX_COPY_THREADS`]
    /// threads and submitted at once (see the module's notes). `offset` and the length must
    /// be multiples of 4, as for `write_buffer`; a write wgpu refuses is reported through the
    /// device's error scopes, as `write_buffer` reports it.
    pub(crate) fn write_bytes(&self, buffer: &wgpu::Buffer, offset: u64, bytes: &[u8]) {
        if bytes.len() <= PARALLEL_MIN_BYTES {
            self.queue.write_buffer(buffer, offset, bytes);
            return;
        }
        let threads = copy_threads();
        for (i, piece) in bytes.chunks(WRITE_PIECE_BYTES).enumerate() {
            let at = offset + (i * WRITE_PIECE_BYTES) as u64;
            let part = part_bytes(piece.len(), threads);
            std::thread::scope(|scope| {
                for (j, sub) in piece.chunks(part).enumerate() {
                    let sub_at = at + (j * part) as u64;
                    let size = wgpu::BufferSize::new(sub.len() as u64);
                    // `None`: wgpu refused the write and reported why to the error scopes.
                    let view = size.and_then(|s| self.queue.write_buffer_with(buffer, sub_at, s));
                    if let Some(mut view) = view {
                        scope.spawn(move || view.copy_from_slice(sub));
                    }
                }
            });
            self.queue.submit([]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::batch::Batch;
    use crate::gpu::device_buffer::DeviceBuffer;
    use crate::gpu::tests::gpu;

    #[test]
    fn parts_are_aligned_and_cover_a_piece() {
        for len in [4usize, 1 << 20, (64 << 20) - 12, 64 << 20, 5_000_004] {
            for threads in [1usize, 2, 3, 7, 8] {
                let part = part_bytes(len, threads);
                assert_eq!(part % 4, 0, "{len} {threads}");
                assert!(part >= PART_MIN_BYTES);
                assert!(len.div_ceil(part) <= threads.max(1), "{len} {threads}");
            }
        }
    }

    #[test]
    fn writes_of_every_size_land_where_asked() {
        let g = gpu();
        // Past one piece with a partial last part, one part, and a small write; written at
        // an offset into a buffer whose other values stay as they were.
        for len in [(65 << 20) / 4 + 3, (5 << 20) / 4 + 1, 1000] {
            let values: Vec<u32> = (0..len as u32)
                .map(|v| v.wrapping_mul(2_654_435_761))
                .collect();
            let buffer = DeviceBuffer::<u32>::from_slice(&g, "write test", &vec![7; len + 9]);
            g.write_bytes(buffer.raw(), 4 * 5, bytemuck::cast_slice(&values));
            let mut batch = Batch::new(&g, "write test");
            let h = batch.read_all(&buffer);
            let back = batch.finish().unwrap().bytes_as::<u32>(h).to_vec();
            assert_eq!(&back[..5], &[7; 5]);
            assert_eq!(&back[5..5 + len], &values[..], "{len} values");
            assert_eq!(&back[5 + len..], &[7; 4]);
        }
    }
}
