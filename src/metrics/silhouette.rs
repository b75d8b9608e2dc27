//! The silhouette coefficient on the GPU: rows sorted by cluster on the device, distance sums
//! from every query row to pieces of each cluster, a(i), b(i) and s(i) on the host (parent
//! module docs).

use crate::kernels::primitives::rows::in_f32_range;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{check_cluster_count, check_label_count, cluster_index};
use crate::data::Matrix;
use crate::error::{Error, Result};
use crate::gpu::batch::Batch;
use crate::gpu::buffer::{check_budget, Chunk};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::{Gpu, GpuInput, GpuMatrix};
use crate::kernels::{primitives::rows, products::silhouette as kernel};
use crate::origin::Centred;
use crate::source::{check_shape, RowSource};

/// Rows of one cluster summed by one dispatch at most: bounds the f32 sums of distances.
const PIECE_ROWS: usize = 2048;

/// Bytes of per-piece distance sums one query batch may read back.
const SUMS_TARGET_BYTES: u64 = 64 << 20;

/// Silhouette coefficients of a clustering.
#[derive(Debug, Clone, PartialEq)]
pub struct Silhouette {
    /// Mean s(i) over the evaluated rows (scikit-learn's `silhouette_score`).
    pub score: f64,
    /// The rows evaluated, in increasing order: all rows, or the random sample.
    pub rows: Vec<usize>,
    /// s(i) of each evaluated row, in the order of `rows`.
    pub samples: Vec<f64>,
    /// The distinct labels among the evaluated rows, in increasing order.
    pub clusters: Vec<u32>,
    /// Mean s(i) over the evaluated rows of each cluster, in the order of `clusters`.
    pub per_cluster: Vec<f64>,
}

/// The silhouette coefficient of every row (or of a random sample of `sample_size` rows,
/// drawn with `seed`), computed on the GPU (module docs). f64 rows are centred on their
/// column means in f64 before the f32 cast (module [`origin`](crate::origin)).
///
/// Errors: [`Error::InvalidParameter`] for labels of the wrong length, fewer than 2 or more
/// than N − 1 distinct labels (among the sampled rows), or a `sample_size` below 3;
/// [`Error::OutOfDeviceMemory`] when the sorted copy of the data does not fit the budget;
/// the errors of the upload and the kernels.
pub fn silhouette(
    gpu: &Gpu,
    x: &impl GpuInput,
    labels: &[u32],
    sample_size: Option<usize>,
    seed: u64,
) -> Result<Silhouette> {
    if let Some(c) = Centred::of_input(x, None)? {
        return silhouette(gpu, &c, labels, sample_size, seed);
    }
    silhouette_with(gpu, x.shape().0, labels, sample_size, seed, |sorted_rows| {
        sorted_copy(gpu, &*x.on_gpu(gpu)?, sorted_rows)
    })
}

/// [`silhouette`] of the rows of a [`RowSource`] (a `.npy` file, host chunks): the
/// evaluated rows (the sample, or all) are gathered on the host in cluster order and
/// uploaded, so a sample of a source far larger than the device works; evaluating every row
/// needs them all within the budget ([`Gpu::set_memory_budget`]), as the O(N²) pairs would
/// make anything larger impractical anyway.
///
/// Errors: those of [`silhouette`] and of the source.
pub fn silhouette_source(
    gpu: &Gpu,
    source: &(impl RowSource + ?Sized),
    labels: &[u32],
    sample_size: Option<usize>,
    seed: u64,
) -> Result<Silhouette> {
    if let Some(c) = Centred::of_source(source, None)? {
        return silhouette_source(gpu, &c, labels, sample_size, seed);
    }
    let (n, d) = check_shape(source)?;
    silhouette_with(gpu, n, labels, sample_size, seed, |sorted_rows| {
        check_budget(
            gpu,
            "the rows evaluated by the silhouette",
            (sorted_rows.len() * d * 4) as u64,
        )?;
        let rows = source.gather(sorted_rows)?;
        GpuMatrix::upload(gpu, &Matrix::new(&rows, d)?)
    })
}

