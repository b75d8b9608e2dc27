// GPUs, few centroids (K <= SMALL_K): coalesced rows, the difference form
// (assign/shared/rows_piece.wgsl). Host: src/kernels/assign/rows.rs.
//
// @trusted: rows below n_rows, features below d and centroids below SMALL_K (zeros past k) are
//   guarded before every load; workgroup arrays are indexed by constants and the invocation id

#import constants
#import grid
#import assign/params
#import assign/rows_piece

// The nearest of K <= SMALL_K centroids for ROWS_WG rows, a piece of features at a time
// (rows_piece_sq_distances).
@compute @workgroup_size(ROWS_WG)
fn assign_rows(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let first = workgroup_index(wid, params.grid_x) * ROWS_WG;
    let row = first + lid;
    var acc: array<f32, SMALL_K>;
    for (var j0 = 0u; j0 < params.d; j0 += ROWS_PIECE) {
        rows_piece_sq_distances(first, lid, j0, &acc);
    }
    if row >= params.n_rows {
        return;
    }
    settle_row(row, acc);
}
