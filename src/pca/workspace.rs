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
use crate::gpu::stream::{DeviceRows, PieceWork};
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::primitives::reduce::{self, MomentBlocks};
use crate::kernels::primitives::rows;
use crate::kernels::products::covariance::{self, GramBlocks, Operand};
use crate::kernels::products::projection::{self, AffineMap};
use crate::source::RowSource;

/// Rows per block of the moment and covariance partials: bounds every f32 sum.
const MOMENT_BLOCK_ROWS: usize = 1024;
/// What the per-block partials of one pass may take on the device.
const PARTIALS_TARGET_BYTES: u64 = 64 << 20;

/// The column moments' device buffers and readbacks, recorded into a batch by
/// [`record_column_moments`] or [`record_column_moments_about`].
pub(super) struct ColumnMoments {
    n: usize,
    d: usize,
    n_blocks: usize,
    /// The shift s (the first row, or a centre from an earlier pass).
    shift: DeviceBuffer<f32>,
    /// Per block of [`MOMENT_BLOCK_ROWS`] rows, Σ (x − s).
    sums: DeviceBuffer<f32>,
    reads: [ReadHandle; 3],
}

/// Records the column moments of `x` into `batch`: the shift row (the first row) gathered on
/// the device, then the per-block shifted sums (one round trip for the whole pass, with
/// whatever else the batch holds).
pub(super) fn record_column_moments(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    x: &GpuMatrix,
) -> Result<ColumnMoments> {
    let shift = DeviceBuffer::zeroed(gpu, "moment shift", x.n_features());
    rows::gather_rows(gpu, batch, x, &[0], &shift)?;
    record_column_moments_about(gpu, batch, x, shift)
}

