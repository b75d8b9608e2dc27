//! The oracle's PCA against hand-computed spectra, its two routes against each other and
//! scikit-learn's figures.

use super::*;

/// Makes the d rows of the d x d matrix `q` orthonormal (modified Gram–Schmidt).
fn gram_schmidt(q: &mut [f64], d: usize) {
    for i in 0..d {
        for j in 0..i {
            let dot: f64 = (0..d).map(|t| q[i * d + t] * q[j * d + t]).sum();
            for t in 0..d {
                q[i * d + t] -= dot * q[j * d + t];
            }
        }
        let norm = (0..d).map(|t| q[i * d + t].powi(2)).sum::<f64>().sqrt();
        for t in 0..d {
            q[i * d + t] /= norm;
        }
    }
}

/// N x D data with a well-separated spectrum: independent uniform columns with standard
/// deviations 5, 4, 3, 2, 1, … mixed by a fixed rotation, plus `offset` on every value.
fn structured_data(n: usize, d: usize, offset: f64, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut q: Vec<f64> = (0..d * d).map(|_| rng.random_range(-1.0..1.0)).collect();
    gram_schmidt(&mut q, d);
    let mut x = Vec::with_capacity(n * d);
    for _ in 0..n {
        let z: Vec<f64> = (0..d)
            .map(|j| rng.random_range(-1.0..1.0) * (d - j) as f64 * 3f64.sqrt())
            .collect();
        for c in 0..d {
            x.push(offset + (0..d).map(|k| z[k] * q[k * d + c]).sum::<f64>());
        }
    }
    x
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(p, q)| (p - q).abs())
        .fold(0.0, f64::max)
}

fn orthonormality_error(r: &[f64], m: usize, d: usize) -> f64 {
    let mut worst: f64 = 0.0;
    for i in 0..m {
        for j in 0..m {
            let target = if i == j { 1.0 } else { 0.0 };
            worst = worst.max((dot(&r[i * d..(i + 1) * d], &r[j * d..(j + 1) * d]) - target).abs());
        }
    }
    worst
}

/// Projector UᵀU (D x D) onto the span of the rows of U.
fn projector(u: &[f64], m: usize, d: usize) -> Vec<f64> {
    let mut p = vec![0.0; d * d];
    for k in 0..m {
        for i in 0..d {
            for j in 0..d {
                p[i * d + j] += u[k * d + i] * u[k * d + j];
            }
        }
    }
    p
}

#[cfg(feature = "datasets")]
fn digits() -> (Vec<f64>, usize) {
    let (x, _) = crate::datasets::digits();
    (x.iter().map(|&v| v as f64).collect(), 64)
}

#[test]
fn textbook_two_by_two() {
    let c = [1.0, 0.9, 0.9, 1.09];
    // λ = (tr ± √((a − d)² + 4b²)) / 2.
    let root = ((1.0f64 - 1.09).powi(2) + 4.0 * 0.81).sqrt();
    let exact = [(2.09 + root) / 2.0, (2.09 - root) / 2.0];
    assert!((exact[0] - 1.946).abs() < 1e-3 && (exact[1] - 0.144).abs() < 1e-3);

    let (values, vectors) = linalg::symmetric_eigen(&c, 2).unwrap();
    assert!(max_abs_diff(&values, &exact) < 1e-12, "{values:?}");
    let (pvalues, pvectors) = power_iteration_deflation(&c, 2, 2, 1e-12, 1000, 0).unwrap();
    assert!(max_abs_diff(&pvalues, &exact) < 1e-10, "{pvalues:?}");
    for k in 0..2 {
        let cos = dot(&vectors[2 * k..2 * k + 2], &pvectors[2 * k..2 * k + 2]);
        assert!((cos.abs() - 1.0).abs() < 1e-10);
    }
}

#[test]
fn covariance_survives_a_large_mean_offset() {
    let d = 3;
    let base = structured_data(500, d, 0.0, 1);
    let shifted: Vec<f64> = base.iter().map(|v| v + 1e4).collect();
    let mean0 = column_means(&base, d);
    let mean1 = column_means(&shifted, d);
    for j in 0..d {
        assert!((mean1[j] - mean0[j] - 1e4).abs() < 1e-9);
    }
    let s0 = covariance(&base, d, Some(&mean0), 1);
    let s1 = covariance(&shifted, d, Some(&mean1), 1);
    let scale = s0.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    assert!(max_abs_diff(&s0, &s1) < 1e-9 * scale, "{s0:?} vs {s1:?}");
    // Uncentred second moments of centred data are the covariance.
    let centred: Vec<f64> = base
        .chunks_exact(d)
        .flat_map(|r| r.iter().zip(&mean0).map(|(v, m)| v - m).collect::<Vec<_>>())
        .collect();
    assert!(max_abs_diff(&covariance(&centred, d, None, 1), &s0) < 1e-12 * scale);
    // ddof 0 vs 1 differ by the factor (N − 1)/N.
    let s_pop = covariance(&base, d, Some(&mean0), 0);
    for (a, b) in s_pop.iter().zip(&s0) {
        assert!((a - b * 499.0 / 500.0).abs() < 1e-12 * scale);
    }
}

