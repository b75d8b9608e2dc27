// What the pair kernels share (products/affinity.wgsl, the RBF product; neighbors/knn.wgsl
// and neighbors/csr.wgsl, the neighbour search and the sparse product): the parameters of a
// dispatch over a run of query rows against a run of data rows, the block operand and the
// output, the rows' quad loaders, and the uniform-slice form of the data rows that CPU-like
// adapters read (below). Host twin: src/kernels/primitives/pairs.rs.

#import constants
#import vec4s
#import pair_rows

// Block columns per dispatch of the uniform RBF product and per pass over a row's entries of
// the sparse product, held in registers (a wider block takes more passes).
const BLOCK_COLS: u32 = 16u;
const BLOCK_COLS4: u32 = BLOCK_COLS / 4u;

// Twin: PairParams in src/kernels/primitives/pairs.rs.
struct PairParams {
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
    gamma: f32,      // rbf: γ of exp(−γ d²); range: the squared radius ε²
    grid_x: u32,
    v_vec4s: u32,    // *_uniform: vec4s per padded row of the block in v_slice
    x_vec4: u32,     // rbf tiled: 1 when D, q_offset and x_offset are multiples of 4 (vec4 loads)
}

@group(0) @binding(0) var<uniform> params: PairParams;
@group(0) @binding(3) var<storage, read> block: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

// Features j .. j + 3 (j a multiple of 4) of query row r and of data row r of the dispatch,
// zeros past D.
fn query_quad(r: u32, j: u32) -> vec4<f32> {
    return pair_query_quad(params.q_offset + r * params.d, j, params.d, params.x_vec4 != 0u);
}

fn data_quad(r: u32, j: u32) -> vec4<f32> {
    return pair_data_quad(params.x_offset + r * params.d, j, params.d, params.x_vec4 != 0u);
}

// The *_uniform variants (CPU-like adapters): the data rows come from a uniform slice, read
// at the same address by every invocation (nearly free there, where a storage load costs
// about a dozen FMAs), and each invocation keeps its query row in registers
// (d <= 4 UNIFORM_MAX_D4). The host pads every row to PAIR_D4 vec4s (x) and `v_vec4s`
// vec4s (the block), zeros after the last value (kernels/rows.rs pad_rows), so that each
// load is a whole vec4: `n_data` data rows from global row `x_row0` are in `x_slice` and,
// for the RBF product, their rows of the block in `v_slice`. The squared distances are the
// same fma chains, in the same feature order, as knn_update's (a padded feature adds
// fma(0, 0, d2) = d2), so the neighbour lists are the same bits.
const PAIR_SLICE_VEC4S: u32 = 4096u; // 64 KiB: the smallest max_uniform_buffer_binding_size
const UNIFORM_MAX_D4: u32 = 8u;
// vec4s per padded row of x, fixed per pipeline so that the loops over them unroll: a loop
// with a runtime bound costs llvmpipe one back-edge of its 65535 per iteration
// (GpuInfo::loop_back_edge_budget), and the distance loop runs once per pair.
override PAIR_D4: u32 = 1u;

@group(0) @binding(10) var<uniform> x_slice: array<vec4<f32>, PAIR_SLICE_VEC4S>;


// The query row r of this dispatch, in registers, zero past d. Both loops have constant
// bounds, so every index is a constant once they unroll: an index known only at run time
// would put the array in memory, and every pair's distance would load it from there.
fn query_row(r: u32) -> array<vec4<f32>, UNIFORM_MAX_D4> {
    var xq: array<vec4<f32>, UNIFORM_MAX_D4>;
    let base = params.q_offset + r * params.d;
    for (var f4 = 0u; f4 < PAIR_D4; f4++) {
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
    for (var f4 = 0u; f4 < PAIR_D4; f4++) {
        d2 = fma_squares(xq[f4] - x_slice[j * PAIR_D4 + f4], d2);
    }
    return d2;
}
