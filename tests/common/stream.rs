//! Helpers of the streaming tests: ragged host chunks and forced piece sizes.

use wgpu_unsupervised::Gpu;

/// `values` as ragged chunks of 1..=`max` rows, cut by a seeded pattern.
pub fn ragged(values: &[f32], d: usize, max: usize, seed: u64) -> Vec<Vec<f32>> {
    let n = values.len() / d;
    let mut out = Vec::new();
    let mut at = 0;
    let mut s = seed;
    while at < n {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let rows = (1 + (s >> 33) as usize % max).min(n - at);
        out.push(values[at * d..(at + rows) * d].to_vec());
        at += rows;
    }
    out
}

/// Forces pieces of `rows` rows on every pass.
pub fn small_pieces(gpu: &Gpu, rows: usize, d: usize) {
    gpu.set_max_chunk_bytes((rows * d * 4) as u64);
}
