//! The Lloyd update on the device (`shaders/centroids/advance.wgsl`): from one pass's
//! per-cluster sums, c⁽ᵗ⁺¹⁾ₖ = cₖ + Σw(x − cₖ)/Wₖ (unit length again for the cosine metric),
//! the squared shift Σₖ‖c⁽ᵗ⁺¹⁾ₖ − cₖ‖² and the loop's [`Decision`], all without the host; the
//! next pass reads the centroids where this left them. K-Means' loop reads the decision one
//! iteration late, so that the GPU never waits for it (`lloyd_ahead` in `kmeans::lloyd`).

use bytemuck::{Pod, Zeroable};

use crate::error::{Error, Result};
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{centroids::advance as wgsl, check_params};
use crate::gpu::Gpu;
use crate::kernels::{feature_wg_size, FEATURE_WG_SIZE, ROW_WG_SIZE};

/// Twin of `AdvanceParams` in shaders/centroids/advance.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct AdvanceParams {
    k: u32,
    d: u32,
    grid_x: u32,
    weighted: u32,
    spherical: u32,
    check_changed: u32,
    tol: f32,
    pad: u32,
}

const _: () = check_params::<AdvanceParams>(wgsl::ENTRY_POINTS);

/// What the update decided (twin of the `STATE_*` constants in advance.wgsl).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The loop had finished already: nothing changed.
    Idle,
    /// The centroids moved; the loop goes on.
    Moved,
    /// The centroids moved by at most the tolerance: finished.
    Converged,
    /// No label changed in the pass: finished, the centroids kept.
    Unchanged,
    /// A cluster has no weight: the centroids kept, for the host's repair.
    Empty,
}

impl Decision {
    fn from_state(state: u32) -> Result<Self> {
        Ok(match state {
            wgsl::STATE_IDLE => Self::Idle,
            wgsl::STATE_MOVED => Self::Moved,
            wgsl::STATE_CONVERGED => Self::Converged,
            wgsl::STATE_UNCHANGED => Self::Unchanged,
            wgsl::STATE_EMPTY => Self::Empty,
            other => return Err(Error::Gpu(format!("unknown Lloyd state {other}"))),
        })
    }
}

/// The update's outcome, as read back: the decision and the squared shift.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outcome {
    pub(crate) decision: Decision,
    pub(crate) shift: f32,
}

impl Outcome {
    /// From the four words of [`AdvanceState::status`].
    pub(crate) fn from_status(status: &[u32]) -> Result<Self> {
        // The fourth word, the pass's changed-label count, is there for debugging.
        let [_, state, shift, _] = status[..] else {
            return Err(Error::Gpu(format!(
                "Lloyd status of {} words",
                status.len()
            )));
        };
        Ok(Self {
            decision: Decision::from_state(state)?,
            shift: f32::from_bits(shift),
        })
    }
}

/// The update's device state for K x D centroids: the next rows, the previous centroids (those
/// before the last move), per cluster its shift and empty mark, and the status (finished,
/// state, shift, changed) that the host reads.
pub(crate) struct AdvanceState {
    pub(super) next: DeviceBuffer<f32>,
    /// The centroids before the last move.
    pub(crate) previous: DeviceBuffer<f32>,
    pub(super) cluster_shift: DeviceBuffer<f32>,
    pub(super) cluster_empty: DeviceBuffer<u32>,
    /// (finished, state, shift bits, changed).
    pub(crate) status: DeviceBuffer<u32>,
}

impl AdvanceState {
    /// Device bytes of the state for `k` clusters of `d` features.
    pub(crate) fn bytes(k: usize, d: usize) -> u64 {
        (4 * (2 * k * d + 2 * k) + 16) as u64
    }

    /// The state for `k` clusters of `d` features, not finished.
    pub(crate) fn new(gpu: &Gpu, k: usize, d: usize) -> Self {
        Self {
            next: DeviceBuffer::zeroed(gpu, "next centroids", k * d),
            previous: DeviceBuffer::zeroed(gpu, "previous centroids", k * d),
            cluster_shift: DeviceBuffer::zeroed(gpu, "cluster shifts", k),
            cluster_empty: DeviceBuffer::zeroed(gpu, "empty clusters", k),
            status: DeviceBuffer::zeroed(gpu, "Lloyd status", 4),
        }
    }

