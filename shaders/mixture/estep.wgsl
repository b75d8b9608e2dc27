// E-step of a Gaussian mixture: squared Mahalanobis norms, log-sum-exp, responsibilities.
//
// Host wrapper: src/kernels/mixture/estep.rs.
//
// With Uₖ the Cholesky factor of component k's precision (Σₖ⁻¹ = Uₖ Uₖᵀ, computed on the host
// in f64), log N(x | μₖ, Σₖ) = −½ D log 2π + log det Uₖ − ½ ‖(x − μₖ)ᵀ Uₖ‖². The kernels here
// write qᵢₖ = ‖(xᵢ − μₖ)ᵀ Uₖ‖² into the N x K responsibilities buffer, then
// normalize_responsibilities turns it into rᵢₖ in place, with
//     aᵢₖ = cₖ − ½ qᵢₖ,  cₖ = log πₖ − ½ D log 2π + log det Uₖ   (host, f64 → f32)
//     log p(xᵢ) = mᵢ + log sᵢ,  sᵢ = Σₖ exp(aᵢₖ − mᵢ),  mᵢ = maxₖ aᵢₖ,   rᵢₖ = exp(aᵢₖ − mᵢ) / sᵢ.
//
// mahalanobis_full (Full and Tied: Uₖ upper triangular, D x D) is a GEMM on the tile core
// (shared/gemm.wgsl): a workgroup owns gemm_tile_m() rows of one component and walks the
// output columns in tiles of gemm_tile_n(); the difference x − μₖ is formed while staging
// (no x·U − μ·U expansion, so no cancellation for data far from the origin), GEMM_DEPTH
// features a stage, a stage ahead in registers, and only rows i ≤ j of Uₖ are visited. Each
// invocation accumulates a GEMM_RM x GEMM_RN register block of y = (x − μₖ)ᵀ Uₖ, squares it
// (one fma chain over its columns in order), and the GEMM_LANES_N invocations sharing a row
// add their parts in lane order, column tile after column tile.
//
// @trusted: rows below n_rows, components below k and features below d guarded before every
//   access; a given label is only compared, never used as an index

// mahalanobis_diag (Diag and Spherical: Uₖ diagonal, given as K x D values pₖⱼ; Spherical
// repeats pₖ over j on the host) has no D x D work: each invocation accumulates its row's
// Σⱼ ((xⱼ − μₖⱼ) pₖⱼ)² for COMPONENTS_PER_PASS components at a time in registers. The
// workgroup reads its ROW_WG_SIZE rows cooperatively, a piece of DIAG_PIECE features at a
// time: consecutive invocations load consecutive vec4s of a row (coalesced; one invocation
// per row would put the lanes of a warp D values apart), stored transposed into workgroup
// memory, with the piece's means and precisions of the pass's components beside them.
//
// For D <= SMALL_D, Full and Tied use mahalanobis_full_small_d (one row per invocation) rather
// than the tiles, which would be mostly padding.

#import constants
#import mixture/normalize_row
#import grid
#import gemm
#import vec4s

const COMPONENTS_PER_PASS: u32 = 8u; // mahalanobis_diag register accumulators
const SMALL_D: u32 = 16u;            // mahalanobis_full_small_d: largest D (registers per row)
// normalize_responsibilities: rows per workgroup, hence per block of log p sums (a power of
// two: the block sum is a tree).
const NORMALIZE_WG_SIZE: u32 = 256u;

// Twin: EstepParams in src/kernels/mixture/estep.rs.
struct EstepParams {
    n_rows: u32,       // rows in this segment
    x_offset: u32,     // index of the segment's first value inside the bound range of x
    d: u32,
    k: u32,
    grid_x: u32,       // workgroups along x (2-D grids when one dimension is not enough)
    prec_stride: u32,  // values between two components' factors: D*D (Full), 0 (Tied), D (Diag)
    row_offset: u32,   // the segment's first row inside the per-chunk vectors (log p, labels)
    block_offset: u32, // global index of the segment's first block of log p sums
    comp_first: u32,   // *_uniform: the slice's first component
    slice_k: u32,      // *_uniform: components in the slice
    x_vec4: u32,       // mahalanobis_diag: 1 if rows start on vec4 boundaries (x_offset, d multiples of 4)
    _pad1: u32,
}

