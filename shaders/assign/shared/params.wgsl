// The assignment family: nearest-centroid assignment and point-to-centroid distances.
//
// This piece holds what every kernel of the family shares: the contract below, the
// parameters, the bindings and the helpers that read a row and write its result.
//
// Host wrappers: src/kernels/assign/ (mod.rs chooses among the variants).
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
// β = (4D + 32) u / (1 − (4D + 8) u), u = 2⁻²⁴ (the host computes it: kernels::assign::bound::beta).
// β (‖x′‖² + ‖c′ⱼ‖²) bounds both |vⱼ + ‖x′‖² − dⱼ| (GEMM form, rounding of x′ = fl(x − s),
// c′ = fl(c − s), the dot product, the norm and the final fma) and |d̂ⱼ − dⱼ| (difference form),
// dⱼ the exact distance, with the f32 rounding of the test itself; the derivation is in
// src/kernels/assign/bound.rs, which also checks it on adversarial data. When the test holds,
// the exact argmin is the candidate; its d̂ is then recomputed in the difference form. The
// search also keeps the runner-up: when the same test holds with min over the candidates
// other than the two, against the lower of their upper bounds, the argmin of d̂ is one of
// the two (the same proof, assign_bound.rs), and both are recomputed in the difference form
// (a near tie between two centroids, the common case, costs 2D more, not K·D). A row that
// fails both (several near ties, or a non-finite value) goes on the recheck list, and
// assign_recheck compares all K centroids in the difference form, as the other variants do.
//
// assign_stream (GPUs, K <= SMALL_K) reads the rows of a workgroup cooperatively with vec4
// loads into workgroup memory, the next piece in flight while the current one is summed, the
// centroids beside them, and sums the difference form directly: with few centroids the pass
// is bound by reading X, and the exact form costs nothing. assign_rows_update (GPUs,
// K <= SMALL_K, D <= FUSED_MAX_D; host: src/kernels/assign/fused.rs) stages the rows with
// coalesced loads too, a piece at a time without the look-ahead (assign/shared/rows_piece.wgsl),
// and sums the K-Means (Lloyd) update's per-block partials in its epilogue from the rows it
// staged, so K-Means reads X once per iteration (see its section below).
// assign_nearest_centroid_registers and assign_nearest_centroid_uniform (one row per
// invocation, centroids from storage or from 64 KiB uniform slices) suit CPU-like adapters.

#import constants

const SMALL_K: u32 = 16u; // register accumulators of the one-row-per-invocation kernels

// Twin: AssignParams in src/kernels/assign/args.rs.
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
    n_groups: u32,     // assign_recheck: workgroups in the dispatch (they stride over the list)
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
// per-block partials, laid out as centroids/update.wgsl writes them: [block][cluster][feature]
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
