//! K-Means' empty-cluster repair on the device (`shaders/centroids/repair.wgsl`), so that the
//! Lloyd loop running ahead of the host (`lloyd_ahead` in `kmeans::lloyd`) need not stop for
//! it. The rule is the host's (`repair_empty_clusters` there): each cluster without weight, in
//! ascending order, moves onto the first row of the order (squared distance descending, row
//! ascending) whose cluster keeps another member, and the donor's mean loses the row,
//! c' = c + w(c − x)/(W − w). Recorded between the update's next rows and its decision
//! ([`record_advance`](super::advance::record_advance)'s `between`); where the device cannot
//! repair (more empty clusters than rounds, rows used up, a donor left without weight) the
//! clusters stay marked and the decision stops the loop for the host's repair, as before.
//!
//! Each step records a few dispatches, and each returns at once where no cluster is empty: a
//! count, [`Repair::rounds`] select rounds per chunk of rows (each lists the next row of the
//! order, a stride of rows per workgroup), a gather per chunk and the plan.

use bytemuck::{Pod, Zeroable};

use super::advance::{AdvanceState, PassSums};
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{centroids::repair as wgsl, check_params};
use crate::gpu::{Gpu, GpuMatrix, GpuVector};

/// Twin of `RepairParams` in shaders/centroids/repair.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct RepairParams {
    n_rows: u32,
    row_start: u32,
    x_offset: u32,
    round: u32,
    rounds: u32,
    slots: u32,
    slot_base: u32,
    k: u32,
    d: u32,
    weighted: u32,
    spherical: u32,
    pad: u32,
}

const _: () = check_params::<RepairParams>(wgsl::ENTRY_POINTS);

/// The most empty clusters one step repairs on the device (the most rounds it records).
pub(crate) const MAX_ROUNDS: usize = wgsl::REPAIR_ROUNDS_MAX as usize;

/// Rows each select invocation reads at the least, so that a chunk takes few workgroups.
const ROWS_PER_INVOCATION: usize = 16;

/// Select workgroups for a chunk of `n_rows` rows.
fn select_workgroups(n_rows: usize) -> usize {
    let per_workgroup = wgsl::REPAIR_WG_SIZE as usize * ROWS_PER_INVOCATION;
    n_rows
        .div_ceil(per_workgroup)
        .clamp(1, wgsl::REPAIR_SELECT_WGS as usize)
}

/// The repair's device state for one set of rows: the list, the listed rows and the select
/// rounds' partial picks.
pub(crate) struct RepairState {
    repair: DeviceBuffer<u32>,
    partials: DeviceBuffer<[u32; 4]>,
    /// Select workgroups of each chunk, and their total (partial slots per round).
    chunk_workgroups: Vec<usize>,
    slots: usize,
}

impl RepairState {
    /// Device bytes of the state for rows of `d` features in chunks of the given row counts.
    pub(crate) fn bytes(d: usize, chunk_rows: impl Iterator<Item = usize>) -> u64 {
        let slots: usize = chunk_rows.map(select_workgroups).sum();
        4 * (wgsl::REPAIR_ROWS_AT as u64 + (MAX_ROUNDS * d) as u64) + 32 * slots as u64
    }

    /// The state for the rows of `x`.
    pub(crate) fn new(gpu: &Gpu, x: &GpuMatrix) -> Self {
        let chunk_workgroups: Vec<usize> = x
            .chunks()
            .iter()
            .map(|c| select_workgroups(c.n_rows))
            .collect();
        let slots = chunk_workgroups.iter().sum();
        let words = wgsl::REPAIR_ROWS_AT as usize + MAX_ROUNDS * x.n_features();
        Self {
            repair: DeviceBuffer::zeroed(gpu, "empty-cluster repair", words),
            partials: DeviceBuffer::zeroed(gpu, "repair picks", 2 * slots),
            chunk_workgroups,
            slots,
        }
    }
}

