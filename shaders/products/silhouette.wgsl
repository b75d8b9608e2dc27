// Sums of Euclidean distances from query rows to a run of data rows: the O(N²) part of the
// silhouette coefficient, never materialising the N x N distances.
//
// Host wrapper: src/kernels/products/silhouette.rs.
//
// The host sorts the rows by cluster, so the rows of each cluster are contiguous, and cuts
// every cluster into pieces of at most a few thousand rows. For one piece p and a batch of
// query rows q this kernel writes
//     sums[p][q] = Σ_{j ∈ p} ‖x_q − x_j‖
// and the host adds the pieces of each cluster in f64. The pairs are a product on the tile
// core (shared/gemm.wgsl) with squared differences in place of products (block_outer_sq): a
// workgroup owns gemm_tile_m() queries and walks the piece gemm_tile_n() rows at a time,
// staging GEMM_DEPTH features of both item-major with vec4 loads, a stage ahead in registers;
// each invocation holds a GEMM_RM x GEMM_RN block of squared distances formed as
// Σ (x_q − x_j)². The difference form costs a subtraction beside each FMA, but it has no
// ‖x‖² − 2x·y + ‖y‖² cancellation: the distances inside a cluster, the small ones, keep their
// relative accuracy under the square root. The GEMM_LANES_N invocations that share a query
// add their parts in lane order (a fixed order: the same bits every run).
//
// @trusted: query and data rows below the counts the host gives for the pieces it sorted, guarded
//   before every load

#import grid
#import gemm
#import pair_rows

// Twin: DistanceSumParams in src/kernels/products/silhouette.rs.
struct DistanceSumParams {
    n_queries: u32,  // query rows in this dispatch
    q_offset: u32,   // index of the first query value inside the bound range of `queries`
    n_data: u32,     // rows of the piece
    x_offset: u32,   // index of the piece's first value inside the bound range of `data`
    d: u32,
    out_offset: u32, // index in `sums` of the first query's sum for this piece
    grid_x: u32,
    q_vec4: u32,     // 1: query rows start on vec4 boundaries (q_offset, d multiples of 4)
    x_vec4: u32,     // same for the data rows
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: DistanceSumParams;
@group(0) @binding(3) var<storage, read_write> sums: array<f32>;

// Features j .. j + 3 of query r and of data row r (zeros past D).
fn query_quad(r: u32, j: u32) -> vec4<f32> {
    return pair_query_quad(params.q_offset + r * params.d, j, params.d, params.q_vec4 != 0u);
}

fn data_quad(r: u32, j: u32) -> vec4<f32> {
    return pair_data_quad(params.x_offset + r * params.d, j, params.d, params.x_vec4 != 0u);
}

@compute @workgroup_size(GEMM_LANES_M * GEMM_LANES_N)
fn cluster_distance_sums(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let tile_m = gemm_tile_m();
    let tile_n = gemm_tile_n();
    let wg = gemm_wg_size();
    let first = workgroup_index(wid, p.grid_x) * tile_m;
    // Workgroups past the end run no tiles (uniform barriers) and write nothing.
    var n_tiles = 0u;
    if first < p.n_queries {
        n_tiles = (p.n_data + tile_n - 1u) / tile_n;
    }
    let lane = gemm_lane(lid);
    let n_stages = (p.d + GEMM_DEPTH - 1u) / GEMM_DEPTH;
    let loads_a = gemm_loads(tile_m);
    let loads_b = gemm_loads(tile_n);
    // Register rows 0..3 and 4..7 (vec4s, not an array: see block_quad in shared/gemm.wgsl).
    var total_lo = vec4<f32>();
    var total_hi = vec4<f32>();
    for (var t = 0u; t < n_tiles; t++) {
        let c0 = t * tile_n;
        var acc: Block;
        var pa: array<vec4<f32>, GEMM_MAX_LOADS>;
        var pb: array<vec4<f32>, GEMM_MAX_LOADS>;
        for (var s = 0u; s <= n_stages; s++) {
            if s > 0u {
                gemm_put_stage(lid, pa, GEMM_ITEM_MAJOR, pb, GEMM_ITEM_MAJOR);
            }
            if s < n_stages {
                // Prefetch stage s while stage s − 1 is multiplied.
                let j0 = s * GEMM_DEPTH;
                // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
                // prefetch registers are indexed by constants and stay registers.
                for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                    if gemm_has_load(e, lid, loads_a) {
                        let slot = gemm_item_major_slot(e * wg + lid);
                        var v = vec4<f32>();
                        if first + slot.item < p.n_queries && j0 + slot.depth < p.d {
                            v = query_quad(first + slot.item, j0 + slot.depth);
                        }
                        pa[e] = v;
                    }
                }
                // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
                // prefetch registers are indexed by constants and stay registers.
                for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                    if gemm_has_load(e, lid, loads_b) {
                        let slot = gemm_item_major_slot(e * wg + lid);
                        var v = vec4<f32>();
                        if c0 + slot.item < p.n_data && j0 + slot.depth < p.d {
                            v = data_quad(c0 + slot.item, j0 + slot.depth);
                        }
                        pb[e] = v;
                    }
                }
            }
            if s > 0u {
                gemm_multiply_stage_sq(lane, &acc);
            }
        }
        for (var m = 0u; m < GEMM_RN; m++) {
            if c0 + gemm_col(lane, m) < p.n_data {
                for (var i = 0u; i < GEMM_RM; i++) {
                    let v = sqrt(block_at(acc, i, m));
                    if i < 4u {
                        total_lo[i] += v;
                    } else {
                        total_hi[i - 4u] += v;
                    }
                }
            }
        }
    }
    workgroupBarrier();
    gemm_store_row_parts(lane, total_lo, total_hi);
    workgroupBarrier();
    if lid < tile_m && first + lid < p.n_queries {
        sums[p.out_offset + first + lid] = gemm_add_row_parts(lid, 0.0);
    }
}
