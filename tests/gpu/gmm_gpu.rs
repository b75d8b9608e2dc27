//! Gaussian mixtures on the GPU held against the f64 CPU reference (`reference::gmm`): the
//! E- and M-step kernels on random parameters, EM from identical starts, the monotone bound,
//! recovery of a known mixture, sampling, seeds and warm starts, and model files.

use crate::common::gmm::{mixture_data, random_model, scaled_err};
use crate::common::{gpu, random_matrix, to_f64};
use wgpu_unsupervised::gmm::estimate_gaussian_parameters;
use wgpu_unsupervised::reference::gmm as refg;
use wgpu_unsupervised::{
    datasets, CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit, GpuMatrix, Matrix,
};

const TYPES: [CovarianceType; 4] = CovarianceType::ALL;

#[test]
fn estep_matches_reference_for_random_parameters() {
    let gpu = gpu();
    // Awkward sizes: N not a multiple of any workgroup, D = 1, D > 64 (several column tiles),
    // K = 1, K > 64 (and not a multiple of the diag kernel's 8 components per pass). Full and
    // Tied take the one-row-per-invocation kernel up to D = 16, the tiles above (D = 20: one
    // column tile, D = 67: two). Fewer than 4 values in all (3 x 1, 1 x 3): too few for the
    // diagonal twin's vec4 view of the rows, which must not be offered.
    let cases = [
        (1037, 3, 5),
        (300, 1, 1),
        (517, 67, 3),
        (700, 5, 70),
        (400, 20, 6),
        (333, 16, 2),
        (3, 1, 2),
        (1, 3, 1),
    ];
    for (seed, &(n, d, k)) in cases.iter().enumerate() {
        for t in TYPES {
            let model = random_model(t, k, d, seed as u64 + 1);
            let rows = random_matrix(n, d, 100 + seed as u64, -4.0, 4.0);
            let x = Matrix::new(&rows, d).unwrap();
            let x64 = to_f64(&rows);
            let reference = refg::ReferenceGmm::from_model(&model);

            let eval = model.evaluate_gpu(&gpu, &x).unwrap();
            let log_p = to_f64(&eval.log_density.to_host(&gpu).unwrap());
            let want_log_p = refg::score_samples(&reference, &x64, d);
            let err = scaled_err(&log_p, &want_log_p, 1.0);
            assert!(err < 2e-6, "{t:?} n={n} d={d} k={k}: log p error {err:e}");
            let mean = refg::score(&reference, &x64, d);
            let rel = (eval.mean_log_likelihood - mean).abs() / mean.abs();
            assert!(rel < 1e-6, "{t:?}: mean log-likelihood off by {rel:e}");

            let resp = to_f64(&eval.responsibilities.to_host(&gpu).unwrap());
            let want = refg::predict_proba(&reference, &x64, d);
            let err = scaled_err(&resp, &want, 1.0);
            assert!(
                err < 1e-4,
                "{t:?} n={n} d={d} k={k}: responsibility error {err:e}"
            );
            for row in resp.chunks_exact(k) {
                let s: f64 = row.iter().sum();
                assert!((s - 1.0).abs() < 1e-5, "responsibilities sum to {s}");
            }

            // Labels: equal except where the reference's two best components are within
            // f32 rounding of each other.
            let labels = eval.labels.to_host(&gpu).unwrap();
            let want_labels = refg::predict(&reference, &x64, d);
            let (log_resp, _) = refg::estep(&x64, d, &reference);
            for (i, (a, b)) in labels.iter().zip(&want_labels).enumerate() {
                if a != b {
                    let r = &log_resp[i * k..(i + 1) * k];
                    let gap = (r[*a as usize] - r[*b as usize]).abs();
                    assert!(gap < 1e-4, "{t:?}: row {i} label {a} vs {b}, gap {gap:e}");
                }
            }
        }
    }
}

