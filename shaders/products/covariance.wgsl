// Cross products of centred data over rows: per-block partials of (A − a)ᵀ(B − b).
//
// Host wrapper: src/kernels/products/covariance.rs.
//
// For each block of `block_rows` rows of a chunk,
//     G_blk[i][j] = Σ_{r ∈ blk} (A[r][i] − a_shift[i]) · (B[r][j] − b_shift[j]),
// each entry one fma chain over the block's rows in order from 0, in every variant, so the
// variants give the same bits. Uses:
//   - covariance: A = B = X, shifts = μ, only entries with i <= j (`upper_only`: the
//     symmetric rank-k update); the host mirrors them;
//   - the matrix-free power iteration: A = X (shift μ), B = P = Xc·V (no shift).
// Blocks bound every f32 sum; the host folds the blocks together (sum_partial_columns_f32,
// Kahan) and finishes in f64.
//
// gram_tiled (GPUs) is a GEMM on the tile core (shared/gemm.wgsl) with the rows as depth:
// both operands are staged depth-major with vec4 loads (four columns of one row), a
// workgroup owns one tile of one block (for `upper_only`, tiles on or above the diagonal
// only). gram_texture (CPU-like adapters, symmetric products only) runs the same register
// block per invocation on an 8 x 8 block of the upper triangle, reading rows from a flat
// texture of X; gram_partials_uniform (below) reads A from uniform slices.
//
// covariance_from_comoment (below) turns a folded co-moment into the covariance S on the
// device, for a resident power-iteration fit, whose only use of S is on the device.
//
// @trusted: tiles below the dispatch's tile counts and rows below n_rows, columns below the
//   operands' widths, guarded before every load; partial blocks at indices the host sized;
//   covariance_from_comoment, comoment_diagonal: entries below d², features below d of
//   buffers sized d², d and 3d

#import constants
#import grid
#import gemm
#import texels

