// Ceilings: microbenchmarks of this adapter's FMA throughput and memory bandwidth, the two
// limits a kernel's FLOPs and bytes are held against. They are built to reach what the card
// can do (on NVIDIA, what CUDA code measures on the same card), so that every efficiency
// quoted against them is honest.
//
// Host wrapper: src/kernels/ceilings.rs; timing and sizing: src/ceilings.rs.
//
// fma_chains: every invocation advances VEC4_CHAINS independent vec4 chains
// a <- fma(a, scale, step) for `iterations` x STEPS_PER_TRIP steps and writes the sum of its
// chains. Why it is shaped so:
// - Independent chains (instruction-level parallelism): an FMA's result is ready about
//   4 cycles after issue on NVIDIA (Volta to Hopper; more on older or other GPUs), so a
//   scheduler that issues one warp-instruction per cycle needs at least 4 independent FMAs
//   per warp in flight to never wait. 16 vec4 chains are 64 independent scalar FMAs per
//   invocation: the ALUs stay busy even at low occupancy (few warps per multiprocessor).
// - Fully unrolled, no arrays: the chains are 16 named fields of a struct passed by value
//   (`step_all`), so every access is by a constant name; an array indexed with a loop
//   variable may be placed in local (off-chip) memory by GPU compilers. STEPS_PER_TRIP steps
//   are written out per loop trip, so the loop's own work (counter, compare, branch, and the
//   loop-bounding counter wgpu's checked shader modules add to every loop) is a few
//   instructions per 512 FMAs.
// - Occupancy: about 64 registers of chains plus a few others, so a multiprocessor still
//   holds many warps; the host launches many workgroups per multiprocessor (a dispatch of
//   millions of invocations on a large GPU) so that the ramp-up and the last partial wave
//   are a small part of the time, and sizes each dispatch to milliseconds so that the launch
//   is negligible.
// - Nothing can be folded away: `scale` and `step` come from the uniform, and each
//   invocation writes the sum of its chains. With scale = step = 1 and small integer starts
//   every value is an exact integer in f32, so the host checks the result bit for bit and
//   reads the number of FMAs done back from it.
//
// copy_vec4: dst = src over n vec4 elements. Why it is shaped so:
// - vec4 loads and stores: 16 bytes per access; a warp's access covers 512 consecutive
//   bytes, whole memory transactions.
// - Memory-level parallelism: each invocation issues COPY_UNROLL independent loads before
//   its first store, so several requests per thread are in flight at once. Little's law:
//   bandwidth x latency (4.8 TB/s x some 600 ns on an H200, about 3 MB) must be in flight
//   to keep HBM busy; one 16-byte load at a time per resident thread (132 x 2048 threads,
//   4.3 MB, and fewer when occupancy is lower) is barely that much.
// - Grid-stride loop: the element index strides by the dispatch's invocations, so the host
//   chooses the number of workgroups for the machine (enough to fill every multiprocessor
//   many times over), not by n; any n is copied whatever the grid.
//
// fill_vec4: dst[i] = (i, i + 1, i + 2, i + 3) mod 2^16, grid-stride: the copy's source is
// given varied contents first, so no path of the hardware that is fast on zeros (or on any
// constant) can flatter the copy.
//
// @trusted: every index is the invocation's own element, chain or grid-stride step, below the
//   sizes the host allocates

#import constants
#import grid

// Invocations per workgroup of both probes: 8 warps of 32 (NVIDIA) or 4 waves of 64 (AMD);
// 8 such workgroups fill an NVIDIA multiprocessor's 2048 threads.
const PROBE_WG_SIZE: u32 = 256u;
// Independent vec4 chains per invocation (4 x VEC4_CHAINS scalar FMAs per step).
const VEC4_CHAINS: u32 = 16u;
// Chain steps written out in one trip of the loop.
const STEPS_PER_TRIP: u32 = 8u;
// Loads in flight per invocation in the copy's loop.
const COPY_UNROLL: u32 = 4u;

