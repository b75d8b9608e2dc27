// Nearest-centroid assignment and point-to-centroid distances.
//
// Host wrapper: src/kernels/assign.rs.
//
// Every variant writes, for each row, the nearest centroid (ties: the lowest index) by the
// exact squared distance d̂ₖ = Σⱼ (xⱼ − cₖⱼ)², summed as one fma chain over j in order from 0,
// and that distance; so the variants give the same bits and the host may pick any of them.
//
// The GEMM form (assign_tiled on GPUs, assign_texture on CPU-like adapters) finds the
// candidate through ‖x − s‖² − 2 (x − s)·(cₖ − s) + ‖cₖ − s‖², one FMA per multiply-add on the
// tile core (shared/gemm.wgsl), with s the mean of the centroids and the centroid side
// prepared once per pass (centroid_shift, centroid_prep). Per row it keeps vₖ = ‖c′ₖ‖² − 2 x′·c′ₖ
// of the best candidate and a lower bound of every other one, and proves the candidate
// exact when
//     min_{j ≠ best} (vⱼ − β ‖c′ⱼ‖²) − (v_best + β ‖c′_best‖²) > 2 β ‖x′‖²,
// β = (4D + 32) u / (1 − (4D + 8) u), u = 2⁻²⁴ (the host computes it: kernels::assign::beta).
// β (‖x′‖² + ‖c′ⱼ‖²) bounds both |vⱼ + ‖x′‖² − dⱼ| (GEMM form, rounding of x′ = fl(x − s),
// c′ = fl(c − s), the dot product, the norm and the final fma) and |d̂ⱼ − dⱼ| (difference form),
// dⱼ the exact distance, with the f32 rounding of the test itself; the derivation is in
// src/kernels/assign_bound.rs, which also checks it on adversarial data. When the test holds,
// the exact argmin is the candidate; its d̂ is then recomputed in the difference form. The
// search also keeps the runner-up: when the same test holds with min over the candidates
// other than the two, against the lower of their upper bounds, the argmin of d̂ is one of
// the two (the same proof, assign_bound.rs), and both are recomputed in the difference form
// (a near tie between two centroids, the common case, costs 2D more, not K·D). A row that
// fails both (several near ties, or a non-finite value) goes on the recheck list, and
// assign_recheck compares all K centroids in the difference form, as the other variants do.
//
// assign_rows (GPUs, K <= SMALL_K) reads the rows of a workgroup cooperatively with vec4 loads
// into workgroup memory, the centroids beside them, and sums the difference form directly:
// with few centroids the pass is bound by reading X, and the exact form costs nothing.
// assign_rows_update (GPUs, K <= SMALL_K, D <= FUSED_MAX_D; host: src/kernels/assign_fused.rs)
// is assign_rows with the K-Means (Lloyd) update's per-block partials summed in its epilogue
// from the rows it staged, so K-Means reads X once per iteration (see its section below).
// assign_nearest_centroid_registers and assign_nearest_centroid_uniform (one row per
// invocation, centroids from storage or from 64 KiB uniform slices) suit CPU-like adapters.

#import constants
#import grid
#import gemm
#import texels
#import vec4s

const SMALL_K: u32 = 16u; // register accumulators of the one-row-per-invocation kernels

// Twin: AssignParams in src/kernels/assign.rs.
struct AssignParams {
    n_rows: u32,    // rows in this dispatch
    x_offset: u32,  // index of the dispatch's first value inside the bound range of x
    d: u32,
    k: u32,
    grid_x: u32,    // workgroups along x (2-D grids when one dimension is not enough)
    sqrt_output: u32, // pairwise_distances: 1 = Euclidean, 0 = squared
    k_first: u32,     // assign_nearest_centroid_uniform: global index of the slice's first centroid
    slice_flags: u32, // assign_nearest_centroid_uniform, assign_recheck: FIRST_SLICE | LAST_SLICE | RECHECK_ROWS
    d4: u32,          // ceil(D / 4): vec4s per prepared centroid row
    x_vec4: u32,      // 1: x_offset and D are multiples of 4, so rows load as vec4s from x4
    beta: f32,        // the error-bound coefficient β (see above)
    block_rows: u32,   // assign_rows_update: rows per block of partials (a multiple of ROWS_WG)
    block_offset: u32, // assign_rows_update: global index of the dispatch's first block
    weighted: u32,     // assign_rows_update: 1: rows weighted by `weights`; 0: every weight 1
    _pad0: u32,
    _pad1: u32,
}

const FIRST_SLICE: u32 = 1u;
const LAST_SLICE: u32 = 2u;
const RECHECK_ROWS: u32 = 4u; // assign_nearest_centroid_uniform: the rows on the recheck list
// vec4s of one centroid slice: 64 KiB, the smallest max_uniform_buffer_binding_size WebGPU
// allows, so the slice binds on every adapter.
const SLICE_VEC4S: u32 = 4096u;

@group(0) @binding(0) var<uniform> params: AssignParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> centroids: array<f32>;
@group(0) @binding(3) var<storage, read_write> labels: array<u32>;
@group(0) @binding(4) var<storage, read_write> min_sq_dist: array<f32>;
@group(0) @binding(5) var<storage, read_write> changed: atomic<u32>;
@group(0) @binding(6) var<storage, read_write> distances: array<f32>;
// Centroids k_first .. k_first + k, each padded to ceil(D / 4) vec4s (zeros past D).
@group(0) @binding(7) var<uniform> centroid_slice: array<vec4<f32>, SLICE_VEC4S>;
// Best centroid so far, between the slices of one assignment.
@group(0) @binding(8) var<storage, read_write> running_labels: array<u32>;
// The same range as x, as vec4s (bound only when x_vec4 = 1 makes every row start aligned).
@group(0) @binding(9) var<storage, read> x4: array<vec4<f32>>;
// The centroid side of the GEMM form, [K·d4 vec4: c′ = c − s, zeros past D]
// [K vec4: (‖c′‖², β‖c′‖², 0, 0)] [d4 vec4: s]; written by centroid_shift and centroid_prep.
@group(0) @binding(10) var<storage, read_write> prepared: array<vec4<f32>>;
// [0]: rows on the list; [1 + i]: the i-th row (within the dispatch) to recheck.
@group(0) @binding(11) var<storage, read_write> recheck: array<atomic<u32>>;
// assign_texture: flat textures of x (the dispatch's rows from value 0), of the centroids
// and of `prepared` (shared/texels.wgsl).
@group(0) @binding(12) var x_texels: texture_2d_array<f32>;
@group(0) @binding(13) var centroid_texels: texture_2d_array<f32>;
@group(0) @binding(14) var prepared_texels: texture_2d_array<f32>;
// assign_rows_update: the rows' sample weights (when `weighted`) and the Lloyd update's
// per-block partials, laid out as centroid_update.wgsl writes them: [block][cluster][feature]
// sums of w·(x − old c), [block][cluster] counts, [block][cluster][2] sums of w·d² and w.
@group(0) @binding(15) var<storage, read> weights: array<f32>;
@group(0) @binding(16) var<storage, read_write> partial_sums: array<f32>;
@group(0) @binding(17) var<storage, read_write> partial_counts: array<u32>;
@group(0) @binding(18) var<storage, read_write> partial_sq_dist: array<f32>;

