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
// one uniform branch: a runtime index would put the values in memory on some drivers, and
// comparing with every index would cost about 3·SMALL_K instructions per row and feature,
// more than the assignment's 2K. One case per register (SMALL_K = 16; PerCentroid asserts it).
fn add_deviation(sums: ptr<function, PerCentroid>, old: PerCentroid, label: u32, w: f32, xv: f32) {
    switch label {
        case 0u: { (*sums).g0.x += w * (xv - old.g0.x); }
        case 1u: { (*sums).g0.y += w * (xv - old.g0.y); }
        case 2u: { (*sums).g0.z += w * (xv - old.g0.z); }
        case 3u: { (*sums).g0.w += w * (xv - old.g0.w); }
        case 4u: { (*sums).g1.x += w * (xv - old.g1.x); }
        case 5u: { (*sums).g1.y += w * (xv - old.g1.y); }
        case 6u: { (*sums).g1.z += w * (xv - old.g1.z); }
        case 7u: { (*sums).g1.w += w * (xv - old.g1.w); }
        case 8u: { (*sums).g2.x += w * (xv - old.g2.x); }
        case 9u: { (*sums).g2.y += w * (xv - old.g2.y); }
        case 10u: { (*sums).g2.z += w * (xv - old.g2.z); }
        case 11u: { (*sums).g2.w += w * (xv - old.g2.w); }
        case 12u: { (*sums).g3.x += w * (xv - old.g3.x); }
        case 13u: { (*sums).g3.y += w * (xv - old.g3.y); }
        case 14u: { (*sums).g3.z += w * (xv - old.g3.z); }
        case 15u: { (*sums).g3.w += w * (xv - old.g3.w); }
        default: {}
    }
}

// Feature j of centroid c, or 0 past K or D.
fn old_value(c: u32, j: u32) -> f32 {
    if c < params.k && j < params.d {
        return centroids[c * params.d + j];
    }
    return 0.0;
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
    var old: PerCentroid;
    old.g0 = vec4<f32>(old_value(0u, j), old_value(1u, j), old_value(2u, j), old_value(3u, j));
    old.g1 = vec4<f32>(old_value(4u, j), old_value(5u, j), old_value(6u, j), old_value(7u, j));
    old.g2 = vec4<f32>(old_value(8u, j), old_value(9u, j), old_value(10u, j), old_value(11u, j));
    old.g3 = vec4<f32>(old_value(12u, j), old_value(13u, j), old_value(14u, j), old_value(15u, j));
    var sums: PerCentroid;
    // Cluster lid's count, Σ w·d̂ and Σ w (invocations lid < K).
    var count = 0u;
    var sq_dist = 0.0;
    var weight_sum = 0.0;
    for (var t0 = first; t0 < last; t0 += ROWS_WG) {
        var acc: PerCentroid;
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
                add_deviation(&sums, old, label, w, xv);
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
    for (var c = 0u; c < params.k; c++) {
        if j < d {
            partial_sums[(gblock * params.k + c) * d + j] = per_centroid(sums, c);
        }
    }
    if lid < params.k {
        let at = gblock * params.k + lid;
        partial_counts[at] = count;
        partial_sq_dist[2u * at] = sq_dist;
        partial_sq_dist[2u * at + 1u] = weight_sum;
    }
}
