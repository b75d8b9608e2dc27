//! The autotuner: where a kernel has variants that compute the same bits in different shapes
//! (say, a tiled one with workgroup memory and barriers, and a barrier-free one), the host
//! times each on the real data on first use and keeps the fastest for this device and shape
//! class.
//!
//! Shape alone cannot decide: a discrete GPU rewards tiles in workgroup memory, while a
//! CPU-like adapter (lavapipe: lanes are SIMD, each barrier a coroutine switch, workgroup
//! memory ordinary memory) runs the barrier-free variant faster. The trials run on a bounded
//! slice of the data, outside any profile, once per key. Variants give identical results
//! (tested variant by variant), so the choice changes speed only: the same seed on the same
//! adapter gives the same bits whichever variant wins, whether it was timed now or read from
//! the cache below.
//!
//! # Clock
//!
//! Where the device has `TIMESTAMP_QUERY` ([`Gpu::supports_timestamps`]), a trial is timed by
//! GPU timestamps around each of its compute passes, the profiler's clock: on a fast GPU the
//! wall clock around a submission measures the submission and the wait, not the kernel.
//! Elsewhere (or where the driver's timestamps read zero) the wall clock around the trial's
//! submission and readback decides.
//!
//! # The cache
//!
//! Choices are kept across processes in one small text file per adapter and driver,
//! `tuning-<hash>.txt`, whose first lines name the crate version and the adapter (name,
//! backend, driver and driver info, vendor and device ids). The directory is, first match
//! wins:
//!
//! 1. the one given with [`Gpu::set_tuning_cache`] ([`TuningCache::Directory`], or
//!    [`TuningCache::Off`] for none);
//! 2. `$WGPU_UNSUPERVISED_TUNING_CACHE` (a directory; `off` keeps nothing);
//! 3. the platform's cache directory under `wgpu-unsupervised/`: `$XDG_CACHE_HOME` or
//!    `$HOME/.cache` on Linux and other Unixes, `~/Library/Caches` on macOS,
//!    `%LOCALAPPDATA%` on Windows.
//!
//! [`Gpu::tuning_cache_file`] names the file in use. A file that is absent, unreadable,
//! corrupt or stale (another crate version, adapter or driver) is ignored, and the next choice
//! rewrites it; a choice that names a variant the kernel no longer offers is timed again.
//! Writes go to a temporary file in the same directory, renamed over the old one, so a reader
//! never sees half a file; a failed write costs only a re-timing in the next process. None of
//! this is ever an error. A device wrapped with [`Gpu::from_wgpu`] without its adapter's
//! description has no key and keeps nothing.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use std::time::Instant;

use super::batch::Batch;
use super::device_buffer::DeviceBuffer;
use super::shaders::EntryPoint;
use super::tuning_cache::{self, Stored};
use super::Gpu;
use crate::error::{Error, Result};

/// Timed runs of each candidate after its warm-up run; the fastest counts.
const TRIALS: usize = 2;

/// Where the autotuner keeps its choices across processes ([`Gpu::set_tuning_cache`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TuningCache {
    /// `$WGPU_UNSUPERVISED_TUNING_CACHE` if set (`off`: nowhere), else the platform's cache
    /// directory under `wgpu-unsupervised/` (see the [module docs](self)).
    #[default]
    Default,
    /// This directory (made when the first choice is written).
    Directory(PathBuf),
    /// Nowhere: every process times its own trials.
    Off,
}

/// The variants of a kernel family among which the autotuner chooses: one typed value per
/// family (an enum, or the entry points of a shader), each with a stable name. The cache file
/// keeps names, so a variant that is renamed or removed is simply timed again.
pub(crate) trait Variant: Copy + PartialEq + 'static {
    /// The family, in keys, reports and the cache file.
    const FAMILY: &'static str;
    /// This variant's name, unique within its family.
    fn name(self) -> &'static str;
}

/// The kernels of a shader as variants of each other (the E-step's and M-step's storage
/// kernels and their uniform-slice twins).
impl Variant for &'static EntryPoint {
    const FAMILY: &'static str = "entry point";
    fn name(self) -> &'static str {
        self.name
    }
}

/// What a choice is made for: a family, the candidates it chose among (so that two uses of
/// one family with different candidates keep separate choices), and a shape class (sizes
/// rounded up to powers of two, so a handful of trials covers every shape).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct TuneKey {
    pub family: &'static str,
    pub candidates: Vec<&'static str>,
    pub class: [u32; 2],
}