var<workgroup> wg_changed: atomic<u32>;

fn norms_base() -> u32 {
    return params.k * params.d4;
}

fn shift_base() -> u32 {
    return params.k * params.d4 + params.k;
}

// ---- The centroid side, once per pass ----

// s_j: the mean of the centroids' feature j (summed in order of k), at prepared[shift_base()].
@compute @workgroup_size(ROW_WG_SIZE)
fn centroid_shift(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let j = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if j >= 4u * params.d4 {
        return;
    }
    var s = 0.0;
    if j < params.d {
        for (var c = 0u; c < params.k; c++) {
            s += centroids[c * params.d + j];
        }
        s /= f32(params.k);
    }
    prepared[shift_base() + j / 4u][j % 4u] = s;
}

// c′ = c − s for centroid c (zeros past D), its squared norm (one fma chain over j) and its
// slack β‖c′‖².
@compute @workgroup_size(ROW_WG_SIZE)
fn centroid_prep(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let c = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if c >= params.k {
        return;
    }
    var norm = 0.0;
    for (var q = 0u; q < params.d4; q++) {
        let s = prepared[shift_base() + q];
        var v = vec4<f32>();
        for (var t = 0u; t < 4u; t++) {
            let j = 4u * q + t;
            if j < params.d {
                v[t] = centroids[c * params.d + j] - s[t];
                norm = fma(v[t], v[t], norm);
            }
        }
        prepared[c * params.d4 + q] = v;
    }
    prepared[norms_base() + c] = vec4<f32>(norm, params.beta * norm, 0.0, 0.0);
}

// ---- The candidate search of the GEMM form ----

// One row's search so far: the best candidate (lowest v, then lowest index), its v and slack,
// the runner-up's, and the lowest v − slack among the others.
struct Search {
    v: f32,
    k: u32,
    slack: f32,
    v2: f32,
    k2: u32,
    slack2: f32,
    others: f32,
}

fn search_start() -> Search {
    return Search(F32_MAX, 0xffffffffu, 0.0, F32_MAX, 0xffffffffu, 0.0, F32_MAX);
}

// Candidate k with v = ‖c′ₖ‖² − 2p (one fma) and its slack. Candidates of one invocation come
// in increasing k, so `<` keeps the lowest index among equal v.
fn search_add(s: Search, p: f32, k: u32, norms: vec4<f32>) -> Search {
    let v = fma(-2.0, p, norms.x);
    if v < s.v {
        return Search(v, k, norms.y, s.v, s.k, s.slack, min(s.others, s.v2 - s.slack2));
    }
    if v < s.v2 {
        return Search(s.v, s.k, s.slack, v, k, norms.y, min(s.others, s.v2 - s.slack2));
    }
    return Search(s.v, s.k, s.slack, s.v2, s.k2, s.slack2, min(s.others, v - norms.y));
}

// Whether candidate (av, ak) comes before (bv, bk): lower v, then lower index.
fn search_before(av: f32, ak: u32, bv: f32, bk: u32) -> bool {
    return av < bv || (av == bv && ak < bk);
}

// Two searches over disjoint candidates, as one: the better best wins; the runner-up is the
// better of the loser's best and the winner's runner-up; every other candidate goes to the
// bound.
fn search_merge(a: Search, b: Search) -> Search {
    var w = b;
    var l = a;
    if search_before(a.v, a.k, b.v, b.k) {
        w = a;
        l = b;
    }
    let others = min(min(a.others, b.others), l.v2 - l.slack2);
    if search_before(l.v, l.k, w.v2, w.k2) {
        return Search(w.v, w.k, w.slack, l.v, l.k, l.slack, min(others, w.v2 - w.slack2));
    }
    return Search(w.v, w.k, w.slack, w.v2, w.k2, w.slack2, min(others, l.v - l.slack));
}

// A search as two vec4s (workgroup scratch between invocations): [0] best, [1] runner-up
// and bound.
fn search_pack_best(s: Search) -> vec4<f32> {
    return vec4<f32>(s.v, bitcast<f32>(s.k), s.slack, s.others);
}

fn search_pack_second(s: Search) -> vec4<f32> {
    return vec4<f32>(s.v2, bitcast<f32>(s.k2), s.slack2, 0.0);
}

fn search_unpack(best: vec4<f32>, second: vec4<f32>) -> Search {
    return Search(best.x, bitcast<u32>(best.y), best.z, second.x, bitcast<u32>(second.y), second.z, best.w);
}

// Whether the search proves its candidate the exact argmin for a row with ‖x′‖² = `norm`
// (false for near ties and for any non-finite value). The last term covers underflow: each
// of the 2D + 8 roundings may lose up to the smallest normal when results are subnormal (or
// flushed to zero), which no relative bound sees.
fn search_is_exact(s: Search, norm: f32) -> bool {
    let others = min(s.others, s.v2 - s.slack2);
    return s.k < params.k && others - (s.v + s.slack) > 2.0 * params.beta * norm + underflow_term();
}

