//! Nearest-centroid assignment and point-to-centroid distances (`shaders/assign.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::ROW_WG_SIZE;
use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
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

/// The centroids an assignment reads and the per-row results it writes.
pub(crate) struct Assignment<'a> {
    /// K x D centroids, row-major.
    pub centroids: &'a DeviceBuffer<f32>,
    /// Centroids to compare with (the first `k` rows of `centroids`).
    pub k: usize,
    /// One label per row of the chunk.
    pub labels: &'a DeviceBuffer<u32>,
    /// One squared distance per row of the chunk.
    pub min_sq_dist: &'a DeviceBuffer<f32>,
    /// One u32 to which the number of changed labels is added.
    pub changed: &'a DeviceBuffer<u32>,
}

/// Records the assignment of every row of `chunk` (D features) to its nearest centroid:
/// writes the labels and squared distances of `to` and adds the number of changed labels to
/// its counter.
pub(crate) fn assign_nearest_centroid(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    to: &Assignment<'_>,
) -> Result<()> {
    let variant = assign_variant(gpu, chunk, d, to)?;
    record_assign(gpu, batch, variant, chunk, chunk.n_rows, d, to)
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
fn assign_variant(gpu: &Gpu, chunk: &Chunk, d: usize, to: &Assignment<'_>) -> Result<&'static str> {
    let candidates = candidates(d, to.k);
    if candidates.len() == 1 {
        return Ok(candidates[0]);
    }
    let key = TuneKey::new("assign", d, to.k);
    if let Some(c) = gpu.tuned_choice(&key) {
        return Ok(c);
    }
    let rows = chunk.n_rows.min(TRIAL_ROWS);
    let labels = DeviceBuffer::zeroed(gpu, "assign trial labels", rows);
    let min_sq_dist = DeviceBuffer::zeroed(gpu, "assign trial distances", rows);
    let changed = DeviceBuffer::zeroed(gpu, "assign trial count", 1);
    let scratch = Assignment {
        labels: &labels,
        min_sq_dist: &min_sq_dist,
        changed: &changed,
        ..*to
    };
    gpu.tuned(key, &candidates, |variant| {
        gpu.time_trial(
            |batch| record_assign(gpu, batch, variant, chunk, rows, d, &scratch),
            &changed,
        )
    })
}

/// Records `variant` (one of [`ASSIGN_VARIANTS`]) over the first `n_rows` rows of `chunk`.
pub(super) fn record_assign(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    variant: &str,
    chunk: &Chunk,
    n_rows: usize,
    d: usize,
    to: &Assignment<'_>,
) -> Result<()> {
    if variant == wgsl::ASSIGN_NEAREST_CENTROID_UNIFORM.name {
        return record_assign_uniform(gpu, batch, chunk, n_rows, d, to);
    }
    let k = to.k;
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
            ("centroids", to.centroids.bind()),
            ("labels", to.labels.bind()),
            ("min_sq_dist", to.min_sq_dist.bind()),
            ("changed", to.changed.bind()),
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
fn record_assign_uniform(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    n_rows: usize,
    d: usize,
    to: &Assignment<'_>,
) -> Result<()> {
    let k = to.k;
    let d4 = d.div_ceil(4);
    let per_slice = SLICE_VEC4S / d4;
    let n_slices = k.div_ceil(per_slice);
    let slices = gpu.uniform_buffer("centroid slices", SLICE_BYTES * n_slices as u64);
    let row_bytes = 4 * d as u64;
    for s in 0..n_slices {
        let first = s * per_slice;
        let count = per_slice.min(k - first);
        let at = SLICE_BYTES * s as u64;
        if d.is_multiple_of(4) {
            // Padding is empty: the slice is one contiguous run of centroids.
            batch.copy(
                to.centroids.raw(),
                first as u64 * row_bytes,
                &slices,
                at,
                count as u64 * row_bytes,
            );
        } else {
            for c in 0..count {
                let src = (first + c) as u64 * row_bytes;
                batch.copy(
                    to.centroids.raw(),
                    src,
                    &slices,
                    at + 16 * (c * d4) as u64,
                    row_bytes,
                );
            }
        }
    }
    // The running best between slices (one slice needs none: bind a placeholder).
    let running: DeviceBuffer<u32> =
        DeviceBuffer::zeroed(gpu, "running labels", if n_slices > 1 { n_rows } else { 1 });
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
                ("labels", to.labels.bind()),
                ("min_sq_dist", to.min_sq_dist.bind()),
                ("changed", to.changed.bind()),
                ("running_labels", running.bind()),
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

/// The centroids a distance table is taken to and where it is written.
pub(crate) struct DistanceTable<'a> {
    /// K x D centroids, row-major.
    pub centroids: &'a DeviceBuffer<f32>,
    /// Number of centroids.
    pub k: usize,
    /// Row-major rows x K output.
    pub out: &'a DeviceBuffer<f32>,
    /// Euclidean distances when set, squared ones otherwise.
    pub sqrt: bool,
}

/// Records the distances from rows `first_row .. first_row + n_rows` of `chunk` to each
/// centroid of `table` into its output (row-major n_rows x K).
pub(crate) fn pairwise_distances(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    first_row: usize,
    n_rows: usize,
    d: usize,
    table: &DistanceTable<'_>,
) -> Result<()> {
    let k = table.k;
    let grid = gpu.grid((n_rows as u64).div_ceil(ROWS_PER_WORKGROUP))?;
    let params = AssignParams {
        n_rows: n_rows as u32,
        x_offset: chunk.x_offset + (first_row * d) as u32,
        d: d as u32,
        k: k as u32,
        grid_x: grid.x,
        sqrt_output: table.sqrt as u32,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        wgsl::PAIRWISE_DISTANCES,
        &[],
        &params,
        &[
            ("x", chunk.bind()),
            ("centroids", table.centroids.bind()),
            ("distances", table.out.bind()),
        ],
        grid,
        Work::f32s(
            2.0 * (n_rows * d * k) as f64,
            (n_rows * (d + k) + k * d) as f64,
        ),
    )
}
