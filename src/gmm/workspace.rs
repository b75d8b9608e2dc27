//! The device side of a Gaussian-mixture fit or evaluation: the buffers of one data matrix
//! (or of one streamed piece at a time) and the passes over it (E-step, M-step moment sums,
//! one-hot or uploaded responsibilities). The M-step of resident rows is `moments`, the EM
//! loop that drives them `em`.

use super::em::Parameters;
use super::math::estep_constants;
use super::CovarianceType;
use crate::error::{Error, Result};
use crate::gpu::batch::{Batch, ReadHandle};
use crate::gpu::buffer::{check_budget, Chunk};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::{Gpu, GpuMatrix, GpuVector};
use crate::kernels::mixture::estep::{self, Components, RowOutputs, Segment, NORMALIZE_ROWS};
use crate::kernels::mixture::mstep::{self, Blocks, Moment, Sums};
use crate::kernels::primitives::reduce;

/// Rows of one data chunk whose N x K responsibilities fit one binding.
struct SegmentBuffers {
    chunk: usize,
    first: usize,
    /// Rows in use: `capacity`, or fewer in the last segments of a short streamed piece.
    n_rows: usize,
    /// Rows the buffers were sized for.
    capacity: usize,
    resp: DeviceBuffer<f32>,
    /// First global M-step block and first global log p block.
    block_offset: usize,
    log_block_offset: usize,
}

/// One E-step's outputs on the device: responsibilities (N x K), log p per row, labels (what
/// `model` hands out as a `GmmEvaluation`).
pub(super) type Outputs = (GpuMatrix, GpuVector<f32>, GpuVector<u32>);

/// Bytes the per-block M-step sums may take (as K-Means): plenty of parallelism, small next
/// to the data.
const PARTIALS_TARGET_BYTES: u64 = 64 << 20;

/// Rows per M-step block at least: enough work per invocation, few blocks to fold.
const MIN_BLOCK_ROWS: usize = 256;

/// Device buffers for evaluating or fitting a mixture on one data matrix.
pub(super) struct Workspace<'a> {
    pub(super) gpu: &'a Gpu,
    /// The rows the passes run over: the whole data, or the current streamed piece.
    pub(super) x: GpuMatrix,
    pub(super) k: usize,
    pub(super) d: usize,
    pub(super) covariance_type: CovarianceType,
    segments: Vec<SegmentBuffers>,
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
    block_log_density: DeviceBuffer<f32>,
    /// Sample weights of the rows (chunked like them), their host values, and the total
    /// weight of the rows in use.
    sample_weights: Option<(GpuVector<f32>, &'a [f32], f64)>,
}

