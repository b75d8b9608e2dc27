//! f64 data far from 0 (X + 1e8, X − 3e9, X + 1e39) give the models of the data themselves:
//! every fit, predict, transform, score and metric centres f64 rows in f64 before the f32
//! cast (module `origin`, issue 35). Several seeds and offsets; the data cast to f32 first
//! are the control that shows the offsets matter.

use crate::common::{gpu, max_rel_err, via_json};
use wgpu_unsupervised::{
    datasets, metrics, Affinity, Components, CovarianceType, Error, GaussianMixture, KMeans,
    KMeansInit, Matrix, Matrix64, MiniBatchKMeans, Pca, PcaMoments, SpectralClustering,
};

/// Blobs of `n` x `d` in f64 and the same rows plus `offset` (a different offset per
/// column, `offset` times 1, −3, 7, ...).
fn offset_blobs(n: usize, d: usize, k: usize, seed: u64, offset: f64) -> (Vec<f64>, Vec<f64>) {
    let (x, _, _) = datasets::make_blobs(n, d, k, 0.7, (-6.0, 6.0), seed).unwrap();
    let x: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let shifted = x
        .iter()
        .enumerate()
        .map(|(e, v)| v + offset * column_factor(e % d))
        .collect();
    (x, shifted)
}

fn column_factor(j: usize) -> f64 {
    [1.0, -3.0, 7.0, 0.5, -1.0][j % 5]
}

/// `values` (rows of `d`) less the column offsets of [`offset_blobs`].
fn unshift(values: &[f64], d: usize, offset: f64) -> Vec<f64> {
    values
        .iter()
        .enumerate()
        .map(|(e, v)| v - offset * column_factor(e % d))
        .collect()
}

fn widen(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

const OFFSETS: [f64; 3] = [1e8, -3e9, 1e12];

/// Labels that agree but for rows at near ties (f32 rounding of the centred rows differs in
/// the last bit with the offset): at most 1 row in 200.
fn assert_near_ties(a: &[u32], b: &[u32], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    let differ = a.iter().zip(b).filter(|(x, y)| x != y).count();
    assert!(
        differ * 200 <= a.len(),
        "{what}: {differ} of {} labels differ",
        a.len()
    );
}

/// What positions of f32 rounding (values up to about 10) plus f64's own spacing at the
/// largest offset of [`offset_blobs`] (the resolution of the offset data themselves) allow.
fn resolution(offset: f64) -> f64 {
    2e-5 + 16.0 * f64::EPSILON * 7.0 * offset.abs()
}

/// The first K-Means fit of a shape in a process times the autotuner's assignment variants,
/// and on this branch's base (main at 1f166c4) that fit's first update comes out wrong (the
/// inertia rises and the fit stops: `kmeans_gpu::accumulate_cluster_partials_one_update_step_
/// matches_reference_far_from_origin` fails when run alone). That is the kernel layer's, and
/// it is reported there; the comparisons here fit each shape once first, so that they test
/// the centring whatever order the tests run in.
fn tuned<T>(fit: impl Fn() -> wgpu_unsupervised::Result<T>) -> T {
    fit().unwrap();
    fit().unwrap()
}

fn max_abs_err(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).fold(0.0, |m, (x, y)| m.max((x - y).abs()))
}

