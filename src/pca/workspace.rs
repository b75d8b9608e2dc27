//! The device side of PCA: the passes over the data (per-feature moments, mean and variance
//! from shifted block sums, and the f32 mean they give on the device; blocked cross products
//! (X − a)ᵀ(B − b), which give the co-moment behind S = (X − μ)ᵀ(X − μ)/(N − ddof), module
//! `stream`, and the matrix-free S·V; the dense S·V are module `dense`), and what they cost
//! on the device. Every f32 sum covers
//! one bounded block of rows; blocks are folded on the device and rounds of blocks added in
//! f64 on the host.

use super::stats::Moments;
use crate::error::Result;
use crate::gpu::batch::{Batch, ReadHandle};
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::readback::{PendingReadback, Readback};
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::primitives::reduce::{self, MomentBlocks};
use crate::kernels::primitives::rows;
use crate::kernels::products::covariance::{self, GramBlocks, Operand};
use crate::kernels::products::projection::{self, AffineMap};

/// Rows per block of the moment and covariance partials: bounds every f32 sum.
const MOMENT_BLOCK_ROWS: usize = 1024;
/// What the per-block partials of one pass may take on the device.
const PARTIALS_TARGET_BYTES: u64 = 64 << 20;

/// The column moments' device buffers and readbacks, recorded into a batch by
/// [`record_column_moments`].
pub(super) struct ColumnMoments {
    n: usize,
    d: usize,
    n_blocks: usize,
    /// The shift row s (the first row).
    shift: DeviceBuffer<f32>,
    /// Per block of [`MOMENT_BLOCK_ROWS`] rows, Σ (x − s).
    sums: DeviceBuffer<f32>,
    reads: [ReadHandle; 3],
}

/// Records the column moments of `x` into `batch`: the shift row gathered on the device,
/// then the per-block shifted sums (one round trip for the whole pass, with whatever else
/// the batch holds).
pub(super) fn record_column_moments(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    x: &GpuMatrix,
) -> Result<ColumnMoments> {
    let (n, d) = (x.n_rows(), x.n_features());
    let (offsets, n_blocks) = block_offsets(x.chunks(), MOMENT_BLOCK_ROWS);
    let shift = DeviceBuffer::zeroed(gpu, "moment shift", d);
    let sums = DeviceBuffer::zeroed(gpu, "partial column sums", n_blocks * d);
    let sums_sq = DeviceBuffer::zeroed(gpu, "partial column sums of squares", n_blocks * d);
    rows::gather_rows(gpu, batch, x, &[0], &shift)?;
    for (chunk, &offset) in x.chunks().iter().zip(&offsets) {
        let blocks = MomentBlocks {
            block_rows: MOMENT_BLOCK_ROWS,
            block_offset: offset,
            partial_sum: &sums,
            partial_sum_sq: &sums_sq,
        };
        reduce::column_moments(gpu, batch, chunk, d, &shift, &blocks)?;
    }
    let reads = [
        batch.read_all(&shift),
        batch.read_all(&sums),
        batch.read_all(&sums_sq),
    ];
    Ok(ColumnMoments {
        n,
        d,
        n_blocks,
        shift,
        sums,
        reads,
    })
}

impl ColumnMoments {
    /// The means and variances, the blocks combined in f64.
    pub(super) fn moments(&self, back: &Readback) -> Moments {
        let (n, d) = (self.n, self.d);
        let [h0, h1, h2] = self.reads;
        let (shift, s1, s2) = (back.f32s(h0), back.f32s(h1), back.f32s(h2));
        let mut sum = vec![0.0f64; d];
        let mut sum_sq = vec![0.0f64; d];
        for b in 0..self.n_blocks {
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
        Moments { mean, var }
    }

    /// Records the f32 column means (shift + Σ/n, folded on the device) into `means`.
    pub(super) fn record_means(
        &self,
        gpu: &Gpu,
        batch: &mut Batch<'_>,
        means: &DeviceBuffer<f32>,
    ) -> Result<()> {
        let sums = (&self.sums, self.n_blocks, self.d);
        reduce::mean_of_partial_columns(gpu, batch, sums, &self.shift, self.n, means)
    }
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
    a_shift: &DeviceBuffer<f32>,
    b_cols: usize,
    b_rows: Option<&[DeviceBuffer<f32>]>,
    b_shift: &DeviceBuffer<f32>,
) -> Result<Vec<f64>> {
    let first = Batch::new(gpu, "cross products");
    let operands = GramOperands {
        a_shift,
        b_cols,
        b_rows,
        b_shift,
    };
    Ok(submit_gram_rounds(gpu, x, &operands, first)?.collect()?.0)
}

/// The operands of [`gram_over_rows`] besides X.
pub(super) struct GramOperands<'a> {
    /// a, subtracted from X's rows.
    pub(super) a_shift: &'a DeviceBuffer<f32>,
    /// Columns of B.
    pub(super) b_cols: usize,
    /// Per chunk of X, the buffer of its B rows (`None`: B = X, upper triangle only).
    pub(super) b_rows: Option<&'a [DeviceBuffer<f32>]>,
    /// b, subtracted from B's rows.
    pub(super) b_shift: &'a DeviceBuffer<f32>,
}

