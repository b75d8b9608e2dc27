//! The device side of a Gaussian-mixture fit or evaluation: the buffers of one data matrix
//! (or of one streamed piece at a time) and the passes over it. The M-step of resident rows
//! is `moments`, the EM loop that drives them `em`.
//!
//! **Responsibilities in a window.** A fit never holds the N x K responsibilities: each pass
//! makes them again (the E-step, one-hot labels, or values from the host) for one segment of
//! at most `RESP_WINDOW_BYTES` of them at a time (rounded to whole blocks of the M-step sums;
//! module `window`, with the memory of a fit as a formula), and takes that segment's M-step
//! sums before the next segment overwrites the window (one submission, or one per segment
//! for values written from the host). So a fit's device memory is the rows, O(1) per row
//! besides (log p, the label), the K x D (x D) parameters and sums, and one window: at
//! 20M x 64, K = 50, 5.1 GB of rows and 32 MiB of responsibilities where the N x K matrix
//! took 4 GB more. A pass that must see the same responsibilities twice (the scatter's
//! second pass, `moments`) makes them again, bit for bit, unless they all fit the window.
//! Evaluation (`GaussianMixtureModel::evaluate_gpu` and the `predict*_gpu`, `score*_gpu`
//! built on it), which hands the N x K responsibilities out, keeps all of them, a buffer
//! per segment.

use super::em::Parameters;
use super::math::estep_constants;
use super::window::{block_rows, split_augmented, sum_outputs, window_rows};
use super::CovarianceType;
use crate::error::{Error, Result};
use crate::gpu::batch::{Batch, ReadHandle};
use crate::gpu::buffer::{check_budget, Chunk};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::{Gpu, GpuMatrix, GpuVector};
use crate::kernels::mixture::estep::{self, Components, RowOutputs, Segment, NORMALIZE_ROWS};
use crate::kernels::mixture::estep_tiled;
use crate::kernels::mixture::mstep::{self, Blocks, Moment, Sums};
use crate::kernels::primitives::gemm::cpu_like;
use crate::kernels::primitives::reduce;

/// Rows of one data chunk whose responsibilities fit one binding (evaluation) or the window
/// (fits).
pub(super) struct SegmentBuffers {
    chunk: usize,
    first: usize,
    /// Rows in use: `capacity`, or fewer in the last segments of a short streamed piece.
    pub(super) n_rows: usize,
    /// Rows the buffers were sized for.
    capacity: usize,
    /// Index of its responsibilities' buffer (the one window of a fit, or its own).
    resp: usize,
    /// First global M-step block and first global log p block.
    block_offset: usize,
    log_block_offset: usize,
}

/// One E-step's outputs on the device: responsibilities (N x K), log p per row, labels (what
/// `model` hands out as a `GmmEvaluation`).
pub(super) type Outputs = (GpuMatrix, GpuVector<f32>, GpuVector<u32>);

/// Device buffers for evaluating or fitting a mixture on one data matrix.
pub(super) struct Workspace<'a> {
    pub(super) gpu: &'a Gpu,
    /// The rows the passes run over: the whole data, or the current streamed piece.
    pub(super) x: GpuMatrix,
    pub(super) k: usize,
    pub(super) d: usize,
    pub(super) covariance_type: CovarianceType,
    segments: Vec<SegmentBuffers>,
    /// The responsibilities: one window (fits) or one buffer per segment (evaluation).
    resp: Vec<DeviceBuffer<f32>>,
    /// Segments holding rows of `x` (all but for a short streamed piece).
    active: usize,
    log_density: GpuVector<f32>,
    labels: GpuVector<u32>,
    block_rows: usize,
    n_blocks: usize,
    n_log_blocks: usize,
    means: DeviceBuffer<f32>,
    precisions: DeviceBuffer<f32>,
    log_const: DeviceBuffer<f32>,
    shift: DeviceBuffer<f32>,
    partials: DeviceBuffer<f32>,
    totals: DeviceBuffer<f32>,
    /// Where the one-pass moments of Full and Tied are taken as the scatter of x − s plus the
    /// diagonal moments rather than the augmented scatter (`split_augmented`): the latter's
    /// per-block partials and totals.
    split: Option<(DeviceBuffer<f32>, DeviceBuffer<f32>)>,
    block_log_density: DeviceBuffer<f32>,
    /// Sample weights of the rows (chunked like them), their host values, and the total
    /// weight of the rows in use.
    sample_weights: Option<(GpuVector<f32>, &'a [f32], f64)>,
}

