//! The uniform-slice variant of the nearest-centroid search (`shaders/assign/uniform.wgsl`):
//! the centroids copied into 64 KiB uniform slices, one dispatch per slice, over every row of a
//! chunk or over the rows the GEMM form left undecided (CPU-like adapters, where a uniform
//! address is loaded once for all lanes and a storage one lane by lane).

use super::args::{params, Assignment, FIRST_SLICE, LAST_SLICE, RECHECK_ROWS};
use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::assign::uniform as wgsl;
use crate::gpu::Gpu;
use crate::kernels::ROW_WG_SIZE;

/// vec4s in one uniform slice of centroids (`SLICE_VEC4S` in the shader).
pub(crate) const SLICE_VEC4S: usize = wgsl::SLICE_VEC4S as usize;

/// Bytes of one slice (the binding size of `centroid_slice`).
const SLICE_BYTES: u64 = 16 * SLICE_VEC4S as u64;

/// Which rows [`record_assign_uniform`] assigns.
#[derive(Clone, Copy)]
pub(crate) enum Rows<'a> {
    /// Every row of the dispatch (the list is bound but not read).
    All(&'a DeviceBuffer<u32>),
    /// The rows on this recheck list (the GEMM form's undecided rows).
    Rechecked(&'a DeviceBuffer<u32>),
}

/// Records `assign_nearest_centroid_uniform`: copies the centroids into uniform slices of
/// whole centroids (each padded to ceil(D / 4) vec4s), then one dispatch per slice.
pub(crate) fn record_assign_uniform(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    n_rows: usize,
    d: usize,
    to: &Assignment<'_>,
    rows: Rows<'_>,
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
        let flags = (u32::from(s == 0) * FIRST_SLICE)
            | (u32::from(s + 1 == n_slices) * LAST_SLICE)
            | (u32::from(matches!(rows, Rows::Rechecked(_))) * RECHECK_ROWS);
        let params = params(chunk, n_rows, d, k, grid.x).slice(first, count, flags);
        let (Rows::All(list) | Rows::Rechecked(list)) = rows;
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
                ("recheck", list.bind()),
            ],
            grid,
            match rows {
                Rows::All(_) => Work::f32s(
                    2.0 * (n_rows * d * count) as f64,
                    (n_rows * (d + 2) + count * d) as f64,
                ),
                // The list's rows cost 2·D per centroid each, unknown when recorded.
                Rows::Rechecked(_) => Work::f32s(0.0, 1.0),
            },
        )?;
    }
    Ok(())
}
