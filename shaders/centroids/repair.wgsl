// K-Means' empty-cluster repair on the device, so that the Lloyd loop running ahead of the
// host (`lloyd_ahead` in src/kmeans/lloyd.rs) need not stop for it. The host's repair
// (`repair_empty_clusters` there) is the rule: each cluster without weight, in ascending
// order, moves onto the first row of the order (squared distance to its centroid descending,
// row ascending) whose cluster keeps another member, and that cluster (the donor) gives the
// row up: its mean without the row, c' = c + w(c − x)/(W − w), W its weight before.
//
// Host wrapper: src/kernels/centroids/repair.rs.
//
// Recorded between advance_clusters (which wrote the next rows and marked the empty clusters)
// and advance_decide; each returns at once where no cluster is empty:
// repair_count   one workgroup lists the empty clusters, ascending (the first
//                REPAIR_ROUNDS_MAX), and counts them all;
// repair_select  one dispatch per chunk of rows and round: round r finds the first row of the
//                order after round r − 1's pick (a cursor), each workgroup over a stride of the
//                rows; the next round (or repair_gather) reduces the workgroups' bests to the
//                pick, and the first chunk's first workgroup appends it to the list, so R rounds
//                list the first R rows of the order with their labels and weights;
// repair_gather  one workgroup per chunk copies the listed rows it holds;
// repair_apply   one workgroup plans, in the host loop's order, which listed row each empty
//                cluster takes, then writes the empty and donor clusters' next rows (back on
//                the unit sphere for the cosine metric), shifts and marks. Where the plan
//                fails (more empty clusters than rounds, the list used up by rows whose
//                cluster has one member, a donor left without weight) it writes nothing: the
//                clusters stay marked and advance_decide stops the loop for the host's repair.
// Picks are maxima over a total order and the plan is sequential, so the same inputs give the
// same bits. The arithmetic is f32 where the host's is f64: the same rule, rounded once more.
//
// @checked: the rows, labels and clusters the repair reads come from the data (labels, the
//   listed rows)

#import constants
#import grid
#import centroids/order_key

// Twin: RepairParams in src/kernels/centroids/repair.rs.
struct RepairParams {
    n_rows: u32,    // select, gather: rows in this chunk
    row_start: u32, // select, gather: global index of the chunk's first row
    x_offset: u32,  // gather: index of the chunk's first value in the bound rows
    round: u32,     // select: this round, from 0
    rounds: u32,    // rounds recorded: the list's length, at most REPAIR_ROUNDS_MAX
    slots: u32,     // select: partial slots per round (every chunk's workgroups)
    slot_base: u32, // select: this chunk's first slot
    k: u32,
    d: u32,
    weighted: u32,  // 1: rows and clusters weigh their sample weights; 0: one each
    spherical: u32, // 1: next rows are scaled to unit length
    pad: u32,
}

const REPAIR_WG_SIZE: u32 = 256u;
// The most rounds a step may record: the most empty clusters it repairs.
const REPAIR_ROUNDS_MAX: u32 = 32u;
// Workgroups of a select dispatch per chunk, at most: enough to stream the distances, few
// enough that the next round reduces their bests cheaply.
const REPAIR_SELECT_WGS: u32 = 128u;
// No row: past every row a binding holds.
const REPAIR_NONE: u32 = 0xffffffffu;
// The repair buffer, in u32 words: [0] the empty clusters' count; from REPAIR_EMPTY_AT the
// first REPAIR_ROUNDS_MAX of them, ascending; from REPAIR_LIST_AT the list, a record of four
// words per round (row, label, weight bits, 0); from REPAIR_ROWS_AT the listed rows (d values
// each, as f32 bits).
const REPAIR_EMPTY_AT: u32 = 4u;
const REPAIR_LIST_AT: u32 = 36u;   // REPAIR_EMPTY_AT + REPAIR_ROUNDS_MAX
const REPAIR_ROWS_AT: u32 = 164u;  // REPAIR_LIST_AT + 4 * REPAIR_ROUNDS_MAX
const_assert REPAIR_LIST_AT == REPAIR_EMPTY_AT + REPAIR_ROUNDS_MAX;
const_assert REPAIR_ROWS_AT == REPAIR_LIST_AT + 4u * REPAIR_ROUNDS_MAX;

