//! The device side of a K-Means fit: the buffers of one data matrix (or of one streamed piece
//! at a time), what they cost, and one Lloyd step (assignment and per-cluster statistics in
//! one submission, only K x D sums and a few scalars read back; on GPUs with few clusters
//! and features one kernel does both: [`assign::record_step`]).

mod ahead;

use self::ahead::Ahead;
use super::lloyd::{every_row_by_distance, LloydData, RunsAhead};
use super::KMeansStats;
use crate::error::{Error, Result};
use crate::gpu::batch::{Batch, PendingReadback, ReadHandle};
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::{Gpu, GpuMatrix, GpuVector};
use crate::kernels::assign::{self, AssignScratch, Assignment, UpdateSums};
use crate::kernels::centroids::update::{self, ClusterPartials};
use crate::kernels::centroids::{farthest, sorted};
use crate::kernels::primitives::{reduce, rows};

/// Bytes the per-block partial sums may take: large enough for good parallelism, small
/// enough not to matter next to the data.
const PARTIALS_TARGET_BYTES: u64 = 64 << 20;

/// Device bytes per row besides the row: its label and its squared distance (and its weight
/// when the rows are weighted), and where the update sorts the rows (GPUs), its scratch.
pub(super) fn row_extra_bytes(gpu: &Gpu, weighted: bool) -> u64 {
    let sort = if update::sorts(gpu) {
        sorted::ROW_BYTES
    } else {
        0
    };
    8 + 4 * weighted as u64 + sort
}

/// Device bytes a workspace for N x D rows and K clusters needs besides the rows and the
/// per-row buffers: the per-block partials (at most [`PARTIALS_TARGET_BYTES`] each), the
/// centroids and the per-cluster sums, the assignment's prepared centroids and recheck list,
/// the sorted update's scratch besides its bytes per row (GPUs; made on the first step).
/// Resident rows need [`ahead_bytes`] more.
/// Kept beside [`Workspace::weighted`], which allocates them, so that the budget and the
/// allocation cannot drift apart. (On CPU adapters the assignment may also mirror the rows
/// into a texture, in host memory there.)
pub(super) fn fixed_bytes(gpu: &Gpu, n: usize, d: usize, k: usize) -> u64 {
    let kd = (k * d) as u64;
    let partials =
        (n.div_ceil(256) as u64 * (kd + 2 * k as u64) * 4).min(3 * PARTIALS_TARGET_BYTES);
    let assign = 16 * (k * d.div_ceil(4) + k + d.div_ceil(4)) as u64 + 4 * (n as u64 + 1);
    let sort = if update::sorts(gpu) {
        sorted::fixed_bytes(k)
    } else {
        0
    };
    partials + 4 * kd * 4 + 16 * k as u64 + assign + sort + 1024
}

/// Device bytes the Lloyd loop ahead on the device needs besides [`fixed_bytes`] (made when
/// the loop first runs ahead, which only resident rows do).
pub(super) fn ahead_bytes(n: usize, d: usize, k: usize) -> u64 {
    ahead::device_bytes(n, d, k)
}

/// Device buffers of one fit, reused by every restart and iteration.
pub(super) struct Workspace<'a> {
    pub(super) gpu: &'a Gpu,
    /// The rows the kernels run on: the whole data, or the streamed piece of the moment.
    pub(super) x: GpuMatrix,
    pub(super) k: usize,
    labels: GpuVector<u32>,
    /// Every row's squared distance to its centroid (D² during k-means++ seeding).
    pub(super) min_sq_dist: GpuVector<f32>,
    /// Per-row sample weights on the device (chunked like the rows).
    weights: Option<GpuVector<f32>>,
    /// The weights of every row on the host (none for batches weighted by the caller).
    host_weights: Option<&'a [f32]>,
    changed: DeviceBuffer<u32>,
    centroids: DeviceBuffer<f32>,
    block_rows: usize,
    /// First global block of each chunk, and the total.
    block_offsets: Vec<usize>,
    n_blocks: usize,
    partial_sums: DeviceBuffer<f32>,
    partial_counts: DeviceBuffer<u32>,
    partial_sq_dist: DeviceBuffer<f32>,
    sums: DeviceBuffer<f32>,
    counts: DeviceBuffer<u32>,
    sq_dist: DeviceBuffer<f32>,
    /// Per chunk, the assignment's scratch (prepared centroids, recheck list, textures).
    assign_scratch: Vec<AssignScratch>,
    /// The Lloyd loop running ahead on the device: its state and submissions in flight.
    ahead: Option<Ahead<'a>>,
}

