// Greedy k-means++ seeding on the device: D² sampling, the candidates' potentials and the
// running minimum squared distances, recorded for all K steps with no readback between them.
//
// Host wrapper: src/kernels/centroids/seeding.rs.
//
// One step (the host records K − 1 of them back to back):
//   1. kmeanspp_sample (one workgroup): an inclusive scan of the per-block sums of w·D² and,
//      for each of the T local trials, the block that u_t·Σw·D² falls in (u_t uniform in
//      [0, 1), drawn on the host in advance from the fit's generator, in the reference's
//      order) and the remainder inside it; a uniform row when every row sits on a centre;
//   2. kmeanspp_gather_candidates (per chunk, one workgroup per trial): the row of the block
//      whose running sum of w·D² passes the remainder (scikit-learn's searchsorted), copied
//      into the candidates;
//   3. kmeanspp_trial_potentials (per chunk): per block of PP_ROWS rows and trial t, the sum
//      of w·min(D², ‖x − c_t‖²), the potential candidate t would leave; folded over blocks by
//      sum_partial_columns_f32 (reduce.wgsl);
//   4. kmeanspp_update_min_distance (per chunk): the candidate with the smallest potential
//      (the earliest among equals) becomes the centre: D² ← min(D², ‖x − c‖²), the block sums
//      of w·D² for the next step's draw, and the chosen row recorded.
// Steps 3 and 4 read each row once for all T candidates: a workgroup stages PP_ROWS rows x
// PP_TILE_D features of x with coalesced loads (consecutive invocations read consecutive
// features) into a padded tile (stride PP_TILE_D + 1, so the invocations reading one
// feature of their own rows hit distinct banks) and the candidates' slice beside it.
// ‖x − c‖² sums (x_j − c_j)² over j in order with one fma each, as the reference does; every
// sum has a fixed order (blocks in a tree of fixed shape), so the same draws give the same
// seeds.
//
// @checked: candidates are gathered by the row numbers the sampling wrote into a buffer

#import constants
#import grid

// Rows per workgroup and per block sum: one row per invocation.
const PP_ROWS: u32 = 64u;
// Features staged per tile.
const PP_TILE_D: u32 = 32u;
// Candidates one dispatch scores; the host splits more trials over several dispatches.
const PP_MAX_TRIALS: u32 = 16u;
// Invocations of the one-workgroup sampling kernel.
const PP_SCAN_SIZE: u32 = 256u;
// A sample that names a row directly (every row sits on a centre: uniform draw).
const PP_NO_BLOCK: u32 = 0xffffffffu;