impl TuneKey {
    /// The key of a choice among `candidates` for a shape of `a` x `b`.
    pub(crate) fn new<V: Variant>(candidates: &[V], a: usize, b: usize) -> Self {
        let class = |v: usize| v.max(1).next_power_of_two().min(1 << 31) as u32;
        Self {
            family: V::FAMILY,
            candidates: candidates.iter().map(|c| c.name()).collect(),
            class: [class(a), class(b)],
        }
    }

    /// The family and candidates as one label (`assign [a|b|c]`).
    pub(crate) fn label(&self) -> String {
        format!("{} [{}]", self.family, self.candidates.join("|"))
    }
}

/// One candidate's time in one of the autotuner's trials on this device
/// ([`Gpu::tuning_trials`]): what a choice was made from.
#[derive(Debug, Clone, PartialEq)]
pub struct TuningTrial {
    /// The kernel family and its candidates (`assign [assign_stream|assign_tiled 128x128|…]`),
    /// as [`Gpu::tuning_choices`] names them.
    pub family: String,
    /// The shape class (each edge rounded up to a power of two).
    pub class: [u32; 2],
    /// The candidate timed.
    pub variant: &'static str,
    /// The best of its timed runs on the trial's rows, in seconds (GPU timestamps where the
    /// device has them, else the wall clock around the submission).
    pub seconds: f64,
    /// Whether it was chosen.
    pub chosen: bool,
}

/// The per-device choices made or used so far, and the cache file behind them.
pub(crate) struct Tuner {
    choices: Mutex<HashMap<TuneKey, &'static str>>,
    /// Every candidate timed by this process, in the order the trials ran.
    trials: Mutex<Vec<TuningTrial>>,
    /// The adapter's key in the cache file; `None` for a device of unknown adapter.
    identity: Option<String>,
    file: Mutex<FileState>,
}

/// Where the cache lives and, once read, what it held.
#[derive(Default)]
struct FileState {
    location: TuningCache,
    loaded: Option<Stored>,
}

impl Tuner {
    /// A tuner for a device of the adapter `adapter` describes (`None`: unknown, no cache).
    pub(crate) fn new(adapter: Option<&wgpu::AdapterInfo>) -> Self {
        Self {
            choices: Mutex::default(),
            trials: Mutex::default(),
            identity: adapter.map(tuning_cache::identity),
            file: Mutex::default(),
        }
    }

    /// The cache file, if one is to be used.
    fn path(&self, location: &TuningCache) -> Option<PathBuf> {
        let identity = self.identity.as_deref()?;
        let dir = match location {
            TuningCache::Off => return None,
            TuningCache::Directory(dir) => dir.clone(),
            TuningCache::Default => tuning_cache::default_dir()?,
        };
        Some(dir.join(tuning_cache::file_name(identity)))
    }

    /// The stored choice for `key` among its candidates, reading the file on first use.
    fn stored(&self, key: &TuneKey) -> Option<&'static str> {
        let identity = self.identity.as_deref()?;
        let mut file = self.file.lock().unwrap();
        if file.loaded.is_none() {
            let read = self
                .path(&file.location)
                .and_then(|p| tuning_cache::read(&p, identity));
            file.loaded = Some(read.unwrap_or_default());
        }
        let name = file.loaded.as_ref()?.get(&tuning_cache::entry_key(key))?;
        key.candidates.iter().copied().find(|c| c == name)
    }

    /// Keeps a new choice in the file (merged with what another process may have written
    /// since); failures are reported as a `tracing` debug event and otherwise ignored.
    fn store(&self, key: &TuneKey, choice: &'static str) {
        let Some(identity) = self.identity.as_deref() else {
            return;
        };
        let mut file = self.file.lock().unwrap();
        let Some(path) = self.path(&file.location) else {
            return;
        };
        let mut stored = tuning_cache::read(&path, identity).unwrap_or_default();
        stored.insert(tuning_cache::entry_key(key), choice.to_string());
        if let Err(e) = tuning_cache::write(&path, identity, &stored) {
            tracing::debug!(
                target: "wgpu_unsupervised::tuning",
                path = %path.display(),
                error = %e,
                "the tuning cache was not written"
            );
        }
        file.loaded = Some(stored);
    }
}

impl Gpu {
    /// Where the autotuner keeps its choices across processes (see [`TuningCache`]). Choices
    /// already made in this process stay; the new location is read at the next new key.
    pub fn set_tuning_cache(&self, cache: TuningCache) {
        let mut file = self.tuner.file.lock().unwrap();
        file.location = cache;
        file.loaded = None;
    }

