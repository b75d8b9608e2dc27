//! The ceiling probes (`shaders/ceilings.wgsl`): independent FMA chains on registers, a
//! grid-stride vec4 copy, and the fill that gives the copy varied contents. Why each is
//! shaped as it is, is said in the shader; timing and sizing live in [`crate::ceilings`].

use bytemuck::{Pod, Zeroable};

use crate::error::{Error, Result};
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{ceilings as wgsl, check_params};
use crate::gpu::Gpu;

/// Invocations per workgroup of the probes (`PROBE_WG_SIZE`).
pub(crate) const PROBE_WG_SIZE: u64 = wgsl::PROBE_WG_SIZE as u64;

/// Scalar FMAs per chain step of one invocation (`VEC4_CHAINS` vec4 chains).
pub(crate) const FMAS_PER_STEP: u64 = 4 * wgsl::VEC4_CHAINS as u64;

/// Chain steps per trip of the FMA loop (written out in the shader).
pub(crate) const STEPS_PER_TRIP: u32 = wgsl::STEPS_PER_TRIP;

/// Bytes of one element of the copy (a `vec4<f32>`).
pub(crate) const COPY_ELEMENT_BYTES: u64 = 16;

/// Loads in flight per invocation and trip of the copy's loop.
const COPY_UNROLL: u64 = wgsl::COPY_UNROLL as u64;

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

/// One FMA chain run: `invocations` invocations, each `trips` x [`STEPS_PER_TRIP`] steps of
/// `a <- fma(a, scale, step)` on every one of its [`FMAS_PER_STEP`] scalar chains.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FmaChains {
    pub invocations: u32,
    pub trips: u32,
    pub scale: f32,
    pub step: f32,
}

impl FmaChains {
    /// Chain steps of every invocation.
    pub(crate) fn steps(&self) -> u64 {
        self.trips as u64 * STEPS_PER_TRIP as u64
    }

    /// Scalar FMAs of one invocation.
    pub(crate) fn fmas_per_invocation(&self) -> u64 {
        FMAS_PER_STEP * self.steps()
    }

