//! Gaussian mixtures over row sources that are streamed piece by piece, and their mergeable
//! statistics, held against the resident fit and the f64 reference.

use crate::common::stream::{ragged, small_pieces};

use crate::common::gmm::{mixture_data, random_model, scaled_err};
use crate::common::{gpu, to_f64};
use wgpu_unsupervised::reference::gmm as refg;
use wgpu_unsupervised::reference::metrics::adjusted_rand_index;
use wgpu_unsupervised::{
    datasets, CovarianceType, Error, GaussianMixture, GaussianMixtureModel, GmmInit, GmmStats,
    Matrix, RowChunks, RowSource,
};

/// Asserts that two fits agree within f32 rounding: iterations, parameters, lower bound and
/// (almost all) labels.
fn assert_same_fit(a: &GaussianMixtureModel, b: &GaussianMixtureModel, what: &str) {
    assert_eq!(a.n_iter(), b.n_iter(), "{what}: iterations");
    assert_eq!(a.converged(), b.converged(), "{what}: convergence");
    for (name, x, y) in [
        ("weights", a.weights(), b.weights()),
        ("means", a.means(), b.means()),
        ("covariances", a.covariances(), b.covariances()),
    ] {
        let err = scaled_err(x, y, 1e-3);
        assert!(err < 2e-5, "{what}: {name} differ by {err}");
    }
    let lb = (a.lower_bound() - b.lower_bound()).abs() / b.lower_bound().abs().max(1.0);
    assert!(
        lb < 1e-6,
        "{what}: lower bounds {} {}",
        a.lower_bound(),
        b.lower_bound()
    );
    let n = b.labels().len();
    assert_eq!(a.labels().len(), n, "{what}: label count");
    let same = a
        .labels()
        .iter()
        .zip(b.labels())
        .filter(|(p, q)| p == q)
        .count();
    assert!(same * 1000 >= n * 999, "{what}: {} labels differ", n - same);
}

#[test]
fn streamed_em_equals_the_resident_fit_for_every_covariance_type() {
    for t in CovarianceType::ALL {
        for &(n, d, k, piece, seed) in &[(2400, 3, 3, 500, 1u64), (1500, 5, 4, 333, 2)] {
            let gpu = gpu();
            let x = mixture_data(t, n, d, k, seed);
            let m = Matrix::new(&x, d).unwrap();
            // A start away from the truth, the same for both fits.
            let start = random_model(t, k, d, seed + 100);
            let params = GaussianMixture::new(k)
                .covariance(t)
                .init(GmmInit::Given(start.initial_parameters()))
                .max_iter(40);
            let resident = params.fit(&gpu, &m).unwrap();
            assert!(resident.n_iter() > 2, "{t}: a fit worth comparing");

            small_pieces(&gpu, piece, n, d);
            let chunks = ragged(&x, d, 401, seed);
            let source = RowChunks::new(n, d, || chunks.iter());
            let streamed = params.fit_source(&gpu, &source).unwrap();
            let from_matrix = params.fit_source(&gpu, &m).unwrap();
            assert_eq!(
                streamed, from_matrix,
                "{t} n={n}: chunks and matrix stream alike"
            );
            assert_same_fit(&streamed, &resident, &format!("{t} n={n} d={d} k={k}"));
        }
    }
}

#[test]
fn a_random_start_streams_the_same_responsibilities_as_a_resident_fit() {
    for (t, seed) in [(CovarianceType::Full, 3u64), (CovarianceType::Diag, 4)] {
        let gpu = gpu();
        let (n, d, k) = (2000, 2, 3);
        let x = mixture_data(t, n, d, k, seed);
        let m = Matrix::new(&x, d).unwrap();
        let params = GaussianMixture::new(k)
            .covariance(t)
            .init(GmmInit::Random)
            .n_init(2)
            .max_iter(25)
            .seed(seed);
        let resident = params.fit(&gpu, &m).unwrap();
        small_pieces(&gpu, 450, n, d);
        let streamed = params.fit_source(&gpu, &m).unwrap();
        assert_eq!(streamed, params.fit_source(&gpu, &m).unwrap(), "repeatable");
        assert_same_fit(&streamed, &resident, &format!("{t} random start"));
    }
}

#[test]
fn streamed_kmeans_starts_find_the_components() {
    for init in [GmmInit::KMeans, GmmInit::KMeansPlusPlus] {
        let gpu = gpu();
        let (n, d, k, seed) = (6000, 3, 4, 5u64);
        let (x, truth, _) = datasets::make_blobs(n, d, k, 0.7, (-15.0, 15.0), seed).unwrap();
        let m = Matrix::new(&x, d).unwrap();
        let params = GaussianMixture::new(k).init(init.clone()).seed(seed);
        let resident = params.fit(&gpu, &m).unwrap();
        small_pieces(&gpu, 1000, n, d);
        let streamed = params.fit_source(&gpu, &m).unwrap();
        assert!(streamed.converged(), "{init}");
        // The starts may differ (sampled seeds); on separated blobs the optimum may not.
        let ari = adjusted_rand_index(streamed.labels(), &truth).unwrap();
        assert!(ari > 0.99, "{init}: ARI {ari}");
        let gap = (streamed.lower_bound() - resident.lower_bound()).abs();
        assert!(
            gap < 1e-4,
            "{init}: {} vs {}",
            streamed.lower_bound(),
            resident.lower_bound()
        );
    }
}

