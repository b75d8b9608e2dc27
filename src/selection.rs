//! Model selection: how many clusters (K-Means), components (Gaussian mixtures) or principal
//! components to keep.
//!
//! Every curve fits one model per candidate k on data uploaded to the device once
//! ([`GpuInput::on_gpu`]; a [`GpuMatrix`] is used in place), with the same parameters for
//! every k apart from k itself (a *template*: [`KMeans`] or [`GaussianMixture`]).
//!
//! * **Elbow** ([`elbow`]): the K-Means inertia W(k) = Σᵢ ‖xᵢ − μ_{C(i)}‖² for each k. The
//!   suggested k ([`elbow_point`]) is where the curve bends most on a log scale: the interior
//!   k with the largest second difference of log W,
//!
//!   ```text
//!   Δ² log W(k) = log W(k−1) − 2 log W(k) + log W(k+1) = log [ (W(k−1)/W(k)) / (W(k)/W(k+1)) ]
//!   ```
//!
//!   i.e. the k whose own drop in inertia is largest relative to the next one. Working on
//!   log W makes the rule scale-free (the raw second difference of W favours small k, whose
//!   drops are large in absolute terms). It needs three consecutive k; with fewer it returns
//!   the first k of the range.
//! * **Gap statistic** ([`gap_statistic`]; Tibshirani, Walther & Hastie, "Estimating the
//!   number of clusters in a data set via the gap statistic", J. R. Statist. Soc. B 63 (2001)
//!   411–423): B reference data sets of the same size are drawn uniformly in the bounding box
//!   of the data (the paper's first choice of reference distribution), each clustered for
//!   every k; with W_k the inertia of the data and W*_kb that of reference set b,
//!
//!   ```text
//!   Gap(k) = (1/B) Σ_b log W*_kb − log W_k
//!   sd_k   = [ (1/B) Σ_b (log W*_kb − l̄_k)² ]^½,   l̄_k = (1/B) Σ_b log W*_kb
//!   s_k    = sd_k · √(1 + 1/B)
//!   ```
//!
//!   and the suggested k is the smallest k of the range with Gap(k) ≥ Gap(k+1) − s_{k+1}
//!   (k + 1 in the range); when no k qualifies, the largest k of the range.
//! * **Information criteria** ([`gmm_criterion_curve`]): the BIC −2 log L + p log N
//!   (Schwarz 1978) or the AIC −2 log L + 2p (Akaike 1974) of a Gaussian mixture fitted for
//!   each k ([`GaussianMixtureModel::bic`](crate::GaussianMixtureModel::bic)); the suggested
//!   k minimises the criterion (the smallest such k on ties).
//! * **PCA spectrum** ([`pca_spectrum`]): the explained variance of each component, its
//!   ratio to the total variance and the cumulative ratio, from a fitted [`PcaModel`].
//!
//! ```no_run
//! use wgpu_unsupervised::{datasets, selection, Gpu, KMeans, Matrix};
//!
//! let gpu = Gpu::new()?;
//! let (rows, _, _) = datasets::make_blobs(1000, 2, 4, 0.5, (-10.0, 10.0), 7)?;
//! let x = Matrix::new(&rows, 2)?;
//! let gap = selection::gap_statistic(&gpu, &x, 1..=8, &KMeans::new(1).seed(3), 5, 11)?;
//! println!("gap statistic suggests k = {}", gap.suggested_k);
//! # Ok::<(), wgpu_unsupervised::Error>(())
//! ```

use std::ops::RangeInclusive;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::data::Matrix;
use crate::error::{Error, Result};
use crate::gmm::{GaussianMixture, GmmInit};
use crate::gpu::{Gpu, GpuInput, GpuMatrix};
use crate::kmeans::{KMeans, KMeansInit};
use crate::names::parse_choice;
use crate::pca::PcaModel;

