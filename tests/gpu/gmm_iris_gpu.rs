//! Gaussian mixtures on the GPU fitted to the bundled Iris data (feature `datasets`): the
//! reference's fit and criteria, extreme points, bad input, device-resident and offset
//! input, empty components.
#![cfg(feature = "datasets")]

use crate::common::{gpu, to_f64};
use wgpu_unsupervised::gmm::InitialParameters;
use wgpu_unsupervised::reference::gmm as refg;
use wgpu_unsupervised::{
    datasets, CovarianceType, Error, GaussianMixture, GaussianMixtureModel, GmmInit, GpuMatrix,
    Matrix,
};

const TYPES: [CovarianceType; 4] = CovarianceType::ALL;

#[test]
fn iris_full_k3_reaches_the_reference() {
    let gpu = gpu();
    let (rows, _) = datasets::iris();
    let x = Matrix::new(&rows, 4).unwrap();
    for seed in [0, 5] {
        let params = GaussianMixture::new(3).n_init(3).seed(seed);
        let g = params.fit(&gpu, &x).unwrap();
        let r = refg::fit(&to_f64(&rows), 4, &params).unwrap();
        assert!(g.converged() && r.converged);
        // Both start from their K-Means; the fits must end at the same optimum.
        let rel = (g.lower_bound() - r.lower_bound).abs() / r.lower_bound.abs();
        assert!(
            rel < 1e-3,
            "seed {seed}: GPU {} vs reference {}",
            g.lower_bound(),
            r.lower_bound
        );
        // scikit-learn's value for this fit (GaussianMixture(3, random_state=0) on Iris):
        // the mean log-likelihood is about −1.20.
        assert!(g.lower_bound() > -1.25, "{}", g.lower_bound());
        let score = g.score(&gpu, &x).unwrap();
        assert!((score - g.lower_bound()).abs() < 0.02);
        let bic = g.bic(&gpu, &x).unwrap();
        let want = refg::bic(&refg::ReferenceGmm::from_model(&g), &to_f64(&rows), 4);
        assert!(
            (bic - want).abs() < 1e-4 * want.abs(),
            "BIC {bic} vs {want}"
        );
        let aic = g.aic(&gpu, &x).unwrap();
        let want = refg::aic(&refg::ReferenceGmm::from_model(&g), &to_f64(&rows), 4);
        assert!(
            (aic - want).abs() < 1e-4 * want.abs(),
            "AIC {aic} vs {want}"
        );
    }
}

#[test]
fn far_away_points_give_finite_results() {
    let gpu = gpu();
    let (rows, _) = datasets::iris();
    let x = Matrix::new(&rows, 4).unwrap();
    for t in TYPES {
        let m = GaussianMixture::new(3).covariance(t).fit(&gpu, &x).unwrap();
        let far = [
            1e5f32, -1e5, 1e5, 1e5, 3e4, 3e4, -3e4, 2e4, 6.0, 3.0, 4.0, 1.0,
        ];
        let xf = Matrix::new(&far, 4).unwrap();
        let log_p = m.score_samples(&gpu, &xf).unwrap();
        assert!(log_p.iter().all(|v| v.is_finite()), "{t:?}: {log_p:?}");
        assert!(log_p[0] < -1e6 && log_p[2] > -50.0);
        let resp = m.predict_proba(&gpu, &xf).unwrap();
        for row in resp.chunks_exact(3) {
            assert!(row.iter().all(|v| v.is_finite() && *v >= 0.0));
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        }
        let want = refg::predict(&refg::ReferenceGmm::from_model(&m), &to_f64(&far), 4);
        assert_eq!(m.predict(&gpu, &xf).unwrap(), want);
    }
}

#[test]
fn bad_inputs_give_errors() {
    let gpu = gpu();
    let (rows, _) = datasets::iris();
    let x = Matrix::new(&rows, 4).unwrap();

    // A constant feature makes every covariance singular without regularisation.
    let mut flat = rows.clone();
    flat.iter_mut().skip(3).step_by(4).for_each(|v| *v = 1.0);
    let err = GaussianMixture::new(2)
        .reg_covar(0.0)
        .fit(&gpu, &Matrix::new(&flat, 4).unwrap())
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("reg_covar") && text.contains("component"),
        "{text}"
    );
    // The default regularisation keeps it positive definite.
    assert!(GaussianMixture::new(2)
        .fit(&gpu, &Matrix::new(&flat, 4).unwrap())
        .is_ok());

    assert!(matches!(
        GaussianMixture::new(151).fit(&gpu, &x),
        Err(Error::TooFewSamples { k: 151, n: 150 })
    ));
    assert!(matches!(
        GaussianMixture::new(0).fit(&gpu, &x),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        GaussianMixture::new(2).reg_covar(-1.0).fit(&gpu, &x),
        Err(Error::InvalidParameter { .. })
    ));
    let bad_init = InitialParameters {
        weights: vec![0.5, 0.5],
        means: vec![f64::NAN; 8],
        precisions: vec![1.0; 32],
    };
    assert!(GaussianMixture::new(2)
        .init(GmmInit::Given(bad_init))
        .fit(&gpu, &x)
        .is_err());
    let not_pd = InitialParameters {
        weights: vec![0.5, 0.5],
        means: vec![0.0; 8],
        precisions: vec![-1.0; 8],
    };
    let err = GaussianMixture::new(2)
        .covariance(CovarianceType::Diag)
        .init(GmmInit::Given(not_pd))
        .fit(&gpu, &x)
        .unwrap_err();
    assert!(err.to_string().contains("component 0"), "{err}");

    let m = GaussianMixture::new(2).fit(&gpu, &x).unwrap();
    let three = Matrix::new(&rows[..30], 3).unwrap();
    assert!(matches!(
        m.predict(&gpu, &three),
        Err(Error::FeatureMismatch {
            expected: 4,
            found: 3
        })
    ));
    let err = GaussianMixtureModel::from_parameters(
        CovarianceType::Full,
        vec![1.0],
        vec![0.0, 0.0],
        vec![1.0, 2.0, 2.0, 1.0],
    )
    .unwrap_err();
    assert!(err.to_string().contains("component 0"), "{err}");
    assert!(GaussianMixtureModel::from_parameters(
        CovarianceType::Diag,
        vec![0.7, 0.7],
        vec![0.0; 4],
        vec![1.0; 4],
    )
    .is_err());
    assert!(matches!(
        Matrix::new(&[1.0, f32::NAN], 2),
        Err(Error::NonFinite { .. })
    ));

    // The N x K responsibilities must fit the memory budget: a clear error, not a crash.
    let tight = crate::common::gpu();
    let xg = GpuMatrix::upload(&tight, &x).unwrap();
    tight.set_memory_budget(150 * 3 * 4 - 1);
    assert!(matches!(
        GaussianMixture::new(3).fit(&tight, &xg),
        Err(Error::OutOfDeviceMemory { .. })
    ));
}