// Twin: GramParams in src/kernels/products/covariance.rs.
struct GramParams {
    n_rows: u32,       // rows in this chunk
    a_offset: u32,     // index of the chunk's first value inside the bound range of A
    b_offset: u32,     // same for B
    a_cols: u32,
    b_cols: u32,
    block_rows: u32,
    block_offset: u32, // global index of this chunk's first block
    n_blocks: u32,     // blocks in this chunk
    n_tiles_a: u32,    // tiles (gram_tiled) or 8-column blocks (gram_texture) of A's columns
    n_tiles_b: u32,    // same for B
    upper_only: u32,   // 1: only entries i <= j (symmetric products)
    grid_x: u32,
    a_vec4: u32,       // 1: A's rows start on vec4 boundaries (a_offset, a_cols multiples of 4)
    b_vec4: u32,       // same for B
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: GramParams;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> a_shift: array<f32>;
@group(0) @binding(4) var<storage, read> b_shift: array<f32>;
// [block][a_cols][b_cols]
@group(0) @binding(5) var<storage, read_write> partials: array<f32>;
// The ranges of a and b as vec4s (read only when a_vec4 / b_vec4).
@group(0) @binding(8) var<storage, read> a4: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read> b4: array<vec4<f32>>;
// gram_texture: A's rows from value a_offset on, as a flat texture (shared/texels.wgsl).
@group(0) @binding(10) var a_texels: texture_2d_array<f32>;

// The (row tile, column tile) of workgroup-tile index `pair`.
fn tile_pair(pair: u32) -> vec2<u32> {
    if params.upper_only == 0u {
        return vec2<u32>(pair / params.n_tiles_b, pair % params.n_tiles_b);
    }
    return gemm_upper_tile_pair(pair, params.n_tiles_a);
}

fn n_pairs() -> u32 {
    if params.upper_only != 0u {
        return params.n_tiles_a * (params.n_tiles_a + 1u) / 2u;
    }
    return params.n_tiles_a * params.n_tiles_b;
}

// Columns c .. c + 3 of row `row` of A, minus the shift (zeros past a_cols).
fn a_quad(row: u32, c: u32) -> vec4<f32> {
    let at = params.a_offset + row * params.a_cols + c;
    var v = vec4<f32>();
    if params.a_vec4 != 0u && c + 3u < params.a_cols {
        v = a4[at / 4u] - vec4<f32>(a_shift[c], a_shift[c + 1u], a_shift[c + 2u], a_shift[c + 3u]);
    } else {
        for (var t = 0u; t < 4u; t++) {
            if c + t < params.a_cols {
                v[t] = a[at + t] - a_shift[c + t];
            }
        }
    }
    return v;
}

fn b_quad(row: u32, c: u32) -> vec4<f32> {
    let at = params.b_offset + row * params.b_cols + c;
    var v = vec4<f32>();
    if params.b_vec4 != 0u && c + 3u < params.b_cols {
        v = b4[at / 4u] - vec4<f32>(b_shift[c], b_shift[c + 1u], b_shift[c + 2u], b_shift[c + 3u]);
    } else {
        for (var t = 0u; t < 4u; t++) {
            if c + t < params.b_cols {
                v[t] = b[at + t] - b_shift[c + t];
            }
        }
    }
    return v;
}

// Writes entry (i, j) of a block's partials, if it is one the product has.
fn write_partial(gblock: u32, i: u32, j: u32, v: f32) {
    if i < params.a_cols && j < params.b_cols && (params.upper_only == 0u || i <= j) {
        partials[(gblock * params.a_cols + i) * params.b_cols + j] = v;
    }
}

@compute @workgroup_size(GEMM_LANES_M * GEMM_LANES_N)
fn gram_tiled(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let tile_m = gemm_tile_m();
    let tile_n = gemm_tile_n();
    let wg = gemm_wg_size();
    let pairs = n_pairs();
    let g = workgroup_index(wid, params.grid_x);
    // Workgroups past the end still run the loops (uniform barriers) but write nothing.
    let valid = g < pairs * params.n_blocks;
    let block = g / pairs;
    let tiles = tile_pair(g % pairs);
    let col_a = tiles.x * tile_m;
    let col_b = tiles.y * tile_n;
    let first = block * params.block_rows;
    let last = min(first + params.block_rows, params.n_rows);
    var n_stages = 0u;
    if valid && last > first {
        n_stages = (last - first + GEMM_DEPTH - 1u) / GEMM_DEPTH;
    }
    let lane = gemm_lane(lid);
    let loads_a = gemm_loads(tile_m);
    let loads_b = gemm_loads(tile_n);
    var acc: Block;
    var pa: array<vec4<f32>, GEMM_MAX_LOADS>;
    var pb: array<vec4<f32>, GEMM_MAX_LOADS>;
    // `n_stages` depends only on the workgroup and the parameters: uniform barriers.
    for (var s = 0u; s <= n_stages; s++) {
        if s > 0u {
            gemm_put_stage(lid, pa, GEMM_DEPTH_MAJOR, pb, GEMM_DEPTH_MAJOR);
        }
        if s < n_stages {
            let r0 = first + s * GEMM_DEPTH;
            // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
            // prefetch registers are indexed by constants and stay registers.
            for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                if gemm_has_load(e, lid, loads_a) {
                    let slot = gemm_depth_major_slot(e * wg + lid, tile_m);
                    var v = vec4<f32>();
                    if r0 + slot.depth < last {
                        v = a_quad(r0 + slot.depth, col_a + slot.item);
                    }
                    pa[e] = v;
                }
            }
            // A constant trip count (GEMM_MAX_LOADS) that GPU compilers unroll, so the
            // prefetch registers are indexed by constants and stay registers.
            for (var e = 0u; e < GEMM_MAX_LOADS; e++) {
                if gemm_has_load(e, lid, loads_b) {
                    let slot = gemm_depth_major_slot(e * wg + lid, tile_n);
                    var v = vec4<f32>();
                    if r0 + slot.depth < last {
                        v = b_quad(r0 + slot.depth, col_b + slot.item);
                    }
                    pb[e] = v;
                }
            }
        }
        if s > 0u {
            gemm_multiply_stage(lane, &acc);
        }
    }
    if !valid {
        return;
    }
    let gblock = params.block_offset + block;
    for (var i = 0u; i < GEMM_RM; i++) {
        for (var m = 0u; m < GEMM_RN; m++) {
            write_partial(gblock, col_a + gemm_row(lane, i), col_b + gemm_col(lane, m), block_at(acc, i, m));
        }
    }
}

