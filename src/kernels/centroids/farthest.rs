//! The rows farthest from their centroids (`shaders/centroids/farthest.wgsl`): a radix select on the
//! device over the rows' squared distances, then a list of the rows at or above the
//! threshold, sorted on the host. What the empty-cluster repair of K-Means reads instead of
//! every row's label and distance.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{centroids::farthest as wgsl, check_params};
use crate::gpu::{Gpu, GpuMatrix, GpuVector};
use crate::kernels::ROW_WG_SIZE;

/// Twin of `FarthestParams` in shaders/centroids/farthest.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct FarthestParams {
    n_rows: u32,
    grid_x: u32,
    shift: u32,
    prefix_mask: u32,
    prefix: u32,
    threshold: u32,
    capacity: u32,
    row_base: u32,
}

const _: () = check_params::<FarthestParams>(wgsl::ENTRY_POINTS);

/// Bits of the key per histogram pass, and the passes' shifts: 11 + 11 + 10 bits, so three
/// passes decide all 32.
const BIN_BITS: u32 = wgsl::FARTHEST_BINS.trailing_zeros();
const SHIFTS: [u32; 3] = [21, 10, 0];
const _: () = assert!(BIN_BITS == 11 && wgsl::FARTHEST_BINS == 1 << BIN_BITS);

/// A row in the order the repair takes rows: (global row, label, squared distance).
pub(crate) type FarRow = (usize, u32, f32);

/// The first rows of the order (squared distance descending by `f32::total_cmp`, row
/// ascending) over the rows of `m`, at least `at_least` of them (all when there are fewer),
/// from each row's `labels` and `dist` (chunked like `m`). `None` when so many rows tie at
/// the threshold that listing them would cost more than reading every row back (the caller
/// then does that).
pub(crate) fn farthest_rows(
    gpu: &Gpu,
    m: &GpuMatrix,
    labels: &GpuVector<u32>,
    dist: &GpuVector<f32>,
    at_least: usize,
) -> Result<Option<Vec<FarRow>>> {
    let n = m.n_rows();
    let want = at_least.min(n) as u64;
    if want == 0 {
        return Ok(Some(Vec::new()));
    }
    // Ties at the threshold may list more than `want`; past this the list is refused.
    let capacity = (4 * want).max(1024).min(n as u64);
    gpu.scoped("finding the farthest rows", || {
        let histogram = DeviceBuffer::<u32>::zeroed(gpu, "farthest histogram", 1 << BIN_BITS);
        // Rows whose key is above the region still to refine, and the region: keys with
        // (key & mask) == prefix.
        let (mut above, mut mask, mut prefix) = (0u64, 0u32, 0u32);
        for (pass, &shift) in SHIFTS.iter().enumerate() {
            let bins = histogram_pass(gpu, m, dist, &histogram, shift, mask, prefix)?;
            let mut chosen = 0;
            for b in (0..bins.len()).rev() {
                if above + bins[b] as u64 >= want {
                    chosen = b;
                    break;
                }
                above += bins[b] as u64;
            }
            // This pass decides the key's bits from `shift` up to the previous pass's shift.
            let top = if pass == 0 { 32 } else { SHIFTS[pass - 1] };
            let field = ((1u64 << (top - shift)) - 1) as u32;
            prefix |= (chosen as u32 & field) << shift;
            mask |= field << shift;
            if above + bins[chosen] as u64 <= capacity {
                return compact(gpu, m, labels, dist, prefix, capacity).map(Some);
            }
        }
        // Every bit decided: more than `capacity` rows share the threshold's distance.
        Ok(None)
    })
}

/// The histogram of the keys of the rows in the region `(key & mask) == prefix`, binned by
/// the key's bits from `shift`.
fn histogram_pass(
    gpu: &Gpu,
    m: &GpuMatrix,
    dist: &GpuVector<f32>,
    histogram: &DeviceBuffer<u32>,
    shift: u32,
    mask: u32,
    prefix: u32,
) -> Result<Vec<u32>> {
    let mut batch = Batch::new(gpu, "farthest histogram");
    batch.clear_values(histogram);
    for (chunk, dist) in m.chunks().iter().zip(&dist.chunks) {
        let rows_per_wg = wgsl::FARTHEST_HIST_ROWS as u64;
        let grid = gpu.grid((chunk.n_rows as u64).div_ceil(rows_per_wg))?;
        let params = FarthestParams {
            n_rows: chunk.n_rows as u32,
            grid_x: grid.x,
            shift,
            prefix_mask: mask,
            prefix,
            ..Zeroable::zeroed()
        };
        batch.dispatch(
            wgsl::FARTHEST_HISTOGRAM,
            &[],
            &params,
            &[("dist", dist.bind()), ("histogram", histogram.bind())],
            grid,
            Work::f32s(0.0, chunk.n_rows as f64),
        )?;
    }
    let h = batch.read_all(histogram);
    Ok(batch.finish()?.u32s(h))
}

