//! The profiler: GPU time per kernel, and the work each dispatch must do, held against the
//! adapter's measured ceilings (a roofline).
//!
//! Turn it on around any work with [`Gpu::profile`] (or [`Gpu::start_profiling`] and
//! [`Gpu::finish_profiling`]); every dispatch this crate records in between is timed and
//! comes back in a [`Profile`]:
//!
//! - **Timestamps** ([`Clock::Timestamps`]): where the device has `TIMESTAMP_QUERY`, each
//!   dispatch's compute pass writes a GPU timestamp at its start and end; the pairs are
//!   resolved with the batch's readback. Nothing else changes: the batch is still one
//!   submission, so the figures are what the kernels cost inside a real fit.
//! - **Wall clock** ([`Clock::WallClock`], the fallback, or asked for): each dispatch is
//!   submitted on its own and waited for. The time includes one submission and wait (tens of
//!   microseconds), which dominates tiny dispatches; clears and copies pending before a
//!   dispatch are submitted first and timed as one entry of their own ([`TRANSFERS`]).
//!
//! Each dispatch also carries its [`Work`]: the FLOPs (a fused multiply-add counts 2) and the
//! bytes of global memory it must move at the least (each input read once, each output
//! written once). Over a kernel's time they give GFLOP/s and GB/s; against
//! [`Ceilings`] they give the *efficiency*, the roofline's bound time over the measured time:
//! `max(flops / peak FLOP/s, bytes / peak B/s) / seconds`. A kernel near 1 is at the
//! adapter's limit; one far below it leaves speed on the table, and whether the bound is
//! compute or memory says which limit applies.
//!
//! Profiling never changes results: the same kernels run on the same data in the same order.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use super::Gpu;
use crate::error::{Error, Result};

/// The name under which wall-clock profiles report clears and copies.
pub const TRANSFERS: &str = "(clears and copies)";

/// Queries per query set: timestamp pairs for 128 dispatches (wgpu allows 4096).
const QUERIES_PER_SET: u32 = 256;

/// The work a dispatch must do at the least.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Work {
    /// Floating-point operations (a fused multiply-add counts as 2).
    pub flops: f64,
    /// Bytes of global memory read plus written: every input once, every output once.
    pub bytes: f64,
}

impl Work {
    /// `flops` operations over `values` 4-byte values read or written.
    pub(crate) fn f32s(flops: f64, values: f64) -> Self {
        Self {
            flops,
            bytes: 4.0 * values,
        }
    }

    /// Which ceiling bounds this work, and the least time it can take under `ceilings`.
    pub fn roofline(&self, ceilings: &Ceilings) -> (Bound, f64) {
        let compute = self.flops / (ceilings.peak_gflops * 1e9);
        let memory = self.bytes / (ceilings.peak_gbps * 1e9);
        if compute >= memory {
            (Bound::Compute, compute)
        } else {
            (Bound::Memory, memory)
        }
    }
}

impl std::ops::Add for Work {
    type Output = Work;
    fn add(self, o: Work) -> Work {
        Work {
            flops: self.flops + o.flops,
            bytes: self.bytes + o.bytes,
        }
    }
}

/// The ceiling that bounds a piece of work on the roofline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Its FLOPs take longer than its bytes at the adapter's peaks.
    Compute,
    /// Its bytes take longer than its FLOPs.
    Memory,
}

impl Bound {
    /// `"compute"` or `"memory"`.
    pub fn name(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
        }
    }
}

/// How dispatch times are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// GPU timestamps around each compute pass.
    Timestamps,
    /// Host wall clock around each dispatch, submitted and waited for alone.
    WallClock,
}

impl Clock {
    /// `"timestamps"` or `"wall-clock"`.
    pub fn name(self) -> &'static str {
        match self {
            Clock::Timestamps => "timestamps",
            Clock::WallClock => "wall-clock",
        }
    }
}

