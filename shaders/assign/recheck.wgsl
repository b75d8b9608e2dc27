// The exact recheck of the rows the GEMM form left undecided (GPUs; on CPU-like adapters
// assign/uniform.wgsl rechecks them). Host: src/kernels/assign/recheck.rs.
//
// A workgroup takes one listed row at a time (the workgroups stride over the list) and its
// RECHECK_WG invocations split the centroids: invocation t computes the exact distance d̂ of
// centroids k_first + t, k_first + t + RECHECK_WG, ... (each one fma chain over the features
// in order, the chain every variant sums; four centroids at a time in the lanes of a vec4)
// and keeps the least (`<`, so the lowest index among equals); a tree over workgroup memory then takes the least (distance, index) pair, which is
// the lowest index among the least distances: the label and distance every other variant
// writes, bit for bit. The row's walk over all K centroids is so split RECHECK_WG ways: one
// invocation walking K·D dependent loads alone would hold its workgroup (and the dispatch)
// for K·D memory latencies, which on a GPU is tens of milliseconds at K = 256, D = 784
// whether one row or a thousand are listed.
//
// One dispatch compares the `k` centroids from k_first (the host splits K into runs that keep
// each invocation within llvmpipe's loop budget, GpuInfo::loop_back_edge_budget); the running
// best passes between runs through min_sq_dist and running_labels, in increasing centroid
// order, so the result does not depend on the split.
//
// @trusted: the rows it reads from the recheck list were written there by the assignment of this
//   very dispatch (each row at most once, below n_rows); centroids below k_first + k <= K

#import constants
#import grid
#import assign/params

const RECHECK_WG: u32 = 64u;
// Centroids an invocation walks at once (the lanes of a vec4).
const RECHECK_CHAINS: u32 = 4u;

var<workgroup> recheck_listed: u32;
var<workgroup> recheck_dist: array<f32, RECHECK_WG>;
var<workgroup> recheck_label: array<u32, RECHECK_WG>;

// Whether (a, ak) comes before (b, bk): the lower distance, then the lower index.
fn recheck_before(a: f32, ak: u32, b: f32, bk: u32) -> bool {
    return a < b || (a == b && ak < bk);
}

@compute @workgroup_size(RECHECK_WG)
fn assign_recheck(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let first = workgroup_index(wid, params.grid_x);
    // A 2-D grid may hold a few workgroups past n_groups: they would repeat rows.
    if first >= params.n_groups {
        return;
    }
    if lid == 0u {
        recheck_listed = atomicLoad(&recheck[0]);
    }
    let listed = workgroupUniformLoad(&recheck_listed);
    for (var i = first; i < listed; i += params.n_groups) {
        let row = atomicLoad(&recheck[1u + i]);
        let base = params.x_offset + row * params.d;
        // Invocation 0 carries the running best: label 0 at the largest distance before the
        // first run (what every variant writes for a row no centroid is below), the earlier
        // runs' best after it; the others start above any candidate.
        var best = F32_MAX;
        var best_k = 0xffffffffu;
        if lid == 0u {
            best_k = 0u;
            if (params.slice_flags & FIRST_SLICE) == 0u {
                best = min_sq_dist[row];
                best_k = running_labels[row];
            }
        }
        // Four centroids a pass over the row, c, c + RECHECK_WG, c + 2·RECHECK_WG and
        // c + 3·RECHECK_WG: four independent chains in the lanes of a vec4, so one row's walk
        // is a quarter as many dependent steps (fma on a vec4 is the scalar fma per lane: the
        // same bits). Lanes past k read the last centroid and are not compared.
        let last = params.k_first + params.k - 1u;
        for (var c = lid; c < params.k; c += RECHECK_CHAINS * RECHECK_WG) {
            let g = vec4<u32>(c, c + RECHECK_WG, c + 2u * RECHECK_WG, c + 3u * RECHECK_WG)
                + params.k_first;
            let at = min(g, vec4<u32>(last)) * params.d;
            var dist = vec4<f32>();
            for (var j = 0u; j < params.d; j++) {
                let cj = vec4<f32>(
                    centroids[at.x + j],
                    centroids[at.y + j],
                    centroids[at.z + j],
                    centroids[at.w + j],
                );
                let diff = vec4<f32>(x[base + j]) - cj;
                dist = fma(diff, diff, dist);
            }
            // In increasing centroid order, `<`: the lowest index among equals, as before.
            for (var t = 0u; t < RECHECK_CHAINS; t++) {
                if g[t] <= last && dist[t] < best {
                    best = dist[t];
                    best_k = g[t];
                }
            }
        }
        recheck_dist[lid] = best;
        recheck_label[lid] = best_k;
        workgroupBarrier();
        for (var half = RECHECK_WG / 2u; half > 0u; half /= 2u) {
            if lid < half {
                let other = recheck_dist[lid + half];
                let other_k = recheck_label[lid + half];
                if recheck_before(other, other_k, recheck_dist[lid], recheck_label[lid]) {
                    recheck_dist[lid] = other;
                    recheck_label[lid] = other_k;
                }
            }
            workgroupBarrier();
        }
        if lid == 0u {
            let dist = recheck_dist[0];
            let label = recheck_label[0];
            if (params.slice_flags & LAST_SLICE) == 0u {
                min_sq_dist[row] = dist;
                running_labels[row] = label;
            } else {
                if labels[row] != label {
                    atomicAdd(&changed, 1u);
                }
                labels[row] = label;
                min_sq_dist[row] = dist;
            }
        }
        // The next row's stores wait for this row's reads.
        workgroupBarrier();
    }
}