/// The rounds of a cross product, submitted ([`submit_gram_rounds`]).
pub(super) struct GramInFlight<'g> {
    rounds: Vec<(PendingReadback<'g>, ReadHandle)>,
    d: usize,
    cols: usize,
    upper_only: bool,
}

impl GramInFlight<'_> {
    /// Waits for every round and adds them in f64, in order (mirrored when only the upper
    /// triangle was formed); with the first round's readback, which holds whatever else its
    /// batch read.
    pub(super) fn collect(self) -> Result<(Vec<f64>, Readback)> {
        let mut total = vec![0.0f64; self.cols];
        let mut first = None;
        for (pending, h) in self.rounds {
            let back = pending.wait()?;
            for (t, v) in total.iter_mut().zip(back.f32s(h)) {
                *t += v as f64;
            }
            first.get_or_insert(back);
        }
        if self.upper_only {
            let d = self.d;
            for i in 0..d {
                for j in 0..i {
                    total[i * d + j] = total[j * d + i];
                }
            }
        }
        Ok((total, first.expect("a cross product has a round")))
    }
}

/// How a cross product of `x` with `b_cols`-wide rows splits into rounds: the blocks a round
/// holds (its partials fit the device budget) and the rounds.
fn gram_rounds(gpu: &Gpu, x: &GpuMatrix, b_cols: usize) -> (usize, Vec<Vec<RowRange>>) {
    let cols = x.n_features() * b_cols;
    // The forced chunk size (tests) also shrinks the rounds, so small data exercise several.
    let budget = gpu.chunk_byte_limit().min(PARTIALS_TARGET_BYTES);
    let blocks_per_round = ((budget / (cols as u64 * 4)).max(1) as usize).min(1 << 16);
    (
        blocks_per_round,
        rounds(x, GRAM_BLOCK_ROWS, blocks_per_round),
    )
}

/// Records one round of Σ (X − a)ᵀ(B − b): its blocks' partials (the buffer cleared first),
/// folded over the blocks (Kahan) into `totals`.
fn record_gram_round(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    x: &GpuMatrix,
    round: &[RowRange],
    operands: &GramOperands<'_>,
    partials: &DeviceBuffer<f32>,
    totals: &DeviceBuffer<f32>,
) -> Result<()> {
    let d = x.n_features();
    let GramOperands {
        a_shift,
        b_cols,
        b_rows,
        b_shift,
    } = *operands;
    batch.clear_values(partials);
    let mut block = 0;
    for r in round {
        let chunk = &x.chunks()[r.chunk];
        let a = Operand {
            bind: chunk.bind(),
            offset: chunk.x_offset + (r.first * d) as u32,
            cols: d,
            shift: a_shift,
        };
        let b = match b_rows {
            None => Operand {
                bind: chunk.bind(),
                offset: a.offset,
                cols: d,
                shift: b_shift,
            },
            Some(bufs) => Operand {
                bind: bufs[r.chunk].bind(),
                offset: (r.first * b_cols) as u32,
                cols: b_cols,
                shift: b_shift,
            },
        };
        let out = GramBlocks {
            block_rows: GRAM_BLOCK_ROWS,
            block_offset: block,
            upper_only: b_rows.is_none(),
            partials,
        };
        covariance::gram_partials(gpu, batch, r.rows, &a, &b, &out)?;
        block += r.rows.div_ceil(GRAM_BLOCK_ROWS);
    }
    reduce::sum_partial_columns(gpu, batch, partials, block, d * b_cols, totals)
}

/// Submits the rounds of Σ (X − a)ᵀ(B − b) without waiting, the first in `first` (which may
/// hold earlier work of the same submission). Each round's partials fit the device budget;
/// the rounds share one partials buffer, cleared by each in queue order.
pub(super) fn submit_gram_rounds<'g>(
    gpu: &'g Gpu,
    x: &GpuMatrix,
    operands: &GramOperands<'_>,
    first: Batch<'g>,
) -> Result<GramInFlight<'g>> {
    let d = x.n_features();
    let cols = d * operands.b_cols;
    let (blocks_per_round, rounds) = gram_rounds(gpu, x, operands.b_cols);
    let partials = gpu.scoped("cross-product partials", || {
        Ok(DeviceBuffer::zeroed(
            gpu,
            "cross-product partials",
            blocks_per_round * cols,
        ))
    })?;
    let mut next = Some(first);
    let mut in_flight = Vec::new();
    for round in rounds {
        let batch = next
            .take()
            .unwrap_or_else(|| Batch::new(gpu, "cross products"));
        in_flight.push(gpu.scoped("cross products", || {
            let mut batch = batch;
            let totals = DeviceBuffer::zeroed(gpu, "folded partials", cols);
            record_gram_round(gpu, &mut batch, x, &round, operands, &partials, &totals)?;
            let h = batch.read_all(&totals);
            Ok((batch.submit()?, h))
        })?);
    }
    Ok(GramInFlight {
        rounds: in_flight,
        d,
        cols,
        upper_only: operands.b_rows.is_none(),
    })
}

