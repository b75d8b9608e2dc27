// Per-cluster statistics for the Lloyd update, without float atomics and without any
// read-modify-write of global memory.
//
// Host wrapper: src/kernels/centroids/update.rs.
//
// The rows are cut into blocks of `block_rows`; for each block, cluster c and feature j the
// partials hold the sum of w·(x_j − old_c_j), with the member count and the sums of
// w·(squared distance) and of w, w the row's sample weight (`weighted`) or 1. A weight of
// exactly 1 multiplies exactly, so unweighted sums have the same bits as sums that never
// multiply; counts stay integers. Summing deviations from the old centroid instead of raw
// values keeps the f32 partials small when the data sit far from the origin.
// sum_partial_columns (reduce.wgsl) then folds the blocks together.
//
// Parallel work does not depend on how many blocks the partials budget allows: a workgroup
// owns one (block, feature slice, cluster range), with the slice's sums for the range's
// clusters in workgroup memory (range_k x slice_width <= SHARED_SUMS values). Its
// invocations own features of the slice (stride FEATURE_WG_SIZE, which the host sets to
// the slice width) and walk the block's rows in order, adding the rows whose label falls in
// the range (accumulate_cluster_partials stages the labels of FEATURE_WG_SIZE rows at a
// time in workgroup memory with one coalesced load, so the walk does not wait on a global
// round trip per row); every sum has one writer and a fixed order (bitwise reproducible),
// and reaches the partials once. So K·D / SHARED_SUMS workgroups per block at least, even
// with a single block; each row's features are read by one workgroup (its label's range),
// its label by each range. The counts and the squared-distance and weight sums are kept by the
// workgroups of slice 0.
//
// On GPUs with K <= SMALL_K and D <= FUSED_MAX_D, K-Means does not run these kernels:
// assign_rows_update (assign.wgsl) writes the same partials, bit for bit, in the epilogue of
// the assignment, from the rows the assignment staged in workgroup memory (one read of X per
// iteration, no labels pass). It mirrors weight_of, add_row_scalars and write_partials below;
// a change to the sums here must be made there too.
//
// accumulate_cluster_partials_texture is the same walk reading the rows and the old
// centroids from flat textures (CPU-like adapters, D a multiple of 4; see
// shared/texels.wgsl), the same arithmetic in the same order, so the same bits; the host
// runs it on CPU-like adapters only when K is too large for label_segments (below).
//
// @checked: the sums are indexed by each row's label, read from a buffer

#import constants
#import grid
#import texels

const SHARED_SUMS: u32 = 4096u;    // range_k x slice_width values
const SHARED_CLUSTERS: u32 = 512u; // largest range_k

// Twin: AccumulateParams in src/kernels/centroids/update.rs.
struct AccumulateParams {
    n_rows: u32,       // rows in this chunk
    x_offset: u32,     // index of the chunk's first value inside the bound range of x
    d: u32,
    k: u32,
    block_rows: u32,   // rows per block (bounds every f32 partial sum)
    block_offset: u32, // global index of this chunk's first block
    grid_x: u32,
    weighted: u32,     // 1: rows have weights in `weights`; 0: every weight is 1 (`weights` unused)
    slice_width: u32,  // features per slice (a multiple of FEATURE_WG_SIZE or D itself)
    n_slices: u32,
    range_k: u32,      // clusters per range
    n_ranges: u32,
}

@group(0) @binding(0) var<uniform> params: AccumulateParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> labels: array<u32>;
@group(0) @binding(3) var<storage, read> min_sq_dist: array<f32>;
@group(0) @binding(4) var<storage, read> weights: array<f32>;
@group(0) @binding(5) var<storage, read> old_centroids: array<f32>;
// [block][cluster][feature]
@group(0) @binding(6) var<storage, read_write> partial_sums: array<f32>;
// [block][cluster]
@group(0) @binding(7) var<storage, read_write> partial_counts: array<u32>;
// [block][cluster][2]: Σ w·d², Σ w
@group(0) @binding(8) var<storage, read_write> partial_sq_dist: array<f32>;
// accumulate_cluster_partials_texture: the chunk's rows (from value 0) and the centroids.
@group(0) @binding(9) var x_texels: texture_2d_array<f32>;
@group(0) @binding(10) var centroid_texels: texture_2d_array<f32>;

