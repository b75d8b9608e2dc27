//! Gaussian mixtures, PCA and the silhouette on data multiplied by 1e-30 and 1e20: the
//! answers of the unscaled data in the caller's units, up to f32 rounding (issue 22).

use crate::common::{gpu, max_rel_err, rel_err_at, times, to_f64};
use wgpu_unsupervised::pca::covariance;
use wgpu_unsupervised::{
    datasets, metrics, Components, CovarianceType, GaussianMixture, GpuMatrix, IncrementalPca,
    Matrix, Pca, PcaMoments, PcaSolver, RowChunks,
};

const FACTORS: [f32; 3] = [1e-30, 1e20, 0.25];

#[test]
fn mixtures_do_not_depend_on_the_scale() {
    let gpu = gpu();
    let (n, d, k) = (600, 3, 3);
    let (x, truth, _) = datasets::make_blobs(n, d, k, 0.6, (-8.0, 8.0), 11).unwrap();
    let x0 = Matrix::new(&x, d).unwrap();
    for (i, t) in [
        CovarianceType::Full,
        CovarianceType::Tied,
        CovarianceType::Diag,
        CovarianceType::Spherical,
    ]
    .into_iter()
    .enumerate()
    {
        let params = |c: f32| {
            GaussianMixture::new(k)
                .covariance(t)
                .seed(i as u64)
                .reg_covar(1e-6 * (c as f64).powi(2))
        };
        let base = params(1.0).fit(&gpu, &x0).unwrap();
        assert_eq!(
            metrics::adjusted_rand_index(base.labels(), &truth).unwrap(),
            1.0
        );
        for c in FACTORS {
            let xc = times(&x, c);
            let m = Matrix::new(&xc, d).unwrap();
            let device = GpuMatrix::upload(&gpu, &m).unwrap();
            for (how, model) in [
                ("host", params(c).fit(&gpu, &m).unwrap()),
                ("device", params(c).fit(&gpu, &device).unwrap()),
            ] {
                let what = format!("{t:?} {how} x{c:e}");
                assert_eq!(model.labels(), base.labels(), "{what}: labels");
                assert_eq!(model.n_iter(), base.n_iter(), "{what}: iterations");
                let err = rel_err_at(model.means(), base.means(), c, 1);
                assert!(err < 1e-4, "{what}: means off by {err:e}");
                let err = rel_err_at(model.covariances(), base.covariances(), c, 2);
                assert!(err < 1e-3, "{what}: covariances off by {err:e}");
                // log p(c·x) = log p(x) − D ln c.
                let shift = d as f64 * (c as f64).ln();
                let lb = model.lower_bound() + shift;
                assert!(
                    (lb - base.lower_bound()).abs() < 1e-3,
                    "{what}: lower bound {lb}"
                );
                assert_eq!(model.predict(&gpu, &m).unwrap(), base.labels(), "{what}");
                let s = model.score(&gpu, &m).unwrap() + shift;
                let s0 = base.score(&gpu, &x0).unwrap();
                assert!((s - s0).abs() < 1e-3, "{what}: score {s} against {s0}");
                assert!(model.params().reg_covar == params(c).reg_covar, "{what}");
            }
        }
    }
}