/// What the repair reads of the rows: the rows themselves and, chunked like them, each row's
/// label and squared distance from the pass, and its sample weight when the rows are weighted.
pub(crate) struct RepairRows<'a> {
    pub(crate) x: &'a GpuMatrix,
    pub(crate) labels: &'a GpuVector<u32>,
    pub(crate) dist: &'a GpuVector<f32>,
    pub(crate) weights: Option<&'a GpuVector<f32>>,
}

/// One step's repair: the rows, the state made for them, and the rounds to record (the most
/// empty clusters it repairs; 1 to [`MAX_ROUNDS`], at most the rows).
pub(crate) struct Repair<'a> {
    pub(crate) rows: RepairRows<'a>,
    pub(crate) state: &'a RepairState,
    pub(crate) rounds: usize,
}

/// Records the repair of the clusters `advance_clusters` marked empty, from the pass `pass`
/// (which also wrote the rows' labels and distances) into `advance`'s next rows, shifts and
/// marks; `spherical` puts the rows it writes back on the unit sphere.
pub(crate) fn record_repair(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    (k, d): (usize, usize),
    pass: &PassSums<'_>,
    advance: &AdvanceState,
    repair: &Repair<'_>,
    spherical: bool,
) -> Result<()> {
    let (rows, state) = (&repair.rows, repair.state);
    let rounds = repair.rounds.clamp(1, MAX_ROUNDS);
    let mut params = RepairParams {
        rounds: rounds as u32,
        slots: state.slots as u32,
        k: k as u32,
        d: d as u32,
        weighted: pass.weighted as u32,
        spherical: spherical as u32,
        ..Zeroable::zeroed()
    };
    // Where no cluster is empty, which is the usual step, each dispatch reads a word.
    let guard = Work::f32s(0.0, 1.0);
    batch.dispatch(
        wgsl::REPAIR_COUNT,
        &[],
        &params,
        &[
            ("cluster_empty", advance.cluster_empty.bind()),
            ("repair", state.repair.bind()),
        ],
        gpu.grid(1)?,
        guard,
    )?;
    let chunks = rows.x.chunks();
    for round in 0..rounds {
        let mut slot_base = 0;
        for (i, chunk) in chunks.iter().enumerate() {
            let workgroups = state.chunk_workgroups[i];
            params.n_rows = chunk.n_rows as u32;
            params.row_start = chunk.row_start as u32;
            params.round = round as u32;
            params.slot_base = slot_base as u32;
            let dist = &rows.dist.chunks[i];
            // Unweighted rows never read their weights: any buffer stands in.
            let weights = rows.weights.map_or(dist.bind(), |w| w.chunks[i].bind());
            batch.dispatch(
                wgsl::REPAIR_SELECT,
                &[],
                &params,
                &[
                    ("repair", state.repair.bind()),
                    ("partials", state.partials.bind()),
                    ("dist", dist.bind()),
                    ("labels", rows.labels.chunks[i].bind()),
                    ("row_weights", weights),
                ],
                gpu.grid(workgroups as u64)?,
                guard,
            )?;
            slot_base += workgroups;
        }
    }
    for chunk in chunks {
        params.n_rows = chunk.n_rows as u32;
        params.row_start = chunk.row_start as u32;
        params.x_offset = chunk.x_offset;
        batch.dispatch(
            wgsl::REPAIR_GATHER,
            &[],
            &params,
            &[
                ("repair", state.repair.bind()),
                ("partials", state.partials.bind()),
                ("x", chunk.bind()),
            ],
            gpu.grid(1)?,
            guard,
        )?;
    }
    batch.dispatch(
        wgsl::REPAIR_APPLY,
        &[],
        &params,
        &[
            ("repair", state.repair.bind()),
            ("counts", pass.counts.bind()),
            ("sq_pairs", pass.sq_pairs.bind()),
            ("centroids", pass.centroids.bind()),
            ("sums", pass.sums.bind()),
            ("next", advance.next.bind()),
            ("cluster_shift", advance.cluster_shift.bind()),
            ("cluster_empty", advance.cluster_empty.bind()),
        ],
        gpu.grid(1)?,
        guard,
    )
}