#[test]
fn estep_is_the_same_when_the_data_is_split_in_chunks() {
    let gpu = gpu();
    let (n, d, k) = (2500, 6, 40);
    let rows = random_matrix(n, d, 8, -3.0, 3.0);
    let x = Matrix::new(&rows, d).unwrap();
    for t in [CovarianceType::Full, CovarianceType::Diag] {
        let model = random_model(t, k, d, 9);
        let whole = model.evaluate_gpu(&gpu, &x).unwrap();
        // 16 KiB bindings: 682-row data chunks, each split in 102-row responsibility segments.
        let small = crate::common::gpu();
        small.set_max_chunk_bytes(16 << 10);
        let xg = GpuMatrix::upload(&small, &x).unwrap();
        assert_eq!(xg.n_chunks(), 4);
        let split = model.evaluate_gpu(&small, &xg).unwrap();
        assert_eq!(split.responsibilities.n_chunks(), 7 + 7 + 7 + 5);
        assert_eq!(
            whole.log_density.to_host(&gpu).unwrap(),
            split.log_density.to_host(&small).unwrap()
        );
        assert_eq!(
            whole.responsibilities.to_host(&gpu).unwrap(),
            split.responsibilities.to_host(&small).unwrap()
        );
        assert_eq!(
            whole.labels.to_host(&gpu).unwrap(),
            split.labels.to_host(&small).unwrap()
        );
        // Block sums follow the segments, so the mean agrees to rounding, not bitwise.
        let rel = (whole.mean_log_likelihood - split.mean_log_likelihood).abs()
            / whole.mean_log_likelihood.abs();
        assert!(rel < 1e-6);
    }
}

#[test]
fn mstep_matches_reference_for_random_responsibilities() {
    let gpu = gpu();
    // D = 30 and 67 take the tiled scatter (one and two 64-wide tiles), the others the
    // per-output loop.
    let cases = [
        (1037, 3, 5),
        (300, 1, 1),
        (517, 67, 3),
        (700, 5, 70),
        (600, 30, 9),
    ];
    for (seed, &(n, d, k)) in cases.iter().enumerate() {
        // Data away from the origin: the centred sums must not lose it.
        let rows: Vec<f32> = random_matrix(n, d, 200 + seed as u64, -2.0, 2.0)
            .into_iter()
            .map(|v| v + 500.0)
            .collect();
        let mut resp = random_matrix(n, k, 300 + seed as u64, 0.0, 1.0);
        for row in resp.chunks_exact_mut(k) {
            let s: f32 = row.iter().sum();
            row.iter_mut().for_each(|v| *v /= s);
        }
        let x = Matrix::new(&rows, d).unwrap();
        for t in TYPES {
            let got = estimate_gaussian_parameters(&gpu, &x, &resp, k, t, 1e-6).unwrap();
            let (w, m, c) = refg::mstep(&to_f64(&rows), d, &to_f64(&resp), k, t, 1e-6).unwrap();
            let ew = scaled_err(&got.weights, &w, 0.0);
            let em = scaled_err(&got.means, &m, 0.0);
            let ec = scaled_err(&got.covariances, &c, 0.0);
            assert!(
                ew < 1e-5 && em < 1e-6 && ec < 1e-4,
                "{t:?} n={n} d={d} k={k}: weights {ew:e} means {em:e} covariances {ec:e}"
            );
        }
    }
}

#[test]
fn em_from_the_same_start_reaches_the_reference() {
    let gpu = gpu();
    for (seed, t) in TYPES.into_iter().enumerate() {
        let seed = seed as u64 + 1;
        let (n, d, k) = (1500, 3, 4);
        let rows = mixture_data(t, n, d, k, seed);
        let x = Matrix::new(&rows, d).unwrap();
        let x64 = to_f64(&rows);
        // Random responsibilities from the same ChaCha8 stream on both sides, and given
        // parameters: identical starting points.
        let start = random_model(t, k, d, seed + 50);
        for init in [GmmInit::Random, GmmInit::Given(start.initial_parameters())] {
            let params = GaussianMixture::new(k)
                .covariance(t)
                .init(init)
                .seed(seed)
                .max_iter(30)
                .tol(1e-6);
            let g = params.fit(&gpu, &x).unwrap();
            let r = refg::fit(&x64, d, &params).unwrap();
            let rel = (g.lower_bound() - r.lower_bound).abs() / r.lower_bound.abs();
            assert!(
                rel < 1e-4,
                "{t:?}: GPU {} vs reference {} ({rel:e})",
                g.lower_bound(),
                r.lower_bound
            );
            let flips = g
                .labels()
                .iter()
                .zip(&r.labels)
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(flips, 0, "{t:?}: {flips} labels differ");
            let em = scaled_err(g.means(), &r.means, 1.0);
            assert!(em < 1e-3, "{t:?}: means differ by {em:e}");
        }
    }
}

