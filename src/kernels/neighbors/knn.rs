//! The k nearest neighbours of every row on the device (`shaders/neighbors/knn.wgsl`): each
//! query row keeps a sorted list of (squared distance, index), merged with one run of data
//! rows per dispatch, in data order, so the lists do not depend on how the data are split.

use crate::error::{Error, Result};
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::neighbors::knn as wgsl;
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::primitives::gemm::cpu_like;
use crate::kernels::primitives::pairs::{
    slice_bind, slice_buffer, PaddedRows, PairParams, PAIR_D4, SLICE_VALUES, UNIFORM_MAX_D,
};
use crate::kernels::{items_within_loop_budget, ROW_WG_SIZE};

/// Largest number of neighbours the search keeps (the private lists of `knn_update`).
pub(crate) const KNN_MAX: usize = wgsl::KNN_MAX as usize;
/// The override that fixes the uniform neighbour search's list length (`KNN_K`).
pub(crate) const KNN_K: &str = "KNN_K";
/// Largest k of the uniform neighbour search (the lists in registers).
pub(crate) const KNN_UNIFORM_MAX_K: usize = wgsl::KNN_UNIFORM_MAX_K as usize;

/// How the neighbour search reads the data rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KnnVariant {
    /// From storage (GPUs).
    Storage,
    /// From uniform slices, the query row in registers (CPU-like adapters, D ≤
    /// [`UNIFORM_MAX_D`]). The same lists, to the bit, as [`KnnVariant::Storage`].
    Uniform,
}

impl KnnVariant {
    /// The variant for `d` features and `k` neighbours on this adapter: fixed by the
    /// adapter's kind and the shape, so the same adapter always runs the same kernel.
    pub(crate) fn for_adapter(gpu: &Gpu, d: usize, k: usize) -> Self {
        if cpu_like(gpu) && d <= UNIFORM_MAX_D && k <= KNN_UNIFORM_MAX_K {
            Self::Uniform
        } else {
            Self::Storage
        }
    }
}

/// The `k` nearest rows of every row of `x` with the given variant (the same lists from
/// both): N x k indices and squared distances, row-major.
pub(crate) fn nearest_neighbors_with(
    gpu: &Gpu,
    x: &GpuMatrix,
    k: usize,
    variant: KnnVariant,
) -> Result<(Vec<u32>, Vec<f32>)> {
    let (n, d) = (x.n_rows(), x.n_features());
    if variant == KnnVariant::Uniform && (d > UNIFORM_MAX_D || k > KNN_UNIFORM_MAX_K) {
        return Err(Error::Gpu(format!(
            "the uniform neighbour search takes D <= {UNIFORM_MAX_D}, k <= {KNN_UNIFORM_MAX_K}"
        )));
    }
    gpu.scoped("k nearest neighbours", || {
        let best_dist =
            DeviceBuffer::from_slice(gpu, "neighbour distances", &vec![f32::MAX; n * k]);
        let best_index = DeviceBuffer::from_slice(gpu, "neighbour indices", &vec![u32::MAX; n * k]);
        let mut batch = Batch::new(gpu, "knn_update");
        // Data rows per dispatch: within the loop budget, counting for the storage kernel an
        // insertion (k back-edges) at every row, the worst case (the uniform kernel's loops
        // over the list unroll); and a uniform slice.
        let d4 = d.div_ceil(4);
        let (run, per_row) = match variant {
            KnnVariant::Uniform => (SLICE_VALUES / (4 * d4), 1),
            KnnVariant::Storage => (usize::MAX, k + d + 3),
        };
        let run = items_within_loop_budget(gpu, run.min(n), per_row, 2 * k + d);
        let slice = slice_buffer(gpu, "neighbour slice");
        for data in x.chunks() {
            let x_pad = match variant {
                KnnVariant::Storage => None,
                KnnVariant::Uniform => Some(PaddedRows::record(
                    gpu,
                    &mut batch,
                    (data.bind(), data.x_offset),
                    data.n_rows,
                    d,
                )?),
            };
            for first in (0..data.n_rows).step_by(run) {
                let rows = run.min(data.n_rows - first);
                if let Some(x_pad) = &x_pad {
                    x_pad.copy_to_slice(&mut batch, &slice, first, rows);
                }
                for q in x.chunks() {
                    let grid = gpu.grid(q.n_rows.div_ceil(ROW_WG_SIZE as usize) as u64)?;
                    let params = PairParams {
                        k: k as u32,
                        ..PairParams::pairs((q, data), (first, rows), d, grid.x)
                    };
                    let work = Work::f32s(
                        (q.n_rows * rows * 3 * d) as f64,
                        ((q.n_rows + rows) * d) as f64,
                    );
                    let lists = [
                        ("best_dist", best_dist.bind()),
                        ("best_index", best_index.bind()),
                    ];
                    match variant {
                        KnnVariant::Uniform => batch.dispatch(
                            wgsl::KNN_UPDATE_UNIFORM,
                            &[(PAIR_D4, d4 as u32), (KNN_K, k as u32)],
                            &params,
                            &[
                                ("queries", q.bind()),
                                ("x_slice", slice_bind(&slice)),
                                lists[0],
                                lists[1],
                            ],
                            grid,
                            work,
                        )?,
                        KnnVariant::Storage => batch.dispatch(
                            wgsl::KNN_UPDATE,
                            &[],
                            &params,
                            &[
                                ("queries", q.bind()),
                                ("data", data.bind()),
                                lists[0],
                                lists[1],
                            ],
                            grid,
                            work,
                        )?,
                    }
                }
            }
        }
        let hi = batch.read_all(&best_index);
        let hd = batch.read_all(&best_dist);
        let back = batch.finish()?;
        Ok((back.u32s(hi), back.f32s(hd)))
    })
}