impl<'a> Workspace<'a> {
    /// A workspace for `k` clusters of the rows of `x`, carrying `weights` (one per row of
    /// `x`, uploaded here; for a streamed piece, the weights of the whole source, each
    /// piece's written with [`Workspace::set_piece_weights`]).
    pub(super) fn weighted(
        gpu: &'a Gpu,
        x: &GpuMatrix,
        k: usize,
        weights: Option<&'a [f32]>,
    ) -> Result<Self> {
        let n = x.n_rows() as u64;
        let kd = k * x.n_features();
        let limit = gpu.binding_byte_limit().min(PARTIALS_TARGET_BYTES);
        // Rows per block: at least 256 (so a workgroup has work), more when K x D is large,
        // so that all partials fit in one binding of at most 64 MiB; a whole number of the
        // fused kernel's tiles, so that it serves large N too.
        let block_rows = (256u64).max((n * kd as u64 * 4).div_ceil(limit.max(1)) + 1) as usize;
        let block_rows = block_rows.next_multiple_of(assign::fused::TILE_ROWS);
        let mut block_offsets = Vec::new();
        let mut n_blocks = 0;
        for c in x.chunks() {
            block_offsets.push(n_blocks);
            n_blocks += c.n_rows.div_ceil(block_rows);
        }
        let partial_bytes = (n_blocks * kd * 4) as u64;
        if partial_bytes > gpu.binding_byte_limit() {
            return Err(Error::DeviceLimit {
                what: format!("per-block statistics for k = {k} ({partial_bytes} bytes)"),
                requested: partial_bytes,
                limit_name: "max_storage_buffer_binding_size",
                limit: gpu.binding_byte_limit(),
            });
        }
        gpu.scoped("allocating the K-Means workspace", || {
            Ok(Self {
                gpu,
                x: x.clone(),
                k,
                labels: GpuVector::zeroed(gpu, x, "labels"),
                min_sq_dist: GpuVector::zeroed(gpu, x, "min squared distances"),
                weights: weights.map(|w| {
                    let device = GpuVector::zeroed(gpu, x, "sample weights");
                    for (c, buf) in x.chunks().iter().zip(&device.chunks) {
                        buf.write(gpu, &w[c.row_start..(c.row_start + c.n_rows).min(w.len())]);
                    }
                    device
                }),
                host_weights: weights,
                changed: DeviceBuffer::zeroed(gpu, "changed labels", 1),
                centroids: DeviceBuffer::zeroed(gpu, "centroids", kd),
                block_rows,
                block_offsets,
                n_blocks,
                partial_sums: DeviceBuffer::zeroed(gpu, "partial sums", n_blocks * kd),
                partial_counts: DeviceBuffer::zeroed(gpu, "partial counts", n_blocks * k),
                partial_sq_dist: DeviceBuffer::zeroed(
                    gpu,
                    "partial squared distances and weights",
                    n_blocks * k * 2,
                ),
                sums: DeviceBuffer::zeroed(gpu, "cluster sums", kd),
                counts: DeviceBuffer::zeroed(gpu, "cluster counts", k),
                sq_dist: DeviceBuffer::zeroed(gpu, "cluster squared distances and weights", 2 * k),
                assign_scratch: x
                    .chunks()
                    .iter()
                    .map(|c| AssignScratch::new(gpu, c.n_rows, x.n_features(), k))
                    .collect(),
                ahead: None,
            })
        })
    }

    /// The chunks of the rows, numbered.
    pub(super) fn chunks(&self) -> impl Iterator<Item = (usize, &Chunk)> {
        self.x.chunks().iter().enumerate()
    }

    /// Writes the labels the rows of the current piece had, so that the assignment counts
    /// the ones that change.
    pub(super) fn set_previous_labels(&self, labels: &[u32]) {
        for (c, buf) in self.x.chunks().iter().zip(&self.labels.chunks) {
            buf.write(self.gpu, &labels[c.row_start..c.row_start + c.n_rows]);
        }
    }

    /// Writes the weights of the current piece's rows (streamed fits).
    pub(super) fn set_piece_weights(&self, first_row: usize) {
        if let Some(host) = self.host_weights {
            self.set_batch_weights(&host[first_row..first_row + self.x.n_rows()]);
        }
    }

