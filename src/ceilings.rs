//! Ceilings: the FMA throughput and memory bandwidth this adapter reaches in practice,
//! measured by two WGSL microbenchmarks (`shaders/ceilings.wgsl`) on the device in use.
//!
//! A kernel's speed means little alone; held against these two figures it says how far the
//! kernel is from what the same adapter can do (the roofline: compute-bound work against
//! [`Ceilings::peak_gflops`], memory-bound work against [`Ceilings::peak_gbps`]).
//!
//! # How they are measured
//!
//! - **FMA throughput.** Every invocation advances 32 independent chains of
//!   `a <- fma(a, s, c)` held in registers (enough to hide the FMA latency) and writes their
//!   sum, so the compiler can drop nothing. One FMA counts as **2 FLOPs**:
//!   `flops = 2 x 32 x steps x invocations`.
//! - **Bandwidth.** A grid-stride copy of `vec4<f32>` between two buffers, repeated in one
//!   submission. Bytes count what is **read plus what is written**:
//!   `bytes = 2 x buffer bytes x repeats`.
//!
//! Each is timed by the wall clock around submit-and-wait (a 4-byte readback closes every
//! run): a warm-up run first (pipeline creation, first touch of memory), then the size grows
//! until one run takes about [`TARGET_SECONDS`], and the figure is the best of
//! [`REPETITIONS`] runs at that size. The sizes stay within the device's binding and buffer
//! limits, the forced chunk size ([`Gpu::set_max_chunk_bytes`]) and the memory budget
//! ([`Gpu::set_memory_budget`]).
//!
//! The measurement sits above `kernels/` (it runs `shaders/ceilings.wgsl` through its
//! wrapper); the [`Ceilings`] it returns are plain data of the host layer, which the
//! profiler holds kernels against.
//!
//! These are practical ceilings of this adapter, driver and machine at the time of the
//! measurement, not the vendor's datasheet: a busy machine, clocks or a software driver
//! (lavapipe) all show in them, and a tuned native kernel may exceed them.

use std::time::Instant;

use crate::error::{Error, Result};
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::{Ceilings, Gpu};
use crate::kernels::ceilings::{self as kernel, FmaChains, COPY_ELEMENT_BYTES};
use crate::kernels::ROW_WG_SIZE;

/// Wall-clock time one timed run is sized to reach (seconds).
pub const TARGET_SECONDS: f64 = 0.03;

/// Timed runs per figure; the fastest counts.
pub const REPETITIONS: usize = 3;

/// Chain steps of every FMA invocation. With unit scale and step every value stays an exact
/// integer well below 2^24, so the work is the same whatever the size.
const FMA_STEPS: u32 = 1024;

const _: () = assert!(FMA_STEPS.is_multiple_of(kernel::STEPS_PER_ITERATION));

/// Invocations of the first FMA run (about 0.27 GFLOP).
const FMA_FIRST_INVOCATIONS: u64 = 4096;

/// The most FMA invocations in one run (a 128 MiB output; about 2 TFLOP, tens of
/// milliseconds on the largest current GPUs).
const FMA_MAX_INVOCATIONS: u64 = 1 << 25;

/// The largest copy buffer: large enough to leave the caches of any current GPU behind.
const COPY_MAX_BUFFER_BYTES: u64 = 64 << 20;

/// The most copies recorded in one timed run.
const COPY_MAX_REPEATS: u64 = 1024;

impl Gpu {
    /// Measures this adapter's FMA throughput and copy bandwidth (see [`ceilings`](crate::ceilings)).
    /// Takes well under a second on lavapipe once the kernels are built.
    ///
    /// Errors: a failed submission or readback ([`Error::Gpu`], [`Error::DeviceLost`]), or a
    /// memory budget too small for the smallest run.
    pub fn measure_ceilings(&self) -> Result<Ceilings> {
        measure(self, TARGET_SECONDS, REPETITIONS)
    }
}

