// Nearest-centroid assignment and point-to-centroid distances.
//
// Host wrapper: src/kernels/assign.rs.
//
// Distances to all centroids are a GEMM-shaped computation (N x D against K x D), so the
// kernel is tiled like one (shared/tile.wgsl, shared/distance_tile.wgsl): a workgroup owns a
// tile of TILE rows and walks the centroids in tiles of TILE; both are staged through
// workgroup memory TILE_K features at a time with coalesced loads, and each invocation
// accumulates a 4 x 4 register block of squared distances (4 rows x 4 centroids).
//
// A second entry point, assign_nearest_centroid_registers, skips the tiling: one invocation
// per row, SMALL_K centroids at a time read straight from the storage buffer (a broadcast)
// into register accumulators. With few centroids the data read dominates and barriers only
// add latency; on adapters where barriers and workgroup memory are costly (lavapipe: lanes
// are SIMD, a barrier switches coroutines) it can win at any K. The host times both.
//
// Distances are accumulated as Σ (x_j − c_j)² rather than ‖x‖² − 2x·c + ‖c‖²: no cancellation
// when the data sit far from the origin, so labels and distances match the f64 reference up
// to rounding. Ties go to the lowest centroid index.

#import constants
#import grid
#import distance_tile

const SMALL_K: u32 = 16u; // register accumulators of assign_nearest_centroid_registers

// Twin: AssignParams in src/kernels/assign.rs.
struct AssignParams {
    n_rows: u32,    // rows in this dispatch
    x_offset: u32,  // index of the dispatch's first value inside the bound range of x
    d: u32,
    k: u32,
    grid_x: u32,    // workgroups along x (2-D grids when one dimension is not enough)
    sqrt_output: u32, // pairwise_distances: 1 = Euclidean, 0 = squared
    k_first: u32,     // assign_nearest_centroid_uniform: global index of the slice's first centroid
    slice_flags: u32, // assign_nearest_centroid_uniform: FIRST_SLICE | LAST_SLICE
}

const FIRST_SLICE: u32 = 1u;
const LAST_SLICE: u32 = 2u;
// vec4s of one centroid slice: 64 KiB, the smallest max_uniform_buffer_binding_size WebGPU
// allows, so the slice binds on every adapter.
const SLICE_VEC4S: u32 = 4096u;

@group(0) @binding(0) var<uniform> params: AssignParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> centroids: array<f32>;
@group(0) @binding(3) var<storage, read_write> labels: array<u32>;
@group(0) @binding(4) var<storage, read_write> min_sq_dist: array<f32>;
@group(0) @binding(5) var<storage, read_write> changed: atomic<u32>;
@group(0) @binding(6) var<storage, read_write> distances: array<f32>;
// Centroids k_first .. k_first + k, each padded to ceil(D / 4) vec4s (zeros past D).
@group(0) @binding(7) var<uniform> centroid_slice: array<vec4<f32>, SLICE_VEC4S>;
// Best centroid so far, between the slices of one assignment.
@group(0) @binding(8) var<storage, read_write> running_labels: array<u32>;

// Squared distances from the invocation's 4 rows (first + lane_row(i)) to its 4 centroids
// (k0 + lane_col(m)) as acc[i * 4 + m]. Zero padding past N, D and K adds nothing. Uniform
// control flow only: it synchronises the workgroup.
fn block_sq_distances(first: u32, k0: u32, lid: u32, lane: Lane) -> array<f32, TILE_REGS> {
    var acc: array<f32, TILE_REGS>;
    for (var d0 = 0u; d0 < params.d; d0 += TILE_K) {
        workgroupBarrier();
        for (var e = lid; e < TILE_STEP; e += TILE_WG_SIZE) {
            let s = item_major_slot(e);
            let row = first + s.item;
            var v = 0.0;
            if row < params.n_rows && d0 + s.k < params.d {
                v = x[params.x_offset + row * params.d + d0 + s.k];
            }
            tile_a[s.at] = v;
        }
        for (var e = lid; e < TILE_STEP; e += TILE_WG_SIZE) {
            let s = item_major_slot(e);
            var v = 0.0;
            if k0 + s.item < params.k && d0 + s.k < params.d {
                v = centroids[(k0 + s.item) * params.d + d0 + s.k];
            }
            tile_b[s.at] = v;
        }
        workgroupBarrier();
        accumulate_sq_distances(lane, &acc);
    }
    return acc;
}