/// The silhouette of `n` rows given a way to put the rows `sorted_rows` (evaluated rows in
/// cluster order) on the device.
fn silhouette_with(
    gpu: &Gpu,
    n: usize,
    labels: &[u32],
    sample_size: Option<usize>,
    seed: u64,
    sorted_on_gpu: impl FnOnce(&[usize]) -> Result<GpuMatrix>,
) -> Result<Silhouette> {
    check_label_count(labels, n)?;
    let rows: Vec<usize> = match sample_size {
        Some(m) if m < 3 => {
            return Err(Error::invalid(
                "sample_size",
                format!(
                    "must be at least 3, got {m}: the sampled rows must hold 2 clusters and \
                     fewer clusters than rows"
                ),
            ))
        }
        Some(m) if m < n => {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut picked = rand::seq::index::sample(&mut rng, n, m).into_vec();
            picked.sort_unstable();
            picked
        }
        _ => (0..n).collect(),
    };
    let m = rows.len();
    let sub_labels: Vec<u32> = rows.iter().map(|&r| labels[r]).collect();
    let (clusters, index) = cluster_index(&sub_labels);
    let k = clusters.len();
    check_cluster_count("the silhouette", k, m)?;
    // Positions in `rows`, ordered by cluster (stable, so by row within a cluster).
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by_key(|&i| index[i]);
    let mut sizes = vec![0usize; k];
    index.iter().for_each(|&c| sizes[c] += 1);
    let sorted_rows: Vec<usize> = order.iter().map(|&i| rows[i]).collect();

    let sorted = sorted_on_gpu(&sorted_rows)?;
    // s(i) is a ratio of distances: data of extreme magnitude are measured at a power-of-two
    // scale where their squared distances neither overflow nor underflow f32.
    let (sorted, _) = in_f32_range(gpu, &sorted)?;
    let sums = cluster_sums(gpu, &sorted, &sizes)?;

    // s for each sorted position, then back to the order of `rows`.
    let mut samples = vec![0.0; m];
    let mut start = 0;
    let mut cluster_of_sorted = Vec::with_capacity(m);
    for (c, &size) in sizes.iter().enumerate() {
        cluster_of_sorted.extend(std::iter::repeat_n(c, size));
        start += size;
    }
    debug_assert_eq!(start, m);
    for (pos, &own) in cluster_of_sorted.iter().enumerate() {
        let s = &sums[pos * k..(pos + 1) * k];
        samples[order[pos]] = if sizes[own] == 1 {
            0.0
        } else {
            let a = s[own] / (sizes[own] - 1) as f64;
            let b = (0..k)
                .filter(|&c| c != own)
                .map(|c| s[c] / sizes[c] as f64)
                .fold(f64::INFINITY, f64::min);
            let top = a.max(b);
            if top > 0.0 {
                (b - a) / top
            } else {
                0.0
            }
        };
    }
    let mut per_cluster = vec![0.0; k];
    for (s, &c) in samples.iter().zip(&index) {
        per_cluster[c] += s;
    }
    for (v, &size) in per_cluster.iter_mut().zip(&sizes) {
        *v /= size as f64;
    }
    Ok(Silhouette {
        score: samples.iter().sum::<f64>() / m as f64,
        rows,
        samples,
        clusters,
        per_cluster,
    })
}