// Twin: CeilingParams in src/kernels/ceilings.rs.
struct CeilingParams {
    n_items: u32,    // fma_chains: invocations that write; copy_vec4, fill_vec4: vec4 elements
    iterations: u32, // fma_chains: trips of the loop, STEPS_PER_TRIP steps each
    stride: u32,     // copy_vec4, fill_vec4: invocations in the dispatch
    grid_x: u32,
    scale: f32,
    step: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: CeilingParams;
@group(0) @binding(1) var<storage, read_write> chain_sums: array<f32>;
@group(0) @binding(2) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> dst: array<vec4<f32>>;

// The chains of one invocation, by name (no run-time indexing anywhere).
struct Chains {
    a0: vec4<f32>, a1: vec4<f32>, a2: vec4<f32>, a3: vec4<f32>,
    a4: vec4<f32>, a5: vec4<f32>, a6: vec4<f32>, a7: vec4<f32>,
    a8: vec4<f32>, a9: vec4<f32>, a10: vec4<f32>, a11: vec4<f32>,
    a12: vec4<f32>, a13: vec4<f32>, a14: vec4<f32>, a15: vec4<f32>,
}

// One step of every chain: 16 independent vec4 FMAs, one after another in the instruction
// stream, so consecutive instructions never wait on each other.
fn step_all(c: Chains, s: vec4<f32>, t: vec4<f32>) -> Chains {
    return Chains(
        fma(c.a0, s, t), fma(c.a1, s, t), fma(c.a2, s, t), fma(c.a3, s, t),
        fma(c.a4, s, t), fma(c.a5, s, t), fma(c.a6, s, t), fma(c.a7, s, t),
        fma(c.a8, s, t), fma(c.a9, s, t), fma(c.a10, s, t), fma(c.a11, s, t),
        fma(c.a12, s, t), fma(c.a13, s, t), fma(c.a14, s, t), fma(c.a15, s, t),
    );
}

@compute @workgroup_size(PROBE_WG_SIZE)
fn fma_chains(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let e = invocation_index(wid, params.grid_x, PROBE_WG_SIZE, lid);
    if e >= params.n_items {
        return;
    }
    // Starts: small integers that differ per invocation and per lane (lane m starts at
    // base + m, m = 0 .. 63).
    let a = f32(e % 1024u) + vec4<f32>(0.0, 1.0, 2.0, 3.0);
    var c = Chains(
        a, a + 4.0, a + 8.0, a + 12.0, a + 16.0, a + 20.0, a + 24.0, a + 28.0,
        a + 32.0, a + 36.0, a + 40.0, a + 44.0, a + 48.0, a + 52.0, a + 56.0, a + 60.0,
    );
    let s = vec4<f32>(params.scale);
    let t = vec4<f32>(params.step);
    for (var i = 0u; i < params.iterations; i++) {
        // STEPS_PER_TRIP (8) steps, written out.
        c = step_all(c, s, t);
        c = step_all(c, s, t);
        c = step_all(c, s, t);
        c = step_all(c, s, t);
        c = step_all(c, s, t);
        c = step_all(c, s, t);
        c = step_all(c, s, t);
        c = step_all(c, s, t);
    }
    let lo = ((c.a0 + c.a1) + (c.a2 + c.a3)) + ((c.a4 + c.a5) + (c.a6 + c.a7));
    let hi = ((c.a8 + c.a9) + (c.a10 + c.a11)) + ((c.a12 + c.a13) + (c.a14 + c.a15));
    let v = lo + hi;
    chain_sums[e] = (v.x + v.y) + (v.z + v.w);
}

@compute @workgroup_size(PROBE_WG_SIZE)
fn copy_vec4(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let first = invocation_index(wid, params.grid_x, PROBE_WG_SIZE, lid);
    let stride = params.stride;
    let n = params.n_items;
    // The overhang of a 2-D grid would copy elements twice.
    if first >= stride {
        return;
    }
    // Whole trips: COPY_UNROLL (4) loads issued before any store. The host keeps
    // n + 4 x stride below 2^32, so no index wraps.
    let whole_end = select(0u, n - 3u * stride, n > 3u * stride);
    var i = first;
    for (; i < whole_end; i += 4u * stride) {
        let v0 = src[i];
        let v1 = src[i + stride];
        let v2 = src[i + 2u * stride];
        let v3 = src[i + 3u * stride];
        dst[i] = v0;
        dst[i + stride] = v1;
        dst[i + 2u * stride] = v2;
        dst[i + 3u * stride] = v3;
    }
    // The tail: fewer than 4 elements of this invocation are left.
    for (; i < n; i += stride) {
        dst[i] = src[i];
    }
}

@compute @workgroup_size(PROBE_WG_SIZE)
fn fill_vec4(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let first = invocation_index(wid, params.grid_x, PROBE_WG_SIZE, lid);
    if first >= params.stride {
        return;
    }
    for (var i = first; i < params.n_items; i += params.stride) {
        let m = (vec4<u32>(i) + vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(0xffffu);
        dst[i] = vec4<f32>(m);
    }
}
