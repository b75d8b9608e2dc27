// One row per invocation with the centroids from storage (CPU-like adapters). Host:
// src/kernels/assign/registers.rs.
//
// @trusted: rows below n_rows, centroid indices clamped to k − 1, features below d

#import constants
#import grid
#import assign/params

// the last centroid and is ignored by the caller).
fn register_sq_distances(k0: u32, row: u32) -> array<f32, SMALL_K> {
    var acc: array<f32, SMALL_K>;
    var cbase: array<u32, SMALL_K>;
    for (var c = 0u; c < SMALL_K; c++) {
        cbase[c] = min(k0 + c, params.k - 1u) * params.d;
    }
    let base = params.x_offset + row * params.d;
    for (var j = 0u; j < params.d; j++) {
        let xv = x[base + j];
        for (var c = 0u; c < SMALL_K; c++) {
            let diff = xv - centroids[cbase[c] + j];
            acc[c] = fma(diff, diff, acc[c]);
        }
    }
    return acc;
}

// assign_nearest_centroid without workgroup memory or barriers: one invocation per row, the
// centroids read straight from the storage buffer (the same address across the workgroup, so
// a broadcast), SMALL_K of them at a time into register accumulators. The distances and the
// tie rule are those of the tiled kernel, bit for bit, so the host may pick either (it times
// both on first use per adapter and shape; for K <= SMALL_K it always takes this one).
@compute @workgroup_size(ROW_WG_SIZE)
fn assign_nearest_centroid_registers(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let row = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if row >= params.n_rows {
        return;
    }
    var best = F32_MAX;
    var best_k = 0u;
    for (var k0 = 0u; k0 < params.k; k0 += SMALL_K) {
        let acc = register_sq_distances(k0, row);
        // Centroids are visited in increasing order, so `<` keeps the lowest index on ties.
        for (var c = 0u; c < min(SMALL_K, params.k - k0); c++) {
            if acc[c] < best {
                best = acc[c];
                best_k = k0 + c;
            }
        }
    }
    if labels[row] != best_k {
        atomicAdd(&changed, 1u);
    }
    labels[row] = best_k;
    min_sq_dist[row] = best;
}