// vec4s of one component slice: 64 KiB, the smallest max_uniform_buffer_binding_size.
const SLICE_VEC4S: u32 = 4096u;
// Largest D of mahalanobis_full_uniform (the row and its differences in registers).
const UNIFORM_MAX_D: u32 = 64u;
// Lanes along the columns of the tile mahalanobis_full runs for D <= UNIFORM_MAX_D (the host's
// 64 x 64 shape of the tile core, 8 x 8 lanes of 8 x 8 blocks), whose order of the squares
// mahalanobis_full_uniform keeps.
const FULL_TWIN_LANES: u32 = 8u;

@group(0) @binding(0) var<uniform> params: EstepParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> means: array<f32>;       // K x D
@group(0) @binding(3) var<storage, read> precisions: array<f32>;  // factors, see prec_stride
// Bindings 4-7 (resp: n_rows x K, q on the way in to normalize_responsibilities, r on the
// way out; log_const; log_density; labels) are declared in mixture/shared/normalize_row.wgsl.
@group(0) @binding(8) var<storage, read_write> block_log_density: array<f32>;
@group(0) @binding(9) var<storage, read> given_labels: array<u32>; // n_rows values
@group(0) @binding(11) var<storage, read> sample_weights: array<f32>; // per row of the chunk
// x again as vec4s (mahalanobis_diag_uniform): four values a load.
@group(0) @binding(12) var<storage, read> x4: array<vec4<f32>>;
// *_uniform: components comp_first .. comp_first + slice_k, each its mean then its factor
// (D x D for Full and Tied, D values for Diag and Spherical), packed without padding.
@group(0) @binding(10) var<uniform> component_slice: array<vec4<f32>, SLICE_VEC4S>;

fn slice_value(e: u32) -> f32 {
    return component_slice[e / 4u][e % 4u];
}

var<workgroup> block_sum: array<f32, NORMALIZE_WG_SIZE>;

@compute @workgroup_size(GEMM_LANES_M * GEMM_LANES_N)
fn mahalanobis_full(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let tile_m = gemm_tile_m();
    let tile_n = gemm_tile_n();
    let wg = gemm_wg_size();
    let n_row_tiles = (p.n_rows + tile_m - 1u) / tile_m;
    let g = workgroup_index(wid, p.grid_x);
    // Workgroups past the end run no loop iterations (uniform barriers) and write nothing.
    let valid = g < n_row_tiles * p.k;
    let comp = g / max(n_row_tiles, 1u);
    let first = (g % max(n_row_tiles, 1u)) * tile_m;
    let u_base = comp * p.prec_stride;
    let m_base = comp * p.d;
    let lane = gemm_lane(lid);
    let loads_a = gemm_loads(tile_m);
    let loads_b = gemm_loads(tile_n);
    var n_col_tiles = 0u;
    if valid {
        n_col_tiles = (p.d + tile_n - 1u) / tile_n;
    }
    var q = 0.0; // squared norm of row first + lid (invocations lid < tile_m)
    for (var ct = 0u; ct < n_col_tiles; ct++) {
        let j0 = ct * tile_n;
        // Uₖ is upper triangular: rows i > j contribute nothing to columns j < j0 + tile_n.
        let n_stages = (min(p.d, j0 + tile_n) + GEMM_DEPTH - 1u) / GEMM_DEPTH;
        var acc: Block;
        var pa: array<vec4<f32>, GEMM_MAX_LOADS>;
        var pb: array<vec4<f32>, GEMM_MAX_LOADS>;
        for (var s = 0u; s <= n_stages; s++) {
            if s > 0u {
                gemm_put_stage(lid, pa, GEMM_ITEM_MAJOR, pb, GEMM_DEPTH_MAJOR);
            }
            if s < n_stages {
                // Prefetch stage s while stage s − 1 is multiplied: four features of a row
                // minus the mean, and four columns of a row of Uₖ (zeros past D).
                let i0 = s * GEMM_DEPTH;
                // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
                // prefetch registers are indexed by constants and stay registers.
                for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                    if gemm_has_load(e, lid, loads_a) {
                        let slot = gemm_item_major_slot(e * wg + lid);
                        let row = first + slot.item;
                        var v = vec4<f32>();
                        if row < p.n_rows {
                            for (var t = 0u; t < 4u; t++) {
                                let i = i0 + slot.depth + t;
                                if i < p.d {
                                    v[t] = x[p.x_offset + row * p.d + i] - means[m_base + i];
                                }
                            }
                        }
                        pa[e] = v;
                    }
                }
                // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
                // prefetch registers are indexed by constants and stay registers.
                for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                    if gemm_has_load(e, lid, loads_b) {
                        let slot = gemm_depth_major_slot(e * wg + lid, tile_n);
                        let i = i0 + slot.depth;
                        var w = vec4<f32>();
                        if i < p.d {
                            for (var t = 0u; t < 4u; t++) {
                                let j = j0 + slot.item + t;
                                if j < p.d {
                                    w[t] = precisions[u_base + i * p.d + j];
                                }
                            }
                        }
                        pb[e] = w;
                    }
                }
            }
            if s > 0u {
                gemm_multiply_stage(lane, &acc);
            }
        }
        // Columns past D hold zeros (U padded with 0), so they add nothing.
        var parts_lo = vec4<f32>();
        var parts_hi = vec4<f32>();
        for (var i = 0u; i < GEMM_RM; i++) {
            var part = 0.0;
            for (var m = 0u; m < GEMM_RN; m++) {
                let y = block_at(acc, i, m);
                part = fma(y, y, part);
            }
            if i < 4u {
                parts_lo[i] = part;
            } else {
                parts_hi[i - 4u] = part;
            }
        }
        workgroupBarrier();
        gemm_store_row_parts(lane, parts_lo, parts_hi);
        workgroupBarrier();
        if lid < tile_m {
            q = gemm_add_row_parts(lid, q);
        }
    }
    if valid && lid < tile_m {
        let row = first + lid;
        if row < p.n_rows {
            resp[row * p.k + comp] = q;
        }
    }
}