    /// The autotuner's cache file on this device, for the location set with
    /// [`Gpu::set_tuning_cache`] (by default, the environment's): `None` when choices are
    /// kept nowhere (`off`, no cache directory known, or a device of unknown adapter). The
    /// file need not exist yet.
    pub fn tuning_cache_file(&self) -> Option<PathBuf> {
        let file = self.tuner.file.lock().unwrap();
        self.tuner.path(&file.location)
    }

    /// The choice already made among `candidates` for a shape of `a` x `b`, in this process
    /// or stored in the cache file by an earlier one: wrappers look before they allocate the
    /// trial's scratch buffers, so a known choice costs nothing per dispatch.
    pub(crate) fn tuned_choice<V: Variant>(
        &self,
        candidates: &[V],
        (a, b): (usize, usize),
    ) -> Option<V> {
        let key = TuneKey::new(candidates, a, b);
        // The lock is released before the file is read and the choice kept.
        let known = self.tuner.choices.lock().unwrap().get(&key).copied();
        let name = match known {
            Some(c) => c,
            None => {
                let c = self.tuner.stored(&key)?;
                self.tuner.choices.lock().unwrap().insert(key, c);
                c
            }
        };
        candidates.iter().copied().find(|c| c.name() == name)
    }

    /// The variant of `candidates` to use for a shape of `a` x `b`: the known choice, or the
    /// fastest by `time` (seconds of one run of a candidate), measured now, kept and stored.
    ///
    /// Errors: no candidates ([`Error::Gpu`], a family that offers none for this shape
    /// should have said why before), and `time`'s.
    pub(crate) fn tuned<V: Variant>(
        &self,
        candidates: &[V],
        (a, b): (usize, usize),
        mut time: impl FnMut(V) -> Result<f64>,
    ) -> Result<V> {
        if let Some(c) = self.tuned_choice(candidates, (a, b)) {
            return Ok(c);
        }
        let Some(&first) = candidates.first() else {
            return Err(Error::Gpu(format!(
                "no {} variant runs a shape of {a} x {b} on this adapter",
                V::FAMILY
            )));
        };
        let mut best = (f64::INFINITY, first);
        let mut times = Vec::with_capacity(candidates.len());
        for &c in candidates {
            time(c)?;
            let mut t = f64::INFINITY;
            for _ in 0..TRIALS {
                t = t.min(time(c)?);
            }
            if t < best.0 {
                best = (t, c);
            }
            times.push((c.name(), t));
        }
        let key = TuneKey::new(candidates, a, b);
        self.tuner
            .trials
            .lock()
            .unwrap()
            .extend(times.into_iter().map(|(variant, seconds)| TuningTrial {
                family: key.label(),
                class: key.class,
                variant,
                seconds,
                chosen: variant == best.1.name(),
            }));
        self.tuner
            .choices
            .lock()
            .unwrap()
            .insert(key.clone(), best.1.name());
        self.tuner.store(&key, best.1.name());
        Ok(best.1)
    }

    /// Seconds of one trial: what `record` records, submitted alone (outside any profile) and
    /// waited for by reading the first value of `written` back. The GPU time of its passes
    /// where the device has timestamps, else the wall clock around the submission.
    pub(crate) fn time_trial<T: bytemuck::Pod>(
        &self,
        record: impl FnOnce(&mut Batch<'_>) -> Result<()>,
        written: &DeviceBuffer<T>,
    ) -> Result<f64> {
        let mut batch = Batch::timestamped(self, "autotuner trial");
        record(&mut batch)?;
        batch.read_values(written, 0, 1);
        let start = Instant::now();
        let (_, records) = batch.finish_with_records()?;
        let wall = start.elapsed().as_secs_f64();
        let gpu: f64 = records.iter().map(|r| r.seconds).sum();
        // A driver that writes no ticks reads zero for every variant: no choice at all.
        Ok(if gpu > 0.0 { gpu } else { wall })
    }

    /// Every candidate the autotuner timed in this process, with its time, in the order the
    /// trials ran: each choice with what it was chosen from (choices read from the cache file
    /// ran no trial here). `wgpu-unsupervised bench` reports them, so a benchmark run on a
    /// GPU shows every variant's time at its shapes, not only the winner's.
    pub fn tuning_trials(&self) -> Vec<TuningTrial> {
        self.tuner.trials.lock().unwrap().clone()
    }

    /// The autotuner's choices on this device so far: (family and candidates, shape class,
    /// variant), sorted.
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
                    k.label(),
                    format!("{}x{}", k.class[0], k.class[1]),
                    c.to_string(),
                )
            })
            .collect();
        v.sort();
        v
    }
}
