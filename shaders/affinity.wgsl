// The affinity graphs of spectral clustering, applied without forming an N x N matrix.
//
// Host wrapper: src/kernels/affinity.rs.
//
// rbf_times_block: out[q][c] (+)= Σ_{j ≠ q} exp(−γ‖x_q − x_j‖²) · v[j][c] for a run of query
// rows q and a run of data rows j, columns col0 .. col0 + n_cols of the N x m block v. It is a
// distance tile (shared/distance_tile.wgsl), as silhouette.wgsl: a workgroup owns TILE queries
// and walks the data TILE rows at a time, so memory is O(N·(D + m)) and never N². The
// TILE_LANES invocations sharing a query add their parts in lane order, column by column.
// The diagonal (q = j) is left out: the normalised Laplacian ignores self-loops.
//
// knn_update: each query row keeps its n_neighbors nearest rows (squared distance, then
// index, ascending) in `best_dist` / `best_index`, merged with one run of data rows per
// dispatch; the row itself is its own nearest neighbour (scikit-learn's include_self=True).
//
// csr_times_block: out[i][c] = Σ_e values[e] · v[cols[e]][c] over the entries e of row i of
// a sparse matrix in CSR form (the symmetrised k-nearest-neighbour graph).

#import constants
#import grid
#import distance_tile

// Largest n_neighbors (the private lists of knn_update) and block columns per dispatch.
const KNN_MAX: u32 = 64u;
const BLOCK_COLS: u32 = 8u;

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
    _pad0: u32,
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

@compute @workgroup_size(TILE_WG_SIZE)
fn rbf_times_block(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let first = workgroup_index(wid, p.grid_x) * TILE;
    // Workgroups past the end run no steps (uniform barriers) and write nothing.
    var n_steps = 0u;
    if first < p.n_queries {
        n_steps = (p.n_data + TILE - 1u) / TILE;
    }
    let lane = tile_lane(lid);
    var total: array<f32, TILE_BLOCK * BLOCK_COLS>; // [i * BLOCK_COLS + c]
    for (var s = 0u; s < n_steps; s++) {
        let c0 = s * TILE;
        var acc: array<f32, TILE_REGS>;
        for (var j0 = 0u; j0 < p.d; j0 += TILE_K) {
            for (var e = lid; e < TILE_STEP; e += TILE_WG_SIZE) {
                let slot = item_major_slot(e);
                let r = slot.item;
                let j = slot.k;
                var qv = 0.0;
                if first + r < p.n_queries && j0 + j < p.d {
                    qv = queries[p.q_offset + (first + r) * p.d + j0 + j];
                }
                tile_a[slot.at] = qv;
                var xv = 0.0;
                if c0 + r < p.n_data && j0 + j < p.d {
                    xv = data[p.x_offset + (c0 + r) * p.d + j0 + j];
                }
                tile_b[slot.at] = xv;
            }
            workgroupBarrier();
            accumulate_sq_distances(lane, &acc);
            workgroupBarrier();
        }
        for (var mm = 0u; mm < TILE_BLOCK; mm++) {
            let j = c0 + lane_col(lane, mm);
            if j < p.n_data {
                let xj = p.x_row0 + j;
                for (var i = 0u; i < TILE_BLOCK; i++) {
                    let q = p.q_row0 + first + lane_row(lane, i);
                    if q != xj {
                        let w = exp(-p.gamma * acc[i * TILE_BLOCK + mm]);
                        for (var c = 0u; c < p.n_cols; c++) {
                            total[i * BLOCK_COLS + c] = fma(
                                w,
                                block[xj * p.m + p.col0 + c],
                                total[i * BLOCK_COLS + c],
                            );
                        }
                    }
                }
            }
        }
    }
    for (var c = 0u; c < BLOCK_COLS; c++) {
        var parts: array<f32, TILE_BLOCK>;
        for (var i = 0u; i < TILE_BLOCK; i++) {
            parts[i] = total[i * BLOCK_COLS + c];
        }
        store_row_parts(lane, parts);
        workgroupBarrier();
        if c < p.n_cols && lid < TILE && first + lid < p.n_queries {
            let at = (p.q_row0 + first + lid) * p.m + p.col0 + c;
            var start = 0.0;
            if p.accumulate == 1u {
                start = out[at];
            }
            out[at] = add_row_parts(lid, start);
        }
        workgroupBarrier();
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
    for (var c = 0u; c < p.m; c++) {
        var sum = 0.0;
        for (var e = row_starts[i]; e < row_starts[i + 1u]; e++) {
            sum = fma(values[e], block[cols[e] * p.m + c], sum);
        }
        out[i * p.m + c] = sum;
    }
}
