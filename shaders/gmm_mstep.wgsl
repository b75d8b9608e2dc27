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
// E[x xᵀ] − μ μᵀ. In weighted_deviation_sums and weighted_scatter one invocation owns one
// output of one block and walks the block's rows in order (deterministic sums; neighbouring
// invocations share the row and read neighbouring features). For D ≥ 24 the host uses
// weighted_scatter_tiled instead (below), the same sums as a tiled GEMM.

#import constants
#import grid
#import tile

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
    augmented: u32,    // the scatters: 1 for the augmented row (x − s, 1), else 0
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: MstepParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> resp: array<f32>;  // n_rows x K
@group(0) @binding(3) var<storage, read> shift: array<f32>; // K x D
@group(0) @binding(4) var<storage, read_write> partials: array<f32>; // [block][n_outputs]

// The (block, output) of this invocation, or block = n_blocks past the end.
fn output_of(lid: u32, wid: vec3<u32>) -> vec2<u32> {
    let flat = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    return vec2<u32>(flat / params.n_outputs, flat % params.n_outputs);
}

@compute @workgroup_size(ROW_WG_SIZE)
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

// n_outputs = K (2D + 1); the invocations cover K (D + 1) outputs per block: (k, j < D)
// writes both moments of feature j from one read of each value, (k, D) writes Σ r.
@compute @workgroup_size(ROW_WG_SIZE)
fn weighted_moments_diag(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let per = 2u * p.d + 1u;
    let flat = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    let walkers = p.k * (p.d + 1u);
    let block = flat / walkers;
    if block >= p.n_blocks {
        return;
    }
    let comp = (flat % walkers) / (p.d + 1u);
    let j = flat % (p.d + 1u);
    let first = block * p.block_rows;
    let last = min(first + p.block_rows, p.n_rows);
    let out = (p.block_offset + block) * p.n_outputs + comp * per;
    if j == p.d {
        var acc = 0.0;
        for (var row = first; row < last; row++) {
            acc += resp[row * p.k + comp];
        }
        partials[out + p.d] = acc;
        return;
    }
    let s = shift[comp * p.d + j];
    var acc1 = 0.0;
    var acc2 = 0.0;
    for (var row = first; row < last; row++) {
        let r = resp[row * p.k + comp];
        let v = x[p.x_offset + row * p.d + j] - s;
        acc1 = fma(r, v, acc1);
        acc2 = fma(r * v, v, acc2);
    }
    partials[out + j] = acc1;
    partials[out + p.d + 1u + j] = acc2;
}

// The value of feature `col` of the (possibly augmented) deviation of x's value `base`
// row: x − s below D, and 1 at D of an augmented row (0 past the end).
fn deviation(base: u32, s_base: u32, col: u32) -> f32 {
    if col < params.d {
        return x[base + col] - shift[s_base + col];
    }
    return select(0.0, 1.0, col == params.d && params.augmented == 1u);
}

@compute @workgroup_size(ROW_WG_SIZE)
fn weighted_scatter(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let at = output_of(lid, wid);
    let block = at.x;
    let de = p.d + p.augmented;
    let dd = de * de;
    let comp = at.y / dd;
    let i = (at.y / de) % de;
    let j = at.y % de;
    if block >= p.n_blocks || j < i {
        return;
    }
    let first = block * p.block_rows;
    let last = min(first + p.block_rows, p.n_rows);
    let s_base = comp * p.d;
    var acc = 0.0;
    for (var row = first; row < last; row++) {
        let base = p.x_offset + row * p.d;
        let r = resp[row * p.k + comp];
        acc = fma(r * deviation(base, s_base, i), deviation(base, s_base, j), acc);
    }
    partials[(p.block_offset + block) * p.n_outputs + at.y] = acc;
}

// weighted_scatter as a tiled GEMM (shared/tile.wgsl), for larger D: a workgroup owns one
// TILE x TILE tile on or above the diagonal of one component's scatter in one block, stages
// TILE_K rows of rᵢₖ (xᵢ − sₖ) (tile_a) and (xᵢ − sₖ) (tile_b) through workgroup memory
// (coalesced loads) and each invocation accumulates a 4 x 4 register block, so each value
// read from workgroup memory feeds 4 FMAs instead of the per-output loop's 2 loads per FMA.
// Tiles below the diagonal are not written; a diagonal tile is written whole (it is
// symmetric).
@compute @workgroup_size(TILE_WG_SIZE)
fn weighted_scatter_tiled(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let de = p.d + p.augmented;
    let n_tiles = (de + TILE - 1u) / TILE;
    let n_pairs = n_tiles * (n_tiles + 1u) / 2u;
    let g = workgroup_index(wid, p.grid_x);
    let valid = g < p.n_blocks * p.k * n_pairs;
    let block = g / (p.k * n_pairs);
    let comp = (g / n_pairs) % p.k;
    let tiles = upper_tile_pair(g % n_pairs, n_tiles);
    let col_a = tiles.x * TILE;
    let col_b = tiles.y * TILE;
    let first = block * p.block_rows;
    let last = min(first + p.block_rows, p.n_rows);
    var steps = 0u;
    if valid && last > first {
        steps = (last - first + TILE_K - 1u) / TILE_K;
    }
    let lane = tile_lane(lid);
    let s_base = comp * p.d;
    var acc: array<f32, TILE_REGS>;
    for (var s = 0u; s < steps; s++) {
        let r0 = first + s * TILE_K;
        for (var e = lid; e < TILE_STEP; e += TILE_WG_SIZE) {
            let slot = depth_major_slot(e);
            let row = r0 + slot.k;
            let c = slot.item;
            var va = 0.0;
            var vb = 0.0;
            if row < last {
                let base = p.x_offset + row * p.d;
                va = resp[row * p.k + comp] * deviation(base, s_base, col_a + c);
                vb = deviation(base, s_base, col_b + c);
            }
            tile_a[slot.at] = va;
            tile_b[slot.at] = vb;
        }
        workgroupBarrier();
        accumulate_products(lane, &acc);
        workgroupBarrier();
    }
    if !valid {
        return;
    }
    let out = (p.block_offset + block) * p.n_outputs + comp * de * de;
    for (var i = 0u; i < TILE_BLOCK; i++) {
        let ia = col_a + lane_row(lane, i);
        if ia < de {
            for (var m = 0u; m < TILE_BLOCK; m++) {
                let jb = col_b + lane_col(lane, m);
                if jb < de {
                    partials[out + ia * de + jb] = acc[i * TILE_BLOCK + m];
                }
            }
        }
    }
}
