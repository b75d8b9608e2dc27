//! Nearest-centroid assignment and point-to-centroid distances (`shaders/assign.wgsl`).

use std::time::Instant;

use bytemuck::{Pod, Zeroable};

use super::ROW_WG_SIZE;
use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::buffer::Chunk;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{assign as wgsl, check_params};
use crate::gpu::tuning::TuneKey;
use crate::gpu::Gpu;

/// Rows per workgroup of the tiled entry points (`TILE` in the shader).
const ROWS_PER_WORKGROUP: u64 = wgsl::TILE as u64;

/// Register accumulators of the untiled kernel (`SMALL_K` in the shader): up to this K it
/// is always the faster.
pub(crate) const SMALL_K: usize = wgsl::SMALL_K as usize;

/// Twin of `AssignParams` in shaders/assign.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct AssignParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    k: u32,
    grid_x: u32,
    sqrt_output: u32,
    _pad0: u32,
    _pad1: u32,
}

const _: () = check_params::<AssignParams>(wgsl::ENTRY_POINTS);

/// Records the assignment of every row of `chunk` to its nearest of the `k` centroids:
/// writes `labels` and `min_sq_dist` (one per chunk row) and adds the number of changed
/// labels to the u32 at `changed`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn assign_nearest_centroid(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    k: usize,
    centroids: &wgpu::Buffer,
    labels: &wgpu::Buffer,
    min_sq_dist: &wgpu::Buffer,
    changed: &wgpu::Buffer,
) -> Result<()> {
    let variant = assign_variant(gpu, chunk, d, k, centroids)?;
    let out = AssignOutputs {
        labels,
        min_sq_dist,
        changed,
    };
    record_assign(
        gpu,
        batch,
        variant,
        chunk,
        chunk.n_rows,
        d,
        k,
        centroids,
        &out,
    )
}

/// The assignment kernels, which give the same bits (see the shader).
pub(super) const ASSIGN_VARIANTS: [&str; 2] = [
    wgsl::ASSIGN_NEAREST_CENTROID.name,
    wgsl::ASSIGN_NEAREST_CENTROID_REGISTERS.name,
];

/// Rows the autotuner times each variant on.
const TRIAL_ROWS: usize = 16384;

/// The variant for this shape: the register kernel for K <= SMALL_K, else the autotuner's
/// choice, timed on the first rows of `chunk` with scratch outputs.
fn assign_variant(
    gpu: &Gpu,
    chunk: &Chunk,
    d: usize,
    k: usize,
    centroids: &wgpu::Buffer,
) -> Result<&'static str> {
    if k <= SMALL_K {
        return Ok(wgsl::ASSIGN_NEAREST_CENTROID_REGISTERS.name);
    }
    let rows = chunk.n_rows.min(TRIAL_ROWS);
    let labels = gpu.buffer_zeroed("assign trial labels", 4 * rows as u64);
    let min_sq_dist = gpu.buffer_zeroed("assign trial distances", 4 * rows as u64);
    let changed = gpu.buffer_zeroed("assign trial count", 4);
    let out = AssignOutputs {
        labels: &labels,
        min_sq_dist: &min_sq_dist,
        changed: &changed,
    };
    gpu.tuned(TuneKey::new("assign", d, k), &ASSIGN_VARIANTS, |variant| {
        let mut batch = Batch::untimed(gpu, "assign trial");
        record_assign(gpu, &mut batch, variant, chunk, rows, d, k, centroids, &out)?;
        batch.read(&changed, 0, 4);
        let start = Instant::now();
        batch.finish()?;
        Ok(start.elapsed().as_secs_f64())
    })
}

/// Where an assignment writes.
pub(super) struct AssignOutputs<'a> {
    pub labels: &'a wgpu::Buffer,
    pub min_sq_dist: &'a wgpu::Buffer,
    pub changed: &'a wgpu::Buffer,
}

/// Records `variant` (one of [`ASSIGN_VARIANTS`]) over the first `n_rows` rows of `chunk`.
#[allow(clippy::too_many_arguments)]
pub(super) fn record_assign(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    variant: &str,
    chunk: &Chunk,
    n_rows: usize,
    d: usize,
    k: usize,
    centroids: &wgpu::Buffer,
    out: &AssignOutputs<'_>,
) -> Result<()> {
    let (entry, rows_per_group) = if variant == wgsl::ASSIGN_NEAREST_CENTROID.name {
        (wgsl::ASSIGN_NEAREST_CENTROID, ROWS_PER_WORKGROUP)
    } else {
        (wgsl::ASSIGN_NEAREST_CENTROID_REGISTERS, ROW_WG_SIZE as u64)
    };
    let grid = gpu.grid((n_rows as u64).div_ceil(rows_per_group))?;
    let params = AssignParams {
        n_rows: n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        k: k as u32,
        grid_x: grid.x,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        entry,
        &[],
        &params,
        &[
            ("x", chunk.bind()),
            ("centroids", Bind::Whole(centroids)),
            ("labels", Bind::Whole(out.labels)),
            ("min_sq_dist", Bind::Whole(out.min_sq_dist)),
            ("changed", Bind::Whole(out.changed)),
        ],
        grid,
        // ‖x − c‖² as a dot product per pair; read rows and centroids, write label and distance.
        Work::f32s(
            2.0 * (n_rows * d * k) as f64,
            (n_rows * (d + 2) + k * d) as f64,
        ),
    )
}

/// Records the distances from rows `first_row .. first_row + n_rows` of `chunk` to each of
/// the `k` centroids into `out` (row-major n_rows x k), Euclidean if `sqrt`, else squared.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pairwise_distances(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    first_row: usize,
    n_rows: usize,
    d: usize,
    k: usize,
    centroids: &wgpu::Buffer,
    out: &wgpu::Buffer,
    sqrt: bool,
) -> Result<()> {
    let grid = gpu.grid((n_rows as u64).div_ceil(ROWS_PER_WORKGROUP))?;
    let params = AssignParams {
        n_rows: n_rows as u32,
        x_offset: chunk.x_offset + (first_row * d) as u32,
        d: d as u32,
        k: k as u32,
        grid_x: grid.x,
        sqrt_output: sqrt as u32,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        wgsl::PAIRWISE_DISTANCES,
        &[],
        &params,
        &[
            ("x", chunk.bind()),
            ("centroids", Bind::Whole(centroids)),
            ("distances", Bind::Whole(out)),
        ],
        grid,
        Work::f32s(
            2.0 * (n_rows * d * k) as f64,
            (n_rows * (d + k) + k * d) as f64,
        ),
    )
}
