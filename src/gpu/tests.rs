//! Test support of the host layer: the adapter every GPU unit test runs on, and seeded data.

use rand::{Rng, SeedableRng};

use super::Gpu;

/// The best adapter, or a panic that says why there is none (never a silent skip). Its
/// autotuner keeps nothing across processes: tests leave the user's cache alone, and those
/// of the cache set a temporary directory of their own.
pub(crate) fn gpu() -> Gpu {
    let gpu = Gpu::new().unwrap_or_else(|e| {
        panic!("GPU tests need a wgpu adapter (CI installs mesa-vulkan-drivers): {e}")
    });
    gpu.set_tuning_cache(super::TuningCache::Off);
    gpu
}

/// Uniform values in [0, 1) from a seeded generator.
pub(crate) fn random(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..len).map(|_| rng.random::<f32>()).collect()
}
