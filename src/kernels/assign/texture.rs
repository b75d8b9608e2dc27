//! The GEMM form from flat textures (`shaders/assign/texture.wgsl`, CPU-like adapters): the
//! candidate search of the tiled kernel with the rows and centroids fetched as texels (one
//! fetch a texel for every lane on llvmpipe, where a storage load is a loop over the lanes).

use super::args::{params, Assignment};
use super::scratch::AssignScratch;
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::profile::Work;
use crate::gpu::shaders::assign::texture as wgsl;
use crate::gpu::Gpu;
use crate::kernels::ROW_WG_SIZE;

/// Rows per invocation of `assign_texture`.
const TEXTURE_ROWS: usize = wgsl::TEXTURE_ROWS as usize;

/// The override that sets how many blocks of 8 candidates an `assign_texture` pass
/// multiplies from one fetch of its rows.
pub(crate) const TEXTURE_BLOCKS: &str = "TEXTURE_BLOCKS";

/// `TEXTURE_BLOCKS` for K centroids: 2 (each row texel feeds 16 candidates) past one block
/// of 8, so K = 10 takes one pass instead of two.
fn texture_blocks(k: usize) -> u32 {
    if k > 8 {
        2
    } else {
        1
    }
}

/// Loop back-edges one invocation takes at D x K (at most ⌈K/8⌉(⌈D/4⌉ + 2) and its rows'
/// norms): the kernel walks all K centroids in one dispatch.
pub(crate) fn back_edges(d: usize, k: usize) -> usize {
    let d4 = d.div_ceil(4);
    k.div_ceil(TEXTURE_ROWS) * (d4 + 2) + TEXTURE_ROWS * (d4 + 1) + 1
}

/// Records the copies into the scratch's textures and `assign_texture` over the first
/// `n_rows` rows of `chunk` (the centroid side prepared, the recheck list cleared).
pub(crate) fn record_texture(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    (chunk, n_rows, d): (&Chunk, usize, usize),
    to: &Assignment<'_>,
    scratch: &AssignScratch,
    work: Work,
) -> Result<()> {
    scratch.record_mirrors(gpu, batch, chunk, d, to)?;
    let textures = scratch.textures.borrow();
    let Some(t) = textures.as_ref() else {
        unreachable!("record_mirrors makes the textures or fails")
    };
    let rows_per_group = ROW_WG_SIZE as usize * TEXTURE_ROWS;
    let grid = gpu.grid(n_rows.div_ceil(rows_per_group) as u64)?;
    batch.dispatch(
        wgsl::ASSIGN_TEXTURE,
        &[(TEXTURE_BLOCKS, texture_blocks(to.k))],
        &params(chunk, n_rows, d, to.k, grid.x),
        &[
            ("x_texels", t.x.bind()),
            ("centroid_texels", t.centroids.bind()),
            ("prepared_texels", t.prepared.bind()),
            ("labels", to.labels.bind()),
            ("min_sq_dist", to.min_sq_dist.bind()),
            ("changed", to.changed.bind()),
            ("recheck", scratch.recheck.bind()),
        ],
        grid,
        work,
    )
}
