//! The M-step of resident rows, from moments that one pass over the rows gives: EM with
//! one host↔device round trip per iteration.
//!
//! The E-step of θ⁽ᵗ⁾ and the responsibility-weighted sums about the E-step means sₖ run in
//! one submission, and one readback brings the per-block sums of log p and
//!
//! ```text
//! Rₖ = Σᵢ rᵢₖ,    Fₖ = Σᵢ rᵢₖ (xᵢ − sₖ),    Sₖ = Σᵢ rᵢₖ (xᵢ − sₖ)(xᵢ − sₖ)ᵀ
//! ```
//!
//! (Sₖ's diagonal for `Diag` and `Spherical`; for `Full` and `Tied` the device takes the
//! scatter of the augmented row (xᵢ − sₖ, 1), whose last column is Fₖ and whose corner is
//! Rₖ, so both moments come from one read of x and r). The host, in f64, moves the centre
//! to any c = sₖ + δ exactly:
//!
//! ```text
//! Σᵢ rᵢₖ (xᵢ − c)(xᵢ − c)ᵀ = Sₖ − δ Fₖᵀ − Fₖ δᵀ + Rₖ δ δᵀ
//! ```
//!
//! with δ = Fₖ / N′ₖ for the new mean μₖ (parent module docs) or Fₖ / Rₖ for the rows' own
//! mean (a streamed piece's statistics). This is the centred scatter of the two-pass
//! M-step up to the f32 rounding of Sₖ, which the correction amplifies by
//! Sₖⱼⱼ / Mₖⱼⱼ = 1 + δⱼ² / σ²ₖⱼ (Mₖ the centred scatter): near 1 once the means move
//! little from one iteration to the next, large when a mean moves far compared to its
//! component's spread (early iterations, a component that collapses). Where that factor
//! exceeds [`MAX_CANCELLATION`] for any component and feature, the scatter about the new
//! means is taken on the device in a second pass, which makes the same responsibilities
//! again where the window did not hold them all (`passes`); the decision depends only on the
//! sums, so a fit stays bitwise repeatable.

use rand_chacha::ChaCha8Rng;

use super::em::{check_lower_bound, EmData, Parameters};
use super::passes::{Fill, PassInFlight};
use super::stats::{full, parameters_from_sums, weights_of};
use super::workspace::{sum_log_density, Workspace};
use crate::error::Result;
use crate::kernels::mixture::mstep::Moment;
use crate::kernels::primitives::rows;

/// The largest Sₖⱼⱼ / Mₖⱼⱼ accepted from the one-pass moments (module docs): f32 sums
/// keep about 7 digits, so at most about one is lost to the centring.
pub(super) const MAX_CANCELLATION: f64 = 16.0;

/// Responsibility-weighted sums about shifts sₖ (module docs), in f64.
#[derive(Debug, Clone)]
pub(super) struct Moments {
    d: usize,
    full: bool,
    /// Rₖ = Σ r (K).
    pub resp_sums: Vec<f64>,
    /// Fₖ = Σ r (x − sₖ), K x D.
    pub first: Vec<f64>,
    /// Sₖ: K x D x D (symmetric) for full scatters, its diagonal K x D otherwise; absent
    /// when only the first moments were taken.
    second: Option<Vec<f64>>,
}

impl Moments {
    /// The first moments alone (Rₖ, Fₖ) of the folded sums of [`Moment::DiagonalMoments`]
    /// (K x (2D + 1)), for factors of either shape.
    pub(super) fn first_of_diagonal(sums: &[f64], k: usize, d: usize, full: bool) -> Self {
        Self {
            second: None,
            full,
            ..Self::from_joint(sums, k, d, false)
        }
    }

