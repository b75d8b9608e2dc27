//! Per-dispatch parameters without a buffer per dispatch.
//!
//! Each dispatch's parameter struct takes a slot in a *page*, a uniform buffer of
//! [`PAGE_BYTES`] that a [`Batch`](super::batch::Batch) holds while it records; slots are
//! aligned to the device's `min_uniform_buffer_offset_alignment` and bound at their offset.
//! The parameters are gathered on the host and written with one `queue.write_buffer` per page
//! just before the batch is submitted. Pages then go back to a per-device pool for the next
//! batch: a queue write is ordered after every earlier submission, so the work that read a
//! page's old values has them. In steady state a dispatch creates no buffer at all.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Bytes per page: 256 slots at the common 256-byte alignment.
pub(crate) const PAGE_BYTES: u64 = 64 << 10;

/// The per-device pool of pages not held by a batch.
#[derive(Default)]
pub(crate) struct PagePool {
    free: Mutex<Vec<wgpu::Buffer>>,
    created: AtomicUsize,
}

impl PagePool {
    /// Pages created on this device so far (a test bounds it).
    #[cfg(test)]
    pub(crate) fn created(&self) -> usize {
        self.created.load(Ordering::Relaxed)
    }

    fn take(&self, device: &wgpu::Device) -> wgpu::Buffer {
        if let Some(page) = self.free.lock().unwrap().pop() {
            return page;
        }
        self.created.fetch_add(1, Ordering::Relaxed);
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("dispatch parameters"),
            size: PAGE_BYTES,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }
}

struct Page {
    buffer: wgpu::Buffer,
    /// The slots written so far, padding included.
    bytes: Vec<u8>,
}

/// The pages of one batch; they go back to the pool when it is dropped, unless the batch
/// recorded into a caller's encoder (see [`Uniforms::detached`]).
pub(crate) struct Uniforms<'g> {
    pool: &'g PagePool,
    device: &'g wgpu::Device,
    align: usize,
    pages: Vec<Page>,
    /// The pages stay out of the pool: the caller submits the commands that read them
    /// later, and a pooled page could be overwritten by another batch's queue write first.
    detached: bool,
}

impl<'g> Uniforms<'g> {
    pub(crate) fn new(pool: &'g PagePool, device: &'g wgpu::Device) -> Self {
        let align = device.limits().min_uniform_buffer_offset_alignment.max(4) as usize;
        Self {
            pool,
            device,
            align,
            pages: Vec::new(),
            detached: false,
        }
    }

    /// Pages of their own, never returned to the pool (for work recorded into a caller's
    /// encoder; wgpu keeps them alive while the recorded commands need them).
    pub(crate) fn detached(pool: &'g PagePool, device: &'g wgpu::Device) -> Self {
        let mut uniforms = Self::new(pool, device);
        uniforms.detached = true;
        uniforms
    }

    /// A slot holding `params`: the page and the byte offset to bind.
    pub(crate) fn push(&mut self, params: &[u8]) -> (wgpu::Buffer, u64) {
        let fits = |p: &Page| p.bytes.len().next_multiple_of(self.align) + params.len();
        if self
            .pages
            .last()
            .is_none_or(|p| fits(p) as u64 > PAGE_BYTES)
        {
            self.pages.push(Page {
                buffer: self.pool.take(self.device),
                bytes: Vec::new(),
            });
        }
        let align = self.align;
        let page = self.pages.last_mut().expect("a page was just ensured");
        let offset = page.bytes.len().next_multiple_of(align);
        page.bytes.resize(offset, 0);
        page.bytes.extend_from_slice(params);
        (page.buffer.clone(), offset as u64)
    }

    /// Writes every page's slots to the device; call it before submitting the batch.
    pub(crate) fn flush(&self, queue: &wgpu::Queue) {
        for page in &self.pages {
            queue.write_buffer(&page.buffer, 0, &page.bytes);
        }
    }
}

impl Drop for Uniforms<'_> {
    fn drop(&mut self) {
        if self.detached {
            return;
        }
        let mut free = self.pool.free.lock().unwrap();
        free.extend(self.pages.drain(..).map(|p| p.buffer));
    }
}
