// The GEMM form on the staged tile core (GPUs, K > SMALL_K): the candidate search of
// assign/shared/search.wgsl over tiles of rows and centroids (assign/shared/params.wgsl holds
// the contract; host: src/kernels/assign/tiled.rs).
//
// @trusted: rows below n_rows, centroids below k and features below d are guarded before every
//   load; the recheck list gets one slot per row of the dispatch (atomic counter, at most n_rows
//   of n_rows + 1 slots)

#import constants
#import grid
#import gemm
#import assign/params
#import assign/search

@compute @workgroup_size(GEMM_LANES_M * GEMM_LANES_N)
fn assign_tiled(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let tile_m = gemm_tile_m();
    let tile_n = gemm_tile_n();
    let wg = gemm_wg_size();
    let first = workgroup_index(wid, params.grid_x) * tile_m;
    let lane = gemm_lane(lid);
    if lid == 0u {
        atomicStore(&wg_changed, 0u);
    }
    var search: array<Search, 8>;
    for (var i = 0u; i < 8u; i++) {
        search_set(&search, i, search_start());
    }
    let n_stages = (params.d + GEMM_DEPTH - 1u) / GEMM_DEPTH;
    let loads_a = gemm_loads(tile_m);
    let loads_b = gemm_loads(tile_n);
    for (var k0 = 0u; k0 < params.k; k0 += tile_n) {
        var acc: Block;
        var pa: array<vec4<f32>, GEMM_MAX_LOADS>;
        var pb: array<vec4<f32>, GEMM_MAX_LOADS>;
        for (var s = 0u; s <= n_stages; s++) {
            if s > 0u {
                gemm_put_stage(lid, pa, GEMM_ITEM_MAJOR, pb, GEMM_ITEM_MAJOR);
            }
            if s < n_stages {
                // Prefetch stage s while stage s − 1 is multiplied.
                let d0 = s * GEMM_DEPTH;
                // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
                // prefetch registers are indexed by constants and stay registers.
                for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                    if gemm_has_load(e, lid, loads_a) {
                        let slot = gemm_item_major_slot(e * wg + lid);
                        let row = first + slot.item;
                        let j = d0 + slot.depth;
                        var v = vec4<f32>();
                        if row < params.n_rows && j < params.d {
                            // Zeros past D: x_quad's and the shift's (padded with zeros).
                            v = x_quad(row, j) - prepared[shift_base() + j / 4u];
                        }
                        pa[e] = v;
                    }
                }
                // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
                // prefetch registers are indexed by constants and stay registers.
                for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                    if gemm_has_load(e, lid, loads_b) {
                        let slot = gemm_item_major_slot(e * wg + lid);
                        let c = k0 + slot.item;
                        let j = d0 + slot.depth;
                        var v = vec4<f32>();
                        if c < params.k && j < params.d {
                            v = prepared[c * params.d4 + j / 4u];
                        }
                        pb[e] = v;
                    }
                }
            }
            if s > 0u {
                gemm_multiply_stage(lane, &acc);
            }
        }
        // Candidates k0 + column, in increasing order per invocation.
        for (var m = 0u; m < GEMM_RN; m++) {
            let c = k0 + gemm_col(lane, m);
            if c < params.k {
                let norms = prepared[norms_base() + c];
                for (var i = 0u; i < GEMM_RM; i++) {
                    let s = search_add(search_of(&search, i), block_at(acc, i, m), c, norms);
                    search_set(&search, i, s);
                }
            }
        }
    }
    // Merge the GEMM_LANES_N searches of each row, two lane columns at a time (a search is
    // two vec4s of the scratch), in lane order, into the searches of lane column 0.
    for (var g = 0u; g < GEMM_LANES_N; g += 2u) {
        workgroupBarrier();
        if lane.tx >= g && lane.tx < g + 2u {
            for (var i = 0u; i < GEMM_RM; i++) {
                let at = (gemm_row(lane, i) * 2u + lane.tx - g) * 2u;
                let s = search_of(&search, i);
                gemm_scratch_store(at, search_pack_best(s));
                gemm_scratch_store(at + 1u, search_pack_second(s));
            }
        }
        workgroupBarrier();
        if lane.tx == 0u {
            for (var i = 0u; i < GEMM_RM; i++) {
                let row = gemm_row(lane, i);
                for (var t = select(0u, 1u, g == 0u); t < 2u; t++) {
                    let at = (row * 2u + t) * 2u;
                    let other = search_unpack(gemm_scratch_load(at), gemm_scratch_load(at + 1u));
                    search_set(&search, i, search_merge(search_of(&search, i), other));
                }
            }
        }
    }
    workgroupBarrier();
    if lane.tx == 0u {
        for (var i = 0u; i < GEMM_RM; i++) {
            let at = gemm_row(lane, i) * 2u;
            let s = search_of(&search, i);
            gemm_scratch_store(at, search_pack_best(s));
            gemm_scratch_store(at + 1u, search_pack_second(s));
        }
    }
    workgroupBarrier();
    // One invocation per row: the exact distance to the candidate (and the runner-up), the
    // tests, the result.
    if lid < tile_m && first + lid < params.n_rows {
        let row = first + lid;
        let s = search_unpack(gemm_scratch_load(2u * lid), gemm_scratch_load(2u * lid + 1u));
        let k = min(s.k, params.k - 1u);
        let exact = exact_from_storage(row, k);
        if search_is_exact(s, exact.y) {
            write_row(row, k, exact.x);
        } else if search_pair_decides(s, exact.y) {
            let k2 = min(s.k2, params.k - 1u);
            let pick = pick_of_two(k, exact.x, k2, exact_from_storage(row, k2).x);
            write_row(row, bitcast<u32>(pick.x), pick.y);
        } else {
            defer_row(row);
        }
    }
    workgroupBarrier();
    if lid == 0u {
        let n = atomicLoad(&wg_changed);
        if n > 0u {
            atomicAdd(&changed, n);
        }
    }
}