/// Every row whose key is at least `threshold`, sorted into the repair's order (at most
/// `capacity` of them, which the histograms guaranteed).
fn compact(
    gpu: &Gpu,
    m: &GpuMatrix,
    labels: &GpuVector<u32>,
    dist: &GpuVector<f32>,
    threshold: u32,
    capacity: u64,
) -> Result<Vec<FarRow>> {
    let found = DeviceBuffer::<[u32; 4]>::zeroed(gpu, "farthest rows", capacity as usize);
    let count = DeviceBuffer::<u32>::zeroed(gpu, "farthest count", 1);
    let mut batch = Batch::new(gpu, "farthest rows");
    for ((chunk, labels), dist) in m.chunks().iter().zip(&labels.chunks).zip(&dist.chunks) {
        let grid = gpu.grid((chunk.n_rows as u64).div_ceil(ROW_WG_SIZE as u64))?;
        let params = FarthestParams {
            n_rows: chunk.n_rows as u32,
            grid_x: grid.x,
            threshold,
            capacity: capacity as u32,
            row_base: chunk.row_start as u32,
            ..Zeroable::zeroed()
        };
        batch.dispatch(
            wgsl::FARTHEST_COMPACT,
            &[],
            &params,
            &[
                ("dist", dist.bind()),
                ("labels", labels.bind()),
                ("found_count", count.bind()),
                ("found", found.bind()),
            ],
            grid,
            Work::f32s(0.0, chunk.n_rows as f64),
        )?;
    }
    let h_count = batch.read_all(&count);
    let h_found = batch.read_all(&found);
    let back = batch.finish()?;
    let listed = (back.u32s(h_count)[0] as usize).min(capacity as usize);
    let mut rows: Vec<FarRow> = back.bytes_as::<[u32; 4]>(h_found)[..listed]
        .iter()
        .map(|&[row, label, bits, _]| (row as usize, label, f32::from_bits(bits)))
        .collect();
    rows.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::farthest_rows;
    use crate::data::Matrix;
    use crate::gpu::tests::{gpu, random};
    use crate::gpu::{GpuMatrix, GpuVector};

    /// Every row in the repair's order, on the host: the oracle.
    fn sorted(labels: &[u32], dist: &[f32]) -> Vec<(usize, u32, f32)> {
        let mut all: Vec<_> = (0..dist.len()).map(|r| (r, labels[r], dist[r])).collect();
        all.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
        all
    }

    #[test]
    fn the_device_selection_is_a_prefix_of_the_host_order() {
        let gpu = gpu();
        let d = 3;
        for (n, at_least, kind, chunk_rows) in [
            (5000, 12, "random", 5000),
            (9000, 40, "random", 2500),
            (300, 500, "random", 300),
            (6000, 20, "coarse", 1700),
            (4000, 7, "signed", 4000),
            (4000, 3500, "signed", 1500),
            (70, 3, "random", 70),
        ] {
            let u = random(n, n as u64 + at_least as u64);
            let dist: Vec<f32> = match kind {
                // Few distinct values: many ties at any threshold, broken by row.
                "coarse" => u.iter().map(|v| (v * 50.0).floor()).collect(),
                // Both zeros and tiny negatives, as a GEMM-form distance may give.
                "signed" => u
                    .iter()
                    .map(|v| match (v * 7.0) as u32 {
                        0 => -0.0,
                        1 => -1e-7 * v,
                        _ => v * 1e3,
                    })
                    .collect(),
                _ => u.iter().map(|v| v * v * 100.0).collect(),
            };
            let labels: Vec<u32> = (0..n as u32).map(|r| r % 13).collect();
            gpu.set_max_chunk_bytes((chunk_rows * d * 4) as u64);
            let x = GpuMatrix::upload(&gpu, &Matrix::new(&random(n * d, 1), d).unwrap()).unwrap();
            let lv = GpuVector::<u32>::zeroed(&gpu, &x, "labels");
            let dv = GpuVector::<f32>::zeroed(&gpu, &x, "dist");
            for ((c, l), dc) in x.chunks().iter().zip(&lv.chunks).zip(&dv.chunks) {
                l.write(&gpu, &labels[c.row_start..c.row_start + c.n_rows]);
                dc.write(&gpu, &dist[c.row_start..c.row_start + c.n_rows]);
            }
            let got = farthest_rows(&gpu, &x, &lv, &dv, at_least)
                .unwrap()
                .unwrap();
            let want = sorted(&labels, &dist);
            assert!(got.len() >= at_least.min(n), "{kind} n {n}: {}", got.len());
            let capacity = (4 * at_least).max(1024).min(n);
            assert!(got.len() <= capacity, "{kind} n {n}: {} rows", got.len());
            let same = got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.0 == b.0 && a.1 == b.1 && a.2.to_bits() == b.2.to_bits());
            assert!(same, "{kind} n {n}: {:?} vs {:?}", &got[..5], &want[..5]);
            gpu.set_max_chunk_bytes(u64::MAX);
        }
    }

    #[test]
    fn too_many_ties_at_the_threshold_are_refused() {
        let gpu = gpu();
        let n = 5000;
        let x = GpuMatrix::upload(&gpu, &Matrix::new(&random(n, 2), 1).unwrap()).unwrap();
        let lv = GpuVector::<u32>::zeroed(&gpu, &x, "labels");
        let dv = GpuVector::<f32>::zeroed(&gpu, &x, "dist");
        dv.chunks[0].write(&gpu, &vec![2.5f32; n]);
        assert_eq!(farthest_rows(&gpu, &x, &lv, &dv, 10).unwrap(), None);
        // Under the list's capacity they are all listed, by row.
        dv.chunks[0].write(&gpu, &[vec![2.5f32; 1000], vec![1.0; n - 1000]].concat());
        let got = farthest_rows(&gpu, &x, &lv, &dv, 10).unwrap().unwrap();
        assert_eq!(got.len(), 1000);
        assert!(got.iter().enumerate().all(|(i, r)| r.0 == i && r.2 == 2.5));
    }
}