/// One timed dispatch (or, on the wall clock, one group of clears and copies).
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchRecord {
    /// The kernel's entry point (e.g. `assign_nearest_centroid_tiled`), or [`TRANSFERS`].
    pub kernel: &'static str,
    /// Seconds it took.
    pub seconds: f64,
    /// The work it must do.
    pub work: Work,
    /// Workgroups dispatched.
    pub workgroups: u64,
}

/// The dispatches of one kernel summed over a profile.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSummary {
    /// The kernel's entry point.
    pub kernel: &'static str,
    /// Dispatches.
    pub calls: usize,
    /// Seconds in total.
    pub seconds: f64,
    /// Work in total.
    pub work: Work,
}

impl KernelSummary {
    /// Achieved GFLOP/s.
    pub fn gflops(&self) -> f64 {
        rate(self.work.flops, self.seconds)
    }

    /// Achieved GB/s (read plus written).
    pub fn gbps(&self) -> f64 {
        rate(self.work.bytes, self.seconds)
    }

    /// The bound ceiling and the roofline efficiency (bound time over measured time).
    pub fn efficiency(&self, ceilings: &Ceilings) -> (Bound, f64) {
        let (bound, least) = self.work.roofline(ceilings);
        let e = if self.seconds > 0.0 {
            least / self.seconds
        } else {
            0.0
        };
        (bound, e)
    }
}

fn rate(amount: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        amount / seconds / 1e9
    } else {
        0.0
    }
}

/// What the host did with the device during a profile: how often it submitted work, how
/// often it read results back, and how long it sat blocked waiting for them. Beside the
/// kernels' GPU time and the wall time, these say where a fit's wall time went. The GPU is
/// idle for whatever the kernels do not fill. The host is blocked for `wait_seconds`; the
/// part of that not filled by kernels is round-trip latency, submission to mapped result. The
/// rest of the wall time is the host's own work: recording, uploads, host algebra.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HostActivity {
    /// Batches of work submitted to the device's queue.
    pub submissions: usize,
    /// Submissions that brought results back to the host (a staging buffer mapped).
    pub readbacks: usize,
    /// Seconds the host spent blocked until submissions finished and their results mapped.
    pub wait_seconds: f64,
}

/// What the profiler saw between [`Gpu::start_profiling`] and [`Gpu::finish_profiling`].
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// How the times were taken.
    pub clock: Clock,
    /// Every timed dispatch, in recording order.
    pub dispatches: Vec<DispatchRecord>,
    /// Host wall-clock seconds from start to finish (GPU idle time and host work included).
    pub wall_seconds: f64,
    /// The adapter's name.
    pub adapter: String,
    /// Submissions, readbacks and the host's blocked time over the same span.
    pub host: HostActivity,
}

impl Profile {
    /// Per-kernel sums, the most expensive first.
    pub fn kernels(&self) -> Vec<KernelSummary> {
        let mut by_name: BTreeMap<&'static str, KernelSummary> = BTreeMap::new();
        for d in &self.dispatches {
            let s = by_name.entry(d.kernel).or_insert(KernelSummary {
                kernel: d.kernel,
                calls: 0,
                seconds: 0.0,
                work: Work::default(),
            });
            s.calls += 1;
            s.seconds += d.seconds;
            s.work = s.work + d.work;
        }
        let mut v: Vec<_> = by_name.into_values().collect();
        v.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
        v
    }

    /// Seconds of all timed dispatches.
    pub fn gpu_seconds(&self) -> f64 {
        self.dispatches.iter().map(|d| d.seconds).sum()
    }

