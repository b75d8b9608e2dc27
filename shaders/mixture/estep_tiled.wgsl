// The E-step of diagonal factors (Diag, Spherical) on GPUs, in one kernel: squared
// Mahalanobis norms, log-sum-exp, responsibilities, log p, labels and the block sums of log p.
//
// Host wrapper: src/kernels/mixture/estep_tiled.rs.
//
// With pₖⱼ the diagonal precision factors (Spherical repeats pₖ over j on the host),
//     qᵢₖ = Σⱼ ((xᵢⱼ − μₖⱼ) pₖⱼ)²,   aᵢₖ = cₖ − ½ qᵢₖ,
//     log p(xᵢ) = mᵢ + log Σₖ exp(aᵢₖ − mᵢ),  mᵢ = maxₖ aᵢₖ,
//     rᵢₖ = exp(aᵢₖ − mᵢ) / Σⱼ exp(aᵢⱼ − mᵢ)
// (estep.wgsl's module comment has the derivation).
//
// Why one kernel: the separate kernels (mahalanobis_diag, then normalize_responsibilities)
// write the N x K norms and read them back three times from another dispatch; here a
// workgroup owns ESTEP_TILED_WG rows (one block of log p sums, as normalize_responsibilities'
// workgroup) and normalises them right after computing their norms, while its own writes are
// still in the near caches.
//
// The norms are an outer product over the features: the workgroup takes its rows in tiles of
// (256 / ET_LANES_C)·4 rows by ET_LANES_C·4 components; per stage it stages ET_DEPTH features of
// the tile's rows and of its components' means and factors in workgroup memory (coalesced
// loads, stored transposed with a padded stride), and each invocation accumulates a register
// block of 4 rows x 4 components: per feature one vec4 of rows and one each of means and
// factors feed 16 sub, mul, fma. X is read from memory once per component tile (once for
// K <= 64).
//
// Same bits as mahalanobis_diag followed by normalize_responsibilities (the tests compare
// them): each norm is the chain t = (x − μ)·p, q = fma(t, t, q) over the features in order
// from +0.0 (a feature past D adds fma(0, 0, q) = q), and the normalisation and the block
// tree are normalize_responsibilities' expressions in its order.
//
// @trusted: rows below n_rows, components below k and features below d guarded before every
//   access; staged tiles indexed by lane and stage counters below their constant sizes

#import constants
#import mixture/normalize_row
#import grid