/// The rows `order` of `x`, gathered on the device into a new matrix (chunked to the
/// device's limits).
fn sorted_copy(gpu: &Gpu, x: &GpuMatrix, order: &[usize]) -> Result<GpuMatrix> {
    let d = x.n_features();
    check_budget(
        gpu,
        "the cluster-sorted copy of the data",
        order.len() as u64 * d as u64 * 4,
    )?;
    let per_chunk = (gpu.chunk_byte_limit() / (d as u64 * 4)).max(1) as usize;
    gpu.scoped("sorting rows by cluster", || {
        let mut batch = Batch::new(gpu, "sorting rows by cluster");
        let mut chunks = Vec::new();
        for (i, part) in order.chunks(per_chunk).enumerate() {
            let bytes = (part.len() * d * 4) as u64;
            let buffer = DeviceBuffer::zeroed(gpu, "cluster-sorted rows", part.len() * d);
            rows::gather_rows(gpu, &mut batch, x, part, &buffer)?;
            chunks.push(Chunk {
                buffer: buffer.raw().clone(),
                bind_offset: 0,
                bind_size: bytes,
                x_offset: 0,
                row_start: i * per_chunk,
                n_rows: part.len(),
            });
        }
        batch.finish()?;
        Ok(GpuMatrix::from_chunks(chunks, order.len(), d))
    })
}

/// A run of rows of one cluster inside one chunk.
struct Piece {
    chunk: usize,
    first: usize,
    n_rows: usize,
    cluster: usize,
}

/// For rows sorted by cluster (cluster c holds `sizes[c]` consecutive rows), the M x K sums
/// Σ_{j ∈ c} ‖x_i − x_j‖ (f64).
fn cluster_sums(gpu: &Gpu, x: &GpuMatrix, sizes: &[usize]) -> Result<Vec<f64>> {
    let (m, d, k) = (x.n_rows(), x.n_features(), sizes.len());
    // Cut each cluster at chunk boundaries and into pieces of at most PIECE_ROWS.
    let mut pieces = Vec::new();
    let mut start = 0;
    for (cluster, &size) in sizes.iter().enumerate() {
        let end = start + size;
        let mut row = start;
        while row < end {
            let (ci, chunk) = x
                .chunks()
                .iter()
                .enumerate()
                .find(|(_, c)| row < c.row_start + c.n_rows)
                .expect("rows lie in a chunk");
            let first = row - chunk.row_start;
            let n_rows = PIECE_ROWS.min(end - row).min(chunk.n_rows - first);
            pieces.push(Piece {
                chunk: ci,
                first,
                n_rows,
                cluster,
            });
            row += n_rows;
        }
        start = end;
    }
    let p = pieces.len();
    let limit = gpu.binding_byte_limit().clamp(4, SUMS_TARGET_BYTES);
    let batch_rows = ((limit / (p as u64 * 4)).max(1) as usize).min(m);
    let sums = gpu.scoped("allocating distance sums", || {
        Ok(DeviceBuffer::zeroed(gpu, "distance sums", p * batch_rows))
    })?;

    let mut out = vec![0.0f64; m * k];
    let mut q0 = 0;
    while q0 < m {
        let q1 = (q0 + batch_rows).min(m);
        let len = q1 - q0;
        let back = gpu.scoped("silhouette distance sums", || {
            let mut batch = Batch::new(gpu, "silhouette distance sums");
            for chunk in x.chunks() {
                // The part of this query batch inside this chunk.
                let lo = q0.max(chunk.row_start);
                let hi = q1.min(chunk.row_start + chunk.n_rows);
                if lo >= hi {
                    continue;
                }
                let queries = kernel::Rows {
                    chunk,
                    first: lo - chunk.row_start,
                    n_rows: hi - lo,
                };
                for (pi, piece) in pieces.iter().enumerate() {
                    let data = kernel::Rows {
                        chunk: &x.chunks()[piece.chunk],
                        first: piece.first,
                        n_rows: piece.n_rows,
                    };
                    kernel::cluster_distance_sums(
                        gpu,
                        &mut batch,
                        d,
                        &queries,
                        &data,
                        &sums,
                        pi * len + (lo - q0),
                    )?;
                }
            }
            let h = batch.read_values(&sums, 0, p * len);
            Ok(batch.finish()?.f32s(h))
        })?;
        for (pi, piece) in pieces.iter().enumerate() {
            for q in 0..len {
                out[(q0 + q) * k + piece.cluster] += back[pi * len + q] as f64;
            }
        }
        q0 = q1;
    }
    Ok(out)
}