    /// A human table: one row per kernel with calls, time, share, rates and, given the
    /// ceilings, the bound and the efficiency.
    pub fn table(&self, ceilings: Option<&Ceilings>) -> String {
        use std::fmt::Write;
        let total = self.gpu_seconds();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<40} {:>6} {:>10} {:>6} {:>9} {:>9} {:>8} {:>6}",
            "kernel", "calls", "ms", "share", "GFLOP/s", "GB/s", "bound", "eff."
        );
        for k in self.kernels() {
            let (bound, eff) = match ceilings {
                Some(c) => {
                    let (b, e) = k.efficiency(c);
                    (b.name(), format!("{:.1}%", 100.0 * e))
                }
                None => ("-", "-".into()),
            };
            let _ = writeln!(
                s,
                "{:<40} {:>6} {:>10.3} {:>5.1}% {:>9.2} {:>9.2} {:>8} {:>6}",
                k.kernel,
                k.calls,
                1e3 * k.seconds,
                100.0 * k.seconds / total.max(f64::MIN_POSITIVE),
                k.gflops(),
                k.gbps(),
                bound,
                eff
            );
        }
        let _ = writeln!(
            s,
            "GPU {:.3} ms of {:.3} ms wall ({}, {})",
            1e3 * total,
            1e3 * self.wall_seconds,
            self.clock.name(),
            self.adapter
        );
        let _ = writeln!(
            s,
            "host: {} submissions, {} readbacks, blocked {:.3} ms",
            self.host.submissions,
            self.host.readbacks,
            1e3 * self.host.wait_seconds
        );
        s
    }
}

/// Which clock to profile with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProfileClock {
    /// Timestamps where the device has them, else the wall clock.
    #[default]
    Auto,
    /// The wall clock, even where timestamps exist.
    WallClock,
}

/// The per-device profiler state (off unless a profile is running).
#[derive(Default)]
pub(crate) struct Profiler {
    running: Mutex<Option<Running>>,
}

struct Running {
    clock: Clock,
    started: Instant,
    records: Vec<DispatchRecord>,
    host: HostActivity,
}

impl Gpu {
    /// Whether dispatches can be timed with GPU timestamps on this device (it has
    /// `wgpu::Features::TIMESTAMP_QUERY`; [`Gpu::new`] asks for it wherever the adapter
    /// offers it, a device given to [`Gpu::from_wgpu`] has it if its owner asked).
    pub fn supports_timestamps(&self) -> bool {
        self.device
            .features()
            .contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// Starts timing every dispatch on this device. Errors if a profile is already running.
    pub fn start_profiling(&self, clock: ProfileClock) -> Result<()> {
        let mut running = self.profiler.running.lock().unwrap();
        if running.is_some() {
            return Err(Error::Gpu(
                "a profile is already running on this device".into(),
            ));
        }
        let clock = match clock {
            ProfileClock::Auto if self.supports_timestamps() => Clock::Timestamps,
            _ => Clock::WallClock,
        };
        *running = Some(Running {
            clock,
            started: Instant::now(),
            records: Vec::new(),
            host: HostActivity::default(),
        });
        Ok(())
    }

    /// Stops profiling and returns what was timed. Errors if no profile was running.
    pub fn finish_profiling(&self) -> Result<Profile> {
        let Some(r) = self.profiler.running.lock().unwrap().take() else {
            return Err(Error::Gpu("no profile is running on this device".into()));
        };
        Ok(Profile {
            clock: r.clock,
            dispatches: r.records,
            wall_seconds: r.started.elapsed().as_secs_f64(),
            adapter: self.info().name.clone(),
            host: r.host,
        })
    }

    /// Runs `work` with profiling on and returns its result with the profile. The profile
    /// ends even when `work` fails.
    pub fn profile<R>(
        &self,
        clock: ProfileClock,
        work: impl FnOnce() -> Result<R>,
    ) -> Result<(R, Profile)> {
        self.start_profiling(clock)?;
        let result = work();
        let profile = self.finish_profiling()?;
        Ok((result?, profile))
    }

    /// The clock of the running profile, if any.
    pub(crate) fn profiling_clock(&self) -> Option<Clock> {
        self.profiler
            .running
            .lock()
            .unwrap()
            .as_ref()
            .map(|r| r.clock)
    }

    pub(crate) fn record_dispatches(&self, records: impl IntoIterator<Item = DispatchRecord>) {
        if let Some(r) = self.profiler.running.lock().unwrap().as_mut() {
            r.records.extend(records);
        }
    }

    /// Counts a submission (and a readback when it maps results) in the running profile.
    pub(crate) fn record_submission(&self, reads_back: bool) {
        if let Some(r) = self.profiler.running.lock().unwrap().as_mut() {
            r.host.submissions += 1;
            r.host.readbacks += usize::from(reads_back);
        }
    }

    /// Adds `seconds` the host spent blocked on the device to the running profile.
    pub(crate) fn record_wait(&self, seconds: f64) {
        if let Some(r) = self.profiler.running.lock().unwrap().as_mut() {
            r.host.wait_seconds += seconds;
        }
    }
}

/// A batch's timestamp queries: two per dispatch, in sets made as they are needed.
pub(crate) struct TimestampQueries {
    sets: Vec<wgpu::QuerySet>,
    pending: Vec<(&'static str, Work, u64)>,
}

impl TimestampQueries {
    pub(crate) fn new() -> Self {
        Self {
            sets: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// The timestamp writes for the next dispatch's compute pass.
    pub(crate) fn next(
        &mut self,
        device: &wgpu::Device,
        kernel: &'static str,
        work: Work,
        workgroups: u64,
    ) -> wgpu::ComputePassTimestampWrites<'_> {
        let first = (2 * self.pending.len() as u32) % QUERIES_PER_SET;
        if first == 0 {
            self.sets
                .push(device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("profile timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: QUERIES_PER_SET,
                }));
        }
        self.pending.push((kernel, work, workgroups));
        wgpu::ComputePassTimestampWrites {
            query_set: self.sets.last().expect("a set was just ensured"),
            beginning_of_pass_write_index: Some(first),
            end_of_pass_write_index: Some(first + 1),
        }
    }

