// Cross products of centred data over rows: per-block partials of (A − a)ᵀ(B − b).
//
// Host wrapper: src/kernels/covariance.rs.
//
// gram_partials computes, for each block of `block_rows` rows of a chunk,
//     G_blk[i][j] = Σ_{r ∈ blk} (A[r][i] − a_shift[i]) · (B[r][j] − b_shift[j])
// as a tiled GEMM reduced over rows (shared/tile.wgsl): a workgroup owns one TILE x TILE
// output tile of one block, stages TILE_K rows of both operands through workgroup memory
// (coalesced loads), and each invocation accumulates a 4 x 4 register block. Uses:
//   - covariance: A = B = X, shifts = μ, only the tiles on or above the diagonal
//     (`upper_only`); the host mirrors them;
//   - the matrix-free power iteration: A = X (shift μ), B = P = Xc·V (no shift).
// Blocks bound every f32 sum; the host folds the blocks together (sum_partial_columns_f32,
// Kahan) and finishes in f64.

#import constants
#import grid
#import tile

// Twin: GramParams in src/kernels/covariance.rs.
struct GramParams {
    n_rows: u32,       // rows in this chunk
    a_offset: u32,     // index of the chunk's first value inside the bound range of A
    b_offset: u32,     // same for B
    a_cols: u32,
    b_cols: u32,
    block_rows: u32,
    block_offset: u32, // global index of this chunk's first block
    n_blocks: u32,     // blocks in this chunk
    n_tiles_a: u32,    // ceil(a_cols / TILE)
    n_tiles_b: u32,    // ceil(b_cols / TILE)
    upper_only: u32,   // 1: only tiles with tile_b >= tile_a (symmetric products)
    grid_x: u32,
}

@group(0) @binding(0) var<uniform> params: GramParams;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> a_shift: array<f32>;
@group(0) @binding(4) var<storage, read> b_shift: array<f32>;
// [block][a_cols][b_cols]
@group(0) @binding(5) var<storage, read_write> partials: array<f32>;

// The (row tile, column tile) of workgroup-tile index `pair`.
fn tile_pair(pair: u32) -> vec2<u32> {
    if params.upper_only == 0u {
        return vec2<u32>(pair / params.n_tiles_b, pair % params.n_tiles_b);
    }
    return upper_tile_pair(pair, params.n_tiles_a);
}

@compute @workgroup_size(TILE_WG_SIZE)
fn gram_partials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    var n_pairs = params.n_tiles_a * params.n_tiles_b;
    if params.upper_only != 0u {
        n_pairs = params.n_tiles_a * (params.n_tiles_a + 1u) / 2u;
    }
    let g = workgroup_index(wid, params.grid_x);
    // Workgroups past the end still run the loops (uniform barriers) but write nothing.
    let valid = g < n_pairs * params.n_blocks;
    let block = g / n_pairs;
    let tiles = tile_pair(g % n_pairs);
    let col_a = tiles.x * TILE;
    let col_b = tiles.y * TILE;
    let first = block * params.block_rows;
    let last = min(first + params.block_rows, params.n_rows);
    var steps = 0u;
    if valid && last > first {
        steps = (last - first + TILE_K - 1u) / TILE_K;
    }
    // `steps` depends only on the workgroup id and the parameters, so the barriers inside the
    // loop are in uniform control flow.
    let lane = tile_lane(lid);
    var acc: array<f32, TILE_REGS>;
    for (var s = 0u; s < steps; s++) {
        let r0 = first + s * TILE_K;
        for (var e = lid; e < TILE_STEP; e += TILE_WG_SIZE) {
            let slot = depth_major_slot(e);
            let row = r0 + slot.k;
            let c = slot.item;
            var va = 0.0;
            var vb = 0.0;
            if row < last {
                if col_a + c < params.a_cols {
                    va = a[params.a_offset + row * params.a_cols + col_a + c] - a_shift[col_a + c];
                }
                if col_b + c < params.b_cols {
                    vb = b[params.b_offset + row * params.b_cols + col_b + c] - b_shift[col_b + c];
                }
            }
            tile_a[slot.at] = va;
            tile_b[slot.at] = vb;
        }
        workgroupBarrier();
        accumulate_products(lane, &acc);
        workgroupBarrier();
    }
    if !valid {
        return;
    }
    let gblock = params.block_offset + block;
    for (var i = 0u; i < TILE_BLOCK; i++) {
        let ia = col_a + lane_row(lane, i);
        if ia < params.a_cols {
            for (var m = 0u; m < TILE_BLOCK; m++) {
                let jb = col_b + lane_col(lane, m);
                if jb < params.b_cols {
                    partials[(gblock * params.a_cols + ia) * params.b_cols + jb] = acc[i * TILE_BLOCK + m];
                }
            }
        }
    }
}

