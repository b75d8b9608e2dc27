// assign_tiled (assign/tiled.wgsl) with the row merge done in subgroups: the GEMM_LANES_N
// invocations that share a tile row (consecutive local indices, lid = ty · GEMM_LANES_N + tx)
// exchange their searches by a butterfly of subgroupShuffleXor over tx, with no workgroup
// memory and no barrier, where assign_tiled takes GEMM_LANES_N / 2 rounds of two barriers
// each. The host runs it only where every subgroup holds GEMM_LANES_N invocations or more
// (the adapter's smallest subgroup size), so an exchange stays among the lanes of one row.
// search_merge is commutative and associative over disjoint candidates (a total order on
// (v, k), and minima), so every lane ends with the merge of all GEMM_LANES_N: the bits of the
// lane-order merge (the variants test holds the two against each other). naga 30 takes the
// subgroup built-ins without `enable subgroups;` (which it does not parse yet); wgpu accepts
// the module on devices with `Features::SUBGROUP`.
//
// @trusted: as assign/tiled.wgsl (the body is the same, assign/shared/tiled_core.wgsl); the
//   shuffles read registers of lanes of the same subgroup

#import gemm
#import assign/search
#import assign/tiled_core

// Lane `lane ^ mask`'s search (within the subgroup).
fn search_shuffle_xor(s: Search, mask: u32) -> Search {
    return Search(
        subgroupShuffleXor(s.v, mask),
        subgroupShuffleXor(s.k, mask),
        subgroupShuffleXor(s.slack, mask),
        subgroupShuffleXor(s.v2, mask),
        subgroupShuffleXor(s.k2, mask),
        subgroupShuffleXor(s.slack2, mask),
        subgroupShuffleXor(s.others, mask),
    );
}

@compute @workgroup_size(GEMM_LANES_M * GEMM_LANES_N)
fn assign_tiled_subgroup(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    var search: array<Search, 8>;
    tiled_search(lid, wid, &search);
    // The butterfly: log2(GEMM_LANES_N) exchanges, every lane of the row taking part in each
    // (the shuffles sit in uniform control flow: the bounds are overrides).
    for (var mask = 1u; mask < GEMM_LANES_N; mask *= 2u) {
        for (var i = 0u; i < GEMM_RM; i++) {
            let s = search_of(&search, i);
            search_set(&search, i, search_merge(s, search_shuffle_xor(s, mask)));
        }
    }
    tiled_finish(lid, wid, &search);
}
