// GPUs, few centroids and features: the Lloyd update in the assignment's epilogue. Host:
// src/kernels/assign/fused.rs.
//
// assign_rows_update assigns as assign_stream does (the same labels, distances and changed
// count, bit for bit: the family's difference form, assign/shared/rows_piece.wgsl) and also
// writes the per-block partials of the Lloyd update, which
// accumulate_cluster_partials (centroids/update.wgsl) would write from the labels afterwards.
// The update c_k = Σ_{i∈k} w_i x_i / Σ_{i∈k} w_i is computed as
// c_k = old c_k + Σ_{i∈k} w_i (x_i − old c_k) / Σ_{i∈k} w_i, and the partials hold, per block
// of block_rows rows, cluster k and feature j, Σ w_i (x_ij − old c_kj) (summed as
// sum += w·(x − old c), a product and a sum as written there, in row order from +0.0, w
// exactly 1 when unweighted), the
// member count, Σ w_i d̂_i and Σ w_i: the same sums in the same order as
// accumulate_cluster_partials, so the same bits.
//
// A workgroup owns one whole block (block_rows a multiple of ROWS_WG) and assigns it tile by
// tile of ROWS_WG rows. In each tile's epilogue the tile's labels, weights and distances go to
// workgroup memory, and invocation j, owning feature j (D <= FUSED_MAX_D, one feature per
// invocation), adds the tile's rows in order to its K <= SMALL_K sums in registers, reading
// the rows' features from the pieces the assignment staged (so X is read from global memory
// once, and no labels pass follows); invocation c < K keeps cluster c's count, Σ w·d̂ and Σ w.
// Each sum has one writer and reaches the partials once, at the end of the block: no
// read-modify-write of global memory, and the parallel work (a workgroup per block, ROWS_WG
// invocations each) does not depend on a budget of partials.
//
// D <= FUSED_MAX_D = ROWS_WG: each invocation owns one feature, and the tile's features span
// at most two pieces, so keeping them costs one more piece of workgroup memory
// (rows_piece_first, 8.5 KiB; about 20 KiB in all) instead of a second read of the rows.
// Past it an invocation would own several features (K sums each) and the tile several
// pieces; the unfused kernels serve those shapes.
//
// Bit equality with accumulate_cluster_partials rests on writing the same expression,
// sum += w * (x − old c): a driver that contracts it into an fma does so in both kernels
//
// @trusted: as stream.wgsl (rows below n_rows, features below d and centroids below k are
//   guarded before every load, workgroup arrays indexed by constants and the invocation id);
//   the partials are written at block, cluster and feature indices below
//   the dispatch's blocks, k and d, and a label only selects a register through a switch

#import constants
#import grid
#import assign/params
#import assign/rows_piece


// Features of assign_rows_update: one per invocation, and at most two pieces (the first kept
// in rows_piece_first, the last still in rows_piece).
const FUSED_MAX_D: u32 = ROWS_WG;

// The first piece of the tile's features when D takes two pieces ([feature][row], as
// rows_piece).
var<workgroup> rows_piece_first: array<f32, ROWS_PIECE * ROWS_PIECE_STRIDE>;
// The tile's labels, weights and squared distances.
var<workgroup> tile_labels: array<u32, ROWS_WG>;
var<workgroup> tile_weights: array<f32, ROWS_WG>;
var<workgroup> tile_sq_dist: array<f32, ROWS_WG>;

// Row r's sample weight, or exactly 1 (centroids/update.wgsl's weight_of).
fn weight_of(r: u32) -> f32 {
    if params.weighted != 0u {
        return weights[r];
    }
    return 1.0;
}