// mahalanobis_full for D <= SMALL_D: one invocation per row, the row kept in registers
// (loaded once for all components), y = (x − μₖ)ᵀ Uₖ by forward accumulation over the upper
// triangle. With so few features a 64 x 64 tile would be almost all padding; here every
// multiply is useful and Uₖ, μₖ are read at the same address across the workgroup.
@compute @workgroup_size(ROW_WG_SIZE)
fn mahalanobis_full_small_d(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let row = invocation_index(wid, p.grid_x, ROW_WG_SIZE, lid);
    if row >= p.n_rows {
        return;
    }
    var xr: array<f32, SMALL_D>;
    for (var i = 0u; i < p.d; i++) {
        xr[i] = x[p.x_offset + row * p.d + i];
    }
    for (var comp = 0u; comp < p.k; comp++) {
        let m_base = comp * p.d;
        let u_base = comp * p.prec_stride;
        var diff: array<f32, SMALL_D>;
        for (var i = 0u; i < p.d; i++) {
            diff[i] = xr[i] - means[m_base + i];
        }
        var q = 0.0;
        for (var j = 0u; j < p.d; j++) {
            var y = 0.0;
            for (var i = 0u; i <= j; i++) {
                y = fma(diff[i], precisions[u_base + i * p.d + j], y);
            }
            q = fma(y, y, q);
        }
        resp[row * p.k + comp] = q;
    }
}

// mahalanobis_diag's staging: DIAG_PIECE features of the workgroup's rows, [feature][row]
// with a stride of ROW_WG_SIZE + 1 (the transposed stores of a warp, eight rows of four
// vec4s, fall on 32 different banks), and the piece's parameters of the pass's components.
const DIAG_PIECE: u32 = 32u;
const DIAG_STRIDE: u32 = ROW_WG_SIZE + 1u;
var<workgroup> diag_rows: array<f32, DIAG_PIECE * DIAG_STRIDE>;
var<workgroup> diag_means: array<f32, COMPONENTS_PER_PASS * DIAG_PIECE>;
var<workgroup> diag_precisions: array<f32, COMPONENTS_PER_PASS * DIAG_PIECE>;

