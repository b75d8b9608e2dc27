//! The GEMM form with the row merge in subgroups (`shaders/assign/tiled_subgroup.wgsl`): the
//! body of [`tiled`](super::tiled), the GEMM_LANES_N searches of a row merged by a butterfly of
//! subgroup shuffles instead of GEMM_LANES_N / 2 rounds through workgroup memory. The same
//! bits. It runs where the device has `Features::SUBGROUP` and its smallest subgroup holds a
//! tile row's lanes ([`runs`]); the autotuner times it against `assign_tiled`.

use super::args::Assignment;
use super::scratch::AssignScratch;
use super::tiled::record_tiled_entry;
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::profile::Work;
use crate::gpu::shaders::assign::tiled_subgroup as wgsl;
use crate::gpu::Gpu;
use crate::kernels::primitives::gemm::GemmConfig;

/// Whether `config`'s tile rows fit one subgroup on this device: the shuffles exchange the
/// searches of a row's `lanes_n` invocations, consecutive local indices, so every subgroup
/// must hold `lanes_n` of them (subgroup sizes are powers of two, so a larger one holds whole
/// rows).
pub(crate) fn runs(gpu: &Gpu, config: GemmConfig) -> bool {
    gpu.subgroup_lanes()
        .is_some_and(|lanes| lanes >= config.lanes_n)
}

/// Records `assign_tiled_subgroup` in `config`'s tiles over the first `n_rows` rows of
/// `chunk` (the centroid side prepared, the recheck list cleared).
pub(crate) fn record_tiled_subgroup(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    config: GemmConfig,
    rows: (&Chunk, usize, usize),
    to: &Assignment<'_>,
    scratch: &AssignScratch,
    work: Work,
) -> Result<()> {
    let entry = wgsl::ASSIGN_TILED_SUBGROUP;
    record_tiled_entry(gpu, batch, entry, config, rows, to, scratch, work)
}