#[test]
fn lower_bound_never_decreases() {
    let gpu = gpu();
    let blobs = datasets::make_blobs(3000, 5, 6, 1.5, (-8.0, 8.0), 4)
        .unwrap()
        .0;
    #[allow(unused_mut)]
    let mut sets = vec![(blobs, 5)];
    #[cfg(feature = "datasets")]
    sets.push((datasets::iris().0, 4));
    // Random responsibilities can start at a symmetric fixed point (equal components) that
    // EM leaves in one or two steps; k-means++ starts give long runs. Count the steps checked.
    let mut steps = 0;
    for (rows, d) in &sets {
        let x = Matrix::new(rows, *d).unwrap();
        for t in TYPES {
            for (seed, init) in [(1, GmmInit::Random), (2, GmmInit::KMeansPlusPlus)] {
                let m = GaussianMixture::new(4)
                    .covariance(t)
                    .init(init)
                    .seed(seed)
                    .tol(1e-7)
                    .max_iter(60)
                    .fit(&gpu, &x)
                    .unwrap();
                let h = m.lower_bound_history();
                assert_eq!(h.len(), m.n_iter());
                for w in h.windows(2) {
                    assert!(
                        w[1] >= w[0] - 1e-5 * w[0].abs().max(1.0),
                        "{t:?} seed {seed}: lower bound fell from {} to {}",
                        w[0],
                        w[1]
                    );
                    steps += 1;
                }
            }
        }
    }
    assert!(steps > 50 * sets.len(), "only {steps} EM steps checked");
}

#[test]
fn recovers_a_known_mixture() {
    let gpu = gpu();
    let (n, d) = (30_000, 2);
    let truth = GaussianMixtureModel::from_parameters(
        CovarianceType::Full,
        vec![0.5, 0.3, 0.2],
        vec![0.0, 0.0, 6.0, 1.0, -2.0, 7.0],
        vec![1.0, 0.6, 0.6, 1.5, 0.5, -0.2, -0.2, 0.3, 2.0, 0.0, 0.0, 0.5],
    )
    .unwrap();
    for seed in [11, 12] {
        let (x64, _) = truth.sample(n, seed).unwrap();
        let rows: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
        let fit = GaussianMixture::new(3)
            .n_init(2)
            .seed(seed)
            .fit(&gpu, &Matrix::new(&rows, d).unwrap())
            .unwrap();
        assert!(fit.converged());
        for c in 0..3 {
            let mu = &truth.means()[c * d..(c + 1) * d];
            // The fitted component nearest to this true mean.
            let f = (0..3)
                .min_by(|&a, &b| {
                    let dist = |i: usize| {
                        (0..d)
                            .map(|j| (fit.means()[i * d + j] - mu[j]).powi(2))
                            .sum::<f64>()
                    };
                    dist(a).total_cmp(&dist(b))
                })
                .unwrap();
            let nk = n as f64 * truth.weights()[c];
            for (j, &mu_j) in mu.iter().enumerate() {
                let se = (truth.covariances()[c * d * d + j * d + j] / nk).sqrt();
                let diff = (fit.means()[f * d + j] - mu_j).abs();
                assert!(
                    diff < 4.0 * se,
                    "component {c} feature {j}: off by {diff} (se {se})"
                );
                for i in 0..d {
                    let want = truth.covariances()[c * d * d + i * d + j];
                    let got = fit.covariances()[f * d * d + i * d + j];
                    assert!(
                        (got - want).abs() < 0.1,
                        "covariance ({i},{j}): {got} vs {want}"
                    );
                }
            }
            let wse = (truth.weights()[c] * (1.0 - truth.weights()[c]) / n as f64).sqrt();
            assert!((fit.weights()[f] - truth.weights()[c]).abs() < 5.0 * wse);
        }
    }
}

