// The Lloyd update on the device, so that the loop never waits for the host between two
// iterations: from one pass's per-cluster sums (sum_partial_columns, reduce.wgsl) the next
// centroids c⁽ᵗ⁺¹⁾ₖ = cₖ + Σw(x − cₖ)/Wₖ (back on the unit sphere for the cosine metric), the
// squared shift Σₖ‖c⁽ᵗ⁺¹⁾ₖ − cₖ‖², and the loop's decision, which the host reads one
// iteration later (`lloyd_ahead` in src/kmeans/lloyd.rs).
//
// Host wrapper: src/kernels/centroids/advance.rs.
//
// advance_clusters: one workgroup per cluster writes its next row and its squared shift (a
//   cluster without weight keeps its row and is marked empty);
// advance_decide: one workgroup reads every cluster's shift and mark and decides, in the
//   host loop's order: a finished loop stays finished (idle); no label changed (after the
//   first pass of a run): finished, centroids kept; a cluster empty: stop for the host's
//   repair, centroids kept; shift <= tol: finished, centroids moved; else moved;
// advance_commit: where the decision moved them, `previous` takes the centroids and the
//   centroids take the next rows (one invocation per value).
// The arithmetic is f32 in a fixed order (no atomics), so the same inputs give the same bits.
//
// @trusted: every index is a cluster below k, a feature below d, or a value below k·d, from
//   the dispatch grid and the parameters the host sizes the buffers by

#import constants
#import grid

// Twin: AdvanceParams in src/kernels/centroids/advance.rs.
struct AdvanceParams {
    k: u32,
    d: u32,
    grid_x: u32,
    weighted: u32,      // 1: Wₖ is the weight sum of sq_pairs; 0: the count
    spherical: u32,     // 1: next rows are scaled to unit length
    check_changed: u32, // 1: a pass with no changed label finishes the loop (not the first)
    tol: f32,           // finished when the squared shift is at most this
    pad: u32,
}

// The loop's state, read back by the host each iteration. Twin: Decision in advance.rs.
const STATE_IDLE: u32 = 0u;      // the loop had finished already: nothing changed
const STATE_MOVED: u32 = 1u;     // centroids moved; go on
const STATE_CONVERGED: u32 = 2u; // centroids moved by at most tol: finished
const STATE_UNCHANGED: u32 = 3u; // no label changed: finished, centroids kept
const STATE_EMPTY: u32 = 4u;     // a cluster has no weight: the host repairs; centroids kept

const ADVANCE_WG_SIZE: u32 = 256u;

@group(0) @binding(0) var<uniform> params: AdvanceParams;
@group(0) @binding(1) var<storage, read> centroids: array<f32>;
@group(0) @binding(2) var<storage, read> sums: array<f32>;      // K x D: Σw(x − cₖ)
@group(0) @binding(3) var<storage, read> counts: array<u32>;    // K
@group(0) @binding(4) var<storage, read> sq_pairs: array<f32>;  // K x 2: Σw·d², Σw
@group(0) @binding(5) var<storage, read_write> next: array<f32>;
// Per cluster: the squared shift, and 1 where the cluster has no weight.
@group(0) @binding(6) var<storage, read_write> cluster_shift: array<f32>;
@group(0) @binding(7) var<storage, read_write> cluster_empty: array<u32>;
// The pass's changed-label count (assignment kernels' atomic counter).
@group(0) @binding(8) var<storage, read> changed: array<u32>;
// (finished, state, shift bits, changed): finished persists until the host clears it.
@group(0) @binding(9) var<storage, read_write> status: array<u32>;
@group(0) @binding(10) var<storage, read_write> centroids_out: array<f32>;
@group(0) @binding(11) var<storage, read_write> previous: array<f32>;

var<workgroup> partial: array<f32, FEATURE_WG_MAX>;
var<workgroup> decide_sum: array<f32, ADVANCE_WG_SIZE>;
var<workgroup> decide_any: array<u32, ADVANCE_WG_SIZE>;

