//! PCA over streamed row sources, from merged moments and chunk by chunk, held against the
//! resident fit and the f64 reference.

use crate::common::pca::{spectrum_data, subspace_angle};
use crate::common::stream::small_pieces;
use crate::common::{gpu, max_rel_err, to_f64};
use wgpu_unsupervised::reference::pca as refp;
use wgpu_unsupervised::{
    Components, Error, IncrementalPca, Matrix, Pca, PcaMoments, PcaSolver, RowChunks,
};

const SCALES: [f32; 9] = [9.0, 6.0, 4.0, 2.5, 1.5, 1.0, 0.6, 0.3, 0.1];

/// `values` cut into chunks of `rows` rows.
fn chunks_of(values: &[f32], d: usize, rows: usize) -> Vec<&[f32]> {
    values.chunks(rows * d).collect()
}

fn assert_same_model(a: &wgpu_unsupervised::PcaModel, b: &wgpu_unsupervised::PcaModel, what: &str) {
    let (m, d) = (a.n_components(), a.n_features());
    assert_eq!((m, d), (b.n_components(), b.n_features()), "{what}");
    let err = max_rel_err(a.explained_variance(), b.explained_variance(), 1e-3);
    assert!(err < 1e-4, "{what}: explained variance {err}");
    let err = max_rel_err(a.mean(), b.mean(), 1.0);
    assert!(err < 1e-5, "{what}: mean {err}");
    let angle = subspace_angle(a.components(), b.components(), m, d);
    assert!(angle < 1e-3, "{what}: subspace angle {angle}");
    assert!((a.total_variance() - b.total_variance()).abs() / b.total_variance() < 1e-5);
    assert_eq!(a.n_samples(), b.n_samples());
}

#[test]
fn streamed_pca_equals_the_resident_fit_for_every_solver() {
    let d = SCALES.len();
    for &(n, offset, piece, seed) in &[(4000, 0.0f32, 900, 1u64), (2501, 300.0, 1000, 2)] {
        let x = spectrum_data(n, &SCALES, seed, offset);
        let m = Matrix::new(&x, d).unwrap();
        for (solver, standardize, whiten) in [
            (PcaSolver::Full, false, false),
            (PcaSolver::Full, true, true),
            (PcaSolver::Power, false, false),
            (PcaSolver::MatrixFree, false, true),
            (PcaSolver::MatrixFree, true, false),
        ] {
            let gpu = gpu();
            let params = Pca::new(Components::Count(4))
                .solver(solver)
                .standardize(standardize)
                .whiten(whiten)
                .tol(1e-6);
            let resident = params.fit(&gpu, &m).unwrap();
            small_pieces(&gpu, piece, n, d);
            let parts = chunks_of(&x, d, 313);
            let source = RowChunks::new(n, d, || parts.iter().copied());
            let streamed = params.fit_source(&gpu, &source).unwrap();
            let what = format!("n={n} {solver:?} standardize={standardize}");
            assert_same_model(&streamed, &resident, &what);

            let r = refp::fit(&to_f64(&x), d, &params).unwrap();
            let err = max_rel_err(streamed.explained_variance(), &r.explained_variance, 1e-3);
            assert!(err < 1e-4, "{what}: vs reference {err}");
            // Projections agree too (whitening included).
            let z = streamed.transform(&gpu, &m).unwrap();
            let zr = resident.transform(&gpu, &m).unwrap();
            let err = max_rel_err(&to_f64(&z), &to_f64(&zr), 1.0);
            assert!(err < 1e-3, "{what}: projections {err}");
        }
    }
}

