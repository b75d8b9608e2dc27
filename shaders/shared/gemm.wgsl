// The GEMM-class core of every product-shaped kernel (the nearest-centroid assignment, the
// covariance and Xᵀ(X·V), the projections and S·V, the full-covariance E-step, the M-step's
// scatter, the silhouette's distance sums, the RBF affinity): C[m][n] = Σ_d A[m][d] · B[n][d]
// over a depth range (or Σ_d (A[m][d] − B[n][d])², block_outer_sq), with the operands
// staged through workgroup memory (GPUs) or fetched straight from flat textures (CPU-like
// adapters, shared/texels.wgsl), and the same register block on both paths.
//
// Register block. An invocation owns GEMM_RM x GEMM_RN outputs (4 or 8 each, overrides the
// host picks), held as `Block.v[2 i + h]`: row i, columns 4h .. 4h + 3. One depth step is an
// outer product, `v[2 i + h] = fma(vec4(a_i), b_h, v[2 i + h])`: GEMM_RM·GEMM_RN FMAs for
// (GEMM_RM + GEMM_RN) / 4 vec4 operand reads, so with 8 x 8 each value read from workgroup
// memory feeds 8 FMAs and vec4 reads keep the shared-memory pipe well below the FMA pipe
// (4 LDS.128 per 64 FMAs). Every output is one fma chain over the depth in increasing order,
// starting from +0.0, whatever the path, tile or staging: so every variant built on this core
// gives the same bits, and zero padding (past N, K or D) leaves a chain unchanged.
//
// GPU path (staging). A workgroup of GEMM_LANES_M x GEMM_LANES_N invocations owns a tile of
// GEMM_LANES_M·GEMM_RM rows and GEMM_LANES_N·GEMM_RN columns. Invocation (tx, ty) owns the
// rows 4 ty .. 4 ty + 3 and, when GEMM_RM = 8, the same four rows in the tile's second half
// (gemm_row); columns likewise with tx (gemm_col), so its operands are one or two aligned
// vec4s per depth and neighbouring invocations read neighbouring vec4s (no bank conflicts).
// A stage is GEMM_DEPTH depths of both operands in gemm_a / gemm_b, laid out [depth][item]
// with GEMM_ROW_VEC4S vec4s a depth row: one vec4 of padding past the largest tile, so the
// transposed scalar stores of an item-major operand (four depths of one item, from a vec4
// global load) hit 32 different banks across a warp. Kernels load a stage with vec4 global
// loads into registers (gemm_loads_* slots) while the previous stage is being multiplied
// (register prefetch), then store it (gemm_put_*) between two barriers; gemm_multiply_stage
// runs the register block over the stage.
//
// CPU path (textures). On lavapipe a workgroup-memory or storage load is a loop over the SIMD
// lanes with a branch per lane, and a barrier switches coroutines, so staging costs far more
// than it saves. There each invocation fetches its own operands as flat-texture texels (four
// depths of one item: gemm_quads) and runs the same block through gemm_multiply_quads, with
// no workgroup memory and no barrier.

override GEMM_RM: u32 = 8u;       // rows per invocation: 4 or 8
override GEMM_RN: u32 = 8u;       // columns per invocation: 4 or 8
override GEMM_LANES_M: u32 = 16u; // GPU path: invocations along the tile's rows (8 or 16)
override GEMM_LANES_N: u32 = 16u; // GPU path: invocations along the tile's columns (8 or 16)
// Depths per stage (8 or 16): the K-step. Each stage costs two barriers and one round of
// global loads, so a deeper stage halves both per FMA (llama.cpp's mul_mm takes 16 at 128 x
// 128) for twice the workgroup memory.
override GEMM_DEPTH: u32 = 8u;

const GEMM_DEPTH_MAX: u32 = 16u;                     // the deepest stage a host may ask for
const GEMM_TILE_MAX: u32 = 128u;                     // largest tile edge: 16 lanes x 8
const GEMM_ROW_VEC4S: u32 = GEMM_TILE_MAX / 4u + 1u; // a depth row of a stage, padded
// vec4s of one operand's stage: GEMM_DEPTH · GEMM_ROW_VEC4S, which the host gives with
// GEMM_DEPTH (a workgroup array's size must name an override).
override GEMM_STAGE_VEC4S: u32 = GEMM_DEPTH * GEMM_ROW_VEC4S;
// Most vec4 global loads one invocation makes per operand and stage: a 128-item tile over
// the smallest workgroup (8 x 8 lanes) at the deepest stage. The prefetch arrays take this
// many; gemm_has_load leaves the slots a configuration does not use out at compile time.
const GEMM_MAX_LOADS: u32 = GEMM_TILE_MAX * GEMM_DEPTH_MAX / 4u / 64u;

