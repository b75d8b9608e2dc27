//! The Lloyd loop ahead on the device for the rows of a [`Workspace`] ([`RunsAhead`]): the
//! update, the empty-cluster repair and the pass in one submission a step, and each step's
//! report (the update's status, the pass's per-cluster Σw·d²) copied on the device into a
//! history that comes back when the loop asks for a report (`lloyd_ahead`) or when it is full.
//! Steps that do not report wait, recorded, for the one that does: a window of steps is one
//! submission.

use super::super::lloyd::{RunsAhead, StepReport, HISTORY_STEPS};
use super::Workspace;
use crate::error::{Error, Result};
use crate::gpu::batch::{Batch, PendingReadback, ReadHandle};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::kernels::centroids::advance::{
    self, AdvanceRule, AdvanceState, Decision, Outcome, PassSums,
};
use crate::kernels::centroids::repair::{self, Repair, RepairRows, RepairState};

/// Device bytes the loop ahead needs for N x D rows and K clusters: the update's state, the
/// repair's (counted as one chunk of rows, a few KiB more per chunk) and the history.
pub(super) fn device_bytes(n: usize, d: usize, k: usize) -> u64 {
    let history = 4 * history_steps(k) * history_words(k);
    AdvanceState::bytes(k, d) + RepairState::bytes(d, std::iter::once(n)) + history as u64
}

/// Empty clusters a step repairs on the device at first: one, and a few more where a row must
/// be skipped (its cluster has one member); more cost a pass over the distances each. A host
/// repair doubles them for the rest of the fit (to [`repair::MAX_ROUNDS`]).
const REPAIR_ROUNDS: usize = 4;

/// Device bytes the history of steps may take at most.
const HISTORY_BYTES: usize = 16 << 20;

/// Steps of K clusters the history holds: [`HISTORY_STEPS`], fewer for a large K.
fn history_steps(k: usize) -> usize {
    (HISTORY_BYTES / (4 * history_words(k))).clamp(1, HISTORY_STEPS)
}

/// Words of one step's report on the device: the update's four status words, then the
/// pass's K pairs (Σw·d², Σw).
fn history_words(k: usize) -> usize {
    4 + 2 * k
}

/// The Lloyd loop ahead on the device ([`RunsAhead`]).
pub(super) struct Ahead<'a> {
    state: AdvanceState,
    repair: RepairState,
    /// Select rounds each step records: the most empty clusters it repairs.
    repair_rounds: usize,
    spherical: bool,
    tol: f32,
    /// Each step's report, copied on the device at its slot until a step reads the slots
    /// back: [`history_steps`] slots of [`history_words`].
    history: DeviceBuffer<u32>,
    /// The next step's slot.
    next_slot: usize,
    /// Steps recorded and not yet submitted: those of a window that does not report yet,
    /// submitted together with the step that does (one submission a window, not a step).
    open: Option<Batch<'a>>,
    /// Steps in flight (submitted, or recorded into `open`), oldest first.
    in_flight: std::collections::VecDeque<StepInFlightAhead<'a>>,
    /// Reports read back and not yet taken, oldest first.
    reports: std::collections::VecDeque<StepReport>,
}

/// A step submitted ahead: whether it updated the centroids, and where its report comes back
/// with it (the steps of the history before it included).
struct StepInFlightAhead<'a> {
    updated: bool,
    readback: Option<(PendingReadback<'a>, ReadHandle)>,
}

impl Ahead<'_> {
    /// Waits for the steps in flight up to the next that reads the history back, and keeps
    /// their reports.
    fn read_next(&mut self, k: usize) -> Result<()> {
        let mut updated = Vec::new();
        let (pending, h) = loop {
            let step = self
                .in_flight
                .pop_front()
                .ok_or_else(|| Error::Gpu("no K-Means submission in flight".into()))?;
            updated.push(step.updated);
            if let Some(readback) = step.readback {
                break readback;
            }
        };
        let back = pending.wait()?;
        self.decode(k, &updated, &back.u32s(h))
    }

    /// The reports of the first `updated.len()` slots of `words` (one per step, oldest first).
    fn decode(&mut self, k: usize, updated: &[bool], words: &[u32]) -> Result<()> {
        for (slot, &updated) in words.chunks_exact(history_words(k)).zip(updated) {
            let outcome = match updated {
                true => Some(Outcome::from_status(&slot[..4])?),
                false => None,
            };
            // The device could not repair an empty cluster: the host does; later steps try
            // more on the device.
            if outcome.is_some_and(|o| o.decision == Decision::Empty) {
                self.repair_rounds = (2 * self.repair_rounds).min(repair::MAX_ROUNDS);
            }
            let inertia = slot[4..]
                .chunks_exact(2)
                .map(|p| f32::from_bits(p[0]) as f64)
                .sum();
            self.reports.push_back(StepReport { outcome, inertia });
        }
        Ok(())
    }
}

