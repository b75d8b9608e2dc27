//! PCA on the GPU held against the f64 CPU reference (`reference::pca`).

use crate::common::pca::{spectrum_data, subspace_angle};
use crate::common::{gpu, max_rel_err, random_matrix, to_f64};
use wgpu_unsupervised::reference::pca as refp;
use wgpu_unsupervised::{pca, Components, Error, GpuMatrix, Matrix, Pca, PcaSolver};

#[test]
fn covariance_matches_reference_even_far_from_origin() {
    let gpu = gpu();
    for (seed, offset) in [(1u64, 0.0f32), (2, 1e4), (3, -3e3)] {
        let (n, d) = (3001, 37);
        let x: Vec<f32> = random_matrix(n, d, seed, -1.0, 1.0)
            .into_iter()
            .map(|v| v + offset)
            .collect();
        let s = pca::covariance(&gpu, &Matrix::new(&x, d).unwrap(), 1).unwrap();
        let x64 = to_f64(&x);
        let mean = refp::column_means(&x64, d);
        let want = refp::covariance(&x64, d, Some(&mean), 1);
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = s
            .iter()
            .zip(&want)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
            / scale;
        assert!(err <= 1e-5, "offset {offset}: covariance error {err:e}");
    }
}

#[test]
fn every_solver_matches_reference_eigenpairs() {
    let gpu = gpu();
    let scales = [
        9.0, 7.0, 5.5, 4.0, 3.0, 2.2, 1.6, 1.2, 0.9, 0.7, 0.5, 0.4, 0.3, 0.25, 0.2, 0.15, 0.1,
        0.08, 0.06, 0.05,
    ];
    let d = scales.len();
    for seed in [5u64, 6] {
        let x = spectrum_data(2000, &scales, seed, 50.0);
        let m = Matrix::new(&x, d).unwrap();
        let want = refp::fit(&to_f64(&x), d, &Pca::new(Components::Count(5))).unwrap();
        for solver in [PcaSolver::Full, PcaSolver::Power, PcaSolver::MatrixFree] {
            let params = Pca::new(Components::Count(5)).solver(solver).seed(seed);
            let model = params.fit(&gpu, &m).unwrap();
            assert_eq!(model.solver(), solver);
            let err = max_rel_err(model.explained_variance(), &want.explained_variance, 0.0);
            assert!(
                err < 1e-4,
                "{solver:?} seed {seed}: eigenvalue error {err:e}"
            );
            let angle = subspace_angle(model.components(), &want.components, 5, d);
            assert!(
                angle < 1e-3,
                "{solver:?} seed {seed}: subspace angle {angle:e}"
            );
            // Same sign convention: each component matches its reference twin directly.
            for i in 0..5 {
                let dot: f64 = (0..d)
                    .map(|j| model.components()[i * d + j] * want.components[i * d + j])
                    .sum();
                assert!(dot > 0.999, "{solver:?}: component {i} cos {dot}");
            }
            let err = max_rel_err(
                model.explained_variance_ratio(),
                &want.explained_variance_ratio,
                0.0,
            );
            assert!(err < 1e-4, "{solver:?}: ratio error {err:e}");
            assert!(
                (model.noise_variance() - want.noise_variance).abs() <= 1e-4 * want.noise_variance
            );
        }
    }
}

#[test]
fn full_spectrum_sums_to_total_variance_and_round_trips() {
    let gpu = gpu();
    let (n, d) = (500, 12);
    let x = random_matrix(n, d, 9, -2.0, 3.0);
    let m = Matrix::new(&x, d).unwrap();
    let model = Pca::new(Components::Count(d)).fit(&gpu, &m).unwrap();
    let sum: f64 = model.explained_variance().iter().sum();
    assert!((sum - model.total_variance()).abs() <= 1e-5 * sum);
    let ratio: f64 = model.explained_variance_ratio().iter().sum();
    assert!((ratio - 1.0).abs() < 1e-5);
    let z = model.transform(&gpu, &m).unwrap();
    let back = model
        .inverse_transform(&gpu, &Matrix::new(&z, d).unwrap())
        .unwrap();
    let err = max_rel_err(&to_f64(&back), &to_f64(&x), 1.0);
    assert!(err < 1e-5, "round trip error {err:e}");
    // Against the reference projections.
    let r = refp::fit(&to_f64(&x), d, &Pca::new(Components::Count(d))).unwrap();
    let want = refp::transform(&r, &to_f64(&x), d, false);
    let err = max_rel_err(&to_f64(&z), &want, 1.0);
    assert!(err < 1e-4, "transform error {err:e}");
}

