//! Block power (subspace) iteration with Rayleigh–Ritz: V ← orth(S·V), with the Ritz pairs of
//! VᵀSV, until every wanted residual ‖S·uᵢ − θᵢuᵢ‖ ≤ tol·|θ₁| (parent module docs). S is an
//! operator the caller applies (a dense device matrix, or matrix-free Xsᵀ(Xs·V), module
//! `workspace`); spectral clustering runs the same iteration on its normalised affinity
//! ([`subspace_iteration`]). A leaf of its folder: it imports nothing else from `pca/`.
//!
//! **Steps on the device between checks** ([`subspace_iteration_ahead`]). A check is a
//! round trip; a product S·V at d = 784, p = 100 is tens of microseconds on a GPU. An operator
//! that can orthonormalise on the device (Cholesky QR, `kernels::linalg::cholesky_qr`)
//! therefore takes several products per check ([`ProjectedRounds`]): as many as the Ritz
//! values say the slowest wanted pair needs to reach `tol`, at the rate θ_p/θ_k per product
//! (the convergence rate λ_{p+1}/λ_k of subspace iteration, estimated from above), half as
//! many again and one for the estimate's sake, at most [`MAX_STEPS_PER_CHECK`].
//!
//! **The check reads p x p matrices.** The device reduces its last block Q and image W to
//! H = QᵀSQ, G = QᵀQ and the Gram matrix of the part of W outside the block
//! (`kernels::linalg::rayleigh_ritz`); the host finds the Ritz pairs of the pencil (H, G) and
//! their residuals in f64 from those alone (`linalg::projected_ritz`): O(p³) work and 3p²
//! values a check, where reading both blocks and orthonormalising them on the host was
//! O(dp²) and 2dp. The next round starts from the Ritz images S·uₖ = W·yₖ, which the device
//! forms from the coordinates Y the host sends and orthonormalises: in the Ritz basis the
//! columns are nearly orthogonal already (their Gram matrix is Θ² plus the residuals'
//! products), so f32 Cholesky QR loses nothing that matters, and each further step keeps
//! them so, since orthonormalising in order converges the block vector by vector. Only the
//! answer's m vectors come back, once, and are made orthonormal in f64.
//!
//! A breakdown on the device (a column it could not orthonormalise: S of rank below p), a
//! non-finite value or a Gram matrix G too far from I discards the round, and the iteration
//! goes on from its random start with the host's check after every product
//! ([`subspace_iteration`]), refilling such directions on the host; the products already
//! taken still count.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::linalg;
use crate::linalg::SolverSettings;
use crate::progress::{fit_done, Progress};

/// The most products the device takes between two checks.
pub(crate) const MAX_STEPS_PER_CHECK: usize = 64;

/// The p x p matrices a device reduces its last block Q and image W = S·Q to
/// (`kernels::linalg::rayleigh_ritz`), row-major.
pub(crate) struct Projected {
    /// H = ½(QᵀW + WᵀQ).
    pub h: Vec<f64>,
    /// G = QᵀQ.
    pub g: Vec<f64>,
    /// E = R'ᵀR' with R' = W − Q·H.
    pub e: Vec<f64>,
    /// The device met a column it could not orthonormalise: discard this round.
    pub breakdown: bool,
}

/// A device that takes rounds of products S·V between the host's checks and keeps the
/// iteration's block between them (module docs).
pub(crate) trait ProjectedRounds {
    /// `steps` products from the orthonormal rows `v` (p x d), the block orthonormalised
    /// between two of them; the projection of the block the last product multiplied.
    fn start(&mut self, v: &[f64], p: usize, steps: usize) -> Result<Projected>;
    /// `steps` products from the last round's Ritz images W·yₖ, orthonormalised first;
    /// `coordinates` (p x p, column k = yₖ) from that round's check.
    fn resume(&mut self, coordinates: &[f64], steps: usize) -> Result<Projected>;
    /// The Ritz vectors Q·yₖ of the last round's block for `coordinates` (p x `count`), as
    /// `count` rows of d.
    fn vectors(&mut self, coordinates: &[f64], count: usize) -> Result<Vec<f64>>;
}

/// The block the iteration runs for `m` wanted vectors of length `d`: twice as many, at least
/// 8 more, at most d (the extra vectors set the convergence rate λ_{p+1}/λ_m).
pub(crate) fn block_size(d: usize, m: usize) -> usize {
    d.min((2 * m).max(m + 8))
}