#[test]
fn column_std_is_the_population_std_and_one_for_constants() {
    let x = [1.0, 0.1, 5.0, 3.0, 0.1, 5.0, 5.0, 0.1, 5.0];
    let s = column_std(&x, 3);
    assert!((s[0] - (8.0f64 / 3.0).sqrt()).abs() < 1e-15);
    assert_eq!(s[1], 1.0);
    assert_eq!(s[2], 1.0);
}

#[test]
fn explained_variance_sums_to_total_and_round_trip_is_exact() {
    let (n, d) = (300, 6);
    let x = structured_data(n, d, 7.0, 2);
    for ddof in [0, 1] {
        let model = fit(&x, d, &Pca::new(Components::Count(d)).ddof(ddof)).unwrap();
        let mean = column_means(&x, d);
        let s = covariance(&x, d, Some(&mean), ddof);
        let total: f64 = (0..d).map(|i| s[i * d + i]).sum();
        let sum: f64 = model.explained_variance.iter().sum();
        assert!((sum - total).abs() < 1e-12 * total);
        let ratio_sum: f64 = model.explained_variance_ratio.iter().sum();
        assert!((ratio_sum - 1.0).abs() < 1e-12);
        assert_eq!(model.noise_variance, 0.0);
        assert!(orthonormality_error(&model.components, d, d) < 1e-12);
        for (sv, l) in model.singular_values.iter().zip(&model.explained_variance) {
            assert!((sv * sv - l * (n - ddof) as f64).abs() < 1e-9 * sv * sv);
        }

        for whiten in [false, true] {
            let z = transform(&model, &x, d, whiten);
            let back = inverse_transform(&model, &z, whiten);
            assert!(
                max_abs_diff(&back, &x) < 1e-9,
                "ddof {ddof} whiten {whiten}"
            );
        }
    }
}

#[test]
fn whitened_projection_has_identity_covariance() {
    let (n, d, m) = (400, 5, 3);
    let x = structured_data(n, d, -3.0, 3);
    for ddof in [0, 1] {
        let params = Pca::new(Components::Count(m)).whiten(true).ddof(ddof);
        let model = fit(&x, d, &params).unwrap();
        let z = transform(&model, &x, d, true);
        assert_eq!(z.len(), n * m);
        let zmean = column_means(&z, m);
        assert!(zmean.iter().all(|v| v.abs() < 1e-12));
        let cov = covariance(&z, m, None, ddof);
        let mut eye = vec![0.0; m * m];
        for i in 0..m {
            eye[i * m + i] = 1.0;
        }
        assert!(max_abs_diff(&cov, &eye) < 1e-10, "ddof {ddof}: {cov:?}");
        // noise variance: the mean of the two dropped eigenvalues.
        let full = fit(&x, d, &Pca::new(Components::Count(d)).ddof(ddof)).unwrap();
        let expected = (full.explained_variance[3] + full.explained_variance[4]) / 2.0;
        assert!((model.noise_variance - expected).abs() < 1e-12 * expected);
    }
}

#[test]
fn power_route_agrees_with_full_route() {
    let (n, d, m) = (500, 8, 4);
    let x = structured_data(n, d, 2.0, 4);
    let full = fit(&x, d, &Pca::new(Components::Count(m))).unwrap();
    let power = fit(
        &x,
        d,
        &Pca::new(Components::Count(m))
            .solver(PcaSolver::Power)
            .tol(1e-12)
            .seed(42),
    )
    .unwrap();
    for (a, b) in full
        .explained_variance
        .iter()
        .zip(&power.explained_variance)
    {
        assert!((a - b).abs() <= 1e-8 * a, "{a} vs {b}");
    }
    assert!(orthonormality_error(&power.components, m, d) < 1e-10);
    let p_full = projector(&full.components, m, d);
    let p_power = projector(&power.components, m, d);
    assert!(max_abs_diff(&p_full, &p_power) < 1e-8);
    // With signs fixed the same way, the vectors themselves agree.
    assert!(max_abs_diff(&full.components, &power.components) < 1e-8);
    assert_eq!(full.mean, power.mean);
    assert!((full.noise_variance - power.noise_variance).abs() < 1e-12);
}

