//! `ndarray` arrays as data (every layout, f32 and f64) give the models a `Matrix` gives, and
//! the models' parameters come back as arrays of the right shapes.
#![cfg(feature = "ndarray")]

use crate::common::{gpu, random_matrix};
use ndarray::{Array2, ShapeBuilder};
use wgpu_unsupervised::{
    datasets, Components, CovarianceType, Error, GaussianMixture, KMeans, Matrix, Pca,
};

#[test]
fn every_layout_and_f64_fit_like_the_matrix() {
    let gpu = gpu();
    for (n, d, seed) in [(300, 3, 1), (517, 6, 2)] {
        let (x, _, _) = datasets::make_blobs(n, d, 4, 1.0, (-8.0, 8.0), seed).unwrap();
        let m = Matrix::new(&x, d).unwrap();
        let params = KMeans::new(4).seed(seed);
        let expected = params.fit(&gpu, &m).unwrap();

        let standard = Array2::from_shape_vec((n, d), x.clone()).unwrap();
        // The same values in column-major memory: a non-standard layout.
        let mut fortran = Array2::<f32>::zeros((n, d).f());
        fortran.assign(&standard);
        assert!(fortran.as_slice().is_none());
        let wide = f64_copy(&standard);
        for model in [
            params.fit(&gpu, &standard.view()).unwrap(),
            params.fit(&gpu, &standard).unwrap(),
            params.fit(&gpu, &fortran.view()).unwrap(),
        ] {
            // Every layout of f32 data gives the same bits.
            assert_eq!(model, expected);
        }
        let mut wide_fortran = Array2::<f64>::zeros((n, d).f());
        wide_fortran.assign(&wide);
        for model in [
            params.fit(&gpu, &wide.view()).unwrap(),
            params.fit(&gpu, &wide).unwrap(),
            params.fit(&gpu, &wide_fortran.view()).unwrap(),
        ] {
            // f64 data are centred in f64 first (module `origin`): the same clustering, the
            // centroids within f32 rounding, and the origin kept.
            assert_eq!(model.labels(), expected.labels());
            let c: Vec<f64> = expected.centroids().iter().map(|&v| v as f64).collect();
            let err = crate::common::max_rel_err(&model.centroids_f64(), &c, 1.0);
            assert!(err < 1e-5, "centroids off by {err:e}");
            assert_eq!(model.origin().unwrap().len(), d);
            assert_eq!(
                model.predict(&gpu, &wide_fortran).unwrap(),
                expected.labels()
            );
        }
        let c = expected.centroids_array();
        assert_eq!(c.dim(), (4, d));
        assert_eq!(c.as_slice().unwrap(), expected.centroids());
        assert_eq!(
            expected.predict(&gpu, &fortran.view()).unwrap(),
            expected.labels()
        );

        let pca = Pca::new(Components::Count(2))
            .fit(&gpu, &standard.view())
            .unwrap();
        assert_eq!(pca, Pca::new(Components::Count(2)).fit(&gpu, &m).unwrap());
        let pca64 = Pca::new(Components::Count(2)).fit(&gpu, &wide).unwrap();
        let err =
            crate::common::max_rel_err(pca64.explained_variance(), pca.explained_variance(), 1e-6);
        assert!(err < 1e-5, "PCA of f64 data: variances off by {err:e}");
        assert_eq!(pca.components_array().dim(), (2, d));
        assert_eq!(
            pca.components_array().row(1).to_vec(),
            pca.components()[d..2 * d]
        );
        assert_eq!(pca.mean_array().len(), d);
    }
}

fn f64_copy(a: &Array2<f32>) -> Array2<f64> {
    a.mapv(|v| v as f64)
}

#[test]
fn mixture_parameters_have_scikit_learn_shapes() {
    let gpu = gpu();
    let x = random_matrix(200, 3, 5, -1.0, 1.0);
    let a = Array2::from_shape_vec((200, 3), x).unwrap();
    for (cov, shape) in [
        (CovarianceType::Full, vec![2, 3, 3]),
        (CovarianceType::Tied, vec![3, 3]),
        (CovarianceType::Diag, vec![2, 3]),
        (CovarianceType::Spherical, vec![2]),
    ] {
        let model = GaussianMixture::new(2)
            .covariance(cov)
            .fit(&gpu, &a.view())
            .unwrap();
        assert_eq!(model.covariances_array().shape(), &shape[..], "{cov:?}");
        assert_eq!(
            model
                .covariances_array()
                .iter()
                .copied()
                .collect::<Vec<_>>(),
            model.covariances()
        );
        assert_eq!(model.means_array().dim(), (2, 3));
        assert!((model.weights_array().sum() - 1.0).abs() < 1e-9);
    }
}

#[test]
fn bad_values_in_arrays_are_errors() {
    let gpu = gpu();
    let mut a = Array2::from_shape_vec((20, 2), random_matrix(20, 2, 6, 0.0, 1.0)).unwrap();
    a[[7, 1]] = f32::NAN;
    assert!(matches!(
        KMeans::new(2).fit(&gpu, &a.view()),
        Err(Error::NonFinite { row: 7, col: 1, .. })
    ));
    let mut b = f64_copy(&a);
    b[[7, 1]] = 0.5;
    b[[3, 0]] = 1e300;
    // A spread f32 cannot hold: refused with the reason, not as a non-finite value.
    match KMeans::new(2).fit(&gpu, &b.view()) {
        Err(e @ Error::Float32Range { .. }) => assert!(e.to_string().contains("float32"), "{e}"),
        other => panic!("expected an out-of-range error, got {other:?}"),
    }
    b[[3, 0]] = f64::NAN;
    assert!(matches!(
        KMeans::new(2).fit(&gpu, &b.view()),
        Err(Error::NonFinite { row: 3, col: 0, .. })
    ));
    let empty = Array2::<f32>::zeros((0, 3));
    assert!(KMeans::new(1).fit(&gpu, &empty.view()).is_err());
}
