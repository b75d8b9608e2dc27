// Nearest-centroid assignment and point-to-centroid distances.
//
// Host wrapper: src/kernels/assign.rs.
//
// Each invocation owns one row x. Centroids are staged through workgroup memory in tiles of
// TILE_K centroids x TILE_D features, so any K and D work with a fixed 2 KiB of shared memory,
// and each invocation keeps TILE_K running sums in registers. Distances are accumulated as
// Σ (x_j - c_j)² directly rather than ‖x‖² − 2x·c + ‖c‖²: the same work per element in a
// scalar shader, and no cancellation when the data sit far from the origin.

override WG_SIZE: u32 = 64u;
const TILE_K: u32 = 16u;
const TILE_D: u32 = 32u;
const NO_LABEL: u32 = 0xffffffffu;

// Twin: AssignParams in src/kernels/assign.rs.
struct AssignParams {
    n_rows: u32,    // rows in this chunk
    x_offset: u32,  // index of the chunk's first value inside the bound range of x
    d: u32,
    k: u32,
    grid_x: u32,    // workgroups along x (2-D grids when one dimension is not enough)
    sqrt_output: u32, // pairwise_distances: 1 = Euclidean, 0 = squared
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: AssignParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> centroids: array<f32>;
@group(0) @binding(3) var<storage, read_write> labels: array<u32>;
@group(0) @binding(4) var<storage, read_write> min_sq_dist: array<f32>;
@group(0) @binding(5) var<storage, read_write> changed: atomic<u32>;
@group(0) @binding(6) var<storage, read_write> distances: array<f32>;

// Squared distances from row `row` to centroids k0 .. k0+TILE_K (the tail past K repeats
// the last centroid and is ignored by the callers). Each x value is loaded once and used for
// TILE_K centroids; centroid loads are the same address across the workgroup (broadcast).
fn tile_sq_distances(k0: u32, row: u32) -> array<f32, TILE_K> {
    var acc: array<f32, TILE_K>;
    var cbase: array<u32, TILE_K>;
    for (var c = 0u; c < TILE_K; c++) {
        cbase[c] = min(k0 + c, params.k - 1u) * params.d;
    }
    let base = params.x_offset + row * params.d;
    for (var j = 0u; j < params.d; j++) {
        let xv = x[base + j];
        for (var c = 0u; c < TILE_K; c++) {
            let diff = xv - centroids[cbase[c] + j];
            acc[c] = fma(diff, diff, acc[c]);
        }
    }
    return acc;
}

// Writes the nearest centroid (ties: lowest index) and its squared distance for every row,
// and counts rows whose label differs from the one already stored.
@compute @workgroup_size(WG_SIZE)
fn assign_nearest_centroid(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let row = (wid.y * params.grid_x + wid.x) * WG_SIZE + lid;
    if row >= params.n_rows {
        return;
    }
    var best = 3.4028235e38;
    var best_k = 0u;
    for (var k0 = 0u; k0 < params.k; k0 += TILE_K) {
        let acc = tile_sq_distances(k0, row);
        let kn = min(TILE_K, params.k - k0);
        for (var c = 0u; c < kn; c++) {
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

// Writes the N x K matrix of distances (squared or not) from each row to each centroid.
@compute @workgroup_size(WG_SIZE)
fn pairwise_distances(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let row = (wid.y * params.grid_x + wid.x) * WG_SIZE + lid;
    if row >= params.n_rows {
        return;
    }
    for (var k0 = 0u; k0 < params.k; k0 += TILE_K) {
        let acc = tile_sq_distances(k0, row);
        let kn = min(TILE_K, params.k - k0);
        for (var c = 0u; c < kn; c++) {
            var v = acc[c];
            if params.sqrt_output != 0u {
                v = sqrt(v);
            }
            distances[row * params.k + k0 + c] = v;
        }
    }
}
