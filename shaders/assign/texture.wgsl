// The GEMM form from flat textures (CPU-like adapters): the candidate search of
// assign/shared/search.wgsl with the rows and centroids fetched as texels
// (assign/shared/params.wgsl holds the contract; host: src/kernels/assign/texture.rs).
//
// @trusted: texel fetches are clamped by the texture unit; rows below n_rows and the recheck list
//   as in tiled.wgsl

#import constants
#import grid
#import gemm
#import texels
#import vec4s
#import assign/params
#import assign/search

// Rows per invocation of assign_texture (the 8 x 8 block of shared/gemm.wgsl).
const TEXTURE_ROWS: u32 = 8u;
// Blocks of 8 candidates an assign_texture pass multiplies from one fetch of its rows' texels
// (1 or 2, the host's choice from K): with 2, each texel of the rows feeds 16 candidates
// instead of 8, so a pass fetches 1 + 8 + 16 texels per four features where two passes of
// one block fetched 2 (1 + 8 + 8). Fixed per pipeline, so the unused block costs nothing.
override TEXTURE_BLOCKS: u32 = 1u;

// Texel q of centroid c (clamped to the last centroid) in a flat texture of K rows of d4
// texels starting at texel `base`.
fn centroid_quads(t: texture_2d_array<f32>, base: u32, k0: u32, q: u32) -> Quads {
    var out: Quads;
    let last = params.k - 1u;
    out.v[0] = flat_texel(t, base + min(k0, last) * params.d4 + q);
    out.v[1] = flat_texel(t, base + min(k0 + 1u, last) * params.d4 + q);
    out.v[2] = flat_texel(t, base + min(k0 + 2u, last) * params.d4 + q);
    out.v[3] = flat_texel(t, base + min(k0 + 3u, last) * params.d4 + q);
    out.v[4] = flat_texel(t, base + min(k0 + 4u, last) * params.d4 + q);
    out.v[5] = flat_texel(t, base + min(k0 + 5u, last) * params.d4 + q);
    out.v[6] = flat_texel(t, base + min(k0 + 6u, last) * params.d4 + q);
    out.v[7] = flat_texel(t, base + min(k0 + 7u, last) * params.d4 + q);
    return out;
}

// Candidates k0 .. k0 + 7 of one row (products lo, hi), those below K.
fn search_add8(s0: Search, lo: vec4<f32>, hi: vec4<f32>, norms: Quads, k0: u32) -> Search {
    var s = s0;
    for (var m = 0u; m < 8u; m++) {
        if k0 + m < params.k {
            var p = lo[m % 4u];
            if m >= 4u {
                p = hi[m % 4u];
            }
            s = search_add(s, p, k0 + m, norms.v[m]);
        }
    }
    return s;
}

// n + Σ xs² over the four values of a texel, in order (one fma chain).
fn norm_add(n: f32, xs: vec4<f32>) -> f32 {
    return fma(xs.w, xs.w, fma(xs.z, xs.z, fma(xs.y, xs.y, fma(xs.x, xs.x, n))));
}

// Candidates k0 .. k0 + 7 (those below K) of a block of products, into the searches of its
// eight rows. Constant indices into the block only: on this path a dynamic index would move
// the accumulators out of registers.
fn search_add_block(search: ptr<function, array<Search, 8>>, acc: Block, k0: u32) {
    var norms: Quads;
    for (var m = 0u; m < 8u; m++) {
        norms.v[m] = flat_texel(prepared_texels, norms_base() + min(k0 + m, params.k - 1u));
    }
    (*search)[0] = search_add8((*search)[0], acc.v[0], acc.v[1], norms, k0);
    (*search)[1] = search_add8((*search)[1], acc.v[2], acc.v[3], norms, k0);
    (*search)[2] = search_add8((*search)[2], acc.v[4], acc.v[5], norms, k0);
    (*search)[3] = search_add8((*search)[3], acc.v[6], acc.v[7], norms, k0);
    (*search)[4] = search_add8((*search)[4], acc.v[8], acc.v[9], norms, k0);
    (*search)[5] = search_add8((*search)[5], acc.v[10], acc.v[11], norms, k0);
    (*search)[6] = search_add8((*search)[6], acc.v[12], acc.v[13], norms, k0);
    (*search)[7] = search_add8((*search)[7], acc.v[14], acc.v[15], norms, k0);
}