// Twin: KmeansPpParams in src/kernels/centroids/seeding.rs.
struct KmeansPpParams {
    n_rows: u32,           // rows in this chunk
    x_offset: u32,         // index of the chunk's first value inside the bound range of x
    d: u32,
    n_candidates: u32,     // candidates this dispatch scores (≤ PP_MAX_TRIALS)
    first_candidate: u32,  // trials: the first of them, and the block-sum column of it
    n_columns: u32,        // trials: columns of block_sums (all trials of the step)
    block_offset: u32,     // global index of this chunk's first block
    grid_x: u32,
    first: u32,            // update: 1 = first centre (candidate 0): overwrite D²
    weighted: u32,         // 1: rows have weights in `weights`; 0: every weight is 1
    row_start: u32,        // global index of the chunk's first row
    step: u32,             // update: index into `chosen`; sample: first draw is step·T
    n_blocks: u32,         // sample: blocks of all chunks
    n_total: u32,          // sample: rows of all chunks
    n_trials: u32,         // sample, gather, update: trials of the step (T)
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: KmeansPpParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
// T x D candidates of the current step.
@group(0) @binding(2) var<storage, read> candidates: array<f32>;
@group(0) @binding(3) var<storage, read_write> min_sq_dist: array<f32>;
// trials: [block][column]; update: [block] (w·D² per block).
@group(0) @binding(4) var<storage, read_write> block_sums: array<f32>;
@group(0) @binding(5) var<storage, read> weights: array<f32>;
// update: the T potentials of the step's candidates.
@group(0) @binding(6) var<storage, read> potentials: array<f32>;
// Per trial: [3t] block (or PP_NO_BLOCK), [3t + 1] remainder (f32 bits) or uniform row,
// [3t + 2] the global row drawn (written by the gather).
@group(0) @binding(7) var<storage, read_write> samples: array<u32>;
// The global row of every chosen centre, by step.
@group(0) @binding(8) var<storage, read_write> chosen: array<u32>;
// sample: the uniform draws, T per step.
@group(0) @binding(9) var<storage, read> draws: array<f32>;
// sample: the per-block sums of w·D² (update's block_sums).
@group(0) @binding(10) var<storage, read> d2_block_sums: array<f32>;
// gather: the step's candidates, written.
@group(0) @binding(11) var<storage, read_write> candidates_out: array<f32>;

const X_STRIDE: u32 = PP_TILE_D + 1u;
var<workgroup> x_tile: array<f32, 2112>;  // PP_ROWS x X_STRIDE; then the block reduction
var<workgroup> c_tile: array<f32, 512>;   // PP_MAX_TRIALS x PP_TILE_D
var<workgroup> scan: array<f32, PP_SCAN_SIZE>;
var<workgroup> picked: u32;

fn weight_of(row: u32) -> f32 {
    if params.weighted != 0u {
        return weights[row];
    }
    return 1.0;
}

// ‖x_r − c_t‖² for this invocation's row r and candidates t = first .. first + count of
// `candidates` (entries past count stay 0). Every invocation of the workgroup calls it.
fn sq_distances(lid: u32, row0: u32, first: u32, count: u32) -> array<f32, PP_MAX_TRIALS> {
    var acc: array<f32, PP_MAX_TRIALS>;
    for (var f0 = 0u; f0 < params.d; f0 += PP_TILE_D) {
        for (var i = lid; i < PP_ROWS * PP_TILE_D; i += PP_ROWS) {
            let r = i / PP_TILE_D;
            let f = i % PP_TILE_D;
            var v = 0.0;
            if row0 + r < params.n_rows && f0 + f < params.d {
                v = x[params.x_offset + (row0 + r) * params.d + f0 + f];
            }
            x_tile[r * X_STRIDE + f] = v;
        }
        for (var i = lid; i < count * PP_TILE_D; i += PP_ROWS) {
            let t = i / PP_TILE_D;
            let f = i % PP_TILE_D;
            var v = 0.0;
            if f0 + f < params.d {
                v = candidates[(first + t) * params.d + f0 + f];
            }
            c_tile[t * PP_TILE_D + f] = v;
        }
        workgroupBarrier();
        let width = min(PP_TILE_D, params.d - f0);
        for (var f = 0u; f < width; f++) {
            let xv = x_tile[lid * X_STRIDE + f];
            for (var t = 0u; t < PP_MAX_TRIALS; t++) {
                if t < count {
                    let diff = xv - c_tile[t * PP_TILE_D + f];
                    acc[t] = fma(diff, diff, acc[t]);
                }
            }
        }
        workgroupBarrier();
    }
    return acc;
}

// Sums `v[t]` over the workgroup's invocations for t < count, in a tree of fixed shape;
// the result for t is in x_tile[t * PP_ROWS].
fn block_sum(lid: u32, v: array<f32, PP_MAX_TRIALS>, count: u32) {
    // A constant trip count with the test inside: unrolled, `v` is indexed by constants and
    // stays in registers (a run-time bound would index it at run time, in local memory).
    for (var t = 0u; t < PP_MAX_TRIALS; t++) {
        if t < count {
            x_tile[t * PP_ROWS + lid] = v[t];
        }
    }
    workgroupBarrier();
    for (var stride = PP_ROWS / 2u; stride > 0u; stride /= 2u) {
        if lid < stride {
            for (var t = 0u; t < count; t++) {
                x_tile[t * PP_ROWS + lid] += x_tile[t * PP_ROWS + lid + stride];
            }
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(PP_ROWS)
fn kmeanspp_trial_potentials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let block = workgroup_index(wid, params.grid_x);
    let row0 = block * PP_ROWS;
    if row0 >= params.n_rows {
        return;
    }
    let count = params.n_candidates;
    let dist = sq_distances(lid, row0, params.first_candidate, count);
    let row = row0 + lid;
    var v: array<f32, PP_MAX_TRIALS>;
    if row < params.n_rows {
        let w = weight_of(row);
        let d2 = min_sq_dist[row];
        for (var t = 0u; t < PP_MAX_TRIALS; t++) {
            v[t] = w * min(d2, dist[t]);
        }
    }
    block_sum(lid, v, count);
    if lid < count {
        let column = params.first_candidate + lid;
        block_sums[(params.block_offset + block) * params.n_columns + column] =
            x_tile[lid * PP_ROWS];
    }
}

// The trial with the smallest potential, the earliest among equals.
fn best_trial() -> u32 {
    var best = 0u;
    for (var t = 1u; t < params.n_trials; t++) {
        if potentials[t] < potentials[best] {
            best = t;
        }
    }
    return best;
}

@compute @workgroup_size(PP_ROWS)
fn kmeanspp_update_min_distance(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let block = workgroup_index(wid, params.grid_x);
    let row0 = block * PP_ROWS;
    if row0 >= params.n_rows {
        return;
    }
    var centre = 0u;
    if params.first == 0u {
        centre = best_trial();
    }
    if block == 0u && lid == 0u && params.block_offset == 0u && params.first == 0u {
        chosen[params.step] = samples[3u * centre + 2u];
    }
    let dist = sq_distances(lid, row0, centre, 1u);
    let row = row0 + lid;
    var v: array<f32, PP_MAX_TRIALS>;
    if row < params.n_rows {
        var d2 = dist[0];
        if params.first == 0u {
            d2 = min(d2, min_sq_dist[row]);
        }
        min_sq_dist[row] = d2;
        v[0] = weight_of(row) * d2;
    }
    block_sum(lid, v, 1u);
    if lid == 0u {
        block_sums[params.block_offset + block] = x_tile[0];
    }
}

@compute @workgroup_size(PP_SCAN_SIZE)
fn kmeanspp_sample(@builtin(local_invocation_index) lid: u32) {
    // Each invocation sums a contiguous run of blocks, in order.
    let per = (params.n_blocks + PP_SCAN_SIZE - 1u) / PP_SCAN_SIZE;
    let begin = min(lid * per, params.n_blocks);
    let end = min(begin + per, params.n_blocks);
    var own = 0.0;
    for (var b = begin; b < end; b++) {
        own += d2_block_sums[b];
    }
    scan[lid] = own;
    workgroupBarrier();
    // Inclusive scan (Hillis–Steele) of the runs' sums.
    for (var offset = 1u; offset < PP_SCAN_SIZE; offset *= 2u) {
        var add = 0.0;
        if lid >= offset {
            add = scan[lid - offset];
        }
        workgroupBarrier();
        scan[lid] += add;
        workgroupBarrier();
    }
    if lid >= params.n_trials {
        return;
    }
    let total = scan[PP_SCAN_SIZE - 1u];
    let u = draws[params.step * params.n_trials + lid];
    if !(total > 0.0) {
        // Every row sits on a centre: D² sampling is undefined; any row will do.
        let row = min(u32(u * f32(params.n_total)), params.n_total - 1u);
        samples[3u * lid] = PP_NO_BLOCK;
        samples[3u * lid + 1u] = row;
        return;
    }
    let r = u * total;
    // The first run whose running sum passes r, then the first block in it.
    var run = PP_SCAN_SIZE;
    for (var l = 0u; l < PP_SCAN_SIZE; l++) {
        if scan[l] > r {
            run = l;
            break;
        }
    }
    var block = PP_NO_BLOCK;
    var rest = 0.0;
    if run < PP_SCAN_SIZE {
        var acc = 0.0;
        if run > 0u {
            acc = scan[run - 1u];
        }
        let first = min(run * per, params.n_blocks);
        let last = min(first + per, params.n_blocks);
        for (var b = first; b < last; b++) {
            let s = d2_block_sums[b];
            if acc + s > r {
                block = b;
                rest = r - acc;
                break;
            }
            acc += s;
        }
    }
    if block == PP_NO_BLOCK {
        // Rounding put r at or past the total: the last block that carries weight, past
        // its end (the gather then takes its last row of positive weight).
        block = 0u;
        for (var b = params.n_blocks; b > 0u; b--) {
            if d2_block_sums[b - 1u] > 0.0 {
                block = b - 1u;
                break;
            }
        }
        rest = F32_MAX;
    }
    samples[3u * lid] = block;
    samples[3u * lid + 1u] = bitcast<u32>(rest);
}

@compute @workgroup_size(PP_ROWS)
fn kmeanspp_gather_candidates(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let t = wid.x;
    if lid == 0u {
        picked = PP_NO_BLOCK;
        let block = samples[3u * t];
        if block == PP_NO_BLOCK {
            let row = samples[3u * t + 1u];
            if row >= params.row_start && row - params.row_start < params.n_rows {
                picked = row - params.row_start;
            }
        } else if block >= params.block_offset
            && (block - params.block_offset) * PP_ROWS < params.n_rows {
            // The first row whose running sum of w·D² passes the remainder; rounding
            // past the block's end takes its last row of positive weight.
            let first = (block - params.block_offset) * PP_ROWS;
            let last = min(first + PP_ROWS, params.n_rows);
            let rest = bitcast<f32>(samples[3u * t + 1u]);
            var acc = 0.0;
            var fallback = first;
            for (var row = first; row < last; row++) {
                let v = weight_of(row) * min_sq_dist[row];
                if v > 0.0 {
                    fallback = row;
                    if acc + v > rest {
                        picked = row;
                        break;
                    }
                }
                acc += v;
            }
            if picked == PP_NO_BLOCK {
                picked = fallback;
            }
        }
        if picked != PP_NO_BLOCK {
            samples[3u * t + 2u] = params.row_start + picked;
        }
    }
    let local = workgroupUniformLoad(&picked);
    if local == PP_NO_BLOCK {
        return;
    }
    let src = params.x_offset + local * params.d;
    for (var j = lid; j < params.d; j += PP_ROWS) {
        candidates_out[t * params.d + j] = x[src + j];
    }
}
