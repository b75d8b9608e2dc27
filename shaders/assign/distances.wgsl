// Point-to-centroid distances, the N x K matrix (K-Means `transform`). Host:
// src/kernels/assign/distances.rs.
//
// @trusted: rows below n_rows, centroids below k and features below d are guarded before every
//   load and store

#import grid
#import gemm
#import assign/params

// tile core with the squared difference in place of the product (exact for near points).
@compute @workgroup_size(GEMM_LANES_M * GEMM_LANES_N)
fn pairwise_distances(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let tile_m = gemm_tile_m();
    let tile_n = gemm_tile_n();
    let wg = gemm_wg_size();
    let first = workgroup_index(wid, params.grid_x) * tile_m;
    let lane = gemm_lane(lid);
    let n_stages = (params.d + GEMM_DEPTH - 1u) / GEMM_DEPTH;
    for (var k0 = 0u; k0 < params.k; k0 += tile_n) {
        var acc: Block;
        for (var s = 0u; s < n_stages; s++) {
            let d0 = s * GEMM_DEPTH;
            workgroupBarrier();
            for (var e = lid; e < gemm_loads(tile_m); e += wg) {
                let slot = gemm_item_major_slot(e);
                var v = vec4<f32>();
                if first + slot.item < params.n_rows && d0 + slot.depth < params.d {
                    v = x_quad(first + slot.item, d0 + slot.depth);
                }
                gemm_put_a_item_major(slot, v);
            }
            for (var e = lid; e < gemm_loads(tile_n); e += wg) {
                let slot = gemm_item_major_slot(e);
                let c = k0 + slot.item;
                var v = vec4<f32>();
                for (var t = 0u; t < 4u; t++) {
                    let j = d0 + slot.depth + t;
                    if c < params.k && j < params.d {
                        v[t] = centroids[c * params.d + j];
                    }
                }
                gemm_put_b_item_major(slot, v);
            }
            workgroupBarrier();
            gemm_multiply_stage_sq(lane, &acc);
        }
        for (var i = 0u; i < GEMM_RM; i++) {
            let row = first + gemm_row(lane, i);
            if row < params.n_rows {
                for (var m = 0u; m < GEMM_RN; m++) {
                    let c = k0 + gemm_col(lane, m);
                    if c < params.k {
                        var v = block_at(acc, i, m);
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
