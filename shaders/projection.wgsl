// Row-wise affine products: out = (in − in_shift) · W + out_shift.
//
// Host wrapper: src/kernels/projection.rs.
//
// One kernel serves every dense product whose rows are independent:
//   - PCA transform:          Z  = (X − μ) · (U / σ / √λ)ᵀ       (in_shift = μ)
//   - PCA inverse transform:  X̂ = Z · (√λ · U · σ) + μ           (out_shift = μ)
//   - power iteration:        W  = S · V  (S is D x D on the device)
//   - matrix-free iteration:  P  = (X − μ) · V
// W is K x C row-major (K = input columns, C = output columns). Tiled like a GEMM: a
// workgroup owns 64 rows x 64 output columns, stages TILE_K input columns of both operands
// through workgroup memory, each invocation accumulates 4 x 4 outputs.

override WG_SIZE: u32 = 256u; // must be 256: 16 x 16 invocations of 4 x 4 outputs
const TILE: u32 = 64u;
const TILE_K: u32 = 16u;

// Twin: AffineParams in src/kernels/projection.rs.
struct AffineParams {
    n_rows: u32,      // rows in this dispatch
    in_offset: u32,   // index of the first input value inside the bound range of `input`
    in_cols: u32,     // K
    out_cols: u32,    // C
    n_col_tiles: u32, // ceil(C / 64)
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

var<workgroup> in_tile: array<f32, 1024>; // [TILE_K][TILE rows]
var<workgroup> w_tile: array<f32, 1024>;  // [TILE_K][TILE cols]

@compute @workgroup_size(WG_SIZE)
fn affine_matmul(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let g = wid.y * params.grid_x + wid.x;
    let row0 = (g / params.n_col_tiles) * TILE;
    let col0 = (g % params.n_col_tiles) * TILE;
    let tx = lid % 16u;
    let ty = lid / 16u;
    var acc: array<f32, 16>;
    for (var k0 = 0u; k0 < params.in_cols; k0 += TILE_K) {
        workgroupBarrier();
        // Input rows: consecutive invocations read consecutive columns of a row.
        for (var e = lid; e < TILE_K * TILE; e += WG_SIZE) {
            let r = e / TILE_K;
            let kk = e % TILE_K;
            var v = 0.0;
            if row0 + r < params.n_rows && k0 + kk < params.in_cols {
                v = input[params.in_offset + (row0 + r) * params.in_cols + k0 + kk]
                    - in_shift[k0 + kk];
            }
            in_tile[kk * TILE + r] = v;
        }
        // Weights: consecutive invocations read consecutive output columns.
        for (var e = lid; e < TILE_K * TILE; e += WG_SIZE) {
            let kk = e / TILE;
            let c = e % TILE;
            var v = 0.0;
            if k0 + kk < params.in_cols && col0 + c < params.out_cols {
                v = weights[(k0 + kk) * params.out_cols + col0 + c];
            }
            w_tile[kk * TILE + c] = v;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TILE_K; kk++) {
            var iv: array<f32, 4>;
            var wv: array<f32, 4>;
            for (var i = 0u; i < 4u; i++) {
                iv[i] = in_tile[kk * TILE + ty + i * 16u];
                wv[i] = w_tile[kk * TILE + tx + i * 16u];
            }
            for (var i = 0u; i < 4u; i++) {
                for (var m = 0u; m < 4u; m++) {
                    acc[i * 4u + m] = fma(iv[i], wv[m], acc[i * 4u + m]);
                }
            }
        }
    }
    for (var i = 0u; i < 4u; i++) {
        let row = row0 + ty + i * 16u;
        if row < params.n_rows {
            for (var m = 0u; m < 4u; m++) {
                let c = col0 + tx + m * 16u;
                if c < params.out_cols {
                    output[row * params.out_cols + c] = acc[i * 4u + m] + out_shift[c];
                }
            }
        }
    }
}