// Whether the search proves the exact argmin one of its two candidates (the header): every
// other candidate's lower bound above the lower of their upper bounds.
fn search_pair_decides(s: Search, norm: f32) -> bool {
    let upper = min(s.v + s.slack, s.v2 + s.slack2);
    return s.k2 < params.k && s.others - upper > 2.0 * params.beta * norm + underflow_term();
}

// The underflow term of both tests (above).
fn underflow_term() -> f32 {
    return f32(2u * params.d + 8u) * 1.1754944e-38;
}

// Of two candidates' exact distances, the one every variant picks: the lower, then the lower
// index. Returns (label, distance).
fn pick_of_two(k: u32, dist: f32, k2: u32, dist2: f32) -> vec2<f32> {
    if dist2 < dist || (dist2 == dist && k2 < k) {
        return vec2<f32>(bitcast<f32>(k2), dist2);
    }
    return vec2<f32>(bitcast<f32>(k), dist);
}

// Writes a row's result: its label and d̂, and counts a changed label in the workgroup.
fn write_row(row: u32, k: u32, dist: f32) {
    if labels[row] != k {
        atomicAdd(&wg_changed, 1u);
    }
    labels[row] = k;
    min_sq_dist[row] = dist;
}

// Puts a row on the recheck list.
fn defer_row(row: u32) {
    let at = atomicAdd(&recheck[0], 1u);
    atomicStore(&recheck[1u + at], row);
}

// A vec4 of row `row` (within the dispatch) at features j .. j + 3 (zeros past D).
fn x_quad(row: u32, j: u32) -> vec4<f32> {
    let at = params.x_offset + row * params.d + j;
    if params.x_vec4 != 0u {
        return x4[at / 4u];
    }
    var v = vec4<f32>();
    for (var t = 0u; t < 4u; t++) {
        if j + t < params.d {
            v[t] = x[at + t];
        }
    }
    return v;
}

// d̂ = Σ (x_j − c_j)² (one fma chain in order) and ‖x − s‖² for row `row` and centroid k,
// from the storage buffers.
fn exact_from_storage(row: u32, k: u32) -> vec2<f32> {
    let base = params.x_offset + row * params.d;
    var dist = 0.0;
    var norm = 0.0;
    for (var j = 0u; j < params.d; j++) {
        let xv = x[base + j];
        let diff = xv - centroids[k * params.d + j];
        dist = fma(diff, diff, dist);
        let xs = xv - prepared[shift_base() + j / 4u][j % 4u];
        norm = fma(xs, xs, norm);
    }
    return vec2<f32>(dist, norm);
}

// ---- GPU path: the tiled GEMM form ----

@compute @workgroup_size(GEMM_LANES_M * GEMM_LANES_N)
fn assign_tiled(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let tile_m = gemm_tile_m();
    let tile_n = gemm_tile_n();
    let wg = gemm_wg_size();
    let first = workgroup_index(wid, params.grid_x) * tile_m;
    let lane = gemm_lane(lid);
    if lid == 0u {
        atomicStore(&wg_changed, 0u);
    }
    var search: array<Search, 8>;
    for (var i = 0u; i < 8u; i++) {
        search[i] = search_start();
    }
    let n_stages = (params.d + GEMM_DEPTH - 1u) / GEMM_DEPTH;
    let loads_a = gemm_loads(tile_m);
    let loads_b = gemm_loads(tile_n);
    for (var k0 = 0u; k0 < params.k; k0 += tile_n) {
        var acc: Block;
        var pa: array<vec4<f32>, GEMM_MAX_LOADS>;
        var pb: array<vec4<f32>, GEMM_MAX_LOADS>;
        for (var s = 0u; s <= n_stages; s++) {
            if s > 0u {
                gemm_put_stage(lid, pa, GEMM_ITEM_MAJOR, pb, GEMM_ITEM_MAJOR);
            }
            if s < n_stages {
                // Prefetch stage s while stage s − 1 is multiplied.
                let d0 = s * GEMM_DEPTH;
                for (var e = 0u; e * wg + lid < loads_a; e++) {
                    let slot = gemm_item_major_slot(e * wg + lid);
                    let row = first + slot.item;
                    let j = d0 + slot.depth;
                    var v = vec4<f32>();
                    if row < params.n_rows && j < params.d {
                        // Zeros past D: x_quad's and the shift's (padded with zeros).
                        v = x_quad(row, j) - prepared[shift_base() + j / 4u];
                    }
                    pa[e] = v;
                }
                for (var e = 0u; e * wg + lid < loads_b; e++) {
                    let slot = gemm_item_major_slot(e * wg + lid);
                    let c = k0 + slot.item;
                    let j = d0 + slot.depth;
                    var v = vec4<f32>();
                    if c < params.k && j < params.d {
                        v = prepared[c * params.d4 + j / 4u];
                    }
                    pb[e] = v;
                }
            }
            if s > 0u {
                gemm_multiply_stage(lane, &acc);
            }
        }
        // Candidates k0 + column, in increasing order per invocation.
        for (var m = 0u; m < GEMM_RN; m++) {
            let c = k0 + gemm_col(lane, m);
            if c < params.k {
                let norms = prepared[norms_base() + c];
                for (var i = 0u; i < GEMM_RM; i++) {
                    search[i] = search_add(search[i], block_at(acc, i, m), c, norms);
                }
            }
        }
    }
    // Merge the GEMM_LANES_N searches of each row, two lane columns at a time (a search is
    // two vec4s of the scratch), in lane order, into the searches of lane column 0.
    for (var g = 0u; g < GEMM_LANES_N; g += 2u) {
        workgroupBarrier();
        if lane.tx >= g && lane.tx < g + 2u {
            for (var i = 0u; i < GEMM_RM; i++) {
                let at = (gemm_row(lane, i) * 2u + lane.tx - g) * 2u;
                gemm_scratch_store(at, search_pack_best(search[i]));
                gemm_scratch_store(at + 1u, search_pack_second(search[i]));
            }
        }
        workgroupBarrier();
        if lane.tx == 0u {
            for (var i = 0u; i < GEMM_RM; i++) {
                let row = gemm_row(lane, i);
                for (var t = select(0u, 1u, g == 0u); t < 2u; t++) {
                    let at = (row * 2u + t) * 2u;
                    let other = search_unpack(gemm_scratch_load(at), gemm_scratch_load(at + 1u));
                    search[i] = search_merge(search[i], other);
                }
            }
        }
    }
    workgroupBarrier();
    if lane.tx == 0u {
        for (var i = 0u; i < GEMM_RM; i++) {
            let at = gemm_row(lane, i) * 2u;
            gemm_scratch_store(at, search_pack_best(search[i]));
            gemm_scratch_store(at + 1u, search_pack_second(search[i]));
        }
    }
    workgroupBarrier();
    // One invocation per row: the exact distance to the candidate (and the runner-up), the
    // tests, the result.
    if lid < tile_m && first + lid < params.n_rows {
        let row = first + lid;
        let s = search_unpack(gemm_scratch_load(2u * lid), gemm_scratch_load(2u * lid + 1u));
        let k = min(s.k, params.k - 1u);
        let exact = exact_from_storage(row, k);
        if search_is_exact(s, exact.y) {
            write_row(row, k, exact.x);
        } else if search_pair_decides(s, exact.y) {
            let k2 = min(s.k2, params.k - 1u);
            let pick = pick_of_two(k, exact.x, k2, exact_from_storage(row, k2).x);
            write_row(row, bitcast<u32>(pick.x), pick.y);
        } else {
            defer_row(row);
        }
    }
    workgroupBarrier();
    if lid == 0u {
        let n = atomicLoad(&wg_changed);
        if n > 0u {
            atomicAdd(&changed, n);
        }
    }
}

