// Reductions with a fixed summation order (deterministic, no float atomics).
//
// Host wrapper: src/kernels/reduce.rs.
//
// sum_partial_columns_*: a row-major [n_blocks][n_cols] matrix of per-block partial sums is
// folded into n_cols totals, one invocation per column walking the blocks in order. The f32
// version uses Kahan compensation so the error does not grow with the number of blocks.

override WG_SIZE: u32 = 64u;

// Twin: ColumnSumParams in src/kernels/reduce.rs.
struct ColumnSumParams {
    n_blocks: u32,
    n_cols: u32,
    grid_x: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: ColumnSumParams;
@group(0) @binding(1) var<storage, read> partials_f32: array<f32>;
@group(0) @binding(2) var<storage, read_write> totals_f32: array<f32>;
@group(0) @binding(3) var<storage, read> partials_u32: array<u32>;
@group(0) @binding(4) var<storage, read_write> totals_u32: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn sum_partial_columns_f32(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let col = (wid.y * params.grid_x + wid.x) * WG_SIZE + lid;
    if col >= params.n_cols {
        return;
    }
    var sum = 0.0;
    var comp = 0.0;
    for (var b = 0u; b < params.n_blocks; b++) {
        let y = partials_f32[b * params.n_cols + col] - comp;
        let t = sum + y;
        comp = (t - sum) - y;
        sum = t;
    }
    totals_f32[col] = sum;
}

@compute @workgroup_size(WG_SIZE)
fn sum_partial_columns_u32(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let col = (wid.y * params.grid_x + wid.x) * WG_SIZE + lid;
    if col >= params.n_cols {
        return;
    }
    var sum = 0u;
    for (var b = 0u; b < params.n_blocks; b++) {
        sum += partials_u32[b * params.n_cols + col];
    }
    totals_u32[col] = sum;
}
