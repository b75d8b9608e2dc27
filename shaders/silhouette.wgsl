// Sums of Euclidean distances from query rows to a run of data rows: the O(N²) part of the
// silhouette coefficient, never materialising the N x N distances.
//
// Host wrapper: src/kernels/silhouette.rs.
//
// The host sorts the rows by cluster, so the rows of each cluster are contiguous, and cuts
// every cluster into pieces of at most a few thousand rows. For one piece p and a batch of
// query rows q this kernel writes
//     sums[p][q] = Σ_{j ∈ p} ‖x_q − x_j‖
// and the host adds the pieces of each cluster in f64. Like assign.wgsl's distances it is a
// distance tile (shared/distance_tile.wgsl): a workgroup owns TILE queries and walks the
// piece TILE rows at a time, staging TILE_K features of both through workgroup memory
// (coalesced), each invocation holding a 4 x 4 block of squared distances formed as
// Σ (x_q − x_j)² (no ‖x‖² − 2x·y + ‖y‖² cancellation). The TILE_LANES invocations that share
// a query add their parts in a fixed order.

#import grid
#import distance_tile

// Twin: DistanceSumParams in src/kernels/silhouette.rs.
struct DistanceSumParams {
    n_queries: u32,  // query rows in this dispatch
    q_offset: u32,   // index of the first query value inside the bound range of `queries`
    n_data: u32,     // rows of the piece
    x_offset: u32,   // index of the piece's first value inside the bound range of `data`
    d: u32,
    out_offset: u32, // index in `sums` of the first query's sum for this piece
    grid_x: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: DistanceSumParams;
@group(0) @binding(1) var<storage, read> queries: array<f32>;
@group(0) @binding(2) var<storage, read> data: array<f32>;
@group(0) @binding(3) var<storage, read_write> sums: array<f32>;

@compute @workgroup_size(TILE_WG_SIZE)
fn cluster_distance_sums(
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
    var total: array<f32, TILE_BLOCK>;
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
        for (var m = 0u; m < TILE_BLOCK; m++) {
            if c0 + lane_col(lane, m) < p.n_data {
                for (var i = 0u; i < TILE_BLOCK; i++) {
                    total[i] += sqrt(acc[i * TILE_BLOCK + m]);
                }
            }
        }
    }
    store_row_parts(lane, total);
    workgroupBarrier();
    if lid < TILE && first + lid < p.n_queries {
        sums[p.out_offset + first + lid] = add_row_parts(lid, 0.0);
    }
}