#[test]
fn kmeans_of_offset_data_is_the_kmeans_of_the_data() {
    let gpu = gpu();
    let (n, d, k) = (900, 4, 4);
    for seed in [1u64, 2, 3] {
        for offset in OFFSETS {
            let (x, xs) = offset_blobs(n, d, k, seed, offset);
            let (m, ms) = (
                Matrix64::new(&x, d).unwrap(),
                Matrix64::new(&xs, d).unwrap(),
            );
            let params = KMeans::new(k).seed(seed);
            let base = tuned(|| params.fit(&gpu, &m));
            let model = params.fit(&gpu, &ms).unwrap();
            let what = format!("seed {seed}, offset {offset:e}");
            assert_near_ties(model.labels(), base.labels(), &what);
            let err = (model.inertia() - base.inertia()).abs() / base.inertia();
            assert!(err < 1e-5, "{what}: inertia off by {err:e}");
            let back = unshift(&model.centroids_f64(), d, offset);
            let err = max_abs_err(&back, &base.centroids_f64());
            assert!(err < resolution(offset), "{what}: centroids off by {err:e}");
            let origin = model
                .origin()
                .expect("a model of f64 data keeps its origin");
            let means = ms.column_means();
            assert_eq!(origin, &means[..], "{what}: the origin is the data's mean");
            // Predictions of the offset rows centre them on the model's origin.
            assert_near_ties(&model.predict(&gpu, &ms).unwrap(), model.labels(), &what);
            let score = model.score(&gpu, &ms).unwrap();
            assert!(
                (score + model.inertia()).abs() < 1e-5 * model.inertia(),
                "{what}"
            );
            let t = widen(&model.transform(&gpu, &ms).unwrap());
            let t0 = widen(&base.transform(&gpu, &m).unwrap());
            let err = max_abs_err(&t, &t0);
            assert!(
                err < 1e-4 + 2.0 * resolution(offset),
                "{what}: distances off by {err:e}"
            );
            // A given start in the data's units is moved with them.
            let given = KMeans::new(k).init(KMeansInit::Centroids(model.centroids_f64()));
            let again = given.fit(&gpu, &ms).unwrap();
            assert_near_ties(again.labels(), model.labels(), &what);
            match given.init {
                KMeansInit::Centroids(c) => assert_eq!(c, model.centroids_f64()),
                _ => unreachable!(),
            }
            assert!(matches!(
                &again.params().init,
                KMeansInit::Centroids(c) if *c == model.centroids_f64()
            ));
        }
        // The control: the same rows rounded to f32 first lose the clusters' detail.
        let (_, xs) = offset_blobs(n, d, k, seed, 1e8);
        let rounded: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
        let f32_model = KMeans::new(k)
            .seed(seed)
            .fit(&gpu, &Matrix::new(&rounded, d).unwrap())
            .unwrap();
        let base = tuned(|| {
            KMeans::new(k)
                .seed(seed)
                .fit(&gpu, &Matrix64::new(&xs, d).unwrap())
        });
        // Its clusters, measured on the true rows, are far from the centred fit's.
        let true_rows = Matrix64::new(&xs, d).unwrap();
        let lost = metrics::inertia(&true_rows, f32_model.labels()).unwrap();
        assert!(
            lost > 1.5 * base.inertia(),
            "rounding X + 1e8 to f32 should cost: {lost} vs {}",
            base.inertia()
        );
    }
}

#[test]
fn weighted_and_mini_batch_fits_centre_too() {
    let gpu = gpu();
    let (n, d, k) = (800, 3, 3);
    for seed in [4u64, 5] {
        let (x, xs) = offset_blobs(n, d, k, seed, 1e8);
        let (m, ms) = (
            Matrix64::new(&x, d).unwrap(),
            Matrix64::new(&xs, d).unwrap(),
        );
        let w: Vec<f32> = (0..n).map(|i| 0.5 + (i % 4) as f32).collect();
        let a = tuned(|| KMeans::new(k).seed(seed).fit_weighted(&gpu, &m, &w));
        let b = KMeans::new(k)
            .seed(seed)
            .fit_weighted(&gpu, &ms, &w)
            .unwrap();
        assert_near_ties(a.labels(), b.labels(), "weighted");
        assert!((a.inertia() - b.inertia()).abs() < 1e-5 * a.inertia());
        let mb = MiniBatchKMeans::new(k).batch_size(128).seed(seed);
        let a = tuned(|| mb.fit(&gpu, &m));
        let b = mb.fit(&gpu, &ms).unwrap();
        assert_near_ties(a.labels(), b.labels(), "mini-batch");
        let back = unshift(&b.centroids_f64(), d, 1e8);
        assert!(
            max_rel_err(&back, &a.centroids_f64(), 1.0) < 1e-4,
            "seed {seed}"
        );
    }
}

