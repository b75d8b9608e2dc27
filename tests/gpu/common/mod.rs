//! Shared test helpers. GPU tests need an adapter (CI installs lavapipe); without one they
//! fail with the reason, never skip.
#![allow(dead_code)]

use wgpu_unsupervised::Gpu;

pub mod gmm;
pub mod pca;
pub mod stream;

/// The best adapter, or a panic that says why there is none. Its autotuner keeps nothing
/// across processes, so the tests leave the user's tuning cache alone.
pub fn gpu() -> Gpu {
    let gpu = Gpu::new().unwrap_or_else(|e| {
        panic!("GPU tests need a wgpu adapter (CI installs mesa-vulkan-drivers): {e}")
    });
    gpu.set_tuning_cache(wgpu_unsupervised::TuningCache::Off);
    gpu
}

/// Uniform values in [lo, hi) from a small seeded LCG-free generator (rand's ChaCha8).
pub fn random_matrix(n: usize, d: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    wgpu_unsupervised::datasets::uniform(n, d, seed)
        .into_iter()
        .map(|u| lo + (hi - lo) * u)
        .collect()
}

pub fn to_f64(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

/// max |a − b| / max(|b|, floor)
pub fn max_rel_err(a: &[f64], b: &[f64], floor: f64) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / y.abs().max(floor))
        .fold(0.0, f64::max)
}

/// Through JSON and back, as statistics travel between machines (feature `serde`; without
/// it the value is returned as it is).
#[cfg(feature = "serde")]
pub fn via_json<T: serde::Serialize + serde::de::DeserializeOwned>(value: T) -> T {
    serde_json::from_str(&serde_json::to_string(&value).unwrap()).unwrap()
}

/// Without the `serde` feature there is no JSON form: the value as it is.
#[cfg(not(feature = "serde"))]
pub fn via_json<T>(value: T) -> T {
    value
}

/// `x` times `c`, value by value.
pub fn times(x: &[f32], c: f32) -> Vec<f32> {
    x.iter().map(|v| v * c).collect()
}

/// max relative error of `a` against `b` times c^power (floor: 1e-6 of the largest): a
/// result on data scaled by c against the unscaled one, in the scaled data's units.
pub fn rel_err_at(a: &[f64], b: &[f64], c: f32, power: i32) -> f64 {
    let cp = (c as f64).powi(power);
    let b: Vec<f64> = b.iter().map(|v| v * cp).collect();
    let floor = b.iter().fold(0.0f64, |m, v| m.max(v.abs())) * 1e-6;
    max_rel_err(a, &b, floor)
}