// An 8-column block of the shift as two vec4s.
fn shift_block(c: u32) -> array<vec4<f32>, 2> {
    var out: array<vec4<f32>, 2>;
    for (var t = 0u; t < 8u; t++) {
        if c + t < params.a_cols {
            out[t / 4u][t % 4u] = a_shift[c + t];
        }
    }
    return out;
}

// The symmetric product from a flat texture of A: invocation = (block of rows, 8 x 8 block
// (bi, bj) with bi <= bj of the upper triangle), walking the block's rows in order. Needs
// a_cols a multiple of 4 (texels hold four columns of one row); columns past a_cols read as
// the next row's and are never written.
@compute @workgroup_size(ROW_WG_SIZE)
fn gram_texture(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let e = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    let pairs = n_pairs();
    if e >= pairs * params.n_blocks {
        return;
    }
    let block = e / pairs;
    let blocks = tile_pair(e % pairs);
    let ci = 8u * blocks.x;
    let cj = 8u * blocks.y;
    let first = block * params.block_rows;
    let last = min(first + params.block_rows, params.n_rows);
    let cols4 = params.a_cols / 4u;
    // Texels of columns ci, ci + 4, cj, cj + 4 (clamped into the row: junk past a_cols).
    let ti = min(ci / 4u, cols4 - 1u);
    let ti2 = min(ci / 4u + 1u, cols4 - 1u);
    let tj = min(cj / 4u, cols4 - 1u);
    let tj2 = min(cj / 4u + 1u, cols4 - 1u);
    let si = shift_block(ci);
    let sj = shift_block(cj);
    var acc: Block;
    for (var r = first; r < last; r++) {
        let row = r * cols4;
        let a_lo = flat_texel(a_texels, row + ti) - si[0];
        let a_hi = flat_texel(a_texels, row + ti2) - si[1];
        let b_lo = flat_texel(a_texels, row + tj) - sj[0];
        let b_hi = flat_texel(a_texels, row + tj2) - sj[1];
        block_outer(&acc, a_lo, a_hi, b_lo, b_hi, 8u, 8u);
    }
    let gblock = params.block_offset + block;
    // Constant indices into the block (a dynamic one would move it out of registers).
    write_row8(gblock, ci, cj, acc.v[0], acc.v[1]);
    write_row8(gblock, ci + 1u, cj, acc.v[2], acc.v[3]);
    write_row8(gblock, ci + 2u, cj, acc.v[4], acc.v[5]);
    write_row8(gblock, ci + 3u, cj, acc.v[6], acc.v[7]);
    write_row8(gblock, ci + 4u, cj, acc.v[8], acc.v[9]);
    write_row8(gblock, ci + 5u, cj, acc.v[10], acc.v[11]);
    write_row8(gblock, ci + 6u, cj, acc.v[12], acc.v[13]);
    write_row8(gblock, ci + 7u, cj, acc.v[14], acc.v[15]);
}

fn write_row8(gblock: u32, i: u32, cj: u32, lo: vec4<f32>, hi: vec4<f32>) {
    for (var t = 0u; t < 4u; t++) {
        write_partial(gblock, i, cj + t, lo[t]);
        write_partial(gblock, i, cj + 4u + t, hi[t]);
    }
}