#[test]
fn whitened_projections_have_identity_covariance() {
    let gpu = gpu();
    let scales = [5.0, 3.0, 2.0, 1.0, 0.5, 0.25];
    let x = spectrum_data(4000, &scales, 11, -7.0);
    let m = Matrix::new(&x, 6).unwrap();
    for standardize in [false, true] {
        let model = Pca::new(Components::Count(4))
            .whiten(true)
            .standardize(standardize)
            .fit(&gpu, &m)
            .unwrap();
        let z = to_f64(&model.transform(&gpu, &m).unwrap());
        let mean = refp::column_means(&z, 4);
        let c = refp::covariance(&z, 4, Some(&mean), 1);
        for i in 0..4 {
            for j in 0..4 {
                let want = if i == j { 1.0 } else { 0.0 };
                assert!(
                    (c[i * 4 + j] - want).abs() < 1e-4,
                    "standardize {standardize}: cov[{i}][{j}] = {}",
                    c[i * 4 + j]
                );
            }
        }
    }
}

#[test]
fn textbook_two_by_two_example() {
    // Data whose sample covariance is exactly C = [[1, 0.9], [0.9, 1.09]]: eigenvalues
    // (2.09 ± √(0.09² + 4·0.81))/2 ≈ 1.946 and 0.144.
    let gpu = gpu();
    let n = 1000;
    let z = to_f64(&random_matrix(n, 2, 21, -1.0, 1.0));
    let mean = refp::column_means(&z, 2);
    let c0 = refp::covariance(&z, 2, Some(&mean), 1);
    let l0 = wgpu_unsupervised::linalg::cholesky_lower(&c0, 2).unwrap();
    let l = wgpu_unsupervised::linalg::cholesky_lower(&[1.0, 0.9, 0.9, 1.09], 2).unwrap();
    // x = L · L0⁻¹ · (z − mean)
    let mut x = vec![0.0f32; n * 2];
    for r in 0..n {
        let a = (z[r * 2] - mean[0]) / l0[0];
        let b = ((z[r * 2 + 1] - mean[1]) - l0[2] * a) / l0[3];
        x[r * 2] = (l[0] * a) as f32;
        x[r * 2 + 1] = (l[2] * a + l[3] * b) as f32;
    }
    let model = Pca::new(Components::Count(2))
        .fit(&gpu, &Matrix::new(&x, 2).unwrap())
        .unwrap();
    let disc = (0.09f64 * 0.09 + 4.0 * 0.81).sqrt();
    let want = [(2.09 + disc) / 2.0, (2.09 - disc) / 2.0];
    assert!((want[0] - 1.946).abs() < 1e-3 && (want[1] - 0.144).abs() < 1e-3);
    let err = max_rel_err(model.explained_variance(), &want, 0.0);
    assert!(
        err < 1e-4,
        "eigenvalues {:?} vs {want:?}",
        model.explained_variance()
    );
}

#[test]
fn chunked_path_equals_one_chunk() {
    let one = gpu();
    let many = gpu();
    let scales = [4.0, 3.0, 2.0, 1.0, 0.5, 0.3, 0.2];
    let d = scales.len();
    let x = spectrum_data(3000, &scales, 31, 3.0);
    // 50-row chunks: 60 chunks, and partial rounds of 7 blocks (the forced chunk size bounds
    // them too), so the f64 combination of rounds runs 9 times.
    many.set_max_chunk_bytes(50 * d as u64 * 4);
    let m = Matrix::new(&x, d).unwrap();
    let g1 = GpuMatrix::upload(&one, &m).unwrap();
    let g2 = GpuMatrix::upload(&many, &m).unwrap();
    assert!(g2.n_chunks() > 10);
    for solver in [PcaSolver::Full, PcaSolver::MatrixFree] {
        let params = Pca::new(Components::Count(3)).solver(solver);
        let a = params.fit(&one, &g1).unwrap();
        let b = params.fit(&many, &g2).unwrap();
        assert!(max_rel_err(b.explained_variance(), a.explained_variance(), 0.0) < 1e-5);
        assert!(max_rel_err(b.components(), a.components(), 1.0) < 1e-4);
        let za = a.transform(&one, &g1).unwrap();
        let zb = a.transform(&many, &g2).unwrap();
        assert!(max_rel_err(&to_f64(&zb), &to_f64(&za), 1.0) < 1e-6);
    }
}

