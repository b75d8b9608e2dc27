//! Every row within a radius of every row on the device (`shaders/neighbors/range.wgsl`):
//! one pass counts each row's neighbours, the host turns the counts into CSR offsets, and a
//! second pass over the same runs writes them, in increasing index within each row.

use crate::error::{Error, Result};
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::neighbors::range as wgsl;
use crate::gpu::shaders::EntryPoint;
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::primitives::pairs::PairParams;
use crate::kernels::{items_within_loop_budget, ROW_WG_SIZE};

use super::csr::Csr;

/// ε² for a radius ε, or an error for a radius that is negative or not finite (or whose
/// square is not).
pub(crate) fn checked_radius_sq(radius: f32) -> Result<f32> {
    let sq = radius * radius;
    if !(radius >= 0.0 && sq.is_finite()) {
        return Err(Error::invalid(
            "radius",
            format!("must be finite and non-negative (its square too), got {radius}"),
        ));
    }
    Ok(sq)
}

/// The rows of `x` within ε of every row (d² ≤ `radius_sq`), on the device: N x N sparse,
/// each row's entries in increasing column order, the squared distances as values.
pub(crate) fn within_radius_device(gpu: &Gpu, x: &GpuMatrix, radius_sq: f32) -> Result<Csr> {
    let n = x.n_rows();
    let counts = gpu.scoped("neighbours within a radius: counts", || {
        let counts = DeviceBuffer::<u32>::zeroed(gpu, "range counts", n);
        let mut batch = Batch::new(gpu, "range_count");
        record_runs(
            gpu,
            &mut batch,
            x,
            radius_sq,
            wgsl::RANGE_COUNT,
            &[("counts", counts.bind())],
        )?;
        let h = batch.read_all(&counts);
        Ok(batch.finish()?.u32s(h))
    })?;
    let mut row_starts = Vec::with_capacity(n + 1);
    let mut total = 0u64;
    row_starts.push(0u32);
    for &c in &counts {
        total += c as u64;
        row_starts.push(u32::try_from(total).unwrap_or(u32::MAX));
    }
    let bytes = 4 * total;
    if bytes > gpu.binding_byte_limit() || total > u32::MAX as u64 {
        return Err(Error::DeviceLimit {
            what: format!("{total} neighbour pairs within the radius (take a smaller radius)"),
            requested: bytes,
            limit_name: "max_storage_buffer_binding_size",
            limit: gpu.binding_byte_limit(),
        });
    }
    let nnz = total as usize;
    gpu.scoped("neighbours within a radius: lists", || {
        let cursor = DeviceBuffer::from_slice(gpu, "range cursors", &row_starts[..n]);
        let index = DeviceBuffer::<u32>::zeroed(gpu, "range indices", nnz.max(1));
        let sq_dist = DeviceBuffer::<f32>::zeroed(gpu, "range distances", nnz.max(1));
        let mut batch = Batch::new(gpu, "range_fill");
        let binds = [
            ("cursor", cursor.bind()),
            ("found_index", index.bind()),
            ("found_sq_dist", sq_dist.bind()),
        ];
        record_runs(gpu, &mut batch, x, radius_sq, wgsl::RANGE_FILL, &binds)?;
        let hi = batch.read_values(&index, 0, nnz);
        let hd = batch.read_values(&sq_dist, 0, nnz);
        let back = batch.finish()?;
        Ok(Csr {
            row_starts,
            cols: back.u32s(hi),
            values: back.f32s(hd),
        })
    })
}

/// Records `entry` over every (query chunk, run of data rows) pair, the runs in data order
/// and within the loop budget (D + 2 back-edges a data row).
fn record_runs(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    x: &GpuMatrix,
    radius_sq: f32,
    entry: &'static EntryPoint,
    outputs: &[(&'static str, crate::gpu::batch::Bind<'_>)],
) -> Result<()> {
    let d = x.n_features();
    let run = items_within_loop_budget(gpu, x.n_rows(), d + 2, 4);
    for data in x.chunks() {
        for first in (0..data.n_rows).step_by(run) {
            let rows = run.min(data.n_rows - first);
            for q in x.chunks() {
                let grid = gpu.grid(q.n_rows.div_ceil(ROW_WG_SIZE as usize) as u64)?;
                let params = PairParams {
                    gamma: radius_sq,
                    ..PairParams::pairs((q, data), (first, rows), d, grid.x)
                };
                let mut binds = vec![("queries", q.bind()), ("data", data.bind())];
                binds.extend(outputs.iter().cloned());
                let work = Work::f32s(
                    (q.n_rows * rows * 3 * d) as f64,
                    ((q.n_rows + rows) * d) as f64,
                );
                batch.dispatch(entry, &[], &params, &binds, grid, work)?;
            }
        }
    }
    Ok(())
}
