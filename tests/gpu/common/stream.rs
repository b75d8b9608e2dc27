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

/// Makes every fit on `gpu` over host data of `n` rows of `d` features stream, in pieces of
/// at most `rows` rows: a binding of `rows` rows, and a memory budget that holds the data
/// alone, never the data and what a fit needs besides (so the rows cannot stay resident).
pub fn small_pieces(gpu: &Gpu, rows: usize, n: usize, d: usize) {
    gpu.set_max_chunk_bytes((rows * d * 4) as u64);
    gpu.set_memory_budget((n * d * 4) as u64);
}

/// Undoes [`small_pieces`]: the device's own limits again.
pub fn whole_data(gpu: &Gpu) {
    gpu.set_max_chunk_bytes(u64::MAX);
    gpu.set_memory_budget(u64::MAX);
}
