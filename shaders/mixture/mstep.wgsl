// M-step of a Gaussian mixture: weighted sums of the responsibilities, per block of rows.
//
// Host wrapper: src/kernels/mixture/mstep.rs.
//
// For each block of `block_rows` rows (so no f32 sum covers more than one block; the host
// folds the blocks with reduce.wgsl and finishes in f64), with rᵢₖ the responsibilities and
// sₖ a per-component shift (K x D):
//
//   weighted_moments_tiled   [block][k][0..D]      : Σᵢ rᵢₖ (xᵢⱼ − sₖⱼ)
//                            [block][k][D]         : Σᵢ rᵢₖ
//                            [block][k][D + 1 + j] : Σᵢ rᵢₖ (xᵢⱼ − sₖⱼ)²
//   weighted_scatter         [block][k][i][j]: Σᵢ rᵢₖ (xᵢ − sₖ)ᵢ (xᵢ − sₖ)ⱼ  for j ≥ i
//                            (entries j < i are never written: the host mirrors them)
//
// With sₖ = the previous means, the first moments give Nₖ(μₖ − sₖ) (new means without large
// magnitudes in the f32 sums); with sₖ = the new means, the second moments give the
// Diag/Spherical variances and weighted_scatter the Full/Tied covariances, both centred:
// never E[x xᵀ] − μ μᵀ. In weighted_scatter one invocation owns one output of one block and
// walks the block's rows in order (deterministic sums; neighbouring invocations share the
// row and read neighbouring features). For D ≥ 24 the host uses weighted_scatter_tiled
// instead (below), the same sums as a GEMM on the tile core. On CPU-like adapters the
// autotuner may pick the *_uniform twins (at the end), the same sums bit for bit with the
// rows read from uniform slices.
//
// @trusted: blocks, components, outputs and rows below the dispatch's counts, guarded before
//   every access

#import constants
#import grid
#import gemm
#import vec4s