    /// Makes the rows weighted, by weights each batch sets ([`Workspace::set_batch_weights`]).
    pub(super) fn weigh_batches(&mut self) {
        self.weights = Some(GpuVector::zeroed(self.gpu, &self.x, "batch weights"));
    }

    /// Writes the weights of the current piece's rows, when they are weighted.
    pub(super) fn set_batch_weights(&self, weights: &[f32]) {
        if let Some(device) = &self.weights {
            for (c, buf) in self.x.chunks().iter().zip(&device.chunks) {
                buf.write(self.gpu, &weights[c.row_start..c.row_start + c.n_rows]);
            }
        }
    }

    /// The host sample weights, when the rows have any.
    pub(super) fn host_weights(&self) -> Option<&'a [f32]> {
        self.host_weights
    }

    /// Whether the rows carry weights on the device.
    pub(super) fn is_weighted(&self) -> bool {
        self.weights.is_some()
    }

    /// The device weights of chunk `i`.
    pub(super) fn chunk_weights(&self, i: usize) -> Option<&DeviceBuffer<f32>> {
        self.weights.as_ref().map(|w| &w.chunks[i])
    }

    /// Points the kernels at a piece of rows: one chunk of at most the rows the workspace
    /// was made for (its per-row buffers and partials are sized for those), or all of the
    /// resident rows it was made for.
    pub(super) fn use_piece(&mut self, piece: &GpuMatrix) {
        debug_assert!(
            piece.n_rows() <= self.labels.len()
                && (piece.n_chunks() == 1 || piece.n_rows() == self.labels.len())
        );
        self.x = piece.clone();
        for s in &self.assign_scratch {
            s.rows_changed();
        }
    }

    /// Records one pass against the device centroids: the assignment, the per-block partials
    /// of the update and their totals (`sums`, `counts`, `sq_dist`), and the changed-label
    /// count.
    fn record_pass(&self, batch: &mut Batch<'_>, k: usize) -> Result<()> {
        let gpu = self.gpu;
        let d = self.x.n_features();
        batch.clear_values(&self.changed);
        batch.clear_values(&self.partial_sums);
        batch.clear_values(&self.partial_counts);
        batch.clear_values(&self.partial_sq_dist);
        for (i, chunk) in self.chunks() {
            let to = Assignment {
                centroids: &self.centroids,
                k,
                labels: &self.labels.chunks[i],
                min_sq_dist: &self.min_sq_dist.chunks[i],
                changed: &self.changed,
            };
            let partials = ClusterPartials {
                block_rows: self.block_rows,
                block_offset: self.block_offsets[i],
                sums: &self.partial_sums,
                counts: &self.partial_counts,
                sq_dist: &self.partial_sq_dist,
            };
            let sums = UpdateSums {
                weights: self.chunk_weights(i),
                partials: &partials,
            };
            let scratch = &self.assign_scratch[i];
            assign::record_step(gpu, batch, (chunk, d), &to, &sums, scratch)?;
        }
        let blocks = self.n_blocks;
        reduce::sum_partial_columns(gpu, batch, &self.partial_sums, blocks, k * d, &self.sums)?;
        reduce::sum_partial_columns(gpu, batch, &self.partial_counts, blocks, k, &self.counts)?;
        reduce::sum_partial_columns(
            gpu,
            batch,
            &self.partial_sq_dist,
            blocks,
            2 * k,
            &self.sq_dist,
        )
    }

    /// One assignment of the rows against the centroids of `into` (statistics of a pass
    /// against them, K x D) and the statistics of the resulting clusters, added to `into` as
    /// the kernels lay them out (only K x D sums and a few scalars read back). With `rows`,
    /// the rows' labels and squared distances come back into it too (streamed pieces).
    pub(super) fn step(
        &self,
        into: &mut KMeansStats,
        rows: Option<(&mut [u32], &mut [f32])>,
    ) -> Result<()> {
        self.submit_step(&into.centroids, rows.is_some())?
            .collect(into, rows)
    }

    /// [`Workspace::step`]'s first half: the step against `centroids` submitted, its
    /// results (with the rows' labels and distances when `with_rows`) in flight.
    pub(super) fn submit_step(
        &self,
        centroids: &[f32],
        with_rows: bool,
    ) -> Result<StepInFlight<'a>> {
        let gpu = self.gpu;
        let d = self.x.n_features();
        let k = centroids.len() / d;
        gpu.scoped("K-Means iteration", || {
            self.centroids.write(gpu, centroids);
            let mut batch = Batch::new(gpu, "K-Means iteration");
            self.record_pass(&mut batch, k)?;
            let sums = batch.read_values(&self.sums, 0, k * d);
            let counts = batch.read_values(&self.counts, 0, k);
            let sq = batch.read_values(&self.sq_dist, 0, 2 * k);
            let changed = batch.read_all(&self.changed);
            let rows = match with_rows {
                true => self
                    .chunks()
                    .map(|(i, c)| {
                        (
                            batch.read_values(&self.labels.chunks[i], 0, c.n_rows),
                            batch.read_values(&self.min_sq_dist.chunks[i], 0, c.n_rows),
                        )
                    })
                    .collect(),
                false => Vec::new(),
            };
            Ok(StepInFlight {
                pending: batch.submit()?,
                reads: [sums, counts, sq, changed],
                rows,
                weighted: self.is_weighted(),
            })
        })
    }
}

