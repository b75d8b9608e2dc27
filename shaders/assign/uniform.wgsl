// One row per invocation with the centroids from 64 KiB uniform slices (CPU-like adapters;
// also their recheck of the GEMM form's undecided rows). Host: src/kernels/assign/uniform.rs.
//
// @trusted: slice indices stay within the slice's SLICE_VEC4S vec4s (centroids clamped to the
//   slice's last); recheck rows as in recheck.wgsl

#import constants
#import grid
#import vec4s
#import assign/params

// assign_nearest_centroid with the centroids in a uniform buffer, one slice of at most
// SLICE_VEC4S vec4s per dispatch: one invocation per row, SMALL_K centroids at a time into
// register accumulators, as assign_nearest_centroid_registers. Some adapters load a uniform
// address from a uniform buffer once for all lanes but gather it lane by lane from a storage
// buffer (lavapipe: measured 14x apart), so this variant trades the host's copy of the
// centroids into slices for much cheaper loads. Features are still summed one at a time, in
// order, so the distances and the result are those of the other variants, bit for bit; the
// running best carries across slices in increasing centroid order (`<` keeps the lowest
// index on ties).
@compute @workgroup_size(ROW_WG_SIZE)
fn assign_nearest_centroid_uniform(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    var row = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if (params.slice_flags & RECHECK_ROWS) != 0u {
        // The exact recheck of the GEMM form's undecided rows (CPU-like adapters): the
        // invocations walk the list instead of the chunk.
        if row >= atomicLoad(&recheck[0]) {
            return;
        }
        row = atomicLoad(&recheck[1u + row]);
    } else if row >= params.n_rows {
        return;
    }
    let d4 = (params.d + 3u) / 4u;
    let full = params.d / 4u;
    let base = params.x_offset + row * params.d;
    var best = F32_MAX;
    var best_k = 0u;
    if (params.slice_flags & FIRST_SLICE) == 0u {
        best = min_sq_dist[row];
        best_k = running_labels[row];
    }
    for (var k0 = 0u; k0 < params.k; k0 += SMALL_K) {
        var acc: array<f32, SMALL_K>;
        var cbase: array<u32, SMALL_K>;
        for (var c = 0u; c < SMALL_K; c++) {
            cbase[c] = min(k0 + c, params.k - 1u) * d4;
        }
        for (var j = 0u; j < full; j++) {
            let b = base + 4u * j;
            let xv = vec4<f32>(x[b], x[b + 1u], x[b + 2u], x[b + 3u]);
            for (var c = 0u; c < SMALL_K; c++) {
                acc[c] = fma_squares(xv - centroid_slice[cbase[c] + j], acc[c]);
            }
        }
        for (var t = 4u * full; t < params.d; t++) {
            let xv = x[base + t];
            for (var c = 0u; c < SMALL_K; c++) {
                let diff = xv - centroid_slice[cbase[c] + full][t - 4u * full];
                acc[c] = fma(diff, diff, acc[c]);
            }
        }
        for (var c = 0u; c < min(SMALL_K, params.k - k0); c++) {
            if acc[c] < best {
                best = acc[c];
                best_k = params.k_first + k0 + c;
            }
        }
    }
    if (params.slice_flags & LAST_SLICE) == 0u {
        min_sq_dist[row] = best;
        running_labels[row] = best_k;
        return;
    }
    if labels[row] != best_k {
        atomicAdd(&changed, 1u);
    }
    labels[row] = best_k;
    min_sq_dist[row] = best;
}

// Writes the N x K matrix of distances (squared or not) from each row to each centroid: the
