//! The error bound of the GEMM form of the assignment (`shaders/assign/`), and its proof.
//!
//! # Setting
//!
//! f32 arithmetic rounds to nearest with unit roundoff u = 2⁻²⁴; γₙ = nu / (1 − nu). For a row
//! x, a centroid c and the shift s (all f32, D features), the kernels compute
//!
//! - x′ⱼ = fl(xⱼ − sⱼ), c′ⱼ = fl(cⱼ − sⱼ): x′ⱼ = (xⱼ − sⱼ)(1 + δ), |δ| ≤ u;
//! - p̂ = Σⱼ x′ⱼ c′ⱼ and n̂c = Σⱼ c′ⱼ², n̂x = Σⱼ x′ⱼ², each one fma chain: |p̂ − x′·c′| ≤
//!   γ_D Σ|x′ⱼc′ⱼ| ≤ γ_D ‖x′‖‖c′‖, |n̂c − ‖c′‖²| ≤ γ_D ‖c′‖² (Higham, *Accuracy and Stability
//!   of Numerical Algorithms*, §3.1; an fma rounds once per step);
//! - v̂ = fl(fma(−2, p̂, n̂c)) = (n̂c − 2p̂)(1 + ε), |ε| ≤ u;
//! - d̂ = Σⱼ fl(xⱼ − cⱼ)², one fma chain: |d̂ − d| ≤ γ_{D+2} d, with d = ‖x − c‖² exact (each
//!   term is (xⱼ − cⱼ)²(1 + δ)², then the chain).
//!
//! # The bound
//!
//! With d′ = ‖x′ − c′‖² = ‖x′‖² − 2 x′·c′ + ‖c′‖² (exactly, in real arithmetic):
//!
//! 1. |v̂ + ‖x′‖² − d′| ≤ u|n̂c − 2p̂| + |n̂c − ‖c′‖²| + 2|p̂ − x′·c′|
//!    ≤ (u(1 + γ_D) + γ_D)(‖c′‖² + 2‖x′‖‖c′‖) ≤ γ_{D+1} (2‖c′‖² + ‖x′‖²) (2ab ≤ a² + b²).
//! 2. x′ − c′ = (x − c) + e with |eⱼ| ≤ u(|xⱼ − sⱼ| + |cⱼ − sⱼ|), so |d′ − d| ≤ 2‖x − c‖‖e‖ +
//!    ‖e‖² ≤ (2u + u²)(‖x − s‖ + ‖c − s‖)² ≤ 3u · 2(‖x − s‖² + ‖c − s‖²), and ‖x − s‖ ≤
//!    ‖x′‖ / (1 − u).
//! 3. d ≤ 2(‖x − s‖² + ‖c − s‖²), so |d̂ − d| ≤ 2γ_{D+2}(1 + 3u)(‖x′‖² + ‖c′‖²).
//! 4. ‖x′‖² ≤ n̂x / (1 − γ_D), ‖c′‖² ≤ n̂c / (1 − γ_D).
//!
//! Adding 1–3 and using 4, every centroid j satisfies
//!
//!   |v̂ⱼ + ‖x′‖² − dⱼ| + |d̂ⱼ − dⱼ| ≤ (2γ_{D+1} + 7u + 2γ_{D+2}) (1 + 4γ_D) (n̂x + n̂cⱼ)
//!                                ≤ β₀ (n̂x + n̂cⱼ),  β₀ = (4D + 13) u / (1 − (4D + 8) u).
//!
//! The kernels use β = (4D + 32) u / (1 − (4D + 8) u) ([`beta`]): the extra 19u (n̂x + n̂c)
//! covers the rounding of the test itself (the slack β n̂c, the differences and 2βn̂x, each
//! within a few u of its operands, all bounded by n̂x + n̂c up to a factor 2).
//!
//! The relative model assumes no underflow. A result in the subnormal range (or flushed to
//! zero, which Vulkan allows) loses at most the smallest normal, 2⁻¹²⁶, absolutely; the test
//! adds (2D + 8)·2⁻¹²⁶ for the 2D + 8 roundings on a row's path, so data whose squares
//! underflow are simply rechecked.
//!
//! # The test, and why it makes labels exact
//!
//! Let b be the candidate with the least v̂ (lowest index among equals). The kernel accepts b
//! when min_{j≠b}(v̂ⱼ − βn̂cⱼ) − (v̂_b + βn̂c_b) > 2βn̂x (+ the underflow term). Then for
//! every j ≠ b
//!
//!   d̂ⱼ ≥ dⱼ − Eⱼ ≥ v̂ⱼ + ‖x′‖² − (Eⱼ + Gⱼ) ≥ v̂ⱼ + ‖x′‖² − β(n̂x + n̂cⱼ)
//!      > v̂_b + ‖x′‖² + β(n̂x + n̂c_b) ≥ d̂_b,
//!
//! with Gⱼ, Eⱼ the GEMM-form and difference-form errors. So b is the strict argmin of the
//! exact-form distances d̂, which every other variant computes and compares (lowest index
//! among equals): the labels agree bit for bit, and the written distance is d̂_b, computed in
//! the same order.
//!
//! **Two candidates.** The search also keeps the runner-up r (the least v̂ after b). Let m be
//! whichever of b and r has the lower v̂ + βn̂c. If min_{j∉{b,r}}(v̂ⱼ − βn̂cⱼ) − (v̂_m + βn̂c_m) >
//! 2βn̂x, the chain above with m in place of b gives d̂ⱼ > d̂_m for every j outside the pair:
//! the argmin of d̂ over all centroids (lowest index among equals) is the better of b and r
//! by d̂, which the kernel computes for both. A near tie between two centroids, the common
//! undecided case, so costs 2D more instead of a recheck over all K.
//!
//! A row that fails both tests is rechecked in the difference form over all centroids. The
//! difference form's labels in turn agree with the f64 reference's argmin except where the
//! two best exact distances are within 2γ_{D+2} d of each other (3. above).

