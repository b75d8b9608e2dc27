// Row-wise affine products: out = (in − in_shift) · W + out_shift.
//
// Host wrapper: src/kernels/projection.rs.
//
// One kernel serves every dense product whose rows are independent:
//   - PCA transform:          Z  = (X − μ) · (U / σ / √λ)ᵀ       (in_shift = μ)
//   - PCA inverse transform:  X̂ = Z · (√λ · U · σ) + μ           (out_shift = μ)
//   - power iteration:        W  = S · V  (S is D x D on the device)
//   - matrix-free iteration:  P  = (X − μ) · V
// W is K x C row-major (K = input columns, C = output columns). Tiled like a GEMM
// (shared/tile.wgsl): a workgroup owns TILE rows x TILE output columns, stages TILE_K input
// columns of both operands through workgroup memory, each invocation accumulates 4 x 4
// outputs.

#import grid
#import tile

// Twin: AffineParams in src/kernels/projection.rs.
struct AffineParams {
    n_rows: u32,      // rows in this dispatch
    in_offset: u32,   // index of the first input value inside the bound range of `input`
    in_cols: u32,     // K
    out_cols: u32,    // C
    n_col_tiles: u32, // ceil(C / TILE)
    grid_x: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: AffineParams;
@group(0) @binding(1) var<storage, read> input: array<f32>;
@group(0) @binding(2) var<storage, read> in_shift: array<f32>;
@group(0) @binding(3) var<storage, read> weights: array<f32>;
@group(0) @binding(4) var<storage, read> out_shift: array<f32>;
@group(0) @binding(5) var<storage, read_write> output: array<f32>;

@compute @workgroup_size(TILE_WG_SIZE)
fn affine_matmul(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let g = workgroup_index(wid, params.grid_x);
    let row0 = (g / params.n_col_tiles) * TILE;
    let col0 = (g % params.n_col_tiles) * TILE;
    let lane = tile_lane(lid);
    var acc: array<f32, TILE_REGS>;
    for (var k0 = 0u; k0 < params.in_cols; k0 += TILE_K) {
        workgroupBarrier();
        // Input rows: consecutive invocations read consecutive columns of a row.
        for (var e = lid; e < TILE_STEP; e += TILE_WG_SIZE) {
            let s = item_major_slot(e);
            var v = 0.0;
            if row0 + s.item < params.n_rows && k0 + s.k < params.in_cols {
                v = input[params.in_offset + (row0 + s.item) * params.in_cols + k0 + s.k]
                    - in_shift[k0 + s.k];
            }
            tile_a[s.at] = v;
        }
        // Weights: consecutive invocations read consecutive output columns.
        for (var e = lid; e < TILE_STEP; e += TILE_WG_SIZE) {
            let s = depth_major_slot(e);
            var v = 0.0;
            if k0 + s.k < params.in_cols && col0 + s.item < params.out_cols {
                v = weights[(k0 + s.k) * params.out_cols + col0 + s.item];
            }
            tile_b[s.at] = v;
        }
        workgroupBarrier();
        accumulate_products(lane, &acc);
    }
    for (var i = 0u; i < TILE_BLOCK; i++) {
        let row = row0 + lane_row(lane, i);
        if row < params.n_rows {
            for (var m = 0u; m < TILE_BLOCK; m++) {
                let c = col0 + lane_col(lane, m);
                if c < params.out_cols {
                    output[row * params.out_cols + c] = acc[i * TILE_BLOCK + m] + out_shift[c];
                }
            }
        }
    }
}