// The rows on the recheck list: every centroid in the difference form (as the other
// variants), the result written and a changed label counted. One dispatch compares the `k`
// centroids from k_first (the host splits K into runs that keep each invocation within
// llvmpipe's loop budget, GpuInfo::loop_back_edge_budget); the running best passes between
// runs through min_sq_dist and running_labels, in increasing centroid order, so the result
// does not depend on the split.
@compute @workgroup_size(ROW_WG_SIZE)
fn assign_recheck(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let i = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if i >= atomicLoad(&recheck[0]) {
        return;
    }
    let row = atomicLoad(&recheck[1u + i]);
    let base = params.x_offset + row * params.d;
    var best = F32_MAX;
    var best_k = 0u;
    if (params.slice_flags & FIRST_SLICE) == 0u {
        best = min_sq_dist[row];
        best_k = running_labels[row];
    }
    for (var c = 0u; c < params.k; c++) {
        let g = params.k_first + c;
        var dist = 0.0;
        for (var j = 0u; j < params.d; j++) {
            let diff = x[base + j] - centroids[g * params.d + j];
            dist = fma(diff, diff, dist);
        }
        if dist < best {
            best = dist;
            best_k = g;
        }
    }
    if (params.slice_flags & LAST_SLICE) == 0u {
        min_sq_dist[row] = best;
        running_labels[row] = best_k;
        return;
    }
    if labels[row] != best_k {
        atomicAdd(&changed, 1u);
    }
    labels[row] = best_k;
    min_sq_dist[row] = best;
}

// ---- CPU path: the GEMM form from flat textures ----

// Rows per invocation of assign_texture (the 8 x 8 block of shared/gemm.wgsl).
const TEXTURE_ROWS: u32 = 8u;
// Blocks of 8 candidates an assign_texture pass multiplies from one fetch of its rows' texels
// (1 or 2, the host's choice from K): with 2, each texel of the rows feeds 16 candidates
// instead of 8, so a pass fetches 1 + 8 + 16 texels per four features where two passes of
// one block fetched 2 (1 + 8 + 8). Fixed per pipeline, so the unused block costs nothing.
override TEXTURE_BLOCKS: u32 = 1u;

// Texel q of centroid c (clamped to the last centroid) in a flat texture of K rows of d4
// texels starting at texel `base`.
fn centroid_quads(t: texture_2d_array<f32>, base: u32, k0: u32, q: u32) -> Quads {
    var out: Quads;
    let last = params.k - 1u;
    out.v[0] = flat_texel(t, base + min(k0, last) * params.d4 + q);
    out.v[1] = flat_texel(t, base + min(k0 + 1u, last) * params.d4 + q);
    out.v[2] = flat_texel(t, base + min(k0 + 2u, last) * params.d4 + q);
    out.v[3] = flat_texel(t, base + min(k0 + 3u, last) * params.d4 + q);
    out.v[4] = flat_texel(t, base + min(k0 + 4u, last) * params.d4 + q);
    out.v[5] = flat_texel(t, base + min(k0 + 5u, last) * params.d4 + q);
    out.v[6] = flat_texel(t, base + min(k0 + 6u, last) * params.d4 + q);
    out.v[7] = flat_texel(t, base + min(k0 + 7u, last) * params.d4 + q);
    return out;
}

// Candidates k0 .. k0 + 7 of one row (products lo, hi), those below K.
fn search_add8(s0: Search, lo: vec4<f32>, hi: vec4<f32>, norms: Quads, k0: u32) -> Search {
    var s = s0;
    for (var m = 0u; m < 8u; m++) {
        if k0 + m < params.k {
            var p = lo[m % 4u];
            if m >= 4u {
                p = hi[m % 4u];
            }
            s = search_add(s, p, k0 + m, norms.v[m]);
        }
    }
    return s;
}

// n + Σ xs² over the four values of a texel, in order (one fma chain).
fn norm_add(n: f32, xs: vec4<f32>) -> f32 {
    return fma(xs.w, xs.w, fma(xs.z, xs.z, fma(xs.y, xs.y, fma(xs.x, xs.x, n))));
}

// Candidates k0 .. k0 + 7 (those below K) of a block of products, into the searches of its
// eight rows. Constant indices into the block only: on this path a dynamic index would move
// the accumulators out of registers.
fn search_add_block(search: ptr<function, array<Search, 8>>, acc: Block, k0: u32) {
    var norms: Quads;
    for (var m = 0u; m < 8u; m++) {
        norms.v[m] = flat_texel(prepared_texels, norms_base() + min(k0 + m, params.k - 1u));
    }
    (*search)[0] = search_add8((*search)[0], acc.v[0], acc.v[1], norms, k0);
    (*search)[1] = search_add8((*search)[1], acc.v[2], acc.v[3], norms, k0);
    (*search)[2] = search_add8((*search)[2], acc.v[4], acc.v[5], norms, k0);
    (*search)[3] = search_add8((*search)[3], acc.v[6], acc.v[7], norms, k0);
    (*search)[4] = search_add8((*search)[4], acc.v[8], acc.v[9], norms, k0);
    (*search)[5] = search_add8((*search)[5], acc.v[10], acc.v[11], norms, k0);
    (*search)[6] = search_add8((*search)[6], acc.v[12], acc.v[13], norms, k0);
    (*search)[7] = search_add8((*search)[7], acc.v[14], acc.v[15], norms, k0);
}

