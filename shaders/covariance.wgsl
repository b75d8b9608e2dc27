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
