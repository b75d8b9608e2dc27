// The exact recheck of the rows the GEMM form left undecided (GPUs; on CPU-like adapters
// assign/uniform.wgsl rechecks them). Host: src/kernels/assign/recheck.rs.
//
// @trusted: the rows it reads from the recheck list were written there by the assignment of this
//   very dispatch (each row at most once, below n_rows); centroids below k_first + k <= K

#import constants
#import grid
#import assign/params

// The rows on the recheck list: every centroid in the difference form (as the other
// variants), the result written and a changed label counted. One dispatch compares the `k`
// centroids from k_first (the host splits K into runs that keep each invocation within
// llvmpipe's loop budget, GpuInfo::loop_back_edge_budget); the running best passes between
// runs through min_sq_dist and running_labels, in increasing centroid order, so the result
// does not depend on the split.
@compute @workgroup_size(ROW_WG_SIZE)
fn assign_recheck(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let i = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if i >= atomicLoad(&recheck[0]) {
        return;
    }
    let row = atomicLoad(&recheck[1u + i]);
    let base = params.x_offset + row * params.d;
    var best = F32_MAX;
    var best_k = 0u;
    if (params.slice_flags & FIRST_SLICE) == 0u {
        best = min_sq_dist[row];
        best_k = running_labels[row];
    }
    for (var c = 0u; c < params.k; c++) {
        let g = params.k_first + c;
        var dist = 0.0;
        for (var j = 0u; j < params.d; j++) {
            let diff = x[base + j] - centroids[g * params.d + j];
            dist = fma(diff, diff, dist);
        }
        if dist < best {
            best = dist;
            best_k = g;
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