@compute @workgroup_size(ROW_WG_SIZE)
fn assign_texture(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let r0 = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid) * TEXTURE_ROWS;
    if r0 >= params.n_rows {
        return;
    }
    let d4 = params.d4;
    let last = params.n_rows - 1u;
    var rows: array<u32, 8>;
    for (var i = 0u; i < TEXTURE_ROWS; i++) {
        rows[i] = min(r0 + i, last) * d4;
    }
    var search: array<Search, 8>;
    for (var i = 0u; i < TEXTURE_ROWS; i++) {
        search[i] = search_start();
    }
    // ‖x − s‖² of each row, summed from the shifted texels the first block of candidates
    // fetches anyway (the same chain, in feature order, as exact_from_storage's): a texel
    // fetch costs llvmpipe far more than the four FMAs, and the check below needs no shift.
    var norm: array<f32, 8>;
    for (var k0 = 0u; k0 < params.k; k0 += 8u * TEXTURE_BLOCKS) {
        var acc: Block;
        var acc_next: Block; // candidates k0 + 8 .. k0 + 15 (TEXTURE_BLOCKS = 2)
        for (var q = 0u; q < d4; q++) {
            let sh = flat_texel(prepared_texels, shift_base() + q);
            var xq: Quads;
            xq.v[0] = flat_texel(x_texels, rows[0] + q) - sh;
            xq.v[1] = flat_texel(x_texels, rows[1] + q) - sh;
            xq.v[2] = flat_texel(x_texels, rows[2] + q) - sh;
            xq.v[3] = flat_texel(x_texels, rows[3] + q) - sh;
            xq.v[4] = flat_texel(x_texels, rows[4] + q) - sh;
            xq.v[5] = flat_texel(x_texels, rows[5] + q) - sh;
            xq.v[6] = flat_texel(x_texels, rows[6] + q) - sh;
            xq.v[7] = flat_texel(x_texels, rows[7] + q) - sh;
            if k0 == 0u {
                norm[0] = norm_add(norm[0], xq.v[0]);
                norm[1] = norm_add(norm[1], xq.v[1]);
                norm[2] = norm_add(norm[2], xq.v[2]);
                norm[3] = norm_add(norm[3], xq.v[3]);
                norm[4] = norm_add(norm[4], xq.v[4]);
                norm[5] = norm_add(norm[5], xq.v[5]);
                norm[6] = norm_add(norm[6], xq.v[6]);
                norm[7] = norm_add(norm[7], xq.v[7]);
            }
            gemm_multiply_quads(&acc, xq, centroid_quads(prepared_texels, 0u, k0, q));
            if TEXTURE_BLOCKS == 2u {
                gemm_multiply_quads(&acc_next, xq, centroid_quads(prepared_texels, 0u, k0 + 8u, q));
            }
        }
        // Candidates in increasing order per row: the first block, then the second.
        search_add_block(&search, acc, k0);
        if TEXTURE_BLOCKS == 2u {
            search_add_block(&search, acc_next, k0 + 8u);
        }
    }
    var n_changed = 0u;
    for (var i = 0u; i < TEXTURE_ROWS; i++) {
        let row = r0 + i;
        if row < params.n_rows {
            let s = search[i];
            let k = min(s.k, params.k - 1u);
            let k2 = min(s.k2, params.k - 1u);
            var dist = 0.0;
            var dist2 = 0.0;
            for (var q = 0u; q < d4; q++) {
                let xv = flat_texel(x_texels, rows[i] + q);
                let cv = flat_texel(centroid_texels, k * d4 + q);
                let cv2 = flat_texel(centroid_texels, k2 * d4 + q);
                for (var t = 0u; t < 4u; t++) {
                    let diff = xv[t] - cv[t];
                    dist = fma(diff, diff, dist);
                    let diff2 = xv[t] - cv2[t];
                    dist2 = fma(diff2, diff2, dist2);
                }
            }
            // The runner-up's distance is summed beside the best's: llvmpipe would run a
            // separate loop for every row whether or not its pair test holds.
            var decided = search_is_exact(s, norm[i]);
            var pick = vec2<f32>(bitcast<f32>(k), dist);
            if !decided && search_pair_decides(s, norm[i]) {
                decided = true;
                pick = pick_of_two(k, dist, k2, dist2);
            }
            if decided {
                let label = bitcast<u32>(pick.x);
                if labels[row] != label {
                    n_changed += 1u;
                }
                labels[row] = label;
                min_sq_dist[row] = pick.y;
            } else {
                defer_row(row);
            }
        }
    }
    if n_changed > 0u {
        atomicAdd(&changed, n_changed);
    }
}

// ---- GPUs, few centroids: coalesced rows, the difference form ----

// Rows per workgroup of assign_rows, features per staged piece, and the padded row of the
// staged piece (a vec4 of padding, so neighbouring invocations read neighbouring banks).
const ROWS_WG: u32 = 64u;
const ROWS_PIECE: u32 = 32u;
const ROWS_PIECE_STRIDE: u32 = ROWS_WG + 4u;

// [feature of the piece][row of the workgroup] and [centroid][feature of the piece].
var<workgroup> rows_piece: array<f32, ROWS_PIECE * ROWS_PIECE_STRIDE>;
var<workgroup> centroid_piece: array<f32, SMALL_K * ROWS_PIECE>;