    /// Floating-point operations of the run, an FMA counted as 2.
    pub(crate) fn flops(&self) -> u64 {
        2 * self.fmas_per_invocation() * self.invocations as u64
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
    let grid = gpu.grid((run.invocations as u64).div_ceil(PROBE_WG_SIZE))?;
    let params = CeilingParams {
        n_items: run.invocations,
        iterations: run.trips,
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

/// The invocations a grid-stride pass over `n_elements` vec4s uses: one per
/// [`COPY_UNROLL`] elements, at most `max_workgroups` workgroups' worth.
pub(crate) fn copy_invocations(n_elements: u32, max_workgroups: u64) -> u64 {
    (n_elements as u64)
        .div_ceil(COPY_UNROLL * PROBE_WG_SIZE)
        .clamp(1, max_workgroups.max(1))
        * PROBE_WG_SIZE
}

/// The parameters and grid of a grid-stride pass over `n_elements` vec4s.
fn grid_stride(
    gpu: &Gpu,
    n_elements: u32,
    max_workgroups: u64,
) -> Result<(CeilingParams, crate::gpu::batch::Grid)> {
    let stride = copy_invocations(n_elements, max_workgroups);
    // The shader forms i + 3·stride and steps by 4·stride: no index may wrap.
    if n_elements as u64 + COPY_UNROLL * stride > u32::MAX as u64 {
        return Err(Error::Gpu(format!(
            "a copy of {n_elements} vec4s over {stride} invocations overflows u32 indices"
        )));
    }
    let grid = gpu.grid(stride / PROBE_WG_SIZE)?;
    let params = CeilingParams {
        n_items: n_elements,
        stride: stride as u32,
        grid_x: grid.x,
        ..Zeroable::zeroed()
    };
    Ok((params, grid))
}

/// Records a copy of the first `n_elements` vec4s of `src` into `dst` over at most
/// `max_workgroups` workgroups. Its work: every element read once and written once.
pub(crate) fn copy_vec4(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    (src, dst): (&DeviceBuffer<f32>, &DeviceBuffer<f32>),
    n_elements: u32,
    max_workgroups: u64,
) -> Result<()> {
    let (params, grid) = grid_stride(gpu, n_elements, max_workgroups)?;
    batch.dispatch(
        wgsl::COPY_VEC4,
        &[],
        &params,
        &[("src", src.bind()), ("dst", dst.bind())],
        grid,
        Work {
            flops: 0.0,
            bytes: 2.0 * COPY_ELEMENT_BYTES as f64 * n_elements as f64,
        },
    )
}

/// Records the fill of the first `n_elements` vec4s of `dst` with a pattern of small
/// integers (`dst[i] = (i, i + 1, i + 2, i + 3) mod 2^16`).
pub(crate) fn fill_vec4(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    dst: &DeviceBuffer<f32>,
    n_elements: u32,
    max_workgroups: u64,
) -> Result<()> {
    let (params, grid) = grid_stride(gpu, n_elements, max_workgroups)?;
    batch.dispatch(
        wgsl::FILL_VEC4,
        &[],
        &params,
        &[("dst", dst.bind())],
        grid,
        Work {
            flops: 0.0,
            bytes: COPY_ELEMENT_BYTES as f64 * n_elements as f64,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::profile::ProfileClock;
    use crate::gpu::tests::gpu;

    /// The start of scalar chain `lane` (0 .. FMAS_PER_STEP) of invocation `e`, as the shader
    /// sets it.
    fn start(e: u32, lane: u64) -> f64 {
        (e % 1024) as f64 + lane as f64
    }

    /// What invocation `e` of `run` writes, computed here step by step in f64 (the shader's
    /// starts and chains; its summation order does not matter on exact integers, and the
    /// fraction test allows for it).
    fn host_chain_sum(e: u32, run: &FmaChains) -> f64 {
        (0..FMAS_PER_STEP)
            .map(|lane| {
                let mut a = start(e, lane);
                for _ in 0..run.steps() {
                    a = a * run.scale as f64 + run.step as f64;
                }
                a
            })
            .sum()
    }

    fn run_fma(gpu: &Gpu, run: &FmaChains) -> Vec<f32> {
        let out = DeviceBuffer::zeroed(gpu, "chain sums", run.invocations as usize);
        let mut batch = Batch::new(gpu, "fma_chains test");
        fma_chains(gpu, &mut batch, run, &out).unwrap();
        let h = batch.read_all(&out);
        batch.finish().unwrap().f32s(h)
    }

    #[test]
    fn fma_chains_do_the_fmas_they_claim_exactly_on_integers() {
        let gpu = gpu();
        // 1,100 invocations: a partial last workgroup, and starts that wrap at 1024.
        let run = FmaChains {
            invocations: 1100,
            trips: 37,
            scale: 1.0,
            step: 1.0,
        };
        let sums = run_fma(&gpu, &run);
        for (e, &v) in sums.iter().enumerate() {
            let e = e as u32;
            assert_eq!(v as f64, host_chain_sum(e, &run), "invocation {e}");
            // With scale = step = 1 every FMA adds exactly 1 to its chain: what the sum
            // gained over the starts is the number of FMAs the invocation did.
            let starts: f64 = (0..FMAS_PER_STEP).map(|lane| start(e, lane)).sum();
            assert_eq!(v as f64 - starts, run.fmas_per_invocation() as f64);
        }
        assert_eq!(
            run.flops(),
            2 * sums.len() as u64 * run.fmas_per_invocation()
        );
    }

    #[test]
    fn fma_chains_match_the_host_chain_on_fractions() {
        let gpu = gpu();
        // A contraction: rounding errors stay near one ulp instead of growing.
        let run = FmaChains {
            invocations: 130,
            trips: 7,
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

    /// Fills `n + 5` vec4s of a buffer with the pattern, copies the first `n` over `max_wg`
    /// workgroups into a zeroed buffer, and returns both with the work the copy claimed.
    fn fill_and_copy(gpu: &Gpu, n: u32, max_wg: u64) -> (Vec<f32>, Vec<f32>, Work) {
        let values = 4 * (n as usize + 5);
        let src = DeviceBuffer::zeroed(gpu, "src", values);
        let dst = DeviceBuffer::zeroed(gpu, "dst", values);
        let mut batch = Batch::new(gpu, "fill");
        fill_vec4(gpu, &mut batch, &src, n + 5, max_wg).unwrap();
        batch.finish().unwrap();
        let (back, profile) = gpu
            .profile(ProfileClock::WallClock, || {
                let mut batch = Batch::new(gpu, "copy test");
                copy_vec4(gpu, &mut batch, (&src, &dst), n, max_wg)?;
                let (hs, hd) = (batch.read_all(&src), batch.read_all(&dst));
                let back = batch.finish()?;
                Ok((back.f32s(hs), back.f32s(hd)))
            })
            .unwrap();
        let copies: Vec<_> = profile
            .dispatches
            .iter()
            .filter(|r| r.kernel == "copy_vec4")
            .collect();
        assert_eq!(copies.len(), 1, "{profile:?}");
        (back.0, back.1, copies[0].work)
    }

    #[test]
    fn copy_vec4_copies_exactly_what_it_claims_and_stops_at_n() {
        let gpu = gpu();
        // Grids of 1 and 3 workgroups (strides 256 and 768): n below one stride, whole
        // trips only, whole trips and a tail, and an n the grid covers in one trip.
        for (n, max_wg) in [
            (100, 3),
            (4 * 768, 3),
            (9 * 768 + 5, 3),
            (5000, 1),
            (1000, 64),
        ] {
            let (src, dst, work) = fill_and_copy(&gpu, n, max_wg);
            let copied = 4 * n as usize;
            for (i, v) in src.iter().enumerate() {
                assert_eq!(*v, ((i / 4 + i % 4) % 65536) as f32, "the fill at {i}");
            }
            assert!(dst[..copied] == src[..copied], "n = {n}: the copy differs");
            assert!(
                dst[copied..].iter().all(|&v| v == 0.0),
                "n = {n}: wrote past n"
            );
            // Bytes read plus bytes written, each element once: what the ceiling counts.
            assert_eq!(work.bytes, 2.0 * 16.0 * n as f64);
            assert_eq!(work.flops, 0.0);
        }
    }

    #[test]
    fn copy_grids_stay_within_their_cap_and_u32_indices() {
        assert_eq!(copy_invocations(1, 16), PROBE_WG_SIZE);
        assert_eq!(copy_invocations(4 * 256 * 5, 16), 5 * PROBE_WG_SIZE);
        assert_eq!(copy_invocations(u32::MAX, 16), 16 * PROBE_WG_SIZE);
        let gpu = gpu();
        let e = grid_stride(&gpu, u32::MAX - 100, 16).unwrap_err();
        assert!(
            matches!(e, Error::Gpu(ref m) if m.contains("overflows")),
            "{e}"
        );
    }
}