// Writes the nearest centroid (ties: lowest index) and its squared distance for every row,
// and counts rows whose label differs from the one already stored.
@compute @workgroup_size(TILE_WG_SIZE)
fn assign_nearest_centroid(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let first = workgroup_index(wid, params.grid_x) * TILE;
    let lane = tile_lane(lid);
    var best: array<f32, TILE_BLOCK>;
    var best_k: array<u32, TILE_BLOCK>;
    for (var i = 0u; i < TILE_BLOCK; i++) {
        best[i] = F32_MAX;
        best_k[i] = 0xffffffffu;
    }
    for (var k0 = 0u; k0 < params.k; k0 += TILE) {
        let acc = block_sq_distances(first, k0, lid, lane);
        // Centroids are visited in increasing order, so `<` keeps the lowest index on ties.
        for (var m = 0u; m < TILE_BLOCK; m++) {
            let c = k0 + lane_col(lane, m);
            if c < params.k {
                for (var i = 0u; i < TILE_BLOCK; i++) {
                    if acc[i * TILE_BLOCK + m] < best[i] {
                        best[i] = acc[i * TILE_BLOCK + m];
                        best_k[i] = c;
                    }
                }
            }
        }
    }
    // Argmin across the TILE_LANES invocations sharing each row, through the (now free)
    // staging tiles: distances in tile_a, centroid indices (as bits) in tile_b.
    workgroupBarrier();
    for (var i = 0u; i < TILE_BLOCK; i++) {
        let r = lane_row(lane, i);
        tile_a[r * TILE_LANES + lane.tx] = best[i];
        tile_b[r * TILE_LANES + lane.tx] = bitcast<f32>(best_k[i]);
    }
    workgroupBarrier();
    if lid < TILE {
        let row = first + lid;
        if row < params.n_rows {
            var d_min = F32_MAX;
            var k_min = 0xffffffffu;
            for (var c = 0u; c < TILE_LANES; c++) {
                let dv = tile_a[lid * TILE_LANES + c];
                let kv = bitcast<u32>(tile_b[lid * TILE_LANES + c]);
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

// assign_nearest_centroid with the centroids in a uniform buffer, one slice of at most
// SLICE_VEC4S vec4s per dispatch: one invocation per row, SMALL_K centroids at a time into
// register accumulators, as assign_nearest_centroid_registers. Some adapters load a uniform
// address from a uniform buffer once for all lanes but gather it lane by lane from a storage
// buffer (lavapipe: measured 14x apart), so this variant trades the host's copy of the
// centroids into slices for much cheaper loads. Features are still summed one at a time, in
// order, so the distances and the result are those of the other variants, bit for bit; the
// running best carries across slices in increasing centroid order (`<` keeps the lowest
// index on ties).
@compute @workgroup_size(ROW_WG_SIZE)
fn assign_nearest_centroid_uniform(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let row = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if row >= params.n_rows {
        return;
    }
    let d4 = (params.d + 3u) / 4u;
    let full = params.d / 4u;
    let base = params.x_offset + row * params.d;
    var best = F32_MAX;
    var best_k = 0u;
    if (params.slice_flags & FIRST_SLICE) == 0u {
        best = min_sq_dist[row];
        best_k = running_labels[row];
    }
    for (var k0 = 0u; k0 < params.k; k0 += SMALL_K) {
        var acc: array<f32, SMALL_K>;
        var cbase: array<u32, SMALL_K>;
        for (var c = 0u; c < SMALL_K; c++) {
            cbase[c] = min(k0 + c, params.k - 1u) * d4;
        }
        for (var j = 0u; j < full; j++) {
            let b = base + 4u * j;
            let xv = vec4<f32>(x[b], x[b + 1u], x[b + 2u], x[b + 3u]);
            for (var c = 0u; c < SMALL_K; c++) {
                let diff = xv - centroid_slice[cbase[c] + j];
                var a = acc[c];
                a = fma(diff.x, diff.x, a);
                a = fma(diff.y, diff.y, a);
                a = fma(diff.z, diff.z, a);
                a = fma(diff.w, diff.w, a);
                acc[c] = a;
            }
        }
        for (var t = 4u * full; t < params.d; t++) {
            let xv = x[base + t];
            for (var c = 0u; c < SMALL_K; c++) {
                let diff = xv - centroid_slice[cbase[c] + full][t - 4u * full];
                acc[c] = fma(diff, diff, acc[c]);
            }
        }
        for (var c = 0u; c < min(SMALL_K, params.k - k0); c++) {
            if acc[c] < best {
                best = acc[c];
                best_k = params.k_first + k0 + c;
            }
        }
    }
    if (params.slice_flags & LAST_SLICE) == 0u {
        min_sq_dist[row] = best;
        running_labels[row] = best_k;
        return;
    }
    if labels[row] != best_k {
        atomicAdd(&changed, 1u);
    }
    labels[row] = best_k;
    min_sq_dist[row] = best;
}

// Writes the N x K matrix of distances (squared or not) from each row to each centroid.
@compute @workgroup_size(TILE_WG_SIZE)
fn pairwise_distances(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let first = workgroup_index(wid, params.grid_x) * TILE;
    let lane = tile_lane(lid);
    for (var k0 = 0u; k0 < params.k; k0 += TILE) {
        let acc = block_sq_distances(first, k0, lid, lane);
        for (var i = 0u; i < TILE_BLOCK; i++) {
            let row = first + lane_row(lane, i);
            if row < params.n_rows {
                for (var m = 0u; m < TILE_BLOCK; m++) {
                    let c = k0 + lane_col(lane, m);
                    if c < params.k {
                        var v = acc[i * TILE_BLOCK + m];
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