#[test]
fn samples_reproduce_the_mixture_moments() {
    for (seed, t) in TYPES.into_iter().enumerate() {
        let (k, d, n) = (3, 3, 60_000);
        let model = random_model(t, k, d, seed as u64 + 20);
        let (x, comps) = model.sample(n, seed as u64).unwrap();
        assert_eq!(x.len(), n * d);
        assert!(
            comps.windows(2).all(|w| w[0] <= w[1]),
            "grouped by component"
        );
        // Mixture mean m = Σ πₖ μₖ and covariance Σ πₖ (Σₖ + μₖ μₖᵀ) − m mᵀ.
        let cov_k = |c: usize, i: usize, j: usize| -> f64 {
            let cv = model.covariances();
            match t {
                CovarianceType::Full => cv[c * d * d + i * d + j],
                CovarianceType::Tied => cv[i * d + j],
                CovarianceType::Diag => {
                    if i == j {
                        cv[c * d + i]
                    } else {
                        0.0
                    }
                }
                CovarianceType::Spherical => {
                    if i == j {
                        cv[c]
                    } else {
                        0.0
                    }
                }
            }
        };
        let (w, mu) = (model.weights(), model.means());
        let m: Vec<f64> = (0..d)
            .map(|j| (0..k).map(|c| w[c] * mu[c * d + j]).sum())
            .collect();
        let cov = |i: usize, j: usize| -> f64 {
            (0..k)
                .map(|c| w[c] * (cov_k(c, i, j) + mu[c * d + i] * mu[c * d + j]))
                .sum::<f64>()
                - m[i] * m[j]
        };
        let sm: Vec<f64> = (0..d)
            .map(|j| x.iter().skip(j).step_by(d).sum::<f64>() / n as f64)
            .collect();
        for i in 0..d {
            let se = (cov(i, i) / n as f64).sqrt();
            assert!((sm[i] - m[i]).abs() < 5.0 * se, "{t:?}: mean {i}");
            for j in 0..d {
                let sc = x
                    .chunks_exact(d)
                    .map(|r| (r[i] - sm[i]) * (r[j] - sm[j]))
                    .sum::<f64>()
                    / n as f64;
                // Standard error of a covariance entry ≈ sqrt((σᵢᵢσⱼⱼ + σᵢⱼ²) / n); the
                // mixture is not Gaussian, so allow a wide margin.
                let se = ((cov(i, i) * cov(j, j) + cov(i, j).powi(2)) / n as f64).sqrt();
                assert!(
                    (sc - cov(i, j)).abs() < 8.0 * se,
                    "{t:?}: covariance ({i},{j}) {sc} vs {}",
                    cov(i, j)
                );
            }
        }
    }
}

#[test]
fn same_seed_same_model_and_warm_start_continues() {
    let gpu = gpu();
    let rows = datasets::make_blobs(2000, 4, 5, 1.0, (-6.0, 6.0), 2)
        .unwrap()
        .0;
    let x = Matrix::new(&rows, 4).unwrap();
    let params = GaussianMixture::new(5).n_init(2).seed(9);
    let a = params.fit(&gpu, &x).unwrap();
    let b = params.fit(&gpu, &x).unwrap();
    assert_eq!(a, b);
    let c = params.clone().seed(10).fit(&gpu, &x).unwrap();
    assert!(c.lower_bound().is_finite());

    // Three iterations, then a warm start, continue the longer run's sequence.
    let long = GaussianMixture::new(5)
        .covariance(CovarianceType::Diag)
        .tol(0.0)
        .max_iter(8);
    let full_run = long.fit(&gpu, &x).unwrap();
    let short = long.clone().max_iter(3).fit(&gpu, &x).unwrap();
    let warm = GaussianMixture::new(5)
        .warm_start(&short)
        .tol(0.0)
        .max_iter(5)
        .fit(&gpu, &x)
        .unwrap();
    assert_eq!(warm.covariance_type(), CovarianceType::Diag);
    for (w, l) in warm
        .lower_bound_history()
        .iter()
        .zip(&full_run.lower_bound_history()[3..])
    {
        assert!((w - l).abs() < 1e-5 * l.abs(), "{w} vs {l}");
    }
}

