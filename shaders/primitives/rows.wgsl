// Row utilities over a chunk of the data: gathering selected rows and finding non-finite values.
//
// Host wrapper: src/kernels/primitives/rows.rs.
//
// gather_rows copies rows on the device (k-means++ candidates, random init, empty-cluster
// repair) so a caller's buffer needs only STORAGE usage, never COPY_SRC.
// pad_rows copies rows into rows of `stride` values, zero after the d-th, so that kernels
// reading them as vec4s (the uniform slices of affinity.wgsl) find every row on a vec4
// boundary.
// find_non_finite validates data that never passed through the host (GpuMatrix::from_buffer).
// normalize_rows puts rows on the unit sphere for spherical (cosine) K-Means.
// max_abs and scale_rows bring data of extreme magnitude into f32's comfortable range: the
// largest |value|, then a copy times a power of two (exact), so that squares and products
// neither overflow nor underflow.
//
// @checked: gather_rows reads its row numbers from a buffer (`indices`), which callers fill

#import constants
#import grid

// Twin: RowsParams in src/kernels/primitives/rows.rs.
struct RowsParams {
    n_rows: u32,    // rows in this chunk
    x_offset: u32,  // index of the chunk's first value inside the bound range of x
    d: u32,
    n_indices: u32, // gather: number of (source row, destination row) pairs
    grid_x: u32,
    row_base: u32,  // normalize: global index of the chunk's first row
    scale: f32,     // scale_rows: the factor (a power of two)
    stride: u32,    // pad_rows: values per output row (>= d)
}

@group(0) @binding(0) var<uniform> params: RowsParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
// (row within the chunk, row within `gathered`)
@group(0) @binding(2) var<storage, read> indices: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> gathered: array<f32>;
@group(0) @binding(4) var<storage, read_write> first_non_finite: atomic<u32>;
@group(0) @binding(5) var<storage, read_write> normalized: array<f32>;
@group(0) @binding(6) var<storage, read_write> first_zero_row: atomic<u32>;
// The largest |value| seen, as its bits: for values ≥ 0 the bits order as the values do.
@group(0) @binding(7) var<storage, read_write> max_abs_bits: atomic<u32>;
@group(0) @binding(8) var<storage, read_write> scaled: array<f32>;

@compute @workgroup_size(ROW_WG_SIZE)
fn gather_rows(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let e = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    let i = e / params.d;
    if i >= params.n_indices {
        return;
    }
    let j = e % params.d;
    let pair = indices[i];
    gathered[pair.y * params.d + j] = x[params.x_offset + pair.x * params.d + j];
}

// One invocation per output value: gathered[i][j] = x[i][j] for j < d, else 0.
@compute @workgroup_size(ROW_WG_SIZE)
fn pad_rows(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let e = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    let i = e / params.stride;
    if i >= params.n_rows {
        return;
    }
    let j = e % params.stride;
    var v = 0.0;
    if j < params.d {
        v = x[params.x_offset + i * params.d + j];
    }
    gathered[e] = v;
}

// Records the smallest flat index (within the chunk) holding a NaN or infinity.
@compute @workgroup_size(ROW_WG_SIZE)
fn find_non_finite(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let e = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if e >= params.n_rows * params.d {
        return;
    }
    // WGSL has no isNan/isInf: an all-ones exponent means NaN or ±inf.
    let bits = bitcast<u32>(x[params.x_offset + e]);
    if (bits & 0x7f800000u) == 0x7f800000u {
        atomicMin(&first_non_finite, e);
    }
}

// One row per invocation: x / ‖x‖. The row is scaled by its largest magnitude first, so
// that squaring neither underflows (tiny rows) nor overflows (huge ones). A zero row has no
// direction: it is written as zeros and the smallest such global row is recorded.
@compute @workgroup_size(ROW_WG_SIZE)
fn normalize_rows(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let i = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if i >= params.n_rows {
        return;
    }
    let base = params.x_offset + i * params.d;
    let out = i * params.d;
    var largest = 0.0;
    for (var j = 0u; j < params.d; j++) {
        largest = max(largest, abs(x[base + j]));
    }
    if largest == 0.0 {
        atomicMin(&first_zero_row, params.row_base + i);
        for (var j = 0u; j < params.d; j++) {
            normalized[out + j] = 0.0;
        }
        return;
    }
    var sum_sq = 0.0;
    for (var j = 0u; j < params.d; j++) {
        let v = x[base + j] / largest;
        sum_sq = fma(v, v, sum_sq);
    }
    let norm = sqrt(sum_sq);
    for (var j = 0u; j < params.d; j++) {
        normalized[out + j] = x[base + j] / largest / norm;
    }
}

// The largest |value| of the chunk (finite data: the bits of |x| order as the values), one
// atomic per workgroup after a reduction in workgroup memory.
var<workgroup> wg_max: array<u32, ROW_WG_SIZE>;

@compute @workgroup_size(ROW_WG_SIZE)
fn max_abs(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let e = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    var bits = 0u;
    if e < params.n_rows * params.d {
        bits = bitcast<u32>(abs(x[params.x_offset + e]));
    }
    wg_max[lid] = bits;
    workgroupBarrier();
    for (var step = ROW_WG_SIZE / 2u; step > 0u; step = step / 2u) {
        if lid < step {
            wg_max[lid] = max(wg_max[lid], wg_max[lid + step]);
        }
        workgroupBarrier();
    }
    if lid == 0u && wg_max[0] > 0u {
        atomicMax(&max_abs_bits, wg_max[0]);
    }
}

// scaled = x · scale, value by value (scale a power of two: exact unless it leaves f32).
@compute @workgroup_size(ROW_WG_SIZE)
fn scale_rows(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let e = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if e >= params.n_rows * params.d {
        return;
    }
    scaled[e] = x[params.x_offset + e] * params.scale;
}