impl<'a> Workspace<'a> {
    /// Buffers for `x` and K components: responsibilities, per-row outputs, parameters, and
    /// with `with_mstep` (fits) the per-block M-step sums, which evaluation does not need.
    pub(super) fn new(
        gpu: &'a Gpu,
        x: &GpuMatrix,
        k: usize,
        covariance_type: CovarianceType,
        with_mstep: bool,
    ) -> Result<Self> {
        let (n, d) = (x.n_rows(), x.n_features());
        let resp_bytes = (n as u64).saturating_mul(k as u64).saturating_mul(4);
        check_budget(gpu, "the N x K responsibilities", resp_bytes)?;
        let row_bytes = k as u64 * 4;
        let seg_rows = (gpu.chunk_byte_limit() / row_bytes).max(1) as usize;

        // The one-pass moments (gmm/moments.rs) are the largest a fit takes.
        let max_moment = match covariance_type {
            CovarianceType::Full | CovarianceType::Tied => Moment::AugmentedScatter,
            _ => Moment::DiagonalMoments,
        };
        // Evaluation (predict, scores) needs no M-step sums: no partial buffers to allocate.
        let outputs = if with_mstep {
            max_moment.outputs(k, d).max(Moment::First.outputs(k, d)) as u64
        } else {
            0
        };
        let limit = gpu.binding_byte_limit().clamp(1, PARTIALS_TARGET_BYTES);
        // Rows per block: at least MIN_BLOCK_ROWS, more when the per-block outputs are many,
        // so that all partials fit one binding.
        let block_rows =
            (MIN_BLOCK_ROWS as u64).max((n as u64 * outputs * 4).div_ceil(limit) + 1) as usize;

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
        gpu.scoped("allocating the mixture workspace", || {
            let segments = plan
                .into_iter()
                .map(
                    |(chunk, first, n_rows, block_offset, log_block_offset)| SegmentBuffers {
                        chunk,
                        first,
                        n_rows,
                        capacity: n_rows,
                        resp: DeviceBuffer::zeroed(gpu, "responsibilities", n_rows * k),
                        block_offset,
                        log_block_offset,
                    },
                )
                .collect::<Vec<_>>();
            let active = segments.len();
            Ok(Self {
                gpu,
                x: x.clone(),
                k,
                d,
                covariance_type,
                segments,
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

    /// Records the weighting of the responsibilities of every segment (no-op unweighted).
    fn record_weighing(&self, batch: &mut Batch<'_>) -> Result<()> {
        let Some((weights, _, _)) = &self.sample_weights else {
            return Ok(());
        };
        for s in self.active_segments() {
            let out = RowOutputs {
                log_density: &self.log_density.chunks[s.chunk],
                labels: &self.labels.chunks[s.chunk],
                block_log_density: &self.block_log_density,
                block_offset: s.log_block_offset,
            };
            let seg = self.segment(s);
            estep::weigh_responsibilities(
                self.gpu,
                batch,
                &seg,
                self.k,
                &weights.chunks[s.chunk],
                &out,
            )?;
        }
        Ok(())
    }

    /// Weighs initial responsibilities (written by the host or from labels).
    pub(super) fn weigh_initial(&self) -> Result<()> {
        if self.sample_weights.is_none() {
            return Ok(());
        }
        let gpu = self.gpu;
        gpu.scoped("weighing responsibilities", || {
            let mut batch = Batch::new(gpu, "weighing responsibilities");
            self.record_weighing(&mut batch)?;
            batch.finish()?;
            Ok(())
        })
    }

    fn active_segments(&self) -> &[SegmentBuffers] {
        &self.segments[..self.active]
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

    fn segment<'s>(&'s self, s: &'s SegmentBuffers) -> Segment<'s> {
        Segment {
            chunk: &self.x.chunks()[s.chunk],
            first: s.first,
            n_rows: s.n_rows,
            resp: &s.resp,
        }
    }

    fn full(&self) -> bool {
        matches!(
            self.covariance_type,
            CovarianceType::Full | CovarianceType::Tied
        )
    }

    /// Sends means, precision factors and the constants cₖ = log πₖ − ½ D log 2π + log det Uₖ.
    fn write_parameters(&self, p: &Parameters) {
        let t = self.covariance_type;
        let (log_const, prec) =
            estep_constants(&p.weights, &p.precisions_cholesky, t, self.k, self.d);
        let means: Vec<f32> = p.means.iter().map(|&v| v as f32).collect();
        self.means.write(self.gpu, &means);
        self.precisions.write(self.gpu, &prec);
        self.log_const.write(self.gpu, &log_const);
    }

    /// Records the E-step for the parameters last written.
    fn record_estep(&self, batch: &mut Batch<'_>) -> Result<()> {
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
        for s in self.active_segments() {
            let seg = self.segment(s);
            estep::squared_mahalanobis(self.gpu, batch, &seg, d, k, &comps)?;
            let out = RowOutputs {
                log_density: &self.log_density.chunks[s.chunk],
                labels: &self.labels.chunks[s.chunk],
                block_log_density: &self.block_log_density,
                block_offset: s.log_block_offset,
            };
            estep::normalize_responsibilities(self.gpu, batch, &seg, k, &self.log_const, &out)?;
        }
        self.record_weighing(batch)
    }

    /// Records the per-block sums of `moment` around the shifts in `self.shift`, folded into
    /// `self.totals`.
    pub(super) fn record_moment(&self, batch: &mut Batch<'_>, moment: Moment) -> Result<()> {
        let (k, d) = (self.k, self.d);
        if matches!(moment, Moment::Scatter | Moment::AugmentedScatter) {
            // Entries below the diagonal are never written: they must read as zero.
            batch.clear_values(&self.partials);
        }
        let sums = Sums {
            moment,
            shift: &self.shift,
        };
        for s in self.active_segments() {
            let blocks = Blocks {
                block_rows: self.block_rows,
                block_offset: s.block_offset,
                partials: &self.partials,
            };
            mstep::weighted_sums(self.gpu, batch, &self.segment(s), (d, k), &sums, &blocks)?;
        }
        reduce::sum_partial_columns(
            self.gpu,
            batch,
            &self.partials,
            self.n_blocks,
            moment.outputs(k, d),
            &self.totals,
        )
    }

    /// Reads the folded sums of `moment` (f64).
    pub(super) fn read_totals(&self, batch: &mut Batch<'_>, moment: Moment) -> ReadHandle {
        batch.read_values(&self.totals, 0, moment.outputs(self.k, self.d))
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

    /// Writes responsibilities made on the host, segment by segment in row order (so host
    /// memory holds one segment at a time): `fill(n_rows)` gives the next n_rows x K values.
    pub(super) fn write_responsibilities(&self, mut fill: impl FnMut(usize) -> Vec<f32>) {
        for s in self.active_segments() {
            s.resp.write(self.gpu, &fill(s.n_rows));
        }
    }

    /// Copies host responsibilities (N x K, row-major) to the device.
    pub(super) fn upload_responsibilities(&self, resp: &[f32]) {
        let mut at = 0;
        self.write_responsibilities(|rows| {
            let values = resp[at..at + rows * self.k].to_vec();
            at += rows * self.k;
            values
        });
    }

    /// One-hot responsibilities of host labels.
    pub(super) fn responsibilities_from_labels(&self, labels: &[u32]) -> Result<()> {
        let gpu = self.gpu;
        gpu.scoped("one-hot responsibilities", || {
            let mut batch = Batch::new(gpu, "one-hot responsibilities");
            for s in self.active_segments() {
                let start = self.x.chunks()[s.chunk].row_start + s.first;
                let part = DeviceBuffer::from_slice(
                    gpu,
                    "initial labels",
                    &labels[start..start + s.n_rows],
                );
                estep::responsibilities_from_labels(
                    gpu,
                    &mut batch,
                    &self.segment(s),
                    self.k,
                    &part,
                )?;
            }
            batch.finish()?;
            Ok(())
        })
    }

    /// Records one E-step for `p` into `batch` (the parameters go up through the queue,
    /// ahead of the batch's submission): responsibilities, log p and labels on the device.
    pub(super) fn record_evaluation(&self, batch: &mut Batch<'_>, p: &Parameters) -> Result<()> {
        self.write_parameters(p);
        self.record_estep(batch)
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

    /// One E-step for `p`: its outputs left on the device, and the mean log-likelihood.
    pub(super) fn evaluate(&self, p: &Parameters) -> Result<(Outputs, f64)> {
        Ok((self.outputs(), self.run_estep(p)?))
    }

    /// The E-step's outputs on the device: responsibilities (N x K), log p, labels.
    pub(super) fn outputs(&self) -> Outputs {
        let chunks = self
            .segments
            .iter()
            .map(|s| Chunk {
                buffer: s.resp.raw().clone(),
                bind_offset: 0,
                bind_size: (s.n_rows * self.k * 4) as u64,
                x_offset: 0,
                row_start: self.x.chunks()[s.chunk].row_start + s.first,
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
