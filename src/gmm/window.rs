//! How much device memory a mixture fit takes, and how its passes are cut: the window of
//! responsibilities, the blocks of the M-step sums, and the split of the augmented scatter.
//!
//! EM alternates the E-step rᵢₖ = πₖ N(xᵢ | μₖ, Σₖ) / Σⱼ πⱼ N(xᵢ | μⱼ, Σⱼ) and the M-step
//! Nₖ = Σᵢ rᵢₖ, μₖ = Σᵢ rᵢₖ xᵢ / Nₖ, Σₖ = Σᵢ rᵢₖ (xᵢ − μₖ)(xᵢ − μₖ)ᵀ / Nₖ + reg·I (parent
//! module docs). The M-step needs the rᵢₖ only inside sums over the rows, so a pass makes
//! them for one segment of rows at a time in one window and folds that segment's per-block
//! sums before the next segment overwrites it (`passes`). A fit of N rows of D features
//! with K components then holds on the device
//!
//! ```text
//!   4·N·D                      the rows (f32)
//! + 9·N   (+ 4·N weighted)     log p, the label, the per-256-row sums of log p (+ weights)
//! + 4·K·min(N, W)              one window of responsibilities, W = window_rows(...)
//! + 4·B·O  (+ 4·B·K(2D + 1))   per-block M-step sums, B blocks of O outputs (≤ 64 MiB;
//!                              + the diagonal moments where the scatter is split)
//! + O(K·D²)                    parameters, shifts, folded sums
//! ```
//!
//! with 4·K·W at most [`RESP_WINDOW_BYTES`] (32 MiB, unless one block of rows needs more)
//! and O = K (D + 1)² (Full, Tied) or K (2D + 1) (Diag, Spherical): O(N·D) plus a bounded
//! window, never the N x K matrix (4 GB at 20M rows and K = 50).

use super::CovarianceType;
use crate::gpu::Gpu;
use crate::kernels::mixture::mstep::{self, Moment};
use crate::kernels::primitives::gemm::cpu_like;

/// Bytes the per-block M-step sums may take (as K-Means): plenty of parallelism, small next
/// to the data.
const PARTIALS_TARGET_BYTES: u64 = 64 << 20;

/// Rows per M-step block at least: enough work per invocation, few blocks to fold.
const MIN_BLOCK_ROWS: usize = 256;

/// Bytes of responsibilities a fit keeps on the device at most (module docs), unless one
/// block of the M-step sums needs more: small next to the rows, large enough that a segment
/// fills a GPU (160 000 rows at K = 50), and within a GPU's last-level cache between the
/// E-step that writes it and the sums that read it.
pub(super) const RESP_WINDOW_BYTES: u64 = 32 << 20;

/// The most outputs per block of a fit's M-step sums: the one-pass moments (`moments`),
/// the augmented scatter (Full, Tied) or the diagonal moments.
pub(super) fn sum_outputs(k: usize, d: usize, covariance_type: CovarianceType) -> usize {
    let diagonal = Moment::DiagonalMoments.outputs(k, d);
    match covariance_type {
        CovarianceType::Full | CovarianceType::Tied => {
            Moment::AugmentedScatter.outputs(k, d).max(diagonal)
        }
        _ => diagonal,
    }
}

/// Rows per block of M-step sums over n rows with `outputs` sums per block: at least
/// MIN_BLOCK_ROWS, more when the per-block outputs are many, so that all partials fit one
/// binding of at most PARTIALS_TARGET_BYTES.
pub(super) fn block_rows(gpu: &Gpu, n: usize, outputs: u64) -> usize {
    let limit = gpu.binding_byte_limit().clamp(1, PARTIALS_TARGET_BYTES);
    (MIN_BLOCK_ROWS as u64).max((n as u64 * outputs * 4).div_ceil(limit) + 1) as usize
}

/// Bytes of the window of responsibilities a fit of n rows of D features with K components
/// keeps on the device (module docs), for the budget.
pub(super) fn window_bytes(
    gpu: &Gpu,
    n: usize,
    k: usize,
    d: usize,
    covariance_type: CovarianceType,
) -> u64 {
    let row_bytes = k as u64 * 4;
    let outputs = sum_outputs(k, d, covariance_type) as u64;
    let limit = gpu.chunk_byte_limit();
    window_rows(limit, n, row_bytes, block_rows(gpu, n, outputs)) as u64 * row_bytes
}

