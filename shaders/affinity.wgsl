// The affinity graphs of spectral clustering, applied without forming an N x N matrix.
//
// Host wrapper: src/kernels/affinity.rs.
//
// rbf_times_block: out[q][c] (+)= Σ_{j ≠ q} exp(−γ‖x_q − x_j‖²) · v[j][c] for a run of query
// rows q and a run of data rows j, columns col0 .. col0 + n_cols (n_cols <= BLOCK_COLS) of the
// N x m block v. An invocation owns one query row and all the columns of the dispatch; the
// workgroup walks the data RBF_TILE rows at a time, staged with their block rows in workgroup
// memory, so each pair's exp(−γ‖x_q − x_j‖²) is computed once and multiplied into every
// column (the n-body pattern): O(N²(D + m)) work with one exponential per pair, and
// O(N·(D + m)) memory, never N². Each query sums its pairs in data order, so the result does
// not depend on timing. The diagonal (q = j) is left out: the normalised Laplacian ignores
// self-loops.
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
#import grid
#import vec4s

// Largest n_neighbors (the private lists of knn_update).
const KNN_MAX: u32 = 64u;

// rbf_times_block: queries per workgroup, one per invocation (the host's choice, a power of
// two from RBF_WG_MIN to RBF_WG_MAX); data rows and features staged per step; the most block
// columns one dispatch carries (a wider block takes one pass over the pairs per RBF_COLS).
override RBF_WG_SIZE: u32 = 64u;
const RBF_WG_MIN: u32 = 32u;
const RBF_WG_MAX: u32 = 128u;
const RBF_TILE: u32 = 16u;
const RBF_FEATURES: u32 = 16u;

// Block columns per dispatch of the RBF product and per pass over a row's entries of the
// sparse product, held in registers (a wider block takes more passes).
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
    n_cols: u32,     // block columns of this dispatch (<= BLOCK_COLS)
    accumulate: u32, // rbf: 1 to add to out, 0 to overwrite
    k: u32,          // knn: neighbours kept per row
    gamma: f32,
    grid_x: u32,
    v_vec4s: u32,    // *_uniform: vec4s per padded row of the block in v_slice
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: AffinityParams;
@group(0) @binding(1) var<storage, read> queries: array<f32>;
@group(0) @binding(2) var<storage, read> data: array<f32>;
@group(0) @binding(3) var<storage, read> block: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> best_dist: array<f32>;
@group(0) @binding(6) var<storage, read_write> best_index: array<u32>;
@group(0) @binding(7) var<storage, read> row_starts: array<u32>;
@group(0) @binding(8) var<storage, read> cols: array<u32>;
@group(0) @binding(9) var<storage, read> values: array<f32>;

// Staging of the data rows, in workgroup memory and shared by the RBF_WG_SIZE queries, and
// each query's squared distances to them.
var<workgroup> rbf_x: array<f32, RBF_TILE * RBF_FEATURES>; // [data row][feature]
var<workgroup> rbf_v: array<f32, RBF_TILE * BLOCK_COLS>;   // [data row][block column]
var<workgroup> rbf_d2: array<f32, RBF_TILE * RBF_WG_MAX>;  // [data row][query lane]

@compute @workgroup_size(RBF_WG_SIZE)
fn rbf_times_block(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let first = workgroup_index(wid, p.grid_x) * RBF_WG_SIZE;
    let r = first + lid;
    let live = r < p.n_queries;
    let q = p.q_row0 + r;
    // Workgroups past the end run no steps (uniform barriers) and write nothing.
    var n_steps = 0u;
    if first < p.n_queries {
        n_steps = (p.n_data + RBF_TILE - 1u) / RBF_TILE;
    }
    // The loops over the columns have the constant bound BLOCK_COLS, so that the compiler
    // can keep `acc` in registers (a runtime index would put it in memory, per lane).
    // With `accumulate`, the sums go on from what earlier dispatches left in `out`, so a
    // query's sum over all data rows is one chain in data order however the host splits
    // the data (and the same bits as rbf_times_block_uniform).
    var acc: array<f32, BLOCK_COLS>;
    if live && p.accumulate == 1u {
        for (var c = 0u; c < BLOCK_COLS; c++) {
            if c < p.n_cols {
                acc[c] = out[q * p.m + p.col0 + c];
            }
        }
    }
    for (var s = 0u; s < n_steps; s++) {
        let c0 = s * RBF_TILE;
        let rows = min(RBF_TILE, p.n_data - c0);
        for (var j = 0u; j < RBF_TILE; j++) {
            rbf_d2[j * RBF_WG_MAX + lid] = 0.0; // this lane's own slots
        }
        // Squared distances to the tile's data rows, RBF_FEATURES features at a time.
        for (var f0 = 0u; f0 < p.d; f0 += RBF_FEATURES) {
            let fw = min(RBF_FEATURES, p.d - f0);
            for (var e = lid; e < rows * fw; e += RBF_WG_SIZE) {
                let j = e / fw;
                let f = e % fw;
                rbf_x[j * RBF_FEATURES + f] = data[p.x_offset + (c0 + j) * p.d + f0 + f];
            }
            workgroupBarrier();
            if live {
                for (var j = 0u; j < rows; j++) {
                    var d2 = rbf_d2[j * RBF_WG_MAX + lid];
                    for (var f = 0u; f < fw; f++) {
                        let diff = queries[p.q_offset + r * p.d + f0 + f] - rbf_x[j * RBF_FEATURES + f];
                        d2 = fma(diff, diff, d2);
                    }
                    rbf_d2[j * RBF_WG_MAX + lid] = d2;
                }
            }
            workgroupBarrier();
        }
        // The tile's rows of the block, every column of this dispatch (zero past n_cols).
        for (var e = lid; e < rows * BLOCK_COLS; e += RBF_WG_SIZE) {
            let j = e / BLOCK_COLS;
            let c = e % BLOCK_COLS;
            var v = 0.0;
            if c < p.n_cols {
                v = block[(p.x_row0 + c0 + j) * p.m + p.col0 + c];
            }
            rbf_v[j * BLOCK_COLS + c] = v;
        }
        workgroupBarrier();
        if live {
            for (var j = 0u; j < rows; j++) {
                // One exponential per pair, multiplied into every column.
                if q != p.x_row0 + c0 + j {
                    let w = exp(-p.gamma * rbf_d2[j * RBF_WG_MAX + lid]);
                    for (var c = 0u; c < BLOCK_COLS; c++) {
                        acc[c] = fma(w, rbf_v[j * BLOCK_COLS + c], acc[c]);
                    }
                }
            }
        }
        workgroupBarrier();
    }
    if live {
        for (var c = 0u; c < BLOCK_COLS; c++) {
            if c < p.n_cols {
                out[q * p.m + p.col0 + c] = acc[c];
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
// same fma chains, in the same feature order, as the storage kernels' (a padded feature
// adds fma(0, 0, d2) = d2), so the results are the same bits.
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