    /// Resolves every query into one buffer (`None` when nothing was timed).
    pub(crate) fn resolve(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Option<(wgpu::Buffer, u64)> {
        if self.pending.is_empty() {
            return None;
        }
        let set_bytes = 8 * QUERIES_PER_SET as u64;
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("profile timestamps"),
            size: set_bytes * self.sets.len() as u64,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut left = 2 * self.pending.len() as u32;
        for (i, set) in self.sets.iter().enumerate() {
            let used = left.min(QUERIES_PER_SET);
            encoder.resolve_query_set(set, 0..used, &buffer, i as u64 * set_bytes);
            left -= used;
        }
        Some((buffer, 16 * self.pending.len() as u64))
    }

    /// The records, from the resolved ticks and the queue's nanoseconds per tick.
    pub(crate) fn records(&self, ticks: &[u64], period_ns: f32) -> Vec<DispatchRecord> {
        self.pending
            .iter()
            .enumerate()
            .map(|(i, &(kernel, work, workgroups))| {
                let (start, end) = (ticks[2 * i], ticks[2 * i + 1]);
                DispatchRecord {
                    kernel,
                    seconds: end.saturating_sub(start) as f64 * period_ns as f64 * 1e-9,
                    work,
                    workgroups,
                }
            })
            .collect()
    }
}

/// The measured ceilings of one adapter: what [`Gpu::measure_ceilings`](crate::Gpu::measure_ceilings)
/// returns (module `ceilings`) and what a profile is held against.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Ceilings {
    /// FMA throughput in GFLOP/s (10^9 FLOPs per second, an FMA counted as 2 FLOPs).
    pub peak_gflops: f64,
    /// Copy bandwidth in GB/s (10^9 bytes per second, bytes read plus bytes written).
    pub peak_gbps: f64,
    /// Seconds of the fastest FMA dispatch (see `timing`).
    pub fma_seconds: f64,
    /// Seconds of the fastest copy dispatch (see `timing`).
    pub copy_seconds: f64,
    /// FLOPs of one FMA dispatch.
    pub flops: u64,
    /// Bytes read and written by one copy dispatch (twice `buffer_bytes`).
    pub bytes: u64,
    /// Size of each of the two copy buffers, in bytes.
    pub buffer_bytes: u64,
    /// Invocations of one FMA dispatch.
    pub fma_invocations: u64,
    /// How the dispatches were timed: `"timestamps"` (GPU timestamps around each dispatch)
    /// or `"wall-clock"` (submit and wait per dispatch, where the device has no timestamps).
    pub timing: String,
    /// Name of the adapter measured.
    pub adapter: String,
}
