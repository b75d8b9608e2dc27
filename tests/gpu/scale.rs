//! Answers that do not depend on the data's scale: every fit and evaluation on data
//! multiplied by 1e-30 and 1e20 (valid f32 whose squares underflow or overflow f32) gives the
//! answer of the unscaled data, in the caller's units, up to f32 rounding.

use crate::common::stream::small_pieces;
use crate::common::{gpu, rel_err_at, times, to_f64};
use wgpu_unsupervised::{
    datasets, metrics, GpuMatrix, KMeans, KMeansInit, KMeansModel, Matrix, MiniBatchKMeans,
    RowChunks,
};

/// The factors of issue 22's reproductions, and one in between that needs no scaling.
const FACTORS: [f32; 3] = [1e-30, 1e20, 3.0];

/// Well-separated blobs: labels do not depend on f32 rounding.
fn blobs(n: usize, d: usize, k: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    let (x, labels, _) = datasets::make_blobs(n, d, k, 0.5, (-10.0, 10.0), seed).unwrap();
    (x, labels)
}

/// The centroids of `model` in the numbering of `base`, after checking that both cluster
/// alike (restarts of equal inertia may number the same clusters differently).
fn matched_centroids(model: &KMeansModel, base: &KMeansModel, what: &str) -> Vec<f64> {
    let ari = metrics::adjusted_rand_index(model.labels(), base.labels()).unwrap();
    assert_eq!(ari, 1.0, "{what}: labels");
    let (k, d) = (base.k(), base.n_features());
    let mut out = vec![0.0; k * d];
    for j in 0..k {
        let row = base.labels().iter().position(|&l| l as usize == j).unwrap();
        let m = model.labels()[row] as usize;
        for f in 0..d {
            out[j * d + f] = model.centroids()[m * d + f] as f64;
        }
    }
    out
}
#[test]
fn kmeans_fits_do_not_depend_on_the_scale() {
    let gpu = gpu();
    for (seed, (n, d, k)) in [(1u64, (400, 3, 4)), (2, (900, 8, 6))] {
        let (x, _) = blobs(n, d, k, seed);
        let params = KMeans::new(k).seed(seed).n_init(2);
        let base = params.fit(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        for c in FACTORS {
            let xc = times(&x, c);
            let m = Matrix::new(&xc, d).unwrap();
            let host = params.fit(&gpu, &m).unwrap();
            let device = params
                .fit(&gpu, &GpuMatrix::upload(&gpu, &m).unwrap())
                .unwrap();
            let chunks: Vec<&[f32]> = xc.chunks(97 * d).collect();
            let source = RowChunks::new(n, d, || chunks.iter().copied());
            let streamed = params.fit_source(&gpu, &source).unwrap();
            for (how, model) in [("host", &host), ("device", &device), ("source", &streamed)] {
                let cents = matched_centroids(model, &base, &format!("{how} x{c:e}"));
                let err = rel_err_at(&cents, &to_f64(base.centroids()), c, 1);
                assert!(err < 1e-5, "{how} x{c:e}: centroids off by {err:e}");
                let err = rel_err_at(&[model.inertia()], &[base.inertia()], c, 2);
                assert!(err < 1e-4, "{how} x{c:e}: inertia off by {err:e}");
                assert!(
                    model.inertia() > 0.0,
                    "{how} x{c:e}: inertia {}",
                    model.inertia()
                );
                assert_eq!(
                    model.params(),
                    base.params(),
                    "{how}: the caller's parameters"
                );
            }
            // Given centroids are in the caller's units too.
            let given = KMeansInit::Centroids(to_f64(&times(base.centroids(), c)));
            let from_given = KMeans::new(k).init(given.clone()).fit(&gpu, &m).unwrap();
            matched_centroids(&from_given, &base, &format!("x{c:e}: given start"));
            assert_eq!(from_given.params().init, given);

            // Predict, transform and score of the scaled model on scaled data.
            assert_eq!(host.predict(&gpu, &m).unwrap(), host.labels(), "x{c:e}");
            let t = to_f64(&host.transform(&gpu, &m).unwrap());
            let t0 = to_f64(&base.transform(&gpu, &Matrix::new(&x, d).unwrap()).unwrap());
            let nearest = |t: &[f64]| -> Vec<f64> {
                t.chunks(k)
                    .map(|r| r.iter().cloned().fold(f64::INFINITY, f64::min))
                    .collect()
            };
            let err = rel_err_at(&nearest(&t), &nearest(&t0), c, 1);
            assert!(err < 1e-4, "x{c:e}: transform off by {err:e}");
            let s = host.score(&gpu, &m).unwrap();
            let s0 = base.score(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
            let err = rel_err_at(&[s], &[s0], c, 2);
            assert!(err < 1e-4, "x{c:e}: score {s:e} against {s0:e}");
        }
    }
}

#[test]
fn kmeans_streamed_and_mini_batch_fits_do_not_depend_on_the_scale() {
    let (n, d, k) = (3000, 4, 3);
    let (x, truth) = blobs(n, d, k, 7);
    let gpu = gpu();
    let mini = MiniBatchKMeans::new(k).batch_size(256).seed(3);
    let mini_base = mini.fit(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    small_pieces(&gpu, 700, n, d);
    let params = KMeans::new(k).seed(5);
    let base = params
        .fit_source(&gpu, &Matrix::new(&x, d).unwrap())
        .unwrap();
    assert_eq!(
        metrics::adjusted_rand_index(base.labels(), &truth).unwrap(),
        1.0
    );
    for c in FACTORS {
        let xc = times(&x, c);
        let m = Matrix::new(&xc, d).unwrap();
        let streamed = params.fit_source(&gpu, &m).unwrap();
        let cents = matched_centroids(&streamed, &base, &format!("streamed x{c:e}"));
        let err = rel_err_at(&cents, &to_f64(base.centroids()), c, 1);
        assert!(err < 1e-5, "streamed x{c:e}: centroids off by {err:e}");

        let model = mini.fit(&gpu, &m).unwrap();
        let labels = model.predict(&gpu, &m).unwrap();
        assert_eq!(
            metrics::adjusted_rand_index(&labels, &truth).unwrap(),
            1.0,
            "x{c:e}"
        );
        let inertia = -model.score(&gpu, &m).unwrap();
        let base_inertia = -mini_base.score(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let err = rel_err_at(&[inertia], &[base_inertia], c, 2);
        assert!(err < 1e-3, "mini-batch x{c:e}: inertia off by {err:e}");
    }
}

#[test]
fn a_model_far_larger_than_the_data_transforms_to_finite_distances() {
    // Issue 22: a centroid at 1e20 and rows at 1e-30 gave infinite distances.
    let gpu = gpu();
    let model =
        wgpu_unsupervised::KMeansModel::from_centroids(vec![1e20, 0.0, 0.0, 1e-30], 2).unwrap();
    let rows = [1e-30f32, 2e-30, 3e-30, -1e-30];
    let x = Matrix::new(&rows, 2).unwrap();
    let t = model.transform(&gpu, &x).unwrap();
    for (i, &v) in t.iter().enumerate() {
        assert!(v.is_finite(), "distance {i} is {v}");
    }
    assert!((t[0] as f64 / 1e20 - 1.0).abs() < 1e-6, "{t:?}");
    assert_eq!(model.predict(&gpu, &x).unwrap(), vec![1, 1]);
    let score = model.score(&gpu, &x).unwrap();
    assert!(score.is_finite() && score <= 0.0, "{score}");
}

#[test]
fn a_distance_beyond_f32_is_an_error_not_infinity() {
    let gpu = gpu();
    let model =
        wgpu_unsupervised::KMeansModel::from_centroids(vec![3e38, 0.0, -3e38, 0.0], 2).unwrap();
    let x = Matrix::new(&[-3e38f32, 0.0, 1.0, 1.0], 2).unwrap();
    let e = model.transform(&gpu, &x).unwrap_err();
    assert!(
        matches!(e, wgpu_unsupervised::Error::OutOfRange { .. }),
        "{e}"
    );
    assert!(e.to_string().contains("row 0 to centroid 0"), "{e}");
    // The labels are representable: the assignment still answers.
    assert_eq!(model.predict(&gpu, &x).unwrap(), vec![1, 0]);
}

#[test]
fn rows_far_beyond_those_that_set_the_scale_are_an_error() {
    // A source that does not know its largest value takes the scale from its first 16 MiB
    // (4096 rows of 1024 features); a later row 2^50 times larger cannot share that scale.
    let (n, d) = (4200, 1024);
    let mut x: Vec<f32> = (0..n * d).map(|i| 1e-30 * (1.0 + (i % 7) as f32)).collect();
    x[4100 * d + 3] = 1.0;
    let chunks: Vec<&[f32]> = x.chunks(1000 * d).collect();
    let source = RowChunks::new(n, d, || chunks.iter().copied());
    let e = KMeans::new(2).fit_source(&gpu(), &source).unwrap_err();
    assert!(matches!(e, wgpu_unsupervised::Error::Source { .. }), "{e}");
    assert!(e.to_string().contains("over 2^50 times"), "{e}");
    // The same rows as a matrix (whose largest value is known) fit.
    KMeans::new(2)
        .fit(&gpu(), &Matrix::new(&x, d).unwrap())
        .unwrap();
}
