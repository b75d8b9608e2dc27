// Ceilings: microbenchmarks of this adapter's practical FMA throughput and memory bandwidth,
// the two limits a kernel's FLOPs and bytes are held against.
//
// Host wrapper: src/kernels/ceilings.rs; timing and sizing: src/gpu/ceilings.rs.
//
// fma_chains: every invocation advances VEC4_CHAINS independent vec4 chains
// a <- fma(a, scale, step) for `iterations` x UNROLL steps. The chains are independent so the
// latency of one FMA hides behind the others; `scale` and `step` come from the uniform so
// the compiler cannot fold them, and each invocation writes the sum of its chains so none
// can be dropped. With scale = step = 1 and small integer starts every value is an exact
// integer in f32, which lets the host check the result bit for bit.
//
// copy_vec4: dst = src over n vec4 elements, grid-stride (each invocation copies elements
// gid, gid + stride, ...), so the number of invocations is chosen for the machine, not by N.
//
// @trusted: every index is the invocation's own element or register, below the sizes the host
//   allocates

#import constants
#import grid

// Independent vec4 chains per invocation (4 x VEC4_CHAINS scalar FMAs per step).
const VEC4_CHAINS: u32 = 8u;
// Steps per trip of the outer loop: a fixed inner count the compiler unrolls, so the loop's
// own counting and branching (costly on a CPU adapter such as lavapipe) stays small next to
// the FMAs.
const UNROLL: u32 = 8u;

// Twin: CeilingParams in src/kernels/ceilings.rs.
struct CeilingParams {
    n_items: u32,    // fma_chains: invocations that write; copy_vec4: vec4 elements
    iterations: u32, // fma_chains: trips of the outer loop, UNROLL steps each
    stride: u32,     // copy_vec4: invocations in the dispatch
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

@compute @workgroup_size(ROW_WG_SIZE)
fn fma_chains(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let e = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if e >= params.n_items {
        return;
    }
    // Starts: small integers that differ per invocation and per chain.
    let base = f32(e % 1024u);
    let s = vec4<f32>(params.scale);
    let c = vec4<f32>(params.step);
    var a0 = base + vec4<f32>(0.0, 1.0, 2.0, 3.0);
    var a1 = a0 + 4.0;
    var a2 = a0 + 8.0;
    var a3 = a0 + 12.0;
    var a4 = a0 + 16.0;
    var a5 = a0 + 20.0;
    var a6 = a0 + 24.0;
    var a7 = a0 + 28.0;
    for (var i = 0u; i < params.iterations; i++) {
        for (var u = 0u; u < UNROLL; u++) {
            a0 = fma(a0, s, c);
            a1 = fma(a1, s, c);
            a2 = fma(a2, s, c);
            a3 = fma(a3, s, c);
            a4 = fma(a4, s, c);
            a5 = fma(a5, s, c);
            a6 = fma(a6, s, c);
            a7 = fma(a7, s, c);
        }
    }
    let t = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
    chain_sums[e] = (t.x + t.y) + (t.z + t.w);
}

@compute @workgroup_size(ROW_WG_SIZE)
fn copy_vec4(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let first = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    // The overhang of a 2-D grid would copy elements twice.
    if first >= params.stride {
        return;
    }
    for (var i = first; i < params.n_items; i += params.stride) {
        dst[i] = src[i];
    }
}