impl<'a> RunsAhead for Workspace<'a> {
    fn start(&mut self, centroids: &[f32], spherical: bool, tol: f32) {
        let (gpu, d, k) = (self.gpu, self.x.n_features(), self.k);
        let x = &self.x;
        let ahead = self.ahead.get_or_insert_with(|| Ahead {
            state: AdvanceState::new(gpu, k, d),
            repair: RepairState::new(gpu, x),
            repair_rounds: REPAIR_ROUNDS.min(x.n_rows()),
            spherical,
            tol,
            history: DeviceBuffer::zeroed(
                gpu,
                "Lloyd history",
                history_steps(k) * history_words(k),
            ),
            next_slot: 0,
            open: None,
            in_flight: Default::default(),
            reports: Default::default(),
        });
        (ahead.spherical, ahead.tol) = (spherical, tol);
        debug_assert!(ahead.open.is_none() && ahead.in_flight.is_empty());
        ahead.next_slot = 0;
        ahead.reports.clear();
        ahead.state.restart(gpu);
        self.centroids.write(gpu, centroids);
    }

    fn submit(&mut self, update: Option<bool>, report: bool) -> Result<()> {
        let gpu = self.gpu;
        let (d, k) = (self.x.n_features(), self.k);
        let open = self.ahead.as_mut().ok_or_else(not_started)?.open.take();
        let ahead = self.ahead.as_ref().ok_or_else(not_started)?;
        let slot = ahead.next_slot;
        // A full history comes back now, asked or not.
        let report = report || slot + 1 == history_steps(k);
        let (readback, open) = gpu.scoped("K-Means iteration ahead", || {
            let mut batch = open.unwrap_or_else(|| Batch::new(gpu, "K-Means iterations ahead"));
            let words = history_words(k);
            let at = (4 * slot * words) as u64;
            if let Some(check_changed) = update {
                let pass = PassSums {
                    centroids: &self.centroids,
                    sums: &self.sums,
                    counts: &self.counts,
                    sq_pairs: &self.sq_dist,
                    changed: &self.changed,
                    weighted: self.is_weighted(),
                };
                let rule = AdvanceRule {
                    spherical: ahead.spherical,
                    check_changed,
                    tol: ahead.tol,
                };
                let repair = Repair {
                    rows: RepairRows {
                        x: &self.x,
                        labels: &self.labels,
                        dist: &self.min_sq_dist,
                        weights: self.weights.as_ref(),
                    },
                    state: &ahead.repair,
                    rounds: ahead.repair_rounds,
                };
                let shape = (k, d);
                let state = &ahead.state;
                advance::record_advance(gpu, &mut batch, shape, &pass, state, rule, |b| {
                    repair::record_repair(gpu, b, shape, &pass, state, &repair, rule.spherical)
                })?;
                batch.copy(state.status.raw(), 0, ahead.history.raw(), at, 16);
            }
            self.record_pass(&mut batch, k)?;
            let pairs = (8 * k) as u64;
            batch.copy(self.sq_dist.raw(), 0, ahead.history.raw(), at + 16, pairs);
            if !report {
                return Ok((None, Some(batch)));
            }
            let h = batch.read_values(&ahead.history, 0, (slot + 1) * words);
            Ok((Some((batch.submit()?, h)), None))
        })?;
        let ahead = self.ahead.as_mut().ok_or_else(not_started)?;
        ahead.open = open;
        ahead.next_slot = if report { 0 } else { slot + 1 };
        ahead.in_flight.push_back(StepInFlightAhead {
            updated: update.is_some(),
            readback,
        });
        Ok(())
    }

    fn wait(&mut self) -> Result<StepReport> {
        let k = self.k;
        let ahead = self.ahead.as_mut().ok_or_else(not_started)?;
        if ahead.reports.is_empty() {
            ahead.read_next(k)?;
        }
        ahead
            .reports
            .pop_front()
            .ok_or_else(|| Error::Gpu("a K-Means readback without reports".into()))
    }

    fn drain(&mut self) -> Result<Vec<StepReport>> {
        let (gpu, k) = (self.gpu, self.k);
        let ahead = self.ahead.as_mut().ok_or_else(not_started)?;
        // Steps after the last readback (recorded in the open batch, if any): their slots
        // come back with them.
        if ahead.in_flight.back().is_some_and(|s| s.readback.is_none()) {
            let open = ahead.open.take();
            let mut batch = open.unwrap_or_else(|| Batch::new(gpu, "K-Means history"));
            let h = batch.read_values(&ahead.history, 0, ahead.next_slot * history_words(k));
            let pending = batch.submit()?;
            ahead.next_slot = 0;
            if let Some(last) = ahead.in_flight.back_mut() {
                last.readback = Some((pending, h));
            }
        }
        while !ahead.in_flight.is_empty() {
            ahead.read_next(k)?;
        }
        Ok(ahead.reports.drain(..).collect())
    }

    fn centroids(&mut self, previous: bool) -> Result<Vec<f32>> {
        let ahead = self.ahead.as_ref().ok_or_else(not_started)?;
        if !ahead.in_flight.is_empty() {
            return Err(Error::Gpu(
                "centroids read while submissions are in flight".into(),
            ));
        }
        let buffer = if previous {
            &ahead.state.previous
        } else {
            &self.centroids
        };
        let mut batch = Batch::new(self.gpu, "reading the centroids");
        let h = batch.read_all(buffer);
        Ok(batch.finish()?.f32s(h))
    }
}

fn not_started() -> Error {
    Error::Gpu("the K-Means loop on the device was not started".into())
}
