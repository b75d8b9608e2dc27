//! The device side of a Gaussian-mixture fit or evaluation: the buffers of one data matrix
//! and the passes over it (E-step, M-step moment sums, one-hot or uploaded
//! responsibilities); the EM loop that drives them is in `fit` (formulas in the parent
//! module).

use super::GmmEvaluation;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::gmm::CovarianceType;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::{check_budget, Chunk};
use crate::gpu::{Gpu, GpuMatrix, GpuVector};
use crate::kernels::gmm_estep::{self, Components, RowOutputs, Segment, NORMALIZE_ROWS};
use crate::kernels::gmm_mstep::{self, Blocks, Moment};
use crate::kernels::reduce;

/// Mixture parameters in f64 (layouts in [`super::math`]).
#[derive(Debug, Clone)]
pub(super) struct Parameters {
    pub weights: Vec<f64>,
    pub means: Vec<f64>,
    pub covariances: Vec<f64>,
    pub precisions_cholesky: Vec<f64>,
}

/// The outcome of one EM run.
pub(super) struct Run {
    pub parameters: Parameters,
    pub converged: bool,
    pub n_iter: usize,
    pub lower_bound: f64,
    pub history: Vec<f64>,
    /// The progress callback asked to stop.
    pub stopped: bool,
}

