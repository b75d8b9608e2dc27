// Per-cluster statistics for the Lloyd update, without float atomics.
//
// Host wrapper: src/kernels/centroid_update.rs.
//
// The rows are cut into blocks of `block_rows`; one workgroup owns one block and writes that
// block's partial statistics: for each cluster c and feature j the sum of w·(x_j − old_c_j),
// the member count, and the sums of w·(squared distance) and of w, with w the row's sample
// weight (`weighted`) or 1. A weight of exactly 1 multiplies exactly, so unweighted sums
// have the same bits as sums that never multiply; counts stay integers (f32 sums of ones
// would stop being exact past 2^24 rows). Invocations own features (stride
// FEATURE_WG_SIZE, which the host picks from D) and walk the block's rows in order, so every
// partial has exactly one writer and a fixed summation order: results are bitwise
// reproducible. Summing deviations from the old centroid instead of raw values keeps the f32
// partials small when the data sit far from the origin. sum_partial_columns (reduce.wgsl)
// then folds the blocks together.
//
// When K x D <= SHARED_SUMS and K <= SHARED_CLUSTERS (`in_workgroup_memory`, decided on the
// host) the running sums live in workgroup memory and reach the storage buffers once per block
// instead of once per row. No barrier is needed: every invocation touches only its own features
// (and invocation 0 alone the counts), exactly as on the storage path.
//
// The partial buffers must be zeroed before the dispatch (the host clears them).

#import constants
#import grid

const SHARED_SUMS: u32 = 2048u;    // K x D values
const SHARED_CLUSTERS: u32 = 512u; // K counts and squared-distance sums

// Twin: AccumulateParams in src/kernels/centroid_update.rs.
struct AccumulateParams {
    n_rows: u32,       // rows in this chunk
    x_offset: u32,     // index of the chunk's first value inside the bound range of x
    d: u32,
    k: u32,
    block_rows: u32,   // rows per block (bounds every f32 partial sum)
    block_offset: u32, // global index of this chunk's first block
    grid_x: u32,
    in_workgroup_memory: u32, // 1: accumulate in workgroup memory (small K x D)
    weighted: u32,     // 1: rows have weights in `weights`; 0: every weight is 1 (`weights` unused)
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: AccumulateParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> labels: array<u32>;
@group(0) @binding(3) var<storage, read> min_sq_dist: array<f32>;
@group(0) @binding(4) var<storage, read> weights: array<f32>;
@group(0) @binding(5) var<storage, read> old_centroids: array<f32>;
// [block][cluster][feature]
@group(0) @binding(6) var<storage, read_write> partial_sums: array<f32>;
// [block][cluster]
@group(0) @binding(7) var<storage, read_write> partial_counts: array<u32>;
// [block][cluster][2]: Σ w·d², Σ w
@group(0) @binding(8) var<storage, read_write> partial_sq_dist: array<f32>;

var<workgroup> shared_sums: array<f32, SHARED_SUMS>;
var<workgroup> shared_counts: array<u32, SHARED_CLUSTERS>;
var<workgroup> shared_sq_dist: array<f32, SHARED_CLUSTERS>;
var<workgroup> shared_weights: array<f32, SHARED_CLUSTERS>;

fn weight_of(r: u32) -> f32 {
    if params.weighted != 0u {
        return weights[r];
    }
    return 1.0;
}

@compute @workgroup_size(FEATURE_WG_SIZE)
fn accumulate_cluster_partials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let block = workgroup_index(wid, params.grid_x);
    let first = block * params.block_rows;
    if first >= params.n_rows {
        return;
    }
    let last = min(first + params.block_rows, params.n_rows);
    let gblock = params.block_offset + block;
    let d = params.d;
    let k = params.k;
    if params.in_workgroup_memory != 0u {
        for (var c = 0u; c < k; c++) {
            for (var j = lid; j < d; j += FEATURE_WG_SIZE) {
                shared_sums[c * d + j] = 0.0;
            }
            if lid == 0u {
                shared_counts[c] = 0u;
                shared_sq_dist[c] = 0.0;
                shared_weights[c] = 0.0;
            }
        }
        for (var r = first; r < last; r++) {
            let c = labels[r];
            let w = weight_of(r);
            let xrow = params.x_offset + r * d;
            for (var j = lid; j < d; j += FEATURE_WG_SIZE) {
                shared_sums[c * d + j] += w * (x[xrow + j] - old_centroids[c * d + j]);
            }
            if lid == 0u {
                shared_counts[c] += 1u;
                shared_sq_dist[c] += w * min_sq_dist[r];
                shared_weights[c] += w;
            }
        }
        for (var c = 0u; c < k; c++) {
            let out = (gblock * k + c) * d;
            for (var j = lid; j < d; j += FEATURE_WG_SIZE) {
                partial_sums[out + j] = shared_sums[c * d + j];
            }
            if lid == 0u {
                partial_counts[gblock * k + c] = shared_counts[c];
                partial_sq_dist[2u * (gblock * k + c)] = shared_sq_dist[c];
                partial_sq_dist[2u * (gblock * k + c) + 1u] = shared_weights[c];
            }
        }
        return;
    }
    for (var r = first; r < last; r++) {
        let c = labels[r];
        let w = weight_of(r);
        let xrow = params.x_offset + r * d;
        let out = (gblock * k + c) * d;
        for (var j = lid; j < d; j += FEATURE_WG_SIZE) {
            partial_sums[out + j] += w * (x[xrow + j] - old_centroids[c * d + j]);
        }
        if lid == 0u {
            partial_counts[gblock * k + c] += 1u;
            partial_sq_dist[2u * (gblock * k + c)] += w * min_sq_dist[r];
            partial_sq_dist[2u * (gblock * k + c) + 1u] += w;
        }
    }
}
