// GPUs, few centroids (K <= SMALL_K): the nearest centroid in the difference form, the rows
// streamed through workgroup memory once, with the next piece's loads in flight while the
// current one is summed. Host: src/kernels/assign/stream.rs.
//
// It replaces assign_rows, which staged 64 rows a piece of 32 features at a time, then
// summed: while a workgroup summed, none of its loads were in flight, so the reads of X
// waited on memory latency piece after piece (85 GB/s on an H200 at Fashion-MNIST, k = 10);
// it also advanced SMALL_K = 16 chains whatever K was, indexed them with a run-time bound in
// its search, and counted every changed label with an atomic in global memory. Here:
// - each invocation holds its share of the next piece in registers (STREAM_QUADS vec4s of
//   rows, coalesced: eight consecutive invocations read one row's 128 bytes) and issues
//   those loads before summing the current piece, so a workgroup keeps 8 KiB of X in flight
//   while it computes (Little's law: ~24 KiB per SM covers the H200's latency at 4 TB/s, so
//   three resident workgroups suffice);
// - the staged piece is [row][vec4] with a vec4 of padding per row (a quarter warp reads 8
//   rows' vec4s in distinct banks) and the centroids' piece is [centroid][vec4], read as
//   broadcasts: per 4 features an invocation loads 1 + K vec4s and does 8K flops;
// - K is the override STREAM_K, and the distances are four vec4s, centroids 4g .. 4g + 3 in
//   the lanes of the g-th: every access names its vec4 by a constant, so they stay in
//   registers whether or not the driver unrolls a loop (an array indexed at run time would
//   live in local memory, each fma a load and a store there), and groups past K are skipped
//   (lanes past K in the last group are summed against zeros and never read);
// - changed labels are counted in workgroup memory, one global atomic per workgroup.
//
// Each distance is the fma chain over features 0 .. D − 1 in order that every variant sums
// (assign/shared/params.wgsl): features past D in the last piece are zeros in both the row
// and the centroid, and fma(0, 0, acc) = acc for every acc the chain can hold (+0 or more,
// inf, NaN), so the same bits.
//
// @trusted: rows below n_rows, features below d and centroids below STREAM_K <= k are guarded
//   before every load; workgroup arrays are indexed by constants and the invocation id

#import constants
#import grid
#import assign/params

// Rows per workgroup (one per invocation), vec4s of features per staged piece, the staged
// row's stride in vec4s, and the vec4s of centroids each invocation loads per piece.
const STREAM_WG: u32 = 64u;
const STREAM_QUADS: u32 = 8u;
const STREAM_STRIDE: u32 = STREAM_QUADS + 1u;
const STREAM_CENTROID_LOADS: u32 = SMALL_K * STREAM_QUADS / STREAM_WG;

// The centroids: K itself, 1 ..= SMALL_K (the host sets it).
override STREAM_K: u32 = SMALL_K;
// The four vec4 groups of distances hold SMALL_K centroids.
const_assert SMALL_K <= 16u;

var<workgroup> x_stage: array<vec4<f32>, STREAM_WG * STREAM_STRIDE>;
var<workgroup> c_stage: array<vec4<f32>, SMALL_K * STREAM_QUADS>;

// An invocation's share of one piece, loaded ahead: vec4 t of the rows is vec4 lid % QUADS of
// row lid / QUADS + t · (STREAM_WG / QUADS); vec4 t of the centroids is element
// lid + t · STREAM_WG of c_stage.
struct Share {
    rows: array<vec4<f32>, STREAM_QUADS>,
    centroids: array<vec4<f32>, STREAM_CENTROID_LOADS>,
}

// Features j .. j + 3 of centroid c (zeros past D).
fn centroid_quad(c: u32, j: u32) -> vec4<f32> {
    var v = vec4<f32>();
    for (var t = 0u; t < 4u; t++) {
        if j + t < params.d {
            v[t] = centroids[c * params.d + j + t];
        }
    }
    return v;
}

// Loads the share of the piece from feature j0 of rows first .. first + STREAM_WG.
fn load_share(first: u32, lid: u32, j0: u32) -> Share {
    var s: Share;
    let j = j0 + 4u * (lid % STREAM_QUADS);
    for (var t = 0u; t < STREAM_QUADS; t++) {
        let r = first + lid / STREAM_QUADS + t * (STREAM_WG / STREAM_QUADS);
        s.rows[t] = vec4<f32>();
        if r < params.n_rows && j < params.d {
            s.rows[t] = x_quad(r, j);
        }
    }
    for (var t = 0u; t < STREAM_CENTROID_LOADS; t++) {
        let e = lid + t * STREAM_WG;
        let c = e / STREAM_QUADS;
        s.centroids[t] = vec4<f32>();
        if c < STREAM_K {
            s.centroids[t] = centroid_quad(c, j0 + 4u * (e % STREAM_QUADS));
        }
    }
    return s;
}