#[test]
fn pca_does_not_depend_on_the_scale() {
    let gpu = gpu();
    let (n, d) = (500, 6);
    let (x, _, _) = datasets::make_blobs(n, d, 4, 1.5, (-5.0, 5.0), 3).unwrap();
    let x0 = Matrix::new(&x, d).unwrap();
    for solver in [PcaSolver::Full, PcaSolver::Power, PcaSolver::MatrixFree] {
        let params = Pca::new(Components::Count(3)).solver(solver).seed(2);
        let base = params.fit(&gpu, &x0).unwrap();
        let white = params.clone().whiten(true);
        let white_base = white.fit(&gpu, &x0).unwrap().transform(&gpu, &x0).unwrap();
        let z0 = to_f64(&base.transform(&gpu, &x0).unwrap());
        for c in FACTORS {
            let what = format!("{solver:?} x{c:e}");
            let xc = times(&x, c);
            let m = Matrix::new(&xc, d).unwrap();
            let chunks: Vec<&[f32]> = xc.chunks(77 * d).collect();
            let source = RowChunks::new(n, d, || chunks.iter().copied());
            let device = GpuMatrix::upload(&gpu, &m).unwrap();
            for (how, model) in [
                ("host", params.fit(&gpu, &m).unwrap()),
                ("device", params.fit(&gpu, &device).unwrap()),
                ("source", params.fit_source(&gpu, &source).unwrap()),
            ] {
                let err = rel_err_at(model.explained_variance(), base.explained_variance(), c, 2);
                assert!(err < 1e-4, "{what} {how}: variances off by {err:e}");
                let ratio = max_rel_err(
                    model.explained_variance_ratio(),
                    base.explained_variance_ratio(),
                    1e-9,
                );
                assert!(ratio < 1e-4, "{what} {how}: ratios off by {ratio:e}");
                assert!(model.explained_variance_ratio()[0] > 0.1, "{what} {how}");
                let err = rel_err_at(model.mean(), base.mean(), c, 1);
                assert!(err < 1e-4, "{what} {how}: mean off by {err:e}");
                let err = max_rel_err(model.components(), base.components(), 1e-3);
                assert!(err < 1e-3, "{what} {how}: components off by {err:e}");
                let z = to_f64(&model.transform(&gpu, &m).unwrap());
                let err = rel_err_at(&z, &z0, c, 1);
                assert!(err < 1e-3, "{what} {how}: projections off by {err:e}");
            }
            let zw = white.fit(&gpu, &m).unwrap().transform(&gpu, &m).unwrap();
            let err = max_rel_err(&to_f64(&zw), &to_f64(&white_base), 1e-3);
            assert!(err < 1e-3, "{what}: whitened projections off by {err:e}");
        }
    }
}

#[test]
fn moments_and_covariance_do_not_depend_on_the_scale() {
    let gpu = gpu();
    let (n, d) = (400, 5);
    let (x, _, _) = datasets::make_blobs(n, d, 3, 1.0, (-4.0, 4.0), 9).unwrap();
    let x0 = Matrix::new(&x, d).unwrap();
    let s0 = covariance(&gpu, &x0, 1).unwrap();
    let params = Pca::new(Components::Count(2)).solver(PcaSolver::Power);
    let base = params.fit(&gpu, &x0).unwrap();
    for c in FACTORS {
        let xc = times(&x, c);
        let m = Matrix::new(&xc, d).unwrap();
        let device = GpuMatrix::upload(&gpu, &m).unwrap();
        let s = covariance(&gpu, &device, 1).unwrap();
        let err = rel_err_at(&s, &s0, c, 2);
        assert!(err < 1e-4, "x{c:e}: covariance off by {err:e}");

        let mut moments =
            PcaMoments::of(&gpu, &Matrix::new(&xc[..200 * d], d).unwrap(), true).unwrap();
        moments
            .merge(&PcaMoments::of(&gpu, &Matrix::new(&xc[200 * d..], d).unwrap(), true).unwrap())
            .unwrap();
        let mut incremental = IncrementalPca::new(params.clone());
        for rows in xc.chunks(150 * d) {
            incremental
                .partial_fit(&gpu, &Matrix::new(rows, d).unwrap())
                .unwrap();
        }
        for (how, model) in [
            ("moments", params.fit_moments(&gpu, &moments).unwrap()),
            ("incremental", incremental.model(&gpu).unwrap()),
        ] {
            let err = rel_err_at(model.explained_variance(), base.explained_variance(), c, 2);
            assert!(err < 1e-4, "x{c:e} {how}: variances off by {err:e}");
        }
    }
}

#[test]
fn the_silhouette_does_not_depend_on_the_scale() {
    // Issue 22: two blobs scaled by 1e-30 gave a silhouette of 0.0 where the truth is 0.88.
    let gpu = gpu();
    let (x, labels, _) = datasets::make_blobs(100, 2, 2, 1.0, (-10.0, 10.0), 5).unwrap();
    let s0 = metrics::silhouette(&gpu, &Matrix::new(&x, 2).unwrap(), &labels, None, 0)
        .unwrap()
        .score;
    assert!(s0 > 0.5, "{s0}");
    for c in FACTORS {
        let xc = times(&x, c);
        let m = Matrix::new(&xc, 2).unwrap();
        let s = metrics::silhouette(&gpu, &m, &labels, None, 0)
            .unwrap()
            .score;
        assert!((s - s0).abs() < 1e-5, "x{c:e}: {s} against {s0}");
        let ch = metrics::calinski_harabasz(&m, &labels).unwrap();
        let ch0 = metrics::calinski_harabasz(&Matrix::new(&x, 2).unwrap(), &labels).unwrap();
        assert!(
            (ch / ch0 - 1.0).abs() < 1e-5,
            "x{c:e}: CH {ch} against {ch0}"
        );
    }
}
