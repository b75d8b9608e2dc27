//! Ceilings: the FMA throughput and memory bandwidth this adapter reaches, measured by two
//! WGSL probes (`shaders/ceilings.wgsl`) on the device in use.
//!
//! A kernel's speed means little alone; held against these two figures it says how far the
//! kernel is from what the same adapter can do (the roofline: compute-bound work against
//! [`Ceilings::peak_gflops`], memory-bound work against [`Ceilings::peak_gbps`]). So the
//! probes are built to reach the card's real rates, as close as native code comes on the same
//! card (on NVIDIA: a CUDA matmul's FMA rate and a device-to-device copy's bandwidth):
//!
//! - **FMA throughput.** Every invocation advances 64 independent scalar chains
//!   `a <- fma(a, s, c)` (16 `vec4`s, named, fully unrolled 8 steps per loop trip) and writes
//!   their sum, so the compiler can drop nothing. One FMA counts as **2 FLOPs**:
//!   `flops = 2 x 64 x steps x invocations`. On a GPU a dispatch is sized to a few
//!   milliseconds (millions of invocations, many waves per multiprocessor), so the launch,
//!   the ramp-up and the last partial wave are a small part of it.
//! - **Bandwidth.** A grid-stride `vec4<f32>` copy between two buffers of up to 1 GiB each
//!   (far past any GPU's last-level cache, 50-60 MB on current ones), 4 loads in flight per
//!   invocation, from a source filled with varied values first. Bytes count what is **read
//!   plus what is written**: `bytes = 2 x buffer bytes`, as CUDA's `bandwidthTest` and
//!   PyTorch's `copy_` count a device-to-device copy.
//!
//! Each probe is timed per dispatch with **GPU timestamps** where the device has them (a
//! compute pass of its own per dispatch, its begin and end written once the work before it
//! is done), so neither submission nor readback is counted; else by the wall clock around a
//! submit-and-wait of each dispatch ([`Ceilings::timing`] says which). A warm-up dispatch
//! comes first (pipeline creation, first touch of the buffers) and is not counted; the figure
//! is the **fastest of several dispatches** (10 on a GPU, 3 on a CPU adapter), the rate the
//! card sustains when nothing else disturbs it.
//!
//! On a CPU adapter (lavapipe, `DeviceType::Cpu`) the same probes run at sizes some hundred
//! times smaller, so that tests and CI stay fast. Every size stays within the device's
//! binding and buffer limits, the forced chunk size ([`Gpu::set_max_chunk_bytes`]) and the
//! memory budget ([`Gpu::set_memory_budget`]); a copy buffer the device cannot allocate is
//! halved until it can.
//!
//! The measurement sits above `kernels/` (it runs `shaders/ceilings.wgsl` through its
//! wrapper); the [`Ceilings`] it returns are plain data of the host layer, which the
//! profiler holds kernels against. They are the practical ceilings of this adapter, driver
//! and machine at the time of the measurement, not the vendor's datasheet: clocks, a busy
//! machine or a software driver all show in them.

use std::time::Instant;

use crate::error::{Error, Result};
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Clock;
use crate::gpu::{Ceilings, Gpu};
use crate::kernels::ceilings::{self as kernel, FmaChains, COPY_ELEMENT_BYTES, PROBE_WG_SIZE};

/// How large and how long the probes are on one adapter ([`Plan::for_gpu`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Plan {
    /// Loop trips of every FMA invocation ([`kernel::STEPS_PER_TRIP`] steps each).
    pub fma_trips: u32,
    /// Invocations of the first FMA dispatch; they grow 4x until a dispatch takes
    /// `fma_target_seconds`.
    pub fma_first_invocations: u64,
    /// The most FMA invocations in one dispatch.
    pub fma_max_invocations: u64,
    /// The time one FMA dispatch is grown to.
    pub fma_target_seconds: f64,
    /// Bytes of each of the two copy buffers, at most.
    pub copy_buffer_bytes: u64,
    /// The most workgroups of a copy (more elements than they cover loop, grid-stride).
    pub copy_max_workgroups: u64,
    /// Timed dispatches of each probe; the fastest counts.
    pub repetitions: usize,
}

impl Plan {
    /// The plan of a hardware GPU.
    ///
    /// FMA: 512 trips = 4,096 steps = 262,144 FMAs per invocation, so each invocation's
    /// loop runs long next to its start and end; from 65,536 invocations (about 34 GFLOP,
    /// half a millisecond on an H200) up to 4,194,304 (16 MiB of sums), grown until one
    /// dispatch takes 5 ms: on an H200 about a million invocations, some ten waves of
    /// workgroups per multiprocessor, so the last partial wave costs little.
    ///
    /// Copy: 1 GiB per buffer, 2 GiB moved per dispatch (about half a millisecond at 4 TB/s,
    /// next to a launch of some microseconds); 16,384 workgroups of 256 invocations (4 M
    /// invocations, 16 elements each at 1 GiB), some 15 workgroups per multiprocessor of an
    /// H200 in turn, so the tail is a few percent at most.
    pub(crate) const GPU: Plan = Plan {
        fma_trips: 512,
        fma_first_invocations: 1 << 16,
        fma_max_invocations: 1 << 22,
        fma_target_seconds: 0.005,
        copy_buffer_bytes: 1 << 30,
        copy_max_workgroups: 16_384,
        repetitions: 10,
    };