// gram_partials_uniform: the same partials, a slice of A's rows at a time from a uniform
// buffer. The host copies up to SLICE_VALUES consecutive values of A (whole rows) into the
// slice and dispatches once per slice, never across a block boundary. An invocation owns
// one output column jb and GRAM_IB consecutive A columns i0 .. i0 + GRAM_IB: per row, one
// value of B (a gather) meets GRAM_IB values of A at the same address in every lane (a
// broadcast, cheap from a uniform buffer on adapters such as lavapipe, which gather storage
// loads lane by lane). Each output is still Σ_r fma(a − a_shift, b − b_shift, acc) over the
// block's rows in order from zero, so the partials are those of gram_partials, bit for bit;
// the running sums pass from slice to slice through `partials`. Only the entries
// gram_partials writes are written (with `upper_only`, 64-tiles on or above the diagonal).

const SLICE_VALUES: u32 = 16384u; // 64 KiB: the smallest max_uniform_buffer_binding_size
const GRAM_IB: u32 = 16u;         // A columns per invocation (a multiple of 4 dividing TILE)
const GRAM_IB4: u32 = GRAM_IB / 4u;

// Twin: GramSliceParams in src/kernels/covariance.rs.
struct GramSliceParams {
    slice_rows: u32,  // rows in this slice
    b_offset: u32,    // index of the slice's first B value inside the bound range of b
    a_cols: u32,
    b_cols: u32,
    block: u32,       // global index of the block the slice belongs to
    first_slice: u32, // 1: the block's first slice (sums start from zero)
    upper_only: u32,
    n_iblocks: u32,   // ceil(a_cols / GRAM_IB)
    n_jgroups: u32,   // ceil(b_cols / ROW_WG_SIZE)
    grid_x: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(6) var<uniform> slice_params: GramSliceParams;
@group(0) @binding(7) var<uniform> a_slice: array<vec4<f32>, SLICE_VALUES / 4u>;

@compute @workgroup_size(ROW_WG_SIZE)
fn gram_partials_uniform(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let sp = slice_params;
    let g = workgroup_index(wid, sp.grid_x);
    let iblock = g / sp.n_jgroups;
    let jb = (g % sp.n_jgroups) * ROW_WG_SIZE + lid;
    if iblock >= sp.n_iblocks || jb >= sp.b_cols {
        return;
    }
    let i0 = iblock * GRAM_IB;
    if sp.upper_only != 0u && jb / TILE < i0 / TILE {
        return;
    }
    let n_i = min(GRAM_IB, sp.a_cols - i0);
    let out = (sp.block * sp.a_cols + i0) * sp.b_cols + jb;
    // Four vec4 accumulators: lane q·4 + c of them is column i0 + 4q + c. A vec4 fma is four
    // scalar fmas, so the sums are the same.
    var acc: array<vec4<f32>, GRAM_IB4>;
    var ash: array<vec4<f32>, GRAM_IB4>;
    for (var m = 0u; m < GRAM_IB; m++) {
        let i = min(i0 + m, sp.a_cols - 1u);
        ash[m / 4u][m % 4u] = a_shift[i];
        if sp.first_slice == 0u && m < n_i {
            acc[m / 4u][m % 4u] = partials[out + m * sp.b_cols];
        }
    }
    let bsh = b_shift[jb];
    if sp.a_cols % 4u == 0u {
        // Rows start on a vec4 boundary: whole vec4s of A, one load for four columns.
        for (var r = 0u; r < sp.slice_rows; r++) {
            let vb = vec4<f32>(b[sp.b_offset + r * sp.b_cols + jb] - bsh);
            let q0 = (r * sp.a_cols + i0) / 4u;
            for (var q = 0u; q < GRAM_IB4; q++) {
                let va = a_slice[min(q0 + q, SLICE_VALUES / 4u - 1u)] - ash[q];
                acc[q] = fma(va, vb, acc[q]);
            }
        }
    } else {
        for (var r = 0u; r < sp.slice_rows; r++) {
            let vb = b[sp.b_offset + r * sp.b_cols + jb] - bsh;
            let arow = r * sp.a_cols + i0;
            for (var m = 0u; m < GRAM_IB; m++) {
                let e = min(arow + m, SLICE_VALUES - 1u);
                let va = a_slice[e / 4u][e % 4u] - ash[m / 4u][m % 4u];
                acc[m / 4u][m % 4u] = fma(va, vb, acc[m / 4u][m % 4u]);
            }
        }
    }
    for (var m = 0u; m < n_i; m++) {
        partials[out + m * sp.b_cols] = acc[m / 4u][m % 4u];
    }
}