@group(0) @binding(0) var<uniform> params: RepairParams;
@group(0) @binding(1) var<storage, read_write> repair: array<u32>;
// Per slot, a workgroup's best row: (order key, row, label, weight bits); two rounds' worth.
@group(0) @binding(2) var<storage, read_write> partials: array<vec4<u32>>;
// The chunk's rows' squared distances (as f32 bits), labels and sample weights.
@group(0) @binding(3) var<storage, read> dist: array<u32>;
@group(0) @binding(4) var<storage, read> labels: array<u32>;
@group(0) @binding(5) var<storage, read> row_weights: array<f32>;
@group(0) @binding(6) var<storage, read> x: array<f32>;
// The update's buffers (advance.wgsl): the pass's centroids and sums, the next rows, and per
// cluster its shift and empty mark.
@group(0) @binding(7) var<storage, read> centroids: array<f32>;
@group(0) @binding(8) var<storage, read> sums: array<f32>;      // K x D: Σw(x − cₖ)
@group(0) @binding(9) var<storage, read> counts: array<u32>;    // K
@group(0) @binding(10) var<storage, read> sq_pairs: array<f32>; // K x 2: Σw·d², Σw
@group(0) @binding(11) var<storage, read_write> next: array<f32>;
@group(0) @binding(12) var<storage, read_write> cluster_shift: array<f32>;
@group(0) @binding(13) var<storage, read_write> cluster_empty: array<u32>;

var<workgroup> wg_empty: u32;
var<workgroup> wg_planned: u32;
var<workgroup> wg_best: array<vec4<u32>, REPAIR_WG_SIZE>;
var<workgroup> wg_sum: array<f32, REPAIR_WG_SIZE>;
var<workgroup> wg_count: array<u32, REPAIR_WG_SIZE>;
// The plan: per empty cluster (ascending) the list slot it takes, its donor, and 1 where
// that donor gives no earlier row.
var<workgroup> plan_slot: array<u32, REPAIR_ROUNDS_MAX>;
var<workgroup> plan_donor: array<u32, REPAIR_ROUNDS_MAX>;
var<workgroup> plan_first: array<u32, REPAIR_ROUNDS_MAX>;
// Clusters whose count or weight the plan changed, with their new values.
var<workgroup> touched: array<u32, 64>;
var<workgroup> touched_count: array<u32, 64>;
var<workgroup> touched_weight: array<f32, 64>;

const NO_PICK: vec4<u32> = vec4<u32>(0u, REPAIR_NONE, 0u, 0u);

// Whether the repair runs this step: some cluster is empty, and no more than the rounds can
// repair. Uniform across the workgroup.
fn repair_active(lid: u32) -> bool {
    if lid == 0u {
        wg_empty = repair[0];
    }
    let empty = workgroupUniformLoad(&wg_empty);
    return empty > 0u && empty <= params.rounds;
}

// Whether `a` comes before `b` in the repair's order (no row comes after every row).
fn comes_first(a: vec4<u32>, b: vec4<u32>) -> bool {
    if a.y == REPAIR_NONE {
        return false;
    }
    return b.y == REPAIR_NONE || a.x > b.x || (a.x == b.x && a.y < b.y);
}

// The first of the workgroup's `best` values, every invocation taking part.
fn reduce_best(lid: u32, best: vec4<u32>) -> vec4<u32> {
    wg_best[lid] = best;
    for (var s = REPAIR_WG_SIZE / 2u; s > 0u; s = s / 2u) {
        workgroupBarrier();
        if lid < s && comes_first(wg_best[lid + s], wg_best[lid]) {
            wg_best[lid] = wg_best[lid + s];
        }
    }
    return workgroupUniformLoad(&wg_best[0]);
}

// The pick of the round whose partials are in half `half`: the first of every slot's best.
fn round_pick(lid: u32, half: u32) -> vec4<u32> {
    var best = NO_PICK;
    for (var s = lid; s < params.slots; s += REPAIR_WG_SIZE) {
        let p = partials[half * params.slots + s];
        if comes_first(p, best) {
            best = p;
        }
    }
    let pick = reduce_best(lid, best);
    workgroupBarrier();
    return pick;
}

// Appends round `round`'s pick to the list (the first chunk's first invocation only).
fn append_pick(round: u32, pick: vec4<u32>) {
    let at = REPAIR_LIST_AT + 4u * round;
    repair[at] = pick.y;
    repair[at + 1u] = pick.z;
    repair[at + 2u] = pick.w;
    repair[at + 3u] = 0u;
}

