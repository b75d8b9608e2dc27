//! [`DeviceBuffer`]: a storage buffer that knows its element type and length.
//!
//! The workspaces of the algorithms and the kernel wrappers hold these rather than raw
//! `wgpu::Buffer`s, so a buffer's size, usage and label are decided in one place (its
//! constructor), and writes, reads and clears take their byte counts from the buffer itself
//! instead of recomputing `n_blocks * k * 8` at every use.

use std::marker::PhantomData;

use bytemuck::Pod;

use super::batch::{Batch, Bind, ReadHandle};
use super::context::Gpu;

/// A storage buffer of `len` values of `T` (usage `STORAGE | COPY_SRC | COPY_DST`), at least
/// 4 bytes so that it can always be bound.
#[derive(Debug, Clone)]
pub(crate) struct DeviceBuffer<T: Pod> {
    buffer: wgpu::Buffer,
    len: usize,
    _values: PhantomData<T>,
}

impl<T: Pod> DeviceBuffer<T> {
    /// `len` zeroed values.
    pub(crate) fn zeroed(gpu: &Gpu, label: &str, len: usize) -> Self {
        let bytes = (len as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        Self {
            buffer: gpu.buffer_zeroed(label, bytes),
            len,
            _values: PhantomData,
        }
    }

    /// A buffer holding `values`.
    pub(crate) fn from_slice(gpu: &Gpu, label: &str, values: &[T]) -> Self {
        Self {
            buffer: gpu.buffer_from(label, values, wgpu::BufferUsages::empty()),
            len: values.len(),
            _values: PhantomData,
        }
    }

    /// Number of values.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes of `count` values.
    fn bytes(count: usize) -> u64 {
        (count * std::mem::size_of::<T>()) as u64
    }

    /// Writes `values` from value `first` on (through the queue, before the next submission;
    /// large writes in pieces, [`Gpu::write_bytes`]).
    pub(crate) fn write_at(&self, gpu: &Gpu, first: usize, values: &[T]) {
        debug_assert!(
            first + values.len() <= self.len,
            "writing values {first}..{} of a buffer of {}",
            first + values.len(),
            self.len
        );
        if !values.is_empty() {
            gpu.write_bytes(
                &self.buffer,
                Self::bytes(first),
                bytemuck::cast_slice(values),
            );
        }
    }

    /// Writes `values` from the first value on.
    pub(crate) fn write(&self, gpu: &Gpu, values: &[T]) {
        self.write_at(gpu, 0, values);
    }

    /// Reads the first value back (a counter, a flag).
    pub(crate) fn to_host_first(&self, gpu: &Gpu) -> crate::error::Result<T> {
        gpu.scoped("reading a value back", || {
            let mut batch = Batch::new(gpu, "DeviceBuffer::to_host_first");
            let h = batch.read_values(self, 0, 1);
            Ok(batch.finish()?.bytes_as::<T>(h)[0])
        })
    }

    /// The whole buffer as a binding.
    pub(crate) fn bind(&self) -> Bind<'_> {
        Bind::Whole(&self.buffer)
    }

    /// The wgpu buffer, for copies and for the public views ([`GpuVector`](super::GpuVector)).
    pub(crate) fn raw(&self) -> &wgpu::Buffer {
        &self.buffer
    }
}

impl Batch<'_> {
    /// Zeroes every value of `buffer`.
    pub(crate) fn clear_values<T: Pod>(&mut self, buffer: &DeviceBuffer<T>) {
        self.clear(buffer.raw());
    }

    /// Asks for values `first .. first + count` of `buffer` to come back with
    /// [`Batch::finish`].
    pub(crate) fn read_values<T: Pod>(
        &mut self,
        buffer: &DeviceBuffer<T>,
        first: usize,
        count: usize,
    ) -> ReadHandle {
        debug_assert!(first + count <= buffer.len());
        self.read(
            buffer.raw(),
            DeviceBuffer::<T>::bytes(first),
            DeviceBuffer::<T>::bytes(count),
        )
    }

    /// Asks for every value of `buffer`.
    pub(crate) fn read_all<T: Pod>(&mut self, buffer: &DeviceBuffer<T>) -> ReadHandle {
        self.read_values(buffer, 0, buffer.len())
    }
}
