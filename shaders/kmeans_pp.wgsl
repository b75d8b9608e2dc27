// Greedy k-means++ seeding: running minimum squared distances and candidate potentials.
//
// Host wrapper: src/kernels/kmeans_pp.rs.
//
// Both kernels give one block of BLOCK_ROWS consecutive rows to each invocation, which sums
// over its rows in order (deterministic, no barriers), writing one partial per block:
//   - kmeanspp_update_min_distance: D(x)² ← min(D(x)², ‖x − c‖²) for the newly chosen
//     centre c, and the block sums of D² used for D²-sampling on the host;
//   - kmeanspp_trial_potentials: for each of the local-trial candidates t, the block sum of
//     min(D(x)², ‖x − c_t‖²), the potential the candidate would leave (scikit-learn's greedy
//     variant keeps the candidate with the smallest one).
// With sample weights (`weighted`) the block sums are of w·D² and w·min(D², ‖x − c_t‖²)
// (scikit-learn's weighted seeding); D² itself stays unweighted.
// The per-block partials are then folded by sum_partial_columns_f32 (reduce.wgsl).

#import constants
#import grid

const BLOCK_ROWS: u32 = 32u;

// Twin: KmeansPpParams in src/kernels/kmeans_pp.rs.
struct KmeansPpParams {
    n_rows: u32,       // rows in this chunk
    x_offset: u32,     // index of the chunk's first value inside the bound range of x
    d: u32,
    n_candidates: u32, // rows of `candidates` (1 for the update)
    block_offset: u32, // global index of this chunk's first block
    grid_x: u32,
    first: u32,        // update: 1 = no previous centre, overwrite D²
    weighted: u32,     // 1: rows have weights in `weights`; 0: every weight is 1
}

@group(0) @binding(0) var<uniform> params: KmeansPpParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> candidates: array<f32>;
@group(0) @binding(3) var<storage, read_write> min_sq_dist: array<f32>;
// update: [block]; trials: [block][candidate]
@group(0) @binding(4) var<storage, read_write> block_sums: array<f32>;
@group(0) @binding(5) var<storage, read> weights: array<f32>;

fn weight_of(row: u32) -> f32 {
    if params.weighted != 0u {
        return weights[row];
    }
    return 1.0;
}

fn sq_distance_to_candidate(row: u32, t: u32) -> f32 {
    let base = params.x_offset + row * params.d;
    let cbase = t * params.d;
    var acc = 0.0;
    for (var j = 0u; j < params.d; j++) {
        let diff = x[base + j] - candidates[cbase + j];
        acc = fma(diff, diff, acc);
    }
    return acc;
}

@compute @workgroup_size(ROW_WG_SIZE)
fn kmeanspp_update_min_distance(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let block = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    let first = block * BLOCK_ROWS;
    if first >= params.n_rows {
        return;
    }
    let last = min(first + BLOCK_ROWS, params.n_rows);
    var sum = 0.0;
    for (var row = first; row < last; row++) {
        var v = sq_distance_to_candidate(row, 0u);
        if params.first == 0u {
            v = min(v, min_sq_dist[row]);
        }
        min_sq_dist[row] = v;
        sum += weight_of(row) * v;
    }
    block_sums[params.block_offset + block] = sum;
}

@compute @workgroup_size(ROW_WG_SIZE)
fn kmeanspp_trial_potentials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let block = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    let first = block * BLOCK_ROWS;
    if first >= params.n_rows {
        return;
    }
    let last = min(first + BLOCK_ROWS, params.n_rows);
    for (var t = 0u; t < params.n_candidates; t++) {
        var sum = 0.0;
        for (var row = first; row < last; row++) {
            sum += weight_of(row) * min(min_sq_dist[row], sq_distance_to_candidate(row, t));
        }
        block_sums[(params.block_offset + block) * params.n_candidates + t] = sum;
    }
}
