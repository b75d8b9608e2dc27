//! GPUs, few centroids (`shaders/assign/stream.wgsl`): the difference form over rows streamed
//! through workgroup memory once, the next piece's loads in flight while the current one is
//! summed, K fixed per pipeline (`STREAM_K`) so the distances stay in registers. The same
//! bits as every variant of the family.
//!
//! Cost model (an H200: 4.8 TB/s HBM, ~4 TB/s copy, 67 TFLOP/s FP32, 132 SMs): each row of D
//! features costs 4D bytes and 2·D·K′ instructions (a subtraction and an fma per feature and
//! centroid, K′ = 4⌈K/4⌉: the distances are summed four centroids to a vec4, whose lanes past
//! K are summed and never read), plus D/4·(1 + K′) vec4 loads from workgroup memory. At
//! Fashion-MNIST (70k x 784, k = 10, K′ = 12) the 220 MB read takes 55 µs at 4 TB/s; the 1.3 G
//! instructions take 40 µs at the FP32 issue rate and the workgroup loads about 27 µs, both
//! hidden under the reads when a workgroup's next piece (8 KiB) is in flight while it sums:
//! the kernel is bound by the copy rate, with 530 rows per SM (a quarter of its threads) at
//! that size. The H200 measured 570 GB/s (14% of the copy ceiling) when the distances were
//! an array indexed by the centroid loop's counter: if the driver left that loop rolled, each
//! fma loaded and stored its distance in local memory (2·D·K of them a row), which the model
//! above does not hold and which would explain the rate. The vec4 groups rule it out.

use super::args::{params, Assignment, SMALL_K};
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::profile::Work;
use crate::gpu::shaders::assign::stream as wgsl;
use crate::gpu::Gpu;
use crate::kernels::primitives::gemm::{rows_vec4, vec4_placeholder};

/// Rows per workgroup of `assign_stream`.
const STREAM_WG: usize = wgsl::STREAM_WG as usize;

/// The override that fixes K per pipeline (1 ..= [`SMALL_K`]).
pub(crate) const STREAM_K: &str = "STREAM_K";

/// Whether `assign_stream` runs K centroids.
pub(crate) fn runs(k: usize) -> bool {
    (1..=SMALL_K).contains(&k)
}

/// Records `assign_stream` over the first `n_rows` rows of `chunk`.
pub(crate) fn record_stream(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    n_rows: usize,
    d: usize,
    to: &Assignment<'_>,
    work: Work,
) -> Result<()> {
    assert!(runs(to.k), "assign_stream takes 1 ..= {SMALL_K} centroids");
    let grid = gpu.grid(n_rows.div_ceil(STREAM_WG) as u64)?;
    let placeholder = vec4_placeholder(gpu, chunk);
    batch.dispatch(
        wgsl::ASSIGN_STREAM,
        &[(STREAM_K, to.k as u32)],
        &params(chunk, n_rows, d, to.k, grid.x),
        &[
            ("x", chunk.bind()),
            ("x4", rows_vec4(chunk, &placeholder)),
            ("centroids", to.centroids.bind()),
            ("labels", to.labels.bind()),
            ("min_sq_dist", to.min_sq_dist.bind()),
            ("changed", to.changed.bind()),
        ],
        grid,
        work,
    )
}
