// The affinity graphs of spectral clustering, applied without forming an N x N matrix.
//
// Host wrapper: src/kernels/affinity.rs.
//
// The RBF product: out[q][c] (+)= Σ_{j ≠ q} exp(−γ‖x_q − x_j‖²) · v[j][c] for a run of query
// rows q and a run of data rows j, block columns col0 .. col0 + n_cols of the N x m block v,
// without forming the N x N matrix: O(N²(D + m)) work with one exponential per pair, and
// O(N·(D + m)) memory. The diagonal (q = j) is left out: the normalised Laplacian ignores
// self-loops. Each query sums its pairs as one fma chain in data order (from what earlier
// dispatches left in `out`, with `accumulate`), so the result does not depend on timing, on
// the tile shape or on how the host splits the data: same input, same adapter, same bits.
//
// rbf_times_block_tiled (GPUs) is the n-body pattern on the GEMM tile core
// (shared/gemm.wgsl). A workgroup owns GEMM_LANES_M·GEMM_RM query rows and walks the data one
// tile of GEMM_LANES_N·GEMM_RN rows at a time. Per data tile, phase 1 runs the register block
// over the depth D on the staged, prefetched operands to get the dot products of the shifted
// rows, and forms the distances as
//     ‖x_q − x_j‖² = ‖x_q − s‖² + ‖x_j − s‖² − 2 (x_q − s)·(x_j − s),
// one FMA per multiply-add (issue 23), with the norms prepared once per product (rbf_shift,
// rbf_norms). The identity holds for any s; s only sets the rounding: the error of the GEMM
// form is about u·D·(‖x_q − s‖² + ‖x_j − s‖²) (Higham, Accuracy and Stability of Numerical
// Algorithms, §3.1), so with s at the origin data far from it (an offset of 1e3 and a spread
// of 1) would lose every digit of d² to cancellation, while with s among the data (the mean of
// a sample of rows) the norms are of the order of the distances themselves. The weights
// replace the dot products in the registers, and phase 2 is a second product on the same
// core, total += W·V, with the tile's data rows as its depth: W's columns are written to
// gemm_a depth by depth, the rows of V to gemm_b, GEMM_DEPTH data rows a stage, so each lane
// keeps its block of out (its query rows, GEMM_LANES_N·GEMM_RN block columns a pass) in
// registers across all the data tiles, and each output is one chain over the data rows in
// order (padding rows add fma(0, 0, acc) = acc). Phase 2 costs tile_n FMAs a pair against D
// for phase 1, so the host gives blocks of at most 32 columns the 128 x 32 tile.
//
// rbf_times_block_uniform (CPU-like adapters, below) sums the difference form Σ (x_q − x_j)²
// per pair instead: not the same bits as the tiled kernel (both are held against f64 sums).
//
// knn_update: each query row keeps its n_neighbors nearest rows (squared distance, then
// index, ascending) in `best_dist` / `best_index`, merged with one run of data rows per
// dispatch; the row itself is its own nearest neighbour (scikit-learn's include_self=True).
//
// rbf_times_block_uniform / knn_update_uniform: the same two products with the data rows
// in a uniform slice (CPU-like adapters), below.
//
// csr_times_block: out[i][c] = Σ_e values[e] · v[cols[e]][c] over the entries e of row i of
// a sparse matrix in CSR form (the symmetrised k-nearest-neighbour graph).

#import constants
#import gemm
#import grid
#import vec4s
#import pair_rows

// Largest n_neighbors (the private lists of knn_update).
const KNN_MAX: u32 = 64u;

// Block columns per dispatch of the uniform RBF product and per pass over a row's entries of
// the sparse product, held in registers (a wider block takes more passes).
const BLOCK_COLS: u32 = 16u;
const BLOCK_COLS4: u32 = BLOCK_COLS / 4u;

