// Row utilities over a chunk of the data: gathering selected rows and finding non-finite values.
//
// Host wrapper: src/kernels/rows.rs.
//
// gather_rows copies rows on the device (k-means++ candidates, random init, empty-cluster
// repair) so a caller's buffer needs only STORAGE usage, never COPY_SRC.
// find_non_finite validates data that never passed through the host (GpuMatrix::from_buffer).

#import constants
#import grid

// Twin: RowsParams in src/kernels/rows.rs.
struct RowsParams {
    n_rows: u32,    // rows in this chunk
    x_offset: u32,  // index of the chunk's first value inside the bound range of x
    d: u32,
    n_indices: u32, // gather: number of (source row, destination row) pairs
    grid_x: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: RowsParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
// (row within the chunk, row within `gathered`)
@group(0) @binding(2) var<storage, read> indices: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> gathered: array<f32>;
@group(0) @binding(4) var<storage, read_write> first_non_finite: atomic<u32>;

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