var<workgroup> gemm_a: array<vec4<f32>, GEMM_STAGE_VEC4S>;
var<workgroup> gemm_b: array<vec4<f32>, GEMM_STAGE_VEC4S>;

// The accumulators of one register block: v[2 i + h] = row i, columns 4h .. 4h + 3.
struct Block {
    v: array<vec4<f32>, 16>,
}

// acc += a ⊗ b at one depth for a block of rm x rn (4 or 8 each): a_lo = rows 0..3, a_hi =
// rows 4..7, b_lo = columns 0..3, b_hi = columns 4..7 (halves past rm / rn are ignored).
fn block_outer(acc: ptr<function, Block>, a_lo: vec4<f32>, a_hi: vec4<f32>, b_lo: vec4<f32>, b_hi: vec4<f32>, rm: u32, rn: u32) {
    (*acc).v[0] = fma(vec4<f32>(a_lo.x), b_lo, (*acc).v[0]);
    (*acc).v[2] = fma(vec4<f32>(a_lo.y), b_lo, (*acc).v[2]);
    (*acc).v[4] = fma(vec4<f32>(a_lo.z), b_lo, (*acc).v[4]);
    (*acc).v[6] = fma(vec4<f32>(a_lo.w), b_lo, (*acc).v[6]);
    if rn == 8u {
        (*acc).v[1] = fma(vec4<f32>(a_lo.x), b_hi, (*acc).v[1]);
        (*acc).v[3] = fma(vec4<f32>(a_lo.y), b_hi, (*acc).v[3]);
        (*acc).v[5] = fma(vec4<f32>(a_lo.z), b_hi, (*acc).v[5]);
        (*acc).v[7] = fma(vec4<f32>(a_lo.w), b_hi, (*acc).v[7]);
    }
    if rm == 8u {
        (*acc).v[8] = fma(vec4<f32>(a_hi.x), b_lo, (*acc).v[8]);
        (*acc).v[10] = fma(vec4<f32>(a_hi.y), b_lo, (*acc).v[10]);
        (*acc).v[12] = fma(vec4<f32>(a_hi.z), b_lo, (*acc).v[12]);
        (*acc).v[14] = fma(vec4<f32>(a_hi.w), b_lo, (*acc).v[14]);
        if rn == 8u {
            (*acc).v[9] = fma(vec4<f32>(a_hi.x), b_hi, (*acc).v[9]);
            (*acc).v[11] = fma(vec4<f32>(a_hi.y), b_hi, (*acc).v[11]);
            (*acc).v[13] = fma(vec4<f32>(a_hi.z), b_hi, (*acc).v[13]);
            (*acc).v[15] = fma(vec4<f32>(a_hi.w), b_hi, (*acc).v[15]);
        }
    }
}

// Every access to a block's accumulators names its vec4 by a constant. An index known only
// at run time (a loop over the block's rows that the driver leaves rolled) makes GPU
// compilers move the whole array to local memory for the whole kernel, and then every FMA of
// the main loop loads and stores its accumulator there. So the epilogues reach the block
// through these switches, which fold away where the loop is unrolled and stay branches
// (registers) where it is not. A vec4's component by a run-time index is a register select.

// The vec4 q (row q / 2, columns 4 (q % 2) .. 4 (q % 2) + 3) of a block.
fn block_quad(acc: Block, q: u32) -> vec4<f32> {
    switch q {
        case 0u: { return acc.v[0]; }
        case 1u: { return acc.v[1]; }
        case 2u: { return acc.v[2]; }
        case 3u: { return acc.v[3]; }
        case 4u: { return acc.v[4]; }
        case 5u: { return acc.v[5]; }
        case 6u: { return acc.v[6]; }
        case 7u: { return acc.v[7]; }
        case 8u: { return acc.v[8]; }
        case 9u: { return acc.v[9]; }
        case 10u: { return acc.v[10]; }
        case 11u: { return acc.v[11]; }
        case 12u: { return acc.v[12]; }
        case 13u: { return acc.v[13]; }
        case 14u: { return acc.v[14]; }
        case 15u: { return acc.v[15]; }
        default: { return vec4<f32>(); }
    }
}