@compute @workgroup_size(REPAIR_WG_SIZE)
fn repair_count(@builtin(local_invocation_index) lid: u32) {
    // Each invocation a contiguous span of clusters, so a scan of the counts orders them.
    let span = (params.k + REPAIR_WG_SIZE - 1u) / REPAIR_WG_SIZE;
    let first = lid * span;
    let end = min(first + span, params.k);
    var mine = 0u;
    for (var c = first; c < end; c++) {
        mine += cluster_empty[c];
    }
    wg_count[lid] = mine;
    // Inclusive scan (Hillis-Steele): wg_count[lid] = empties in spans 0..=lid.
    for (var s = 1u; s < REPAIR_WG_SIZE; s = s * 2u) {
        workgroupBarrier();
        var add = 0u;
        if lid >= s {
            add = wg_count[lid - s];
        }
        workgroupBarrier();
        wg_count[lid] += add;
    }
    workgroupBarrier();
    var at = wg_count[lid] - mine;
    for (var c = first; c < end && at < REPAIR_ROUNDS_MAX; c++) {
        if cluster_empty[c] != 0u {
            repair[REPAIR_EMPTY_AT + at] = c;
            at += 1u;
        }
    }
    if lid == 0u {
        repair[0] = wg_count[REPAIR_WG_SIZE - 1u];
    }
}

@compute @workgroup_size(REPAIR_WG_SIZE)
fn repair_select(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    if !repair_active(lid) {
        return;
    }
    let wg = wid.x;
    var cursor = NO_PICK;
    if params.round > 0u {
        cursor = round_pick(lid, (params.round - 1u) % 2u);
        if params.row_start == 0u && wg == 0u && lid == 0u {
            append_pick(params.round - 1u, cursor);
        }
    }
    // Round 0 starts before every row; a later round after the last pick (none once the
    // rows ran out).
    let from_start = params.round == 0u;
    var best = NO_PICK;
    if from_start || cursor.y != REPAIR_NONE {
        let stride = groups.x * REPAIR_WG_SIZE;
        for (var i = wg * REPAIR_WG_SIZE + lid; i < params.n_rows; i += stride) {
            let key = order_key(dist[i]);
            let row = params.row_start + i;
            let after = from_start || key < cursor.x || (key == cursor.x && row > cursor.y);
            if after && (best.y == REPAIR_NONE || key > best.x) {
                var w = 1.0;
                if params.weighted == 1u {
                    w = row_weights[i];
                }
                best = vec4<u32>(key, row, labels[i], bitcast<u32>(w));
            }
        }
    }
    // Rows ascend along an invocation's stride, so `key > best.x` kept the first of a tie.
    let pick = reduce_best(lid, best);
    if lid == 0u {
        partials[(params.round % 2u) * params.slots + params.slot_base + wg] = pick;
    }
}

@compute @workgroup_size(REPAIR_WG_SIZE)
fn repair_gather(@builtin(local_invocation_index) lid: u32) {
    if !repair_active(lid) {
        return;
    }
    let rounds = params.rounds;
    let last = round_pick(lid, (rounds - 1u) % 2u);
    if params.row_start == 0u && lid == 0u {
        append_pick(rounds - 1u, last);
    }
    let d = params.d;
    for (var e = lid; e < rounds * d; e += REPAIR_WG_SIZE) {
        let s = e / d;
        let j = e % d;
        var row = last.y;
        if s + 1u < rounds {
            row = repair[REPAIR_LIST_AT + 4u * s];
        }
        if row != REPAIR_NONE && row >= params.row_start && row - params.row_start < params.n_rows {
            let value = x[params.x_offset + (row - params.row_start) * d + j];
            repair[REPAIR_ROWS_AT + s * d + j] = bitcast<u32>(value);
        }
    }
}

// The plan's entry for cluster c among the `n` touched so far, or n when it has none.
fn touched_index(c: u32, n: u32) -> u32 {
    for (var t = 0u; t < n; t++) {
        if touched[t] == c {
            return t;
        }
    }
    return n;
}

// Sets cluster c's count and weight in the plan; returns the touched clusters' new count.
fn touch(c: u32, n: u32, count: u32, weight: f32) -> u32 {
    let t = touched_index(c, n);
    touched[t] = c;
    touched_count[t] = count;
    touched_weight[t] = weight;
    return max(n, t + 1u);
}