#[cfg(feature = "io")]
#[test]
fn fitted_models_round_trip_through_model_files_bit_for_bit() {
    let gpu = gpu();
    let dir = tempfile::tempdir().unwrap();
    let rows = datasets::make_blobs(600, 3, 4, 1.0, (-6.0, 6.0), 8)
        .unwrap()
        .0;
    let x = Matrix::new(&rows, 3).unwrap();
    for t in TYPES {
        let m = GaussianMixture::new(4)
            .covariance(t)
            .seed(2)
            .fit(&gpu, &x)
            .unwrap();
        let path = dir.path().join(format!("{}.json", t.name()));
        m.save(&path).unwrap();
        let back = GaussianMixtureModel::load(&path).unwrap();
        assert!(back.labels().is_empty() && m.labels().len() == 600);
        assert_eq!(back.precisions_cholesky(), m.precisions_cholesky(), "{t:?}");
        assert_eq!(back.lower_bound().to_bits(), m.lower_bound().to_bits());
        assert_eq!(back.params(), m.params());
        let proba = m.predict_proba(&gpu, &x).unwrap();
        assert_eq!(back.predict_proba(&gpu, &x).unwrap(), proba, "{t:?}");
        assert_eq!(back.predict(&gpu, &x).unwrap(), m.labels());
    }
}

#[test]
fn wide_rows_score_their_own_parameters_or_are_refused_on_cpu_adapters() {
    // Rows of 20 000 and 60 000 features, two blobs. On CPU-like adapters a diagonal E-step
    // of 60 000 features would outrun llvmpipe's loop cap and score rows on part of their
    // features without a word (it once reported −65 146 where its own parameters give
    // −73 305): the fit is refused there, saying why. Every fit that runs scores its own
    // parameters as the f64 formula does.
    let gpu = gpu();
    let cpu_like = gpu.info().device_type == "Cpu" || gpu.info().name.contains("llvmpipe");
    for (d, seed) in [(20_000usize, 1u64), (60_000, 2)] {
        let noise = datasets::make_blobs(12, d, 1, 1.0, (0.0, 0.0), seed)
            .unwrap()
            .0;
        let x: Vec<f32> = noise
            .iter()
            .enumerate()
            .map(|(e, v)| v + if e / d >= 6 { 5.0 } else { 0.0 })
            .collect();
        let m = Matrix::new(&x, d).unwrap();
        let params = GaussianMixture::new(2)
            .covariance(CovarianceType::Diag)
            .init(GmmInit::Random)
            .seed(seed)
            .max_iter(5);
        let model = match params.fit(&gpu, &m) {
            Err(e) => {
                assert!(cpu_like && d > 20_000, "D = {d}: {e}");
                assert!(e.to_string().contains("reduce the features"), "{e}");
                continue;
            }
            Ok(model) => model,
        };
        // log p(x) = log Σ_k w_k N(x; μ_k, diag σ²_k), in f64 from the model's parameters.
        let (w, mu, var) = (model.weights(), model.means(), model.covariances());
        let mut total = 0.0;
        for row in x.chunks(d) {
            let logs: Vec<f64> = (0..2)
                .map(|c| {
                    let (mu, var) = (&mu[c * d..(c + 1) * d], &var[c * d..(c + 1) * d]);
                    let q: f64 = row
                        .iter()
                        .zip(mu.iter().zip(var))
                        .map(|(&v, (&m, &s))| {
                            ((v as f64 - m).powi(2) / s) + (2.0 * std::f64::consts::PI * s).ln()
                        })
                        .sum();
                    w[c].ln() - 0.5 * q
                })
                .collect();
            let top = logs.iter().cloned().fold(f64::MIN, f64::max);
            total += top + logs.iter().map(|l| (l - top).exp()).sum::<f64>().ln();
        }
        let expected = total / 12.0;
        let score = model.score(&gpu, &m).unwrap();
        let rel = (score - expected).abs() / expected.abs();
        assert!(
            rel < 1e-5,
            "D = {d}: score {score} against {expected} from its parameters"
        );
    }
}
