// The Lloyd update on GPUs from the rows sorted by label: per-cluster partial statistics
// whose every pass reads its data once, coalesced, with no float atomics and no
// read-modify-write of global memory. Host wrapper: src/kernels/centroids/sorted.rs.
//
// The sliced update (update.wgsl) gives a workgroup a block of rows and a range of clusters:
// at K x D = 64,000 a block holds tens of thousands of rows, each workgroup of a block reads
// every label of it, and its walk over the rows is serial (18 GB/s on an H200 at 20M x 64,
// k = 1000). Here the rows are first sorted by label with a stable counting sort (the
// "sort-inverse" update of flash-kmeans, arXiv 2603.09229, 6.3x its plain update, which
// then adds each run of equal labels with one float atomic; here each run is summed by
// its own workgroup in a fixed order instead):
//
//   sort_count          per tile of tile_rows rows, how many rows carry each label
//                       (workgroup-memory histogram, integer atomics: exact in any order)
//                       -> tile_counts[cluster][tile]
//   sort_scan_tiles     per cluster, the exclusive scan over its tiles (in place) and the
//                       cluster's size; the member count of each of its pieces (below)
//   sort_scan_clusters  the exclusive scan of the sizes: where each cluster's run starts
//   sort_scatter        each tile writes (row, squared distance) of its rows at their place,
//                       the rows of one label in row order (the rank of a row is the count
//                       of equal labels before it in its group of SCATTER_WG rows): the sorted
//                       order is a function of the labels alone, whatever the tiles
//   segment_partials    cluster c's run split into n_pieces pieces of near-equal length; a
//                       workgroup per (piece, cluster, feature slice) sums Σ w·(x − old c),
//                       Σ w·d̂ and Σ w over its piece, reading each row's slice as vec4s
//
// The partials keep update.wgsl's layout, [block][cluster][feature] from the chunk's first
// block, with "block" meaning piece: piece p of every cluster lands in block
// block_offset + p, so sum_partial_columns (reduce.wgsl) folds them as it folds blocks.
// n_pieces is at most the chunk's blocks; blocks past it are left as they are (the caller
// clears the partials, as the K-Means workspace does before every step).
//
// Summation order (fixed, so the same labels give the same bits): in segment_partials
// invocation row lane l of L = SEGMENT_WG / lanes sums the piece's rows l, l + L, l + 2L, ...
// in that order, sum += w·(x − old c) as update.wgsl writes it (w exactly 1 unweighted),
// then the L lanes are added in a fixed tree (lane l += lane l + h for h = L/2, L/4, ... 1).
// This order differs from the sliced update's (one row after another per block); the GPU
// design takes this path by fixed rules, and the sums stay within f32 rounding of the f64
// reference (each piece holds a few hundred rows, then the pieces are folded with Kahan
// compensation).
//
// @checked: labels index the histograms and cursors, the scans' offsets place the sorted
//   entries and the sorted entries name the rows read: data-dependent indices keep wgpu's
//   bounds checks

#import constants
#import grid

// Invocations of the counting and scanning kernels, and of sort_scatter (rows of one
// scatter group: its rank walk is as long as the group).
const SORT_WG: u32 = 256u;
const SCATTER_WG: u32 = 64u;
// The most clusters of one range: the histogram and cursors live in workgroup memory (8 KiB);
// more clusters are counted and scattered a range at a time.
const SORT_CLUSTERS: u32 = 2048u;
// Invocations of segment_partials, and the most vec4s of a feature slice (one per lane).
const SEGMENT_WG: u32 = 256u;
const SEGMENT_MAX_VEC4: u32 = 256u;

