//! Nearest-centroid assignment and point-to-centroid distances (`shaders/assign.wgsl`).

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

/// Register accumulators of the untiled kernels (`SMALL_K` in the shader). Up to this K the
/// tiled kernel would leave most of its 64-centroid tile empty, so it is not a candidate.
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
    k_first: u32,
    slice_flags: u32,
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
pub(super) const ASSIGN_VARIANTS: [&str; 3] = [
    wgsl::ASSIGN_NEAREST_CENTROID_REGISTERS.name,
    wgsl::ASSIGN_NEAREST_CENTROID_UNIFORM.name,
    wgsl::ASSIGN_NEAREST_CENTROID.name,
];

/// vec4s in one uniform slice of centroids (`SLICE_VEC4S` in the shader).
const SLICE_VEC4S: usize = wgsl::SLICE_VEC4S as usize;

/// Bytes of one slice (the binding size of `centroid_slice`).
const SLICE_BYTES: u64 = 16 * SLICE_VEC4S as u64;

/// The variants that can run `d` x `k`: the tiled kernel only past SMALL_K centroids (below
/// it the register kernel does the same work without barriers), the uniform one while one
/// centroid fits a slice.
fn candidates(d: usize, k: usize) -> Vec<&'static str> {
    ASSIGN_VARIANTS
        .into_iter()
        .filter(|&v| {
            (v != wgsl::ASSIGN_NEAREST_CENTROID.name || k > SMALL_K)
                && (v != wgsl::ASSIGN_NEAREST_CENTROID_UNIFORM.name || d.div_ceil(4) <= SLICE_VEC4S)
        })
        .collect()
}

/// Rows the autotuner times each variant on.
const TRIAL_ROWS: usize = 16384;

/// The variant for this shape: the only candidate, or the autotuner's choice, timed on the
/// first rows of `chunk` with scratch outputs.
fn assign_variant(
    gpu: &Gpu,
    chunk: &Chunk,
    d: usize,
    k: usize,
    centroids: &wgpu::Buffer,
) -> Result<&'static str> {
    let candidates = candidates(d, k);
    if candidates.len() == 1 {
        return Ok(candidates[0]);
    }
    let key = TuneKey::new("assign", d, k);
    if let Some(c) = gpu.tuned_choice(&key) {
        return Ok(c);
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
    gpu.tuned(key, &candidates, |variant| {
        gpu.time_trial(
            |batch| record_assign(gpu, batch, variant, chunk, rows, d, k, centroids, &out),
            &changed,
        )
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
    if variant == wgsl::ASSIGN_NEAREST_CENTROID_UNIFORM.name {
        return record_assign_uniform(gpu, batch, chunk, n_rows, d, k, centroids, out);
    }
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

/// Records `assign_nearest_centroid_uniform`: copies the centroids into uniform slices of
/// whole centroids (each padded to ceil(D / 4) vec4s), then one dispatch per slice.
#[allow(clippy::too_many_arguments)]
fn record_assign_uniform(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    n_rows: usize,
    d: usize,
    k: usize,
    centroids: &wgpu::Buffer,
    out: &AssignOutputs<'_>,
) -> Result<()> {
    let d4 = d.div_ceil(4);
    let per_slice = SLICE_VEC4S / d4;
    let n_slices = k.div_ceil(per_slice);
    let slices = gpu.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("centroid slices"),
        size: SLICE_BYTES * n_slices as u64,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let row_bytes = 4 * d as u64;
    for s in 0..n_slices {
        let first = s * per_slice;
        let count = per_slice.min(k - first);
        let at = SLICE_BYTES * s as u64;
        if d.is_multiple_of(4) {
            // Padding is empty: the slice is one contiguous run of centroids.
            batch.copy(
                centroids,
                first as u64 * row_bytes,
                &slices,
                at,
                count as u64 * row_bytes,
            );
        } else {
            for c in 0..count {
                let src = (first + c) as u64 * row_bytes;
                batch.copy(
                    centroids,
                    src,
                    &slices,
                    at + 16 * (c * d4) as u64,
                    row_bytes,
                );
            }
        }
    }
    // The running best between slices (one slice needs none: bind a placeholder).
    let running = gpu.buffer_zeroed(
        "running labels",
        if n_slices > 1 { 4 * n_rows as u64 } else { 4 },
    );
    let grid = gpu.grid((n_rows as u64).div_ceil(ROW_WG_SIZE as u64))?;
    for s in 0..n_slices {
        let first = s * per_slice;
        let count = per_slice.min(k - first);
        let params = AssignParams {
            n_rows: n_rows as u32,
            x_offset: chunk.x_offset,
            d: d as u32,
            k: count as u32,
            grid_x: grid.x,
            sqrt_output: 0,
            k_first: first as u32,
            slice_flags: (u32::from(s == 0) * wgsl::FIRST_SLICE)
                | (u32::from(s + 1 == n_slices) * wgsl::LAST_SLICE),
        };
        batch.dispatch(
            wgsl::ASSIGN_NEAREST_CENTROID_UNIFORM,
            &[],
            &params,
            &[
                ("x", chunk.bind()),
                (
                    "centroid_slice",
                    Bind::Range(&slices, SLICE_BYTES * s as u64, SLICE_BYTES),
                ),
                ("labels", Bind::Whole(out.labels)),
                ("min_sq_dist", Bind::Whole(out.min_sq_dist)),
                ("changed", Bind::Whole(out.changed)),
                ("running_labels", Bind::Whole(&running)),
            ],
            grid,
            Work::f32s(
                2.0 * (n_rows * d * count) as f64,
                (n_rows * (d + 2) + count * d) as f64,
            ),
        )?;
    }
    Ok(())
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
