//! The operands every assignment kernel shares (`shaders/assign/shared/params.wgsl`): the
//! parameter struct's twin and its common fields, and the buffers an assignment reads and
//! writes.

use bytemuck::{Pod, Zeroable};

use super::bound::beta;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::shaders::{assign as wgsl, check_params};

/// Register accumulators of the one-row kernels (`SMALL_K` in the shader). Up to this K GPUs
/// run the streamed difference form (`assign_stream`).
pub(crate) const SMALL_K: usize = wgsl::shared::params::SMALL_K as usize;

/// Twin of `AssignParams` in shaders/assign/shared/params.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct AssignParams {
    pub n_rows: u32,
    pub x_offset: u32,
    pub d: u32,
    pub k: u32,
    pub grid_x: u32,
    pub sqrt_output: u32,
    pub k_first: u32,
    pub slice_flags: u32,
    pub d4: u32,
    pub x_vec4: u32,
    pub beta: f32,
    pub block_rows: u32,
    pub block_offset: u32,
    pub weighted: u32,
    pub n_groups: u32,
    _pad1: u32,
}

const _: () = {
    check_params::<AssignParams>(wgsl::prepare::ENTRY_POINTS);
    check_params::<AssignParams>(wgsl::tiled::ENTRY_POINTS);
    check_params::<AssignParams>(wgsl::recheck::ENTRY_POINTS);
    check_params::<AssignParams>(wgsl::texture::ENTRY_POINTS);
    check_params::<AssignParams>(wgsl::stream::ENTRY_POINTS);
    check_params::<AssignParams>(wgsl::fused::ENTRY_POINTS);
    check_params::<AssignParams>(wgsl::registers::ENTRY_POINTS);
    check_params::<AssignParams>(wgsl::uniform::ENTRY_POINTS);
    check_params::<AssignParams>(wgsl::distances::ENTRY_POINTS);
};

/// `FIRST_SLICE`, `LAST_SLICE` and `RECHECK_ROWS` of the shader: where a dispatch stands in a
/// run of dispatches that share a running best.
pub(crate) const FIRST_SLICE: u32 = wgsl::shared::params::FIRST_SLICE;
/// See [`FIRST_SLICE`].
pub(crate) const LAST_SLICE: u32 = wgsl::shared::params::LAST_SLICE;
/// See [`FIRST_SLICE`].
pub(crate) const RECHECK_ROWS: u32 = wgsl::shared::params::RECHECK_ROWS;

impl AssignParams {
    /// These parameters for `count` centroids from `k_first`, with the slice flags
    /// ([`FIRST_SLICE`], [`LAST_SLICE`], [`RECHECK_ROWS`]).
    pub(crate) fn slice(self, k_first: usize, count: usize, slice_flags: u32) -> Self {
        Self {
            k: count as u32,
            k_first: k_first as u32,
            slice_flags,
            ..self
        }
    }

    /// These parameters with the blocks of partials of `assign_rows_update`
    /// ([`fused`](super::fused)): `block_rows` rows each, the first numbered `block_offset`,
    /// the rows weighted or not.
    pub(crate) fn blocks(self, block_rows: usize, block_offset: usize, weighted: bool) -> Self {
        Self {
            block_rows: block_rows as u32,
            block_offset: block_offset as u32,
            weighted: weighted as u32,
            ..self
        }
    }
}

/// The parameters every entry point of the family shares, for `n_rows` rows of `chunk`.
pub(crate) fn params(
    chunk: &Chunk,
    n_rows: usize,
    d: usize,
    k: usize,
    grid_x: u32,
) -> AssignParams {
    AssignParams {
        n_rows: n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        k: k as u32,
        grid_x,
        d4: d.div_ceil(4) as u32,
        x_vec4: (d.is_multiple_of(4) && chunk.x_offset.is_multiple_of(4)) as u32,
        beta: beta(d),
        ..Zeroable::zeroed()
    }
}

/// The centroids an assignment reads and the per-row results it writes.
pub(crate) struct Assignment<'a> {
    /// K x D centroids, row-major.
    pub centroids: &'a DeviceBuffer<f32>,
    /// Centroids to compare with (the first `k` rows of `centroids`).
    pub k: usize,
    /// One label per row of the chunk.
    pub labels: &'a DeviceBuffer<u32>,
    /// One squared distance per row of the chunk.
    pub min_sq_dist: &'a DeviceBuffer<f32>,
    /// One u32 to which the number of changed labels is added.
    pub changed: &'a DeviceBuffer<u32>,
}
