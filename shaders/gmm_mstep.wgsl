// M-step of a Gaussian mixture: weighted sums of the responsibilities, per block of rows.
//
// Host wrapper: src/kernels/gmm_mstep.rs.
//
// For each block of `block_rows` rows (so no f32 sum covers more than one block; the host
// folds the blocks with reduce.wgsl and finishes in f64), with rᵢₖ the responsibilities and
// sₖ a per-component shift (K x D):
//
//   weighted_deviation_sums  [block][k][0..D]: Σᵢ rᵢₖ (xᵢⱼ − sₖⱼ)^power   (power 1 or 2)
//                            [block][k][D]   : Σᵢ rᵢₖ
//   weighted_scatter         [block][k][i][j]: Σᵢ rᵢₖ (xᵢ − sₖ)ᵢ (xᵢ − sₖ)ⱼ  for j ≥ i
//                            (entries j < i are never written: the host mirrors them)
//
// With sₖ = the previous means, power 1 gives Nₖ(μₖ − sₖ) (new means without large
// magnitudes in the f32 sums); with sₖ = the new means, power 2 gives the Diag/Spherical
// variances and weighted_scatter the Full/Tied covariances, both centred: never
// E[x xᵀ] − μ μᵀ. One invocation owns one output of one block and walks the block's rows in
// order, so the sums are deterministic; invocations next to each other share the row and
// read neighbouring features.

override WG_SIZE: u32 = 64u;

// Twin: MstepParams in src/kernels/gmm_mstep.rs.
struct MstepParams {
    n_rows: u32,       // rows in this segment
    x_offset: u32,     // index of the segment's first value inside the bound range of x
    d: u32,
    k: u32,
    block_rows: u32,
    block_offset: u32, // global index of the segment's first block
    n_blocks: u32,     // blocks in this segment
    n_outputs: u32,    // outputs per block: K (D + 1) or K D²
    power: u32,        // weighted_deviation_sums: 1 or 2
    grid_x: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: MstepParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> resp: array<f32>;  // n_rows x K
@group(0) @binding(3) var<storage, read> shift: array<f32>; // K x D
@group(0) @binding(4) var<storage, read_write> partials: array<f32>; // [block][n_outputs]

// The (block, output) of this invocation, or block = n_blocks past the end.
fn output_of(lid: u32, wid: vec3<u32>) -> vec2<u32> {
    let flat = (wid.y * params.grid_x + wid.x) * WG_SIZE + lid;
    return vec2<u32>(flat / params.n_outputs, flat % params.n_outputs);
}

@compute @workgroup_size(WG_SIZE)
fn weighted_deviation_sums(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let at = output_of(lid, wid);
    let block = at.x;
    if block >= p.n_blocks {
        return;
    }
    let comp = at.y / (p.d + 1u);
    let j = at.y % (p.d + 1u);
    let first = block * p.block_rows;
    let last = min(first + p.block_rows, p.n_rows);
    var acc = 0.0;
    if j == p.d {
        for (var row = first; row < last; row++) {
            acc += resp[row * p.k + comp];
        }
    } else {
        let s = shift[comp * p.d + j];
        for (var row = first; row < last; row++) {
            let r = resp[row * p.k + comp];
            let v = x[p.x_offset + row * p.d + j] - s;
            if p.power == 2u {
                acc = fma(r * v, v, acc);
            } else {
                acc = fma(r, v, acc);
            }
        }
    }
    partials[(p.block_offset + block) * p.n_outputs + at.y] = acc;
}

@compute @workgroup_size(WG_SIZE)
fn weighted_scatter(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let at = output_of(lid, wid);
    let block = at.x;
    let dd = p.d * p.d;
    let comp = at.y / dd;
    let i = (at.y / p.d) % p.d;
    let j = at.y % p.d;
    if block >= p.n_blocks || j < i {
        return;
    }
    let first = block * p.block_rows;
    let last = min(first + p.block_rows, p.n_rows);
    let si = shift[comp * p.d + i];
    let sj = shift[comp * p.d + j];
    var acc = 0.0;
    for (var row = first; row < last; row++) {
        let base = p.x_offset + row * p.d;
        let r = resp[row * p.k + comp];
        acc = fma(r * (x[base + i] - si), x[base + j] - sj, acc);
    }
    partials[(p.block_offset + block) * p.n_outputs + at.y] = acc;
}
