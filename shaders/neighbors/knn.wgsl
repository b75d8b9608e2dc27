// The k nearest neighbours of every query row among the data rows, exact: each query row
// keeps its n_neighbors nearest rows (squared distance, then index, ascending) in
// `best_dist` / `best_index`, merged with one run of data rows per dispatch; the row itself is
// its own nearest neighbour (scikit-learn's include_self=True). knn_update reads the data rows
// from storage (GPUs); knn_update_uniform from a uniform slice with the list in registers
// (CPU-like adapters): the same lists, to the bit (shared/pair_params.wgsl).
//
// Host wrapper: src/kernels/neighbors/knn.rs.
//
// @trusted: list positions stay below k <= KNN_MAX, rows below n_queries and n_data, features
//   below d

#import constants
#import grid
#import pair_params

// Largest n_neighbors (the private lists of knn_update).
const KNN_MAX: u32 = 64u;

@group(0) @binding(5) var<storage, read_write> best_dist: array<f32>;
@group(0) @binding(6) var<storage, read_write> best_index: array<u32>;

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