/// A model-selection criterion, as the CLI's `--criterion` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Criterion {
    /// K-Means inertia, suggested k at the elbow ([`elbow_point`]).
    Elbow,
    /// The gap statistic of Tibshirani, Walther & Hastie (2001).
    Gap,
    /// Bayesian information criterion of a Gaussian mixture (lower is better).
    Bic,
    /// Akaike information criterion of a Gaussian mixture (lower is better).
    Aic,
}

impl Criterion {
    /// All four criteria, in the order Elbow, Gap, Bic, Aic.
    pub const ALL: [Criterion; 4] = [
        Criterion::Elbow,
        Criterion::Gap,
        Criterion::Bic,
        Criterion::Aic,
    ];

    /// The lower-case name: "elbow", "gap", "bic" or "aic".
    pub fn name(self) -> &'static str {
        match self {
            Criterion::Elbow => "elbow",
            Criterion::Gap => "gap",
            Criterion::Bic => "bic",
            Criterion::Aic => "aic",
        }
    }
}

impl std::fmt::Display for Criterion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Criterion {
    type Err = Error;

    /// Parses a [`Criterion::name`], ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self> {
        let no_aliases = |_: &Criterion| -> &'static [&'static str] { &[] };
        parse_choice(
            "criterion",
            "criterion",
            s,
            &Criterion::ALL,
            |c| c.name(),
            no_aliases,
        )
    }
}

/// A criterion evaluated over a range of k, with the k it suggests.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Curve {
    /// What `values` hold.
    pub criterion: Criterion,
    /// The candidate k, increasing and consecutive.
    pub k: Vec<usize>,
    /// The criterion at each k (inertia, BIC or AIC).
    pub values: Vec<f64>,
    /// The suggested k (module docs for each criterion's rule).
    pub suggested_k: usize,
}

/// The gap statistic over a range of k (module docs for the formulas).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GapCurve {
    /// The candidate k, increasing and consecutive.
    pub k: Vec<usize>,
    /// K-Means inertia W_k of the data at each k.
    pub inertia: Vec<f64>,
    /// log W_k, with W_k floored at 1e-12 of the largest W_k (and at the smallest positive
    /// f64), so that a dispersion of 0 (identical rows, or k reaching the number of distinct
    /// rows) has a finite log; the reference sets' W*_kb are floored the same way.
    pub log_w: Vec<f64>,
    /// Mean over the reference sets of log W*_kb.
    pub ref_log_w: Vec<f64>,
    /// Gap(k) = `ref_log_w` − `log_w`.
    pub gap: Vec<f64>,
    /// Standard deviation sd_k of log W*_kb over the reference sets (divisor B).
    pub sd: Vec<f64>,
    /// s_k = sd_k √(1 + 1/B).
    pub s_k: Vec<f64>,
    /// Number of reference sets B.
    pub n_refs: usize,
    /// The smallest k with Gap(k) ≥ Gap(k+1) − s_{k+1}, or the largest k when none.
    pub suggested_k: usize,
}

/// The PCA spectrum of a fitted model (one entry per kept component, descending).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Spectrum {
    /// Component numbers 1..=M.
    pub component: Vec<usize>,
    /// Variance along each component.
    pub explained_variance: Vec<f64>,
    /// Each variance over the total variance of the data.
    pub explained_variance_ratio: Vec<f64>,
    /// Running sum of `explained_variance_ratio`.
    pub cumulative_ratio: Vec<f64>,
}

/// Checks a range of k against N rows: 1 ≤ k_min ≤ k_max ≤ N.
///
/// Errors: [`Error::InvalidParameter`] naming `k_min` or `k_max`;
/// [`Error::TooFewSamples`] when k_max > N.
pub fn check_k_range(ks: &RangeInclusive<usize>, n: usize) -> Result<()> {
    let (lo, hi) = (*ks.start(), *ks.end());
    if lo == 0 {
        return Err(Error::invalid("k_min", "must be at least 1"));
    }
    if lo > hi {
        return Err(Error::invalid(
            "k_max",
            format!("k_min = {lo} is larger than k_max = {hi}"),
        ));
    }
    if hi > n {
        return Err(Error::TooFewSamples { k: hi, n });
    }
    Ok(())
}

