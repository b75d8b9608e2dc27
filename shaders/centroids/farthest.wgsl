// The rows farthest from their centroids, without reading every row's distance back: the
// empty-cluster repair of K-Means needs only the first few rows of the order (squared
// distance descending, row ascending).
//
// Host wrapper: src/kernels/centroids/farthest.rs.
//
// farthest_histogram counts the rows by a field of their distance's order key (a radix
// select: the host picks the bin where the count from the top reaches what it needs, then
// refines inside that bin with the next bits); farthest_compact then lists every row whose
// key is at or above the threshold found, with its label and distance, for the host to sort.
// Counts are integer atomics, so their sums do not depend on the order the rows arrive in, and
// the host sorts the list, so the slots the compaction's atomics hand out do not matter either.
//
// @checked: the histogram is indexed by bits of the distances, and the list by an atomic counter
//   over data

#import constants
#import grid
#import centroids/order_key

// Twin: FarthestParams in src/kernels/centroids/farthest.rs.
struct FarthestParams {
    n_rows: u32,      // rows in this chunk
    grid_x: u32,
    shift: u32,       // histogram: a row's bin is (key >> shift) & (FARTHEST_BINS - 1)
    prefix_mask: u32, // histogram: only rows with (key & prefix_mask) == prefix count
    prefix: u32,
    threshold: u32,   // compact: rows with key >= threshold are listed
    capacity: u32,    // compact: slots in `found`
    row_base: u32,    // compact: global index of the chunk's first row
}

// Bins per histogram pass (11 bits of the key; three passes cover all 32).
const FARTHEST_BINS: u32 = 2048u;
// Rows per workgroup of the histogram, so each workgroup's bins are flushed once per many rows.
const FARTHEST_HIST_ROWS: u32 = 4096u;

@group(0) @binding(0) var<uniform> params: FarthestParams;
// The rows' squared distances, as f32 bits.
@group(0) @binding(1) var<storage, read> dist: array<u32>;
@group(0) @binding(2) var<storage, read_write> histogram: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read> labels: array<u32>;
@group(0) @binding(4) var<storage, read_write> found_count: atomic<u32>;
// (global row, label, distance bits, 0) per listed row.
@group(0) @binding(5) var<storage, read_write> found: array<vec4<u32>>;

var<workgroup> local_bins: array<atomic<u32>, FARTHEST_BINS>;

@compute @workgroup_size(ROW_WG_SIZE)
fn farthest_histogram(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    for (var b = lid; b < FARTHEST_BINS; b += ROW_WG_SIZE) {
        atomicStore(&local_bins[b], 0u);
    }
    workgroupBarrier();
    let first = workgroup_index(wid, params.grid_x) * FARTHEST_HIST_ROWS;
    for (var i = lid; i < FARTHEST_HIST_ROWS; i += ROW_WG_SIZE) {
        let row = first + i;
        if row < params.n_rows {
            let key = order_key(dist[row]);
            if (key & params.prefix_mask) == params.prefix {
                atomicAdd(&local_bins[(key >> params.shift) & (FARTHEST_BINS - 1u)], 1u);
            }
        }
    }
    workgroupBarrier();
    for (var b = lid; b < FARTHEST_BINS; b += ROW_WG_SIZE) {
        let c = atomicLoad(&local_bins[b]);
        if c != 0u {
            atomicAdd(&histogram[b], c);
        }
    }
}

@compute @workgroup_size(ROW_WG_SIZE)
fn farthest_compact(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let row = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if row >= params.n_rows {
        return;
    }
    let bits = dist[row];
    if order_key(bits) >= params.threshold {
        let slot = atomicAdd(&found_count, 1u);
        if slot < params.capacity {
            found[slot] = vec4<u32>(params.row_base + row, labels[row], bits, 0u);
        }
    }
}