@compute @workgroup_size(ROW_WG_SIZE)
fn assign_texture(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let r0 = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid) * TEXTURE_ROWS;
    if r0 >= params.n_rows {
        return;
    }
    let d4 = params.d4;
    let last = params.n_rows - 1u;
    var rows: array<u32, 8>;
    for (var i = 0u; i < TEXTURE_ROWS; i++) {
        rows[i] = min(r0 + i, last) * d4;
    }
    var search: array<Search, 8>;
    for (var i = 0u; i < TEXTURE_ROWS; i++) {
        search[i] = search_start();
    }
    // ‖x − s‖² of each row, summed from the shifted texels the first block of candidates
    // fetches anyway (the same chain, in feature order, as exact_from_storage's): a texel
    // fetch costs llvmpipe far more than the four FMAs, and the check below needs no shift.
    var norm: array<f32, 8>;
    for (var k0 = 0u; k0 < params.k; k0 += 8u * TEXTURE_BLOCKS) {
        var acc: Block;
        var acc_next: Block; // candidates k0 + 8 .. k0 + 15 (TEXTURE_BLOCKS = 2)
        for (var q = 0u; q < d4; q++) {
            let sh = flat_texel(prepared_texels, shift_base() + q);
            var xq: Quads;
            xq.v[0] = flat_texel(x_texels, rows[0] + q) - sh;
            xq.v[1] = flat_texel(x_texels, rows[1] + q) - sh;
            xq.v[2] = flat_texel(x_texels, rows[2] + q) - sh;
            xq.v[3] = flat_texel(x_texels, rows[3] + q) - sh;
            xq.v[4] = flat_texel(x_texels, rows[4] + q) - sh;
            xq.v[5] = flat_texel(x_texels, rows[5] + q) - sh;
            xq.v[6] = flat_texel(x_texels, rows[6] + q) - sh;
            xq.v[7] = flat_texel(x_texels, rows[7] + q) - sh;
            if k0 == 0u {
                norm[0] = norm_add(norm[0], xq.v[0]);
                norm[1] = norm_add(norm[1], xq.v[1]);
                norm[2] = norm_add(norm[2], xq.v[2]);
                norm[3] = norm_add(norm[3], xq.v[3]);
                norm[4] = norm_add(norm[4], xq.v[4]);
                norm[5] = norm_add(norm[5], xq.v[5]);
                norm[6] = norm_add(norm[6], xq.v[6]);
                norm[7] = norm_add(norm[7], xq.v[7]);
            }
            gemm_multiply_quads(&acc, xq, centroid_quads(prepared_texels, 0u, k0, q));
            if TEXTURE_BLOCKS == 2u {
                gemm_multiply_quads(&acc_next, xq, centroid_quads(prepared_texels, 0u, k0 + 8u, q));
            }
        }
        // Candidates in increasing order per row: the first block, then the second.
        search_add_block(&search, acc, k0);
        if TEXTURE_BLOCKS == 2u {
            search_add_block(&search, acc_next, k0 + 8u);
        }
    }
    var n_changed = 0u;
    for (var i = 0u; i < TEXTURE_ROWS; i++) {
        let row = r0 + i;
        if row < params.n_rows {
            let s = search[i];
            let k = min(s.k, params.k - 1u);
            let k2 = min(s.k2, params.k - 1u);
            var dist = 0.0;
            var dist2 = 0.0;
            for (var q = 0u; q < d4; q++) {
                let xv = flat_texel(x_texels, rows[i] + q);
                let cv = flat_texel(centroid_texels, k * d4 + q);
                let cv2 = flat_texel(centroid_texels, k2 * d4 + q);
                for (var t = 0u; t < 4u; t++) {
                    let diff = xv[t] - cv[t];
                    dist = fma(diff, diff, dist);
                    let diff2 = xv[t] - cv2[t];
                    dist2 = fma(diff2, diff2, dist2);
                }
            }
            // The runner-up's distance is summed beside the best's: llvmpipe would run a
            // separate loop for every row whether or not its pair test holds.
            var decided = search_is_exact(s, norm[i]);
            var pick = vec2<f32>(bitcast<f32>(k), dist);
            if !decided && search_pair_decides(s, norm[i]) {
                decided = true;
                pick = pick_of_two(k, dist, k2, dist2);
            }
            if decided {
                let label = bitcast<u32>(pick.x);
                if labels[row] != label {
                    n_changed += 1u;
                }
                labels[row] = label;
                min_sq_dist[row] = pick.y;
            } else {
                defer_row(row);
            }
        }
    }
    if n_changed > 0u {
        atomicAdd(&changed, n_changed);
    }
}