#[test]
fn mixtures_and_pca_of_offset_data_are_those_of_the_data() {
    let gpu = gpu();
    let (n, d, k) = (700, 3, 3);
    for (seed, t) in [
        (6u64, CovarianceType::Full),
        (7, CovarianceType::Diag),
        (8, CovarianceType::Tied),
    ] {
        for offset in [1e8, -2e10] {
            let (x, xs) = offset_blobs(n, d, k, seed, offset);
            let (m, ms) = (
                Matrix64::new(&x, d).unwrap(),
                Matrix64::new(&xs, d).unwrap(),
            );
            let what = format!("{t:?} seed {seed} offset {offset:e}");
            let params = GaussianMixture::new(k).covariance(t).seed(seed);
            let base = tuned(|| params.fit(&gpu, &m));
            let model = params.fit(&gpu, &ms).unwrap();
            assert_near_ties(model.labels(), base.labels(), &what);
            let err = max_rel_err(&unshift(model.means(), d, offset), base.means(), 1.0);
            assert!(err < 1e-5, "{what}: means off by {err:e}");
            let err = max_rel_err(model.covariances(), base.covariances(), 1e-3);
            assert!(err < 1e-4, "{what}: covariances off by {err:e}");
            assert!(
                (model.lower_bound() - base.lower_bound()).abs() < 1e-4,
                "{what}"
            );
            let s = widen(&model.score_samples(&gpu, &ms).unwrap());
            let s0 = widen(&base.score_samples(&gpu, &m).unwrap());
            assert!(max_rel_err(&s, &s0, 1.0) < 1e-4, "{what}: score_samples");
            assert_near_ties(&model.predict(&gpu, &ms).unwrap(), base.labels(), &what);
            // The control: the rows rounded to f32 first.
            if offset == 1e8 && t == CovarianceType::Full {
                let rounded: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
                let f32_model = params.fit(&gpu, &Matrix::new(&rounded, d).unwrap());
                // Refusing the rounded rows would be a loss too; a fit must be far off.
                if let Ok(f) = f32_model {
                    assert!((f.lower_bound() - base.lower_bound()).abs() > 0.5, "{what}");
                }
            }

            let pca = Pca::new(Components::Count(2));
            let p0 = tuned(|| pca.fit(&gpu, &m));
            let p = pca.fit(&gpu, &ms).unwrap();
            let err = max_rel_err(p.explained_variance(), p0.explained_variance(), 1e-6);
            assert!(err < 1e-5, "{what}: PCA variances off by {err:e}");
            let tol = resolution(offset);
            let err = max_abs_err(&unshift(p.mean(), d, offset), p0.mean());
            assert!(err < tol, "{what}: PCA mean off by {err:e}");
            let z = widen(&p.transform(&gpu, &ms).unwrap());
            let z0 = widen(&p0.transform(&gpu, &m).unwrap());
            assert!(max_rel_err(&z, &z0, 1.0) < 1e-4, "{what}: projections");
            let back = p
                .inverse_transform_f64(
                    &gpu,
                    &Matrix::new(&p.transform(&gpu, &ms).unwrap(), 2).unwrap(),
                )
                .unwrap();
            let back0 = p0
                .inverse_transform_f64(
                    &gpu,
                    &Matrix::new(&p0.transform(&gpu, &m).unwrap(), 2).unwrap(),
                )
                .unwrap();
            assert!(
                max_rel_err(&unshift(&back, d, offset), &back0, 1.0) < 1e-4,
                "{what}"
            );
            let ll = p.score_samples(&ms).unwrap();
            let ll0 = p0.score_samples(&m).unwrap();
            let err = max_rel_err(&ll, &ll0, 1.0);
            assert!(
                err < 1e-5 + 10.0 * resolution(offset),
                "{what}: PCA score_samples {err:e}"
            );
            let mo = PcaMoments::of(&gpu, &ms, true).unwrap();
            let err = max_abs_err(&unshift(&mo.mean, d, offset), p0.mean());
            assert!(err < tol, "{what}: moments' mean off by {err:e}");
        }
    }
}

#[test]
fn metrics_and_spectral_clustering_centre_offset_data() {
    let gpu = gpu();
    let (n, d, k) = (400, 3, 3);
    for seed in [9u64, 10] {
        let (x, xs) = offset_blobs(n, d, k, seed, 1e9);
        let (m, ms) = (
            Matrix64::new(&x, d).unwrap(),
            Matrix64::new(&xs, d).unwrap(),
        );
        let labels = tuned(|| KMeans::new(k).seed(seed).fit(&gpu, &m))
            .labels()
            .to_vec();
        let pairs = [
            (
                metrics::silhouette(&gpu, &ms, &labels, None, 0)
                    .unwrap()
                    .score,
                metrics::silhouette(&gpu, &m, &labels, None, 0)
                    .unwrap()
                    .score,
            ),
            (
                metrics::calinski_harabasz(&ms, &labels).unwrap(),
                metrics::calinski_harabasz(&m, &labels).unwrap(),
            ),
            (
                metrics::davies_bouldin(&ms, &labels).unwrap(),
                metrics::davies_bouldin(&m, &labels).unwrap(),
            ),
            (
                metrics::inertia(&ms, &labels).unwrap(),
                metrics::inertia(&m, &labels).unwrap(),
            ),
        ];
        for (i, (a, b)) in pairs.into_iter().enumerate() {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs(),
                "seed {seed}, metric {i}: {a} vs {b}"
            );
        }
        let sc = SpectralClustering::new(k)
            .affinity(Affinity::Rbf { gamma: 0.05 })
            .seed(seed);
        let a = sc.fit(&gpu, &ms).unwrap();
        let b = tuned(|| sc.fit(&gpu, &m));
        assert_eq!(
            metrics::adjusted_rand_index(a.labels(), b.labels()).unwrap(),
            1.0,
            "seed {seed}: spectral"
        );
    }
}