// Features j .. j + 3 of row `row` of the segment (zeros past D).
fn diag_quad(row: u32, j: u32) -> vec4<f32> {
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

@compute @workgroup_size(ROW_WG_SIZE)
fn mahalanobis_diag(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let first = workgroup_index(wid, p.grid_x) * ROW_WG_SIZE;
    let row = first + lid;
    let quads = DIAG_PIECE / 4u;
    // Every loop bound depends only on the parameters: uniform barriers, also in workgroups
    // past the last row (they write nothing).
    for (var k0 = 0u; k0 < p.k; k0 += COMPONENTS_PER_PASS) {
        var acc: array<f32, COMPONENTS_PER_PASS>;
        for (var j0 = 0u; j0 < p.d; j0 += DIAG_PIECE) {
            workgroupBarrier();
            for (var e = lid; e < ROW_WG_SIZE * quads; e += ROW_WG_SIZE) {
                let r = e / quads;
                let j = 4u * (e % quads);
                var v = vec4<f32>();
                if first + r < p.n_rows && j0 + j < p.d {
                    v = diag_quad(first + r, j0 + j);
                }
                for (var t = 0u; t < 4u; t++) {
                    diag_rows[(j + t) * DIAG_STRIDE + r] = v[t];
                }
            }
            // Past K, the last component again (those sums are not written); past D, zeros.
            for (var e = lid; e < COMPONENTS_PER_PASS * DIAG_PIECE; e += ROW_WG_SIZE) {
                let comp = min(k0 + e / DIAG_PIECE, p.k - 1u);
                let j = j0 + e % DIAG_PIECE;
                var m = 0.0;
                var q = 0.0;
                if j < p.d {
                    m = means[comp * p.d + j];
                    q = precisions[comp * p.d + j];
                }
                diag_means[e] = m;
                diag_precisions[e] = q;
            }
            workgroupBarrier();
            // Each component's chain over the features in order, as the uniform twin's.
            let n = min(DIAG_PIECE, p.d - j0);
            for (var j = 0u; j < n; j++) {
                let xv = diag_rows[j * DIAG_STRIDE + lid];
                for (var c = 0u; c < COMPONENTS_PER_PASS; c++) {
                    let t = (xv - diag_means[c * DIAG_PIECE + j]) * diag_precisions[c * DIAG_PIECE + j];
                    acc[c] = fma(t, t, acc[c]);
                }
            }
        }
        if row < p.n_rows {
            for (var c = 0u; c < COMPONENTS_PER_PASS; c++) {
                if k0 + c < p.k {
                    resp[row * p.k + k0 + c] = acc[c];
                }
            }
        }
    }
}

// The *_uniform variants read the component parameters from a uniform slice instead of
// storage: the same address in every lane, which some adapters load once for all lanes from
// a uniform buffer but gather lane by lane from storage (lavapipe). Every sum keeps the order
// of the kernel the host would otherwise run for that D, so the results are the same bits.

// mahalanobis_full and mahalanobis_full_small_d for D <= UNIFORM_MAX_D: one row per
// invocation, y_j = Σ_{i<=j} fma(x_i − μ_i, U_ij, ·) in order of i; q sums y_j² as
// mahalanobis_full_small_d does for D <= SMALL_D (in order of j), else as mahalanobis_full's
// 64 x 64 tile does (per lane column tx the fma chain over its block's columns j = 4 tx ..
// 4 tx + 3, 32 + 4 tx .. 32 + 4 tx + 3, then the FULL_TWIN_LANES lane parts added in order).
@compute @workgroup_size(ROW_WG_SIZE)
fn mahalanobis_full_uniform(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let row = invocation_index(wid, p.grid_x, ROW_WG_SIZE, lid);
    if row >= p.n_rows {
        return;
    }
    var xr: array<f32, UNIFORM_MAX_D>;
    for (var i = 0u; i < p.d; i++) {
        xr[i] = x[p.x_offset + row * p.d + i];
    }
    let stride = p.d + p.d * p.d;
    for (var c = 0u; c < p.slice_k; c++) {
        let m_base = c * stride;
        let u_base = m_base + p.d;
        var diff: array<f32, UNIFORM_MAX_D>;
        for (var i = 0u; i < p.d; i++) {
            diff[i] = xr[i] - slice_value(m_base + i);
        }
        var q = 0.0;
        if p.d <= SMALL_D {
            for (var j = 0u; j < p.d; j++) {
                var y = 0.0;
                for (var i = 0u; i <= j; i++) {
                    y = fma(diff[i], slice_value(u_base + i * p.d + j), y);
                }
                q = fma(y, y, q);
            }
        } else {
            for (var tx = 0u; tx < FULL_TWIN_LANES; tx++) {
                var part = 0.0;
                for (var m = 0u; m < 8u; m++) {
                    // gemm_col of an 8-wide register block in a tile of FULL_TWIN_LANES lanes.
                    let j = (m / 4u) * 4u * FULL_TWIN_LANES + 4u * tx + m % 4u;
                    if j < p.d {
                        var y = 0.0;
                        for (var i = 0u; i <= j; i++) {
                            y = fma(diff[i], slice_value(u_base + i * p.d + j), y);
                        }
                        part = fma(y, y, part);
                    }
                }
                q += part;
            }
        }
        resp[row * p.k + p.comp_first + c] = q;
    }
}

// mahalanobis_diag with the means and factors from a uniform slice, each padded to whole
// vec4s: component c of the slice is its mean at vec4s 2c·ESTEP_D4 .. and its factors pₖⱼ at
// (2c + 1)·ESTEP_D4 .., zero past D. An invocation takes ESTEP_ROWS rows, in registers (zero
// past D), and meets each parameter vec4 once for all of them: on llvmpipe every load, even
// at an address the same in every lane, is a gather of one value per lane, many times the
// cost of the arithmetic it feeds. Per row the fma chain runs over j in order, as
// mahalanobis_diag's (a padded feature adds fma(0, 0, q) = q), so the results are the same
// bits.
const ESTEP_MAX_D4: u32 = 32u;
const ESTEP_MAX_ROWS: u32 = 8u;
// Most vec4s of rows an invocation holds (rows x vec4s per row): LLVM's time to compile the
// unrolled loops grows much faster than their length (measured on llvmpipe at D = 50: 4 s
// for 2 rows, 13 s for 4, 40 s for 8; the arrays too count, even where unused).
const ESTEP_ROW_VEC4S: u32 = 32u;
// vec4s per padded row, and rows per invocation (1 to ESTEP_MAX_ROWS, at most
// ESTEP_ROW_VEC4S / ESTEP_D4), fixed per pipeline so that the loops over the features and
// rows unroll (their indices into the rows become constants, which keeps the rows in
// registers).
override ESTEP_D4: u32 = 1u;
override ESTEP_ROWS: u32 = 1u;

@compute @workgroup_size(ROW_WG_SIZE)
fn mahalanobis_diag_uniform(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let first = invocation_index(wid, p.grid_x, ROW_WG_SIZE, lid) * ESTEP_ROWS;
    if first >= p.n_rows {
        return;
    }
    // Rows past the end repeat the last row; their norms are not written. A row is read as
    // aligned vec4s (ESTEP_D4 + 1 of them, realigned) unless that would pass the end of the
    // binding; values past D are zero.
    var xr: array<vec4<f32>, ESTEP_ROW_VEC4S>;
    let n4 = arrayLength(&x4);
    for (var r = 0u; r < ESTEP_ROWS; r++) {
        let base = p.x_offset + min(first + r, p.n_rows - 1u) * p.d;
        let q = base / 4u;
        if q + ESTEP_D4 < n4 {
            var lo = x4[q];
            for (var j4 = 0u; j4 < ESTEP_D4; j4++) {
                let hi = x4[q + j4 + 1u];
                let keep = vec4<u32>(4u * j4) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(p.d);
                xr[r * ESTEP_D4 + j4] = select(vec4<f32>(), realign(lo, hi, base % 4u), keep);
                lo = hi;
            }
        } else {
            for (var j4 = 0u; j4 < ESTEP_D4; j4++) {
                var v = vec4<f32>();
                for (var c = 0u; c < 4u; c++) {
                    if 4u * j4 + c < p.d {
                        v[c] = x[base + 4u * j4 + c];
                    }
                }
                xr[r * ESTEP_D4 + j4] = v;
            }
        }
    }
    for (var c = 0u; c < p.slice_k; c++) {
        let m0 = 2u * c * ESTEP_D4;
        var q: array<f32, ESTEP_MAX_ROWS>; // one norm per row
        for (var j4 = 0u; j4 < ESTEP_D4; j4++) {
            let mean = component_slice[m0 + j4];
            let factor = component_slice[m0 + ESTEP_D4 + j4];
            for (var r = 0u; r < ESTEP_ROWS; r++) {
                q[r] = fma_squares((xr[r * ESTEP_D4 + j4] - mean) * factor, q[r]);
            }
        }
        for (var r = 0u; r < ESTEP_ROWS; r++) {
            if first + r < p.n_rows {
                resp[(first + r) * p.k + p.comp_first + c] = q[r];
            }
        }
    }
}

// Sums `value` over the workgroup g by a tree in a fixed order (so block sums are
// reproducible) and writes the sum as the workgroup's block of log p sums.
fn write_block_sum(lid: u32, g: u32, value: f32) {
    block_sum[lid] = value;
    for (var half = NORMALIZE_WG_SIZE / 2u; half > 0u; half = half / 2u) {
        workgroupBarrier();
        if lid < half {
            block_sum[lid] += block_sum[lid + half];
        }
    }
    if lid == 0u && g * NORMALIZE_WG_SIZE < params.n_rows {
        block_log_density[params.block_offset + g] = block_sum[0];
    }
}

// Turns the squared norms of each row into responsibilities (in place), writes log p(xᵢ)
// and the most probable component (lowest index on ties), and the sum of log p over each
// workgroup's rows (a tree in a fixed order) for the lower bound.
@compute @workgroup_size(NORMALIZE_WG_SIZE)
fn normalize_responsibilities(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let g = workgroup_index(wid, p.grid_x);
    let row = g * NORMALIZE_WG_SIZE + lid;
    var lse = 0.0;
    if row < p.n_rows {
        lse = normalize_row(row, p.k, p.row_offset + row);
    }
    write_block_sum(lid, g, lse);
}

// normalize_responsibilities for K <= NORMALIZE_MAX_K, K fixed per pipeline: a row's K
// values aᵢₖ are read once into registers (the loops over them unroll) instead of once per
// pass, and cₖ once per row instead of three times. Every value is computed by the same
// expressions in the same order, so the results are the same bits.
const NORMALIZE_MAX_K: u32 = 16u;
override NORMALIZE_K: u32 = 1u;

@compute @workgroup_size(NORMALIZE_WG_SIZE)
fn normalize_responsibilities_small_k(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let g = workgroup_index(wid, p.grid_x);
    let row = g * NORMALIZE_WG_SIZE + lid;
    var lse = 0.0;
    if row < p.n_rows {
        let base = row * NORMALIZE_K;
        var a: array<f32, NORMALIZE_MAX_K>;
        for (var c = 0u; c < NORMALIZE_K; c++) {
            a[c] = log_const[c] - 0.5 * resp[base + c];
        }
        var best = 0u;
        var top = a[0];
        for (var c = 1u; c < NORMALIZE_K; c++) {
            if a[c] > top {
                top = a[c];
                best = c;
            }
        }
        if top < -F32_MAX {
            lse = top;
            for (var c = 0u; c < NORMALIZE_K; c++) {
                resp[base + c] = 1.0 / f32(NORMALIZE_K);
            }
        } else {
            var e: array<f32, NORMALIZE_MAX_K>;
            var s = 0.0;
            for (var c = 0u; c < NORMALIZE_K; c++) {
                e[c] = exp(a[c] - top);
                s += e[c];
            }
            lse = top + log(s);
            let inv = 1.0 / s;
            for (var c = 0u; c < NORMALIZE_K; c++) {
                resp[base + c] = e[c] * inv;
            }
        }
        log_density[p.row_offset + row] = lse;
        labels[p.row_offset + row] = best;
    }
    write_block_sum(lid, g, lse);
}

// One-hot responsibilities from given labels (the K-Means initialisation).
@compute @workgroup_size(ROW_WG_SIZE)
fn responsibilities_from_labels(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let row = invocation_index(wid, p.grid_x, ROW_WG_SIZE, lid);
    if row >= p.n_rows {
        return;
    }
    let label = given_labels[row];
    for (var c = 0u; c < p.k; c++) {
        resp[row * p.k + c] = select(0.0, 1.0, c == label);
    }
}

// Sample weights: scales each row's responsibilities by its weight w (so the M-step sums are
// Σ w·r, Σ w·r·x, ...) and replaces the segment's block sums of log p by block sums of
// w·log p (a tree in the same fixed order). A row of weight 0 adds 0, even where log p = −∞.
@compute @workgroup_size(NORMALIZE_WG_SIZE)
fn weigh_responsibilities(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let g = workgroup_index(wid, p.grid_x);
    let row = g * NORMALIZE_WG_SIZE + lid;
    var v = 0.0;
    if row < p.n_rows {
        let w = sample_weights[p.row_offset + row];
        for (var c = 0u; c < p.k; c++) {
            resp[row * p.k + c] *= w;
        }
        if w > 0.0 {
            v = w * log_density[p.row_offset + row];
        }
    }
    write_block_sum(lid, g, v);
}