// Twin: AffinityParams in src/kernels/affinity.rs.
struct AffinityParams {
    n_queries: u32,  // query rows in this dispatch
    q_offset: u32,   // index of the first query value inside the bound range of `queries`
    n_data: u32,     // data rows in this dispatch
    x_offset: u32,   // index of the first data value inside the bound range of `data`
    d: u32,
    q_row0: u32,     // global index of the first query row
    x_row0: u32,     // global index of the first data row
    m: u32,          // columns of the block v (and of out)
    col0: u32,       // first block column of this dispatch
    n_cols: u32,     // block columns of this dispatch (<= BLOCK_COLS; tiled: <= its tile)
    accumulate: u32, // rbf: 1 to add to out, 0 to overwrite
    k: u32,          // knn: neighbours kept per row
    gamma: f32,
    grid_x: u32,
    v_vec4s: u32,    // *_uniform: vec4s per padded row of the block in v_slice
    x_vec4: u32,     // rbf tiled: 1 when D, q_offset and x_offset are multiples of 4 (vec4 loads)
}

@group(0) @binding(0) var<uniform> params: AffinityParams;
@group(0) @binding(3) var<storage, read> block: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> best_dist: array<f32>;
@group(0) @binding(6) var<storage, read_write> best_index: array<u32>;
@group(0) @binding(7) var<storage, read> row_starts: array<u32>;
@group(0) @binding(8) var<storage, read> cols: array<u32>;
@group(0) @binding(9) var<storage, read> values: array<f32>;
// The RBF product's prepared side, [d4 vec4: s, zeros past D][⌈N/4⌉ vec4: ‖x_g − s‖² of row g
// at component g % 4 of vec4 d4 + g / 4]; written by rbf_shift and rbf_norms.
@group(0) @binding(12) var<storage, read_write> prepared: array<vec4<f32>>;

// ---- The RBF product on the tile core (GPUs) ----

// Data rows whose mean is the shift s: a point among the data is all the shift needs (see
// the header), and a bounded sample keeps rbf_shift one short loop per feature.
const RBF_SHIFT_ROWS: u32 = 256u;

fn rbf_d4() -> u32 {
    return (params.d + 3u) / 4u;
}

// ‖x_g − s‖² of global row g.
fn rbf_norm(g: u32) -> f32 {
    return prepared[rbf_d4() + g / 4u][g % 4u];
}

// Features j .. j + 3 (j a multiple of 4) of query row r and of data row r of the dispatch,
// zeros past D.
fn query_quad(r: u32, j: u32) -> vec4<f32> {
    return pair_query_quad(params.q_offset + r * params.d, j, params.d, params.x_vec4 != 0u);
}

fn data_quad(r: u32, j: u32) -> vec4<f32> {
    return pair_data_quad(params.x_offset + r * params.d, j, params.d, params.x_vec4 != 0u);
}

// s_f: the mean of feature f over the first min(n_data, RBF_SHIFT_ROWS) data rows, in row
// order; zeros from D to 4 d4 (so that a shifted quad stays zero past D).
@compute @workgroup_size(ROW_WG_SIZE)
fn rbf_shift(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let f = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if f >= 4u * rbf_d4() {
        return;
    }
    var s = 0.0;
    if f < params.d {
        let rows = min(params.n_data, RBF_SHIFT_ROWS);
        for (var r = 0u; r < rows; r++) {
            s += data[params.x_offset + r * params.d + f];
        }
        s /= f32(rows);
    }
    prepared[f / 4u][f % 4u] = s;
}

// ‖x − s‖² of each data row of the dispatch: one fma chain over fl(x − s) in feature order,
// the values and the order of the tiled kernel's dot products, so d² is formed from one
// rounded pair of shifted vectors.
@compute @workgroup_size(ROW_WG_SIZE)
fn rbf_norms(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let r = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if r >= params.n_data {
        return;
    }
    var norm = 0.0;
    for (var j = 0u; j < params.d; j += 4u) {
        norm = fma_squares(data_quad(r, j) - prepared[j / 4u], norm);
    }
    let g = params.x_row0 + r;
    prepared[rbf_d4() + g / 4u][g % 4u] = norm;
}

