// The centroid side of the assignment's GEMM form, once per pass: the shift s (the mean of the
// centroids) and c′ = c − s with its squared norm and slack (assign/shared/params.wgsl holds
// the contract; host: src/kernels/assign/prepare.rs).
//
// @trusted: every index is a centroid below k or a feature below 4·d4, in buffers sized K x D and
//   K·d4 + K + d4 vec4s by the host

#import constants
#import grid
#import assign/params

// s_j: the mean of the centroids' feature j (summed in order of k), at prepared[shift_base()].
@compute @workgroup_size(ROW_WG_SIZE)
fn centroid_shift(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let j = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if j >= 4u * params.d4 {
        return;
    }
    var s = 0.0;
    if j < params.d {
        for (var c = 0u; c < params.k; c++) {
            s += centroids[c * params.d + j];
        }
        s /= f32(params.k);
    }
    prepared[shift_base() + j / 4u][j % 4u] = s;
}

// c′ = c − s for centroid c (zeros past D), its squared norm (one fma chain over j) and its
// slack β‖c′‖².
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
    for (var q = 0u; q < params.d4; q++) {
        let s = prepared[shift_base() + q];
        var v = vec4<f32>();
        for (var t = 0u; t < 4u; t++) {
            let j = 4u * q + t;
            if j < params.d {
                v[t] = centroids[c * params.d + j] - s[t];
                norm = fma(v[t], v[t], norm);
            }
        }
        prepared[c * params.d4 + q] = v;
    }
    prepared[norms_base() + c] = vec4<f32>(norm, params.beta * norm, 0.0, 0.0);
}