/// A K-Means step submitted ([`Workspace::submit_step`]), its readback in flight.
pub(super) struct StepInFlight<'a> {
    pending: PendingReadback<'a>,
    /// The sums, counts, (Σw·d², Σw) pairs and changed-label count.
    reads: [ReadHandle; 4],
    /// Per chunk, the rows' labels and squared distances.
    rows: Vec<(ReadHandle, ReadHandle)>,
    weighted: bool,
}

impl StepInFlight<'_> {
    /// Waits for the step and adds its statistics to `into` (and its rows' labels and
    /// distances to `rows`, when it read them).
    pub(super) fn collect(
        self,
        into: &mut KMeansStats,
        rows: Option<(&mut [u32], &mut [f32])>,
    ) -> Result<()> {
        let back = self.pending.wait()?;
        let [sums, counts, sq, changed] = self.reads;
        let (sums, counts) = (back.f32s(sums), back.u32s(counts));
        into.add_device(&sums, &counts, &back.f32s(sq), self.weighted);
        into.changed += back.u32s(changed)[0] as u64;
        if let Some((labels, dists)) = rows {
            let mut at = 0;
            for &(l, m) in &self.rows {
                let (l, m) = (back.u32s(l), back.f32s(m));
                labels[at..at + l.len()].copy_from_slice(&l);
                dists[at..at + m.len()].copy_from_slice(&m);
                at += l.len();
            }
        }
        Ok(())
    }
}

impl LloydData for Workspace<'_> {
    fn shape(&self) -> (usize, usize) {
        (self.x.n_rows(), self.x.n_features())
    }

    fn pass(&mut self, centroids: &[f32]) -> Result<KMeansStats> {
        let mut stats = KMeansStats::empty(centroids, self.x.n_features())?;
        self.step(&mut stats, None)?;
        Ok(stats)
    }

    fn row_weights(&self) -> Option<&[f32]> {
        self.host_weights()
    }

    fn labels_and_distances(&mut self) -> Result<(Vec<u32>, Vec<f32>)> {
        // Both in one round trip (each costs the device's submission-to-result latency).
        self.gpu.scoped("reading the labels back", || {
            let mut batch = Batch::new(self.gpu, "labels and distances");
            let labels: Vec<_> = self
                .labels
                .chunks
                .iter()
                .map(|b| batch.read_all(b))
                .collect();
            let dists: Vec<_> = (self.min_sq_dist.chunks.iter())
                .map(|b| batch.read_all(b))
                .collect();
            let back = batch.finish()?;
            Ok((
                labels.into_iter().flat_map(|h| back.u32s(h)).collect(),
                dists.into_iter().flat_map(|h| back.f32s(h)).collect(),
            ))
        })
    }

    fn farthest_rows(&mut self, at_least: usize) -> Result<Vec<(usize, u32, f32)>> {
        // The selection on the device reads back a few rows per cluster, not N; it refuses
        // only when more rows tie at its threshold than it lists.
        match farthest::farthest_rows(self.gpu, &self.x, &self.labels, &self.min_sq_dist, at_least)?
        {
            Some(rows) => Ok(rows),
            None => every_row_by_distance(self),
        }
    }

    fn rows(&mut self, indices: &[usize]) -> Result<Vec<f32>> {
        rows::read_rows(self.gpu, &self.x, indices)
    }

    fn ahead(&mut self) -> Option<&mut dyn RunsAhead> {
        Some(self)
    }
}