// Sets the vec4 q of a block (block_quad's layout).
fn block_set_quad(acc: ptr<function, Block>, q: u32, v: vec4<f32>) {
    switch q {
        case 0u: { (*acc).v[0] = v; }
        case 1u: { (*acc).v[1] = v; }
        case 2u: { (*acc).v[2] = v; }
        case 3u: { (*acc).v[3] = v; }
        case 4u: { (*acc).v[4] = v; }
        case 5u: { (*acc).v[5] = v; }
        case 6u: { (*acc).v[6] = v; }
        case 7u: { (*acc).v[7] = v; }
        case 8u: { (*acc).v[8] = v; }
        case 9u: { (*acc).v[9] = v; }
        case 10u: { (*acc).v[10] = v; }
        case 11u: { (*acc).v[11] = v; }
        case 12u: { (*acc).v[12] = v; }
        case 13u: { (*acc).v[13] = v; }
        case 14u: { (*acc).v[14] = v; }
        case 15u: { (*acc).v[15] = v; }
        default: {}
    }
}

// The output (row i, column m) of a block.
fn block_at(acc: Block, i: u32, m: u32) -> f32 {
    return block_quad(acc, 2u * i + m / 4u)[m % 4u];
}

// ---- GPU path: staging through workgroup memory ----

// An invocation's place in the tile.
struct GemmLane {
    tx: u32,
    ty: u32,
}

fn gemm_lane(lid: u32) -> GemmLane {
    return GemmLane(lid % GEMM_LANES_N, lid / GEMM_LANES_N);
}

fn gemm_wg_size() -> u32 {
    return GEMM_LANES_M * GEMM_LANES_N;
}

fn gemm_tile_m() -> u32 {
    return GEMM_LANES_M * GEMM_RM;
}

fn gemm_tile_n() -> u32 {
    return GEMM_LANES_N * GEMM_RN;
}

// The tile row of register row i (i < GEMM_RM), and the tile column of register column m.
fn gemm_row(lane: GemmLane, i: u32) -> u32 {
    return (i / 4u) * 4u * GEMM_LANES_M + 4u * lane.ty + i % 4u;
}

fn gemm_col(lane: GemmLane, m: u32) -> u32 {
    return (m / 4u) * 4u * GEMM_LANES_N + 4u * lane.tx + m % 4u;
}

// One vec4 global load of a stage: `item` (a tile row or column) and `depth` (within the
// stage) of its first value. Item-major operands (rows of data over their features) load
// four depths of one item; depth-major ones (data rows feeding a cross product, a weight
// matrix stored depth by depth) four items at one depth.
struct GemmSlot {
    item: u32,
    depth: u32,
}

// Loads of a stage of an operand whose tile has `items` items: load e of invocation lid is
// slot lid + e · gemm_wg_size(), while that is below the stage's items · GEMM_DEPTH / 4.
fn gemm_loads(items: u32) -> u32 {
    return items * GEMM_DEPTH / 4u;
}

// Whether invocation lid makes load e of a stage of `loads` loads (slot e · wg + lid). The
// first test depends on overrides and the unrolled e alone, so a compiler drops the prefetch
// slots past a configuration's loads (GEMM_MAX_LOADS is sized for the deepest stage on the
// smallest workgroup) without having to know that lid < wg.
fn gemm_has_load(e: u32, lid: u32, loads: u32) -> bool {
    let wg = gemm_wg_size();
    return e * wg < loads && e * wg + lid < loads;
}

fn gemm_item_major_slot(s: u32) -> GemmSlot {
    return GemmSlot(s / (GEMM_DEPTH / 4u), 4u * (s % (GEMM_DEPTH / 4u)));
}

fn gemm_depth_major_slot(s: u32, items: u32) -> GemmSlot {
    return GemmSlot(4u * (s % (items / 4u)), s / (items / 4u));
}