// Twin: SortParams in src/kernels/centroids/sorted.rs.
struct SortParams {
    n_rows: u32,       // rows in this chunk
    x_offset: u32,     // index of the chunk's first value inside the bound range of x
    d: u32,
    k: u32,
    grid_x: u32,
    tile_rows: u32,    // rows per tile of sort_count and sort_scatter (a multiple of SORT_WG)
    n_tiles: u32,
    range_k: u32,      // clusters per range (at most SORT_CLUSTERS)
    n_pieces: u32,     // pieces per cluster (at most the chunk's blocks)
    block_offset: u32, // global index of the chunk's first block
    weighted: u32,     // 1: rows weighted by `weights`; 0: every weight is 1 (`weights` unused)
    x_vec4: u32,       // 1: x_offset and D are multiples of 4, so rows load as vec4s from x4
    slice_vec4: u32,   // vec4s per feature slice (at most SEGMENT_MAX_VEC4)
    n_slices: u32,
    lanes: u32,        // invocations per row in segment_partials (a power of two >= slice_vec4)
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: SortParams;
@group(0) @binding(1) var<storage, read> labels: array<u32>;
@group(0) @binding(2) var<storage, read> min_sq_dist: array<f32>;
@group(0) @binding(3) var<storage, read> weights: array<f32>;
@group(0) @binding(4) var<storage, read> x: array<f32>;
// The same range as x, as vec4s (bound only when x_vec4 = 1 makes every row start aligned).
@group(0) @binding(5) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> old_centroids: array<f32>;
// [cluster][tile]: counts, then (scanned) the tile's first place within the cluster's run.
@group(0) @binding(7) var<storage, read_write> tile_counts: array<u32>;
// [K + 1]: the clusters' sizes, then (scanned) where each run starts; entry K = n_rows.
@group(0) @binding(8) var<storage, read_write> cluster_starts: array<u32>;
// One (row, bits of its squared distance) per row, grouped by label, in row order.
@group(0) @binding(9) var<storage, read_write> sorted: array<vec2<u32>>;
// update.wgsl's partials: [block][cluster][feature], [block][cluster], [block][cluster][2].
@group(0) @binding(10) var<storage, read_write> partial_sums: array<f32>;
@group(0) @binding(11) var<storage, read_write> partial_counts: array<u32>;
@group(0) @binding(12) var<storage, read_write> partial_sq_dist: array<f32>;

// sort_count: the tile's histogram; sort_scatter: each cluster's next place.
var<workgroup> cursors: array<atomic<u32>, SORT_CLUSTERS>;
// sort_scatter: the labels of the group being placed; the scans' per-invocation totals.
var<workgroup> group_labels: array<u32, SORT_WG>;
// segment_partials: each invocation's sums, folded across row lanes.
var<workgroup> lane_sums: array<vec4<f32>, SEGMENT_WG>;
var<workgroup> lane_scalars: array<vec2<f32>, SEGMENT_WG>;

// A label that matches no cluster: rows past the tile's last.
const NO_LABEL: u32 = 0xffffffffu;

// Rows first .. last of tile t.
fn tile_rows_of(t: u32) -> vec2<u32> {
    let first = t * params.tile_rows;
    return vec2<u32>(first, min(first + params.tile_rows, params.n_rows));
}

@compute @workgroup_size(SORT_WG)
fn sort_count(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let t = workgroup_index(wid, params.grid_x);
    if t >= params.n_tiles {
        return;
    }
    let rows = tile_rows_of(t);
    for (var c0 = 0u; c0 < params.k; c0 += params.range_k) {
        let span = min(params.range_k, params.k - c0);
        for (var c = lid; c < span; c += SORT_WG) {
            atomicStore(&cursors[c], 0u);
        }
        workgroupBarrier();
        for (var r = rows.x + lid; r < rows.y; r += SORT_WG) {
            // Labels below the range wrap around past span: one test for both ends.
            let c = labels[r] - c0;
            if c < span {
                atomicAdd(&cursors[c], 1u);
            }
        }
        workgroupBarrier();
        for (var c = lid; c < span; c += SORT_WG) {
            tile_counts[(c0 + c) * params.n_tiles + t] = atomicLoad(&cursors[c]);
        }
        workgroupBarrier();
    }
}

// The exclusive prefix sum of `v` over the workgroup's invocations in index order, and the
// total (x, y). Every invocation of the workgroup calls it (barriers); it reuses
// group_labels, free in the scans.
fn workgroup_scan(lid: u32, v: u32) -> vec2<u32> {
    group_labels[lid] = v;
    workgroupBarrier();
    for (var s = 1u; s < SORT_WG; s *= 2u) {
        var add = 0u;
        if lid >= s {
            add = group_labels[lid - s];
        }
        workgroupBarrier();
        group_labels[lid] += add;
        workgroupBarrier();
    }
    let inclusive = group_labels[lid];
    let total = group_labels[SORT_WG - 1u];
    return vec2<u32>(inclusive - v, total);
}

// Replaces values first .. first + n of `tile_counts` (in_tiles) or of `cluster_starts` by
// their exclusive prefix sum, each invocation a contiguous run of them; returns the total.
fn scan_in_place(lid: u32, first: u32, n: u32, in_tiles: bool) -> u32 {
    let per = (n + SORT_WG - 1u) / SORT_WG;
    let a = min(lid * per, n);
    let b = min(a + per, n);
    var sum = 0u;
    for (var i = first + a; i < first + b; i++) {
        if in_tiles {
            sum += tile_counts[i];
        } else {
            sum += cluster_starts[i];
        }
    }
    let s = workgroup_scan(lid, sum);
    var run = s.x;
    for (var i = first + a; i < first + b; i++) {
        if in_tiles {
            let v = tile_counts[i];
            tile_counts[i] = run;
            run += v;
        } else {
            let v = cluster_starts[i];
            cluster_starts[i] = run;
            run += v;
        }
    }
    return s.y;
}

// The first place and the length of piece p of a run of n rows from `start`: n_pieces pieces,
// the first n % n_pieces of them one row longer.
fn piece_of(start: u32, n: u32, p: u32) -> vec2<u32> {
    let q = n / params.n_pieces;
    let rem = n % params.n_pieces;
    return vec2<u32>(start + p * q + min(p, rem), q + select(0u, 1u, p < rem));
}

// One workgroup per cluster.
@compute @workgroup_size(SORT_WG)
fn sort_scan_tiles(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let c = workgroup_index(wid, params.grid_x);
    if c >= params.k {
        return;
    }
    let n_c = scan_in_place(lid, c * params.n_tiles, params.n_tiles, true);
    if lid == 0u {
        cluster_starts[c] = n_c;
    }
    for (var p = lid; p < params.n_pieces; p += SORT_WG) {
        partial_counts[(params.block_offset + p) * params.k + c] = piece_of(0u, n_c, p).y;
    }
}

// One workgroup.
@compute @workgroup_size(SORT_WG)
fn sort_scan_clusters(@builtin(local_invocation_index) lid: u32) {
    let total = scan_in_place(lid, 0u, params.k, false);
    if lid == 0u {
        cluster_starts[params.k] = total;
    }
}

// Row r's label and the bits of its squared distance, or NO_LABEL past `last`.
fn label_entry(r: u32, last: u32) -> vec2<u32> {
    if r < last {
        return vec2<u32>(labels[r], bitcast<u32>(min_sq_dist[r]));
    }
    return vec2<u32>(NO_LABEL, 0u);
}

// One workgroup per tile: its rows a group of SCATTER_WG at a time, in order, each group's
// labels and distances loaded while the previous group is placed. A row's rank among the
// group's rows of its label is a walk over the labels before it (SCATTER_WG / 2 trips on
// average): with groups of 64 about 9 warp instructions a row, where groups of 256 took
// about 27, which on an H200 (~1e12 warp instructions/s) is half the time of reading
// 20M x 64 rows.
@compute @workgroup_size(SCATTER_WG)
fn sort_scatter(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let t = workgroup_index(wid, params.grid_x);
    if t >= params.n_tiles {
        return;
    }
    let rows = tile_rows_of(t);
    for (var c0 = 0u; c0 < params.k; c0 += params.range_k) {
        let span = min(params.range_k, params.k - c0);
        for (var c = lid; c < span; c += SCATTER_WG) {
            let at = cluster_starts[c0 + c] + tile_counts[(c0 + c) * params.n_tiles + t];
            atomicStore(&cursors[c], at);
        }
        var next = label_entry(rows.x + lid, rows.y);
        for (var g = rows.x; g < rows.y; g += SCATTER_WG) {
            // The cursors are set, and the previous group has read group_labels.
            workgroupBarrier();
            let mine = next;
            group_labels[lid] = mine.x;
            next = label_entry(g + SCATTER_WG + lid, rows.y);
            workgroupBarrier();
            let c = mine.x - c0;
            let placed = mine.x != NO_LABEL && c < span;
            var at = 0u;
            if placed {
                // The rank among the group's rows of this label: the rows before it.
                var rank = 0u;
                for (var j = 0u; j < lid; j++) {
                    rank += select(0u, 1u, group_labels[j] == mine.x);
                }
                at = atomicLoad(&cursors[c]) + rank;
                sorted[at] = vec2<u32>(g + lid, mine.y);
            }
            // Every invocation has read the cursors: move them past the group's rows (the
            // largest place of a label plus one, whichever invocation holds it).
            workgroupBarrier();
            if placed {
                atomicMax(&cursors[c], at + 1u);
            }
        }
        workgroupBarrier();
    }
}

// Row r's sample weight, or exactly 1 (update.wgsl's weight_of).
fn weight_of(r: u32) -> f32 {
    if params.weighted != 0u {
        return weights[r];
    }
    return 1.0;
}

// Features f .. f + 3 of row r (zeros past D).
fn row_quad(r: u32, f: u32) -> vec4<f32> {
    let at = params.x_offset + r * params.d + f;
    if params.x_vec4 != 0u {
        return x4[at / 4u];
    }
    var v = vec4<f32>();
    for (var t = 0u; t < 4u; t++) {
        if f + t < params.d {
            v[t] = x[at + t];
        }
    }
    return v;
}

// Sorted entry i, or a placeholder at or past `end` (never summed).
fn entry_before(i: u32, end: u32) -> vec2<u32> {
    if i < end {
        return sorted[i];
    }
    return vec2<u32>();
}

// Adds sorted entry e's row to an invocation's sums: w·(x − old c) on its 4 features (when
// `live`), w·d̂ and w.
fn add_entry(e: vec2<u32>, f: u32, live: bool, old: vec4<f32>, sums: ptr<function, vec4<f32>>, scalars: ptr<function, vec2<f32>>) {
    let w = weight_of(e.x);
    var v = vec4<f32>();
    if live {
        v = row_quad(e.x, f);
    }
    *sums += w * (v - old);
    *scalars += vec2<f32>(w * bitcast<f32>(e.y), w);
}

// A workgroup per (piece, cluster, feature slice): invocation lid is lane lid % lanes (a vec4
// of the slice) of row lane lid / lanes.
@compute @workgroup_size(SEGMENT_WG)
fn segment_partials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let g = workgroup_index(wid, params.grid_x);
    let slice = g % params.n_slices;
    let c = (g / params.n_slices) % params.k;
    let p = g / (params.n_slices * params.k);
    if p >= params.n_pieces {
        return;
    }
    let lane = lid % params.lanes;
    let row_lane = lid / params.lanes;
    let row_lanes = SEGMENT_WG / params.lanes;
    let q = slice * params.slice_vec4 + lane;
    let f = 4u * q;
    let live = lane < params.slice_vec4 && f < params.d;
    var old = vec4<f32>();
    if live {
        for (var t = 0u; t < 4u; t++) {
            if f + t < params.d {
                old[t] = old_centroids[c * params.d + f + t];
            }
        }
    }
    let start = cluster_starts[c];
    let piece = piece_of(start, cluster_starts[c + 1u] - start, p);
    let end = piece.x + piece.y;
    var sums = vec4<f32>();
    var scalars = vec2<f32>();
    // Two rows per trip, their loads issued together, and the next trip's two sorted
    // entries loaded before these rows are summed: a row's load waits on its entry's, so
    // without the look-ahead every trip would wait on memory twice. The rows are summed in
    // the same order (i, i + L, i + 2L, ...) either way.
    let step = 2u * row_lanes;
    var i = piece.x + row_lane;
    var e0 = entry_before(i, end);
    var e1 = entry_before(i + row_lanes, end);
    for (; i + row_lanes < end; i += step) {
        let n0 = entry_before(i + step, end);
        let n1 = entry_before(i + step + row_lanes, end);
        add_entry(e0, f, live, old, &sums, &scalars);
        add_entry(e1, f, live, old, &sums, &scalars);
        e0 = n0;
        e1 = n1;
    }
    if i < end {
        add_entry(e0, f, live, old, &sums, &scalars);
    }
    lane_sums[lid] = sums;
    lane_scalars[lid] = scalars;
    for (var h = row_lanes / 2u; h > 0u; h /= 2u) {
        workgroupBarrier();
        if row_lane < h {
            lane_sums[lid] += lane_sums[lid + h * params.lanes];
            lane_scalars[lid] += lane_scalars[lid + h * params.lanes];
        }
    }
    // Row lane 0 wrote its own entries last: no barrier before reading them.
    if row_lane != 0u {
        return;
    }
    let block = params.block_offset + p;
    let out = (block * params.k + c) * params.d + f;
    let total = lane_sums[lid];
    for (var t = 0u; t < 4u; t++) {
        if live && f + t < params.d {
            partial_sums[out + t] = total[t];
        }
    }
    if lane == 0u && slice == 0u {
        let at = block * params.k + c;
        partial_sq_dist[2u * at] = lane_scalars[lid].x;
        partial_sq_dist[2u * at + 1u] = lane_scalars[lid].y;
    }
}
