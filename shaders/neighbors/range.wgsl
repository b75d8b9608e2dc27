// The rows within a radius of every query row, exact (DBSCAN's ε-neighbourhoods): a query row
// q and a data row j are neighbours when d² = Σ_f (x_q,f − x_j,f)², summed as one fma chain in
// feature order (knn_update's chain), is at most ε² (`gamma` of the pair parameters holds
// ε²). Two passes over the same runs of data rows: range_count adds each query's count of
// neighbours in the run to `counts`; the host turns the counts into row offsets (CSR), and
// range_fill appends the run's neighbours at `cursor[q]`, which starts at q's offset. One
// invocation owns a query row and walks the run in data order, so each row's list comes out
// in increasing index, the same whatever the split into runs, and no two invocations write
// the same place (no atomics). The row itself is its own neighbour at distance 0 when the
// queries are the data.
//
// Host wrapper: src/kernels/neighbors/range.rs.
//
// @checked: it writes each row's neighbours at the offset read from `cursor`

#import constants
#import grid
#import pair_params

@group(0) @binding(5) var<storage, read_write> counts: array<u32>;
@group(0) @binding(6) var<storage, read_write> cursor: array<u32>;
@group(0) @binding(7) var<storage, read_write> found_index: array<u32>;
@group(0) @binding(8) var<storage, read_write> found_sq_dist: array<f32>;

// d² between query row r and data row j of the dispatch, in feature order.
fn range_sq_distance(r: u32, j: u32) -> f32 {
    let p = params;
    var d2 = 0.0;
    for (var f = 0u; f < p.d; f++) {
        let diff = queries[p.q_offset + r * p.d + f] - data[p.x_offset + j * p.d + f];
        d2 = fma(diff, diff, d2);
    }
    return d2;
}

@compute @workgroup_size(ROW_WG_SIZE)
fn range_count(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let r = invocation_index(wid, p.grid_x, ROW_WG_SIZE, lid);
    if r >= p.n_queries {
        return;
    }
    var count = 0u;
    for (var j = 0u; j < p.n_data; j++) {
        if range_sq_distance(r, j) <= p.gamma {
            count += 1u;
        }
    }
    counts[p.q_row0 + r] += count;
}

@compute @workgroup_size(ROW_WG_SIZE)
fn range_fill(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let r = invocation_index(wid, p.grid_x, ROW_WG_SIZE, lid);
    if r >= p.n_queries {
        return;
    }
    let q = p.q_row0 + r;
    var at = cursor[q];
    for (var j = 0u; j < p.n_data; j++) {
        let d2 = range_sq_distance(r, j);
        if d2 <= p.gamma {
            found_index[at] = p.x_row0 + j;
            found_sq_dist[at] = d2;
            at += 1u;
        }
    }
    cursor[q] = at;
}