// Twin: MstepParams in src/kernels/mixture/mstep.rs.
struct MstepParams {
    n_rows: u32,       // rows in this segment
    x_offset: u32,     // index of the segment's first value inside the bound range of x
    d: u32,
    k: u32,
    block_rows: u32,
    block_offset: u32, // global index of the segment's first block
    n_blocks: u32,     // blocks in this segment
    n_outputs: u32,    // outputs per block: K (2D + 1), K D² or K (D + 1)²
    grid_x: u32,
    augmented: u32,    // the scatters: 1 for the augmented row (x − s, 1), else 0
    slice_first: u32,  // *_uniform: the slice's first row (in the segment)
    slice_rows: u32,   // *_uniform: rows in the slice
    slice_block: u32,  // *_uniform: the first block (in the segment) the slice meets
    slice_blocks: u32, // *_uniform: blocks the slice meets
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

// weighted_moments_tiled: n_outputs = K (2D + 1) per block, [k][0..D] Σ r (x − s),
// [k][D] Σ r, [k][D + 1 + j] Σ r (x − s)ⱼ², as an outer product with the block's rows as the
// depth. A workgroup owns one block and a tile of MOMENTS_LANES_C·4 components by
// (256 / MOMENTS_LANES_C)·4 features; its invocations own 4 components x 4 features each
// (accumulators, shifts: named vec4s in registers). Per stage MOMENTS_STAGE rows of r (the
// tile's components) and x (its features) are loaded coalesced into workgroup memory, then
// every invocation takes them row by row: one vec4 of r and one of x feed 16 outputs'
// sub, fma, mul, fma. Each output is one chain over the block's rows in order from +0.0,
// acc1 = fma(r, v, acc1), acc2 = fma(r·v, v, acc2), Σ r = Σ r + r, v = x − s: the chains of
// the uniform twin, so the two give the same bits. X is read once per component tile (once
// for K <= 64) and r once per feature tile, instead of once per output.
const MOMENTS_WG: u32 = 256u;
const MOMENTS_STAGE: u32 = 8u;      // rows per stage
const MOMENTS_MAX_COMPS: u32 = 64u; // the widest component tile (16 lanes x 4)
const MOMENTS_MAX_QUADS: u32 = 64u; // the widest feature tile in vec4s (64 lanes x 4 features)
// Invocations along the tile's components: 4, 8 or 16 (then 64, 32 or 16 along its features).
override MOMENTS_LANES_C: u32 = 16u;

var<workgroup> moments_r: array<vec4<f32>, MOMENTS_STAGE * MOMENTS_MAX_COMPS / 4u>;
var<workgroup> moments_x: array<vec4<f32>, MOMENTS_STAGE * MOMENTS_MAX_QUADS>;

// Value `e` (0 .. 4 MOMENTS_STAGE·quads) of a stage laid out [row][quad] as vec4s.
fn moments_put_r(e: u32, quads: u32, v: f32) {
    moments_r[e / (4u * quads) * (MOMENTS_MAX_COMPS / 4u) + e % (4u * quads) / 4u][e % 4u] = v;
}

fn moments_put_x(e: u32, quads: u32, v: f32) {
    moments_x[e / (4u * quads) * MOMENTS_MAX_QUADS + e % (4u * quads) / 4u][e % 4u] = v;
}

@compute @workgroup_size(MOMENTS_WG)
fn weighted_moments_tiled(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let lanes_f = MOMENTS_WG / MOMENTS_LANES_C;
    let c_quads = MOMENTS_LANES_C;          // vec4s of components in a tile
    let tile_c = 4u * MOMENTS_LANES_C;
    let tile_f = 4u * lanes_f;
    let n_ct = (p.k + tile_c - 1u) / tile_c;
    let n_ft = (p.d + tile_f - 1u) / tile_f;
    let g = workgroup_index(wid, p.grid_x);
    let valid = g < p.n_blocks * n_ct * n_ft;
    let block = g / max(n_ct * n_ft, 1u);
    let c_base = (g / n_ft) % n_ct * tile_c;
    let f_base = g % n_ft * tile_f;
    let first = block * p.block_rows;
    var last = first;
    if valid {
        last = min(first + p.block_rows, p.n_rows);
    }
    // This invocation's components c0 .. c0 + 3 and features f0 .. f0 + 3.
    let cl = lid / lanes_f;
    let fl = lid % lanes_f;
    let c0 = c_base + 4u * cl;
    let f0 = f_base + 4u * fl;
    // Shifts (zero past K or D: those outputs are never written).
    var sh: array<vec4<f32>, 4>;
    for (var i = 0u; i < 4u; i++) {
        for (var t = 0u; t < 4u; t++) {
            if valid && c0 + i < p.k && f0 + t < p.d {
                sh[i][t] = shift[(c0 + i) * p.d + f0 + t];
            }
        }
    }
    let s0 = sh[0];
    let s1 = sh[1];
    let s2 = sh[2];
    let s3 = sh[3];
    var a0 = vec4<f32>();
    var a1 = vec4<f32>();
    var a2 = vec4<f32>();
    var a3 = vec4<f32>();
    var b0 = vec4<f32>();
    var b1 = vec4<f32>();
    var b2 = vec4<f32>();
    var b3 = vec4<f32>();
    var total = vec4<f32>();
    let busy = c0 < p.k && f0 < p.d;
    // Stages of MOMENTS_STAGE rows; the count depends only on the workgroup (uniform
    // barriers), rows past the block's end are not taken.
    let n_stages = (last - first + MOMENTS_STAGE - 1u) / MOMENTS_STAGE;
    for (var s = 0u; s < n_stages; s++) {
        let r0 = first + s * MOMENTS_STAGE;
        workgroupBarrier();
        // Coalesced: consecutive invocations load consecutive components / features of a row.
        for (var e = lid; e < MOMENTS_STAGE * tile_c; e += MOMENTS_WG) {
            let row = r0 + e / tile_c;
            let c = c_base + e % tile_c;
            var v = 0.0;
            if row < last && c < p.k {
                v = resp[row * p.k + c];
            }
            moments_put_r(e, c_quads, v);
        }
        for (var e = lid; e < MOMENTS_STAGE * tile_f; e += MOMENTS_WG) {
            let row = r0 + e / tile_f;
            let j = f_base + e % tile_f;
            var v = 0.0;
            if row < last && j < p.d {
                v = x[p.x_offset + row * p.d + j];
            }
            moments_put_x(e, lanes_f, v);
        }
        workgroupBarrier();
        let rows = min(MOMENTS_STAGE, last - r0);
        if busy {
            for (var i = 0u; i < rows; i++) {
                let r = moments_r[i * (MOMENTS_MAX_COMPS / 4u) + cl];
                let xv = moments_x[i * MOMENTS_MAX_QUADS + fl];
                total += r;
                let v0 = xv - s0;
                let v1 = xv - s1;
                let v2 = xv - s2;
                let v3 = xv - s3;
                let r0v = vec4<f32>(r.x);
                let r1v = vec4<f32>(r.y);
                let r2v = vec4<f32>(r.z);
                let r3v = vec4<f32>(r.w);
                a0 = fma(r0v, v0, a0);
                a1 = fma(r1v, v1, a1);
                a2 = fma(r2v, v2, a2);
                a3 = fma(r3v, v3, a3);
                b0 = fma(r0v * v0, v0, b0);
                b1 = fma(r1v * v1, v1, b1);
                b2 = fma(r2v * v2, v2, b2);
                b3 = fma(r3v * v3, v3, b3);
            }
        }
    }
    if !valid || !busy {
        return;
    }
    let a = array<vec4<f32>, 4>(a0, a1, a2, a3);
    let b = array<vec4<f32>, 4>(b0, b1, b2, b3);
    let per = 2u * p.d + 1u;
    for (var i = 0u; i < 4u; i++) {
        if c0 + i < p.k {
            let out = (p.block_offset + block) * p.n_outputs + (c0 + i) * per;
            for (var t = 0u; t < 4u; t++) {
                if f0 + t < p.d {
                    partials[out + f0 + t] = a[i][t];
                    partials[out + p.d + 1u + f0 + t] = b[i][t];
                }
            }
            // Σ r once per component: by the invocations of the first features.
            if f0 == 0u {
                partials[out + p.d] = total[i];
            }
        }
    }
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

// weighted_scatter as a GEMM on the tile core (shared/gemm.wgsl), for larger D, with the rows
// as depth: a workgroup owns one square tile (gemm_tile_m() = gemm_tile_n()) on or above the
// diagonal of one component's scatter in one block, stages GEMM_DEPTH rows of rᵢₖ (xᵢ − sₖ)
// (gemm_a) and (xᵢ − sₖ) (gemm_b) depth-major, four columns of a row a load, a stage ahead in
// registers, and each invocation accumulates a GEMM_RM x GEMM_RN register block: each value
// read from workgroup memory feeds 8 FMAs instead of the per-output loop's 2 loads per FMA.
// Every entry is the same fma chain over the block's rows as weighted_scatter's (the same
// bits). Tiles below the diagonal are not written; a diagonal tile is written whole (it is
// symmetric).
@compute @workgroup_size(GEMM_LANES_M * GEMM_LANES_N)
fn weighted_scatter_tiled(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let tile = gemm_tile_m();
    let wg = gemm_wg_size();
    let de = p.d + p.augmented;
    let n_tiles = (de + tile - 1u) / tile;
    let n_pairs = n_tiles * (n_tiles + 1u) / 2u;
    let g = workgroup_index(wid, p.grid_x);
    let valid = g < p.n_blocks * p.k * n_pairs;
    let block = g / (p.k * n_pairs);
    let comp = (g / n_pairs) % p.k;
    let tiles = gemm_upper_tile_pair(g % n_pairs, n_tiles);
    let col_a = tiles.x * tile;
    let col_b = tiles.y * tile;
    let first = block * p.block_rows;
    let last = min(first + p.block_rows, p.n_rows);
    var n_stages = 0u;
    if valid && last > first {
        n_stages = (last - first + GEMM_DEPTH - 1u) / GEMM_DEPTH;
    }
    let lane = gemm_lane(lid);
    let s_base = comp * p.d;
    let loads = gemm_loads(tile);
    var acc: Block;
    var pa: array<vec4<f32>, GEMM_MAX_LOADS>;
    var pb: array<vec4<f32>, GEMM_MAX_LOADS>;
    // `n_stages` depends only on the workgroup and the parameters: uniform barriers.
    for (var s = 0u; s <= n_stages; s++) {
        if s > 0u {
            gemm_put_stage(lid, pa, GEMM_DEPTH_MAJOR, pb, GEMM_DEPTH_MAJOR);
        }
        if s < n_stages {
            // Prefetch stage s while stage s − 1 is multiplied.
            let r0 = first + s * GEMM_DEPTH;
            // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
            // prefetch registers are indexed by constants and stay registers.
            for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                if gemm_has_load(e, lid, loads) {
                    let slot = gemm_depth_major_slot(e * wg + lid, tile);
                    let row = r0 + slot.depth;
                    var va = vec4<f32>();
                    var vb = vec4<f32>();
                    if row < last {
                        let base = p.x_offset + row * p.d;
                        let r = resp[row * p.k + comp];
                        for (var t = 0u; t < 4u; t++) {
                            va[t] = r * deviation(base, s_base, col_a + slot.item + t);
                            vb[t] = deviation(base, s_base, col_b + slot.item + t);
                        }
                    }
                    pa[e] = va;
                    pb[e] = vb;
                }
            }
        }
        if s > 0u {
            gemm_multiply_stage(lane, &acc);
        }
    }
    if !valid {
        return;
    }
    let out = (p.block_offset + block) * p.n_outputs + comp * de * de;
    for (var i = 0u; i < GEMM_RM; i++) {
        let ia = col_a + gemm_row(lane, i);
        if ia < de {
            for (var m = 0u; m < GEMM_RN; m++) {
                let jb = col_b + gemm_col(lane, m);
                if jb < de {
                    partials[out + ia * de + jb] = block_at(acc, i, m);
                }
            }
        }
    }
}

// The *_uniform twins of weighted_scatter(_tiled) and weighted_moments_tiled: the same sums,
// bit for bit, for adapters such as lavapipe that vectorise across invocations and charge
// about a dozen FMAs for a storage load (a loop over the lanes with bounds checks) but little
// for a uniform-buffer load. The host copies slices of whole rows of the segment,
// slice_first .. slice_first + slice_rows, into `x_slice` (their values) and `resp_slice`
// (their responsibilities), and dispatches once per slice over the blocks the slice meets;
// the loops read nothing else. A block that spans several slices carries its running sums
// from slice to slice through `partials` (a slice that does not start the block reads them
// back first), so every output is still its sum over the block's rows in order from zero.

const SLICE_VALUES: u32 = 16384u; // 64 KiB: the smallest max_uniform_buffer_binding_size
const SLICE_VEC4S: u32 = SLICE_VALUES / 4u;
const UNIFORM_COLS: u32 = 16u;    // slice columns per invocation (four vec4s)
const UNIFORM_COLS4: u32 = UNIFORM_COLS / 4u;
// weighted_moments_diag_uniform's workgroup: one SIMD row of a CPU-like adapter. A slice meets
// only a few blocks, hence K x ⌈D/16⌉ x (2 or 3) invocations: in workgroups of ROW_WG_SIZE they
// would keep one of the adapter's threads busy.
const MOMENTS_UNIFORM_WG_SIZE: u32 = 8u;

@group(0) @binding(5) var<uniform> x_slice: array<vec4<f32>, SLICE_VEC4S>;
@group(0) @binding(6) var<uniform> resp_slice: array<vec4<f32>, SLICE_VEC4S>;

// Rows first .. last (segment rows) of segment block `block` that lie in this slice, and
// whether the slice starts the block (else the sums so far are in `partials`).
fn slice_rows_of(block: u32) -> vec3<u32> {
    let p = params;
    let b_first = block * p.block_rows;
    let b_last = min(b_first + p.block_rows, p.n_rows);
    let first = max(b_first, p.slice_first);
    let last = max(first, min(b_last, p.slice_first + p.slice_rows));
    return vec3<u32>(first, last, u32(b_first >= p.slice_first));
}

// Value e of a slice (clamped inside it).
fn x_value(e: u32) -> f32 {
    let at = min(e, SLICE_VALUES - 1u);
    return x_slice[at / 4u][at % 4u];
}

fn resp_value(e: u32) -> f32 {
    let at = min(e, SLICE_VALUES - 1u);
    return resp_slice[at / 4u][at % 4u];
}

// weighted_scatter_uniform: a workgroup owns one block, one component and UNIFORM_COLS
// columns j0 .. j0 + UNIFORM_COLS of the (possibly augmented) scatter, its lanes the rows i
// of the output (ROW_WG_SIZE of them per group of rows). Per data row a lane forms its
// w = r (x − s)ᵢ (r at the same address in every lane) and meets the UNIFORM_COLS deviations
// (x − s)ⱼ (five vec4s at the same address in every lane): acc[j] = fma(w, (x − s)ⱼ, acc[j]),
// the products and the order of the other variants. The accumulators, shifts and masks are
// named vec4s rather than arrays: an array indexed in a loop the driver does not unroll is
// memory, read and written lane by lane. Only the entries j ≥ i are written, as
// weighted_scatter does (the host reads no others).
@compute @workgroup_size(ROW_WG_SIZE)
fn weighted_scatter_uniform(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let de = p.d + p.augmented;
    let n_jgroups = (de + UNIFORM_COLS - 1u) / UNIFORM_COLS;
    let n_igroups = (de + ROW_WG_SIZE - 1u) / ROW_WG_SIZE;
    let per_comp = n_jgroups * n_igroups;
    let g = workgroup_index(wid, p.grid_x);
    let sblock = g / (p.k * per_comp);
    let comp = (g / per_comp) % p.k;
    let j0 = ((g / n_igroups) % n_jgroups) * UNIFORM_COLS;
    let i = (g % n_igroups) * ROW_WG_SIZE + lid;
    // Lanes past the scatter's rows, or whose row lies below every column here, write
    // nothing.
    if sblock >= p.slice_blocks || i >= de || i >= j0 + UNIFORM_COLS {
        return;
    }
    let block = p.slice_block + sblock;
    let rows = slice_rows_of(block);
    let n_j = min(UNIFORM_COLS, de - j0);
    let s_base = comp * p.d;
    let out = (p.block_offset + block) * p.n_outputs + (comp * de + i) * de + j0;
    // Column j0 + 4q + c in lane c of acc_q and sh_q; one_q marks the augmented column, whose
    // deviation is 1 (a vec4 fma is four scalar fmas: the same sums).
    var acc: array<vec4<f32>, UNIFORM_COLS4>;
    var sh: array<vec4<f32>, UNIFORM_COLS4>;
    var one: array<vec4<bool>, UNIFORM_COLS4>;
    for (var m = 0u; m < UNIFORM_COLS; m++) {
        let j = j0 + m;
        sh[m / 4u][m % 4u] = shift[s_base + min(j, p.d - 1u)];
        one[m / 4u][m % 4u] = j >= p.d;
        if rows.z == 0u && m < n_j && j >= i {
            acc[m / 4u][m % 4u] = partials[out + m];
        }
    }
    var acc0 = acc[0];
    var acc1 = acc[1];
    var acc2 = acc[2];
    var acc3 = acc[3];
    let sh0 = sh[0];
    let sh1 = sh[1];
    let sh2 = sh[2];
    let sh3 = sh[3];
    let one0 = one[0];
    let one1 = one[1];
    let one2 = one[2];
    let one3 = one[3];
    let unit = vec4<f32>(1.0);
    // The lane's own deviation: x − s below D, 1 in the augmented row.
    let own = i < p.d;
    let s_i = shift[s_base + min(i, p.d - 1u)];
    let last = SLICE_VEC4S - 1u;
    for (var row = rows.x; row < rows.y; row++) {
        let sr = row - p.slice_first;
        let r = resp_value(sr * p.k + comp);
        let w = vec4<f32>(select(r, r * (x_value(sr * p.d + i) - s_i), own));
        let e0 = sr * p.d + j0;
        let q0 = e0 / 4u;
        let al = e0 % 4u;
        let l0 = x_slice[min(q0, last)];
        let l1 = x_slice[min(q0 + 1u, last)];
        let l2 = x_slice[min(q0 + 2u, last)];
        let l3 = x_slice[min(q0 + 3u, last)];
        let l4 = x_slice[min(q0 + 4u, last)];
        acc0 = fma(w, select(realign(l0, l1, al) - sh0, unit, one0), acc0);
        acc1 = fma(w, select(realign(l1, l2, al) - sh1, unit, one1), acc1);
        acc2 = fma(w, select(realign(l2, l3, al) - sh2, unit, one2), acc2);
        acc3 = fma(w, select(realign(l3, l4, al) - sh3, unit, one3), acc3);
    }
    acc[0] = acc0;
    acc[1] = acc1;
    acc[2] = acc2;
    acc[3] = acc3;
    for (var m = 0u; m < n_j; m++) {
        if j0 + m >= i {
            partials[out + m] = acc[m / 4u][m % 4u];
        }
    }
}

// weighted_moments_diag_uniform: an invocation owns one block, one component and
// UNIFORM_COLS features j0 .. j0 + UNIFORM_COLS. Per data row it reads its r and meets the
// features (five vec4s): acc1 = fma(r, v, acc1) and acc2 = fma(r·v, v, acc2) with v = x − s, as
// weighted_moments_tiled; the workgroups of the first features also take Σ r (acc += r).
@compute @workgroup_size(MOMENTS_UNIFORM_WG_SIZE)
fn weighted_moments_diag_uniform(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let n_fgroups = (p.d + UNIFORM_COLS - 1u) / UNIFORM_COLS;
    // Invocations numbered over (block, feature group, component), so that a few
    // components still fill the lanes.
    let flat = invocation_index(wid, p.grid_x, MOMENTS_UNIFORM_WG_SIZE, lid);
    let comp = flat % p.k;
    let j0 = ((flat / p.k) % n_fgroups) * UNIFORM_COLS;
    let sblock = flat / (p.k * n_fgroups);
    if sblock >= p.slice_blocks {
        return;
    }
    let block = p.slice_block + sblock;
    let rows = slice_rows_of(block);
    let n_j = min(UNIFORM_COLS, p.d - j0);
    let out = (p.block_offset + block) * p.n_outputs + comp * (2u * p.d + 1u);
    let with_total = j0 == 0u;
    var acc1: array<vec4<f32>, UNIFORM_COLS4>;
    var acc2: array<vec4<f32>, UNIFORM_COLS4>;
    var sh: array<vec4<f32>, UNIFORM_COLS4>;
    var total = 0.0;
    for (var m = 0u; m < UNIFORM_COLS; m++) {
        sh[m / 4u][m % 4u] = shift[comp * p.d + min(j0 + m, p.d - 1u)];
        if rows.z == 0u && m < n_j {
            acc1[m / 4u][m % 4u] = partials[out + j0 + m];
            acc2[m / 4u][m % 4u] = partials[out + p.d + 1u + j0 + m];
        }
    }
    if rows.z == 0u && with_total {
        total = partials[out + p.d];
    }
    // Named vec4s rather than arrays in the loop (see weighted_scatter_uniform).
    var a10 = acc1[0];
    var a11 = acc1[1];
    var a12 = acc1[2];
    var a13 = acc1[3];
    var a20 = acc2[0];
    var a21 = acc2[1];
    var a22 = acc2[2];
    var a23 = acc2[3];
    let sh0 = sh[0];
    let sh1 = sh[1];
    let sh2 = sh[2];
    let sh3 = sh[3];
    let last = SLICE_VEC4S - 1u;
    for (var row = rows.x; row < rows.y; row++) {
        let sr = row - p.slice_first;
        let r = resp_value(sr * p.k + comp);
        total += r;
        let vr = vec4<f32>(r);
        let e0 = sr * p.d + j0;
        let q0 = e0 / 4u;
        let al = e0 % 4u;
        let l0 = x_slice[min(q0, last)];
        let l1 = x_slice[min(q0 + 1u, last)];
        let l2 = x_slice[min(q0 + 2u, last)];
        let l3 = x_slice[min(q0 + 3u, last)];
        let l4 = x_slice[min(q0 + 4u, last)];
        let v0 = realign(l0, l1, al) - sh0;
        let v1 = realign(l1, l2, al) - sh1;
        let v2 = realign(l2, l3, al) - sh2;
        let v3 = realign(l3, l4, al) - sh3;
        a10 = fma(vr, v0, a10);
        a11 = fma(vr, v1, a11);
        a12 = fma(vr, v2, a12);
        a13 = fma(vr, v3, a13);
        a20 = fma(vr * v0, v0, a20);
        a21 = fma(vr * v1, v1, a21);
        a22 = fma(vr * v2, v2, a22);
        a23 = fma(vr * v3, v3, a23);
    }
    acc1 = array<vec4<f32>, UNIFORM_COLS4>(a10, a11, a12, a13);
    acc2 = array<vec4<f32>, UNIFORM_COLS4>(a20, a21, a22, a23);
    for (var m = 0u; m < n_j; m++) {
        partials[out + j0 + m] = acc1[m / 4u][m % 4u];
        partials[out + p.d + 1u + j0 + m] = acc2[m / 4u][m % 4u];
    }
    if with_total {
        partials[out + p.d] = total;
    }
}
