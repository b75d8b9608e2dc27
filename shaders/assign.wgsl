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

var<workgroup> tile: array<f32, 512>; // TILE_K * TILE_D

// Squared distances from row `row` to centroids k0 .. k0+TILE_K (zero-padded past K).
// Must be called in uniform control flow: it synchronises the workgroup.
fn tile_sq_distances(k0: u32, row: u32, in_range: bool, lid: u32) -> array<f32, TILE_K> {
    var acc: array<f32, TILE_K>;
    let base = params.x_offset + row * params.d;
    for (var d0 = 0u; d0 < params.d; d0 += TILE_D) {
        workgroupBarrier();
        for (var t = lid; t < TILE_K * TILE_D; t += WG_SIZE) {
            let kk = k0 + t / TILE_D;
            let dd = d0 + t % TILE_D;
            var v = 0.0;
            if kk < params.k && dd < params.d {
                v = centroids[kk * params.d + dd];
            }
            tile[t] = v;
        }
        workgroupBarrier();
        if in_range {
            let dn = min(TILE_D, params.d - d0);
            for (var j = 0u; j < dn; j++) {
                let xv = x[base + d0 + j];
                for (var c = 0u; c < TILE_K; c++) {
                    let diff = xv - tile[c * TILE_D + j];
                    acc[c] = fma(diff, diff, acc[c]);
                }
            }
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
    let in_range = row < params.n_rows;
    var best = 3.4028235e38;
    var best_k = 0u;
    for (var k0 = 0u; k0 < params.k; k0 += TILE_K) {
        let acc = tile_sq_distances(k0, row, in_range, lid);
        let kn = min(TILE_K, params.k - k0);
        for (var c = 0u; c < kn; c++) {
            if acc[c] < best {
                best = acc[c];
                best_k = k0 + c;
            }
        }
    }
    if in_range {
        if labels[row] != best_k {
            atomicAdd(&changed, 1u);
        }
        labels[row] = best_k;
        min_sq_dist[row] = best;
    }
}

// Writes the N x K matrix of distances (squared or not) from each row to each centroid.
@compute @workgroup_size(WG_SIZE)
fn pairwise_distances(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let row = (wid.y * params.grid_x + wid.x) * WG_SIZE + lid;
    let in_range = row < params.n_rows;
    for (var k0 = 0u; k0 < params.k; k0 += TILE_K) {
        let acc = tile_sq_distances(k0, row, in_range, lid);
        if in_range {
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
}
