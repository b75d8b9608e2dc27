// The body of the GEMM-form assignment on the staged tile core, shared by its two entry
// points (assign/tiled.wgsl, and assign/tiled_subgroup.wgsl where the adapter has subgroups),
// which differ only in how a row's GEMM_LANES_N searches are merged: tiled_search runs the
// tiles and leaves each invocation its rows' searches over its columns; the entry merges them
// into lane column 0; tiled_finish settles each row from the merged search.

#import constants
#import grid
#import gemm
#import assign/params
#import assign/search

// The first row of this workgroup's tile.
fn tiled_first(wid: vec3<u32>) -> u32 {
    return workgroup_index(wid, params.grid_x) * gemm_tile_m();
}

// Every centroid tile over this workgroup's rows: the invocation's searches of its register
// rows over its register columns, candidates in increasing order.
fn tiled_search(lid: u32, wid: vec3<u32>, search: ptr<function, array<Search, 8>>) {
    let tile_m = gemm_tile_m();
    let tile_n = gemm_tile_n();
    let wg = gemm_wg_size();
    let first = tiled_first(wid);
    let lane = gemm_lane(lid);
    if lid == 0u {
        atomicStore(&wg_changed, 0u);
    }
    for (var i = 0u; i < 8u; i++) {
        search_set(search, i, search_start());
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
                    let s = search_add(search_of(search, i), block_at(acc, i, m), c, norms);
                    search_set(search, i, s);
                }
            }
        }
    }
}

// After the merge (lane column 0 holds each row's search over every centroid): one
// invocation per row takes the exact distance to the candidate (and the runner-up), the
// tests, the result; then the workgroup's count of changed labels.
fn tiled_finish(lid: u32, wid: vec3<u32>, search: ptr<function, array<Search, 8>>) {
    let tile_m = gemm_tile_m();
    let first = tiled_first(wid);
    let lane = gemm_lane(lid);
    workgroupBarrier();
    if lane.tx == 0u {
        for (var i = 0u; i < GEMM_RM; i++) {
            let at = gemm_row(lane, i) * 2u;
            let s = search_of(search, i);
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