#[test]
fn power_iteration_handles_a_rank_deficient_matrix() {
    // Rank 1: the second and third vectors belong to eigenvalue 0 and must still be
    // orthonormal to the first.
    let s = [4.0, 2.0, 0.0, 2.0, 1.0, 0.0, 0.0, 0.0, 0.0];
    let (values, vectors) = power_iteration_deflation(&s, 3, 3, 1e-12, 100, 9).unwrap();
    assert!((values[0] - 5.0).abs() < 1e-10);
    assert!(values[1].abs() < 1e-10 && values[2].abs() < 1e-10);
    assert!(orthonormality_error(&vectors, 3, 3) < 1e-10);
    // A zero matrix converges at once.
    let (values, _) = power_iteration_deflation(&[0.0; 4], 2, 2, 1e-7, 1, 0).unwrap();
    assert_eq!(values, vec![0.0, 0.0]);
}

#[test]
fn power_iteration_reports_non_convergence() {
    let s = [1.0, 0.0, 0.0, 0.0, 0.999, 0.0, 0.0, 0.0, 0.5];
    let err = power_iteration_deflation(&s, 3, 1, 1e-7, 1, 0).unwrap_err();
    match err {
        Error::NotConverged {
            iterations,
            residual,
            ..
        } => {
            assert_eq!(iterations, 1);
            assert!(residual > 0.0);
        }
        other => panic!("unexpected error {other}"),
    }
    // Through fit as well.
    let x = structured_data(50, 4, 0.0, 5);
    let params = Pca::new(Components::Count(2))
        .solver(PcaSolver::Power)
        .max_iter(1);
    assert!(matches!(
        fit(&x, 4, &params),
        Err(Error::NotConverged { iterations: 1, .. })
    ));
}

#[test]
fn fraction_picks_components_like_scikit_learn() {
    assert_eq!(components_for_fraction(&[0.5, 0.4, 0.1], 0.3), 1);
    // Exactly reaching f is not past it: side="right" takes one more.
    assert_eq!(components_for_fraction(&[0.5, 0.4, 0.1], 0.5), 2);
    assert_eq!(components_for_fraction(&[0.5, 0.4, 0.1], 0.95), 3);
    assert_eq!(components_for_fraction(&[0.5, 0.4, 0.1], 1.0), 3);
    // Trailing zero eigenvalues: 100% still keeps everything.
    assert_eq!(components_for_fraction(&[0.6, 0.4, 0.0], 1.0), 3);
    assert_eq!(components_for_fraction(&[0.6, 0.4, 0.0], 0.99), 2);
}

#[cfg(feature = "datasets")]
#[test]
fn digits_explained_variance() {
    let (x, d) = digits();
    let n = x.len() / d;
    let all = fit(&x, d, &Pca::new(Components::Count(d))).unwrap();
    let ratios = &all.explained_variance_ratio;
    let cumulative: Vec<f64> = ratios
        .iter()
        .scan(0.0, |acc, r| {
            *acc += r;
            Some(*acc)
        })
        .collect();
    let first50 = cumulative[49];
    println!(
        "digits: first 2 components explain {:.4}, first 10 {:.4}, first 50 {:.6}",
        cumulative[1], cumulative[9], first50
    );
    // scikit-learn's `PCA().fit(load_digits().data).explained_variance_ratio_[:5]`, as
    // printed (8 digits) in many tutorials.
    let sklearn = [0.14890594, 0.13618771, 0.11794594, 0.08409979, 0.05782415];
    for (k, (a, b)) in ratios.iter().zip(sklearn).enumerate() {
        assert!((a - b).abs() < 1e-8, "ratio {k}: {a} vs scikit-learn {b}");
    }
    assert!(first50 > 0.95 && first50 < 1.0, "{first50}");
    // Three constant pixels (always 0) give three zero eigenvalues.
    assert!(all.explained_variance[61..].iter().all(|&l| l < 1e-9));

    // Independently: eigenvalues of the two-pass covariance.
    let mean = column_means(&x, d);
    let s = covariance(&x, d, Some(&mean), 1);
    let (values, _) = linalg::symmetric_eigen(&s, d).unwrap();
    let total: f64 = (0..d).map(|i| s[i * d + i]).sum();
    let direct: f64 = values[..50].iter().map(|l| l.max(0.0)).sum::<f64>() / total;
    assert!((direct - first50).abs() < 1e-12);

    // Fraction(0.9): the fewest components whose cumulative ratio passes 0.9.
    let model = fit(&x, d, &Pca::new(Components::Fraction(0.9))).unwrap();
    let m = model.n_components;
    println!("digits: Fraction(0.9) keeps {m} components");
    assert!(cumulative[m - 1] > 0.9);
    assert!(m == 1 || cumulative[m - 2] <= 0.9);
    assert_eq!(model.components, all.components[..m * d].to_vec());
    assert_eq!(model.n_samples, n);
    let dropped = &all.explained_variance[m..];
    let noise = dropped.iter().sum::<f64>() / dropped.len() as f64;
    assert!((model.noise_variance - noise).abs() < 1e-12 * noise);

    // The power route finds the leading eigenpairs of the real data too.
    let power = fit(
        &x,
        d,
        &Pca::new(Components::Count(5))
            .solver(PcaSolver::Power)
            .tol(1e-11)
            .max_iter(100_000),
    )
    .unwrap();
    for (a, b) in all.explained_variance[..5]
        .iter()
        .zip(&power.explained_variance)
    {
        assert!((a - b).abs() <= 1e-8 * a, "{a} vs {b}");
    }

    // Standardised: the constant pixels get scale 1 and no NaN appears.
    let std = fit(&x, d, &Pca::new(Components::Count(10)).standardize(true)).unwrap();
    assert!(std.scale.iter().filter(|&&s| s == 1.0).count() >= 3);
    assert!(std.components.iter().all(|v| v.is_finite()));
}

