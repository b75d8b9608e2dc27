//! The ceiling microbenchmarks (`shaders/ceilings.wgsl`): chains of FMAs on registers and a
//! grid-stride vec4 copy. Timing and sizing live in [`crate::ceilings`].

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{ceilings as wgsl, check_params};
use crate::gpu::Gpu;
use crate::kernels::ROW_WG_SIZE;

/// Scalar FMAs per chain step of one invocation (`VEC4_CHAINS` vec4 chains).
pub(crate) const FMAS_PER_STEP: u64 = 4 * wgsl::VEC4_CHAINS as u64;

/// Chain steps per trip of the shader's outer loop.
pub(crate) const STEPS_PER_ITERATION: u32 = wgsl::UNROLL;

/// Bytes of one element of the copy (a `vec4<f32>`).
pub(crate) const COPY_ELEMENT_BYTES: u64 = 16;

/// Largest number of workgroups the copy is spread over: enough to fill a large GPU
/// (132 multiprocessors x 2048 resident invocations is about 4,200 workgroups of 64) several
/// times; past it each invocation copies more elements.
const COPY_MAX_WORKGROUPS: u64 = 16_384;

/// Twin of `CeilingParams` in shaders/ceilings.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct CeilingParams {
    n_items: u32,
    iterations: u32,
    stride: u32,
    grid_x: u32,
    scale: f32,
    step: f32,
    _pad0: u32,
    _pad1: u32,
}

const _: () = check_params::<CeilingParams>(wgsl::ENTRY_POINTS);

/// One FMA chain run: `invocations` invocations, each `iterations` x
/// [`STEPS_PER_ITERATION`] steps of `a <- fma(a, scale, step)` on every chain.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FmaChains {
    pub invocations: u32,
    pub iterations: u32,
    pub scale: f32,
    pub step: f32,
}

impl FmaChains {
    /// Chain steps of every invocation.
    pub(crate) fn steps(&self) -> u32 {
        self.iterations * STEPS_PER_ITERATION
    }

    /// Floating-point operations of the run, an FMA counted as 2.
    pub(crate) fn flops(&self) -> u64 {
        2 * FMAS_PER_STEP * self.invocations as u64 * self.steps() as u64
    }
}

/// Records `run`, writing each invocation's sum of chains to `chain_sums`
/// (`run.invocations` f32).
pub(crate) fn fma_chains(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    run: &FmaChains,
    chain_sums: &DeviceBuffer<f32>,
) -> Result<()> {
    let grid = gpu.grid((run.invocations as u64).div_ceil(ROW_WG_SIZE as u64))?;
    let params = CeilingParams {
        n_items: run.invocations,
        iterations: run.iterations,
        grid_x: grid.x,
        scale: run.scale,
        step: run.step,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        wgsl::FMA_CHAINS,
        &[],
        &params,
        &[("chain_sums", chain_sums.bind())],
        grid,
        Work::f32s(run.flops() as f64, run.invocations as f64),
    )
}

/// Records a copy of the first `n_elements` vec4s of `src` into `dst`.
pub(crate) fn copy_vec4(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    src: &DeviceBuffer<f32>,
    dst: &DeviceBuffer<f32>,
    n_elements: u32,
) -> Result<()> {
    let workgroups = (n_elements as u64)
        .div_ceil(ROW_WG_SIZE as u64)
        .clamp(1, COPY_MAX_WORKGROUPS);
    let grid = gpu.grid(workgroups)?;
    let params = CeilingParams {
        n_items: n_elements,
        stride: (workgroups * ROW_WG_SIZE as u64) as u32,
        grid_x: grid.x,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        wgsl::COPY_VEC4,
        &[],
        &params,
        &[("src", src.bind()), ("dst", dst.bind())],
        grid,
        Work::f32s(0.0, 8.0 * n_elements as f64),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::tests::{gpu, random};

    /// What invocation `e` of `run` writes, computed here step by step in f64 (the shader's
    /// starts, chains and summation order).
    fn host_chain_sum(e: u32, run: &FmaChains) -> f64 {
        let base = (e % 1024) as f64;
        let mut lanes: Vec<f64> = (0..FMAS_PER_STEP).map(|j| base + j as f64).collect();
        for _ in 0..run.steps() {
            for a in &mut lanes {
                *a = *a * run.scale as f64 + run.step as f64;
            }
        }
        lanes.iter().sum()
    }

    fn run_fma(gpu: &Gpu, run: &FmaChains) -> Vec<f32> {
        let out = DeviceBuffer::zeroed(gpu, "chain sums", run.invocations as usize);
        let mut batch = Batch::new(gpu, "fma_chains test");
        fma_chains(gpu, &mut batch, run, &out).unwrap();
        let h = batch.read_all(&out);
        batch.finish().unwrap().f32s(h)
    }

    #[test]
    fn fma_chains_write_the_host_chain_exactly_on_integers() {
        let gpu = gpu();
        // 1,100 invocations: a partial last workgroup, and starts that wrap at 1024.
        let run = FmaChains {
            invocations: 1100,
            iterations: 37,
            scale: 1.0,
            step: 1.0,
        };
        for (e, &v) in run_fma(&gpu, &run).iter().enumerate() {
            assert_eq!(v as f64, host_chain_sum(e as u32, &run), "invocation {e}");
        }
    }

    #[test]
    fn fma_chains_match_the_host_chain_on_fractions() {
        let gpu = gpu();
        // A contraction: rounding errors stay near one ulp instead of growing.
        let run = FmaChains {
            invocations: 130,
            iterations: 7,
            scale: 0.75,
            step: 0.3,
        };
        for (e, &v) in run_fma(&gpu, &run).iter().enumerate() {
            let host = host_chain_sum(e as u32, &run);
            assert!(
                (v as f64 - host).abs() <= 1e-6 * host.abs(),
                "invocation {e}: {v} vs {host}"
            );
        }
    }

    #[test]
    fn copy_vec4_copies_exactly_and_stops_at_n() {
        let gpu = gpu();
        // More elements than invocations (grid-stride) plus a tail left untouched.
        let n = (COPY_MAX_WORKGROUPS * ROW_WG_SIZE as u64 + 777) as usize;
        let data = random((n + 5) * 4, 7);
        let src = DeviceBuffer::from_slice(&gpu, "src", &data);
        let dst = DeviceBuffer::zeroed(&gpu, "dst", (n + 5) * 4);
        let mut batch = Batch::new(&gpu, "copy test");
        copy_vec4(&gpu, &mut batch, &src, &dst, n as u32).unwrap();
        let h = batch.read_all(&dst);
        let back = batch.finish().unwrap().f32s(h);
        assert!(back[..n * 4] == data[..n * 4], "the copy differs");
        assert!(back[n * 4..].iter().all(|&v| v == 0.0), "wrote past n");
    }
}