    /// The plan of a CPU adapter (lavapipe): the same probes, small. The figures are the
    /// software driver's, and what matters there is that tests and CI stay quick.
    pub(crate) const CPU: Plan = Plan {
        fma_trips: 32,
        fma_first_invocations: 1 << 10,
        fma_max_invocations: 1 << 16,
        fma_target_seconds: 0.002,
        copy_buffer_bytes: 16 << 20,
        copy_max_workgroups: 4_096,
        repetitions: 3,
    };

    /// [`Plan::CPU`] on a CPU adapter, else [`Plan::GPU`].
    pub(crate) fn for_gpu(gpu: &Gpu) -> Plan {
        if gpu.info().device_type == "Cpu" {
            Plan::CPU
        } else {
            Plan::GPU
        }
    }
}

/// The smallest copy buffer tried when the device cannot allocate a larger one.
const COPY_MIN_BUFFER_BYTES: u64 = 1 << 20;

impl Gpu {
    /// Measures this adapter's FMA throughput and copy bandwidth (see [`ceilings`](crate::ceilings)).
    /// Takes well under a second on lavapipe and on a GPU once the kernels are built.
    ///
    /// Errors: a failed submission or readback ([`Error::Gpu`], [`Error::DeviceLost`]), or a
    /// memory budget too small for the smallest run.
    pub fn measure_ceilings(&self) -> Result<Ceilings> {
        measure(self, &Plan::for_gpu(self))
    }
}

/// [`Gpu::measure_ceilings`] with a chosen plan.
pub(crate) fn measure(gpu: &Gpu, plan: &Plan) -> Result<Ceilings> {
    gpu.scoped("measuring the ceilings", || {
        let fma = measure_fma(gpu, plan)?;
        let copy = measure_copy(gpu, plan)?;
        Ok(Ceilings {
            peak_gflops: fma.work as f64 / fma.seconds / 1e9,
            peak_gbps: copy.work as f64 / copy.seconds / 1e9,
            fma_seconds: fma.seconds,
            copy_seconds: copy.seconds,
            flops: fma.work,
            bytes: copy.work,
            buffer_bytes: copy.size,
            fma_invocations: fma.size,
            timing: fma.clock.name().to_string(),
            adapter: gpu.info().name.clone(),
        })
    })
}

/// The fastest dispatch of one probe: its size (FMA invocations or copy buffer bytes), its
/// work (FLOPs or bytes), its seconds and the clock that timed it.
struct Timed {
    size: u64,
    work: u64,
    seconds: f64,
    clock: Clock,
}