#[test]
fn uncentred_fit_uses_second_moments() {
    let d = 3;
    let x = structured_data(100, d, 10.0, 6);
    let model = fit(&x, d, &Pca::new(Components::Count(1)).center(false)).unwrap();
    assert_eq!(model.mean, vec![0.0; d]);
    // The leading direction of XᵀX is close to the mean direction (1, 1, 1)/√3.
    let u = &model.components;
    let cos = u.iter().sum::<f64>() / 3f64.sqrt();
    assert!(cos > 0.9, "{u:?}");
}

#[test]
fn invalid_inputs_are_errors() {
    let p = Pca::new(Components::Count(1));
    assert!(matches!(fit(&[], 2, &p), Err(Error::EmptyData { .. })));
    assert!(matches!(
        fit(&[1.0, 2.0], 0, &p),
        Err(Error::EmptyData { .. })
    ));
    assert!(matches!(
        fit(&[1.0, 2.0, 3.0], 2, &p),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        fit(&[1.0, 2.0, f64::NAN, 4.0], 2, &p),
        Err(Error::NonFinite { row: 1, col: 0, .. })
    ));
    // One sample, too many components, bad fraction, bad ddof.
    assert!(fit(&[1.0, 2.0], 2, &p).is_err());
    let x = structured_data(10, 3, 0.0, 7);
    assert!(fit(&x, 3, &Pca::new(Components::Count(4))).is_err());
    assert!(fit(&x, 3, &Pca::new(Components::Fraction(0.0))).is_err());
    assert!(fit(&x, 3, &Pca::new(Components::Fraction(1.5))).is_err());
    assert!(fit(&x, 3, &p.clone().ddof(2)).is_err());
    // Whitening a zero-variance component (rank-1 data, two components): scikit-learn's
    // clip at the f32 epsilon keeps the projections finite.
    let line: Vec<f64> = (0..10).flat_map(|i| [i as f64, 2.0 * i as f64]).collect();
    let model = fit(&line, 2, &Pca::new(Components::Count(2)).whiten(true)).unwrap();
    assert!(model.explained_variance[1] < 1e-12 * model.explained_variance[0]);
    let z = transform(&model, &line, 2, true);
    assert!(z.iter().all(|v| v.is_finite()), "{z:?}");
    // Power iteration argument checks.
    assert!(power_iteration_deflation(&[1.0; 3], 2, 1, 1e-7, 10, 0).is_err());
    assert!(power_iteration_deflation(&[1.0; 4], 2, 3, 1e-7, 10, 0).is_err());
    assert!(power_iteration_deflation(&[1.0; 4], 2, 1, 0.0, 10, 0).is_err());
    assert!(power_iteration_deflation(&[1.0; 4], 2, 1, 1e-7, 0, 0).is_err());
    assert!(matches!(
        power_iteration_deflation(&[1.0, f64::NAN, 0.0, 1.0], 2, 1, 1e-7, 10, 0),
        Err(Error::NonFinite { .. })
    ));
}