// Sum of partial[0..FEATURE_WG_SIZE) into partial[0], every invocation taking part.
fn reduce_partial(lid: u32) {
    for (var s = FEATURE_WG_SIZE / 2u; s > 0u; s = s / 2u) {
        workgroupBarrier();
        if lid < s {
            partial[lid] = partial[lid] + partial[lid + s];
        }
    }
    workgroupBarrier();
}

// The cluster's weight Wₖ: the weight sum, or the count.
fn cluster_weight(c: u32) -> f32 {
    if params.weighted == 1u {
        return sq_pairs[2u * c + 1u];
    }
    return f32(counts[c]);
}

@compute @workgroup_size(FEATURE_WG_SIZE)
fn advance_clusters(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let c = workgroup_index(wid, params.grid_x);
    // Uniform per workgroup: the overhang returns whole, before any barrier.
    if c >= params.k {
        return;
    }
    let d = params.d;
    let row = c * d;
    let w = cluster_weight(c);
    // Not `w <= 0`: a NaN weight is empty too, as the host loop decides.
    let empty = !(w > 0.0);
    // The next row's length, for the cosine metric (zero otherwise, and unused).
    var norm_sq = 0.0;
    if params.spherical == 1u && !empty {
        for (var j = lid; j < d; j += FEATURE_WG_SIZE) {
            let v = centroids[row + j] + sums[row + j] / w;
            norm_sq += v * v;
        }
    }
    partial[lid] = norm_sq;
    reduce_partial(lid);
    let norm = sqrt(partial[0]);
    workgroupBarrier();
    // A row of zeros (or an overflow) keeps the centroid, as the host loop does.
    let unit = norm > 0.0 && norm <= F32_MAX;
    var shift = 0.0;
    for (var j = lid; j < d; j += FEATURE_WG_SIZE) {
        let old = centroids[row + j];
        var v = old;
        if !empty {
            v = old + sums[row + j] / w;
            if params.spherical == 1u {
                v = select(old, v / norm, unit);
            }
        }
        next[row + j] = v;
        let step = v - old;
        shift += step * step;
    }
    partial[lid] = shift;
    reduce_partial(lid);
    if lid == 0u {
        cluster_shift[c] = partial[0];
        cluster_empty[c] = select(0u, 1u, empty);
    }
}

@compute @workgroup_size(ADVANCE_WG_SIZE)
fn advance_decide(@builtin(local_invocation_index) lid: u32) {
    var total = 0.0;
    var any_empty = 0u;
    for (var c = lid; c < params.k; c += ADVANCE_WG_SIZE) {
        total += cluster_shift[c];
        any_empty = max(any_empty, cluster_empty[c]);
    }
    decide_sum[lid] = total;
    decide_any[lid] = any_empty;
    for (var s = ADVANCE_WG_SIZE / 2u; s > 0u; s = s / 2u) {
        workgroupBarrier();
        if lid < s {
            decide_sum[lid] = decide_sum[lid] + decide_sum[lid + s];
            decide_any[lid] = max(decide_any[lid], decide_any[lid + s]);
        }
    }
    workgroupBarrier();
    if lid != 0u {
        return;
    }
    let shift = decide_sum[0];
    var state = STATE_MOVED;
    if status[0] != 0u {
        state = STATE_IDLE;
    } else if params.check_changed == 1u && changed[0] == 0u {
        state = STATE_UNCHANGED;
    } else if decide_any[0] != 0u {
        state = STATE_EMPTY;
    } else if shift <= params.tol {
        state = STATE_CONVERGED;
    }
    if state != STATE_MOVED && state != STATE_IDLE {
        status[0] = 1u;
    }
    status[1] = state;
    status[2] = bitcast<u32>(shift);
    status[3] = changed[0];
}

@compute @workgroup_size(ROW_WG_SIZE)
fn advance_commit(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let i = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    let state = status[1];
    if i >= params.k * params.d || (state != STATE_MOVED && state != STATE_CONVERGED) {
        return;
    }
    previous[i] = centroids_out[i];
    centroids_out[i] = next[i];
}