/// The template with `k` clusters; refuses given centroids, which fix k.
fn kmeans_for(template: &KMeans, k: usize) -> Result<KMeans> {
    if matches!(template.init, KMeansInit::Centroids(_)) {
        return Err(Error::invalid(
            "init",
            "given centroids fix k; use k-means++ or random for a range of k",
        ));
    }
    Ok(KMeans {
        k,
        ..template.clone()
    })
}

/// K-Means inertia at every k of `ks`, fitted on the device copy of `x`.
fn inertia_curve(
    gpu: &Gpu,
    x: &GpuMatrix,
    ks: &RangeInclusive<usize>,
    template: &KMeans,
) -> Result<Vec<f64>> {
    ks.clone()
        .map(|k| Ok(kmeans_for(template, k)?.fit(gpu, x)?.inertia()))
        .collect()
}

/// The elbow of a decreasing curve: the interior k with the largest second difference of
/// log `values` (module docs); the first k when there are fewer than three. Values at or
/// below zero are clamped to a tiny fraction of the largest value before the logarithm.
///
/// # Panics
///
/// If `k` and `values` differ in length or are empty.
pub fn elbow_point(k: &[usize], values: &[f64]) -> usize {
    assert_eq!(k.len(), values.len(), "one value per k");
    assert!(!k.is_empty(), "an empty curve has no elbow");
    let top = values.iter().copied().fold(0.0, f64::max);
    let floor = (top * 1e-12).max(f64::MIN_POSITIVE);
    let logs: Vec<f64> = values.iter().map(|&v| v.max(floor).ln()).collect();
    let mut best = (k[0], f64::NEG_INFINITY);
    for i in 1..logs.len().saturating_sub(1) {
        let d2 = logs[i - 1] - 2.0 * logs[i] + logs[i + 1];
        if d2 > best.1 {
            best = (k[i], d2);
        }
    }
    best.0
}

/// The elbow curve: K-Means inertia for each k of `ks` (same parameters as `template`
/// apart from k), the data uploaded once; suggested k by [`elbow_point`].
///
/// Errors: those of [`check_k_range`]; [`Error::InvalidParameter`] when the template's
/// init is [`KMeansInit::Centroids`]; the errors of the fits.
pub fn elbow(
    gpu: &Gpu,
    x: &impl GpuInput,
    ks: RangeInclusive<usize>,
    template: &KMeans,
) -> Result<Curve> {
    let (n, d) = x.shape();
    check_k_range(&ks, n)?;
    kmeans_for(template, *ks.end())?.validate(n, d)?;
    let xg = x.on_gpu(gpu)?;
    let values = inertia_curve(gpu, &xg, &ks, template)?;
    let k: Vec<usize> = ks.collect();
    let suggested_k = elbow_point(&k, &values);
    Ok(Curve {
        criterion: Criterion::Elbow,
        k,
        values,
        suggested_k,
    })
}

