// Row-wise affine products: out = (in − in_shift) · W + out_shift.
//
// Host wrapper: src/kernels/products/projection.rs.
//
// One kernel serves every dense product whose rows are independent:
//   - PCA transform:          Z  = (X − μ) · (U / σ / √λ)ᵀ       (in_shift = μ)
//   - PCA inverse transform:  X̂ = Z · (√λ · U · σ) + μ           (out_shift = μ)
//   - power iteration:        W  = S · V  (S is D x D on the device)
//   - matrix-free iteration:  P  = (X − μ) · V
// W is K x C row-major (K = input columns, C = output columns). A GEMM on the tile core
// (shared/gemm.wgsl): a workgroup owns gemm_tile_m() rows x gemm_tile_n() output columns;
// the input rows are staged item-major (four input columns of one row a vec4 load, minus the
// shift), W depth-major (four output columns of one of its rows a load), a stage ahead in
// registers (prefetch); every output is one fma chain over the input columns in order from
// +0.0, then out_shift is added.
//
// @trusted: rows below n_rows and columns below the map's width are guarded before every load and
//   store

#import grid
#import gemm

// Twin: AffineParams in src/kernels/products/projection.rs.
struct AffineParams {
    n_rows: u32,      // rows in this dispatch
    in_offset: u32,   // index of the first input value inside the bound range of `input`
    in_cols: u32,     // K
    out_cols: u32,    // C
    n_col_tiles: u32, // ceil(C / gemm_tile_n())
    grid_x: u32,
    in_vec4: u32,     // 1: input rows start on vec4 boundaries (in_offset, in_cols multiples of 4)
    w_vec4: u32,      // 1: rows of W start on vec4 boundaries (out_cols a multiple of 4)
}

@group(0) @binding(0) var<uniform> params: AffineParams;
@group(0) @binding(1) var<storage, read> input: array<f32>;
@group(0) @binding(2) var<storage, read> in_shift: array<f32>;
@group(0) @binding(3) var<storage, read> weights: array<f32>;
@group(0) @binding(4) var<storage, read> out_shift: array<f32>;
@group(0) @binding(5) var<storage, read_write> output: array<f32>;
// `input` and `weights` again as vec4s (read only when in_vec4 / w_vec4).
@group(0) @binding(6) var<storage, read> input4: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> weights4: array<vec4<f32>>;

// Input columns k .. k + 3 of row `row`, minus the shift (zeros past K).
fn input_quad(row: u32, k: u32) -> vec4<f32> {
    let at = params.in_offset + row * params.in_cols + k;
    var v = vec4<f32>();
    if params.in_vec4 != 0u && k + 3u < params.in_cols {
        v = input4[at / 4u] - vec4<f32>(in_shift[k], in_shift[k + 1u], in_shift[k + 2u], in_shift[k + 3u]);
    } else {
        for (var t = 0u; t < 4u; t++) {
            if k + t < params.in_cols {
                v[t] = input[at + t] - in_shift[k + t];
            }
        }
    }
    return v;
}

// Output columns c .. c + 3 of row k of W (zeros past C).
fn weights_quad(k: u32, c: u32) -> vec4<f32> {
    let at = k * params.out_cols + c;
    var v = vec4<f32>();
    if params.w_vec4 != 0u && c + 3u < params.out_cols {
        v = weights4[at / 4u];
    } else {
        for (var t = 0u; t < 4u; t++) {
            if c + t < params.out_cols {
                v[t] = weights[at + t];
            }
        }
    }
    return v;
}

@compute @workgroup_size(GEMM_LANES_M * GEMM_LANES_N)
fn affine_matmul(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let tile_m = gemm_tile_m();
    let tile_n = gemm_tile_n();
    let wg = gemm_wg_size();
    let g = workgroup_index(wid, params.grid_x);
    let row0 = (g / params.n_col_tiles) * tile_m;
    let col0 = (g % params.n_col_tiles) * tile_n;
    let lane = gemm_lane(lid);
    let n_stages = (params.in_cols + GEMM_DEPTH - 1u) / GEMM_DEPTH;
    let loads_a = gemm_loads(tile_m);
    let loads_b = gemm_loads(tile_n);
    var acc: Block;
    var pa: array<vec4<f32>, GEMM_MAX_LOADS>;
    var pb: array<vec4<f32>, GEMM_MAX_LOADS>;
    // `n_stages` depends only on the parameters: uniform barriers, also in workgroups past
    // the last tile (they write nothing).
    for (var s = 0u; s <= n_stages; s++) {
        if s > 0u {
            gemm_put_stage(lid, pa, GEMM_ITEM_MAJOR, pb, GEMM_DEPTH_MAJOR);
        }
        if s < n_stages {
            // Prefetch stage s while stage s − 1 is multiplied.
            let k0 = s * GEMM_DEPTH;
            // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
            // prefetch registers are indexed by constants and stay registers.
            for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                if gemm_has_load(e, lid, loads_a) {
                    let slot = gemm_item_major_slot(e * wg + lid);
                    var v = vec4<f32>();
                    if row0 + slot.item < params.n_rows && k0 + slot.depth < params.in_cols {
                        v = input_quad(row0 + slot.item, k0 + slot.depth);
                    }
                    pa[e] = v;
                }
            }
            // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
            // prefetch registers are indexed by constants and stay registers.
            for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                if gemm_has_load(e, lid, loads_b) {
                    let slot = gemm_depth_major_slot(e * wg + lid, tile_n);
                    var v = vec4<f32>();
                    if k0 + slot.depth < params.in_cols && col0 + slot.item < params.out_cols {
                        v = weights_quad(k0 + slot.depth, col0 + slot.item);
                    }
                    pb[e] = v;
                }
            }
        }
        if s > 0u {
            gemm_multiply_stage(lane, &acc);
        }
    }
    for (var i = 0u; i < GEMM_RM; i++) {
        let row = row0 + gemm_row(lane, i);
        if row < params.n_rows {
            for (var m = 0u; m < GEMM_RN; m++) {
                let c = col0 + gemm_col(lane, m);
                if c < params.out_cols {
                    output[row * params.out_cols + c] = block_at(acc, i, m) + out_shift[c];
                }
            }
        }
    }
}
