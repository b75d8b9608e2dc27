//! EM with one host↔device round trip per iteration (`gmm/moments.rs`): the first and
//! second moments come from one pass about the E-step means and are centred on the new means
//! in f64. Fits from identical starts must still agree with the f64 reference for every
//! covariance type, several seeds, the tiled scatter (D ≥ 24), sample weights (integer
//! weights against the reference on repeated rows) and a fit streamed in pieces.

use crate::common::gmm::{mixture_data, random_model, scaled_err};
use crate::common::stream::{small_pieces, whole_data};
use crate::common::{gpu, to_f64};
use wgpu_unsupervised::reference::gmm as refg;
use wgpu_unsupervised::{CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit, Matrix};

/// The model against the reference fit: weights, means and covariances scaled by their
/// largest value, and the lower bound relative (printed with `--nocapture`, so that the
/// figures can be set beside another commit's).
fn agrees(g: &GaussianMixtureModel, r: &refg::ReferenceGmm, what: &str, tol: f64) -> Vec<String> {
    // A component without weight keeps its previous mean here and moves toward the origin
    // in the reference (parent module docs of `gmm`): its mean is not compared.
    let d = g.means().len() / g.weights().len();
    let kept = |m: &[f64]| -> Vec<f64> {
        let w = &r.weights;
        (0..m.len())
            .filter(|e| w[e / d] > 1e-3)
            .map(|e| m[e])
            .collect()
    };
    let errs = [
        scaled_err(g.weights(), &r.weights, 1e-3),
        scaled_err(&kept(g.means()), &kept(&r.means), 1e-3),
        scaled_err(g.covariances(), &r.covariances, 1e-3),
        (g.lower_bound() - r.lower_bound).abs() / r.lower_bound.abs(),
    ];
    eprintln!(
        "agreement {what}: weights {:.2e} means {:.2e} covariances {:.2e} bound {:.2e}",
        errs[0], errs[1], errs[2], errs[3]
    );
    let mut bad = Vec::new();
    if g.n_iter() != r.n_iter {
        bad.push(format!(
            "{what}: {} iterations against {}",
            g.n_iter(),
            r.n_iter
        ));
    }
    for (err, part) in errs
        .iter()
        .zip(["weights", "means", "covariances", "bound"])
    {
        // NaN fails too.
        let within = *err < tol;
        if !within {
            bad.push(format!("{what}: {part} differ by {err:e}"));
        }
    }
    bad
}

/// EM from a given start, a fixed number of iterations (tol 0), as the reference.
fn params(t: CovarianceType, k: usize, d: usize, seed: u64) -> GaussianMixture {
    let start = random_model(t, k, d, seed + 100);
    GaussianMixture::new(k)
        .covariance(t)
        .init(GmmInit::Given(start.initial_parameters()))
        .seed(seed)
        .max_iter(12)
        .tol(0.0)
}

#[test]
fn one_pass_em_agrees_with_the_reference_for_every_covariance_type_and_seed() {
    let gpu = gpu();
    let mut bad = Vec::new();
    // D = 4 takes the per-output scatter, D = 30 the tiled one (TILED_SCATTER_MIN_D = 24).
    for (d, seeds) in [(4, 1..4u64), (30, 1..2u64)] {
        for t in CovarianceType::ALL {
            for seed in seeds.clone() {
                let (n, k) = (1500, 3);
                let rows = mixture_data(t, n, d, k, seed);
                let p = params(t, k, d, seed);
                let g = p.fit(&gpu, &Matrix::new(&rows, d).unwrap()).unwrap();
                let r = refg::fit(&to_f64(&rows), d, &p).unwrap();
                bad.extend(agrees(&g, &r, &format!("{t:?} d={d} seed={seed}"), 1e-4));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn one_pass_em_with_sample_weights_agrees_with_the_reference_on_repeated_rows() {
    let gpu = gpu();
    let mut bad = Vec::new();
    for t in CovarianceType::ALL {
        let (n, d, k, seed) = (1200, 3, 3, 5u64);
        let rows = mixture_data(t, n, d, k, seed);
        // Integer weights 0..3: the weighted fit is the fit of the repeated rows.
        let w: Vec<f32> = (0..n).map(|i| ((i * 7 + 1) % 4) as f32).collect();
        let mut repeated = Vec::new();
        for (i, &wi) in w.iter().enumerate() {
            for _ in 0..wi as usize {
                repeated.extend_from_slice(&rows[i * d..(i + 1) * d]);
            }
        }
        let p = params(t, k, d, seed);
        let g = p
            .fit_weighted(&gpu, &Matrix::new(&rows, d).unwrap(), &w)
            .unwrap();
        let r = refg::fit(&to_f64(&repeated), d, &p).unwrap();
        bad.extend(agrees(&g, &r, &format!("{t:?} weighted"), 1e-3));
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn one_pass_em_streamed_in_pieces_agrees_with_the_reference() {
    let mut bad = Vec::new();
    for t in CovarianceType::ALL {
        let gpu = gpu();
        let (n, d, k, seed) = (1600, 3, 3, 9u64);
        let rows = mixture_data(t, n, d, k, seed);
        let m = Matrix::new(&rows, d).unwrap();
        let p = params(t, k, d, seed);
        small_pieces(&gpu, 300, n, d);
        let g = p.fit_source(&gpu, &m).unwrap();
        whole_data(&gpu);
        let r = refg::fit(&to_f64(&rows), d, &p).unwrap();
        bad.extend(agrees(&g, &r, &format!("{t:?} streamed"), 1e-4));
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The mixtures `pinned.rs` pins (default K-Means start, 30 iterations) against the
/// reference fit with the same parameters: the figures that justify re-pinning them.
#[cfg(feature = "datasets")]
#[test]
fn pinned_mixtures_agree_with_the_reference() {
    use wgpu_unsupervised::datasets;
    let gpu = gpu();
    let mut bad = Vec::new();
    let (iris, _) = datasets::iris();
    let (digits, _) = datasets::digits();
    let (blobs, _, _) = datasets::make_blobs(3000, 30, 5, 1.5, (-8.0, 8.0), 11).unwrap();
    for (tag, rows, d, k, t) in [
        ("iris", &iris, 4, 3, CovarianceType::Full),
        ("digits", &digits, 64, 4, CovarianceType::Tied),
        ("digits", &digits, 64, 6, CovarianceType::Diag),
        ("blobs", &blobs, 30, 5, CovarianceType::Full),
        ("blobs", &blobs, 30, 5, CovarianceType::Spherical),
    ] {
        let p = GaussianMixture::new(k).covariance(t).seed(1).max_iter(30);
        let g = p.fit(&gpu, &Matrix::new(rows, d).unwrap()).unwrap();
        let r = refg::fit(&to_f64(rows), d, &p).unwrap();
        bad.extend(agrees(&g, &r, &format!("pinned {tag} k={k} {t:?}"), 1e-3));
    }
    assert!(bad.is_empty(), "{bad:#?}");
}