    /// From the folded sums of the one-pass moment of the covariance shape:
    /// [`Moment::AugmentedScatter`] (upper triangles of (D + 1)², `full`) or
    /// [`Moment::DiagonalMoments`] (K x (2D + 1)).
    pub(super) fn from_joint(sums: &[f64], k: usize, d: usize, full: bool) -> Self {
        if full {
            // Component c's sums are the upper triangle of its (D + 1)² block: row i holds
            // (i, j ≥ i). Walked row by row, with no division per element (the M-step runs
            // this on every iteration: 26 000 values at K = 10, D = 50).
            let de = d + 1;
            let mut second = vec![0.0; k * d * d];
            let (mut resp_sums, mut first) = (Vec::with_capacity(k), Vec::with_capacity(k * d));
            for (block, out) in sums
                .chunks_exact(de * de)
                .zip(second.chunks_exact_mut(d * d))
            {
                for i in 0..d {
                    let upper = &block[i * de..i * de + de];
                    for j in i..d {
                        out[i * d + j] = upper[j];
                        out[j * d + i] = upper[j];
                    }
                    first.push(upper[d]);
                }
                resp_sums.push(block[d * de + d]);
            }
            Self {
                d,
                full,
                resp_sums,
                first,
                second: Some(second),
            }
        } else {
            let per = 2 * d + 1;
            Self {
                d,
                full,
                resp_sums: (0..k).map(|c| sums[c * per + d]).collect(),
                first: (0..k * d).map(|e| sums[e / d * per + e % d]).collect(),
                second: Some(
                    (0..k * d)
                        .map(|e| sums[e / d * per + d + 1 + e % d])
                        .collect(),
                ),
            }
        }
    }

    /// The scatter about sₖ + δₖ (`delta`: K x D), in the layout of `second`, or `None`
    /// when there are no second moments or the centring would cancel more than
    /// [`MAX_CANCELLATION`] allows (module docs).
    pub(super) fn about(&self, delta: &[f64]) -> Option<Vec<f64>> {
        let second = self.second.as_ref()?;
        let d = self.d;
        let mut out = second.clone();
        for (c, &r) in self.resp_sums.iter().enumerate() {
            let f = &self.first[c * d..(c + 1) * d];
            let dl = &delta[c * d..(c + 1) * d];
            // S − δFᵀ − Fδᵀ + R δδᵀ, entry by entry.
            let moved = |i: usize, j: usize| r * dl[i] * dl[j] - dl[i] * f[j] - f[i] * dl[j];
            if self.full {
                for i in 0..d {
                    for j in 0..d {
                        out[c * d * d + i * d + j] += moved(i, j);
                    }
                }
            } else {
                for j in 0..d {
                    out[c * d + j] += moved(j, j);
                }
            }
            for j in 0..d {
                let raw = if self.full {
                    second[c * d * d + j * d + j]
                } else {
                    second[c * d + j]
                };
                let centred = if self.full {
                    out[c * d * d + j * d + j]
                } else {
                    out[c * d + j]
                };
                // False for a centred value ≤ 0 (or NaN) under a positive raw one.
                let bounded = raw <= MAX_CANCELLATION * centred;
                if raw > 0.0 && !bounded {
                    return None;
                }
            }
        }
        Some(out)
    }
}

impl<'a> Workspace<'a> {
    /// The one-pass moment of this covariance shape.
    fn joint_moment(&self) -> Moment {
        if full(self.covariance_type) {
            Moment::AugmentedScatter
        } else {
            Moment::DiagonalMoments
        }
    }

    /// One pass: the E-step for `p`, then Rₖ, Fₖ and Sₖ about p's means (module docs).
    /// Returns the per-block sums of log p as they come back (a streamed fit adds them up
    /// over the pieces) and the moments.
    pub(super) fn estep_and_moments(&self, p: &Parameters) -> Result<(Vec<f32>, Moments)> {
        self.submit_estep_and_moments(p)?.collect()
    }

