//! The device passes over the data: per-feature moments (mean and variance from shifted
//! block sums) and blocked cross products (X − a)ᵀ(B − b), which give the covariance and the
//! matrix-free S·V. Every f32 sum covers one bounded block of rows; blocks are folded on
//! the device and rounds of blocks added in f64 on the host.

use crate::error::Result;
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::buffer::Chunk;
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::{covariance, reduce, rows};

/// Rows per block of the moment and covariance partials: bounds every f32 sum.
const MOMENT_BLOCK_ROWS: usize = 1024;
/// What the per-block partials of one pass may take on the device.
const PARTIALS_TARGET_BYTES: u64 = 64 << 20;

/// Column statistics of the data, f64.
pub(super) struct Moments {
    /// Per-feature means.
    pub(super) mean: Vec<f64>,
    /// Per-feature population variances.
    pub(super) var: Vec<f64>,
}

/// Per-feature mean and population variance, from per-block shifted sums combined in f64.
pub(super) fn column_moments(gpu: &Gpu, x: &GpuMatrix) -> Result<Moments> {
    let (n, d) = (x.n_rows(), x.n_features());
    let shift: Vec<f32> = rows::read_rows(gpu, x, &[0])?;
    let (offsets, n_blocks) = block_offsets(x.chunks(), MOMENT_BLOCK_ROWS);
    let (s1, s2) = gpu.scoped("PCA column moments", || {
        let shift_buf = gpu.buffer_from("moment shift", &shift, wgpu::BufferUsages::empty());
        let bytes = (n_blocks * d * 4) as u64;
        let p1 = gpu.buffer_zeroed("partial column sums", bytes);
        let p2 = gpu.buffer_zeroed("partial column sums of squares", bytes);
        let mut batch = Batch::new(gpu, "column moments");
        for (chunk, &offset) in x.chunks().iter().zip(&offsets) {
            reduce::column_moments(
                gpu,
                &mut batch,
                chunk,
                d,
                MOMENT_BLOCK_ROWS,
                offset,
                &shift_buf,
                &p1,
                &p2,
            )?;
        }
        let h1 = batch.read(&p1, 0, bytes);
        let h2 = batch.read(&p2, 0, bytes);
        let back = batch.finish()?;
        Ok((back.f32s(h1), back.f32s(h2)))
    })?;
    let mut sum = vec![0.0f64; d];
    let mut sum_sq = vec![0.0f64; d];
    for b in 0..n_blocks {
        for j in 0..d {
            sum[j] += s1[b * d + j] as f64;
            sum_sq[j] += s2[b * d + j] as f64;
        }
    }
    let nf = n as f64;
    let mean = (0..d).map(|j| shift[j] as f64 + sum[j] / nf).collect();
    let var = (0..d)
        .map(|j| (sum_sq[j] / nf - (sum[j] / nf).powi(2)).max(0.0))
        .collect();
    Ok(Moments { mean, var })
}

/// First global block of each chunk for blocks of `block_rows`, and the total.
fn block_offsets(chunks: &[Chunk], block_rows: usize) -> (Vec<usize>, usize) {
    let mut offsets = Vec::with_capacity(chunks.len());
    let mut total = 0;
    for c in chunks {
        offsets.push(total);
        total += c.n_rows.div_ceil(block_rows);
    }
    (offsets, total)
}

/// Σ over blocks of the per-block `cols_a x cols_b` partials in `partials`, read back.
fn fold_partials(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    partials: &wgpu::Buffer,
    n_blocks: usize,
    n_cols: usize,
) -> Result<crate::gpu::batch::ReadHandle> {
    let totals = gpu.buffer_zeroed("folded partials", (n_cols * 4) as u64);
    reduce::sum_partial_columns_f32(gpu, batch, partials, n_blocks, n_cols, &totals)?;
    Ok(batch.read(&totals, 0, (n_cols * 4) as u64))
}

/// Rows per block of the cross-product partials: no f32 partial sums more rows than this.
const GRAM_BLOCK_ROWS: usize = 4096;

/// A run of whole blocks of one chunk, dispatched as one piece.
struct RowRange {
    chunk: usize,
    first: usize,
    rows: usize,
}