/// Rows of one data chunk whose N x K responsibilities fit one binding.
struct SegmentBuffers {
    chunk: usize,
    first: usize,
    /// Rows in use: `capacity`, or fewer in the last segments of a short streamed piece.
    n_rows: usize,
    /// Rows the buffers were sized for.
    capacity: usize,
    resp: wgpu::Buffer,
    /// First global M-step block and first global log p block.
    block_offset: usize,
    log_block_offset: usize,
}

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
    means: wgpu::Buffer,
    precisions: wgpu::Buffer,
    log_const: wgpu::Buffer,
    shift: wgpu::Buffer,
    partials: wgpu::Buffer,
    totals: wgpu::Buffer,
    block_log_density: wgpu::Buffer,
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

        let max_moment = match covariance_type {
            CovarianceType::Full | CovarianceType::Tied => Moment::Scatter,
            _ => Moment::First,
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
                        resp: gpu.buffer_zeroed("responsibilities", n_rows as u64 * row_bytes),
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
                means: gpu.buffer_zeroed("mixture means", (k * d * 4) as u64),
                precisions: gpu.buffer_zeroed("precision factors", (prec_values * 4) as u64),
                log_const: gpu.buffer_zeroed("log weights and normalisers", (k * 4) as u64),
                shift: gpu.buffer_zeroed("moment shifts", (k * d * 4) as u64),
                partials: gpu.buffer_zeroed("mixture partial sums", partial_bytes),
                totals: gpu.buffer_zeroed("mixture sums", outputs * 4),
                block_log_density: gpu
                    .buffer_zeroed("log density block sums", n_log_blocks as u64 * 4),
                sample_weights: None,
            })
        })
    }

    /// Gives the rows sample weights (`host`: one per row of the data). From then on every E-step and every
    /// initial responsibility is weighted, and the mean log-likelihood is Σw·log p / Σw.
    pub(super) fn weigh(&mut self, host: &'a [f32]) {
        let device = GpuVector::zeroed(self.gpu, &self.x, "sample weights");
        for (c, buf) in self.x.chunks().iter().zip(&device.chunks) {
            let mine = &host[c.row_start..(c.row_start + c.n_rows).min(host.len())];
            self.gpu
                .queue
                .write_buffer(buf, 0, bytemuck::cast_slice(mine));
        }
        let total = host.iter().map(|&w| w as f64).sum();
        self.sample_weights = Some((device, host, total));
    }

    /// Writes the weights of the current streamed piece, whose first row is `first_row`.
    pub(super) fn weigh_piece(&mut self, first_row: usize) {
        let n = self.x.n_rows();
        if let Some((device, host, total)) = &mut self.sample_weights {
            let mine = &host[first_row..first_row + n];
            self.gpu
                .queue
                .write_buffer(&device.chunks[0], 0, bytemuck::cast_slice(mine));
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
            gmm_estep::weigh_responsibilities(
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
    /// made for, as [`DeviceRows`](crate::gpu::stream::DeviceRows) hands them out): the
    /// segments, blocks and per-row outputs of its rows are a prefix of those of the full
    /// capacity, so the buffers are reused and only the counts change.
    pub(super) fn use_piece(&mut self, piece: &GpuMatrix) {
        let n = piece.n_rows();
        debug_assert!(piece.n_chunks() == 1 && n <= self.log_density.len());
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
        let (k, d) = (self.k, self.d);
        let u = &p.precisions_cholesky;
        let log_det: Vec<f64> = (0..k)
            .map(|c| match self.covariance_type {
                CovarianceType::Full => (0..d).map(|j| u[c * d * d + j * d + j].ln()).sum(),
                CovarianceType::Tied => (0..d).map(|j| u[j * d + j].ln()).sum(),
                CovarianceType::Diag => u[c * d..(c + 1) * d].iter().map(|v| v.ln()).sum(),
                CovarianceType::Spherical => d as f64 * u[c].ln(),
            })
            .collect();
        let half_log_2pi_d = 0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln();
        let log_const: Vec<f32> = (0..k)
            .map(|c| (p.weights[c].ln() - half_log_2pi_d + log_det[c]) as f32)
            .collect();
        let prec: Vec<f32> = match self.covariance_type {
            // The shader reads K x D values; a spherical pₖ holds for every feature.
            CovarianceType::Spherical => u
                .iter()
                .flat_map(|&v| std::iter::repeat_n(v as f32, d))
                .collect(),
            _ => u.iter().map(|&v| v as f32).collect(),
        };
        let means: Vec<f32> = p.means.iter().map(|&v| v as f32).collect();
        let q = &self.gpu.queue;
        q.write_buffer(&self.means, 0, bytemuck::cast_slice(&means));
        q.write_buffer(&self.precisions, 0, bytemuck::cast_slice(&prec));
        q.write_buffer(&self.log_const, 0, bytemuck::cast_slice(&log_const));
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
            gmm_estep::squared_mahalanobis(self.gpu, batch, &seg, d, k, &comps)?;
            let out = RowOutputs {
                log_density: &self.log_density.chunks[s.chunk],
                labels: &self.labels.chunks[s.chunk],
                block_log_density: &self.block_log_density,
                block_offset: s.log_block_offset,
            };
            gmm_estep::normalize_responsibilities(self.gpu, batch, &seg, k, &self.log_const, &out)?;
        }
        self.record_weighing(batch)
    }

    /// Records the per-block sums of `moment` around the shifts in `self.shift`, folded into
    /// `self.totals`.
    fn record_moment(&self, batch: &mut Batch<'_>, moment: Moment) -> Result<()> {
        let (k, d) = (self.k, self.d);
        if moment == Moment::Scatter {
            // Entries below the diagonal are never written: they must read as zero.
            batch.clear(&self.partials);
        }
        for s in self.active_segments() {
            let blocks = Blocks {
                block_rows: self.block_rows,
                block_offset: s.block_offset,
                partials: &self.partials,
            };
            gmm_mstep::weighted_sums(
                self.gpu,
                batch,
                &self.segment(s),
                d,
                k,
                moment,
                &self.shift,
                &blocks,
            )?;
        }
        reduce::sum_partial_columns_f32(
            self.gpu,
            batch,
            &self.partials,
            self.n_blocks,
            moment.outputs(k, d),
            &self.totals,
        )
    }

    /// Reads the folded sums of `moment` (f64).
    fn read_totals(&self, batch: &mut Batch<'_>, moment: Moment) -> crate::gpu::batch::ReadHandle {
        batch.read(&self.totals, 0, (moment.outputs(self.k, self.d) * 4) as u64)
    }

    fn write_shift(&self, shift: &[f64]) {
        let s: Vec<f32> = shift.iter().map(|&v| v as f32).collect();
        self.gpu
            .queue
            .write_buffer(&self.shift, 0, bytemuck::cast_slice(&s));
    }

    /// The mean of the per-block sums of log p, in f64.
    fn mean_log_density(&self, block_sums: &[f32]) -> f64 {
        sum_log_density(block_sums) / self.weight_total()
    }

    /// One submission: the E-step for `p`, then Σ r and Σ r (x − μ) around p's means.
    /// Returns the mean log-likelihood and the first-moment sums (K x (D + 1)).
    pub(super) fn estep_and_first_moments(&self, p: &Parameters) -> Result<(f64, Vec<f64>)> {
        let (block_sums, first) = self.estep_and_first_sums(p)?;
        Ok((self.mean_log_density(&block_sums), first))
    }

    /// [`Workspace::estep_and_first_moments`] with the per-block sums of log p as they come
    /// back (a streamed fit adds them up over the pieces).
    pub(super) fn estep_and_first_sums(&self, p: &Parameters) -> Result<(Vec<f32>, Vec<f64>)> {
        let gpu = self.gpu;
        gpu.scoped("mixture E-step", || {
            self.write_parameters(p);
            self.write_shift(&p.means);
            let mut batch = Batch::new(gpu, "mixture E-step");
            self.record_estep(&mut batch)?;
            self.record_moment(&mut batch, Moment::First)?;
            let h_log = batch.read(&self.block_log_density, 0, (self.n_log_blocks * 4) as u64);
            let h_sums = self.read_totals(&mut batch, Moment::First);
            let back = batch.finish()?;
            let sums = back.f32s(h_sums).iter().map(|&v| v as f64).collect();
            Ok((back.f32s(h_log), sums))
        })
    }

    /// Σ r and Σ r (x − shift) for the responsibilities on the device (K x (D + 1)).
    pub(super) fn first_moments(&self, shift: &[f64]) -> Result<Vec<f64>> {
        let gpu = self.gpu;
        gpu.scoped("mixture first moments", || {
            self.write_shift(shift);
            let mut batch = Batch::new(gpu, "mixture first moments");
            self.record_moment(&mut batch, Moment::First)?;
            let h = self.read_totals(&mut batch, Moment::First);
            Ok(batch.finish()?.f32s(h).iter().map(|&v| v as f64).collect())
        })
    }

    /// The centred second moments around `means`: K x D² scatter (Full, Tied) or K x (D + 1)
    /// diagonal sums (Diag, Spherical).
    pub(super) fn second_moments(&self, means: &[f64]) -> Result<Vec<f64>> {
        let gpu = self.gpu;
        let moment = if self.full() {
            Moment::Scatter
        } else {
            Moment::SecondDiagonal
        };
        gpu.scoped("mixture second moments", || {
            self.write_shift(means);
            let mut batch = Batch::new(gpu, "mixture second moments");
            self.record_moment(&mut batch, moment)?;
            let h = self.read_totals(&mut batch, moment);
            Ok(batch.finish()?.f32s(h).iter().map(|&v| v as f64).collect())
        })
    }

    /// Copies host responsibilities (N x K, row-major) to the device.
    pub(super) fn upload_responsibilities(&self, resp: &[f32]) -> Result<()> {
        self.gpu.scoped("uploading responsibilities", || {
            for s in self.active_segments() {
                let start = (self.x.chunks()[s.chunk].row_start + s.first) * self.k;
                let values = &resp[start..start + s.n_rows * self.k];
                self.gpu
                    .queue
                    .write_buffer(&s.resp, 0, bytemuck::cast_slice(values));
            }
            Ok(())
        })
    }

    /// Uniform random responsibilities, normalised per row: N x K uniforms drawn from `rng`
    /// in row order (the CPU oracle's stream, so both start from the same point), segment by
    /// segment (segments are in row order) to bound host memory.
    pub(super) fn random_responsibilities(&self, rng: &mut ChaCha8Rng) {
        let k = self.k;
        for s in self.active_segments() {
            let mut resp = Vec::with_capacity(s.n_rows * k);
            for _ in 0..s.n_rows {
                let row: Vec<f64> = (0..k).map(|_| rng.random::<f64>()).collect();
                let sum: f64 = row.iter().sum();
                resp.extend(row.iter().map(|v| {
                    if sum > 0.0 {
                        (v / sum) as f32
                    } else {
                        1.0 / k as f32
                    }
                }));
            }
            self.gpu
                .queue
                .write_buffer(&s.resp, 0, bytemuck::cast_slice(&resp));
        }
    }

    /// One-hot responsibilities of host labels.
    pub(super) fn responsibilities_from_labels(&self, labels: &[u32]) -> Result<()> {
        let gpu = self.gpu;
        gpu.scoped("one-hot responsibilities", || {
            let mut batch = Batch::new(gpu, "one-hot responsibilities");
            for s in self.active_segments() {
                let start = self.x.chunks()[s.chunk].row_start + s.first;
                let part = gpu.buffer_from(
                    "initial labels",
                    &labels[start..start + s.n_rows],
                    wgpu::BufferUsages::empty(),
                );
                gmm_estep::responsibilities_from_labels(
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

    /// Records and runs one E-step for `p`; returns the mean log-likelihood.
    fn run_estep(&self, p: &Parameters) -> Result<f64> {
        let gpu = self.gpu;
        gpu.scoped("mixture evaluation", || {
            self.write_parameters(p);
            let mut batch = Batch::new(gpu, "mixture evaluation");
            self.record_estep(&mut batch)?;
            let h = batch.read(&self.block_log_density, 0, (self.n_log_blocks * 4) as u64);
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

    /// One E-step for `p`, its outputs left on the device.
    pub(super) fn evaluate(&self, p: &Parameters) -> Result<GmmEvaluation> {
        let mean_log_likelihood = self.run_estep(p)?;
        let chunks = self
            .segments
            .iter()
            .map(|s| {
                let bytes = (s.n_rows * self.k * 4) as u64;
                Chunk {
                    buffer: s.resp.clone(),
                    bind_offset: 0,
                    bind_size: bytes,
                    x_offset: 0,
                    row_start: self.x.chunks()[s.chunk].row_start + s.first,
                    n_rows: s.n_rows,
                }
            })
            .collect();
        Ok(GmmEvaluation {
            responsibilities: GpuMatrix::from_chunks(chunks, self.x.n_rows(), self.k),
            log_density: self.log_density.clone(),
            labels: self.labels.clone(),
            mean_log_likelihood,
        })
    }
}

/// The sum in f64 of per-block sums of log p.
pub(super) fn sum_log_density(block_sums: &[f32]) -> f64 {
    block_sums.iter().map(|&v| v as f64).sum::<f64>()
}