/// Seconds of each of `repetitions` dispatches that `record` records (one each).
///
/// With timestamps: one batch of all of them, each in a compute pass of its own whose begin
/// and end timestamps are written once the work before it has finished, so each figure is
/// the dispatch alone. Without: one submission and wait per dispatch by the wall clock (then
/// the figure includes a submission and a 4-byte readback of `sync`).
fn time_dispatches(
    gpu: &Gpu,
    label: &str,
    repetitions: usize,
    record: &dyn Fn(&mut Batch<'_>) -> Result<()>,
    sync: &DeviceBuffer<f32>,
) -> Result<(Vec<f64>, Clock)> {
    let repetitions = repetitions.max(1);
    if gpu.supports_timestamps() {
        let mut batch = Batch::timestamped(gpu, label);
        for _ in 0..repetitions {
            record(&mut batch)?;
        }
        batch.read_values(sync, 0, 1);
        let (_, records) = batch.finish_with_records()?;
        if records.len() != repetitions {
            return Err(Error::Gpu(format!(
                "{label}: {} timestamped dispatches came back, {repetitions} were recorded",
                records.len()
            )));
        }
        return Ok((
            records.iter().map(|r| r.seconds).collect(),
            Clock::Timestamps,
        ));
    }
    let mut seconds = Vec::with_capacity(repetitions);
    for _ in 0..repetitions {
        let start = Instant::now();
        let mut batch = Batch::untimed(gpu, label);
        record(&mut batch)?;
        batch.read_values(sync, 0, 1);
        batch.finish()?;
        seconds.push(start.elapsed().as_secs_f64());
    }
    Ok((seconds, Clock::WallClock))
}

/// Records one untimed dispatch and waits for it: pipeline creation and first touches.
fn warm_up(
    gpu: &Gpu,
    label: &str,
    record: &dyn Fn(&mut Batch<'_>) -> Result<()>,
    sync: &DeviceBuffer<f32>,
) -> Result<()> {
    let mut batch = Batch::untimed(gpu, label);
    record(&mut batch)?;
    batch.read_values(sync, 0, 1);
    batch.finish().map(drop)
}

fn fastest(seconds: &[f64]) -> f64 {
    seconds.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The largest buffer this crate may allocate for one probe operand, when `operands` such
/// buffers live at once: the device's binding limit (not the data chunks' standard size: a
/// probe is no data, and needs large buffers), the forced chunk size and the budget.
fn operand_limit(gpu: &Gpu, operands: u64) -> u64 {
    gpu.binding_byte_limit()
        .min(gpu.forced_chunk_bytes())
        .min(gpu.memory_budget() / operands)
}

fn measure_fma(gpu: &Gpu, plan: &Plan) -> Result<Timed> {
    // One f32 of output per invocation, and no more workgroups than a 2-D grid holds.
    let max_grid = (gpu.info().max_compute_workgroups_per_dimension.max(1) as u64).pow(2);
    let max = (operand_limit(gpu, 1) / 4)
        .min(max_grid * PROBE_WG_SIZE)
        .min(plan.fma_max_invocations)
        .min(u32::MAX as u64);
    if max == 0 {
        return Err(budget_error("the FMA probe", 4, gpu));
    }
    let run = |invocations: u64| FmaChains {
        invocations: invocations as u32,
        trips: plan.fma_trips,
        scale: 1.0,
        step: 1.0,
    };
    // The sums buffer is made for the largest size the plan may reach, so that growing does
    // not allocate (a slow adapter reaches its target long before; 16 MiB at most on a GPU).
    let sums: &DeviceBuffer<f32> = &DeviceBuffer::zeroed(gpu, "ceilings: chain sums", max as usize);
    let record_at = |n: u64| move |b: &mut Batch<'_>| kernel::fma_chains(gpu, b, &run(n), sums);
    let mut size = plan.fma_first_invocations.clamp(1, max);
    warm_up(gpu, "ceilings: fma warm-up", &record_at(size), sums)?;
    // Grow until one dispatch takes the target time (or the size cannot grow).
    loop {
        let (seconds, _) = time_dispatches(gpu, "ceilings: fma", 1, &record_at(size), sums)?;
        if seconds[0] >= plan.fma_target_seconds || size >= max {
            break;
        }
        size = (size * 4).min(max);
    }
    let (seconds, clock) = time_dispatches(
        gpu,
        "ceilings: fma",
        plan.repetitions,
        &record_at(size),
        sums,
    )?;
    Ok(Timed {
        size,
        work: run(size).flops(),
        seconds: fastest(&seconds),
        clock,
    })
}

fn measure_copy(gpu: &Gpu, plan: &Plan) -> Result<Timed> {
    let mut bytes = operand_limit(gpu, 2)
        .min(plan.copy_buffer_bytes)
        // The shader's u32 indices: n vec4s plus four strides stay below 2^32.
        .min((u32::MAX as u64 / 2) * COPY_ELEMENT_BYTES)
        / COPY_ELEMENT_BYTES
        * COPY_ELEMENT_BYTES;
    if bytes == 0 {
        return Err(budget_error("the copy probe", 2 * COPY_ELEMENT_BYTES, gpu));
    }
    // Large buffers first; half as large while the device cannot allocate them.
    let (src, dst) = loop {
        let values = (bytes / 4) as usize;
        let made = gpu.scoped("the copy probe's buffers", || {
            Ok((
                DeviceBuffer::<f32>::zeroed(gpu, "ceilings: copy source", values),
                DeviceBuffer::<f32>::zeroed(gpu, "ceilings: copy destination", values),
            ))
        });
        match made {
            Ok(buffers) => break buffers,
            Err(Error::OutOfDeviceMemory { .. }) if bytes / 2 >= COPY_MIN_BUFFER_BYTES => {
                bytes = bytes / 2 / COPY_ELEMENT_BYTES * COPY_ELEMENT_BYTES;
            }
            Err(e) => return Err(e),
        }
    };
    let n = (bytes / COPY_ELEMENT_BYTES) as u32;
    let max_wg = plan.copy_max_workgroups;
    // Varied contents (the fill's own first touch is the warm-up of both buffers' pages).
    let mut batch = Batch::untimed(gpu, "ceilings: copy source fill");
    kernel::fill_vec4(gpu, &mut batch, &src, n, max_wg)?;
    batch.finish()?;
    let record = |b: &mut Batch<'_>| kernel::copy_vec4(gpu, b, (&src, &dst), n, max_wg);
    warm_up(gpu, "ceilings: copy warm-up", &record, &dst)?;
    let (seconds, clock) = time_dispatches(gpu, "ceilings: copy", plan.repetitions, &record, &dst)?;
    Ok(Timed {
        size: bytes,
        work: 2 * bytes,
        seconds: fastest(&seconds),
        clock,
    })
}

fn budget_error(what: &str, requested: u64, gpu: &Gpu) -> Error {
    Error::OutOfDeviceMemory {
        what: what.to_string(),
        requested: Some(requested),
        available: Some(operand_limit(gpu, 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::tests::gpu;

    /// A plan for tests: the CPU plan, smaller and quicker still.
    const TINY: Plan = Plan {
        fma_trips: 4,
        fma_first_invocations: 256,
        fma_max_invocations: 1 << 14,
        fma_target_seconds: 0.001,
        copy_buffer_bytes: 4 << 20,
        copy_max_workgroups: 64,
        repetitions: 2,
    };

    /// Invocations of an FMA dispatch of `flops` under `plan`.
    fn fma_invocations(flops: u64, plan: &Plan) -> u64 {
        flops / (2 * kernel::FMAS_PER_STEP * (plan.fma_trips * kernel::STEPS_PER_TRIP) as u64)
    }

    fn assert_sane(c: &Ceilings, plan: &Plan) {
        for (what, v) in [
            ("peak_gflops", c.peak_gflops),
            ("peak_gbps", c.peak_gbps),
            ("fma_seconds", c.fma_seconds),
            ("copy_seconds", c.copy_seconds),
        ] {
            assert!(v.is_finite() && v > 0.0, "{what} = {v}");
        }
        assert!(c.flops > 0 && c.bytes > 0, "{c:?}");
        // What the figures claim is what one dispatch of each probe does.
        assert_eq!(c.bytes, 2 * c.buffer_bytes, "bytes = read + written");
        assert_eq!(fma_invocations(c.flops, plan), c.fma_invocations, "{c:?}");
        assert!((c.peak_gflops - c.flops as f64 / c.fma_seconds / 1e9).abs() < 1e-9);
        assert!((c.peak_gbps - c.bytes as f64 / c.copy_seconds / 1e9).abs() < 1e-9);
        assert!(
            ["timestamps", "wall-clock"].contains(&c.timing.as_str()),
            "{c:?}"
        );
    }

    #[test]
    fn measured_ceilings_are_finite_positive_and_consistent() {
        let gpu = gpu();
        let c = measure(&gpu, &TINY).unwrap();
        assert_sane(&c, &TINY);
        assert_eq!(c.adapter, gpu.info().name);
        assert_eq!(c.buffer_bytes, TINY.copy_buffer_bytes);
        assert!(c.fma_invocations >= TINY.fma_first_invocations);
        assert!(c.fma_invocations <= TINY.fma_max_invocations);
        let timestamps = if gpu.supports_timestamps() {
            "timestamps"
        } else {
            "wall-clock"
        };
        assert_eq!(c.timing, timestamps);
    }

    #[test]
    fn the_public_measure_uses_the_adapters_plan() {
        let gpu = gpu();
        let plan = Plan::for_gpu(&gpu);
        let expected = if gpu.info().device_type == "Cpu" {
            Plan::CPU
        } else {
            Plan::GPU
        };
        assert_eq!(plan, expected);
        let c = gpu.measure_ceilings().unwrap();
        assert_sane(&c, &plan);
        assert_eq!(
            c.buffer_bytes,
            plan.copy_buffer_bytes.min(gpu.binding_byte_limit()) / 16 * 16
        );
    }

    #[test]
    fn sizes_respect_the_forced_chunk_size_and_the_memory_budget() {
        let gpu = gpu();
        gpu.set_max_chunk_bytes(1 << 20);
        let c = measure(&gpu, &TINY).unwrap();
        assert_sane(&c, &TINY);
        assert!(c.buffer_bytes <= 1 << 20, "{c:?}");
        assert!(c.fma_invocations * 4 <= 1 << 20, "{c:?}");

        gpu.set_memory_budget(64 << 10);
        let c = measure(&gpu, &TINY).unwrap();
        assert_sane(&c, &TINY);
        assert!(
            c.buffer_bytes <= 32 << 10,
            "two copy buffers fit the budget: {c:?}"
        );
        assert!(c.fma_invocations * 4 <= 64 << 10, "{c:?}");

        // Too small for one vec4 in each copy buffer: a clear error, not a panic.
        gpu.set_memory_budget(20);
        let e = measure(&gpu, &TINY).unwrap_err();
        assert!(matches!(e, Error::OutOfDeviceMemory { .. }), "{e}");
    }
}
