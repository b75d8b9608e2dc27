//! Standard normal draws for the host's random generation ([`crate::datasets::make_blobs`],
//! Gaussian-mixture sampling), by the Box–Muller transform: for u₁ ∈ (0, 1] and u₂ ∈ [0, 1)
//! uniform, √(−2 ln u₁)·(cos 2πu₂, sin 2πu₂) are two independent N(0, 1) draws. The cosine
//! draw comes first and the sine draw is kept for the next call, so a seeded ChaCha8
//! generator gives the same sequence on every platform.

use rand::Rng;

/// Standard normal draws, two per pair of uniforms.
#[derive(Debug, Default)]
pub(crate) struct StandardNormal {
    spare: Option<f64>,
}

impl StandardNormal {
    /// The next N(0, 1) draw.
    pub(crate) fn sample(&mut self, rng: &mut impl Rng) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        // 1 − [0, 1) lies in (0, 1], keeping ln away from 0.
        let u1 = 1.0 - rng.random::<f64>();
        let u2: f64 = rng.random();
        let r = (-2.0 * u1.ln()).sqrt();
        let theta = std::f64::consts::TAU * u2;
        self.spare = Some(r * theta.sin());
        r * theta.cos()
    }
}
