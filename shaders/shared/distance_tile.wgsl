// The distance tile (assign, silhouette): the tiled product of tile.wgsl with squared
// differences in place of products. Distances are accumulated as Σ (a − b)² rather than
// ‖a‖² − 2a·b + ‖b‖²: no cancellation when the data sit far from the origin, so they match
// the f64 reference up to rounding.

#import tile

// acc[i * TILE_BLOCK + m] += (tile_a[k][lane_row(i)] − tile_b[k][lane_col(m)])² over the
// staged step, k in order.
fn accumulate_sq_distances(lane: Lane, acc: ptr<function, array<f32, TILE_REGS>>) {
    for (var k = 0u; k < TILE_K; k++) {
        let o = block_operands(lane, k);
        for (var i = 0u; i < TILE_BLOCK; i++) {
            for (var m = 0u; m < TILE_BLOCK; m++) {
                let diff = o.a[i] - o.b[m];
                (*acc)[i * TILE_BLOCK + m] = fma(diff, diff, (*acc)[i * TILE_BLOCK + m]);
            }
        }
    }
}