/// Splits the rows of `x` into rounds of at most `blocks_per_round` blocks of `block_rows`
/// rows (blocks never straddle chunks). Each round's partials fit the device budget; rounds are
/// combined in f64 on the host, so nothing is summed in f32 over more than one block.
fn rounds(x: &GpuMatrix, block_rows: usize, blocks_per_round: usize) -> Vec<Vec<RowRange>> {
    let mut out: Vec<Vec<RowRange>> = vec![Vec::new()];
    let mut in_round = 0;
    for (i, c) in x.chunks().iter().enumerate() {
        let mut first = 0;
        while first < c.n_rows {
            if in_round == blocks_per_round {
                out.push(Vec::new());
                in_round = 0;
            }
            let blocks = (c.n_rows - first)
                .div_ceil(block_rows)
                .min(blocks_per_round - in_round);
            let rows = (blocks * block_rows).min(c.n_rows - first);
            out.last_mut().expect("one round").push(RowRange {
                chunk: i,
                first,
                rows,
            });
            in_round += blocks;
            first += rows;
        }
    }
    out
}

/// Σ over all rows of (X − a)ᵀ(B − b), (a_cols x b_cols, f64): per-block partials on the
/// device, folded per round with Kahan sums, rounds added in f64. `b_rows` gives, for a chunk,
/// the buffer holding its B rows (`None`: B = X itself, and only the upper triangle is formed,
/// mirrored here).
pub(super) fn gram_over_rows(
    gpu: &Gpu,
    x: &GpuMatrix,
    a_shift: &wgpu::Buffer,
    b_cols: usize,
    b_rows: Option<&[wgpu::Buffer]>,
    b_shift: &wgpu::Buffer,
) -> Result<Vec<f64>> {
    let d = x.n_features();
    let cols = d * b_cols;
    // The forced chunk size (tests) also shrinks the rounds, so small data exercise several.
    let budget = gpu.chunk_byte_limit().min(PARTIALS_TARGET_BYTES);
    let blocks_per_round = ((budget / (cols as u64 * 4)).max(1) as usize).min(1 << 16);
    let upper_only = b_rows.is_none();
    let mut total = vec![0.0f64; cols];
    let partials = gpu.scoped("cross-product partials", || {
        Ok(gpu.buffer_zeroed(
            "cross-product partials",
            (blocks_per_round * cols * 4) as u64,
        ))
    })?;
    for round in rounds(x, GRAM_BLOCK_ROWS, blocks_per_round) {
        let folded = gpu.scoped("cross products", || {
            let mut batch = Batch::new(gpu, "cross products");
            batch.clear(&partials);
            let mut block = 0;
            for r in &round {
                let chunk = &x.chunks()[r.chunk];
                let a = covariance::Operand {
                    bind: chunk.bind(),
                    offset: chunk.x_offset + (r.first * d) as u32,
                    cols: d,
                    shift: a_shift,
                };
                let b = match b_rows {
                    None => covariance::Operand {
                        bind: chunk.bind(),
                        offset: a.offset,
                        cols: d,
                        shift: b_shift,
                    },
                    Some(bufs) => covariance::Operand {
                        bind: Bind::Whole(&bufs[r.chunk]),
                        offset: (r.first * b_cols) as u32,
                        cols: b_cols,
                        shift: b_shift,
                    },
                };
                covariance::gram_partials(
                    gpu,
                    &mut batch,
                    r.rows,
                    &a,
                    &b,
                    GRAM_BLOCK_ROWS,
                    block,
                    upper_only,
                    &partials,
                )?;
                block += r.rows.div_ceil(GRAM_BLOCK_ROWS);
            }
            let h = fold_partials(gpu, &mut batch, &partials, block, cols)?;
            Ok(batch.finish()?.f32s(h))
        })?;
        for (t, v) in total.iter_mut().zip(folded) {
            *t += v as f64;
        }
    }
    if upper_only {
        for i in 0..d {
            for j in 0..i {
                total[i * d + j] = total[j * d + i];
            }
        }
    }
    Ok(total)
}

/// The centred (and scaled) covariance S = Xsᵀ Xs / (N − ddof), D x D row-major f64.
pub(super) fn covariance_matrix(
    gpu: &Gpu,
    x: &GpuMatrix,
    center: &[f64],
    scale: &[f64],
    ddof: usize,
) -> Result<Vec<f64>> {
    let (n, d) = (x.n_rows(), x.n_features());
    let shift: Vec<f32> = center.iter().map(|&v| v as f32).collect();
    let shift = gpu.scoped("covariance shift", || {
        Ok(gpu.buffer_from("covariance shift", &shift, wgpu::BufferUsages::empty()))
    })?;
    let mut s = gram_over_rows(gpu, x, &shift, d, None, &shift)?;
    let denom = (n - ddof) as f64;
    for i in 0..d {
        for j in 0..d {
            s[i * d + j] /= denom * scale[i] * scale[j];
        }
    }
    Ok(s)
}