// Stores of a stage (between two barriers): `v` loaded at `slot`.
fn gemm_put_a_item_major(slot: GemmSlot, v: vec4<f32>) {
    let q = slot.item / 4u;
    let c = slot.item % 4u;
    gemm_a[slot.depth * GEMM_ROW_VEC4S + q][c] = v.x;
    gemm_a[(slot.depth + 1u) * GEMM_ROW_VEC4S + q][c] = v.y;
    gemm_a[(slot.depth + 2u) * GEMM_ROW_VEC4S + q][c] = v.z;
    gemm_a[(slot.depth + 3u) * GEMM_ROW_VEC4S + q][c] = v.w;
}

fn gemm_put_b_item_major(slot: GemmSlot, v: vec4<f32>) {
    let q = slot.item / 4u;
    let c = slot.item % 4u;
    gemm_b[slot.depth * GEMM_ROW_VEC4S + q][c] = v.x;
    gemm_b[(slot.depth + 1u) * GEMM_ROW_VEC4S + q][c] = v.y;
    gemm_b[(slot.depth + 2u) * GEMM_ROW_VEC4S + q][c] = v.z;
    gemm_b[(slot.depth + 3u) * GEMM_ROW_VEC4S + q][c] = v.w;
}

fn gemm_put_a_depth_major(slot: GemmSlot, v: vec4<f32>) {
    gemm_a[slot.depth * GEMM_ROW_VEC4S + slot.item / 4u] = v;
}

fn gemm_put_b_depth_major(slot: GemmSlot, v: vec4<f32>) {
    gemm_b[slot.depth * GEMM_ROW_VEC4S + slot.item / 4u] = v;
}

// How an operand's prefetched loads are laid out (gemm_item_major_slot or
// gemm_depth_major_slot), for gemm_put_stage.
const GEMM_ITEM_MAJOR: u32 = 0u;
const GEMM_DEPTH_MAJOR: u32 = 1u;

// Stores a prefetched stage, A's loads `pa` and B's `pb` (load e of invocation lid is slot
// lid + e · gemm_wg_size()), into gemm_a / gemm_b between two barriers: the first waits for
// the products of the stage being replaced, the second for the whole new stage.
fn gemm_put_stage(lid: u32, pa: array<vec4<f32>, GEMM_MAX_LOADS>, a_layout: u32, pb: array<vec4<f32>, GEMM_MAX_LOADS>, b_layout: u32) {
    let wg = gemm_wg_size();
    let tile_m = gemm_tile_m();
    let tile_n = gemm_tile_n();
    workgroupBarrier();
    // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
    // prefetch registers are indexed by constants and stay registers.
    for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
        if gemm_has_load(e, lid, gemm_loads(tile_m)) {
            if a_layout == GEMM_DEPTH_MAJOR {
                gemm_put_a_depth_major(gemm_depth_major_slot(e * wg + lid, tile_m), pa[e]);
            } else {
                gemm_put_a_item_major(gemm_item_major_slot(e * wg + lid), pa[e]);
            }
        }
    }
    // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
    // prefetch registers are indexed by constants and stay registers.
    for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
        if gemm_has_load(e, lid, gemm_loads(tile_n)) {
            if b_layout == GEMM_DEPTH_MAJOR {
                gemm_put_b_depth_major(gemm_depth_major_slot(e * wg + lid, tile_n), pb[e]);
            } else {
                gemm_put_b_item_major(gemm_item_major_slot(e * wg + lid), pb[e]);
            }
        }
    }
    workgroupBarrier();
}

// A lane's operands at one staged depth: rows lo (and hi when the block is 8 tall) of A,
// columns lo (and hi when 8 wide) of B.
struct StageOperands {
    a_lo: vec4<f32>,
    a_hi: vec4<f32>,
    b_lo: vec4<f32>,
    b_hi: vec4<f32>,
}

fn gemm_stage_operands(lane: GemmLane, d: u32) -> StageOperands {
    let row = d * GEMM_ROW_VEC4S;
    var o = StageOperands(gemm_a[row + lane.ty], vec4<f32>(), gemm_b[row + lane.tx], vec4<f32>());
    if GEMM_RM == 8u {
        o.a_hi = gemm_a[row + GEMM_LANES_M + lane.ty];
    }
    if GEMM_RN == 8u {
        o.b_hi = gemm_b[row + GEMM_LANES_N + lane.tx];
    }
    return o;
}