#[test]
fn data_beyond_f32_are_centred_or_refused_with_the_reason() {
    let gpu = gpu();
    let (n, d, k) = (300, 2, 2);
    let (x, _) = offset_blobs(n, d, k, 12, 0.0);
    // Far beyond f32's largest value, their spread within it (and held by f64 at that
    // offset, whose values are 2e23 apart): the mixtures and PCA (f64 models) fit as the
    // data without the offset do; K-Means keeps centroids in f32 and says why it cannot.
    let far: Vec<f64> = x.iter().map(|v| v * 1e30 + 1e39).collect();
    let m = Matrix64::new(&far, d).unwrap();
    let base = Matrix64::new(&x, d).unwrap();
    let pca = Pca::new(Components::Count(1)).fit(&gpu, &m).unwrap();
    assert!((pca.mean()[0] / 1e39 - 1.0).abs() < 1e-6);
    let p0 = tuned(|| Pca::new(Components::Count(1)).fit(&gpu, &base));
    let err = max_rel_err(
        pca.explained_variance_ratio(),
        p0.explained_variance_ratio(),
        1e-6,
    );
    assert!(err < 1e-5, "PCA beyond f32: ratio off by {err:e}");
    let gmm = GaussianMixture::new(k).seed(1).fit(&gpu, &m).unwrap();
    let g0 = tuned(|| GaussianMixture::new(k).seed(1).fit(&gpu, &base));
    // log p(1e30·x) = log p(x) − D ln 1e30.
    let lb = gmm.lower_bound() + d as f64 * 1e30f64.ln();
    assert!(
        (lb - g0.lower_bound()).abs() < 1e-3,
        "{lb} vs {}",
        g0.lower_bound()
    );
    let e = KMeans::new(k).fit(&gpu, &m).unwrap_err();
    assert!(matches!(e, Error::Float32Range { .. }), "{e}");
    assert!(e.to_string().contains("float32"), "{e}");
    // A spread f32 cannot hold, above or below: refused, and the message says so.
    for factor in [1e300, 1e-300] {
        let wide: Vec<f64> = x.iter().map(|v| v * factor).collect();
        let m = Matrix64::new(&wide, d).unwrap();
        for e in [
            KMeans::new(k).fit(&gpu, &m).unwrap_err(),
            Pca::new(Components::Count(1)).fit(&gpu, &m).unwrap_err(),
        ] {
            assert!(matches!(e, Error::Float32Range { .. }), "{factor:e}: {e}");
            assert!(!e.to_string().contains("non-finite"), "{e}");
        }
    }
}

#[test]
fn the_origin_travels_with_the_model() {
    let gpu = gpu();
    let (n, d, k) = (300, 3, 3);
    let (_, xs) = offset_blobs(n, d, k, 13, 1e8);
    let ms = Matrix64::new(&xs, d).unwrap();
    let model = KMeans::new(k).seed(13).fit(&gpu, &ms).unwrap();
    let back = via_json(model.clone());
    assert_eq!(back.origin(), model.origin());
    assert_eq!(back.centroids_f64(), model.centroids_f64());
    assert_eq!(back.predict(&gpu, &ms).unwrap(), model.labels());
    #[cfg(feature = "serde")]
    {
        // An origin that does not add up to the centroids is an inconsistent model.
        let json = serde_json::to_string(&model).unwrap();
        let edited = json.replacen("\"point\":[", "\"point\":[1", 1);
        assert_ne!(edited, json, "the origin is written");
        let e = serde_json::from_str::<wgpu_unsupervised::KMeansModel>(&edited).unwrap_err();
        assert!(e.to_string().contains("origin"), "{e}");
    }
    // A model of f32 data has no origin; f64 rows are centred on its centroids' mean.
    let (x, _) = offset_blobs(n, d, k, 13, 0.0);
    let f: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let plain = KMeans::new(k)
        .seed(13)
        .fit(&gpu, &Matrix::new(&f, d).unwrap())
        .unwrap();
    assert!(plain.origin().is_none());
    let m = Matrix64::new(&x, d).unwrap();
    assert_eq!(plain.predict(&gpu, &m).unwrap(), plain.labels());
}
