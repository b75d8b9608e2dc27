// Greedy k-means++ seeding: running minimum squared distances and candidate potentials.
//
// Host wrapper: src/kernels/kmeans_pp.rs.
//
// Both kernels give one row to each invocation and reduce over the workgroup with a fixed
// tree (deterministic), writing one partial per workgroup-block of WG_SIZE rows:
//   - kmeanspp_update_min_distance: D(x)² ← min(D(x)², ‖x − c‖²) for the newly chosen
//     centre c, and the block sums of D² used for D²-sampling on the host;
//   - kmeanspp_trial_potentials: for each of the local-trial candidates t, the block sum of
//     min(D(x)², ‖x − c_t‖²), the potential the candidate would leave (scikit-learn's greedy
//     variant keeps the candidate with the smallest one).
// WG_SIZE must be a power of two no larger than 256 (the scratch array).

override WG_SIZE: u32 = 64u;

// Twin: KmeansPpParams in src/kernels/kmeans_pp.rs.
struct KmeansPpParams {
    n_rows: u32,       // rows in this chunk
    x_offset: u32,     // index of the chunk's first value inside the bound range of x
    d: u32,
    n_candidates: u32, // rows of `candidates` (1 for the update)
    block_offset: u32, // global index of this chunk's first block
    grid_x: u32,
    first: u32,        // update: 1 = no previous centre, overwrite D²
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: KmeansPpParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> candidates: array<f32>;
@group(0) @binding(3) var<storage, read_write> min_sq_dist: array<f32>;
// update: [block]; trials: [block][candidate]
@group(0) @binding(4) var<storage, read_write> block_sums: array<f32>;

var<workgroup> scratch: array<f32, 256>;

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

// Sum of `v` over the workgroup (result valid in every invocation). Uniform control flow only.
fn workgroup_sum(v: f32, lid: u32) -> f32 {
    workgroupBarrier();
    scratch[lid] = v;
    workgroupBarrier();
    for (var stride = WG_SIZE / 2u; stride > 0u; stride = stride / 2u) {
        if lid < stride {
            scratch[lid] += scratch[lid + stride];
        }
        workgroupBarrier();
    }
    return scratch[0];
}

@compute @workgroup_size(WG_SIZE)
fn kmeanspp_update_min_distance(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let block = wid.y * params.grid_x + wid.x;
    let row = block * WG_SIZE + lid;
    var v = 0.0;
    if row < params.n_rows {
        v = sq_distance_to_candidate(row, 0u);
        if params.first == 0u {
            v = min(v, min_sq_dist[row]);
        }
        min_sq_dist[row] = v;
    }
    let s = workgroup_sum(v, lid);
    if lid == 0u {
        block_sums[params.block_offset + block] = s;
    }
}

@compute @workgroup_size(WG_SIZE)
fn kmeanspp_trial_potentials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let block = wid.y * params.grid_x + wid.x;
    let row = block * WG_SIZE + lid;
    let in_range = row < params.n_rows;
    var current = 0.0;
    if in_range {
        current = min_sq_dist[row];
    }
    for (var t = 0u; t < params.n_candidates; t++) {
        var v = 0.0;
        if in_range {
            v = min(current, sq_distance_to_candidate(row, t));
        }
        let s = workgroup_sum(v, lid);
        if lid == 0u {
            block_sums[(params.block_offset + block) * params.n_candidates + t] = s;
        }
    }
}
