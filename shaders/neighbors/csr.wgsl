// A sparse matrix in CSR form times a block: out[i][c] = Σ_e values[e] · v[cols[e]][c] over
// the entries e of row i (the symmetrised k-nearest-neighbour graph of spectral clustering).
//
// Host wrapper: src/kernels/neighbors/csr.rs.
//
// @checked: it reads the block at the column numbers stored in the sparse matrix

#import constants
#import grid
#import pair_params

@group(0) @binding(7) var<storage, read> row_starts: array<u32>;
@group(0) @binding(8) var<storage, read> cols: array<u32>;
@group(0) @binding(9) var<storage, read> values: array<f32>;

@compute @workgroup_size(ROW_WG_SIZE)
fn csr_times_block(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params;
    let i = invocation_index(wid, p.grid_x, ROW_WG_SIZE, lid);
    if i >= p.n_queries {
        return;
    }
    // BLOCK_COLS columns per pass over the row's entries, accumulated in registers.
    for (var g = 0u; g < p.m; g += BLOCK_COLS) {
        var acc: array<f32, BLOCK_COLS>;
        for (var e = row_starts[i]; e < row_starts[i + 1u]; e++) {
            let w = values[e];
            let at = cols[e] * p.m + g;
            for (var c = 0u; c < BLOCK_COLS; c++) {
                if g + c < p.m {
                    acc[c] = fma(w, block[at + c], acc[c]);
                }
            }
        }
        for (var c = 0u; c < BLOCK_COLS; c++) {
            if g + c < p.m {
                out[i * p.m + g + c] = acc[c];
            }
        }
    }
}
