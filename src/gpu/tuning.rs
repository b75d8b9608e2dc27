//! The autotuner: where a kernel has variants that compute the same bits in different shapes
//! (say, a tiled one with workgroup memory and barriers, and a barrier-free one), the host
//! times each on the real data on first use and keeps the fastest for this device and shape
//! class.
//!
//! Shape alone cannot decide: a discrete GPU rewards tiles in workgroup memory, while a
//! CPU-like adapter (lavapipe: lanes are SIMD, each barrier a coroutine switch, workgroup
//! memory ordinary memory) runs the barrier-free variant faster. The trials run on a bounded
//! slice of the data, outside any profile, once per key; variants give identical results, so
//! the choice changes speed only and the same seed on the same adapter still gives the same
//! bits whichever wins.

use std::collections::HashMap;
use std::sync::Mutex;

use std::time::Instant;

use super::batch::Batch;
use super::device_buffer::DeviceBuffer;
use super::Gpu;
use crate::error::Result;

/// Timed runs of each candidate after its warm-up run; the fastest counts.
const TRIALS: usize = 2;

/// What a choice is made for: a kernel family and a shape class (sizes rounded up to powers
/// of two, so a handful of trials covers every shape).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct TuneKey {
    pub kernel: &'static str,
    pub class: [u32; 2],
}

impl TuneKey {
    pub(crate) fn new(kernel: &'static str, a: usize, b: usize) -> Self {
        let class = |v: usize| v.max(1).next_power_of_two().min(1 << 31) as u32;
        Self {
            kernel,
            class: [class(a), class(b)],
        }
    }
}

/// The per-device choices made so far.
#[derive(Default)]
pub(crate) struct Tuner {
    choices: Mutex<HashMap<TuneKey, &'static str>>,
}

impl Gpu {
    /// The choice already made for `key`, if any: wrappers look before they allocate the
    /// trial's scratch buffers, so a cached choice costs nothing per dispatch.
    pub(crate) fn tuned_choice(&self, key: &TuneKey) -> Option<&'static str> {
        self.tuner.choices.lock().unwrap().get(key).copied()
    }

    /// The variant of `candidates` to use for `key`: the cached choice, or the fastest by
    /// `time` (seconds of one run of a candidate), measured now and cached.
    pub(crate) fn tuned(
        &self,
        key: TuneKey,
        candidates: &[&'static str],
        mut time: impl FnMut(&'static str) -> Result<f64>,
    ) -> Result<&'static str> {
        if let Some(c) = self.tuned_choice(&key) {
            return Ok(c);
        }
        let mut best = (f64::INFINITY, candidates[0]);
        for &c in candidates {
            time(c)?;
            let mut t = f64::INFINITY;
            for _ in 0..TRIALS {
                t = t.min(time(c)?);
            }
            if t < best.0 {
                best = (t, c);
            }
        }
        self.tuner.choices.lock().unwrap().insert(key, best.1);
        Ok(best.1)
    }

    /// Seconds of one trial: what `record` records, submitted alone (outside any profile) and
    /// waited for by reading the first value of `written` back.
    pub(crate) fn time_trial<T: bytemuck::Pod>(
        &self,
        record: impl FnOnce(&mut Batch<'_>) -> Result<()>,
        written: &DeviceBuffer<T>,
    ) -> Result<f64> {
        let mut batch = Batch::untimed(self, "autotuner trial");
        record(&mut batch)?;
        batch.read_values(written, 0, 1);
        let start = Instant::now();
        batch.finish()?;
        Ok(start.elapsed().as_secs_f64())
    }

    /// The autotuner's choices on this device so far: (kernel, shape class, variant), sorted.
    /// Reported by `wgpu-unsupervised bench` so that figures say which variant ran.
    pub fn tuning_choices(&self) -> Vec<(String, String, String)> {
        let mut v: Vec<_> = self
            .tuner
            .choices
            .lock()
            .unwrap()
            .iter()
            .map(|(k, c)| {
                (
                    k.kernel.to_string(),
                    format!("{}x{}", k.class[0], k.class[1]),
                    c.to_string(),
                )
            })
            .collect();
        v.sort();
        v
    }
}