/// [`record_column_moments`] about `shift` (D values on the device). About the f32 mean an
/// earlier pass folded ([`record_centre`]), the variance E(x − s)² − (E(x − s))² does not
/// cancel: about the first row it loses digits in proportion to (μ − s)²/σ² (tens to
/// hundreds for image pixels).
pub(super) fn record_column_moments_about(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    x: &GpuMatrix,
    shift: DeviceBuffer<f32>,
) -> Result<ColumnMoments> {
    let (n, d) = (x.n_rows(), x.n_features());
    let (sums, sums_sq, n_blocks) = record_shifted_sums(gpu, batch, x, &shift)?;
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

/// Records the f32 column means of `x` into `centre` on the device (the sums about the first
/// row folded there), reading nothing back.
pub(super) fn record_centre(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    x: &GpuMatrix,
    centre: &DeviceBuffer<f32>,
) -> Result<()> {
    let d = x.n_features();
    let shift = DeviceBuffer::zeroed(gpu, "moment shift", d);
    rows::gather_rows(gpu, batch, x, &[0], &shift)?;
    let (sums, _, n_blocks) = record_shifted_sums(gpu, batch, x, &shift)?;
    reduce::mean_of_partial_columns(gpu, batch, (&sums, n_blocks, d), &shift, x.n_rows(), centre)
}

/// The per-block sums Σ (x − s) and Σ (x − s)² of `x` about `shift`, and the blocks.
fn record_shifted_sums(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    x: &GpuMatrix,
    shift: &DeviceBuffer<f32>,
) -> Result<(DeviceBuffer<f32>, DeviceBuffer<f32>, usize)> {
    let d = x.n_features();
    let (offsets, n_blocks) = block_offsets(x.chunks(), MOMENT_BLOCK_ROWS);
    let sums = DeviceBuffer::zeroed(gpu, "partial column sums", n_blocks * d);
    let sums_sq = DeviceBuffer::zeroed(gpu, "partial column sums of squares", n_blocks * d);
    for (chunk, &offset) in x.chunks().iter().zip(&offsets) {
        let blocks = MomentBlocks {
            block_rows: MOMENT_BLOCK_ROWS,
            block_offset: offset,
            partial_sum: &sums,
            partial_sum_sq: &sums_sq,
        };
        reduce::column_moments(gpu, batch, chunk, d, shift, &blocks)?;
    }
    Ok((sums, sums_sq, n_blocks))
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

/// The operands of Σ over all rows of (X − a)ᵀ(B − b) besides X ([`submit_gram_rounds`]).
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

/// One product W = Xsᵀ(Xs·V)/(N − ddof) of the matrix-free solver, never forming S;
/// Xs = (X − c)/σ. Its operands are uploaded once; each piece of the rows (or all of them,
/// resident) is one submission ([`MatrixFreeProduct::submit`]), so a streamed pass submits
/// the next piece before it reads this one's sums ([`PieceWork`]).
pub(super) struct MatrixFreeProduct<'g> {
    gpu: &'g Gpu,
    d: usize,
    p: usize,
    /// (V/σ)ᵀ, d x p.
    weights: DeviceBuffer<f32>,
    /// c.
    shift: DeviceBuffer<f32>,
    zeros_p: DeviceBuffer<f32>,
    scale: Vec<f64>,
    denom: f64,
    /// Σ over the pieces collected so far, p rows of d.
    sum: Vec<f64>,
}

impl<'g> MatrixFreeProduct<'g> {
    /// The product of the p rows `v` (p x d) about `center`, features divided by `scale`,
    /// the sum divided by `denom` = N − ddof.
    pub(super) fn new(
        gpu: &'g Gpu,
        (center, scale): (&[f64], &[f64]),
        denom: f64,
        v: &[f64],
        p: usize,
    ) -> Result<Self> {
        let d = center.len();
        let mut vt = vec![0.0f32; d * p];
        for r in 0..p {
            for j in 0..d {
                vt[j * p + r] = (v[r * d + j] / scale[j]) as f32;
            }
        }
        let shift: Vec<f32> = center.iter().map(|&c| c as f32).collect();
        gpu.scoped("matrix-free projection", || {
            Ok(Self {
                gpu,
                d,
                p,
                weights: DeviceBuffer::from_slice(gpu, "V/σ transposed", &vt),
                shift: DeviceBuffer::from_slice(gpu, "centre", &shift),
                zeros_p: DeviceBuffer::zeroed(gpu, "no shift", p),
                scale: scale.to_vec(),
                denom,
                sum: vec![0.0; p * d],
            })
        })
    }

    /// The product over rows all on the device: one submission, p rows of d.
    pub(super) fn over_resident(mut self, x: &GpuMatrix) -> Result<Vec<f64>> {
        let submitted = self.submit(x, 0)?;
        self.collect(submitted)?;
        Ok(self.sum)
    }

    /// The product over the rows of `rows` (resident: one submission; streamed: a pass,
    /// each piece submitted before the last one's sums are read), p rows of d.
    pub(super) fn over<S: RowSource + ?Sized>(
        mut self,
        rows: &DeviceRows<'_, S>,
    ) -> Result<Vec<f64>> {
        let gpu = self.gpu;
        rows.pass_ahead(gpu, &mut self)?;
        Ok(self.sum)
    }
}

impl<'g> PieceWork for MatrixFreeProduct<'g> {
    type Submitted = GramInFlight<'g>;

    /// P = Xs·V per chunk and Xcᵀ·P over the piece's rows, in one submission.
    fn submit(&mut self, piece: &GpuMatrix, _first_row: usize) -> Result<GramInFlight<'g>> {
        let (gpu, d, p) = (self.gpu, self.d, self.p);
        let map = AffineMap {
            in_cols: d,
            out_cols: p,
            in_shift: &self.shift,
            weights: &self.weights,
            out_shift: &self.zeros_p,
        };
        let mut batch = Batch::new(gpu, "Xcᵀ(Xc·V)");
        let projected = gpu.scoped("matrix-free projection", || {
            let mut projected = Vec::new();
            for chunk in piece.chunks() {
                let out = DeviceBuffer::zeroed(gpu, "X·V", chunk.n_rows * p);
                let (offset, rows) = (chunk.x_offset, chunk.n_rows);
                projection::affine_matmul(gpu, &mut batch, chunk.bind(), offset, rows, &map, &out)?;
                projected.push(out);
            }
            Ok(projected)
        })?;
        let operands = GramOperands {
            a_shift: &self.shift,
            b_cols: p,
            b_rows: Some(&projected),
            b_shift: &self.zeros_p,
        };
        submit_gram_rounds(gpu, piece, &operands, batch)
    }

    fn collect(&mut self, submitted: GramInFlight<'g>) -> Result<()> {
        let (w, _) = submitted.collect()?;
        // w is d x p: row j of Xcᵀ P; divide by σ_j and `denom` (N − ddof), then rows per
        // vector.
        let (d, p) = (self.d, self.p);
        for j in 0..d {
            for r in 0..p {
                self.sum[r * d + j] += w[j * p + r] / self.scale[j] / self.denom;
            }
        }
        Ok(())
    }
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