/// Fresh random rows in [−1, 1), made orthonormal.
fn random_orthonormal(rng: &mut ChaCha8Rng, p: usize, d: usize) -> Result<Vec<f64>> {
    let mut v: Vec<f64> = (0..p * d).map(|_| rng.random_range(-1.0..1.0)).collect();
    linalg::orthonormalize_rows(&mut v, p, d)?;
    Ok(v)
}

/// Orthonormalises `w` (p rows of d, whose Gram matrix W Wᵀ is `gram`) in place;
/// directions S annihilates (rank below p) are refilled with random ones, which leaves the
/// wanted leading subspace untouched.
fn orthonormalize_or_refill(
    w: &mut [f64],
    gram: &nalgebra::DMatrix<f64>,
    p: usize,
    d: usize,
    rng: &mut ChaCha8Rng,
) -> Result<()> {
    if linalg::orthonormalize_rows_with_gram(w, gram, p, d).is_ok() {
        return Ok(());
    }
    let norm = w.iter().map(|v| v * v).sum::<f64>().sqrt().max(1.0);
    for v in w.iter_mut() {
        *v += 1e-6 * norm * rng.random_range(-1.0..1.0);
    }
    linalg::orthonormalize_rows(w, p, d)
}

/// Block power iteration with Rayleigh–Ritz. `apply` maps p row vectors V (p x d) to the
/// rows of S·V (p x d). Returns the top `m` Ritz values, vectors (m x d) and iterations.
pub(crate) fn subspace_iteration(
    d: usize,
    m: usize,
    params: &SolverSettings<'_>,
    apply: impl FnMut(&[f64], usize) -> Result<Vec<f64>>,
) -> Result<(Vec<f64>, Vec<f64>, usize)> {
    let p = block_size(d, m);
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let v = random_orthonormal(&mut rng, p, d)?;
    Checks::new(params).on_host(d, m, v, &mut rng, apply)
}

/// [`subspace_iteration`] with up to `max_steps` products between checks, taken by `rounds`
/// on the device and checked from their p x p projections (module docs); `apply` takes the
/// host's one product per check where the device cannot go on.
pub(crate) fn subspace_iteration_ahead(
    d: usize,
    m: usize,
    params: &SolverSettings<'_>,
    max_steps: usize,
    rounds: &mut impl ProjectedRounds,
    apply: impl FnMut(&[f64], usize) -> Result<Vec<f64>>,
) -> Result<(Vec<f64>, Vec<f64>, usize)> {
    let p = block_size(d, m);
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let start = random_orthonormal(&mut rng, p, d)?;
    let mut checks = Checks::new(params);
    let mut steps = 1;
    let mut coordinates: Option<Vec<f64>> = None;
    while checks.it < params.max_iter {
        let round = match &coordinates {
            None => rounds.start(&start, p, steps)?,
            Some(y) => rounds.resume(y, steps)?,
        };
        checks.it += steps;
        let finite = [&round.h, &round.g, &round.e]
            .iter()
            .all(|m| m.iter().all(|v| v.is_finite()));
        let ritz = match finite && !round.breakdown {
            true => linalg::projected_ritz(&round.h, &round.g, &round.e, p)?,
            false => None,
        };
        let Some(ritz) = ritz else {
            // S has directions the device cannot orthonormalise (or f32 overflowed there):
            // the host's check after every product from here, from the start again.
            return checks.on_host(d, m, start, &mut rng, apply);
        };
        let residuals = ritz.residuals(m);
        if checks.done(&ritz.theta, &residuals) {
            let mut vectors = rounds.vectors(&ritz.coordinates(m), m)?;
            linalg::orthonormalize_rows(&mut vectors, m, d)?;
            return Ok(checks.finish(&ritz.theta[..m], vectors, d));
        }
        steps = planned_steps(
            &ritz.theta,
            &checks.relative(&ritz.theta, &residuals),
            params.tol,
            max_steps,
        )
        .min(params.max_iter - checks.it);
        coordinates = Some(ritz.coordinates(p));
    }
    Err(checks.not_converged())
}

/// The checks of one iteration: the products taken, the progress events, the stop.
struct Checks<'a, 'p> {
    params: &'a SolverSettings<'p>,
    progress: Progress<'p>,
    began: std::time::Instant,
    /// Products taken so far.
    it: usize,
    previous_top: f64,
    residual: f64,
}

impl<'a, 'p> Checks<'a, 'p> {
    fn new(params: &'a SolverSettings<'p>) -> Self {
        Self {
            params,
            progress: Progress::new(params.algorithm, 0, params.on_iteration),
            began: std::time::Instant::now(),
            it: 0,
            previous_top: f64::NAN,
            residual: f64::INFINITY,
        }
    }

