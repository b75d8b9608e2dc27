// The staged pieces of rows of the fused small-K assignment and update (assign/fused.wgsl):
// coalesced vec4 loads of a workgroup's rows into workgroup memory, the centroids beside them,
// and the difference form summed per row.

#import constants
#import assign/params

// Rows per workgroup of assign_rows_update, features per staged piece, and the padded row of the
// staged piece (a vec4 of padding, so neighbouring invocations read neighbouring banks).
const ROWS_WG: u32 = 64u;
const ROWS_PIECE: u32 = 32u;
const ROWS_PIECE_STRIDE: u32 = ROWS_WG + 4u;

// [feature of the piece][row of the workgroup] and [centroid][feature of the piece].
var<workgroup> rows_piece: array<f32, ROWS_PIECE * ROWS_PIECE_STRIDE>;
var<workgroup> centroid_piece: array<f32, SMALL_K * ROWS_PIECE>;

// Adds to `acc` the squared differences between features j0 .. j0 + ROWS_PIECE of row
// first + lid and those of every centroid (one fma chain per centroid, in feature order):
// the workgroup loads the piece of its ROWS_WG rows with consecutive invocations on
// consecutive vec4s of a row (coalesced), and the same features of every centroid, into
// workgroup memory; each invocation then advances its row's SMALL_K chains over the piece.
// Every invocation of the workgroup calls it (barriers). The piece stays in rows_piece until
// the next call's first barrier.
fn rows_piece_sq_distances(first: u32, lid: u32, j0: u32, acc: ptr<function, array<f32, SMALL_K>>) {
    let quads = ROWS_PIECE / 4u;
    workgroupBarrier();
    // ROWS_WG rows x `quads` vec4s: invocation lid takes quads lid, lid + ROWS_WG, ...
    for (var e = lid; e < ROWS_WG * quads; e += ROWS_WG) {
        let r = e / quads;
        let j = j0 + 4u * (e % quads);
        var v = vec4<f32>();
        if first + r < params.n_rows && j < params.d {
            v = x_quad(first + r, j);
        }
        for (var t = 0u; t < 4u; t++) {
            rows_piece[(4u * (e % quads) + t) * ROWS_PIECE_STRIDE + r] = v[t];
        }
    }
    for (var e = lid; e < SMALL_K * ROWS_PIECE; e += ROWS_WG) {
        let c = e / ROWS_PIECE;
        let j = j0 + e % ROWS_PIECE;
        var v = 0.0;
        if c < params.k && j < params.d {
            v = centroids[c * params.d + j];
        }
        centroid_piece[e] = v;
    }
    workgroupBarrier();
    let n = min(ROWS_PIECE, params.d - j0);
    for (var j = 0u; j < n; j++) {
        let xv = rows_piece[j * ROWS_PIECE_STRIDE + lid];
        for (var c = 0u; c < SMALL_K; c++) {
            let diff = xv - centroid_piece[c * ROWS_PIECE + j];
            (*acc)[c] = fma(diff, diff, (*acc)[c]);
        }
    }
}

// The nearest centroid of `row` (ties: the lowest index) and its squared distance, from its
// distances to the K <= SMALL_K centroids; writes the label and the distance and counts a
// changed label.
struct Nearest {
    k: u32,
    sq_dist: f32,
}

fn settle_row(row: u32, acc: array<f32, SMALL_K>) -> Nearest {
    var best = F32_MAX;
    var best_k = 0u;
    // A constant trip count with the test inside, so the driver unrolls the loop and `acc`
    // stays in registers (a run-time bound indexes it at run time).
    for (var c = 0u; c < SMALL_K; c++) {
        if c < params.k && acc[c] < best {
            best = acc[c];
            best_k = c;
        }
    }
    if labels[row] != best_k {
        atomicAdd(&changed, 1u);
    }
    labels[row] = best_k;
    min_sq_dist[row] = best;
    return Nearest(best_k, best);
}