/// What a [`Workspace`] is made for, which decides what it keeps on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Purpose {
    /// EM: a window of responsibilities and the M-step's per-block sums.
    Fit,
    /// Every row's responsibilities kept (N x K): `predict_proba`, `evaluate_gpu`.
    Responsibilities,
    /// Every row's log p and label, the responsibilities in a window and no sums:
    /// `predict`, `score_samples`, `score`, BIC and AIC at any N.
    RowOutputs,
}

impl<'a> Workspace<'a> {
    /// Buffers for `x` and K components for `purpose`: responsibilities (a window of them,
    /// or all N x K for [`Purpose::Responsibilities`]), per-row outputs, parameters, and for
    /// [`Purpose::Fit`] the per-block M-step sums (module docs).
    pub(super) fn new(
        gpu: &'a Gpu,
        x: &GpuMatrix,
        k: usize,
        covariance_type: CovarianceType,
        purpose: Purpose,
    ) -> Result<Self> {
        let (n, d) = (x.n_rows(), x.n_features());
        let with_mstep = purpose == Purpose::Fit;
        let windowed = purpose != Purpose::Responsibilities;
        let full = matches!(covariance_type, CovarianceType::Full | CovarianceType::Tied);
        // Evaluation (predict, scores) needs no M-step sums: no partial buffers to allocate.
        let outputs = if with_mstep {
            sum_outputs(k, d, covariance_type) as u64
        } else {
            0
        };
        let block_rows = block_rows(gpu, n, outputs);
        let row_bytes = k as u64 * 4;
        // Without sums, block_rows is 256 (NORMALIZE_ROWS): windows of whole blocks of log p
        // sums, so a windowed score adds the same block sums as an unwindowed one.
        let seg_rows = if windowed {
            window_rows(gpu.chunk_byte_limit(), n, row_bytes, block_rows)
        } else {
            // Segments of whole blocks of log p sums too, where a binding holds one, so that
            // every purpose adds the same block sums.
            let binding_rows = (gpu.chunk_byte_limit() / row_bytes).max(1) as usize;
            if binding_rows >= NORMALIZE_ROWS {
                binding_rows / NORMALIZE_ROWS * NORMALIZE_ROWS
            } else {
                binding_rows
            }
        };
        let what = if windowed {
            "a window of the responsibilities"
        } else {
            "the N x K responsibilities"
        };
        let resp_rows = if windowed { seg_rows.min(n) } else { n };
        check_budget(gpu, what, resp_rows as u64 * row_bytes)?;

        let mut plan = Vec::new();
        let (mut n_blocks, mut n_log_blocks) = (0, 0);
        for (ci, c) in x.chunks().iter().enumerate() {
            let mut first = 0;
            while first < c.n_rows {
                let rows = seg_rows.min(c.n_rows - first);
                plan.push((ci, first, rows, n_blocks, n_log_blocks));
                n_blocks += rows.div_ceil(block_rows);
                n_log_blocks += rows.div_ceil(NORMALIZE_ROWS);
                first += rows;
            }
        }
        let partial_bytes = n_blocks as u64 * outputs * 4;
        let outputs = outputs as usize;
        if partial_bytes > gpu.binding_byte_limit() {
            return Err(Error::DeviceLimit {
                what: format!("per-block mixture statistics for k = {k} ({partial_bytes} bytes)"),
                requested: partial_bytes,
                limit_name: "max_storage_buffer_binding_size",
                limit: gpu.binding_byte_limit(),
            });
        }
        let prec_values = match covariance_type {
            CovarianceType::Full => k * d * d,
            CovarianceType::Tied => d * d,
            CovarianceType::Diag | CovarianceType::Spherical => k * d,
        };
        let split = with_mstep && full && split_augmented(gpu, d);
        gpu.scoped("allocating the mixture workspace", || {
            let window = plan.iter().map(|p| p.2).max().unwrap_or(0);
            let resp = if windowed {
                vec![DeviceBuffer::zeroed(
                    gpu,
                    "responsibilities window",
                    window * k,
                )]
            } else {
                plan.iter()
                    .map(|p| DeviceBuffer::zeroed(gpu, "responsibilities", p.2 * k))
                    .collect()
            };
            let segments = plan
                .into_iter()
                .enumerate()
                .map(
                    |(i, (chunk, first, n_rows, block_offset, log_block_offset))| SegmentBuffers {
                        chunk,
                        first,
                        n_rows,
                        capacity: n_rows,
                        resp: if windowed { 0 } else { i },
                        block_offset,
                        log_block_offset,
                    },
                )
                .collect::<Vec<_>>();
            let active = segments.len();
            let diagonal = Moment::DiagonalMoments.outputs(k, d);
            Ok(Self {
                gpu,
                x: x.clone(),
                k,
                d,
                covariance_type,
                segments,
                resp,
                active,
                log_density: GpuVector::zeroed(gpu, x, "log densities"),
                labels: GpuVector::zeroed(gpu, x, "mixture labels"),
                block_rows,
                n_blocks,
                n_log_blocks,
                means: DeviceBuffer::zeroed(gpu, "mixture means", k * d),
                precisions: DeviceBuffer::zeroed(gpu, "precision factors", prec_values),
                log_const: DeviceBuffer::zeroed(gpu, "log weights and normalisers", k),
                shift: DeviceBuffer::zeroed(gpu, "moment shifts", k * d),
                partials: DeviceBuffer::zeroed(gpu, "mixture partial sums", n_blocks * outputs),
                totals: DeviceBuffer::zeroed(gpu, "mixture sums", outputs),
                split: split.then(|| {
                    (
                        DeviceBuffer::zeroed(gpu, "diagonal partial sums", n_blocks * diagonal),
                        DeviceBuffer::zeroed(gpu, "diagonal sums", diagonal),
                    )
                }),
                block_log_density: DeviceBuffer::zeroed(
                    gpu,
                    "log density block sums",
                    n_log_blocks,
                ),
                sample_weights: None,
            })
        })
    }

