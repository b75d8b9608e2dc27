// The RBF affinity of spectral clustering times a block, without forming an N x N matrix.
//
// Host wrapper: src/kernels/products/affinity.rs; the pair parameters: shared/pair_params.wgsl.
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
//
// rbf_times_block_uniform (CPU-like adapters, below) sums the difference form Σ (x_q − x_j)²
// per pair instead, with the data rows from uniform slices (shared/pair_params.wgsl): not the
// same bits as the tiled kernel (both are held against f64 sums).
//
// @trusted: query and data rows below n_queries and n_data, block columns below m; slice reads
//   clamped to the slice

#import constants
#import gemm
#import grid
#import vec4s
#import pair_params

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
    // Rows 0..3 and 4..7's norms (vec4s, not an array: see block_quad in shared/gemm.wgsl).
    var q_norm_lo = vec4<f32>();
    var q_norm_hi = vec4<f32>();
    for (var i = 0u; i < GEMM_RM; i++) {
        let r = first + gemm_row(lane, i);
        if r < p.n_queries {
            let q = p.q_row0 + r;
            if i < 4u {
                q_norm_lo[i] = rbf_norm(q);
            } else {
                q_norm_hi[i - 4u] = rbf_norm(q);
            }
            for (var h = 0u; h < GEMM_RN / 4u; h++) {
                var v = vec4<f32>();
                for (var t = 0u; t < 4u; t++) {
                    let c = gemm_col(lane, 4u * h + t);
                    if p.accumulate == 1u && c < p.n_cols {
                        v[t] = out[q * p.m + p.col0 + c];
                    }
                }
                block_set_quad(&total, 2u * i + h, v);
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
                // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
                // prefetch registers are indexed by constants and stay registers.
                for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                    if gemm_has_load(e, lid, loads_a) {
                        gemm_put_a_item_major(gemm_item_major_slot(e * wg + lid), pa[e]);
                    }
                }
                // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
                // prefetch registers are indexed by constants and stay registers.
                for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                    if gemm_has_load(e, lid, loads_b) {
                        gemm_put_b_item_major(gemm_item_major_slot(e * wg + lid), pb[e]);
                    }
                }
                workgroupBarrier();
            }
            if s < n_stages {
                // Prefetch stage s while stage s − 1 is multiplied; zeros past D (the quads'
                // and the shift's) and past the rows.
                let d0 = s * GEMM_DEPTH;
                // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
                // prefetch registers are indexed by constants and stay registers.
                for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                    if gemm_has_load(e, lid, loads_a) {
                        let slot = gemm_item_major_slot(e * wg + lid);
                        let r = first + slot.item;
                        let j = d0 + slot.depth;
                        var v = vec4<f32>();
                        if r < p.n_queries && j < p.d {
                            v = query_quad(r, j) - prepared[j / 4u];
                        }
                        pa[e] = v;
                    }
                }
                // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
                // prefetch registers are indexed by constants and stay registers.
                for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                    if gemm_has_load(e, lid, loads_b) {
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
            }
            if s > 0u {
                gemm_multiply_stage(lane, &acc);
            }
        }
        // The weights, in place of the dot products: d² = ‖x_q − s‖² + ‖x_j − s‖² − 2 dot
        // (clamped at 0, where rounding left a near pair below it), w = exp(−γ d²); 0 on the
        // diagonal and past the data rows, so those depths leave the sums unchanged.
        var c_norm_lo = vec4<f32>();
        var c_norm_hi = vec4<f32>();
        for (var h = 0u; h < GEMM_RN / 4u; h++) {
            for (var t = 0u; t < 4u; t++) {
                let c = t0 + gemm_col(lane, 4u * h + t);
                if c < p.n_data {
                    if h == 0u {
                        c_norm_lo[t] = rbf_norm(p.x_row0 + c);
                    } else {
                        c_norm_hi[t] = rbf_norm(p.x_row0 + c);
                    }
                }
            }
        }
        for (var i = 0u; i < GEMM_RM; i++) {
            let q = p.q_row0 + first + gemm_row(lane, i);
            let qn = select(q_norm_hi[i % 4u], q_norm_lo[i % 4u], i < 4u);
            for (var h = 0u; h < GEMM_RN / 4u; h++) {
                let dots = block_quad(acc, 2u * i + h);
                let cn = select(c_norm_hi, c_norm_lo, h == 0u);
                var w = vec4<f32>();
                for (var t = 0u; t < 4u; t++) {
                    let c = t0 + gemm_col(lane, 4u * h + t);
                    if c < p.n_data && p.x_row0 + c != q {
                        let d2 = max(0.0, fma(-2.0, dots[t], qn + cn[t]));
                        w[t] = exp(-p.gamma * d2);
                    }
                }
                block_set_quad(&acc, 2u * i + h, w);
            }
        }
        // Phase 2: total += W · V over the tile's data rows, GEMM_DEPTH of them a stage: the
        // weights of those rows (columns of W, held by the two lane columns that own them) go
        // to gemm_a as depths over the query rows, the rows of V to gemm_b, and the register
        // block adds them depth by depth, in data order.
        for (var j0 = 0u; j0 < tile_n; j0 += GEMM_DEPTH) {
            var pv: array<vec4<f32>, GEMM_MAX_LOADS>;
            // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
            // prefetch registers are indexed by constants and stay registers.
            for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                if gemm_has_load(e, lid, loads_b) {
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
            }
            workgroupBarrier();
            // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
            // prefetch registers are indexed by constants and stay registers.
            for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                if gemm_has_load(e, lid, loads_b) {
                    gemm_put_b_depth_major(gemm_depth_major_slot(e * wg + lid, tile_n), pv[e]);
                }
            }
            for (var h = 0u; h < GEMM_RN / 4u; h++) {
                // This lane's column quad h is tile columns 4 quad .. 4 quad + 3.
                let quad = h * GEMM_LANES_N + lane.tx;
                if 4u * quad >= j0 && 4u * quad < j0 + GEMM_DEPTH {
                    let depth = 4u * quad - j0;
                    for (var i = 0u; i < GEMM_RM; i++) {
                        let row = gemm_row(lane, i);
                        let w = block_quad(acc, 2u * i + h);
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

@group(0) @binding(11) var<uniform> v_slice: array<vec4<f32>, PAIR_SLICE_VEC4S>;

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
                acc[c4] = fma(w, v_slice[min(base + c4, PAIR_SLICE_VEC4S - 1u)], acc[c4]);
            }
        }
    }
    for (var c = 0u; c < BLOCK_COLS; c++) {
        if c < p.n_cols {
            out[q * p.m + p.col0 + c] = acc[c / 4u][c % 4u];
        }
    }
}