@compute @workgroup_size(GEMM_LANES_M * GEMM_LANES_N)
fn rbf_times_block_tiled(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let tile_m = gemm_tile_m();
    let tile_n = gemm_tile_n();
    let wg = gemm_wg_size();
    let lane = gemm_lane(lid);
    let first = workgroup_index(wid, p.grid_x) * tile_m;
    // Workgroups past the end run no tiles (uniform barriers) and write nothing.
    var n_tiles = 0u;
    if first < p.n_queries {
        n_tiles = (p.n_data + tile_n - 1u) / tile_n;
    }
    // This lane's outputs (rows gemm_row, block columns col0 + gemm_col), from what earlier
    // dispatches left in `out` with `accumulate`: so each sum is one chain over all the data
    // rows in order, however the host splits them.
    var total: Block;
    var q_norm: array<f32, 8>;
    for (var i = 0u; i < GEMM_RM; i++) {
        let r = first + gemm_row(lane, i);
        if r < p.n_queries {
            let q = p.q_row0 + r;
            q_norm[i] = rbf_norm(q);
            for (var h = 0u; h < GEMM_RN / 4u; h++) {
                var v = vec4<f32>();
                for (var t = 0u; t < 4u; t++) {
                    let c = gemm_col(lane, 4u * h + t);
                    if p.accumulate == 1u && c < p.n_cols {
                        v[t] = out[q * p.m + p.col0 + c];
                    }
                }
                total.v[2u * i + h] = v;
            }
        }
    }
    let n_stages = (p.d + GEMM_DEPTH - 1u) / GEMM_DEPTH;
    let loads_a = gemm_loads(tile_m);
    let loads_b = gemm_loads(tile_n);
    for (var t0 = 0u; t0 < n_tiles * tile_n; t0 += tile_n) {
        // Phase 1: the dot products of the shifted query and data rows over all of D.
        var acc: Block;
        var pa: array<vec4<f32>, GEMM_MAX_LOADS>;
        var pb: array<vec4<f32>, GEMM_MAX_LOADS>;
        for (var s = 0u; s <= n_stages; s++) {
            if s > 0u {
                workgroupBarrier();
                for (var e = 0u; e * wg + lid < loads_a; e++) {
                    gemm_put_a_item_major(gemm_item_major_slot(e * wg + lid), pa[e]);
                }
                for (var e = 0u; e * wg + lid < loads_b; e++) {
                    gemm_put_b_item_major(gemm_item_major_slot(e * wg + lid), pb[e]);
                }
                workgroupBarrier();
            }
            if s < n_stages {
                // Prefetch stage s while stage s − 1 is multiplied; zeros past D (the quads'
                // and the shift's) and past the rows.
                let d0 = s * GEMM_DEPTH;
                for (var e = 0u; e * wg + lid < loads_a; e++) {
                    let slot = gemm_item_major_slot(e * wg + lid);
                    let r = first + slot.item;
                    let j = d0 + slot.depth;
                    var v = vec4<f32>();
                    if r < p.n_queries && j < p.d {
                        v = query_quad(r, j) - prepared[j / 4u];
                    }
                    pa[e] = v;
                }
                for (var e = 0u; e * wg + lid < loads_b; e++) {
                    let slot = gemm_item_major_slot(e * wg + lid);
                    let r = t0 + slot.item;
                    let j = d0 + slot.depth;
                    var v = vec4<f32>();
                    if r < p.n_data && j < p.d {
                        v = data_quad(r, j) - prepared[j / 4u];
                    }
                    pb[e] = v;
                }
            }
            if s > 0u {
                gemm_multiply_stage(lane, &acc);
            }
        }
        // The weights, in place of the dot products: d² = ‖x_q − s‖² + ‖x_j − s‖² − 2 dot
        // (clamped at 0, where rounding left a near pair below it), w = exp(−γ d²); 0 on the
        // diagonal and past the data rows, so those depths leave the sums unchanged.
        var c_norm: array<vec4<f32>, 2>;
        for (var h = 0u; h < GEMM_RN / 4u; h++) {
            for (var t = 0u; t < 4u; t++) {
                let c = t0 + gemm_col(lane, 4u * h + t);
                if c < p.n_data {
                    c_norm[h][t] = rbf_norm(p.x_row0 + c);
                }
            }
        }
        for (var i = 0u; i < GEMM_RM; i++) {
            let q = p.q_row0 + first + gemm_row(lane, i);
            for (var h = 0u; h < GEMM_RN / 4u; h++) {
                var w = vec4<f32>();
                for (var t = 0u; t < 4u; t++) {
                    let c = t0 + gemm_col(lane, 4u * h + t);
                    if c < p.n_data && p.x_row0 + c != q {
                        let dot = acc.v[2u * i + h][t];
                        let d2 = max(0.0, fma(-2.0, dot, q_norm[i] + c_norm[h][t]));
                        w[t] = exp(-p.gamma * d2);
                    }
                }
                acc.v[2u * i + h] = w;
            }
        }
        // Phase 2: total += W · V over the tile's data rows, GEMM_DEPTH of them a stage: the
        // weights of those rows (columns of W, held by the two lane columns that own them) go
        // to gemm_a as depths over the query rows, the rows of V to gemm_b, and the register
        // block adds them depth by depth, in data order.
        for (var j0 = 0u; j0 < tile_n; j0 += GEMM_DEPTH) {
            var pv: array<vec4<f32>, GEMM_MAX_LOADS>;
            for (var e = 0u; e * wg + lid < loads_b; e++) {
                let slot = gemm_depth_major_slot(e * wg + lid, tile_n);
                let r = t0 + j0 + slot.depth;
                var v = vec4<f32>();
                if r < p.n_data {
                    let at = (p.x_row0 + r) * p.m + p.col0;
                    for (var t = 0u; t < 4u; t++) {
                        if slot.item + t < p.n_cols {
                            v[t] = block[at + slot.item + t];
                        }
                    }
                }
                pv[e] = v;
            }
            workgroupBarrier();
            for (var e = 0u; e * wg + lid < loads_b; e++) {
                gemm_put_b_depth_major(gemm_depth_major_slot(e * wg + lid, tile_n), pv[e]);
            }
            for (var h = 0u; h < GEMM_RN / 4u; h++) {
                // This lane's column quad h is tile columns 4 quad .. 4 quad + 3.
                let quad = h * GEMM_LANES_N + lane.tx;
                if 4u * quad >= j0 && 4u * quad < j0 + GEMM_DEPTH {
                    let depth = 4u * quad - j0;
                    for (var i = 0u; i < GEMM_RM; i++) {
                        let row = gemm_row(lane, i);
                        let w = acc.v[2u * i + h];
                        let at = row / 4u;
                        let c = row % 4u;
                        gemm_a[depth * GEMM_ROW_VEC4S + at][c] = w.x;
                        gemm_a[(depth + 1u) * GEMM_ROW_VEC4S + at][c] = w.y;
                        gemm_a[(depth + 2u) * GEMM_ROW_VEC4S + at][c] = w.z;
                        gemm_a[(depth + 3u) * GEMM_ROW_VEC4S + at][c] = w.w;
                    }
                }
            }
            workgroupBarrier();
            gemm_multiply_stage(lane, &total);
        }
    }
    for (var i = 0u; i < GEMM_RM; i++) {
        let r = first + gemm_row(lane, i);
        if r < p.n_queries {
            let q = p.q_row0 + r;
            for (var m = 0u; m < GEMM_RN; m++) {
                let c = gemm_col(lane, m);
                if c < p.n_cols {
                    out[q * p.m + p.col0 + c] = block_at(total, i, m);
                }
            }
        }
    }
}