/// The coefficient β of the assignment's error bound for rows of `d` features, rounded up to
/// f32 (see the module docs); infinite (every row rechecked) when D is too large for the
/// bound to mean anything.
pub(crate) fn beta(d: usize) -> f32 {
    let u = f64::powi(2.0, -24);
    let d = d as f64;
    let denom = 1.0 - (4.0 * d + 8.0) * u;
    if denom < 0.5 {
        return f32::INFINITY;
    }
    let b = (4.0 * d + 32.0) * u / denom;
    let r = b as f32;
    if (r as f64) < b {
        f32::from_bits(r.to_bits() + 1)
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::beta;
    use rand::{Rng, SeedableRng};

    /// The kernels' arithmetic, in f32 on the host: v̂ for each centroid, n̂x, and d̂.
    struct Emulated {
        v: Vec<f32>,
        slack: Vec<f32>,
        norm_x: f32,
        exact: Vec<f32>,
    }

    fn emulate(x: &[f32], c: &[f32], s: &[f32], b: f32) -> Emulated {
        let d = x.len();
        let xs: Vec<f32> = x.iter().zip(s).map(|(a, b)| a - b).collect();
        let norm_x = xs.iter().fold(0.0f32, |acc, &v| v.mul_add(v, acc));
        let mut v = Vec::new();
        let mut slack = Vec::new();
        let mut exact = Vec::new();
        for row in c.chunks(d) {
            let cs: Vec<f32> = row.iter().zip(s).map(|(a, b)| a - b).collect();
            let nc = cs.iter().fold(0.0f32, |acc, &v| v.mul_add(v, acc));
            let p = xs
                .iter()
                .zip(&cs)
                .fold(0.0f32, |acc, (&a, &b)| a.mul_add(b, acc));
            v.push((-2.0f32).mul_add(p, nc));
            slack.push(b * nc);
            exact.push(x.iter().zip(row).fold(0.0f32, |acc, (&a, &b)| {
                let t = a - b;
                t.mul_add(t, acc)
            }));
        }
        Emulated {
            v,
            slack,
            norm_x,
            exact,
        }
    }

    /// Data around `centre` with spread `spread`; centroids some near-copies of rows.
    fn case(
        seed: u64,
        d: usize,
        k: usize,
        centre: f32,
        spread: f32,
    ) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let draw =
            |rng: &mut rand_chacha::ChaCha8Rng| centre + spread * (rng.random::<f32>() - 0.5);
        let x: Vec<f32> = (0..d).map(|_| draw(&mut rng)).collect();
        let mut c: Vec<f32> = (0..k * d).map(|_| draw(&mut rng)).collect();
        // Near ties: centroid 1 is centroid 0 nudged by one ulp in one feature; centroid 2
        // is the row itself.
        if k > 2 {
            c.copy_within(0..d, d);
            c[d] = f32::from_bits(c[d].to_bits() + 1);
            c[2 * d..3 * d].copy_from_slice(&x);
        }
        let s: Vec<f32> = (0..d)
            .map(|j| c.iter().skip(j).step_by(d).sum::<f32>() / k as f32)
            .collect();
        (x, c, s)
    }

    #[test]
    fn the_bound_holds_and_an_accepted_candidate_is_the_exact_argmin() {
        let mut accepted = 0;
        let mut checked = 0;
        for (seed, d, k, centre, spread) in [
            (1, 1, 5, 0.0, 1.0),
            (2, 4, 9, 3.0, 1.0),
            (3, 17, 40, 1e4, 1.0),
            (4, 257, 30, -2e3, 10.0),
            (5, 784, 12, 128.0, 255.0),
            (6, 64, 300, 1e6, 1e-2),
            (7, 3, 7, 0.0, 1e-30),
        ] {
            for trial in 0..20u64 {
                let (x, c, s) = case(seed * 1000 + trial, d, k, centre, spread);
                let b = beta(d);
                let e = emulate(&x, &c, &s, b);
                for j in 0..k {
                    // The exact distance, in f64 from the f32 inputs (exact up to 2⁻⁵³).
                    let exact: f64 = x
                        .iter()
                        .zip(&c[j * d..(j + 1) * d])
                        .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
                        .sum();
                    let nc = e.slack[j] as f64 / b as f64;
                    let underflow = (2 * d + 8) as f64 * f32::MIN_POSITIVE as f64;
                    let bound = b as f64 * (e.norm_x as f64 + nc) + underflow;
                    let gemm = e.v[j] as f64 + e.norm_x as f64;
                    assert!(
                        (gemm - exact).abs() + (e.exact[j] as f64 - exact).abs() <= bound,
                        "seed {seed} d {d} centroid {j}: gemm {gemm} exact {exact} diff-form {} bound {bound}",
                        e.exact[j]
                    );
                    checked += 1;
                }
                // The test as the kernel runs it, in f32.
                let mut best = 0;
                for j in 1..k {
                    if e.v[j] < e.v[best] {
                        best = j;
                    }
                }
                let others = (0..k)
                    .filter(|&j| j != best)
                    .map(|j| e.v[j] - e.slack[j])
                    .fold(f32::MAX, f32::min);
                let underflow = (2 * d + 8) as f32 * f32::MIN_POSITIVE;
                if others - (e.v[best] + e.slack[best]) > 2.0 * b * e.norm_x + underflow {
                    accepted += 1;
                    let exact_best = (0..k)
                        .min_by(|&i, &j| e.exact[i].partial_cmp(&e.exact[j]).unwrap())
                        .unwrap();
                    assert_eq!(best, exact_best, "seed {seed} d {d}");
                    assert!((0..k).all(|j| j == best || e.exact[j] > e.exact[best]));
                }
            }
        }
        assert!(checked > 1000);
        // Most cases decide without a recheck (the planted near ties do not).
        assert!(accepted > 40, "accepted {accepted}");
    }

    #[test]
    fn beta_is_rounded_up_and_infinite_past_meaning() {
        let u = f64::powi(2.0, -24);
        for d in [1usize, 4, 784, 1 << 16] {
            let exact = (4.0 * d as f64 + 32.0) * u / (1.0 - (4.0 * d as f64 + 8.0) * u);
            assert!(beta(d) as f64 >= exact);
            assert!((beta(d) as f64) < exact * (1.0 + 1e-6));
        }
        assert!(beta(1 << 22).is_infinite());
    }
}
