// The centroid side of the assignment's GEMM form, once per pass: the shift s (the mean of the
// centroids) and c′ = c − s with its squared norm and slack (assign/shared/params.wgsl holds
// the contract; host: src/kernels/assign/prepare.rs).
//
// @trusted: every index is a centroid below k or a feature below 4·d4, in buffers sized K x D and
//   K·d4 + K + d4 vec4s by the host, or an invocation's slot of the workgroup's partial sums

#import constants
#import grid
#import assign/params

// Features of one workgroup of centroid_shift, and the ways each feature's sum over the
// centroids is split: SHIFT_FEATURES · SHIFT_SPLITS invocations.
const SHIFT_FEATURES: u32 = 32u;
const SHIFT_SPLITS: u32 = 8u;

var<workgroup> shift_partial: array<f32, SHIFT_FEATURES * SHIFT_SPLITS>;

// s_j: the mean of the centroids' feature j, at prepared[shift_base()]. Invocation
// (split, f) of a workgroup sums centroids split, split + SHIFT_SPLITS, ... of feature f (32
// consecutive features a workgroup: coalesced rows), and the first split adds the SHIFT_SPLITS
// partial sums in order: k/8 dependent steps a thread where one thread per feature walked all
// k (0.43 ms a call on an H200 at k = 4096, d = 256). Any fixed order suits s: the GEMM form's
// bound covers its rounding and the labels and distances do not depend on it (module
// docs of assign/shared/params.wgsl); the order is fixed, so the same bits every time.
@compute @workgroup_size(SHIFT_FEATURES * SHIFT_SPLITS)
fn centroid_shift(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let f = lid % SHIFT_FEATURES;
    let split = lid / SHIFT_FEATURES;
    let j = workgroup_index(wid, params.grid_x) * SHIFT_FEATURES + f;
    var s = 0.0;
    if j < params.d {
        for (var c = split; c < params.k; c += SHIFT_SPLITS) {
            s += centroids[c * params.d + j];
        }
    }
    shift_partial[lid] = s;
    workgroupBarrier();
    if split == 0u && j < 4u * params.d4 {
        var total = 0.0;
        for (var t = 0u; t < SHIFT_SPLITS; t++) {
            total += shift_partial[t * SHIFT_FEATURES + f];
        }
        // Zeros past D.
        prepared[shift_base() + j / 4u][j % 4u] = select(0.0, total / f32(params.k), j < params.d);
    }
}

// Features 4q .. 4q + 3 of centroid c, zeros past D (an index past the last centroid's last
// value reads that value instead, and the mask drops it).
fn centroid_features(c: u32, q: u32) -> vec4<f32> {
    let first = c * params.d + 4u * q;
    let last = params.k * params.d - 1u;
    let values = vec4<f32>(
        centroids[min(first, last)],
        centroids[min(first + 1u, last)],
        centroids[min(first + 2u, last)],
        centroids[min(first + 3u, last)],
    );
    return select(vec4<f32>(), values, 4u * q + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(params.d));
}

// c′ = c − s for centroid c (zeros past D), its squared norm (one fma chain over j) and its
// slack β‖c′‖². Two vec4s of features are loaded before they are summed: a walk that loaded
// each feature as it summed it waited on a load per four features (48 µs a call on an H200 at
// k = 256, d = 784). Past D both c and s are zeros and fma(0, 0, norm) = norm for the norm's
// values (+0 and up): the chain, and its bits, are those of the features below D alone.
@compute @workgroup_size(ROW_WG_SIZE)
fn centroid_prep(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let c = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if c >= params.k {
        return;
    }
    var norm = 0.0;
    var q = 0u;
    for (; q + 2u <= params.d4; q += 2u) {
        let v0 = centroid_features(c, q) - prepared[shift_base() + q];
        let v1 = centroid_features(c, q + 1u) - prepared[shift_base() + q + 1u];
        norm = fma(v0.x, v0.x, norm);
        norm = fma(v0.y, v0.y, norm);
        norm = fma(v0.z, v0.z, norm);
        norm = fma(v0.w, v0.w, norm);
        norm = fma(v1.x, v1.x, norm);
        norm = fma(v1.y, v1.y, norm);
        norm = fma(v1.z, v1.z, norm);
        norm = fma(v1.w, v1.w, norm);
        prepared[c * params.d4 + q] = v0;
        prepared[c * params.d4 + q + 1u] = v1;
    }
    if q < params.d4 {
        let v = centroid_features(c, q) - prepared[shift_base() + q];
        norm = fma(v.x, v.x, norm);
        norm = fma(v.y, v.y, norm);
        norm = fma(v.z, v.z, norm);
        norm = fma(v.w, v.w, norm);
        prepared[c * params.d4 + q] = v;
    }
    prepared[norms_base() + c] = vec4<f32>(norm, params.beta * norm, 0.0, 0.0);
}