var<workgroup> shared_sums: array<f32, SHARED_SUMS>;
var<workgroup> shared_counts: array<u32, SHARED_CLUSTERS>;
var<workgroup> shared_sq_dist: array<f32, SHARED_CLUSTERS>;
var<workgroup> shared_weights: array<f32, SHARED_CLUSTERS>;
// accumulate_cluster_partials: the labels of the rows being walked.
var<workgroup> staged_labels: array<u32, FEATURE_WG_MAX>;

fn weight_of(r: u32) -> f32 {
    if params.weighted != 0u {
        return weights[r];
    }
    return 1.0;
}

// The (block, first feature, first cluster) of a workgroup, or block >= the chunk's blocks.
struct Part {
    block: u32,
    f0: u32,
    c0: u32,
    width: u32, // features of the slice that exist
    count: u32, // clusters of the range that exist
}

fn part_of(g: u32) -> Part {
    let per_block = params.n_slices * params.n_ranges;
    let block = g / per_block;
    let slice = (g % per_block) / params.n_ranges;
    let range = g % params.n_ranges;
    let f0 = slice * params.slice_width;
    let c0 = range * params.range_k;
    return Part(
        block,
        f0,
        c0,
        min(params.slice_width, params.d - min(f0, params.d)),
        min(params.range_k, params.k - min(c0, params.k)),
    );
}

fn clear_shared(lid: u32, p: Part) {
    for (var c = 0u; c < p.count; c++) {
        for (var j = lid; j < p.width; j += FEATURE_WG_SIZE) {
            shared_sums[c * params.slice_width + j] = 0.0;
        }
        if lid == 0u {
            shared_counts[c] = 0u;
            shared_sq_dist[c] = 0.0;
            shared_weights[c] = 0.0;
        }
    }
}

// Adds row r's counts and squared distance (slice 0 only, invocation 0).
fn add_row_scalars(lid: u32, p: Part, r: u32, c: u32, w: f32) {
    if lid == 0u && p.f0 == 0u {
        shared_counts[c] += 1u;
        shared_sq_dist[c] += w * min_sq_dist[r];
        shared_weights[c] += w;
    }
}

fn write_partials(lid: u32, p: Part) {
    let gblock = params.block_offset + p.block;
    for (var c = 0u; c < p.count; c++) {
        let out = (gblock * params.k + p.c0 + c) * params.d + p.f0;
        for (var j = lid; j < p.width; j += FEATURE_WG_SIZE) {
            partial_sums[out + j] = shared_sums[c * params.slice_width + j];
        }
        if lid == 0u && p.f0 == 0u {
            let at = gblock * params.k + p.c0 + c;
            partial_counts[at] = shared_counts[c];
            partial_sq_dist[2u * at] = shared_sq_dist[c];
            partial_sq_dist[2u * at + 1u] = shared_weights[c];
        }
    }
}

@compute @workgroup_size(FEATURE_WG_SIZE)
fn accumulate_cluster_partials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = part_of(workgroup_index(wid, params.grid_x));
    let first = p.block * params.block_rows;
    if first >= params.n_rows {
        return;
    }
    let last = min(first + params.block_rows, params.n_rows);
    let d = params.d;
    clear_shared(lid, p);
    for (var base = first; base < last; base += FEATURE_WG_SIZE) {
        // The labels of the next FEATURE_WG_SIZE rows in one coalesced load, so the walk
        // below waits on workgroup memory, not on a global round trip per row.
        workgroupBarrier();
        if base + lid < last {
            staged_labels[lid] = labels[base + lid];
        }
        workgroupBarrier();
        let m = min(FEATURE_WG_SIZE, last - base);
        for (var i = 0u; i < m; i++) {
            let r = base + i;
            let c = staged_labels[i] - p.c0;
            // Labels below the range wrap around past range_k: one test for both ends.
            if c < p.count {
                let w = weight_of(r);
                let xrow = params.x_offset + r * d + p.f0;
                let crow = (p.c0 + c) * d + p.f0;
                for (var j = lid; j < p.width; j += FEATURE_WG_SIZE) {
                    shared_sums[c * params.slice_width + j] += w * (x[xrow + j] - old_centroids[crow + j]);
                }
                add_row_scalars(lid, p, r, c, w);
            }
        }
    }
    write_partials(lid, p);
}