#[cfg(feature = "datasets")]
#[test]
fn digits_first_50_components_explain_the_reference_ratio() {
    let gpu = gpu();
    let (digits, _) = wgpu_unsupervised::datasets::digits();
    let d = 64;
    let m = Matrix::new(&digits, d).unwrap();
    let params = Pca::new(Components::Count(50));
    let model = params.fit(&gpu, &m).unwrap();
    let want = refp::fit(&to_f64(&digits), d, &params).unwrap();
    let got: f64 = model.explained_variance_ratio().iter().sum();
    let expect: f64 = want.explained_variance_ratio.iter().sum();
    assert!((got - expect).abs() < 1e-5, "{got} vs {expect}");
    // And choosing by fraction lands on the same count as the reference.
    let f = Pca::new(Components::Fraction(0.9));
    let a = f.fit(&gpu, &m).unwrap();
    let b = refp::fit(&to_f64(&digits), d, &f).unwrap();
    assert_eq!(a.n_components(), b.n_components);
}

#[cfg(feature = "serde")]
#[test]
fn an_edited_model_file_gives_an_error_not_a_panic() {
    let gpu = gpu();
    let x = random_matrix(100, 4, 7, 0.0, 1.0);
    let m = Matrix::new(&x, 4).unwrap();
    let model = Pca::new(Components::Count(2)).fit(&gpu, &m).unwrap();
    let json = serde_json::to_string(&model).unwrap();
    let back: wgpu_unsupervised::PcaModel = serde_json::from_str(&json).unwrap();
    assert_eq!(
        back.transform(&gpu, &m).unwrap(),
        model.transform(&gpu, &m).unwrap()
    );
    // An edited model never gets as far as a transform: deserializing validates it.
    let mut edited: serde_json::Value = serde_json::from_str(&json).unwrap();
    edited["components"].as_array_mut().unwrap().truncate(3);
    let e = serde_json::from_value::<wgpu_unsupervised::PcaModel>(edited).unwrap_err();
    assert!(e.to_string().contains("components has 3 values"), "{e}");
}

#[test]
fn constant_data_have_zero_variance_not_nan() {
    let gpu = gpu();
    let x = vec![1.5f32; 40];
    let m = Matrix::new(&x, 4).unwrap();
    for solver in [PcaSolver::Full, PcaSolver::Power, PcaSolver::MatrixFree] {
        let model = Pca::new(Components::Count(2))
            .solver(solver)
            .fit(&gpu, &m)
            .unwrap();
        assert!(
            model.explained_variance().iter().all(|&v| v == 0.0),
            "{solver:?}"
        );
        assert!(
            model.explained_variance_ratio().iter().all(|&v| v == 0.0),
            "{solver:?}"
        );
        let z = model.transform(&gpu, &m).unwrap();
        assert!(z.iter().all(|v| v.abs() < 1e-6));
    }
}

