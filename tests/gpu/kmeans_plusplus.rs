//! The k-means++ seeding on its own (`KMeans::kmeans_plusplus`, scikit-learn's
//! `kmeans_plusplus`): seeds are the rows they name, equal to the fit's initial centroids,
//! spread over well-separated clusters, and never on rows of weight zero.

use crate::common::{gpu, random_matrix};
use wgpu_unsupervised::{datasets, Error, KMeans, KMeansInit, Matrix};

#[test]
fn seeds_are_the_rows_they_name_and_the_fit_starts_from_them() {
    let gpu = gpu();
    for (seed, n, d, k) in [(1u64, 500, 3, 4), (2, 2000, 7, 9), (3, 64, 2, 64)] {
        let x = random_matrix(n, d, seed, -3.0, 3.0);
        let m = Matrix::new(&x, d).unwrap();
        let params = KMeans::new(k).seed(seed);
        let (seeds, indices) = params.kmeans_plusplus(&gpu, &m, None).unwrap();
        assert_eq!((seeds.len(), indices.len()), (k * d, k));
        for (c, &i) in indices.iter().enumerate() {
            assert_eq!(
                &seeds[c * d..(c + 1) * d],
                &x[i * d..(i + 1) * d],
                "seed {seed}"
            );
        }
        let mut distinct = indices.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), k, "distinct rows");
        let init = params
            .clone()
            .init(KMeansInit::KMeansPlusPlus)
            .initial_centroids(&gpu, &m)
            .unwrap();
        assert_eq!(init, seeds);
        assert_eq!(params.kmeans_plusplus(&gpu, &m, None).unwrap().1, indices);
        let other = KMeans::new(k)
            .seed(seed + 100)
            .kmeans_plusplus(&gpu, &m, None)
            .unwrap();
        if k < n {
            assert_ne!(other.1, indices, "another seed, other rows");
        }
    }
}

#[test]
fn one_seed_per_well_separated_cluster() {
    let gpu = gpu();
    for seed in [4u64, 5, 6] {
        let (x, truth, _) = datasets::make_blobs(1200, 4, 6, 0.3, (-50.0, 50.0), seed).unwrap();
        let m = Matrix::new(&x, 4).unwrap();
        let (_, indices) = KMeans::new(6)
            .seed(seed)
            .kmeans_plusplus(&gpu, &m, None)
            .unwrap();
        let mut clusters: Vec<u32> = indices.iter().map(|&i| truth[i]).collect();
        clusters.sort_unstable();
        clusters.dedup();
        assert_eq!(clusters.len(), 6, "seed {seed}: {indices:?}");
    }
}

#[test]
fn rows_of_weight_zero_are_never_seeds() {
    let gpu = gpu();
    for seed in [7u64, 8] {
        let (n, d) = (800, 3);
        let x = random_matrix(n, d, seed, -1.0, 1.0);
        let m = Matrix::new(&x, d).unwrap();
        let weights: Vec<f32> = (0..n)
            .map(|i| {
                if i % 3 == 0 {
                    0.0
                } else {
                    1.0 + (i % 5) as f32
                }
            })
            .collect();
        let (_, indices) = KMeans::new(12)
            .seed(seed)
            .kmeans_plusplus(&gpu, &m, Some(&weights))
            .unwrap();
        assert!(indices.iter().all(|&i| weights[i] > 0.0), "{indices:?}");
    }
}

#[test]
fn bad_input_is_an_error() {
    let gpu = gpu();
    let x = random_matrix(10, 2, 9, 0.0, 1.0);
    let m = Matrix::new(&x, 2).unwrap();
    assert!(matches!(
        KMeans::new(11).kmeans_plusplus(&gpu, &m, None),
        Err(Error::TooFewSamples { .. })
    ));
    assert!(KMeans::new(2)
        .kmeans_plusplus(&gpu, &m, Some(&[1.0; 9]))
        .is_err());
    assert!(KMeans::new(2)
        .kmeans_plusplus(&gpu, &m, Some(&[-1.0; 10]))
        .is_err());
}

/// The device seeding draws what the f64 reference draws, step for step: the same first row,
/// the same D²-sampled candidates and the same choice among them, for several seeds and
/// shapes, with the rows in one binding and split over several (the draws then cross
/// chunks).
#[test]
fn seeds_match_the_reference_draw_for_draw() {
    use rand::SeedableRng;
    use wgpu_unsupervised::reference::kmeans::kmeans_plus_plus;
    for (seed, n, d, k, chunk_rows) in [
        (4u64, 3000, 5, 24, None),
        (5, 1500, 33, 40, None),
        (6, 2500, 3, 17, Some(700)),
        (7, 999, 70, 12, Some(128)),
    ] {
        let gpu = gpu();
        if let Some(rows) = chunk_rows {
            gpu.set_max_chunk_bytes((rows * d * 4) as u64);
        }
        let x = random_matrix(n, d, seed, -2.0, 5.0);
        let params = KMeans::new(k).seed(seed);
        let (seeds, _) = params
            .kmeans_plusplus(&gpu, &Matrix::new(&x, d).unwrap(), None)
            .unwrap();
        let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let expected = kmeans_plus_plus(&x64, d, k, params.n_local_trials(), &mut rng);
        let got: Vec<f64> = seeds.iter().map(|&v| v as f64).collect();
        assert_eq!(got, expected, "seed {seed}, n {n}, d {d}, k {k}");
    }
}