// The same sums with the rows and old centroids read as flat-texture texels: invocation lid
// owns the texels lid, lid + FEATURE_WG_SIZE, ... of the slice (four features each).
@compute @workgroup_size(FEATURE_WG_SIZE)
fn accumulate_cluster_partials_texture(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = part_of(workgroup_index(wid, params.grid_x));
    let first = p.block * params.block_rows;
    if first >= params.n_rows {
        return;
    }
    let last = min(first + params.block_rows, params.n_rows);
    let d4 = params.d / 4u;
    let width4 = p.width / 4u;
    clear_shared(lid, p);
    // Invocations clear and write features but add texels: synchronise between.
    workgroupBarrier();
    for (var r = first; r < last; r++) {
        let c = labels[r] - p.c0;
        if c < p.count {
            let w = weight_of(r);
            let xrow = r * d4 + p.f0 / 4u;
            let crow = (p.c0 + c) * d4 + p.f0 / 4u;
            for (var q = lid; q < width4; q += FEATURE_WG_SIZE) {
                let dev = flat_texel(x_texels, xrow + q) - flat_texel(centroid_texels, crow + q);
                let at = c * params.slice_width + 4u * q;
                shared_sums[at] += w * dev.x;
                shared_sums[at + 1u] += w * dev.y;
                shared_sums[at + 2u] += w * dev.z;
                shared_sums[at + 3u] += w * dev.w;
            }
            add_row_scalars(lid, p, r, c, w);
        }
    }
    workgroupBarrier();
    write_partials(lid, p);
}

// ---- CPU-like adapters: rows grouped by label within each block, then per-segment sums ----
//
// label_segments (one invocation per block) walks the block's rows in order twice: it counts
// the labels (the block's counts), then writes the rows' indices grouped by label, in row
// order within a label, into `order`, with the first position of each (block, cluster)
// segment in `segments` (block·(K + 1) + c; entry K closes the block). Every global value it
// writes is written once. accumulate_segments then gives each invocation one (block,
// cluster, texel of the row) and sums w·(x − old c) over the segment's rows in row order, in
// registers, and segment_scalars the segment's sums of w·d² and of w: the same sums in the
// same order as above, so the same bits, with no workgroup-memory traffic per value (costly
// on lavapipe, where every such load and store is a loop over the SIMD lanes).

// accumulate_segments_storage is the same with the rows and old centroids read from the
// storage buffers, one feature per invocation: any D, and no textures needed (the small-K
// assignment kernels keep no texture mirror of the rows).

// segment_scalars sums each segment's w·d² and w (one invocation per block and cluster), so
// that the per-texel and per-feature walks read only the row and, when weighted, its weight.
// SEGMENT_WEIGHTED is fixed per pipeline: llvmpipe runs both sides of every branch, so a
// weight load behind a runtime flag (weight_of) would cost every row of an unweighted fit a
// storage load.
override SEGMENT_WEIGHTED: bool = true;

fn segment_weight(r: u32) -> f32 {
    if SEGMENT_WEIGHTED {
        return weights[r];
    }
    return 1.0;
}

// Largest K of label_segments (its per-cluster cursors live in workgroup memory).
const SEGMENT_CLUSTERS: u32 = 4096u;

// label_segments, accumulate_segments: the rows of each block grouped by label, and where
// each (block, cluster) segment starts.
@group(0) @binding(11) var<storage, read_write> order: array<u32>;
@group(0) @binding(12) var<storage, read_write> segments: array<u32>;

var<workgroup> cursors: array<u32, SEGMENT_CLUSTERS>;

@compute @workgroup_size(1)
fn label_segments(@builtin(workgroup_id) wid: vec3<u32>) {
    let block = workgroup_index(wid, params.grid_x);
    let first = block * params.block_rows;
    if first >= params.n_rows {
        return;
    }
    let last = min(first + params.block_rows, params.n_rows);
    let k = params.k;
    let gblock = params.block_offset + block;
    for (var c = 0u; c < k; c++) {
        cursors[c] = 0u;
    }
    for (var r = first; r < last; r++) {
        cursors[labels[r]] += 1u;
    }
    var start = first;
    for (var c = 0u; c < k; c++) {
        let n = cursors[c];
        partial_counts[gblock * k + c] = n;
        segments[block * (k + 1u) + c] = start;
        cursors[c] = start;
        start += n;
    }
    segments[block * (k + 1u) + k] = start;
    for (var r = first; r < last; r++) {
        let c = labels[r];
        order[cursors[c]] = r;
        cursors[c] += 1u;
    }
}

// Texels (accumulate_segments) or features (accumulate_segments_storage) per invocation: each
// row's index, a storage load that llvmpipe makes lane by lane, is read once for all of them.
const SEGMENT_SPAN: u32 = 4u;

