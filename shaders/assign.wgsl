// Nearest-centroid assignment and point-to-centroid distances.
//
// Host wrapper: src/kernels/assign.rs.
//
// Distances to all centroids are a GEMM-shaped computation (N x D against K x D), so the
// kernel is tiled like one: a workgroup owns a tile of up to 64 rows and walks the centroids
// in tiles of 64; both tiles are staged through workgroup memory TILE_D features at a time
// with coalesced loads, and each invocation accumulates a 4 x 4 register block (4 rows x 4
// centroids), so every value read from workgroup memory feeds 4 FMAs. The workgroup is a
// 16 x (WG_SIZE / 16) grid of invocations: 16 along the centroids, WG_SIZE / 16 (at most 16)
// along the rows.
//
// For K <= SMALL_K a second entry point, assign_nearest_centroid_small_k, skips the tiling:
// one invocation per row, the few centroids read straight from the storage buffer (the same
// address across the workgroup, so a broadcast) into SMALL_K register accumulators; with so
// little arithmetic per row the data read dominates and barriers would only add latency.
//
// Distances are accumulated as Σ (x_j − c_j)² rather than ‖x‖² − 2x·c + ‖c‖²: no cancellation
// when the data sit far from the origin, so labels and distances match the f64 reference up
// to rounding. Ties go to the lowest centroid index.

override WG_SIZE: u32 = 256u; // a multiple of 16, at most 256
const TILE_D: u32 = 16u;      // features per staging step
const TILE_C: u32 = 64u;      // centroids per tile (16 invocations x 4)
const MAX_ROWS: u32 = 64u;    // rows per tile at WG_SIZE = 256 (16 invocations x 4)
const SMALL_K: u32 = 16u;     // centroids handled by assign_nearest_centroid_small_k
const F32_MAX: f32 = 3.4028235e38;