// Adds to `acc` the squared differences between features j0 .. j0 + ROWS_PIECE of row
// first + lid and those of every centroid (one fma chain per centroid, in feature order):
// the workgroup loads the piece of its ROWS_WG rows with consecutive invocations on
// consecutive vec4s of a row (coalesced), and the same features of every centroid, into
// workgroup memory; each invocation then advances its row's SMALL_K chains over the piece.
// Every invocation of the workgroup calls it (barriers). The piece stays in rows_piece until
// the next call's first barrier.
fn rows_piece_sq_distances(first: u32, lid: u32, j0: u32, acc: ptr<function, array<f32, SMALL_K>>) {
    let quads = ROWS_PIECE / 4u;
    workgroupBarrier();
    // ROWS_WG rows x `quads` vec4s: invocation lid takes quads lid, lid + ROWS_WG, ...
    for (var e = lid; e < ROWS_WG * quads; e += ROWS_WG) {
        let r = e / quads;
        let j = j0 + 4u * (e % quads);
        var v = vec4<f32>();
        if first + r < params.n_rows && j < params.d {
            v = x_quad(first + r, j);
        }
        for (var t = 0u; t < 4u; t++) {
            rows_piece[(4u * (e % quads) + t) * ROWS_PIECE_STRIDE + r] = v[t];
        }
    }
    for (var e = lid; e < SMALL_K * ROWS_PIECE; e += ROWS_WG) {
        let c = e / ROWS_PIECE;
        let j = j0 + e % ROWS_PIECE;
        var v = 0.0;
        if c < params.k && j < params.d {
            v = centroids[c * params.d + j];
        }
        centroid_piece[e] = v;
    }
    workgroupBarrier();
    let n = min(ROWS_PIECE, params.d - j0);
    for (var j = 0u; j < n; j++) {
        let xv = rows_piece[j * ROWS_PIECE_STRIDE + lid];
        for (var c = 0u; c < SMALL_K; c++) {
            let diff = xv - centroid_piece[c * ROWS_PIECE + j];
            (*acc)[c] = fma(diff, diff, (*acc)[c]);
        }
    }
}

// The nearest centroid of `row` (ties: the lowest index) and its squared distance, from its
// distances to the K <= SMALL_K centroids; writes the label and the distance and counts a
// changed label.
struct Nearest {
    k: u32,
    sq_dist: f32,
}

fn settle_row(row: u32, acc: array<f32, SMALL_K>) -> Nearest {
    var best = F32_MAX;
    var best_k = 0u;
    for (var c = 0u; c < min(SMALL_K, params.k); c++) {
        if acc[c] < best {
            best = acc[c];
            best_k = c;
        }
    }
    if labels[row] != best_k {
        atomicAdd(&changed, 1u);
    }
    labels[row] = best_k;
    min_sq_dist[row] = best;
    return Nearest(best_k, best);
}

// The nearest of K <= SMALL_K centroids for ROWS_WG rows, a piece of features at a time
// (rows_piece_sq_distances).
@compute @workgroup_size(ROWS_WG)
fn assign_rows(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let first = workgroup_index(wid, params.grid_x) * ROWS_WG;
    let row = first + lid;
    var acc: array<f32, SMALL_K>;
    for (var j0 = 0u; j0 < params.d; j0 += ROWS_PIECE) {
        rows_piece_sq_distances(first, lid, j0, &acc);
    }
    if row >= params.n_rows {
        return;
    }
    settle_row(row, acc);
}

// ---- GPUs, few centroids and features: the Lloyd update in the assignment's epilogue ----
//
// assign_rows_update is assign_rows (the same labels, distances and changed count, bit for
// bit) that also writes the per-block partials of the Lloyd update, which
// accumulate_cluster_partials (centroid_update.wgsl) would write from the labels afterwards.
// The update c_k = Σ_{i∈k} w_i x_i / Σ_{i∈k} w_i is computed as
// c_k = old c_k + Σ_{i∈k} w_i (x_i − old c_k) / Σ_{i∈k} w_i, and the partials hold, per block
// of block_rows rows, cluster k and feature j, Σ w_i (x_ij − old c_kj) (summed as
// sum += w·(x − old c), a product and a sum as written there, in row order from +0.0, w
// exactly 1 when unweighted), the
// member count, Σ w_i d̂_i and Σ w_i: the same sums in the same order as
// accumulate_cluster_partials, so the same bits.
//
// A workgroup owns one whole block (block_rows a multiple of ROWS_WG) and assigns it tile by
// tile of ROWS_WG rows. In each tile's epilogue the tile's labels, weights and distances go to
// workgroup memory, and invocation j, owning feature j (D <= FUSED_MAX_D, one feature per
// invocation), adds the tile's rows in order to its K <= SMALL_K sums in registers, reading
// the rows' features from the pieces the assignment staged (so X is read from global memory
// once, and no labels pass follows); invocation c < K keeps cluster c's count, Σ w·d̂ and Σ w.
// Each sum has one writer and reaches the partials once, at the end of the block: no
// read-modify-write of global memory, and the parallel work (a workgroup per block, ROWS_WG
// invocations each) does not depend on a budget of partials.
//
// D <= FUSED_MAX_D = ROWS_WG: each invocation owns one feature, and the tile's features span
// at most two pieces, so keeping them costs one more piece of workgroup memory
// (rows_piece_first, 8.5 KiB; about 20 KiB in all) instead of a second read of the rows.
// Past it an invocation would own several features (K sums each) and the tile several
// pieces; the unfused kernels serve those shapes.
//
// Bit equality with accumulate_cluster_partials rests on writing the same expression,
// sum += w * (x − old c): a driver that contracts it into an fma does so in both kernels
// (lavapipe evidently does: an explicit fma() here gives it the same bits).

// Features of assign_rows_update: one per invocation, and at most two pieces (the first kept
// in rows_piece_first, the last still in rows_piece).
const FUSED_MAX_D: u32 = ROWS_WG;

// The first piece of the tile's features when D takes two pieces ([feature][row], as
// rows_piece).
var<workgroup> rows_piece_first: array<f32, ROWS_PIECE * ROWS_PIECE_STRIDE>;
// The tile's labels, weights and squared distances.
var<workgroup> tile_labels: array<u32, ROWS_WG>;
var<workgroup> tile_weights: array<f32, ROWS_WG>;
var<workgroup> tile_sq_dist: array<f32, ROWS_WG>;

// Row r's sample weight, or exactly 1 (centroid_update.wgsl's weight_of).
fn weight_of(r: u32) -> f32 {
    if params.weighted != 0u {
        return weights[r];
    }
    return 1.0;
}