    /// The residuals relative to |θ₁|.
    fn relative(&self, theta: &[f64], residuals: &[f64]) -> Vec<f64> {
        let scale = theta[0].abs().max(f64::MIN_POSITIVE);
        residuals.iter().map(|r| r / scale).collect()
    }

    /// Reports the check after `self.it` products with Ritz values `theta` and the wanted
    /// pairs' `residuals`; whether the iteration stops here (converged, or the callback
    /// asked).
    fn done(&mut self, theta: &[f64], residuals: &[f64]) -> bool {
        self.residual = self
            .relative(theta, residuals)
            .into_iter()
            .fold(0.0f64, f64::max);
        let flow = self
            .progress
            .iteration(self.it, self.residual, theta[0] - self.previous_top);
        self.previous_top = theta[0];
        self.residual <= self.params.tol || flow.is_break()
    }

    /// The result, with the closing event.
    fn finish(&self, theta: &[f64], vectors: Vec<f64>, d: usize) -> (Vec<f64>, Vec<f64>, usize) {
        let converged = self.residual <= self.params.tol;
        fit_done(self.params.algorithm, 0, d, self.it, converged, self.began);
        (theta.to_vec(), vectors, self.it)
    }

    fn not_converged(&self) -> Error {
        Error::NotConverged {
            what: self.params.what,
            residual: self.residual,
            iterations: self.params.max_iter,
        }
    }

    /// The iteration from the orthonormal rows `v` with an f64 Rayleigh–Ritz check on the
    /// host after every product `apply` takes.
    fn on_host(
        mut self,
        d: usize,
        m: usize,
        mut v: Vec<f64>,
        rng: &mut ChaCha8Rng,
        mut apply: impl FnMut(&[f64], usize) -> Result<Vec<f64>>,
    ) -> Result<(Vec<f64>, Vec<f64>, usize)> {
        let p = block_size(d, m);
        while self.it < self.params.max_iter {
            let mut image = apply(&v, p)?;
            self.it += 1;
            // The Ritz values and the residuals from p x p matrices (the block has
            // orthonormal rows); the Ritz vectors only once they are the answer.
            let step = linalg::ritz_step(&v, &image, p, d)?;
            if self.done(&step.theta, &step.residuals(m)) {
                let vectors = step.vectors(&v, m, d);
                return Ok(self.finish(&step.theta[..m], vectors, d));
            }
            orthonormalize_or_refill(&mut image, step.gram(), p, d, rng)?;
            v = image;
        }
        Err(self.not_converged())
    }
}

