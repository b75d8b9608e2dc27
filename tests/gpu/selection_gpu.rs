//! Model selection on the GPU (`selection`): the gap statistic, the elbow curve, BIC/AIC
//! curves of Gaussian mixtures and the PCA spectrum, on small well-separated data (lavapipe
//! is a software rasterizer).

use crate::common::gpu;
use wgpu_unsupervised::selection::{self, Criterion};
use wgpu_unsupervised::{
    datasets, CovarianceType, Error, GaussianMixture, GpuMatrix, KMeans, Matrix, Pca,
};

/// `n` x 2 points around `centers` centres spread on a circle of radius 8 (well separated:
/// neighbouring centres are at least 8·2 sin(π/centers) apart), standard deviation 0.5.
fn ring_blobs(n: usize, centers: usize, seed: u64) -> Vec<f32> {
    let (noise, labels, _) = datasets::make_blobs(n, 2, centers, 0.5, (0.0, 0.0), seed).unwrap();
    noise
        .chunks(2)
        .zip(&labels)
        .flat_map(|(p, &l)| {
            let angle = std::f32::consts::TAU * l as f32 / centers as f32;
            [p[0] + 8.0 * angle.cos(), p[1] + 8.0 * angle.sin()]
        })
        .collect()
}

#[test]
fn gap_statistic_picks_four_on_four_blobs() {
    let gpu = gpu();
    let rows = ring_blobs(800, 4, 3);
    let x = Matrix::new(&rows, 2).unwrap();
    let template = KMeans::new(1).n_init(2).seed(5);
    let gap = selection::gap_statistic(&gpu, &x, 1..=8, &template, 5, 11).unwrap();
    assert_eq!(gap.k, (1..=8).collect::<Vec<_>>());
    assert_eq!(gap.n_refs, 5);
    for v in [
        &gap.inertia,
        &gap.log_w,
        &gap.ref_log_w,
        &gap.gap,
        &gap.sd,
        &gap.s_k,
    ] {
        assert_eq!(v.len(), 8);
        assert!(v.iter().all(|x| x.is_finite()), "{v:?}");
    }
    for i in 0..8 {
        assert!((gap.log_w[i] - gap.inertia[i].ln()).abs() < 1e-12);
        assert!((gap.gap[i] - (gap.ref_log_w[i] - gap.log_w[i])).abs() < 1e-12);
        assert!((gap.s_k[i] - gap.sd[i] * (1.2f64).sqrt()).abs() < 1e-12);
    }
    assert_eq!(gap.suggested_k, 4, "{gap:#?}");
    // The rule: 4 is the first k with Gap(k) >= Gap(k+1) - s_{k+1}.
    for i in 0..3 {
        assert!(gap.gap[i] < gap.gap[i + 1] - gap.s_k[i + 1], "{gap:#?}");
    }
    assert!(gap.gap[3] >= gap.gap[4] - gap.s_k[4]);

    // Same seeds, same curve.
    let again = selection::gap_statistic(&gpu, &x, 3..=5, &template, 5, 11).unwrap();
    assert_eq!(again.k, vec![3, 4, 5]);
    assert_eq!(again.inertia, gap.inertia[2..5].to_vec());
}

#[test]
fn elbow_curve_decreases_and_bends_at_the_true_k() {
    let gpu = gpu();
    let rows = ring_blobs(600, 4, 8);
    let x = Matrix::new(&rows, 2).unwrap();
    let xg = GpuMatrix::upload(&gpu, &x).unwrap();
    let curve = selection::elbow(&gpu, &xg, 1..=7, &KMeans::new(1).n_init(3).seed(1)).unwrap();
    assert_eq!(curve.criterion, Criterion::Elbow);
    assert_eq!(curve.k, (1..=7).collect::<Vec<_>>());
    for w in curve.values.windows(2) {
        assert!(w[1] <= w[0] * (1.0 + 1e-6), "{:?}", curve.values);
    }
    assert_eq!(curve.suggested_k, 4, "{:?}", curve.values);
    // Each value is the inertia of a fit with the template's parameters.
    let three = KMeans::new(3).n_init(3).seed(1).fit(&gpu, &xg).unwrap();
    assert_eq!(curve.values[2], three.inertia());
}

#[test]
fn bic_picks_the_true_k_of_a_well_separated_mixture() {
    let gpu = gpu();
    let rows = ring_blobs(600, 3, 21);
    let x = Matrix::new(&rows, 2).unwrap();
    let template = GaussianMixture::new(1)
        .covariance(CovarianceType::Full)
        .seed(2);
    let bic = selection::gmm_criterion_curve(&gpu, &x, 1..=6, &template, Criterion::Bic).unwrap();
    assert_eq!(bic.criterion, Criterion::Bic);
    assert_eq!(bic.k, (1..=6).collect::<Vec<_>>());
    assert_eq!(bic.suggested_k, 3, "{:?}", bic.values);
    let best = bic.values.iter().copied().fold(f64::INFINITY, f64::min);
    assert_eq!(bic.values[2], best);

    let aic = selection::gmm_criterion_curve(&gpu, &x, 2..=4, &template, Criterion::Aic).unwrap();
    assert_eq!(aic.k, vec![2, 3, 4]);
    assert_eq!(aic.suggested_k, 3, "{:?}", aic.values);
    // AIC penalises parameters less than BIC once log N > 2.
    for (a, b) in aic.values.iter().zip(&bic.values[1..4]) {
        assert!(a < b, "AIC {a} vs BIC {b}");
    }
}

#[test]
fn pca_spectrum_cumulates_to_one() {
    let gpu = gpu();
    let (rows, _, _) = datasets::make_blobs(300, 4, 3, 1.0, (-4.0, 4.0), 5).unwrap();
    let x = Matrix::new(&rows, 4).unwrap();
    let model = Pca::new(wgpu_unsupervised::Components::Count(4))
        .fit(&gpu, &x)
        .unwrap();
    let s = selection::pca_spectrum(&model);
    assert_eq!(s.component, vec![1, 2, 3, 4]);
    assert_eq!(s.explained_variance, model.explained_variance());
    assert_eq!(s.explained_variance_ratio, model.explained_variance_ratio());
    for w in s.cumulative_ratio.windows(2) {
        assert!(w[1] >= w[0]);
    }
    assert!((s.cumulative_ratio[3] - 1.0).abs() < 1e-4, "{s:?}");
}

#[test]
fn invalid_ranges_and_parameters_are_refused() {
    let gpu = gpu();
    let rows = ring_blobs(20, 2, 1);
    let x = Matrix::new(&rows, 2).unwrap();
    let km = KMeans::new(1);
    assert!(matches!(
        selection::elbow(&gpu, &x, std::ops::RangeInclusive::new(4, 3), &km),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        selection::elbow(&gpu, &x, 0..=3, &km),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        selection::gap_statistic(&gpu, &x, 1..=21, &km, 2, 0),
        Err(Error::TooFewSamples { k: 21, n: 20 })
    ));
    assert!(matches!(
        selection::gap_statistic(&gpu, &x, 1..=3, &km, 0, 0),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        selection::gmm_criterion_curve(&gpu, &x, 1..=3, &GaussianMixture::new(1), Criterion::Gap),
        Err(Error::InvalidParameter { .. })
    ));
}