#[test]
fn moments_of_partitions_merge_into_the_moments_of_the_whole() {
    let gpu = gpu();
    let d = SCALES.len();
    for (seed, offset) in [(3u64, 0.0f32), (4, 1e3)] {
        let n = 3000;
        let x = spectrum_data(n, &SCALES, seed, offset);
        let whole = PcaMoments::of(&gpu, &Matrix::new(&x, d).unwrap(), true).unwrap();
        let mut merged: Option<PcaMoments> = None;
        for part in [&x[..17 * d], &x[17 * d..1900 * d], &x[1900 * d..]] {
            let p = PcaMoments::of(&gpu, &Matrix::new(part, d).unwrap(), true).unwrap();
            let p: PcaMoments = crate::common::via_json(p);
            match merged.as_mut() {
                None => merged = Some(p),
                Some(t) => t.merge(&p).unwrap(),
            }
        }
        let merged = merged.unwrap();
        assert_eq!(merged.n, n as u64);
        // Against the reference's f64 mean and covariance.
        let x64 = to_f64(&x);
        let mean = refp::column_means(&x64, d);
        let cov = refp::covariance(&x64, d, Some(&mean), 0);
        let comoment: Vec<f64> = cov.iter().map(|v| v * n as f64).collect();
        for m in [&whole, &merged] {
            assert!(max_rel_err(&m.mean, &mean, 1.0) < 1e-5, "seed {seed}: mean");
            let scale = comoment.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            let err = max_rel_err(&m.comoment, &comoment, scale);
            assert!(err < 1e-5, "seed {seed} offset {offset}: co-moment {err}");
        }
        // Diagonal-only moments do not mix with full ones.
        let diag = PcaMoments::of(&gpu, &Matrix::new(&x, d).unwrap(), false).unwrap();
        assert_eq!(diag.comoment.len(), d);
        assert!(merged.clone().merge(&diag).is_err());
        let params = Pca::new(Components::Count(3));
        assert!(params.fit_moments(&gpu, &diag).is_err());
        // Moments from elsewhere whose parts do not fit are an error, not a panic.
        let mut short = merged.clone();
        short.mean.pop();
        assert!(matches!(
            params.fit_moments(&gpu, &short),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(merged.clone().merge(&short).is_err());
        let mut nan = merged.clone();
        nan.comoment[3] = f64::NAN;
        assert!(nan.check().is_err());
        let from_moments = params.fit_moments(&gpu, &merged).unwrap();
        let resident = params.fit(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        assert_same_model(&from_moments, &resident, "fit_moments");
    }
}

#[test]
fn incremental_pca_over_chunks_equals_a_full_fit() {
    let gpu = gpu();
    let d = SCALES.len();
    for (seed, rows) in [(5u64, 250), (6, 1001)] {
        let n = 5000;
        let x = spectrum_data(n, &SCALES, seed, 50.0);
        let params = Pca::new(Components::Fraction(0.9)).ddof(1);
        let mut inc = IncrementalPca::new(params.clone());
        assert!(matches!(inc.model(&gpu), Err(Error::EmptyData { .. })));
        for part in chunks_of(&x, d, rows) {
            inc.partial_fit(&gpu, &Matrix::new(part, d).unwrap())
                .unwrap();
        }
        let full = params.fit(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        assert_same_model(&inc.model(&gpu).unwrap(), &full, "incremental");
        assert_eq!(inc.moments().unwrap().n, n as u64);
        let wrong = vec![1.0f32; 10 * (d + 1)];
        assert!(matches!(
            inc.partial_fit(&gpu, &Matrix::new(&wrong, d + 1).unwrap()),
            Err(Error::FeatureMismatch { .. })
        ));
    }
}

#[test]
fn a_streamed_moments_pass_reads_back_once_a_piece() {
    // Each piece's column moments, centre and cross products share one submission, and the
    // next piece is submitted before this one's are read: one readback a piece.
    let d = SCALES.len();
    let (n, piece) = (4000, 900);
    let x = spectrum_data(n, &SCALES, 5, 40.0);
    let parts = chunks_of(&x, d, 313);
    let source = RowChunks::new(n, d, || parts.iter().copied());
    let gpu = gpu();
    small_pieces(&gpu, piece, n, d);
    let params = Pca::new(Components::Count(4)).solver(PcaSolver::Full);
    params.fit_source(&gpu, &source).unwrap();
    let (model, p) = gpu
        .profile(wgpu_unsupervised::ProfileClock::Auto, || {
            params.fit_source(&gpu, &source)
        })
        .unwrap();
    let pieces = n.div_ceil(piece);
    assert_eq!(p.host.readbacks, pieces, "{:?}", p.host);
    let resident = params.fit(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    assert_same_model(&model, &resident, "one readback a piece");
}
