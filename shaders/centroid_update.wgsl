// Per-cluster statistics for the Lloyd update, without float atomics.
//
// Host wrapper: src/kernels/centroid_update.rs.
//
// The rows are cut into blocks of `block_rows`; one workgroup owns one block and writes that
// block's partial statistics: for each cluster c and feature j the sum of (x_j − old_c_j),
// the member count and the sum of squared distances. Invocations own features (stride
// WG_SIZE), and walk the block's rows in order, so every partial has exactly one writer and a
// fixed summation order: results are bitwise reproducible. Summing deviations from the old
// centroid instead of raw values keeps the f32 partials small when the data sit far from the
// origin. sum_partial_columns (reduce.wgsl) then folds the blocks together.
//
// The partial buffers must be zeroed before the dispatch (the host clears them).

override WG_SIZE: u32 = 64u;

// Twin: AccumulateParams in src/kernels/centroid_update.rs.
struct AccumulateParams {
    n_rows: u32,       // rows in this chunk
    x_offset: u32,     // index of the chunk's first value inside the bound range of x
    d: u32,
    k: u32,
    block_rows: u32,   // rows per block (bounds every f32 partial sum)
    block_offset: u32, // global index of this chunk's first block
    grid_x: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: AccumulateParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> labels: array<u32>;
@group(0) @binding(3) var<storage, read> min_sq_dist: array<f32>;
@group(0) @binding(4) var<storage, read> old_centroids: array<f32>;
// [block][cluster][feature]
@group(0) @binding(5) var<storage, read_write> partial_sums: array<f32>;
// [block][cluster]
@group(0) @binding(6) var<storage, read_write> partial_counts: array<u32>;
// [block][cluster]
@group(0) @binding(7) var<storage, read_write> partial_sq_dist: array<f32>;

@compute @workgroup_size(WG_SIZE)
fn accumulate_cluster_partials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let block = wid.y * params.grid_x + wid.x;
    let first = block * params.block_rows;
    if first >= params.n_rows {
        return;
    }
    let last = min(first + params.block_rows, params.n_rows);
    let gblock = params.block_offset + block;
    let d = params.d;
    for (var r = first; r < last; r++) {
        let c = labels[r];
        let xrow = params.x_offset + r * d;
        let out = (gblock * params.k + c) * d;
        for (var j = lid; j < d; j += WG_SIZE) {
            partial_sums[out + j] += x[xrow + j] - old_centroids[c * d + j];
        }
        if lid == 0u {
            partial_counts[gblock * params.k + c] += 1u;
            partial_sq_dist[gblock * params.k + c] += min_sq_dist[r];
        }
    }
}