    /// [`Workspace::estep_and_moments`]'s first half: the pass submitted, its results in
    /// flight (a streamed pass submits the next piece before it collects them).
    pub(super) fn submit_estep_and_moments(&self, p: &Parameters) -> Result<EStepInFlight<'a>> {
        self.write_shift(&p.means);
        self.write_parameters(p);
        Ok(EStepInFlight {
            pass: self.submit_pass(&Fill::EStep, Some(self.joint_moment()), true)?,
            k: self.k,
            d: self.d,
            full: full(self.covariance_type),
        })
    }

    /// Rₖ and Fₖ about `shift` of the responsibilities `fill` gives, and a random fill's
    /// generator after its draws.
    pub(super) fn first_moments(
        &self,
        shift: &[f64],
        fill: &Fill<'_>,
    ) -> Result<(Moments, Option<ChaCha8Rng>)> {
        self.write_shift(shift);
        let out = self.pass(fill, Some(Moment::DiagonalMoments), true)?;
        let sums: Vec<f64> = out.sums.iter().map(|&v| v as f64).collect();
        let full = full(self.covariance_type);
        let moments = Moments::first_of_diagonal(&sums, self.k, self.d, full);
        Ok((moments, out.rng_after))
    }

    /// The scatter about `centre` (K x D) taken on the device from the responsibilities of
    /// `fill` (made again unless all are still there), in the layout of [`Moments::about`]:
    /// K x D x D symmetric (Full, Tied) or K x D.
    fn second_moments(&self, centre: &[f64], fill: &Fill<'_>, refill: bool) -> Result<Vec<f64>> {
        let (k, d) = (self.k, self.d);
        let full = full(self.covariance_type);
        let moment = if full {
            Moment::Scatter
        } else {
            Moment::DiagonalMoments
        };
        self.write_shift(centre);
        let sums = self.pass(fill, Some(moment), refill)?.sums;
        Ok(if full {
            // The kernel writes the upper triangle; mirror it.
            (0..k * d * d)
                .map(|e| {
                    let (c, i, j) = (e / (d * d), e / d % d, e % d);
                    sums[c * d * d + i.min(j) * d + i.max(j)] as f64
                })
                .collect()
        } else {
            // The second moments of Σ r (x − s), Σ r, Σ r (x − s)².
            (0..k * d)
                .map(|e| sums[e / d * (2 * d + 1) + d + 1 + e % d] as f64)
                .collect()
        })
    }

    /// The scatter about sₖ + δₖ, the centre: from `moments` where they allow it, else
    /// from a second pass over the responsibilities of `fill` (module docs). `current`: the
    /// window still holds the responsibilities `moments` came from (false once a later
    /// pass was submitted: the second pass then makes them again in any case).
    pub(super) fn scatter_about(
        &self,
        moments: &Moments,
        delta: &[f64],
        centre: &[f64],
        (fill, current): (&Fill<'_>, bool),
    ) -> Result<Vec<f64>> {
        match moments.about(delta) {
            Some(s) => Ok(s),
            None => self.second_moments(centre, fill, !(current && self.responsibilities_kept())),
        }
    }

    /// The M-step from moments about `shift` of the responsibilities of `fill`: weights and
    /// means on the host, the covariances about the new means, then the precision factors.
    pub(super) fn mstep_from(
        &self,
        moments: &Moments,
        shift: &[f64],
        reg_covar: f64,
        fill: &Fill<'_>,
    ) -> Result<Parameters> {
        let d = self.d;
        let (nk, weights) = weights_of(&moments.resp_sums);
        let delta: Vec<f64> = (0..moments.first.len())
            .map(|e| moments.first[e] / nk[e / d])
            .collect();
        let means: Vec<f64> = shift.iter().zip(&delta).map(|(s, m)| s + m).collect();
        let scatter = self.scatter_about(moments, &delta, &means, (fill, true))?;
        let full = full(self.covariance_type);
        let at = |c: usize, i: usize, j: usize| {
            if full {
                scatter[c * d * d + i * d + j]
            } else {
                scatter[c * d + j]
            }
        };
        parameters_from_sums(self.covariance_type, d, nk, weights, means, at, reg_covar)
    }

    /// The M-step for the responsibilities of `fill` (two passes: the first moments about
    /// the first row of the data for every component, then the scatter about the new
    /// means), and a random fill's generator after its draws.
    pub(super) fn mstep(
        &self,
        fill: &Fill<'_>,
        reg_covar: f64,
    ) -> Result<(Parameters, Option<ChaCha8Rng>)> {
        let row = rows::read_rows(self.gpu, &self.x, &[0])?;
        let shift: Vec<f64> = (0..self.k)
            .flat_map(|_| row.iter().map(|&v| v as f64))
            .collect();
        let (first, rng) = self.first_moments(&shift, fill)?;
        Ok((self.mstep_from(&first, &shift, reg_covar, fill)?, rng))
    }
}

/// An E-step pass submitted ([`Workspace::submit_estep_and_moments`]).
pub(super) struct EStepInFlight<'a> {
    pass: PassInFlight<'a>,
    k: usize,
    d: usize,
    full: bool,
}

impl EStepInFlight<'_> {
    /// Waits for the pass: the per-block sums of log p, and the moments.
    pub(super) fn collect(self) -> Result<(Vec<f32>, Moments)> {
        let out = self.pass.collect()?;
        let sums: Vec<f64> = out.sums.iter().map(|&v| v as f64).collect();
        let moments = Moments::from_joint(&sums, self.k, self.d, self.full);
        Ok((out.log_blocks, moments))
    }
}