// The *_uniform variants (CPU-like adapters): the data rows come from a uniform slice, read
// at the same address by every invocation (nearly free there, where a storage load costs
// about a dozen FMAs), and each invocation keeps its query row in registers
// (d <= 4 UNIFORM_MAX_D4). The host pads every row to AFFINITY_D4 vec4s (x) and `v_vec4s`
// vec4s (the block), zeros after the last value (kernels/rows.rs pad_rows), so that each
// load is a whole vec4: `n_data` data rows from global row `x_row0` are in `x_slice` and,
// for the RBF product, their rows of the block in `v_slice`. The squared distances are the
// same fma chains, in the same feature order, as knn_update's (a padded feature adds
// fma(0, 0, d2) = d2), so the neighbour lists are the same bits.
const AFFINITY_SLICE_VEC4S: u32 = 4096u; // 64 KiB: the smallest max_uniform_buffer_binding_size
const UNIFORM_MAX_D4: u32 = 8u;
// vec4s per padded row of x, fixed per pipeline so that the loops over them unroll: a loop
// with a runtime bound costs llvmpipe one back-edge of its 65535 per iteration
// (GpuInfo::loop_back_edge_budget), and the distance loop runs once per pair.
override AFFINITY_D4: u32 = 1u;

@group(0) @binding(10) var<uniform> x_slice: array<vec4<f32>, AFFINITY_SLICE_VEC4S>;
@group(0) @binding(11) var<uniform> v_slice: array<vec4<f32>, AFFINITY_SLICE_VEC4S>;