// Twin: AssignParams in src/kernels/assign.rs.
struct AssignParams {
    n_rows: u32,    // rows in this dispatch
    x_offset: u32,  // index of the dispatch's first value inside the bound range of x
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

// Feature-major tiles: x_tile[j * MAX_ROWS + r], c_tile[j * TILE_C + c]. Reused for the final
// cross-invocation argmin.
var<workgroup> x_tile: array<f32, 1024>; // TILE_D * MAX_ROWS
var<workgroup> c_tile: array<f32, 1024>; // TILE_D * TILE_C

struct Tile {
    first_row: u32,   // first row of the workgroup's tile
    tile_rows: u32,   // rows per tile: WG_SIZE / 4
    tx: u32,          // invocation's column among the 16 along the centroids
    ty: u32,          // invocation's row among the WG_SIZE / 16 along the rows
}

fn tile_of(lid: u32, wid: vec3<u32>) -> Tile {
    let tile_rows = WG_SIZE / 4u;
    let group = wid.y * params.grid_x + wid.x;
    return Tile(group * tile_rows, tile_rows, lid % 16u, lid / 16u);
}

// Squared distances from the invocation's 4 rows (ty + i * WG_SIZE / 16) to its 4
// centroids (k0 + tx + 16 m) as acc[i * 4 + m]. Zero padding past N, D and K adds nothing.
// Uniform control flow only: it synchronises the workgroup.
fn block_sq_distances(t: Tile, k0: u32, lid: u32) -> array<f32, 16> {
    var acc: array<f32, 16>;
    let row_step = WG_SIZE / 16u;
    for (var d0 = 0u; d0 < params.d; d0 += TILE_D) {
        workgroupBarrier();
        // Coalesced staging: consecutive invocations read consecutive features of a row.
        for (var e = lid; e < TILE_D * MAX_ROWS; e += WG_SIZE) {
            let r = e / TILE_D;
            let j = e % TILE_D;
            let row = t.first_row + r;
            var v = 0.0;
            if r < t.tile_rows && row < params.n_rows && d0 + j < params.d {
                v = x[params.x_offset + row * params.d + d0 + j];
            }
            x_tile[j * MAX_ROWS + r] = v;
        }
        for (var e = lid; e < TILE_D * TILE_C; e += WG_SIZE) {
            let c = e / TILE_D;
            let j = e % TILE_D;
            var v = 0.0;
            if k0 + c < params.k && d0 + j < params.d {
                v = centroids[(k0 + c) * params.d + d0 + j];
            }
            c_tile[j * TILE_C + c] = v;
        }
        workgroupBarrier();
        for (var j = 0u; j < TILE_D; j++) {
            var xv: array<f32, 4>;
            var cv: array<f32, 4>;
            for (var i = 0u; i < 4u; i++) {
                xv[i] = x_tile[j * MAX_ROWS + t.ty + i * row_step];
                cv[i] = c_tile[j * TILE_C + t.tx + i * 16u];
            }
            for (var i = 0u; i < 4u; i++) {
                for (var m = 0u; m < 4u; m++) {
                    let diff = xv[i] - cv[m];
                    acc[i * 4u + m] = fma(diff, diff, acc[i * 4u + m]);
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
    let t = tile_of(lid, wid);
    let row_step = WG_SIZE / 16u;
    var best: array<f32, 4>;
    var best_k: array<u32, 4>;
    for (var i = 0u; i < 4u; i++) {
        best[i] = F32_MAX;
        best_k[i] = 0xffffffffu;
    }
    for (var k0 = 0u; k0 < params.k; k0 += TILE_C) {
        let acc = block_sq_distances(t, k0, lid);
        // Centroids are visited in increasing order, so `<` keeps the lowest index on ties.
        for (var m = 0u; m < 4u; m++) {
            let c = k0 + t.tx + m * 16u;
            if c < params.k {
                for (var i = 0u; i < 4u; i++) {
                    if acc[i * 4u + m] < best[i] {
                        best[i] = acc[i * 4u + m];
                        best_k[i] = c;
                    }
                }
            }
        }
    }
    // Argmin across the 16 invocations sharing each row, through workgroup memory.
    workgroupBarrier();
    for (var i = 0u; i < 4u; i++) {
        let r = t.ty + i * row_step;
        x_tile[r * 16u + t.tx] = best[i];
        c_tile[r * 16u + t.tx] = bitcast<f32>(best_k[i]);
    }
    workgroupBarrier();
    if lid < t.tile_rows {
        let row = t.first_row + lid;
        if row < params.n_rows {
            var d_min = F32_MAX;
            var k_min = 0xffffffffu;
            for (var c = 0u; c < 16u; c++) {
                let dv = x_tile[lid * 16u + c];
                let kv = bitcast<u32>(c_tile[lid * 16u + c]);
                if dv < d_min || (dv == d_min && kv < k_min) {
                    d_min = dv;
                    k_min = kv;
                }
            }
            if labels[row] != k_min {
                atomicAdd(&changed, 1u);
            }
            labels[row] = k_min;
            min_sq_dist[row] = d_min;
        }
    }
}

// Squared distances from row `row` to centroids k0 .. k0+SMALL_K (the tail past K repeats
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

// assign_nearest_centroid for K <= SMALL_K, one invocation per row, no workgroup memory.
@compute @workgroup_size(WG_SIZE)
fn assign_nearest_centroid_small_k(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let row = (wid.y * params.grid_x + wid.x) * WG_SIZE + lid;
    if row >= params.n_rows {
        return;
    }
    let acc = register_sq_distances(0u, row);
    var best = F32_MAX;
    var best_k = 0u;
    for (var c = 0u; c < min(SMALL_K, params.k); c++) {
        if acc[c] < best {
            best = acc[c];
            best_k = c;
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
    let t = tile_of(lid, wid);
    let row_step = WG_SIZE / 16u;
    for (var k0 = 0u; k0 < params.k; k0 += TILE_C) {
        let acc = block_sq_distances(t, k0, lid);
        for (var i = 0u; i < 4u; i++) {
            let row = t.first_row + t.ty + i * row_step;
            if row < params.n_rows {
                for (var m = 0u; m < 4u; m++) {
                    let c = k0 + t.tx + m * 16u;
                    if c < params.k {
                        var v = acc[i * 4u + m];
                        if params.sqrt_output != 0u {
                            v = sqrt(v);
                        }
                        distances[row * params.k + c] = v;
                    }
                }
            }
        }
    }
}