/// Nₖ, component means, centred scatters (full or diagonal) and Σ log p in f64 from the
/// reference E-step of `model` on `x`.
fn reference_sums(
    model: &GaussianMixtureModel,
    x: &[f64],
    d: usize,
) -> (Vec<f64>, Vec<f64>, Vec<f64>, f64, Vec<f64>) {
    let k = model.k();
    let full = matches!(
        model.covariance_type(),
        CovarianceType::Full | CovarianceType::Tied
    );
    let (log_resp, log_norm) = refg::estep(x, d, &refg::ReferenceGmm::from_model(model));
    let resp: Vec<f64> = log_resp.iter().map(|v| v.exp()).collect();
    let mut nk = vec![0.0; k];
    let mut means = vec![0.0; k * d];
    for (row, r) in x.chunks_exact(d).zip(resp.chunks_exact(k)) {
        for c in 0..k {
            nk[c] += r[c];
            for j in 0..d {
                means[c * d + j] += r[c] * row[j];
            }
        }
    }
    for c in 0..k {
        means[c * d..(c + 1) * d]
            .iter_mut()
            .for_each(|m| *m /= nk[c]);
    }
    let per = if full { d * d } else { d };
    let mut scatter = vec![0.0; k * per];
    for (row, r) in x.chunks_exact(d).zip(resp.chunks_exact(k)) {
        for c in 0..k {
            let dev = |j: usize| row[j] - means[c * d + j];
            for e in 0..per {
                let (i, j) = if full { (e / d, e % d) } else { (e, e) };
                scatter[c * per + e] += r[c] * dev(i) * dev(j);
            }
        }
    }
    (nk, means, scatter, log_norm.iter().sum(), resp)
}

#[test]
fn statistics_of_partitions_merge_into_those_of_the_whole_and_the_reference() {
    for t in CovarianceType::ALL {
        for &(n, d, k, seed) in &[(3000, 4, 3, 9u64), (777, 1, 2, 10), (1200, 9, 5, 11)] {
            let gpu = gpu();
            let x = mixture_data(t, n, d, k, seed);
            let model = random_model(t, k, d, seed + 7);
            let whole =
                GaussianMixture::pass_stats(&gpu, &Matrix::new(&x, d).unwrap(), &model).unwrap();
            // Three partitions of uneven size, as three machines would hold them; the
            // statistics travel as JSON.
            let cuts = [0, n / 7, n / 2, n];
            let mut merged: Option<GmmStats> = None;
            for w in cuts.windows(2) {
                let part = Matrix::new(&x[w[0] * d..w[1] * d], d).unwrap();
                let s = GaussianMixture::pass_stats(&gpu, &part, &model).unwrap();
                let s: GmmStats = crate::common::via_json(s);
                match &mut merged {
                    None => merged = Some(s),
                    Some(m) => m.merge(&s).unwrap(),
                }
            }
            let merged = merged.unwrap();
            // The whole again, streamed in pieces.
            small_pieces(&gpu, 256, n, d);
            let pieces =
                GaussianMixture::pass_stats(&gpu, &Matrix::new(&x, d).unwrap(), &model).unwrap();

            let x64 = to_f64(&x);
            let (nk, means, scatter, log_l, resp) = reference_sums(&model, &x64, d);
            let what = format!("{t} n={n} d={d} k={k}");
            for s in [&whole, &merged, &pieces] {
                assert_eq!(s.n_rows, n as u64, "{what}");
                assert!(scaled_err(&s.resp_sums, &nk, 1.0) < 1e-5, "{what}: Nk");
                let err = scaled_err(&s.component_means, &means, 1.0);
                assert!(err < 1e-5, "{what}: means {err}");
                let err = scaled_err(&s.scatter, &scatter, 1.0);
                assert!(err < 1e-4, "{what}: scatter {err}");
                let err = (s.log_likelihood - log_l).abs() / log_l.abs();
                assert!(err < 1e-5, "{what}: log-likelihood {err}");
                assert!((s.mean_log_likelihood() - log_l / n as f64).abs() < 1e-4);

                // The next parameters are the reference M-step's, for every component the
                // rows give weight to: responsibilities below f32's range are 0 on the device,
                // and a component without weight keeps its mean there (`gmm` module docs),
                // while the reference divides its tiny sums by Nₖ + 10 ε.
                let next = s.next_parameters(1e-6).unwrap();
                // Statistics from elsewhere whose parts do not fit: an error, not a panic.
                let mut short = s.clone();
                short.scatter.pop();
                assert!(short.next_parameters(1e-6).is_err(), "{what}");
                assert!(s.clone().merge(&short).is_err(), "{what}");
                let (w, mu, cov) = refg::mstep(&x64, d, &resp, k, t, 1e-6).unwrap();
                assert!(scaled_err(&next.weights, &w, 1.0) < 1e-5, "{what}: weights");
                let weighty = |v: &[f64]| -> Vec<f64> {
                    let per = v.len() / k;
                    let kept =
                        (0..k).filter(|&c| per == 0 || nk[c] > 1e-3 || t == CovarianceType::Tied);
                    kept.flat_map(|c| v[c * per..(c + 1) * per].to_vec())
                        .collect()
                };
                let err = scaled_err(&weighty(&next.means), &weighty(&mu), 1.0);
                assert!(err < 1e-5, "{what}: means {err}");
                let err = scaled_err(&weighty(&next.covariances), &weighty(&cov), 1.0);
                assert!(err < 1e-4, "{what}: covariances {err}");
            }
            let err = scaled_err(&merged.scatter, &whole.scatter, 1.0);
            assert!(err < 1e-5, "{what}: merged vs whole scatter {err}");

            // Statistics of other parameters, or of another covariance type, do not merge.
            let other = random_model(t, k, d, seed + 8);
            let theirs =
                GaussianMixture::pass_stats(&gpu, &Matrix::new(&x, d).unwrap(), &other).unwrap();
            let mut ours = whole.clone();
            let e = ours.merge(&theirs).unwrap_err();
            assert!(
                matches!(e, Error::InvalidParameter { name: "stats", .. }),
                "{e}"
            );
            let mut retyped = theirs.clone();
            retyped.means = whole.means.clone();
            retyped.weights = whole.weights.clone();
            retyped.precisions_cholesky = whole.precisions_cholesky.clone();
            retyped.n_features += 1;
            assert!(ours.merge(&retyped).is_err());
            assert_eq!(ours, whole, "a refused merge changes nothing");
        }
    }
}