// The query row r of this dispatch, in registers, zero past d. Both loops have constant
// bounds, so every index is a constant once they unroll: an index known only at run time
// would put the array in memory, and every pair's distance would load it from there.
fn query_row(r: u32) -> array<vec4<f32>, UNIFORM_MAX_D4> {
    var xq: array<vec4<f32>, UNIFORM_MAX_D4>;
    let base = params.q_offset + r * params.d;
    for (var f4 = 0u; f4 < AFFINITY_D4; f4++) {
        var v = vec4<f32>();
        for (var c = 0u; c < 4u; c++) {
            if 4u * f4 + c < params.d {
                v[c] = queries[base + 4u * f4 + c];
            }
        }
        xq[f4] = v;
    }
    return xq;
}

// ‖x_q − x_j‖² for data row j of the slice, in feature order.
fn slice_sq_distance(xq: array<vec4<f32>, UNIFORM_MAX_D4>, j: u32) -> f32 {
    var d2 = 0.0;
    for (var f4 = 0u; f4 < AFFINITY_D4; f4++) {
        d2 = fma_squares(xq[f4] - x_slice[j * AFFINITY_D4 + f4], d2);
    }
    return d2;
}

@compute @workgroup_size(ROW_WG_SIZE)
fn rbf_times_block_uniform(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let r = invocation_index(wid, p.grid_x, ROW_WG_SIZE, lid);
    if r >= p.n_queries {
        return;
    }
    let q = p.q_row0 + r;
    let xq = query_row(r);
    // Four columns per vec4 (a vec4 fma is four scalar fmas: the same sums).
    var acc: array<vec4<f32>, BLOCK_COLS4>;
    if p.accumulate == 1u {
        for (var c = 0u; c < BLOCK_COLS; c++) {
            if c < p.n_cols {
                acc[c / 4u][c % 4u] = out[q * p.m + p.col0 + c];
            }
        }
    }
    let c4_first = p.col0 / 4u;
    for (var j = 0u; j < p.n_data; j++) {
        if q != p.x_row0 + j {
            let w = vec4<f32>(exp(-p.gamma * slice_sq_distance(xq, j)));
            let base = j * p.v_vec4s + c4_first;
            for (var c4 = 0u; c4 < BLOCK_COLS4; c4++) {
                acc[c4] = fma(w, v_slice[min(base + c4, AFFINITY_SLICE_VEC4S - 1u)], acc[c4]);
            }
        }
    }
    for (var c = 0u; c < BLOCK_COLS; c++) {
        if c < p.n_cols {
            out[q * p.m + p.col0 + c] = acc[c / 4u][c % 4u];
        }
    }
}