// An invocation's share of the segments: SEGMENT_SPAN of the `width` values of a row (texels
// or features) from `first`, of cluster c's segment `seg` in `block`; not live past the last.
// `at` are the values' indices in the row, those past its last clamped to it (read again,
// never written).
struct SegmentSpan {
    first: u32,
    at: vec4<u32>,
    c: u32,
    block: u32,
    seg: u32,
    live: bool,
}

fn segment_span(lid: u32, wid: vec3<u32>, width: u32) -> SegmentSpan {
    let spans = (width + SEGMENT_SPAN - 1u) / SEGMENT_SPAN;
    let e = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    let n_blocks = (params.n_rows + params.block_rows - 1u) / params.block_rows;
    let c = (e / spans) % params.k;
    let block = e / (spans * params.k);
    let seg = block * (params.k + 1u) + c;
    let first = (e % spans) * SEGMENT_SPAN;
    let at = min(vec4<u32>(first) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(width - 1u));
    return SegmentSpan(first, at, c, block, seg, block < n_blocks);
}

@compute @workgroup_size(ROW_WG_SIZE)
fn accumulate_segments(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let d4 = params.d / 4u;
    let span = segment_span(lid, wid, d4);
    if !span.live {
        return;
    }
    let q0 = span.first;
    let c = span.c;
    let c0 = c * d4;
    let old0 = flat_texel(centroid_texels, c0 + q0);
    let old1 = flat_texel(centroid_texels, c0 + span.at.y);
    let old2 = flat_texel(centroid_texels, c0 + span.at.z);
    let old3 = flat_texel(centroid_texels, c0 + span.at.w);
    var s0 = vec4<f32>();
    var s1 = vec4<f32>();
    var s2 = vec4<f32>();
    var s3 = vec4<f32>();
    for (var i = segments[span.seg]; i < segments[span.seg + 1u]; i++) {
        let r = order[i];
        let w = segment_weight(r);
        let base = r * d4;
        s0 += w * (flat_texel(x_texels, base + q0) - old0);
        s1 += w * (flat_texel(x_texels, base + span.at.y) - old1);
        s2 += w * (flat_texel(x_texels, base + span.at.z) - old2);
        s3 += w * (flat_texel(x_texels, base + span.at.w) - old3);
    }
    let out = (params.block_offset * params.k + span.block * params.k + c) * params.d + 4u * q0;
    let sums = array<vec4<f32>, 4>(s0, s1, s2, s3);
    for (var t = 0u; t < SEGMENT_SPAN; t++) {
        if q0 + t < d4 {
            for (var h = 0u; h < 4u; h++) {
                partial_sums[out + 4u * t + h] = sums[t][h];
            }
        }
    }
}

@compute @workgroup_size(ROW_WG_SIZE)
fn segment_scalars(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let e = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    let n_blocks = (params.n_rows + params.block_rows - 1u) / params.block_rows;
    if e >= n_blocks * params.k {
        return;
    }
    let c = e % params.k;
    let block = e / params.k;
    let seg = block * (params.k + 1u) + c;
    var sq = 0.0;
    var ws = 0.0;
    for (var i = segments[seg]; i < segments[seg + 1u]; i++) {
        let r = order[i];
        let w = segment_weight(r);
        sq += w * min_sq_dist[r];
        ws += w;
    }
    let at = params.block_offset * params.k + block * params.k + c;
    partial_sq_dist[2u * at] = sq;
    partial_sq_dist[2u * at + 1u] = ws;
}

@compute @workgroup_size(ROW_WG_SIZE)
fn accumulate_segments_storage(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let d = params.d;
    let span = segment_span(lid, wid, d);
    if !span.live {
        return;
    }
    let f0 = span.first;
    let c = span.c;
    let old = vec4<f32>(
        old_centroids[c * d + f0],
        old_centroids[c * d + span.at.y],
        old_centroids[c * d + span.at.z],
        old_centroids[c * d + span.at.w],
    );
    var sum = vec4<f32>();
    for (var i = segments[span.seg]; i < segments[span.seg + 1u]; i++) {
        let r = order[i];
        let base = params.x_offset + r * d;
        let v = vec4<f32>(x[base + f0], x[base + span.at.y], x[base + span.at.z], x[base + span.at.w]);
        sum += segment_weight(r) * (v - old);
    }
    let out = (params.block_offset * params.k + span.block * params.k + c) * d;
    for (var t = 0u; t < SEGMENT_SPAN; t++) {
        if f0 + t < d {
            partial_sums[out + f0 + t] = sum[t];
        }
    }
}