/// Rows per segment of a fit's window (module docs): [`RESP_WINDOW_BYTES`] of
/// responsibilities of `row_bytes` each, cut to whole blocks of `block_rows` (so a windowed
/// pass sums the blocks of a pass in one window, the same bits), or one block where that is
/// more; at most one binding of `chunk_limit` bytes, and N.
pub(super) fn window_rows(chunk_limit: u64, n: usize, row_bytes: u64, block_rows: usize) -> usize {
    let binding_rows = (chunk_limit / row_bytes).max(1) as usize;
    let cap = (RESP_WINDOW_BYTES.min(chunk_limit) / row_bytes).max(1) as usize;
    let whole = if cap >= block_rows {
        cap / block_rows * block_rows
    } else {
        block_rows
    };
    whole.min(binding_rows).min(n).max(1)
}

/// Whether a fit of Full or Tied factors at D features takes its one-pass moments as the
/// scatter of x − s plus the diagonal moments rather than the augmented scatter: on GPUs,
/// where the augmented row's extra column costs the tile core more tiles (at D = 64, three
/// 64 x 64 tiles instead of one); the first moments then come from another fma chain
/// (fma(r, v, acc) for fma(r·v, 1, acc): the same bits where fma is not fused, within f32
/// rounding otherwise). CPU-like adapters keep the augmented scatter, whose uniform twin
/// the autotuner weighs against the tiled kernel with the same bits.
pub(super) fn split_augmented(gpu: &Gpu, d: usize) -> bool {
    !cpu_like(gpu)
        && d >= mstep::TILED_SCATTER_MIN_D
        && mstep::scatter_tile_pairs(d + 1) > mstep::scatter_tile_pairs(d)
}

/// The folded sums of the augmented scatter (upper triangles of (D + 1)², per component)
/// from the split's two: the scatter of x − s (upper triangle of D², zero below) and the
/// diagonal moments (Σ r (x − s), Σ r, Σ r (x − s)²): its last column is Σ r (x − s), its
/// corner Σ r.
pub(super) fn join_split(k: usize, d: usize, scatter: &[f32], diagonal: &[f32]) -> Vec<f32> {
    let de = d + 1;
    let mut out = vec![0.0; k * de * de];
    for c in 0..k {
        let (aug, s) = (&mut out[c * de * de..], &scatter[c * d * d..]);
        for i in 0..d {
            aug[i * de..i * de + d].copy_from_slice(&s[i * d..i * d + d]);
            aug[i * de + d] = diagonal[c * (2 * d + 1) + i];
        }
        aug[d * de + d] = diagonal[c * (2 * d + 1) + d];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_whole_blocks_within_the_cap_a_binding_and_n() {
        let mib = 1u64 << 20;
        // K = 50: 200 bytes a row, 167 772 rows in 32 MiB, cut to whole blocks of 7 690.
        let rows = window_rows(128 * mib, 20_000_000, 200, 7_690);
        assert_eq!(rows, 7_690 * 21);
        assert!(rows as u64 * 200 <= RESP_WINDOW_BYTES);
        // A smaller binding caps the window, even below a block; a block larger than the
        // cap is one window.
        assert_eq!(window_rows(mib, 20_000_000, 200, 256), 5_120);
        assert_eq!(window_rows(4 * mib, 20_000_000, 200, 30_000), 20_971);
        assert_eq!(window_rows(128 * mib, 20_000_000, 200, 200_000), 200_000);
        assert_eq!(window_rows(64 * mib, 20_000_000, 40_000, 256), 768);
        // Fewer rows than a window: all of them, once.
        assert_eq!(window_rows(128 * mib, 1_000, 200, 256), 1_000);
    }

    #[test]
    fn the_split_sums_join_into_the_augmented_scatter() {
        // Two components, D = 3: each entry names where it came from.
        let (k, d) = (2, 3);
        let mut scatter = vec![0.0; k * d * d];
        for c in 0..k {
            for i in 0..d {
                for j in i..d {
                    scatter[c * d * d + i * d + j] = (100 * c + 10 * i + j) as f32;
                }
            }
        }
        let diagonal: Vec<f32> = (0..k * (2 * d + 1)).map(|e| 1000.0 + e as f32).collect();
        let aug = join_split(k, d, &scatter, &diagonal);
        let de = d + 1;
        for c in 0..k {
            let at = |i: usize, j: usize| aug[c * de * de + i * de + j];
            for i in 0..d {
                for j in 0..d {
                    let want = if j >= i {
                        (100 * c + 10 * i + j) as f32
                    } else {
                        0.0
                    };
                    assert_eq!(at(i, j), want);
                }
                assert_eq!(at(i, d), 1000.0 + (c * (2 * d + 1) + i) as f32);
                assert_eq!(at(d, i), 0.0);
            }
            assert_eq!(at(d, d), 1000.0 + (c * (2 * d + 1) + d) as f32);
        }
    }
}
