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
// tiled GEMM: a workgroup owns 64 queries and walks the piece 64 rows at a time, staging
// TILE_D features of both through workgroup memory (coalesced), each invocation holding a
// 4 x 4 block of squared distances formed as Σ (x_q − x_j)² (no ‖x‖² − 2x·y + ‖y‖²
// cancellation). The 16 invocations that share a query add their parts in a fixed order.

override WG_SIZE: u32 = 256u; // must be 256: 16 x 16 invocations of 4 x 4 distances
const TILE: u32 = 64u;        // queries per workgroup, data rows per step
const TILE_D: u32 = 16u;      // features staged per step

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

var<workgroup> q_tile: array<f32, 1024>; // TILE_D x TILE: q_tile[j * TILE + r]
var<workgroup> x_tile: array<f32, 1024>; // TILE_D x TILE: x_tile[j * TILE + c]
var<workgroup> parts: array<f32, 1024>;  // TILE queries x 16 partial sums

@compute @workgroup_size(WG_SIZE)
fn cluster_distance_sums(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let g = wid.y * p.grid_x + wid.x;
    let first = g * TILE;
    // Workgroups past the end run no steps (uniform barriers) and write nothing.
    var n_steps = 0u;
    if first < p.n_queries {
        n_steps = (p.n_data + TILE - 1u) / TILE;
    }
    let tx = lid % 16u;
    let ty = lid / 16u;
    var total: array<f32, 4>;
    for (var s = 0u; s < n_steps; s++) {
        let c0 = s * TILE;
        var acc: array<f32, 16>;
        for (var j0 = 0u; j0 < p.d; j0 += TILE_D) {
            for (var e = lid; e < TILE_D * TILE; e += WG_SIZE) {
                let r = e / TILE_D;
                let j = e % TILE_D;
                var qv = 0.0;
                if first + r < p.n_queries && j0 + j < p.d {
                    qv = queries[p.q_offset + (first + r) * p.d + j0 + j];
                }
                q_tile[j * TILE + r] = qv;
                var xv = 0.0;
                if c0 + r < p.n_data && j0 + j < p.d {
                    xv = data[p.x_offset + (c0 + r) * p.d + j0 + j];
                }
                x_tile[j * TILE + r] = xv;
            }
            workgroupBarrier();
            for (var j = 0u; j < TILE_D; j++) {
                var qv: array<f32, 4>;
                var xv: array<f32, 4>;
                for (var i = 0u; i < 4u; i++) {
                    qv[i] = q_tile[j * TILE + ty + i * 16u];
                    xv[i] = x_tile[j * TILE + tx + i * 16u];
                }
                for (var i = 0u; i < 4u; i++) {
                    for (var m = 0u; m < 4u; m++) {
                        let diff = qv[i] - xv[m];
                        acc[i * 4u + m] = fma(diff, diff, acc[i * 4u + m]);
                    }
                }
            }
            workgroupBarrier();
        }
        for (var m = 0u; m < 4u; m++) {
            if c0 + tx + m * 16u < p.n_data {
                for (var i = 0u; i < 4u; i++) {
                    total[i] += sqrt(acc[i * 4u + m]);
                }
            }
        }
    }
    for (var i = 0u; i < 4u; i++) {
        parts[(ty + i * 16u) * 16u + tx] = total[i];
    }
    workgroupBarrier();
    if lid < TILE && first + lid < p.n_queries {
        var sum = 0.0;
        for (var c = 0u; c < 16u; c++) {
            sum += parts[lid * 16u + c];
        }
        sums[p.out_offset + first + lid] = sum;
    }
}