// Twin: EstepTiledParams in src/kernels/mixture/estep_tiled.rs.
struct EstepTiledParams {
    n_rows: u32,       // rows in this segment
    x_offset: u32,     // index of the segment's first value inside the bound range of x
    d: u32,
    k: u32,
    grid_x: u32,       // workgroups along x (2-D grids when one dimension is not enough)
    row_offset: u32,   // the segment's first row inside the per-chunk vectors (log p, labels)
    block_offset: u32, // global index of the segment's first block of log p sums
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: EstepTiledParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> means: array<f32>;       // K x D
@group(0) @binding(3) var<storage, read> precisions: array<f32>;  // K x D factors pₖⱼ
// Bindings 4-7 (resp, log_const, log_density, labels): mixture/shared/normalize_row.wgsl.
@group(0) @binding(8) var<storage, read_write> block_log_density: array<f32>;

// Rows per workgroup and invocations: normalize_responsibilities' block of log p sums.
const ESTEP_TILED_WG: u32 = 256u;
const ET_DEPTH: u32 = 8u;         // features per stage
const ET_MAX_ROWS: u32 = 256u;    // the tallest row tile (64 lanes x 4)
const ET_MAX_COMPS: u32 = 64u;    // the widest component tile (16 lanes x 4)
// Strides of a staged feature in vec4s, one past the widest tile: the transposed stores of a
// warp (eight features of four rows) fall on different banks.
const ET_ROW_STRIDE: u32 = ET_MAX_ROWS / 4u + 1u;
const ET_COMP_STRIDE: u32 = ET_MAX_COMPS / 4u + 1u;
// Invocations along the components: 4, 8 or 16 (then 64, 32 or 16 along the rows).
override ET_LANES_C: u32 = 16u;

var<workgroup> et_x: array<vec4<f32>, ET_DEPTH * ET_ROW_STRIDE>;      // [feature][row quad]
var<workgroup> et_m: array<vec4<f32>, ET_DEPTH * ET_COMP_STRIDE>;     // [feature][comp quad]
var<workgroup> et_p: array<vec4<f32>, ET_DEPTH * ET_COMP_STRIDE>;
var<workgroup> et_sum: array<f32, ESTEP_TILED_WG>;

@compute @workgroup_size(ESTEP_TILED_WG)
fn estep_diag_tiled(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let g = workgroup_index(wid, p.grid_x);
    let first = g * ESTEP_TILED_WG;
    let lanes_r = ESTEP_TILED_WG / ET_LANES_C;
    let tile_r = 4u * lanes_r;
    let tile_c = 4u * ET_LANES_C;
    // Rows fastest: a warp reads consecutive row quads of a staged feature and one quad of
    // means and factors (a broadcast).
    let rl = lid % lanes_r;
    let cl = lid / lanes_r;
    // Every loop bound depends only on the parameters: uniform barriers, also in a
    // workgroup past the last row (it writes nothing).
    let n_ct = (p.k + tile_c - 1u) / tile_c;
    let n_stages = (p.d + ET_DEPTH - 1u) / ET_DEPTH;
    for (var rp = 0u; rp < ESTEP_TILED_WG / tile_r; rp++) {
        let r_base = first + rp * tile_r;
        for (var ct = 0u; ct < n_ct; ct++) {
            let c_base = ct * tile_c;
            // q_i: row r_base + 4 rl + i against components c_base + 4 cl .. + 3.
            var q0 = vec4<f32>();
            var q1 = vec4<f32>();
            var q2 = vec4<f32>();
            var q3 = vec4<f32>();
            for (var s = 0u; s < n_stages; s++) {
                let j0 = s * ET_DEPTH;
                workgroupBarrier();
                for (var e = lid; e < tile_r * ET_DEPTH; e += ESTEP_TILED_WG) {
                    let r = e / ET_DEPTH;
                    let j = e % ET_DEPTH;
                    var v = 0.0;
                    if r_base + r < p.n_rows && j0 + j < p.d {
                        v = x[p.x_offset + (r_base + r) * p.d + j0 + j];
                    }
                    et_x[j * ET_ROW_STRIDE + r / 4u][r % 4u] = v;
                }
                for (var e = lid; e < tile_c * ET_DEPTH; e += ESTEP_TILED_WG) {
                    let c = e / ET_DEPTH;
                    let j = e % ET_DEPTH;
                    var m = 0.0;
                    var f = 0.0;
                    if c_base + c < p.k && j0 + j < p.d {
                        m = means[(c_base + c) * p.d + j0 + j];
                        f = precisions[(c_base + c) * p.d + j0 + j];
                    }
                    et_m[j * ET_COMP_STRIDE + c / 4u][c % 4u] = m;
                    et_p[j * ET_COMP_STRIDE + c / 4u][c % 4u] = f;
                }
                workgroupBarrier();
                for (var j = 0u; j < ET_DEPTH; j++) {
                    let xq = et_x[j * ET_ROW_STRIDE + rl];
                    let m = et_m[j * ET_COMP_STRIDE + cl];
                    let f = et_p[j * ET_COMP_STRIDE + cl];
                    let t0 = (vec4<f32>(xq.x) - m) * f;
                    let t1 = (vec4<f32>(xq.y) - m) * f;
                    let t2 = (vec4<f32>(xq.z) - m) * f;
                    let t3 = (vec4<f32>(xq.w) - m) * f;
                    q0 = fma(t0, t0, q0);
                    q1 = fma(t1, t1, q1);
                    q2 = fma(t2, t2, q2);
                    q3 = fma(t3, t3, q3);
                }
            }
            // Row i's norms by a select rather than an array indexed at run time (which
            // would go through local memory).
            for (var i = 0u; i < 4u; i++) {
                let row = r_base + 4u * rl + i;
                if row < p.n_rows {
                    let qi = select(select(q3, q2, i == 2u), select(q1, q0, i == 0u), i < 2u);
                    for (var t = 0u; t < 4u; t++) {
                        let c = c_base + 4u * cl + t;
                        if c < p.k {
                            resp[row * p.k + c] = qi[t];
                        }
                    }
                }
            }
        }
    }
    // The workgroup's norms, written above by all its invocations, are read back row by row.
    storageBarrier();
    let row = first + lid;
    var lse = 0.0;
    if row < p.n_rows {
        lse = normalize_row(row, p.k, p.row_offset + row);
    }
    // The block sum: normalize_responsibilities' tree (write_block_sum), in its order.
    et_sum[lid] = lse;
    for (var half = ESTEP_TILED_WG / 2u; half > 0u; half = half / 2u) {
        workgroupBarrier();
        if lid < half {
            et_sum[lid] += et_sum[lid + half];
        }
    }
    if lid == 0u && first < p.n_rows {
        block_log_density[p.block_offset + g] = et_sum[0];
    }
}