fn store_share(lid: u32, s: Share) {
    for (var t = 0u; t < STREAM_QUADS; t++) {
        let r = lid / STREAM_QUADS + t * (STREAM_WG / STREAM_QUADS);
        x_stage[r * STREAM_STRIDE + lid % STREAM_QUADS] = s.rows[t];
    }
    for (var t = 0u; t < STREAM_CENTROID_LOADS; t++) {
        c_stage[lid + t * STREAM_WG] = s.centroids[t];
    }
}

// acc + the squares of xv − centroid c0 + t in lane t (t = 0 .. 3), feature by feature in
// order: each lane is one centroid's fma chain, the same bits as a scalar chain.
fn stream_group(acc: vec4<f32>, xv: vec4<f32>, c0: u32, q: u32) -> vec4<f32> {
    let d0 = xv - c_stage[c0 * STREAM_QUADS + q];
    let d1 = xv - c_stage[(c0 + 1u) * STREAM_QUADS + q];
    let d2 = xv - c_stage[(c0 + 2u) * STREAM_QUADS + q];
    let d3 = xv - c_stage[(c0 + 3u) * STREAM_QUADS + q];
    let dx = vec4<f32>(d0.x, d1.x, d2.x, d3.x);
    let dy = vec4<f32>(d0.y, d1.y, d2.y, d3.y);
    let dz = vec4<f32>(d0.z, d1.z, d2.z, d3.z);
    let dw = vec4<f32>(d0.w, d1.w, d2.w, d3.w);
    var a = fma(dx, dx, acc);
    a = fma(dy, dy, a);
    a = fma(dz, dz, a);
    return fma(dw, dw, a);
}

// The distance of centroid c (below SMALL_K) from the four groups.
fn stream_distance(g0: vec4<f32>, g1: vec4<f32>, g2: vec4<f32>, g3: vec4<f32>, c: u32) -> f32 {
    let g = c / 4u;
    let v = select(select(g3, g2, g == 2u), select(g1, g0, g == 0u), g < 2u);
    return v[c % 4u];
}

@compute @workgroup_size(STREAM_WG)
fn assign_stream(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let first = workgroup_index(wid, params.grid_x) * STREAM_WG;
    if lid == 0u {
        atomicStore(&wg_changed, 0u);
    }
    var share = load_share(first, lid, 0u);
    var acc0 = vec4<f32>();
    var acc1 = vec4<f32>();
    var acc2 = vec4<f32>();
    var acc3 = vec4<f32>();
    for (var j0 = 0u; j0 < params.d; j0 += 4u * STREAM_QUADS) {
        // The previous piece has been summed by every invocation.
        workgroupBarrier();
        store_share(lid, share);
        workgroupBarrier();
        // The next piece's loads, in flight while this one is summed.
        if j0 + 4u * STREAM_QUADS < params.d {
            share = load_share(first, lid, j0 + 4u * STREAM_QUADS);
        }
        for (var q = 0u; q < STREAM_QUADS; q++) {
            let xv = x_stage[lid * STREAM_STRIDE + q];
            // Conditions on the override alone: the driver drops the groups past K.
            acc0 = stream_group(acc0, xv, 0u, q);
            if STREAM_K > 4u {
                acc1 = stream_group(acc1, xv, 4u, q);
            }
            if STREAM_K > 8u {
                acc2 = stream_group(acc2, xv, 8u, q);
            }
            if STREAM_K > 12u {
                acc3 = stream_group(acc3, xv, 12u, q);
            }
        }
    }
    let row = first + lid;
    if row < params.n_rows {
        // settle_row's search (assign/shared/rows_piece.wgsl): the lowest of the lowest.
        var best = F32_MAX;
        var best_k = 0u;
        for (var c = 0u; c < STREAM_K; c++) {
            let dist = stream_distance(acc0, acc1, acc2, acc3, c);
            if dist < best {
                best = dist;
                best_k = c;
            }
        }
        write_row(row, best_k, best);
    }
    workgroupBarrier();
    if lid == 0u {
        let n = atomicLoad(&wg_changed);
        if n > 0u {
            atomicAdd(&changed, n);
        }
    }
}