// The register block over the staged depths, in order.
fn gemm_multiply_stage(lane: GemmLane, acc: ptr<function, Block>) {
    for (var d = 0u; d < GEMM_DEPTH; d++) {
        let o = gemm_stage_operands(lane, d);
        block_outer(acc, o.a_lo, o.a_hi, o.b_lo, o.b_hi, GEMM_RM, GEMM_RN);
    }
}

// ---- CPU path: operands fetched per invocation ----

// Four depths of each of up to 8 items: v[i] holds depths d .. d + 3 of item i.
struct Quads {
    v: array<vec4<f32>, 8>,
}

// acc += Σ over the four depths of a ⊗ b, depth by depth, for a full 8 x 8 block (a.v[i]:
// row i, b.v[m]: column m). The CPU path always runs 8 x 8, so it depends on no override.
fn gemm_multiply_quads(acc: ptr<function, Block>, a: Quads, b: Quads) {
    let a0 = a.v[0];
    let a1 = a.v[1];
    let a2 = a.v[2];
    let a3 = a.v[3];
    let a4 = a.v[4];
    let a5 = a.v[5];
    let a6 = a.v[6];
    let a7 = a.v[7];
    let b0 = b.v[0];
    let b1 = b.v[1];
    let b2 = b.v[2];
    let b3 = b.v[3];
    let b4 = b.v[4];
    let b5 = b.v[5];
    let b6 = b.v[6];
    let b7 = b.v[7];
    block_outer(acc, vec4<f32>(a0.x, a1.x, a2.x, a3.x), vec4<f32>(a4.x, a5.x, a6.x, a7.x),
                vec4<f32>(b0.x, b1.x, b2.x, b3.x), vec4<f32>(b4.x, b5.x, b6.x, b7.x), 8u, 8u);
    block_outer(acc, vec4<f32>(a0.y, a1.y, a2.y, a3.y), vec4<f32>(a4.y, a5.y, a6.y, a7.y),
                vec4<f32>(b0.y, b1.y, b2.y, b3.y), vec4<f32>(b4.y, b5.y, b6.y, b7.y), 8u, 8u);
    block_outer(acc, vec4<f32>(a0.z, a1.z, a2.z, a3.z), vec4<f32>(a4.z, a5.z, a6.z, a7.z),
                vec4<f32>(b0.z, b1.z, b2.z, b3.z), vec4<f32>(b4.z, b5.z, b6.z, b7.z), 8u, 8u);
    block_outer(acc, vec4<f32>(a0.w, a1.w, a2.w, a3.w), vec4<f32>(a4.w, a5.w, a6.w, a7.w),
                vec4<f32>(b0.w, b1.w, b2.w, b3.w), vec4<f32>(b4.w, b5.w, b6.w, b7.w), 8u, 8u);
}