#[test]
fn sources_that_lie_or_do_not_fit_give_errors() {
    let gpu = gpu();
    let x = mixture_data(CovarianceType::Diag, 1000, 3, 2, 12);
    let params = GaussianMixture::new(2)
        .covariance(CovarianceType::Diag)
        .max_iter(3)
        .init(GmmInit::Random);
    small_pieces(&gpu, 100, 1000, 3);
    let short = RowChunks::new(1200, 3, || [&x[..]]);
    assert_eq!(short.shape(), (1200, 3));
    let e = params.fit_source(&gpu, &short).unwrap_err();
    assert!(matches!(e, Error::Source { .. }), "{e}");
    let model = random_model(CovarianceType::Diag, 2, 3, 1);
    let e = GaussianMixture::pass_stats(&gpu, &short, &model).unwrap_err();
    assert!(matches!(e, Error::Source { .. }), "{e}");

    let mut bad = x.clone();
    bad[3 * 640 + 2] = f32::NAN;
    let nan = RowChunks::new(1000, 3, || ragged(&bad, 3, 97, 3));
    let e = params.fit_source(&gpu, &nan).unwrap_err();
    assert!(
        matches!(
            e,
            Error::NonFinite {
                row: 640,
                col: 2,
                ..
            }
        ),
        "{e}"
    );

    let other_d = random_model(CovarianceType::Diag, 2, 4, 1);
    let m = Matrix::new(&x, 3).unwrap();
    let e = GaussianMixture::pass_stats(&gpu, &m, &other_d).unwrap_err();
    assert!(
        matches!(
            e,
            Error::FeatureMismatch {
                expected: 4,
                found: 3
            }
        ),
        "{e}"
    );
    let empty = RowChunks::new(0, 3, || [&x[..0]]);
    assert!(matches!(
        params.fit_source(&gpu, &empty),
        Err(Error::EmptyData { .. })
    ));
    assert!(matches!(
        GaussianMixture::new(1001).fit_source(&gpu, &m),
        Err(Error::TooFewSamples { .. })
    ));
}

#[test]
fn fit_streams_host_data_over_the_budget_and_agrees_with_the_resident_fit() {
    let gpu = gpu();
    let (n, d, k) = (20_000, 4, 3);
    let x = mixture_data(CovarianceType::Tied, n, d, k, 13);
    let m = Matrix::new(&x, d).unwrap();
    let start = random_model(CovarianceType::Tied, k, d, 14);
    let params = GaussianMixture::new(k)
        .covariance(CovarianceType::Tied)
        .init(GmmInit::Given(start.initial_parameters()))
        .max_iter(15);
    let resident = params.fit(&gpu, &m).unwrap();
    // Rows and responsibilities take 560 KB: under a 400 KB budget `fit` streams them.
    gpu.set_memory_budget(400 << 10);
    let streamed = params.fit(&gpu, &m).unwrap();
    assert_eq!(
        streamed,
        params.fit_source(&gpu, &m).unwrap(),
        "fit streams as fit_source"
    );
    assert_same_fit(&streamed, &resident, "budget");
    // Sums cut at other rows round differently: the fit did stream.
    assert_ne!(streamed.means(), resident.means(), "streamed in pieces");
    gpu.set_memory_budget(256);
    let e = params.fit(&gpu, &m).unwrap_err();
    assert!(matches!(e, Error::OutOfDeviceMemory { .. }), "{e}");
}