// sums[label] += w·(x − old[label]), accumulate_cluster_partials' expression. The epilogue
// walks one row at a time, so the label is the same across the workgroup and the switch is
// one uniform branch: a runtime index would put the arrays in memory on some drivers, and
// comparing with every index would cost about 3·SMALL_K instructions per row and feature,
// more than the assignment's 2K. One case per register (SMALL_K = 16; the host asserts it).
fn add_deviation(sums: ptr<function, array<f32, SMALL_K>>, old: ptr<function, array<f32, SMALL_K>>, label: u32, w: f32, xv: f32) {
    switch label {
        case 0u: { (*sums)[0] += w * (xv - (*old)[0]); }
        case 1u: { (*sums)[1] += w * (xv - (*old)[1]); }
        case 2u: { (*sums)[2] += w * (xv - (*old)[2]); }
        case 3u: { (*sums)[3] += w * (xv - (*old)[3]); }
        case 4u: { (*sums)[4] += w * (xv - (*old)[4]); }
        case 5u: { (*sums)[5] += w * (xv - (*old)[5]); }
        case 6u: { (*sums)[6] += w * (xv - (*old)[6]); }
        case 7u: { (*sums)[7] += w * (xv - (*old)[7]); }
        case 8u: { (*sums)[8] += w * (xv - (*old)[8]); }
        case 9u: { (*sums)[9] += w * (xv - (*old)[9]); }
        case 10u: { (*sums)[10] += w * (xv - (*old)[10]); }
        case 11u: { (*sums)[11] += w * (xv - (*old)[11]); }
        case 12u: { (*sums)[12] += w * (xv - (*old)[12]); }
        case 13u: { (*sums)[13] += w * (xv - (*old)[13]); }
        case 14u: { (*sums)[14] += w * (xv - (*old)[14]); }
        case 15u: { (*sums)[15] += w * (xv - (*old)[15]); }
        default: {}
    }
}

@compute @workgroup_size(ROWS_WG)
fn assign_rows_update(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let block = workgroup_index(wid, params.grid_x);
    let first = block * params.block_rows;
    if first >= params.n_rows {
        return;
    }
    let last = min(first + params.block_rows, params.n_rows);
    let d = params.d;
    let j = lid;
    // The piece that holds the last features: features below it are kept in rows_piece_first.
    let last_j0 = (d - 1u) / ROWS_PIECE * ROWS_PIECE;
    // The old centroids' feature j, and the sums of w·(x_j − old c_j), per cluster, in
    // registers (constant indices only: add_deviation).
    var old: array<f32, SMALL_K>;
    var sums: array<f32, SMALL_K>;
    for (var c = 0u; c < SMALL_K; c++) {
        if c < params.k && j < d {
            old[c] = centroids[c * d + j];
        }
    }
    // Cluster lid's count, Σ w·d̂ and Σ w (invocations lid < K).
    var count = 0u;
    var sq_dist = 0.0;
    var weight_sum = 0.0;
    for (var t0 = first; t0 < last; t0 += ROWS_WG) {
        var acc: array<f32, SMALL_K>;
        for (var j0 = 0u; j0 < d; j0 += ROWS_PIECE) {
            rows_piece_sq_distances(t0, lid, j0, &acc);
            // The next piece overwrites rows_piece: invocation j keeps its own feature, which
            // only it reads below (no barrier needed).
            if j0 < last_j0 && j < ROWS_PIECE {
                for (var r = 0u; r < ROWS_WG; r++) {
                    rows_piece_first[j * ROWS_PIECE_STRIDE + r] = rows_piece[j * ROWS_PIECE_STRIDE + r];
                }
            }
        }
        let row = t0 + lid;
        if row < last {
            let near = settle_row(row, acc);
            tile_labels[lid] = near.k;
            tile_sq_dist[lid] = near.sq_dist;
            tile_weights[lid] = weight_of(row);
        }
        workgroupBarrier();
        // The next tile writes these only after the barriers of its first piece.
        let m = min(ROWS_WG, last - t0);
        for (var r = 0u; r < m; r++) {
            let label = tile_labels[r];
            let w = tile_weights[r];
            if j < d {
                var xv: f32;
                if j < last_j0 {
                    xv = rows_piece_first[j * ROWS_PIECE_STRIDE + r];
                } else {
                    xv = rows_piece[(j - last_j0) * ROWS_PIECE_STRIDE + r];
                }
                add_deviation(&sums, &old, label, w, xv);
            }
            // add_row_scalars of centroids/update.wgsl.
            if label == lid {
                count += 1u;
                sq_dist += w * tile_sq_dist[r];
                weight_sum += w;
            }
        }
    }
    // write_partials of centroids/update.wgsl.
    let gblock = params.block_offset + block;
    for (var c = 0u; c < SMALL_K; c++) {
        if c < params.k && j < d {
            partial_sums[(gblock * params.k + c) * d + j] = sums[c];
        }
    }
    if lid < params.k {
        let at = gblock * params.k + lid;
        partial_counts[at] = count;
        partial_sq_dist[2u * at] = sq_dist;
        partial_sq_dist[2u * at + 1u] = weight_sum;
    }
}
