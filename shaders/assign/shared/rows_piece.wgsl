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

// [feature of the piece][row of the workgroup], and [feature of the piece][centroid] as
// vec4s (centroids 4g .. 4g + 3 of feature j at j·SMALL_K/4 + g: one broadcast load a group).
var<workgroup> rows_piece: array<f32, ROWS_PIECE * ROWS_PIECE_STRIDE>;
var<workgroup> centroid_piece: array<vec4<f32>, SMALL_K * ROWS_PIECE / 4u>;

// One value per centroid (SMALL_K = 16 of them), centroids 4g .. 4g + 3 in the lanes of
// member g (g0 .. g3). Not an array: every access names its vec4 by a constant, so the
// values stay in registers whether or not a driver unrolls the loop around it (an array
// indexed at run time lives in local memory, and then every fma loads and stores its chain
// there).
struct PerCentroid {
    g0: vec4<f32>,
    g1: vec4<f32>,
    g2: vec4<f32>,
    g3: vec4<f32>,
}

const_assert SMALL_K == 16u;

// Centroid c's value (c < SMALL_K).
fn per_centroid(v: PerCentroid, c: u32) -> f32 {
    let g = c / 4u;
    let q = select(select(v.g3, v.g2, g == 2u), select(v.g1, v.g0, g == 0u), g < 2u);
    return q[c % 4u];
}

// Adds to `acc` the squared differences between features j0 .. j0 + ROWS_PIECE of row
// first + lid and those of every centroid (one fma chain per centroid, in feature order):
// the workgroup loads the piece of its ROWS_WG rows with consecutive invocations on
// consecutive vec4s of a row (coalesced), and the same features of every centroid, into
// workgroup memory; each invocation then advances its row's SMALL_K chains over the piece.
// Every invocation of the workgroup calls it (barriers). The piece stays in rows_piece until
// the next call's first barrier.
fn rows_piece_sq_distances(first: u32, lid: u32, j0: u32, acc: ptr<function, PerCentroid>) {
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
        let j = e % ROWS_PIECE;
        var v = 0.0;
        if c < params.k && j0 + j < params.d {
            v = centroids[c * params.d + j0 + j];
        }
        centroid_piece[j * (SMALL_K / 4u) + c / 4u][c % 4u] = v;
    }
    workgroupBarrier();
    let n = min(ROWS_PIECE, params.d - j0);
    // Groups past K hold zero centroids and are skipped (a uniform branch).
    let k = params.k;
    for (var j = 0u; j < n; j++) {
        let xv = vec4<f32>(rows_piece[j * ROWS_PIECE_STRIDE + lid]);
        let at = j * (SMALL_K / 4u);
        var d = xv - centroid_piece[at];
        (*acc).g0 = fma(d, d, (*acc).g0);
        if k > 4u {
            d = xv - centroid_piece[at + 1u];
            (*acc).g1 = fma(d, d, (*acc).g1);
        }
        if k > 8u {
            d = xv - centroid_piece[at + 2u];
            (*acc).g2 = fma(d, d, (*acc).g2);
        }
        if k > 12u {
            d = xv - centroid_piece[at + 3u];
            (*acc).g3 = fma(d, d, (*acc).g3);
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

fn settle_row(row: u32, acc: PerCentroid) -> Nearest {
    var best = F32_MAX;
    var best_k = 0u;
    for (var c = 0u; c < params.k; c++) {
        let dist = per_centroid(acc, c);
        if dist < best {
            best = dist;
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