// sums[label] += w·(x − old[label]), accumulate_cluster_partials' expression. The epilogue
// walks one row at a time, so the label is the same across the workgroup and the switch is
// one uniform branch: a runtime index would put the arrays in memory on some drivers, and
// comparing with every index would cost about 3·SMALL_K instructions per row and feature,
// more than the assignment's 2K. One case per register (SMALL_K = 16; the host asserts it).
fn add_deviation(sums: ptr<function, array<f32, SMALL_K>>, old: ptr<function, array<f32, SMALL_K>>, label: u32, w: f32, xv: f32) {
    switch label {
        case 0u: { (*sums)[0] += w * (xv - (*old)[0]); }
        case 1u: { (*sums)[1] += w * (xv - (*old)[1]); }
        case 2u: { (*sums)[2] += w * (xv - (*old)[2]); }
        case 3u: { (*sums)[3] += w * (xv - (*old)[3]); }
        case 4u: { (*sums)[4] += w * (xv - (*old)[4]); }
        case 5u: { (*sums)[5] += w * (xv - (*old)[5]); }
        case 6u: { (*sums)[6] += w * (xv - (*old)[6]); }
        case 7u: { (*sums)[7] += w * (xv - (*old)[7]); }
        case 8u: { (*sums)[8] += w * (xv - (*old)[8]); }
        case 9u: { (*sums)[9] += w * (xv - (*old)[9]); }
        case 10u: { (*sums)[10] += w * (xv - (*old)[10]); }
        case 11u: { (*sums)[11] += w * (xv - (*old)[11]); }
        case 12u: { (*sums)[12] += w * (xv - (*old)[12]); }
        case 13u: { (*sums)[13] += w * (xv - (*old)[13]); }
        case 14u: { (*sums)[14] += w * (xv - (*old)[14]); }
        case 15u: { (*sums)[15] += w * (xv - (*old)[15]); }
        default: {}
    }
}

@compute @workgroup_size(ROWS_WG)
fn assign_rows_update(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let block = workgroup_index(wid, params.grid_x);
    let first = block * params.block_rows;
    if first >= params.n_rows {
        return;
    }
    let last = min(first + params.block_rows, params.n_rows);
    let d = params.d;
    let j = lid;
    // The piece that holds the last features: features below it are kept in rows_piece_first.
    let last_j0 = (d - 1u) / ROWS_PIECE * ROWS_PIECE;
    // The old centroids' feature j, and the sums of w·(x_j − old c_j), per cluster, in
    // registers (constant indices only: add_deviation).
    var old: array<f32, SMALL_K>;
    var sums: array<f32, SMALL_K>;
    for (var c = 0u; c < SMALL_K; c++) {
        if c < params.k && j < d {
            old[c] = centroids[c * d + j];
        }
    }
    // Cluster lid's count, Σ w·d̂ and Σ w (invocations lid < K).
    var count = 0u;
    var sq_dist = 0.0;
    var weight_sum = 0.0;
    for (var t0 = first; t0 < last; t0 += ROWS_WG) {
        var acc: array<f32, SMALL_K>;
        for (var j0 = 0u; j0 < d; j0 += ROWS_PIECE) {
            rows_piece_sq_distances(t0, lid, j0, &acc);
            // The next piece overwrites rows_piece: invocation j keeps its own feature, which
            // only it reads below (no barrier needed).
            if j0 < last_j0 && j < ROWS_PIECE {
                for (var r = 0u; r < ROWS_WG; r++) {
                    rows_piece_first[j * ROWS_PIECE_STRIDE + r] = rows_piece[j * ROWS_PIECE_STRIDE + r];
                }
            }
        }
        let row = t0 + lid;
        if row < last {
            let near = settle_row(row, acc);
            tile_labels[lid] = near.k;
            tile_sq_dist[lid] = near.sq_dist;
            tile_weights[lid] = weight_of(row);
        }
        workgroupBarrier();
        // The next tile writes these only after the barriers of its first piece.
        let m = min(ROWS_WG, last - t0);
        for (var r = 0u; r < m; r++) {
            let label = tile_labels[r];
            let w = tile_weights[r];
            if j < d {
                var xv: f32;
                if j < last_j0 {
                    xv = rows_piece_first[j * ROWS_PIECE_STRIDE + r];
                } else {
                    xv = rows_piece[(j - last_j0) * ROWS_PIECE_STRIDE + r];
                }
                add_deviation(&sums, &old, label, w, xv);
            }
            // add_row_scalars of centroid_update.wgsl.
            if label == lid {
                count += 1u;
                sq_dist += w * tile_sq_dist[r];
                weight_sum += w;
            }
        }
    }
    // write_partials of centroid_update.wgsl.
    let gblock = params.block_offset + block;
    for (var c = 0u; c < SMALL_K; c++) {
        if c < params.k && j < d {
            partial_sums[(gblock * params.k + c) * d + j] = sums[c];
        }
    }
    if lid < params.k {
        let at = gblock * params.k + lid;
        partial_counts[at] = count;
        partial_sq_dist[2u * at] = sq_dist;
        partial_sq_dist[2u * at + 1u] = weight_sum;
    }
}

// ---- One row per invocation (CPU-like adapters) ----

// Squared distances from row `row` to centroids k0 .. k0+SMALL_K (the tail past K repeats
// the last centroid and is ignored by the caller).
fn register_sq_distances(k0: u32, row: u32) -> array<f32, SMALL_K> {
    var acc: array<f32, SMALL_K>;
    var cbase: array<u32, SMALL_K>;
    for (var c = 0u; c < SMALL_K; c++) {
        cbase[c] = min(k0 + c, params.k - 1u) * params.d;
    }
    let base = params.x_offset + row * params.d;
    for (var j = 0u; j < params.d; j++) {
        let xv = x[base + j];
        for (var c = 0u; c < SMALL_K; c++) {
            let diff = xv - centroids[cbase[c] + j];
            acc[c] = fma(diff, diff, acc[c]);
        }
    }
    return acc;
}