/// Records the co-moment Σ (X − c)(X − c)ᵀ about the device centre `centre` (upper triangle,
/// D x D f32) into a buffer that stays on the device, when its blocks fit one round; `None`
/// (nothing recorded) when they need several, whose f32 totals the host adds in f64.
pub(super) fn record_comoment(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    x: &GpuMatrix,
    centre: &DeviceBuffer<f32>,
) -> Result<Option<DeviceBuffer<f32>>> {
    let d = x.n_features();
    let (blocks_per_round, rounds) = gram_rounds(gpu, x, d);
    let [round] = rounds.as_slice() else {
        return Ok(None);
    };
    gpu.scoped("co-moment", || {
        let partials =
            DeviceBuffer::zeroed(gpu, "cross-product partials", blocks_per_round * d * d);
        let comoment = DeviceBuffer::zeroed(gpu, "co-moment", d * d);
        let operands = GramOperands {
            a_shift: centre,
            b_cols: d,
            b_rows: None,
            b_shift: centre,
        };
        record_gram_round(gpu, batch, x, round, &operands, &partials, &comoment)?;
        Ok(Some(comoment))
    })
}

/// Device bytes besides the rows of `n` x `d` data: the blocks' partial moments and cross
/// products (at most 64 MiB) and two D x D matrices.
pub(super) fn fixed_bytes(n: usize, d: usize) -> u64 {
    let dd = (d * d * 4) as u64;
    let partials =
        ((n / 4096 + 1) as u64 * dd).min(64 << 20) + (n / 1024 + 1) as u64 * d as u64 * 8;
    partials + 2 * dd + 1024
}

/// W = Xsᵀ(Xs·V)/(N − ddof) on the device, never forming S; Xs = (X − c)/σ.
pub(super) fn apply_matrix_free(
    gpu: &Gpu,
    x: &GpuMatrix,
    center: &[f64],
    scale: &[f64],
    denom: f64,
    v: &[f64],
    p: usize,
) -> Result<Vec<f64>> {
    let d = x.n_features();
    // P = Xs·V = (X − c)·(V/σ)ᵀ, one buffer per chunk.
    let mut vt = vec![0.0f32; d * p];
    for r in 0..p {
        for j in 0..d {
            vt[j * p + r] = (v[r * d + j] / scale[j]) as f32;
        }
    }
    let shift: Vec<f32> = center.iter().map(|&c| c as f32).collect();
    let (shift, zeros_p, projected) = gpu.scoped("matrix-free projection", || {
        let weights = DeviceBuffer::from_slice(gpu, "V/σ transposed", &vt);
        let shift = DeviceBuffer::from_slice(gpu, "centre", &shift);
        let zeros_p = DeviceBuffer::zeroed(gpu, "no shift", p);
        let map = AffineMap {
            in_cols: d,
            out_cols: p,
            in_shift: &shift,
            weights: &weights,
            out_shift: &zeros_p,
        };
        let mut batch = Batch::new(gpu, "X·V");
        let mut projected = Vec::new();
        for chunk in x.chunks() {
            let out = DeviceBuffer::zeroed(gpu, "X·V", chunk.n_rows * p);
            let (offset, rows) = (chunk.x_offset, chunk.n_rows);
            projection::affine_matmul(gpu, &mut batch, chunk.bind(), offset, rows, &map, &out)?;
            projected.push(out);
        }
        batch.finish()?;
        Ok((shift, zeros_p, projected))
    })?;
    let w = gram_over_rows(gpu, x, &shift, p, Some(&projected), &zeros_p)?;
    // w is d x p: row j of Xcᵀ P; divide by σ_j and `denom` (N − ddof), then rows per vector.
    let mut out = vec![0.0f64; p * d];
    for j in 0..d {
        for r in 0..p {
            out[r * d + j] = w[j * p + r] / scale[j] / denom;
        }
    }
    Ok(out)
}

pub(super) fn transpose_f32(v: &[f64], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0.0f32; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = v[r * cols + c] as f32;
        }
    }
    t
}

pub(super) fn transpose_f64(v: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0f64; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = v[r * cols + c] as f64;
        }
    }
    t
}