    /// Gives the rows sample weights (`host`: one per row of the data). From then on every E-step and every
    /// initial responsibility is weighted, and the mean log-likelihood is Σw·log p / Σw.
    pub(super) fn weigh(&mut self, host: &'a [f32]) {
        let device = GpuVector::zeroed(self.gpu, &self.x, "sample weights");
        for (c, buf) in self.x.chunks().iter().zip(&device.chunks) {
            buf.write(
                self.gpu,
                &host[c.row_start..(c.row_start + c.n_rows).min(host.len())],
            );
        }
        let total = host.iter().map(|&w| w as f64).sum();
        self.sample_weights = Some((device, host, total));
    }

    /// Writes the weights of the current streamed piece, whose first row is `first_row`.
    pub(super) fn weigh_piece(&mut self, first_row: usize) {
        let n = self.x.n_rows();
        if let Some((device, host, total)) = &mut self.sample_weights {
            let mine = &host[first_row..first_row + n];
            for (c, buf) in self.x.chunks().iter().zip(&device.chunks) {
                buf.write(self.gpu, &mine[c.row_start..c.row_start + c.n_rows]);
            }
            *total = mine.iter().map(|&w| w as f64).sum();
        }
    }

    /// The host sample weights, when the rows have them.
    pub(super) fn host_weights(&self) -> Option<&'a [f32]> {
        self.sample_weights.as_ref().map(|(_, w, _)| *w)
    }

    /// The total weight of the rows in use (their number without weights).
    pub(super) fn weight_total(&self) -> f64 {
        match &self.sample_weights {
            Some((_, _, total)) => *total,
            None => self.x.n_rows() as f64,
        }
    }

    /// Records the weighting of segment `s`'s responsibilities (no-op unweighted).
    pub(super) fn record_weighing(&self, batch: &mut Batch<'_>, s: &SegmentBuffers) -> Result<()> {
        let Some((weights, _, _)) = &self.sample_weights else {
            return Ok(());
        };
        let out = self.row_outputs(s);
        let seg = self.segment(s);
        estep::weigh_responsibilities(
            self.gpu,
            batch,
            &seg,
            self.k,
            &weights.chunks[s.chunk],
            &out,
        )
    }

    /// The segments holding rows of `x`.
    pub(super) fn active_segments(&self) -> &[SegmentBuffers] {
        &self.segments[..self.active]
    }

    /// Whether every segment in use has its own responsibilities, so that they survive a
    /// pass (else each pass makes them again: module docs).
    pub(super) fn responsibilities_kept(&self) -> bool {
        self.resp.len() >= self.active
    }

    /// Bytes of responsibilities on the device (one window for fits, N x K for evaluation)
    /// and the segments a pass makes them in: what the tests hold against the window.
    #[cfg(test)]
    pub(super) fn responsibility_footprint(&self) -> (u64, usize) {
        let bytes = self.resp.iter().map(|b| b.len() as u64 * 4).sum();
        (bytes, self.active)
    }

    /// Runs the next passes over `piece` (one chunk of at most the rows this workspace was
    /// made for, as [`DeviceRows`](crate::gpu::stream::DeviceRows) hands them out, or all the
    /// resident rows it was made for): the segments, blocks and per-row outputs of its rows
    /// are a prefix of those of the full capacity, so the buffers are reused and only the
    /// counts change.
    pub(super) fn use_piece(&mut self, piece: &GpuMatrix) {
        let n = piece.n_rows();
        debug_assert!(
            n <= self.log_density.len() && (piece.n_chunks() == 1 || n == self.log_density.len())
        );
        self.x = piece.clone();
        let (mut active, mut n_blocks, mut n_log_blocks) = (0, 0, 0);
        for s in &mut self.segments {
            s.n_rows = s.capacity.min(n.saturating_sub(s.first));
            if s.n_rows > 0 {
                active += 1;
                n_blocks = s.block_offset + s.n_rows.div_ceil(self.block_rows);
                n_log_blocks = s.log_block_offset + s.n_rows.div_ceil(NORMALIZE_ROWS);
            }
        }
        (self.active, self.n_blocks, self.n_log_blocks) = (active, n_blocks, n_log_blocks);
    }

    /// Segment `s` as the kernels take it: its rows in their chunk and its responsibilities'
    /// buffer (the window, for fits).
    pub(super) fn segment<'s>(&'s self, s: &'s SegmentBuffers) -> Segment<'s> {
        Segment {
            chunk: &self.x.chunks()[s.chunk],
            first: s.first,
            n_rows: s.n_rows,
            resp: &self.resp[s.resp],
        }
    }

    /// The first row of segment `s` among the rows in use.
    pub(super) fn first_row(&self, s: &SegmentBuffers) -> usize {
        self.x.chunks()[s.chunk].row_start + s.first
    }

    /// The per-row outputs of segment `s`'s chunk (log p, labels) and its blocks of log p sums.
    fn row_outputs<'s>(&'s self, s: &SegmentBuffers) -> RowOutputs<'s> {
        RowOutputs {
            log_density: &self.log_density.chunks[s.chunk],
            labels: &self.labels.chunks[s.chunk],
            block_log_density: &self.block_log_density,
            block_offset: s.log_block_offset,
        }
    }

    fn full(&self) -> bool {
        matches!(
            self.covariance_type,
            CovarianceType::Full | CovarianceType::Tied
        )
    }

    /// Sends means, precision factors and the constants cₖ = log πₖ − ½ D log 2π + log det Uₖ.
    pub(super) fn write_parameters(&self, p: &Parameters) {
        let t = self.covariance_type;
        let (log_const, prec) =
            estep_constants(&p.weights, &p.precisions_cholesky, t, self.k, self.d);
        let means: Vec<f32> = p.means.iter().map(|&v| v as f32).collect();
        self.means.write(self.gpu, &means);
        self.precisions.write(self.gpu, &prec);
        self.log_const.write(self.gpu, &log_const);
    }

    /// Records the E-step of segment `s` for the parameters last written: on GPUs with
    /// diagonal factors the one tiled kernel, else the squared norms then the normalisation
    /// (the same bits).
    pub(super) fn record_estep(&self, batch: &mut Batch<'_>, s: &SegmentBuffers) -> Result<()> {
        let (k, d) = (self.k, self.d);
        let comps = Components {
            means: &self.means,
            precisions: &self.precisions,
            prec_stride: match self.covariance_type {
                CovarianceType::Full => d * d,
                CovarianceType::Tied => 0,
                CovarianceType::Diag | CovarianceType::Spherical => d,
            },
            full: self.full(),
        };
        let seg = self.segment(s);
        let out = self.row_outputs(s);
        if !comps.full && !cpu_like(self.gpu) {
            let lanes = estep_tiled::lanes_c(k);
            return estep_tiled::record(
                self.gpu,
                batch,
                &seg,
                (d, k),
                &comps,
                &self.log_const,
                &out,
                lanes,
            );
        }
        estep::squared_mahalanobis(self.gpu, batch, &seg, d, k, &comps)?;
        estep::normalize_responsibilities(self.gpu, batch, &seg, k, &self.log_const, &out)
    }

    /// Records segment `s`'s per-block sums of `moment` around the shifts in `self.shift`
    /// (the augmented scatter as two sums where `split` is set).
    pub(super) fn record_sums(
        &self,
        batch: &mut Batch<'_>,
        s: &SegmentBuffers,
        moment: Moment,
    ) -> Result<()> {
        let (k, d) = (self.k, self.d);
        let seg = self.segment(s);
        let blocks = |partials| Blocks {
            block_rows: self.block_rows,
            block_offset: s.block_offset,
            partials,
        };
        let sums = |moment| Sums {
            moment,
            shift: &self.shift,
        };
        match (&self.split, moment) {
            (Some((diagonal, _)), Moment::AugmentedScatter) => {
                let scatter = sums(Moment::Scatter);
                mstep::weighted_sums(
                    self.gpu,
                    batch,
                    &seg,
                    (d, k),
                    &scatter,
                    &blocks(&self.partials),
                )?;
                let moments = sums(Moment::DiagonalMoments);
                mstep::weighted_sums(self.gpu, batch, &seg, (d, k), &moments, &blocks(diagonal))
            }
            _ => mstep::weighted_sums(
                self.gpu,
                batch,
                &seg,
                (d, k),
                &sums(moment),
                &blocks(&self.partials),
            ),
        }
    }

    /// Records the fold of the per-block sums of `moment` into the totals, and their
    /// reading; returns the handles (the split's second one).
    pub(super) fn record_fold(
        &self,
        batch: &mut Batch<'_>,
        moment: Moment,
    ) -> Result<(ReadHandle, Option<ReadHandle>)> {
        let (k, d) = (self.k, self.d);
        if let (Some((partials, totals)), Moment::AugmentedScatter) = (&self.split, moment) {
            let (scatter, diagonal) = (Moment::Scatter, Moment::DiagonalMoments);
            let fold = |batch: &mut Batch<'_>, p, m: Moment, t| {
                reduce::sum_partial_columns(self.gpu, batch, p, self.n_blocks, m.outputs(k, d), t)
            };
            fold(batch, &self.partials, scatter, &self.totals)?;
            fold(batch, partials, diagonal, totals)?;
            let h = batch.read_values(&self.totals, 0, scatter.outputs(k, d));
            let h2 = batch.read_values(totals, 0, diagonal.outputs(k, d));
            return Ok((h, Some(h2)));
        }
        reduce::sum_partial_columns(
            self.gpu,
            batch,
            &self.partials,
            self.n_blocks,
            moment.outputs(k, d),
            &self.totals,
        )?;
        Ok((
            batch.read_values(&self.totals, 0, moment.outputs(k, d)),
            None,
        ))
    }

    /// Clears what the sums of `moment` leave unwritten: the scatters' entries below the
    /// diagonal must read as zero.
    pub(super) fn record_clear(&self, batch: &mut Batch<'_>, moment: Moment) {
        if matches!(moment, Moment::Scatter | Moment::AugmentedScatter) {
            batch.clear_values(&self.partials);
        }
    }

    pub(super) fn write_shift(&self, shift: &[f64]) {
        let s: Vec<f32> = shift.iter().map(|&v| v as f32).collect();
        self.shift.write(self.gpu, &s);
    }

    /// Reads the per-block sums of log p of the E-step recorded in `batch`.
    pub(super) fn read_log_blocks(&self, batch: &mut Batch<'_>) -> ReadHandle {
        batch.read_values(&self.block_log_density, 0, self.n_log_blocks)
    }

    /// The mean of the per-block sums of log p, in f64.
    fn mean_log_density(&self, block_sums: &[f32]) -> f64 {
        sum_log_density(block_sums) / self.weight_total()
    }

    /// Records one E-step for `p` into `batch` (the parameters go up through the queue,
    /// ahead of the batch's submission): responsibilities, log p and labels on the device.
    /// With a window (fits) only the last segment's responsibilities stay.
    pub(super) fn record_evaluation(&self, batch: &mut Batch<'_>, p: &Parameters) -> Result<()> {
        self.write_parameters(p);
        for s in self.active_segments() {
            self.record_estep(batch, s)?;
            self.record_weighing(batch, s)?;
        }
        Ok(())
    }

    /// Records and runs one E-step for `p`; returns the mean log-likelihood.
    fn run_estep(&self, p: &Parameters) -> Result<f64> {
        let gpu = self.gpu;
        gpu.scoped("mixture evaluation", || {
            let mut batch = Batch::new(gpu, "mixture evaluation");
            self.record_evaluation(&mut batch, p)?;
            let h = self.read_log_blocks(&mut batch);
            let back = batch.finish()?;
            Ok(self.mean_log_density(&back.f32s(h)))
        })
    }

    /// The most probable component of every row under `p`.
    pub(super) fn labels(&self, p: &Parameters) -> Result<Vec<u32>> {
        self.run_estep(p)?;
        let mut labels = self.labels.to_host(self.gpu)?;
        // A short streamed piece uses the first rows of the buffers only.
        labels.truncate(self.x.n_rows());
        Ok(labels)
    }

    /// One E-step for `p`: its outputs left on the device, and the mean log-likelihood
    /// (evaluation workspaces, which keep every responsibility).
    pub(super) fn evaluate(&self, p: &Parameters) -> Result<(Outputs, f64)> {
        Ok((self.outputs(), self.run_estep(p)?))
    }

    /// One E-step for `p`: every row's log p and label left on the device, and the mean
    /// log-likelihood (any workspace; the responsibilities need not be kept).
    pub(super) fn evaluate_rows(
        &self,
        p: &Parameters,
    ) -> Result<(GpuVector<f32>, GpuVector<u32>, f64)> {
        let mean = self.run_estep(p)?;
        let (log_density, labels) = self.rows_on_device();
        Ok((log_density, labels, mean))
    }

    /// Every row's log p and label, as the last E-step left them on the device.
    pub(super) fn rows_on_device(&self) -> (GpuVector<f32>, GpuVector<u32>) {
        (self.log_density.clone(), self.labels.clone())
    }

    /// The E-step's outputs on the device: responsibilities (N x K), log p, labels
    /// (evaluation workspaces, whose segments each have their own responsibilities).
    pub(super) fn outputs(&self) -> Outputs {
        debug_assert!(self.responsibilities_kept());
        let chunks = self
            .segments
            .iter()
            .map(|s| Chunk {
                buffer: self.resp[s.resp].raw().clone(),
                bind_offset: 0,
                bind_size: (s.n_rows * self.k * 4) as u64,
                x_offset: 0,
                row_start: self.first_row(s),
                n_rows: s.n_rows,
            })
            .collect();
        (
            GpuMatrix::from_chunks(chunks, self.x.n_rows(), self.k),
            self.log_density.clone(),
            self.labels.clone(),
        )
    }
}

/// The sum in f64 of per-block sums of log p.
pub(super) fn sum_log_density(block_sums: &[f32]) -> f64 {
    block_sums.iter().map(|&v| v as f64).sum::<f64>()
}