@compute @workgroup_size(ROW_WG_SIZE)
fn knn_update(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let r = invocation_index(wid, p.grid_x, ROW_WG_SIZE, lid);
    if r >= p.n_queries {
        return;
    }
    let q = p.q_row0 + r;
    var dist: array<f32, KNN_MAX>;
    var index: array<u32, KNN_MAX>;
    for (var t = 0u; t < p.k; t++) {
        dist[t] = best_dist[q * p.k + t];
        index[t] = best_index[q * p.k + t];
    }
    for (var j = 0u; j < p.n_data; j++) {
        var d2 = 0.0;
        for (var f = 0u; f < p.d; f++) {
            let diff = queries[p.q_offset + r * p.d + f] - data[p.x_offset + j * p.d + f];
            d2 = fma(diff, diff, d2);
        }
        let g = p.x_row0 + j;
        // Insert (d2, g) into the sorted list when it beats the last entry.
        let last = p.k - 1u;
        if d2 < dist[last] || (d2 == dist[last] && g < index[last]) {
            var t = last;
            loop {
                if t == 0u {
                    break;
                }
                let before = dist[t - 1u] > d2 || (dist[t - 1u] == d2 && index[t - 1u] > g);
                if !before {
                    break;
                }
                dist[t] = dist[t - 1u];
                index[t] = index[t - 1u];
                t -= 1u;
            }
            dist[t] = d2;
            index[t] = g;
        }
    }
    for (var t = 0u; t < p.k; t++) {
        best_dist[q * p.k + t] = dist[t];
        best_index[q * p.k + t] = index[t];
    }
}

// knn_update with the data rows from the uniform slice and k fixed per pipeline
// (KNN_K <= KNN_UNIFORM_MAX_K), so that the lists live in registers: the common case, a pair
// that does not beat the k-th best, is one compare; an insertion is one unrolled pass that
// carries the larger entry down the list (compare and select, no indexing by lane).
override KNN_K: u32 = 10u;
const KNN_UNIFORM_MAX_K: u32 = 16u;

@compute @workgroup_size(ROW_WG_SIZE)
fn knn_update_uniform(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let r = invocation_index(wid, p.grid_x, ROW_WG_SIZE, lid);
    if r >= p.n_queries {
        return;
    }
    let q = p.q_row0 + r;
    let xq = query_row(r);
    var dist: array<f32, KNN_UNIFORM_MAX_K>;
    var index: array<u32, KNN_UNIFORM_MAX_K>;
    for (var t = 0u; t < KNN_K; t++) {
        dist[t] = best_dist[q * KNN_K + t];
        index[t] = best_index[q * KNN_K + t];
    }
    for (var j = 0u; j < p.n_data; j++) {
        let d2 = slice_sq_distance(xq, j);
        let g = p.x_row0 + j;
        let worst = dist[KNN_K - 1u];
        if d2 < worst || (d2 == worst && g < index[KNN_K - 1u]) {
            var cd = d2;
            var ci = g;
            for (var t = 0u; t < KNN_K; t++) {
                let od = dist[t];
                let oi = index[t];
                let better = cd < od || (cd == od && ci < oi);
                dist[t] = select(od, cd, better);
                index[t] = select(oi, ci, better);
                cd = select(cd, od, better);
                ci = select(ci, oi, better);
            }
        }
    }
    for (var t = 0u; t < KNN_K; t++) {
        best_dist[q * KNN_K + t] = dist[t];
        best_index[q * KNN_K + t] = index[t];
    }
}

@compute @workgroup_size(ROW_WG_SIZE)
fn csr_times_block(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let i = invocation_index(wid, p.grid_x, ROW_WG_SIZE, lid);
    if i >= p.n_queries {
        return;
    }
    // BLOCK_COLS columns per pass over the row's entries, accumulated in registers.
    for (var g = 0u; g < p.m; g += BLOCK_COLS) {
        var acc: array<f32, BLOCK_COLS>;
        for (var e = row_starts[i]; e < row_starts[i + 1u]; e++) {
            let w = values[e];
            let at = cols[e] * p.m + g;
            for (var c = 0u; c < BLOCK_COLS; c++) {
                if g + c < p.m {
                    acc[c] = fma(w, block[at + c], acc[c]);
                }
            }
        }
        for (var c = 0u; c < BLOCK_COLS; c++) {
            if g + c < p.m {
                out[i * p.m + g + c] = acc[c];
            }
        }
    }
}