// acc += (a − b)² element by element at one depth (a_i against every column): the distance
// tile of kernels that need Σ (a − b)² exactly rather than through norms (pairwise distances).
fn block_outer_sq(acc: ptr<function, Block>, a_lo: vec4<f32>, a_hi: vec4<f32>, b_lo: vec4<f32>, b_hi: vec4<f32>, rm: u32, rn: u32) {
    var t: vec4<f32>;
    t = vec4<f32>(a_lo.x) - b_lo; (*acc).v[0] = fma(t, t, (*acc).v[0]);
    t = vec4<f32>(a_lo.y) - b_lo; (*acc).v[2] = fma(t, t, (*acc).v[2]);
    t = vec4<f32>(a_lo.z) - b_lo; (*acc).v[4] = fma(t, t, (*acc).v[4]);
    t = vec4<f32>(a_lo.w) - b_lo; (*acc).v[6] = fma(t, t, (*acc).v[6]);
    if rn == 8u {
        t = vec4<f32>(a_lo.x) - b_hi; (*acc).v[1] = fma(t, t, (*acc).v[1]);
        t = vec4<f32>(a_lo.y) - b_hi; (*acc).v[3] = fma(t, t, (*acc).v[3]);
        t = vec4<f32>(a_lo.z) - b_hi; (*acc).v[5] = fma(t, t, (*acc).v[5]);
        t = vec4<f32>(a_lo.w) - b_hi; (*acc).v[7] = fma(t, t, (*acc).v[7]);
    }
    if rm == 8u {
        t = vec4<f32>(a_hi.x) - b_lo; (*acc).v[8] = fma(t, t, (*acc).v[8]);
        t = vec4<f32>(a_hi.y) - b_lo; (*acc).v[10] = fma(t, t, (*acc).v[10]);
        t = vec4<f32>(a_hi.z) - b_lo; (*acc).v[12] = fma(t, t, (*acc).v[12]);
        t = vec4<f32>(a_hi.w) - b_lo; (*acc).v[14] = fma(t, t, (*acc).v[14]);
        if rn == 8u {
            t = vec4<f32>(a_hi.x) - b_hi; (*acc).v[9] = fma(t, t, (*acc).v[9]);
            t = vec4<f32>(a_hi.y) - b_hi; (*acc).v[11] = fma(t, t, (*acc).v[11]);
            t = vec4<f32>(a_hi.z) - b_hi; (*acc).v[13] = fma(t, t, (*acc).v[13]);
            t = vec4<f32>(a_hi.w) - b_hi; (*acc).v[15] = fma(t, t, (*acc).v[15]);
        }
    }
}

// gemm_multiply_stage with block_outer_sq.
fn gemm_multiply_stage_sq(lane: GemmLane, acc: ptr<function, Block>) {
    for (var d = 0u; d < GEMM_DEPTH; d++) {
        let o = gemm_stage_operands(lane, d);
        block_outer_sq(acc, o.a_lo, o.a_hi, o.b_lo, o.b_hi, GEMM_RM, GEMM_RN);
    }
}

// Stage storage reused once the products are done: 2 GEMM_STAGE_VEC4S vec4s across gemm_a and
// gemm_b (epilogues that exchange per-row values between invocations). The caller
// synchronises.
fn gemm_scratch_store(e: u32, v: vec4<f32>) {
    if e < GEMM_STAGE_VEC4S {
        gemm_a[e] = v;
    } else {
        gemm_b[e - GEMM_STAGE_VEC4S] = v;
    }
}

fn gemm_scratch_load(e: u32) -> vec4<f32> {
    if e < GEMM_STAGE_VEC4S {
        return gemm_a[e];
    }
    return gemm_b[e - GEMM_STAGE_VEC4S];
}

// Per-row parts through the stage storage: the GEMM_LANES_N invocations that share a tile row
// each hold a part of its result (its columns' share); gemm_add_row_parts adds them in lane
// order, a fixed order, so the sums are reproducible. tile rows x GEMM_LANES_N values fit the
// two stages (2048 at 128 x 16 lanes). The caller synchronises before (the stages are free)
// and after.
// `lo` holds register rows 0..3's parts, `hi` rows 4..7's (vec4s rather than an array, so
// no run-time index reaches a register array: see block_quad).
fn gemm_store_row_parts(lane: GemmLane, lo: vec4<f32>, hi: vec4<f32>) {
    for (var i = 0u; i < GEMM_RM; i++) {
        let e = gemm_row(lane, i) * GEMM_LANES_N + lane.tx;
        let part = select(hi[i % 4u], lo[i % 4u], i < 4u);
        if e / 4u < GEMM_STAGE_VEC4S {
            gemm_a[e / 4u][e % 4u] = part;
        } else {
            gemm_b[e / 4u - GEMM_STAGE_VEC4S][e % 4u] = part;
        }
    }
}

// `start` plus the parts of tile row `row`, one by one in lane order.
fn gemm_add_row_parts(row: u32, start: f32) -> f32 {
    var sum = start;
    for (var c = 0u; c < GEMM_LANES_N; c++) {
        let e = row * GEMM_LANES_N + c;
        sum += gemm_scratch_load(e / 4u)[e % 4u];
    }
    return sum;
}

// The (row tile, column tile) of pair index `pair` among the n_tiles (n_tiles + 1) / 2 tiles
// on or above the diagonal of a symmetric result: row ta holds n_tiles − ta of them.
fn gemm_upper_tile_pair(pair: u32, n_tiles: u32) -> vec2<u32> {
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