/// [`Gpu::measure_ceilings`] with a chosen run length and number of timed runs.
pub(crate) fn measure(gpu: &Gpu, target_seconds: f64, repetitions: usize) -> Result<Ceilings> {
    gpu.scoped("measuring the ceilings", || {
        let fma = measure_fma(gpu, target_seconds, repetitions)?;
        let copy = measure_copy(gpu, target_seconds, repetitions)?;
        Ok(Ceilings {
            peak_gflops: fma.work as f64 / fma.seconds / 1e9,
            peak_gbps: copy.work as f64 / copy.seconds / 1e9,
            fma_seconds: fma.seconds,
            copy_seconds: copy.seconds,
            flops: fma.work,
            bytes: copy.work,
            buffer_bytes: copy.buffer_bytes,
            adapter: gpu.info().name.clone(),
        })
    })
}

/// The fastest run of one benchmark: its work (FLOPs or bytes) and seconds.
struct Timed {
    work: u64,
    seconds: f64,
    buffer_bytes: u64,
}

/// Grows `size` from `first` (at most `max`) until one `run(size)` takes half of
/// `target_seconds` or more, after a warm-up run; returns the size and the best of
/// `repetitions` timed runs at it.
fn calibrate(
    first: u64,
    max: u64,
    target_seconds: f64,
    repetitions: usize,
    mut run: impl FnMut(u64) -> Result<f64>,
) -> Result<(u64, f64)> {
    let mut size = first.clamp(1, max.max(1));
    run(size)?;
    loop {
        let seconds = run(size)?;
        if seconds >= target_seconds / 2.0 || size >= max {
            break;
        }
        // Jump towards the target, at most 16x at once in case the first run was noise.
        let grow = (target_seconds / seconds.max(1e-6)).ceil().clamp(2.0, 16.0) as u64;
        size = size.saturating_mul(grow).min(max);
    }
    let mut best = f64::INFINITY;
    for _ in 0..repetitions.max(1) {
        best = best.min(run(size)?);
    }
    Ok((size, best))
}