// gram_partials_uniform: the same partials, a slice of A's rows at a time from a uniform
// buffer. The host copies up to SLICE_VALUES consecutive values of A (whole rows) into the
// slice and dispatches once per slice, never across a block boundary. An invocation owns
// one output column jb and GRAM_IB consecutive A columns i0 .. i0 + GRAM_IB: per row, one
// value of B (a gather) meets GRAM_IB values of A at the same address in every lane (a
// broadcast, cheap from a uniform buffer on adapters such as lavapipe, which gather storage
// loads lane by lane). Each output is still Σ_r fma(a − a_shift, b − b_shift, acc) over the
// block's rows in order from zero, so the partials are those of the other variants, bit for
// bit; the running sums pass from slice to slice through `partials`. With `upper_only`
// only the entries i <= j are written, as the other variants do.

const SLICE_VALUES: u32 = 16384u; // 64 KiB: the smallest max_uniform_buffer_binding_size
const GRAM_IB: u32 = 16u;         // A columns per invocation (a multiple of 4 dividing TILE)
const GRAM_IB4: u32 = GRAM_IB / 4u;

// Twin: GramSliceParams in src/kernels/products/covariance.rs.
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
    if sp.upper_only != 0u && jb < i0 {
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
        if sp.upper_only == 0u || i0 + m <= jb {
            partials[out + m * sp.b_cols] = acc[m / 4u][m % 4u];
        }
    }
}

// covariance_from_comoment: S from G = Σ (x − c)(x − c)ᵀ about the device's f32 centre c,
// folded over the blocks, upper triangle (i ≤ j) only. With m = μ − c (μ the host's f64
// mean, rounded), t = μ − a (a the centre S is about: μ, or 0 without centring) and
// r_i = 1/(σ_i·√(N − ddof)):
//     S[i][j] = (G[i][j] − N·m_i·m_j + N·t_i·t_j)·r_i·r_j,
// comoment_diagonal copies G's diagonal out (the host's f64 trace of S, as accurate as the
// read-back co-moment's; the column moments about the first row lose digits to cancellation),
// the host's f64 formula (src/pca/stats.rs, moved from c to μ, then to a) in f32. One
// invocation per entry; (i, j) and (j, i) read the same entry of G and form the same
// products, so S is symmetric bit for bit.

// Twin: ComomentParams in src/kernels/products/covariance.rs.
struct ComomentParams {
    d: u32,
    grid_x: u32,
    n: f32,       // rows
    _pad0: u32,
}

@group(0) @binding(10) var<uniform> comoment_params: ComomentParams;
@group(0) @binding(11) var<storage, read> comoment: array<f32>;
// [m (d values), t (d), r (d)]
@group(0) @binding(12) var<storage, read> corrections: array<f32>;
@group(0) @binding(13) var<storage, read_write> covariance_out: array<f32>;
@group(0) @binding(14) var<storage, read_write> diagonal_out: array<f32>;

@compute @workgroup_size(ROW_WG_SIZE)
fn covariance_from_comoment(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let d = comoment_params.d;
    let e = invocation_index(wid, comoment_params.grid_x, ROW_WG_SIZE, lid);
    if e >= d * d {
        return;
    }
    let i = min(e / d, e % d);
    let j = max(e / d, e % d);
    let n = comoment_params.n;
    let about_mean = comoment[i * d + j] - n * corrections[i] * corrections[j];
    let about_a = fma(n * corrections[d + i], corrections[d + j], about_mean);
    covariance_out[e] = about_a * corrections[2u * d + i] * corrections[2u * d + j];
}

@compute @workgroup_size(ROW_WG_SIZE)
fn comoment_diagonal(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let d = comoment_params.d;
    let i = invocation_index(wid, comoment_params.grid_x, ROW_WG_SIZE, lid);
    if i < d {
        diagonal_out[i] = comoment[i * d + i];
    }
}