#[test]
fn bad_parameters_give_errors() {
    let gpu = gpu();
    let x = random_matrix(20, 5, 1, 0.0, 1.0);
    let m = Matrix::new(&x, 5).unwrap();
    let fit = |p: Pca| p.fit(&gpu, &m).unwrap_err();
    assert!(matches!(
        fit(Pca::new(Components::Count(0))),
        Error::InvalidParameter {
            name: "components",
            ..
        }
    ));
    assert!(matches!(
        fit(Pca::new(Components::Count(6))),
        Error::InvalidParameter {
            name: "components",
            ..
        }
    ));
    assert!(matches!(
        fit(Pca::new(Components::Fraction(0.0))),
        Error::InvalidParameter {
            name: "components",
            ..
        }
    ));
    assert!(matches!(
        fit(Pca::new(Components::Fraction(1.5))),
        Error::InvalidParameter {
            name: "components",
            ..
        }
    ));
    assert!(matches!(
        fit(Pca::new(Components::Fraction(0.5)).solver(PcaSolver::Power)),
        Error::InvalidParameter {
            name: "components",
            ..
        }
    ));
    let one = Matrix::new(&x[..5], 5).unwrap();
    assert!(matches!(
        Pca::new(Components::Count(1)).fit(&gpu, &one).unwrap_err(),
        Error::InvalidParameter { name: "data", .. }
    ));
    // A constant feature whitened once its component is kept: finite projections (the
    // zero variance is clipped at the f32 epsilon, as scikit-learn does), no error.
    let mut flat = x.clone();
    for r in 0..20 {
        flat[r * 5 + 4] = 2.0;
        flat[r * 5 + 3] = 2.0 * flat[r * 5 + 2];
    }
    let flat = Matrix::new(&flat, 5).unwrap();
    let whitened = Pca::new(Components::Count(5))
        .whiten(true)
        .fit(&gpu, &flat)
        .unwrap();
    let z = whitened.transform(&gpu, &flat).unwrap();
    assert!(z.iter().all(|v| v.is_finite()));
    // Not converging is an error with the residual, never a silent result (40 features, a
    // block of 10 vectors: one step cannot reach 1e-9).
    let wide = random_matrix(200, 40, 3, 0.0, 1.0);
    let e = Pca::new(Components::Count(2))
        .solver(PcaSolver::Power)
        .max_iter(1)
        .tol(1e-9)
        .fit(&gpu, &Matrix::new(&wide, 40).unwrap())
        .unwrap_err();
    assert!(
        matches!(e, Error::NotConverged { iterations: 1, .. }),
        "{e}"
    );
    let model = Pca::new(Components::Count(2)).fit(&gpu, &m).unwrap();
    let y = random_matrix(4, 3, 1, 0.0, 1.0);
    assert!(matches!(
        model.transform(&gpu, &Matrix::new(&y, 3).unwrap()),
        Err(Error::FeatureMismatch {
            expected: 5,
            found: 3
        })
    ));
}

#[cfg(feature = "io")]
#[test]
fn fitted_models_round_trip_through_model_files_bit_for_bit() {
    let gpu = gpu();
    let dir = tempfile::tempdir().unwrap();
    let x = random_matrix(300, 9, 21, -1.0, 3.0);
    let m = Matrix::new(&x, 9).unwrap();
    for (i, solver) in PcaSolver::ALL.into_iter().enumerate() {
        let model = Pca::new(Components::Count(3))
            .solver(solver)
            .whiten(i % 2 == 1)
            .fit(&gpu, &m)
            .unwrap();
        let path = dir.path().join(format!("{solver}.json"));
        model.save(&path).unwrap();
        let back = wgpu_unsupervised::PcaModel::load(&path).unwrap();
        assert_eq!(back, model, "{solver}");
        let z = model.transform(&gpu, &m).unwrap();
        assert_eq!(back.transform(&gpu, &m).unwrap(), z);
    }
}

#[test]
fn power_solver_on_rank_deficient_data_agrees_with_the_full_solver() {
    // Fewer rows than the block: S has rank n − 1 < p, so the device's products leave
    // directions only rounding fills (or a breakdown sends the iteration back to the host).
    let gpu = gpu();
    for (n, d, m, seed) in [(12, 120, 8, 1u64), (30, 300, 20, 2)] {
        let x = random_matrix(n, d, seed, -2.0, 2.0);
        let data = Matrix::new(&x, d).unwrap();
        let fit = |solver| {
            Pca::new(Components::Count(m))
                .solver(solver)
                .seed(seed)
                .fit(&gpu, &data)
                .unwrap()
        };
        let (full, power) = (fit(PcaSolver::Full), fit(PcaSolver::Power));
        let err = max_rel_err(
            &power.explained_variance()[..m.min(n - 1)],
            &full.explained_variance()[..m.min(n - 1)],
            1e-12,
        );
        assert!(err < 1e-4, "n {n} d {d}: variances differ by {err:e}");
        for k in 0..m.min(n - 1) {
            let cos: f64 = (0..d)
                .map(|j| power.components()[k * d + j] * full.components()[k * d + j])
                .sum();
            assert!(cos.abs() > 0.999, "n {n} d {d} component {k}: cos {cos}");
        }
    }
}