/// Seconds from recording to the end of the readback that closes the batch.
fn time_batch(
    gpu: &Gpu,
    label: &str,
    record: impl FnOnce(&mut Batch<'_>) -> Result<()>,
    sync: &DeviceBuffer<f32>,
) -> Result<f64> {
    let start = Instant::now();
    let mut batch = Batch::new(gpu, label);
    record(&mut batch)?;
    batch.read_values(sync, 0, 1);
    batch.finish()?;
    Ok(start.elapsed().as_secs_f64())
}

/// The largest buffer this crate may allocate for one benchmark operand, when `operands`
/// such buffers live at once.
fn operand_limit(gpu: &Gpu, operands: u64) -> u64 {
    gpu.chunk_byte_limit().min(gpu.memory_budget() / operands)
}

fn measure_fma(gpu: &Gpu, target_seconds: f64, repetitions: usize) -> Result<Timed> {
    // One f32 per invocation, and no more workgroups than a 2-D grid holds.
    let max_grid = (gpu.info().max_compute_workgroups_per_dimension.max(1) as u64).pow(2);
    let max = (operand_limit(gpu, 1) / 4)
        .min(max_grid * ROW_WG_SIZE as u64)
        .min(FMA_MAX_INVOCATIONS);
    if max == 0 {
        return Err(budget_error("the FMA benchmark", 4, gpu));
    }
    let run = |invocations: u64| FmaChains {
        invocations: invocations as u32,
        iterations: FMA_STEPS / kernel::STEPS_PER_ITERATION,
        scale: 1.0,
        step: 1.0,
    };
    // Allocated as the size grows, so a slow adapter never holds the largest buffer.
    let mut sums: Option<DeviceBuffer<f32>> = None;
    let (size, seconds) = calibrate(
        FMA_FIRST_INVOCATIONS,
        max,
        target_seconds,
        repetitions,
        |n| {
            if sums.as_ref().is_none_or(|b| (b.len() as u64) < n) {
                sums = Some(DeviceBuffer::zeroed(
                    gpu,
                    "ceilings: chain sums",
                    n as usize,
                ));
            }
            let sums = sums.as_ref().expect("allocated above");
            let record = |b: &mut Batch<'_>| kernel::fma_chains(gpu, b, &run(n), sums);
            time_batch(gpu, "ceilings: fma", record, sums)
        },
    )?;
    Ok(Timed {
        work: run(size).flops(),
        seconds,
        buffer_bytes: 0,
    })
}

fn measure_copy(gpu: &Gpu, target_seconds: f64, repetitions: usize) -> Result<Timed> {
    let buffer_bytes = operand_limit(gpu, 2)
        .min(COPY_MAX_BUFFER_BYTES)
        .min(u32::MAX as u64 * COPY_ELEMENT_BYTES)
        / COPY_ELEMENT_BYTES
        * COPY_ELEMENT_BYTES;
    if buffer_bytes == 0 {
        return Err(budget_error(
            "the copy benchmark",
            2 * COPY_ELEMENT_BYTES,
            gpu,
        ));
    }
    let values = (buffer_bytes / 4) as usize;
    let src = DeviceBuffer::zeroed(gpu, "ceilings: copy source", values);
    let dst = DeviceBuffer::zeroed(gpu, "ceilings: copy destination", values);
    let n_elements = (buffer_bytes / COPY_ELEMENT_BYTES) as u32;
    let (repeats, seconds) = calibrate(1, COPY_MAX_REPEATS, target_seconds, repetitions, |r| {
        let record = |b: &mut Batch<'_>| {
            (0..r).try_for_each(|_| kernel::copy_vec4(gpu, b, &src, &dst, n_elements))
        };
        time_batch(gpu, "ceilings: copy", record, &dst)
    })?;
    Ok(Timed {
        work: 2 * buffer_bytes * repeats,
        seconds,
        buffer_bytes,
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

    /// Invocations of an FMA run of `flops`.
    fn fma_invocations(flops: u64) -> u64 {
        flops / (2 * kernel::FMAS_PER_STEP * FMA_STEPS as u64)
    }

    fn assert_sane(c: &Ceilings) {
        for (what, v) in [
            ("peak_gflops", c.peak_gflops),
            ("peak_gbps", c.peak_gbps),
            ("fma_seconds", c.fma_seconds),
            ("copy_seconds", c.copy_seconds),
        ] {
            assert!(v.is_finite() && v > 0.0, "{what} = {v}");
        }
        assert!(c.flops > 0 && c.bytes > 0, "{c:?}");
        assert_eq!(
            c.bytes % (2 * c.buffer_bytes),
            0,
            "bytes = 2 x buffer x repeats"
        );
        assert!((c.peak_gflops - c.flops as f64 / c.fma_seconds / 1e9).abs() < 1e-9);
        assert!((c.peak_gbps - c.bytes as f64 / c.copy_seconds / 1e9).abs() < 1e-9);
    }

    #[test]
    fn measured_ceilings_are_finite_positive_and_consistent() {
        let gpu = gpu();
        let c = measure(&gpu, 0.005, 2).unwrap();
        assert_sane(&c);
        assert_eq!(c.adapter, gpu.info().name);
        assert_eq!(
            c.buffer_bytes,
            COPY_MAX_BUFFER_BYTES.min(gpu.chunk_byte_limit()) / 16 * 16
        );
    }

    #[test]
    fn sizes_respect_the_forced_chunk_size_and_the_memory_budget() {
        let gpu = gpu();
        gpu.set_max_chunk_bytes(1 << 20);
        let c = measure(&gpu, 0.002, 1).unwrap();
        assert_sane(&c);
        assert!(c.buffer_bytes <= 1 << 20, "{c:?}");
        assert!(fma_invocations(c.flops) * 4 <= 1 << 20, "{c:?}");

        gpu.set_memory_budget(64 << 10);
        let c = measure(&gpu, 0.002, 1).unwrap();
        assert_sane(&c);
        assert!(
            c.buffer_bytes <= 32 << 10,
            "two copy buffers fit the budget: {c:?}"
        );
        assert!(fma_invocations(c.flops) * 4 <= 64 << 10, "{c:?}");

        // Too small for one vec4 in each copy buffer: a clear error, not a panic.
        gpu.set_memory_budget(20);
        let e = measure(&gpu, 0.002, 1).unwrap_err();
        assert!(matches!(e, Error::OutOfDeviceMemory { .. }), "{e}");
    }
}