    /// Clears the finished mark, so that the next update decides again (a new run, or the
    /// centroids the host repaired). Ordered before the next submission.
    pub(crate) fn restart(&self, gpu: &Gpu) {
        self.status.write(gpu, &[0; 4]);
    }
}

/// One pass's per-cluster sums (sum_partial_columns' totals) and the centroids they were
/// taken against.
pub(crate) struct PassSums<'a> {
    /// K x D, read by the update and then written where it moves them.
    pub(crate) centroids: &'a DeviceBuffer<f32>,
    pub(crate) sums: &'a DeviceBuffer<f32>,
    pub(crate) counts: &'a DeviceBuffer<u32>,
    /// K pairs (Σw·d², Σw).
    pub(crate) sq_pairs: &'a DeviceBuffer<f32>,
    /// The pass's changed-label count.
    pub(crate) changed: &'a DeviceBuffer<u32>,
    /// Whether Wₖ is the weight sum (weighted rows) or the count.
    pub(crate) weighted: bool,
}

/// How the update runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AdvanceRule {
    /// Unit-length centroids (cosine metric).
    pub(crate) spherical: bool,
    /// Whether a pass without changed labels finishes the loop (not a run's first pass).
    pub(crate) check_changed: bool,
    /// The loop finishes when the squared shift is at most this.
    pub(crate) tol: f32,
}

/// Records the update of `pass.centroids` from `pass`'s sums: next rows, then what `between`
/// records (the empty-cluster repair: [`record_repair`](super::repair::record_repair)), then
/// the decision and the commit.
pub(crate) fn record_advance(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    (k, d): (usize, usize),
    pass: &PassSums<'_>,
    state: &AdvanceState,
    rule: AdvanceRule,
    between: impl FnOnce(&mut Batch<'_>) -> Result<()>,
) -> Result<()> {
    let lanes = feature_wg_size(d);
    let grid = gpu.grid(k as u64)?;
    let mut params = AdvanceParams {
        k: k as u32,
        d: d as u32,
        grid_x: grid.x,
        weighted: pass.weighted as u32,
        spherical: rule.spherical as u32,
        check_changed: rule.check_changed as u32,
        tol: rule.tol,
        pad: 0,
    };
    let kd = (k * d) as f64;
    batch.dispatch(
        wgsl::ADVANCE_CLUSTERS,
        &[(FEATURE_WG_SIZE, lanes)],
        &params,
        &[
            ("centroids", pass.centroids.bind()),
            ("sums", pass.sums.bind()),
            ("counts", pass.counts.bind()),
            ("sq_pairs", pass.sq_pairs.bind()),
            ("next", state.next.bind()),
            ("cluster_shift", state.cluster_shift.bind()),
            ("cluster_empty", state.cluster_empty.bind()),
        ],
        grid,
        Work::f32s(4.0 * kd, 3.0 * kd + 4.0 * k as f64),
    )?;
    between(batch)?;
    batch.dispatch(
        wgsl::ADVANCE_DECIDE,
        &[],
        &params,
        &[
            ("cluster_shift", state.cluster_shift.bind()),
            ("cluster_empty", state.cluster_empty.bind()),
            ("changed", pass.changed.bind()),
            ("status", state.status.bind()),
        ],
        gpu.grid(1)?,
        Work::f32s(k as f64, 2.0 * k as f64),
    )?;
    let grid = gpu.grid(((k * d) as u64).div_ceil(ROW_WG_SIZE as u64))?;
    params.grid_x = grid.x;
    batch.dispatch(
        wgsl::ADVANCE_COMMIT,
        &[],
        &params,
        &[
            ("status", state.status.bind()),
            ("centroids_out", pass.centroids.bind()),
            ("previous", state.previous.bind()),
            ("next", state.next.bind()),
        ],
        grid,
        Work::f32s(0.0, 3.0 * kd),
    )
}