// assign_nearest_centroid without workgroup memory or barriers: one invocation per row, the
// centroids read straight from the storage buffer (the same address across the workgroup, so
// a broadcast), SMALL_K of them at a time into register accumulators. The distances and the
// tie rule are those of the tiled kernel, bit for bit, so the host may pick either (it times
// both on first use per adapter and shape; for K <= SMALL_K it always takes this one).
@compute @workgroup_size(ROW_WG_SIZE)
fn assign_nearest_centroid_registers(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let row = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if row >= params.n_rows {
        return;
    }
    var best = F32_MAX;
    var best_k = 0u;
    for (var k0 = 0u; k0 < params.k; k0 += SMALL_K) {
        let acc = register_sq_distances(k0, row);
        // Centroids are visited in increasing order, so `<` keeps the lowest index on ties.
        for (var c = 0u; c < min(SMALL_K, params.k - k0); c++) {
            if acc[c] < best {
                best = acc[c];
                best_k = k0 + c;
            }
        }
    }
    if labels[row] != best_k {
        atomicAdd(&changed, 1u);
    }
    labels[row] = best_k;
    min_sq_dist[row] = best;
}

// assign_nearest_centroid with the centroids in a uniform buffer, one slice of at most
// SLICE_VEC4S vec4s per dispatch: one invocation per row, SMALL_K centroids at a time into
// register accumulators, as assign_nearest_centroid_registers. Some adapters load a uniform
// address from a uniform buffer once for all lanes but gather it lane by lane from a storage
// buffer (lavapipe: measured 14x apart), so this variant trades the host's copy of the
// centroids into slices for much cheaper loads. Features are still summed one at a time, in
// order, so the distances and the result are those of the other variants, bit for bit; the
// running best carries across slices in increasing centroid order (`<` keeps the lowest
// index on ties).
@compute @workgroup_size(ROW_WG_SIZE)
fn assign_nearest_centroid_uniform(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    var row = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if (params.slice_flags & RECHECK_ROWS) != 0u {
        // The exact recheck of the GEMM form's undecided rows (CPU-like adapters): the
        // invocations walk the list instead of the chunk.
        if row >= atomicLoad(&recheck[0]) {
            return;
        }
        row = atomicLoad(&recheck[1u + row]);
    } else if row >= params.n_rows {
        return;
    }
    let d4 = (params.d + 3u) / 4u;
    let full = params.d / 4u;
    let base = params.x_offset + row * params.d;
    var best = F32_MAX;
    var best_k = 0u;
    if (params.slice_flags & FIRST_SLICE) == 0u {
        best = min_sq_dist[row];
        best_k = running_labels[row];
    }
    for (var k0 = 0u; k0 < params.k; k0 += SMALL_K) {
        var acc: array<f32, SMALL_K>;
        var cbase: array<u32, SMALL_K>;
        for (var c = 0u; c < SMALL_K; c++) {
            cbase[c] = min(k0 + c, params.k - 1u) * d4;
        }
        for (var j = 0u; j < full; j++) {
            let b = base + 4u * j;
            let xv = vec4<f32>(x[b], x[b + 1u], x[b + 2u], x[b + 3u]);
            for (var c = 0u; c < SMALL_K; c++) {
                acc[c] = fma_squares(xv - centroid_slice[cbase[c] + j], acc[c]);
            }
        }
        for (var t = 4u * full; t < params.d; t++) {
            let xv = x[base + t];
            for (var c = 0u; c < SMALL_K; c++) {
                let diff = xv - centroid_slice[cbase[c] + full][t - 4u * full];
                acc[c] = fma(diff, diff, acc[c]);
            }
        }
        for (var c = 0u; c < min(SMALL_K, params.k - k0); c++) {
            if acc[c] < best {
                best = acc[c];
                best_k = params.k_first + k0 + c;
            }
        }
    }
    if (params.slice_flags & LAST_SLICE) == 0u {
        min_sq_dist[row] = best;
        running_labels[row] = best_k;
        return;
    }
    if labels[row] != best_k {
        atomicAdd(&changed, 1u);
    }
    labels[row] = best_k;
    min_sq_dist[row] = best;
}

// Writes the N x K matrix of distances (squared or not) from each row to each centroid: the
// tile core with the squared difference in place of the product (exact for near points).
@compute @workgroup_size(GEMM_LANES_M * GEMM_LANES_N)
fn pairwise_distances(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let tile_m = gemm_tile_m();
    let tile_n = gemm_tile_n();
    let wg = gemm_wg_size();
    let first = workgroup_index(wid, params.grid_x) * tile_m;
    let lane = gemm_lane(lid);
    let n_stages = (params.d + GEMM_DEPTH - 1u) / GEMM_DEPTH;
    for (var k0 = 0u; k0 < params.k; k0 += tile_n) {
        var acc: Block;
        for (var s = 0u; s < n_stages; s++) {
            let d0 = s * GEMM_DEPTH;
            workgroupBarrier();
            for (var e = lid; e < gemm_loads(tile_m); e += wg) {
                let slot = gemm_item_major_slot(e);
                var v = vec4<f32>();
                if first + slot.item < params.n_rows && d0 + slot.depth < params.d {
                    v = x_quad(first + slot.item, d0 + slot.depth);
                }
                gemm_put_a_item_major(slot, v);
            }
            for (var e = lid; e < gemm_loads(tile_n); e += wg) {
                let slot = gemm_item_major_slot(e);
                let c = k0 + slot.item;
                var v = vec4<f32>();
                for (var t = 0u; t < 4u; t++) {
                    let j = d0 + slot.depth + t;
                    if c < params.k && j < params.d {
                        v[t] = centroids[c * params.d + j];
                    }
                }
                gemm_put_b_item_major(slot, v);
            }
            workgroupBarrier();
            gemm_multiply_stage_sq(lane, &acc);
        }
        for (var i = 0u; i < GEMM_RM; i++) {
            let row = first + gemm_row(lane, i);
            if row < params.n_rows {
                for (var m = 0u; m < GEMM_RN; m++) {
                    let c = k0 + gemm_col(lane, m);
                    if c < params.k {
                        var v = block_at(acc, i, m);
                        if params.sqrt_output != 0u {
                            v = sqrt(v);
                        }
                        distances[row * params.k + c] = v;
                    }
                }
            }
        }
    }
}
