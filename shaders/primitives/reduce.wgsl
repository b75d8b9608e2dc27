// Reductions with a fixed summation order (deterministic, no float atomics).
//
// Host wrapper: src/kernels/primitives/reduce.rs.
//
// column_moments: per block of `block_rows` rows and per column j, Σ (x − s_j) and
// Σ (x − s_j)² with a shift s (a row of the data), so the f32 partials hold deviations, not raw
// magnitudes; the host combines the blocks in f64 into means and variances.
//
// mean_of_partial_columns: shift_j + (Σ_b partials[b][j]) / n, the blocks folded in order with
// Kahan compensation as below: a column mean to centre later products on, in the submission
// that summed the blocks (the host keeps its own f64 mean and corrects for the difference).
//
// sum_partial_columns_*: a row-major [n_blocks][n_cols] matrix of per-block partial sums is
// folded into n_cols totals, one invocation per column walking the blocks in order, eight
// blocks' loads issued before they are added. The f32 version uses Kahan compensation so the
// error does not grow with the number of blocks.
//
// @trusted: every index is a block, column or row the dispatch's parameters bound (guarded by
//   n_blocks, n_cols, n_rows), in buffers the host sizes from the same numbers

#import constants
#import grid

// Twin: ColumnSumParams in src/kernels/primitives/reduce.rs.
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

@compute @workgroup_size(ROW_WG_SIZE)
fn sum_partial_columns_f32(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let col = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if col >= params.n_cols {
        return;
    }
    totals_f32[col] = fold_column(params.n_blocks, params.n_cols, col);
}

// One Kahan step: `v` added to the running (sum, comp).
fn kahan_add(acc: vec2<f32>, v: f32) -> vec2<f32> {
    let y = v - acc.y;
    let t = acc.x + y;
    return vec2<f32>(t, (t - acc.x) - y);
}

// Σ_b partials_f32[b][col] over `n_blocks` blocks of `n_cols` columns, blocks in order,
// Kahan-compensated. The blocks are loaded eight at a time before they are added (in the same
// order, so the same bits): a walk of thousands of blocks waited on one load's latency per
// block (0.42 ms a call on an H200 at 1M x 256, k = 10, where the matrix is 10 MB).
fn fold_column(n_blocks: u32, n_cols: u32, col: u32) -> f32 {
    var acc = vec2<f32>();
    var b = 0u;
    for (; b + 8u <= n_blocks; b += 8u) {
        let at = b * n_cols + col;
        let lo = vec4<f32>(
            partials_f32[at],
            partials_f32[at + n_cols],
            partials_f32[at + 2u * n_cols],
            partials_f32[at + 3u * n_cols],
        );
        let hi = vec4<f32>(
            partials_f32[at + 4u * n_cols],
            partials_f32[at + 5u * n_cols],
            partials_f32[at + 6u * n_cols],
            partials_f32[at + 7u * n_cols],
        );
        acc = kahan_add(acc, lo.x);
        acc = kahan_add(acc, lo.y);
        acc = kahan_add(acc, lo.z);
        acc = kahan_add(acc, lo.w);
        acc = kahan_add(acc, hi.x);
        acc = kahan_add(acc, hi.y);
        acc = kahan_add(acc, hi.z);
        acc = kahan_add(acc, hi.w);
    }
    for (; b < n_blocks; b++) {
        acc = kahan_add(acc, partials_f32[b * n_cols + col]);
    }
    return acc.x;
}

@compute @workgroup_size(ROW_WG_SIZE)
fn sum_partial_columns_u32(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let col = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if col >= params.n_cols {
        return;
    }
    // Eight blocks' loads in flight at a time, as fold_column (integer sums: any order).
    let n = params.n_cols;
    var sum = vec4<u32>();
    var b = 0u;
    for (; b + 8u <= params.n_blocks; b += 8u) {
        let at = b * n + col;
        sum += vec4<u32>(
            partials_u32[at],
            partials_u32[at + n],
            partials_u32[at + 2u * n],
            partials_u32[at + 3u * n],
        );
        sum += vec4<u32>(
            partials_u32[at + 4u * n],
            partials_u32[at + 5u * n],
            partials_u32[at + 6u * n],
            partials_u32[at + 7u * n],
        );
    }
    for (; b < params.n_blocks; b++) {
        sum.x += partials_u32[b * n + col];
    }
    totals_u32[col] = sum.x + sum.y + sum.z + sum.w;
}

// Twin: MomentParams in src/kernels/primitives/reduce.rs.
struct MomentParams {
    n_rows: u32,       // rows in this chunk
    x_offset: u32,     // index of the chunk's first value inside the bound range of x
    d: u32,
    block_rows: u32,
    block_offset: u32, // global index of this chunk's first block
    n_col_groups: u32, // ceil(d / FEATURE_WG_SIZE)
    grid_x: u32,
    _pad0: u32,
}

@group(0) @binding(5) var<uniform> moment_params: MomentParams;
@group(0) @binding(6) var<storage, read> x: array<f32>;
@group(0) @binding(7) var<storage, read> shift: array<f32>;
// [block][column]
@group(0) @binding(8) var<storage, read_write> partial_sum: array<f32>;
@group(0) @binding(9) var<storage, read_write> partial_sum_sq: array<f32>;

@compute @workgroup_size(FEATURE_WG_SIZE)
fn column_moments(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = moment_params;
    let g = workgroup_index(wid, p.grid_x);
    let block = g / p.n_col_groups;
    let j = (g % p.n_col_groups) * FEATURE_WG_SIZE + lid;
    let first = block * p.block_rows;
    if j >= p.d || first >= p.n_rows {
        return;
    }
    let last = min(first + p.block_rows, p.n_rows);
    var s1 = 0.0;
    var s2 = 0.0;
    for (var r = first; r < last; r++) {
        let v = x[p.x_offset + r * p.d + j] - shift[j];
        s1 += v;
        s2 = fma(v, v, s2);
    }
    let out = (p.block_offset + block) * p.d + j;
    partial_sum[out] = s1;
    partial_sum_sq[out] = s2;
}

// Twin: MeanParams in src/kernels/primitives/reduce.rs.
struct MeanParams {
    n_blocks: u32,
    n_cols: u32,
    grid_x: u32,
    inv_n: f32,        // 1 / rows summed
}

@group(0) @binding(10) var<uniform> mean_params: MeanParams;
@group(0) @binding(11) var<storage, read_write> means: array<f32>;

@compute @workgroup_size(ROW_WG_SIZE)
fn mean_of_partial_columns(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = mean_params;
    let col = invocation_index(wid, p.grid_x, ROW_WG_SIZE, lid);
    if col >= p.n_cols {
        return;
    }
    means[col] = shift[col] + fold_column(p.n_blocks, p.n_cols, col) * p.inv_n;
}