/// Products until the next check (module docs): for each wanted pair k still above `tol`,
/// ln(tol/rₖ)/ln(θ_p/θₖ) at the rate the Ritz values give; the most of them, half as many
/// again and one (a product costs the GPU far less than a check costs the host), within
/// 1..=`max_steps`.
fn planned_steps(theta: &[f64], residuals: &[f64], tol: f64, max_steps: usize) -> usize {
    let slowest = theta.last().map_or(0.0, |t| t.abs());
    let mut need = 0.0f64;
    for (&t, &r) in theta.iter().zip(residuals) {
        if r <= tol {
            continue;
        }
        let rate = slowest / t.abs();
        let products = if rate < 1.0 {
            (tol / r).ln() / rate.ln()
        } else {
            f64::INFINITY
        };
        need = need.max(products);
    }
    let planned = (need * 1.5).ceil() + 1.0;
    if planned.is_finite() {
        (planned as usize).clamp(1, max_steps)
    } else {
        max_steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Algorithm;

    /// S = Eᵀ·diag(λ)·E (d x d) for orthonormal rows E and λᵢ = 0.97^i: known eigenpairs,
    /// close enough that the iteration needs tens of products.
    fn known_spectrum(d: usize, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let e = random_orthonormal(&mut rng, d, d).unwrap();
        let lambda: Vec<f64> = (0..d).map(|i| 0.97f64.powi(i as i32)).collect();
        let mut s = vec![0.0; d * d];
        for (k, &l) in lambda.iter().enumerate() {
            let row = &e[k * d..(k + 1) * d];
            for i in 0..d {
                for j in 0..d {
                    s[i * d + j] += l * row[i] * row[j];
                }
            }
        }
        (s, lambda, e)
    }

    /// Rows S·vᵢ.
    fn product(s: &[f64], v: &[f64], p: usize, d: usize) -> Vec<f64> {
        let mut w = vec![0.0; p * d];
        for r in 0..p {
            for i in 0..d {
                w[r * d + i] = (0..d).map(|j| s[i * d + j] * v[r * d + j]).sum();
            }
        }
        w
    }

    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    /// Rows Σᵢ c[i][k]·rowsᵢ for the p x `count` coefficients `c`.
    fn combine(rows: &[f64], c: &[f64], p: usize, count: usize, d: usize) -> Vec<f64> {
        let mut out = vec![0.0; count * d];
        for k in 0..count {
            for i in 0..p {
                let w = c[i * count + k];
                for j in 0..d {
                    out[k * d + j] += w * rows[i * d + j];
                }
            }
        }
        out
    }

    fn settings() -> SolverSettings<'static> {
        SolverSettings {
            tol: 1e-7,
            max_iter: 2000,
            seed: 3,
            algorithm: Algorithm::Pca,
            on_iteration: None,
            what: "test power iteration",
        }
    }

    /// How the stand-in for the device fails its rounds of more than one product.
    #[derive(Clone, Copy, PartialEq)]
    enum Fails {
        Never,
        /// It reports a breakdown.
        Flagged,
        /// Its projection overflows to infinity, unreported.
        Overflows,
    }

    /// A host stand-in for the device: the block orthonormalised between products slightly
    /// off orthonormal (as f32 would leave it), projected as the shader does.
    struct HostRounds<'a> {
        s: &'a [f64],
        d: usize,
        p: usize,
        /// The block and its image, p rows of d.
        q: Vec<f64>,
        w: Vec<f64>,
        fails: Fails,
        /// Products per round.
        rounds: Vec<usize>,
    }

    impl HostRounds<'_> {
        /// The block made orthonormal from `z`, then pushed off by about 1e-9.
        fn set_block(&mut self, mut z: Vec<f64>) -> Result<()> {
            linalg::orthonormalize_rows(&mut z, self.p, self.d)?;
            self.q = z
                .iter()
                .enumerate()
                .map(|(e, x)| x * (1.0 + 1e-9 * ((e % 7) as f64 - 3.0)))
                .collect();
            self.w = product(self.s, &self.q, self.p, self.d);
            Ok(())
        }

        fn products(&mut self, steps: usize) -> Result<Projected> {
            for _ in 1..steps {
                self.set_block(self.w.clone())?;
            }
            self.rounds.push(steps);
            let (p, d) = (self.p, self.d);
            let row = |m: &[f64], r: usize| m[r * d..(r + 1) * d].to_vec();
            let mut h = vec![0.0; p * p];
            let mut g = vec![0.0; p * p];
            for r in 0..p {
                for s in 0..p {
                    let (qr, qs) = (row(&self.q, r), row(&self.q, s));
                    h[r * p + s] = 0.5 * (dot(&qr, &row(&self.w, s)) + dot(&qs, &row(&self.w, r)));
                    g[r * p + s] = dot(&qr, &qs);
                }
            }
            let t = combine(&self.q, &h, p, p, d);
            let outside: Vec<f64> = self.w.iter().zip(&t).map(|(a, b)| a - b).collect();
            let mut e = vec![0.0; p * p];
            for r in 0..p {
                for s in 0..p {
                    e[r * p + s] = dot(&row(&outside, r), &row(&outside, s));
                }
            }
            if self.fails == Fails::Overflows && steps > 1 {
                h[0] = f64::INFINITY;
            }
            Ok(Projected {
                h,
                g,
                e,
                breakdown: self.fails == Fails::Flagged && steps > 1,
            })
        }
    }

    impl ProjectedRounds for HostRounds<'_> {
        fn start(&mut self, v: &[f64], p: usize, steps: usize) -> Result<Projected> {
            assert_eq!(p, self.p);
            self.q = v.to_vec();
            self.w = product(self.s, v, p, self.d);
            self.products(steps)
        }

        fn resume(&mut self, coordinates: &[f64], steps: usize) -> Result<Projected> {
            let z = combine(&self.w, coordinates, self.p, self.p, self.d);
            self.set_block(z)?;
            self.products(steps)
        }

        fn vectors(&mut self, coordinates: &[f64], count: usize) -> Result<Vec<f64>> {
            Ok(combine(&self.q, coordinates, self.p, count, self.d))
        }
    }

    /// The iteration with up to `max_steps` products a round on the stand-in: the result,
    /// the products of each device round, and the host's products after a fall-back.
    #[allow(clippy::type_complexity)]
    fn run(
        s: &[f64],
        d: usize,
        m: usize,
        max_steps: usize,
        fails: Fails,
    ) -> ((Vec<f64>, Vec<f64>, usize), Vec<usize>, usize) {
        let mut rounds = HostRounds {
            s,
            d,
            p: block_size(d, m),
            q: Vec::new(),
            w: Vec::new(),
            fails,
            rounds: Vec::new(),
        };
        let mut on_host = 0;
        let out = subspace_iteration_ahead(d, m, &settings(), max_steps, &mut rounds, |v, p| {
            on_host += 1;
            Ok(product(s, v, p, d))
        })
        .unwrap();
        (out, rounds.rounds, on_host)
    }

    #[test]
    fn steps_between_checks_find_the_eigenpairs_with_few_checks() {
        for (d, m, seed) in [(30, 3, 1), (40, 6, 2)] {
            let (s, lambda, e) = known_spectrum(d, seed);
            let (plain_values, _, plain_it) =
                subspace_iteration(d, m, &settings(), |v, p| Ok(product(&s, v, p, d))).unwrap();
            let ((values, vectors, it), rounds, on_host) =
                run(&s, d, m, MAX_STEPS_PER_CHECK, Fails::Never);
            assert_eq!(on_host, 0);
            assert_eq!(rounds.iter().sum::<usize>(), it);
            assert!(rounds.len() * 4 <= plain_it, "{rounds:?} vs {plain_it}");
            for k in 0..m {
                assert!((values[k] - lambda[k]).abs() < 1e-8, "{k}: {}", values[k]);
                assert!((plain_values[k] - lambda[k]).abs() < 1e-8);
                let cos = dot(&vectors[k * d..(k + 1) * d], &e[k * d..(k + 1) * d]);
                assert!((cos.abs() - 1.0).abs() < 1e-7, "{k}: cos {cos}");
                for l in 0..k {
                    let off = dot(&vectors[k * d..(k + 1) * d], &vectors[l * d..(l + 1) * d]);
                    assert!(off.abs() < 1e-12, "{k} {l}: {off}");
                }
            }
            // One product a round is the plain iteration's count of products.
            let ((one_values, _, one_it), one_rounds, _) = run(&s, d, m, 1, Fails::Never);
            assert!(one_rounds.iter().all(|&s| s == 1));
            assert!(one_it.abs_diff(plain_it) <= 1, "{one_it} vs {plain_it}");
            assert!((one_values[0] - lambda[0]).abs() < 1e-8);
        }
    }

    #[test]
    fn a_breakdown_on_the_device_falls_back_to_a_host_check_per_product() {
        let d = 30;
        let (s, lambda, _) = known_spectrum(d, 4);
        for fails in [Fails::Flagged, Fails::Overflows] {
            let ((values, _, it), rounds, on_host) = run(&s, d, 3, MAX_STEPS_PER_CHECK, fails);
            // The first round is one product; the second asks for more and fails; the host
            // takes every product after.
            assert_eq!(rounds.len(), 2, "{rounds:?}");
            assert_eq!(rounds[0], 1);
            assert!(rounds[1] > 1, "{rounds:?}");
            assert!(on_host > 1);
            assert_eq!(it, rounds[0] + rounds[1] + on_host);
            for k in 0..3 {
                assert!((values[k] - lambda[k]).abs() < 1e-8);
            }
        }
    }

    #[test]
    fn planned_steps_follow_the_ritz_rate_within_bounds() {
        // θ_p/θ_k = 0.5 for the first pair, residual 1e-1 to reach 1e-5: ln(1e-4)/ln(0.5) =
        // 13.3 products, half as many again and one: 21.
        assert_eq!(planned_steps(&[2.0, 1.9, 1.0], &[1e-1, 1e-6], 1e-5, 64), 21);
        // Every pair below tol already (a check the caller would have ended): one.
        assert_eq!(planned_steps(&[2.0, 1.0], &[1e-6], 1e-5, 64), 1);
        // No gap (θ_p = θ_k): the cap.
        assert_eq!(planned_steps(&[1.0, 1.0], &[1e-2], 1e-5, 64), 64);
        assert_eq!(planned_steps(&[1.0, 1.0], &[1e-2], 1e-5, 7), 7);
        // An exhausted spectrum past the block (θ_p = 0) converges in one product.
        assert_eq!(planned_steps(&[3.0, 0.0], &[1e-1], 1e-5, 64), 1);
    }
}