impl EmData for Workspace<'_> {
    fn step(&mut self, p: &Parameters, reg_covar: f64) -> Result<(f64, Parameters)> {
        let (blocks, moments) = self.estep_and_moments(p)?;
        let lower_bound = sum_log_density(&blocks) / self.weight_total();
        check_lower_bound(lower_bound)?;
        let next = self.mstep_from(&moments, &p.means, reg_covar, &Fill::EStep)?;
        Ok((lower_bound, next))
    }

    fn labels(&mut self, p: &Parameters) -> Result<Vec<u32>> {
        Workspace::labels(self, p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The device's sums of one component (K = 1) about `s`, in the layout of `full`.
    fn sums(x: &[f64], r: &[f64], d: usize, s: &[f64], full: bool) -> Vec<f64> {
        let dev = |i: usize, j: usize| if j < d { x[i * d + j] - s[j] } else { 1.0 };
        let de = d + 1;
        let mut out = vec![0.0; if full { de * de } else { 2 * d + 1 }];
        for (i, &ri) in r.iter().enumerate() {
            if full {
                for a in 0..de {
                    for b in a..de {
                        out[a * de + b] += ri * dev(i, a) * dev(i, b);
                    }
                }
            } else {
                for j in 0..d {
                    out[j] += ri * dev(i, j);
                    out[d + 1 + j] += ri * dev(i, j) * dev(i, j);
                }
                out[d] += ri;
            }
        }
        out
    }

    #[test]
    fn joint_sums_unpack_into_the_upper_triangles_of_every_component() {
        // Distinct values, so any misplaced one shows: K = 3 blocks of (D + 1)² = 16.
        let (k, d) = (3, 3);
        let de = d + 1;
        let sums: Vec<f64> = (0..k * de * de).map(|v| v as f64 * 1.5 + 0.25).collect();
        let m = Moments::from_joint(&sums, k, d, true);
        let at = |c: usize, i: usize, j: usize| sums[c * de * de + i.min(j) * de + i.max(j)];
        let second = m.second.as_ref().expect("full sums have a scatter");
        for c in 0..k {
            assert_eq!(m.resp_sums[c], at(c, d, d));
            for i in 0..d {
                assert_eq!(m.first[c * d + i], at(c, i, d));
                for j in 0..d {
                    assert_eq!(second[(c * d + i) * d + j], at(c, i, j), "{c} {i} {j}");
                }
            }
        }
        assert_eq!(
            (m.resp_sums.len(), m.first.len(), second.len()),
            (k, k * d, k * d * d)
        );
    }

    #[test]
    fn moving_the_centre_gives_the_centred_scatter_or_refuses_when_it_would_cancel() {
        let d = 3;
        let x: Vec<f64> = (0..60)
            .map(|i| ((i * 37 % 11) as f64) * 0.3 - 1.0)
            .collect();
        let r: Vec<f64> = (0..20).map(|i| 0.1 + (i % 3) as f64 * 0.4).collect();
        let total: f64 = r.iter().sum();
        let mean: Vec<f64> = (0..d)
            .map(|j| (0..20).map(|i| r[i] * x[i * d + j]).sum::<f64>() / total)
            .collect();
        let centred = |a: usize, b: usize| {
            (0..20)
                .map(|i| r[i] * (x[i * d + a] - mean[a]) * (x[i * d + b] - mean[b]))
                .sum::<f64>()
        };
        for full in [true, false] {
            // A shift near the mean: the scatter about the mean, to rounding.
            let near: Vec<f64> = mean.iter().map(|m| m + 0.05).collect();
            let m = Moments::from_joint(&sums(&x, &r, d, &near, full), 1, d, full);
            assert!((m.resp_sums[0] - total).abs() < 1e-12);
            let delta: Vec<f64> = m.first.iter().map(|f| f / m.resp_sums[0]).collect();
            let got = m.about(&delta).expect("a near shift is accepted");
            for a in 0..d {
                for b in 0..d {
                    let v = if full {
                        got[a * d + b]
                    } else if a == b {
                        got[a]
                    } else {
                        continue;
                    };
                    assert!((v - centred(a, b)).abs() < 1e-12, "{full} {a} {b}");
                }
            }
            // A shift far from the data: the centring would cancel, so it is refused.
            let far: Vec<f64> = mean.iter().map(|m| m + 100.0).collect();
            let m = Moments::from_joint(&sums(&x, &r, d, &far, full), 1, d, full);
            let delta: Vec<f64> = m.first.iter().map(|f| f / m.resp_sums[0]).collect();
            assert!(m.about(&delta).is_none(), "{full}");
            // First moments alone have no scatter to move.
            let first = Moments::first_of_diagonal(&[1.0; 7], 1, d, full);
            assert!(first.about(&[0.0; 3]).is_none());
        }
    }
}