/// The gap statistic for each k of `ks` with `n_refs` uniform reference sets drawn in the
/// bounding box of `x` by a ChaCha8 generator seeded with `seed` (module docs). Every fit
/// uses `template`'s parameters apart from k; the data and each reference set are uploaded
/// once.
///
/// Errors: those of [`check_k_range`]; [`Error::InvalidParameter`] for `n_refs` = 0 or a
/// template with given centroids; the errors of the uploads and fits.
pub fn gap_statistic(
    gpu: &Gpu,
    x: &Matrix<'_>,
    ks: RangeInclusive<usize>,
    template: &KMeans,
    n_refs: usize,
    seed: u64,
) -> Result<GapCurve> {
    let (n, d) = (x.n_rows(), x.n_features());
    check_k_range(&ks, n)?;
    Error::require_count("n_refs", n_refs)?;
    kmeans_for(template, *ks.end())?.validate(n, d)?;

    let xg = GpuMatrix::upload(gpu, x)?;
    let inertia = inertia_curve(gpu, &xg, &ks, template)?;
    drop(xg);
    // W_k reaches 0 once k covers every distinct row (all of them when the rows are
    // identical, a box of zero width then making every reference set 0 too): log 0 would turn
    // the gap into NaN or infinity. Dispersions are floored at a tiny fraction of the
    // largest, so such a curve is flat where it is degenerate and the rule picks the
    // smallest k there (k = 1 for identical rows).
    let floor = inertia_floor(&inertia);

    // Bounding box of the data, per feature.
    let mut lo = vec![f32::INFINITY; d];
    let mut hi = vec![f32::NEG_INFINITY; d];
    for i in 0..n {
        for (j, &v) in x.row(i).iter().enumerate() {
            lo[j] = lo[j].min(v);
            hi[j] = hi[j].max(v);
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let nk = inertia.len();
    let mut ref_logs = vec![Vec::with_capacity(n_refs); nk];
    let mut reference = vec![0f32; n * d];
    for _ in 0..n_refs {
        for (i, v) in reference.iter_mut().enumerate() {
            let j = i % d;
            let u: f64 = rng.random();
            *v = (lo[j] as f64 + (hi[j] as f64 - lo[j] as f64) * u) as f32;
        }
        let rg = GpuMatrix::upload(gpu, &Matrix::new(&reference, d)?)?;
        for (logs, w) in ref_logs
            .iter_mut()
            .zip(inertia_curve(gpu, &rg, &ks, template)?)
        {
            logs.push(log_dispersion(w, floor));
        }
    }

    let b = n_refs as f64;
    let log_w: Vec<f64> = inertia.iter().map(|&w| log_dispersion(w, floor)).collect();
    let ref_log_w: Vec<f64> = ref_logs.iter().map(|l| l.iter().sum::<f64>() / b).collect();
    let sd: Vec<f64> = ref_logs
        .iter()
        .zip(&ref_log_w)
        .map(|(l, m)| (l.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / b).sqrt())
        .collect();
    let s_k: Vec<f64> = sd.iter().map(|s| s * (1.0 + 1.0 / b).sqrt()).collect();
    let gap: Vec<f64> = ref_log_w.iter().zip(&log_w).map(|(r, l)| r - l).collect();
    let k: Vec<usize> = ks.collect();
    let suggested_k = (0..nk.saturating_sub(1))
        .find(|&i| gap[i] >= gap[i + 1] - s_k[i + 1])
        .map_or(k[nk - 1], |i| k[i]);
    Ok(GapCurve {
        k,
        inertia,
        log_w,
        ref_log_w,
        gap,
        sd,
        s_k,
        n_refs,
        suggested_k,
    })
}

/// The smallest dispersion [`gap_statistic`] takes the log of: 1e-12 of the largest W_k of
/// the data, and never below the smallest positive f64.
fn inertia_floor(inertia: &[f64]) -> f64 {
    let top = inertia.iter().copied().fold(0.0, f64::max);
    (top * 1e-12).max(f64::MIN_POSITIVE)
}

/// log max(W, floor): finite for every W >= 0.
fn log_dispersion(w: f64, floor: f64) -> f64 {
    w.max(floor).ln()
}

/// BIC or AIC (`criterion`) of a Gaussian mixture fitted for each k of `ks` (same
/// parameters as `template` apart from k), the data uploaded once; suggested k minimises the
/// criterion.
///
/// Errors: those of [`check_k_range`]; [`Error::InvalidParameter`] for a criterion other
/// than BIC or AIC or a template with [`GmmInit::Given`] parameters; the errors of the fits
/// and of the scoring.
pub fn gmm_criterion_curve(
    gpu: &Gpu,
    x: &impl GpuInput,
    ks: RangeInclusive<usize>,
    template: &GaussianMixture,
    criterion: Criterion,
) -> Result<Curve> {
    if !matches!(criterion, Criterion::Bic | Criterion::Aic) {
        return Err(Error::invalid(
            "criterion",
            format!("Gaussian mixtures are compared by bic or aic, not {criterion}"),
        ));
    }
    if matches!(template.init, GmmInit::Given(_)) {
        return Err(Error::invalid(
            "init",
            "given parameters fix k; use kmeans, kmeans++ or random for a range of k",
        ));
    }
    let (n, d) = x.shape();
    check_k_range(&ks, n)?;
    let with_k = |k| GaussianMixture {
        k,
        ..template.clone()
    };
    with_k(*ks.end()).validate(n, d)?;
    let xg = x.on_gpu(gpu)?;
    let values = ks
        .clone()
        .map(|k| {
            let model = with_k(k).fit(gpu, xg.as_ref())?;
            match criterion {
                Criterion::Bic => model.bic(gpu, xg.as_ref()),
                _ => model.aic(gpu, xg.as_ref()),
            }
        })
        .collect::<Result<Vec<f64>>>()?;
    let k: Vec<usize> = ks.collect();
    let best = (0..k.len()).fold(0, |b, i| if values[i] < values[b] { i } else { b });
    Ok(Curve {
        criterion,
        suggested_k: k[best],
        k,
        values,
    })
}

/// The explained-variance spectrum of a fitted PCA model.
pub fn pca_spectrum(model: &PcaModel) -> Spectrum {
    let ratio = model.explained_variance_ratio().to_vec();
    let cumulative_ratio = ratio
        .iter()
        .scan(0.0, |acc, r| {
            *acc += r;
            Some(*acc)
        })
        .collect();
    Spectrum {
        component: (1..=ratio.len()).collect(),
        explained_variance: model.explained_variance().to_vec(),
        explained_variance_ratio: ratio,
        cumulative_ratio,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criterion_names_round_trip() {
        for c in Criterion::ALL {
            assert_eq!(c.name().parse::<Criterion>().unwrap(), c);
            assert_eq!(
                c.to_string().to_uppercase().parse::<Criterion>().unwrap(),
                c
            );
        }
        let e = "silhouette".parse::<Criterion>().unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidParameter {
                    name: "criterion",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn elbow_point_prefers_the_sharpest_relative_bend() {
        let k = [1, 2, 3, 4, 5, 6];
        // Raw second differences would pick k = 2; on a log scale the bend is at 4.
        let w = [1000.0, 500.0, 200.0, 10.0, 9.0, 8.5];
        assert_eq!(elbow_point(&k, &w), 4);
        assert_eq!(elbow_point(&k[..2], &w[..2]), 1);
        assert_eq!(elbow_point(&[3], &[0.0]), 3);
    }

    #[test]
    fn zero_dispersions_have_a_finite_log() {
        // Identical rows: every W_k is 0, for the data and the references alike.
        let floor = inertia_floor(&[0.0, 0.0, 0.0]);
        assert!(floor > 0.0 && log_dispersion(0.0, floor).is_finite());
        // W_k reaches 0 at k = 3 for three distinct rows: floored far below the others.
        let floor = inertia_floor(&[8.0, 2.0, 0.0]);
        assert_eq!(floor, 8e-12);
        assert!(log_dispersion(0.0, floor) < log_dispersion(2.0, floor));
    }

    #[test]
    fn k_range_checks() {
        assert!(check_k_range(&(1..=5), 5).is_ok());
        assert!(check_k_range(&(0..=5), 5).is_err());
        assert!(check_k_range(&RangeInclusive::new(4, 3), 5).is_err());
        assert!(matches!(
            check_k_range(&(1..=6), 5),
            Err(Error::TooFewSamples { k: 6, n: 5 })
        ));
    }
}