// The plan, by one invocation, in the host loop's order; false where it fails.
fn plan(empty_n: u32) -> bool {
    var n_touched = 0u;
    var cursor = 0u;
    for (var g = 0u; g < empty_n; g++) {
        let empty = repair[REPAIR_EMPTY_AT + g];
        var slot = REPAIR_NONE;
        var label = 0u;
        var count = 0u;
        var t = 0u;
        while cursor < params.rounds {
            let at = REPAIR_LIST_AT + 4u * cursor;
            cursor += 1u;
            if repair[at] == REPAIR_NONE {
                break;
            }
            label = repair[at + 1u];
            t = touched_index(label, n_touched);
            count = counts[label];
            if t < n_touched {
                count = touched_count[t];
            }
            if count > 1u {
                slot = cursor - 1u;
                break;
            }
        }
        if slot == REPAIR_NONE {
            return false;
        }
        let w = bitcast<f32>(repair[REPAIR_LIST_AT + 4u * slot + 2u]);
        var donor_weight = cluster_weight(label);
        if t < n_touched {
            donor_weight = touched_weight[t];
        }
        // A donor left without weight becomes empty: the host's repair, which revisits it.
        if !(donor_weight - w > 0.0) {
            return false;
        }
        plan_first[g] = select(0u, 1u, t == n_touched);
        n_touched = touch(label, n_touched, count - 1u, donor_weight - w);
        n_touched = touch(empty, n_touched, 1u, w);
        plan_slot[g] = slot;
        plan_donor[g] = label;
    }
    return true;
}

// Cluster c's weight Wₖ before the repair: the weight sum, or the count (as advance.wgsl's;
// a piece cannot name the kernel's bindings).
fn cluster_weight(c: u32) -> f32 {
    if params.weighted == 1u {
        return sq_pairs[2u * c + 1u];
    }
    return f32(counts[c]);
}

// Sum of every invocation's `value`.
fn reduce_sum(lid: u32, value: f32) -> f32 {
    wg_sum[lid] = value;
    for (var s = REPAIR_WG_SIZE / 2u; s > 0u; s = s / 2u) {
        workgroupBarrier();
        if lid < s {
            wg_sum[lid] = wg_sum[lid] + wg_sum[lid + s];
        }
    }
    let total = workgroupUniformLoad(&wg_sum[0]);
    workgroupBarrier();
    return total;
}

// Cluster c's next row from the values its invocations wrote to `next` (unit length again
// for the cosine metric; a row of zeros keeps the centroid), its shift, and its mark cleared.
fn finish_cluster(lid: u32, c: u32) {
    let d = params.d;
    let row = c * d;
    var norm_sq = 0.0;
    if params.spherical == 1u {
        for (var j = lid; j < d; j += REPAIR_WG_SIZE) {
            norm_sq += next[row + j] * next[row + j];
        }
    }
    let norm = sqrt(reduce_sum(lid, norm_sq));
    let unit = norm > 0.0 && norm <= F32_MAX;
    var shift = 0.0;
    for (var j = lid; j < d; j += REPAIR_WG_SIZE) {
        let old = centroids[row + j];
        var v = next[row + j];
        if params.spherical == 1u {
            v = select(old, v / norm, unit);
        }
        next[row + j] = v;
        shift += (v - old) * (v - old);
    }
    let total = reduce_sum(lid, shift);
    if lid == 0u {
        cluster_shift[c] = total;
        cluster_empty[c] = 0u;
    }
}

@compute @workgroup_size(REPAIR_WG_SIZE)
fn repair_apply(@builtin(local_invocation_index) lid: u32) {
    if !repair_active(lid) {
        return;
    }
    let empty_n = workgroupUniformLoad(&wg_empty);
    if lid == 0u {
        wg_planned = select(0u, 1u, plan(empty_n));
    }
    if workgroupUniformLoad(&wg_planned) == 0u {
        return;
    }
    let d = params.d;
    for (var g = 0u; g < empty_n; g++) {
        let empty = repair[REPAIR_EMPTY_AT + g];
        let listed = REPAIR_ROWS_AT + plan_slot[g] * d;
        for (var j = lid; j < d; j += REPAIR_WG_SIZE) {
            next[empty * d + j] = bitcast<f32>(repair[listed + j]);
        }
        finish_cluster(lid, empty);
        // The donor, once, at its first gift: its mean without every row it gives, in order.
        if workgroupUniformLoad(&plan_first[g]) == 1u {
            let donor = plan_donor[g];
            let weight = cluster_weight(donor);
            for (var j = lid; j < d; j += REPAIR_WG_SIZE) {
                let at = donor * d + j;
                var c = centroids[at] + sums[at] / weight;
                var m = weight;
                for (var h = g; h < empty_n; h++) {
                    if plan_donor[h] == donor {
                        let slot = plan_slot[h];
                        let w = bitcast<f32>(repair[REPAIR_LIST_AT + 4u * slot + 2u]);
                        let xj = bitcast<f32>(repair[REPAIR_ROWS_AT + slot * d + j]);
                        c = c + w * (c - xj) / (m - w);
                        m = m - w;
                    }
                }
                next[at] = c;
            }
            finish_cluster(lid, donor);
        }
    }
}