#[test]
fn gpu_input_fits_like_host_input_and_models_are_send_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<GaussianMixtureModel>();
    assert_send_sync::<GaussianMixture>();
    let gpu = gpu();
    let (rows, _) = datasets::iris();
    let x = Matrix::new(&rows, 4).unwrap();
    let xg = GpuMatrix::upload(&gpu, &x).unwrap();
    let params = GaussianMixture::new(3)
        .covariance(CovarianceType::Tied)
        .seed(4);
    assert_eq!(
        params.fit(&gpu, &x).unwrap(),
        params.fit(&gpu, &xg).unwrap()
    );
}

#[test]
fn a_callers_buffer_at_an_offset_fits_like_host_data() {
    use wgpu::util::DeviceExt;
    let gpu = gpu();
    let (rows, _) = datasets::iris();
    // 257 padding values before the data: the view starts off the binding alignment.
    let mut padded = vec![7.0f32; 257];
    padded.extend(&rows);
    let buffer = gpu
        .device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("caller's data"),
            contents: bytemuck::cast_slice(&padded),
            usage: wgpu::BufferUsages::STORAGE,
        });
    let xg = GpuMatrix::from_buffer(&gpu, &buffer, 257 * 4, 150, 4).unwrap();
    let x = Matrix::new(&rows, 4).unwrap();
    for t in TYPES {
        let params = GaussianMixture::new(3).covariance(t).seed(1);
        let host = params.fit(&gpu, &x).unwrap();
        let view = params.fit(&gpu, &xg).unwrap();
        assert_eq!(host, view, "{t:?}");
        let p = view.predict_proba(&gpu, &xg).unwrap();
        assert_eq!(p, host.predict_proba(&gpu, &x).unwrap());
    }
}

#[test]
fn a_component_without_weight_keeps_finite_parameters() {
    let gpu = gpu();
    let (rows, _) = datasets::iris();
    let x = Matrix::new(&rows, 4).unwrap();
    for t in [CovarianceType::Full, CovarianceType::Diag] {
        // Component 2 starts far from every point, so it gets no responsibility at all.
        let mut means = vec![5.0, 3.4, 1.5, 0.2, 6.3, 2.9, 5.0, 1.7];
        means.extend([500.0, 500.0, 500.0, 500.0]);
        let precisions = match t {
            CovarianceType::Full => (0..3)
                .flat_map(|_| (0..16).map(|e| if e % 5 == 0 { 4.0 } else { 0.0 }))
                .collect(),
            _ => vec![4.0; 12],
        };
        let init = InitialParameters {
            weights: vec![0.4, 0.4, 0.2],
            means,
            precisions,
        };
        let m = GaussianMixture::new(3)
            .covariance(t)
            .init(GmmInit::Given(init))
            .fit(&gpu, &x)
            .unwrap();
        let r = refg::ReferenceGmm::from_model(&m);
        assert!(m.weights()[2] < 1e-12, "{t:?}: {:?}", m.weights());
        assert!(m.weights().iter().all(|w| w.is_finite() && *w > 0.0));
        assert!(m.means().iter().all(|v| v.is_finite()));
        // Its covariance is reg_covar times the identity.
        let cov2 = match t {
            CovarianceType::Full => m.covariances()[32..48].to_vec(),
            _ => m.covariances()[8..12].to_vec(),
        };
        let diag_only = |e: usize| t != CovarianceType::Full || e.is_multiple_of(5);
        for (e, v) in cov2.iter().enumerate() {
            let want = if diag_only(e) { 1e-6 } else { 0.0 };
            assert!((v - want).abs() < 1e-9, "{t:?}: {cov2:?}");
        }
        assert!(m.lower_bound().is_finite());
        assert!(m.labels().iter().all(|&l| l < 2));
        assert!(r.precisions_cholesky.iter().all(|v| v.is_finite()));
        // Without regularisation that component cannot be evaluated: a clear error.
        let err = GaussianMixture::new(3)
            .covariance(t)
            .reg_covar(0.0)
            .init(m.params().init.clone())
            .fit(&gpu, &x)
            .unwrap_err();
        assert!(err.to_string().contains("component 2"), "{err}");
    }
}
