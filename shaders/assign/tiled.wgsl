// The GEMM form on the staged tile core (GPUs, K > SMALL_K): the candidate search of
// assign/shared/search.wgsl over tiles of rows and centroids (assign/shared/params.wgsl holds
// the contract; host: src/kernels/assign/tiled.rs).
//
// @trusted: rows below n_rows, centroids below k and features below d are guarded before every
//   load; the recheck list gets one slot per row of the dispatch (atomic counter, at most n_rows
//   of n_rows + 1 slots)

#import gemm
#import assign/search
#import assign/tiled_core

@compute @workgroup_size(GEMM_LANES_M * GEMM_LANES_N)
fn assign_tiled(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    var search: array<Search, 8>;
    tiled_search(lid, wid, &search);
    let lane = gemm_lane(lid);
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
    tiled_finish(lid, wid, &search);
}
