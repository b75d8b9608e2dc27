// The tiled register-block product of the GEMM-shaped kernels (covariance, projection,
// gmm_estep, gmm_mstep; assign and silhouette through distance_tile.wgsl).
//
// A workgroup of TILE_LANES x TILE_LANES invocations owns a TILE x TILE output tile. The
// reduction runs in steps of TILE_K: the kernel stages one step of the tile's rows into
// tile_a and of its columns into tile_b, both laid out [k][TILE], and each invocation then
// accumulates a TILE_BLOCK x TILE_BLOCK register block (rows lane_row(i), columns
// lane_col(m)), so every value read from workgroup memory feeds TILE_BLOCK FMAs. What a kernel
// stages (which operand, shift or weight) is its own; the sizes, the staging slots, the lanes
// and the inner loop are here, once.

const TILE_LANES: u32 = 16u;                       // invocations along each edge of the tile
const TILE_BLOCK: u32 = 4u;                        // register block edge
const TILE: u32 = TILE_LANES * TILE_BLOCK;         // output tile edge
const TILE_REGS: u32 = TILE_BLOCK * TILE_BLOCK;    // accumulators per invocation
const TILE_K: u32 = 16u;                           // reduction depth staged per step
const TILE_STEP: u32 = TILE_K * TILE;              // values of one operand per step
const TILE_WG_SIZE: u32 = TILE_LANES * TILE_LANES; // invocations per workgroup

var<workgroup> tile_a: array<f32, TILE_STEP>; // [k][tile row]
var<workgroup> tile_b: array<f32, TILE_STEP>; // [k][tile column]

// An invocation's place in the tile: column lane tx, row lane ty.
struct Lane {
    tx: u32,
    ty: u32,
}

fn tile_lane(lid: u32) -> Lane {
    return Lane(lid % TILE_LANES, lid / TILE_LANES);
}

// The tile row of register row i, and the tile column of register column m.
fn lane_row(lane: Lane, i: u32) -> u32 {
    return lane.ty + i * TILE_LANES;
}

fn lane_col(lane: Lane, m: u32) -> u32 {
    return lane.tx + m * TILE_LANES;
}

// Where value e (0 <= e < TILE_STEP) of a staging step goes: the tile row or column `item`,
// the depth `k` within the step, and the index `at` in tile_a / tile_b.
struct Slot {
    item: u32,
    k: u32,
    at: u32,
}

// For operands stored item by item (data rows over their features): consecutive invocations
// read consecutive values of one item, so the loads are coalesced.
fn item_major_slot(e: u32) -> Slot {
    let item = e / TILE_K;
    let k = e % TILE_K;
    return Slot(item, k, k * TILE + item);
}

// For operands stored depth by depth (rows of data feeding a cross product, rows of a weight
// matrix): consecutive invocations read consecutive items of one depth.
fn depth_major_slot(e: u32) -> Slot {
    return Slot(e % TILE, e / TILE, e);
}

// The values one invocation reads at depth k of a staged step: its rows' from tile_a, its
// columns' from tile_b.
struct BlockOperands {
    a: array<f32, TILE_BLOCK>,
    b: array<f32, TILE_BLOCK>,
}

fn block_operands(lane: Lane, k: u32) -> BlockOperands {
    var o: BlockOperands;
    for (var i = 0u; i < TILE_BLOCK; i++) {
        o.a[i] = tile_a[k * TILE + lane_row(lane, i)];
        o.b[i] = tile_b[k * TILE + lane_col(lane, i)];
    }
    return o;
}

// acc[i * TILE_BLOCK + m] += tile_a[k][lane_row(i)] · tile_b[k][lane_col(m)] over the staged
// step, k in order.
fn accumulate_products(lane: Lane, acc: ptr<function, array<f32, TILE_REGS>>) {
    for (var k = 0u; k < TILE_K; k++) {
        let o = block_operands(lane, k);
        for (var i = 0u; i < TILE_BLOCK; i++) {
            for (var m = 0u; m < TILE_BLOCK; m++) {
                (*acc)[i * TILE_BLOCK + m] = fma(o.a[i], o.b[m], (*acc)[i * TILE_BLOCK + m]);
            }
        }
    }
}

// The (row tile, column tile) of pair index `pair` among the n_tiles (n_tiles + 1) / 2 tiles
// on or above the diagonal of a symmetric result: row ta holds n_tiles − ta of them.
fn upper_tile_pair(pair: u32, n_tiles: u32) -> vec2<u32> {
    var rest = pair;
    var ta = 0u;
    loop {
        let in_row = n_tiles - ta;
        if rest < in_row || in_row == 0u {
            break;
        }
        rest -= in_row;
        ta += 1u;
    }
    return vec2<u32>(ta, ta + rest);
}

// One value per tile row and lane column: the TILE_LANES invocations sharing a row combine
// their parts through it, in lane order (a fixed order, so the sums are reproducible).
var<workgroup> row_parts: array<f32, TILE * TILE_LANES>;

// Stores this invocation's part of each of its rows. The caller synchronises.
fn store_row_parts(lane: Lane, parts: array<f32, TILE_BLOCK>) {
    for (var i = 0u; i < TILE_BLOCK; i++) {
        row_parts[lane_row(lane, i) * TILE_LANES + lane.tx] = parts[i];
    }
}

// `start` plus the parts of tile row `row`, added one by one in lane order.
fn add_row_parts(row: u32, start: f32) -> f32 {
    var sum = start;
    for (var c = 0u; c < TILE_LANES; c++) {
        sum += row_parts[row * TILE_LANES + c];
    }
    return sum;
}
