//! What comes back from the device: the bytes a [`Batch`](super::batch::Batch) read
//! ([`Readback`]), and a submitted batch whose bytes are still on their way
//! ([`PendingReadback`]), the one place the host blocks on the device's results.

use bytemuck::Pod;

use super::context::Gpu;
use super::profile::{DispatchRecord, TimestampQueries};
use crate::error::{Error, Result};

/// A handle to bytes requested with [`Batch::read`](super::batch::Batch::read).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadHandle(pub(super) usize);

/// Bytes read back by [`Batch::finish`](super::batch::Batch::finish).
#[derive(Debug, Default)]
pub(crate) struct Readback {
    pub(super) parts: Vec<Vec<u8>>,
}

impl Readback {
    pub(crate) fn bytes_as<T: Pod>(&self, h: ReadHandle) -> Vec<T> {
        bytemuck::pod_collect_to_vec(&self.parts[h.0])
    }

    pub(crate) fn f32s(&self, h: ReadHandle) -> Vec<f32> {
        bytemuck::pod_collect_to_vec(&self.parts[h.0])
    }

    pub(crate) fn u32s(&self, h: ReadHandle) -> Vec<u32> {
        bytemuck::pod_collect_to_vec(&self.parts[h.0])
    }
}

/// A submitted [`Batch`](super::batch::Batch) whose reads have not come back yet
/// ([`Batch::submit`](super::batch::Batch::submit)).
pub(crate) struct PendingReadback<'g> {
    pub(super) gpu: &'g Gpu,
    pub(super) submission: wgpu::SubmissionIndex,
    pub(super) staging: Option<(wgpu::Buffer, MapReceiver)>,
    pub(super) sizes: Vec<usize>,
    /// The read holding the timestamps, and the queries that name them.
    pub(super) timestamps: Option<(ReadHandle, TimestampQueries)>,
}

/// Where a staging buffer's mapping reports back.
pub(super) type MapReceiver = futures_intrusive::channel::shared::OneshotReceiver<MapResult>;
type MapResult = std::result::Result<(), wgpu::BufferAsyncError>;

impl PendingReadback<'_> {
    /// Waits for the submission and returns the bytes (timestamps to the running profile).
    pub(crate) fn wait(self) -> Result<Readback> {
        let gpu = self.gpu;
        let (back, records) = self.wait_with_records()?;
        gpu.record_dispatches(records);
        Ok(back)
    }

    /// [`PendingReadback::wait`], with the timestamped dispatches' records returned. The
    /// time the host spends blocked here goes to the running profile
    /// ([`HostActivity::wait_seconds`](super::profile::HostActivity::wait_seconds)).
    pub(crate) fn wait_with_records(self) -> Result<(Readback, Vec<DispatchRecord>)> {
        let (gpu, began) = (self.gpu, std::time::Instant::now());
        let out = self.wait_blocking();
        gpu.record_wait(began.elapsed().as_secs_f64());
        out
    }

    fn wait_blocking(self) -> Result<(Readback, Vec<DispatchRecord>)> {
        let polled = self.gpu.device.poll(wgpu::PollType::Wait {
            submission_index: Some(self.submission),
            timeout: None,
        });
        self.gpu.check_alive()?;
        if let Err(e) = polled {
            return Err(Error::Gpu(format!("waiting for the GPU: {e}")));
        }
        let Some((staging, rx)) = self.staging else {
            return Ok((Readback::default(), Vec::new()));
        };
        match pollster::block_on(rx.receive()) {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(Error::Gpu(format!("mapping the readback: {e}"))),
            None => return Err(Error::Gpu("readback was dropped".into())),
        }
        let mut parts = Vec::with_capacity(self.sizes.len());
        {
            let view = staging
                .slice(..)
                .get_mapped_range()
                .map_err(|e| Error::Gpu(format!("reading the mapped range: {e}")))?;
            let mut at = 0usize;
            for size in &self.sizes {
                parts.push(view[at..at + size].to_vec());
                at += size;
            }
        }
        staging.unmap();
        let mut back = Readback { parts };
        let mut records = Vec::new();
        if let Some((h, queries)) = self.timestamps {
            let ticks: Vec<u64> = back.bytes_as(h);
            back.parts.pop();
            let period = self.gpu.queue.get_timestamp_period();
            records = queries.records(&ticks, period);
        }
        Ok((back, records))
    }
}
