//! k-means‖ seeding: K distinct rows of the data, the same for a seed, as good a start as
//! k-means++ on well-separated clusters, and usable on every path (weights, streaming).

use crate::common::gpu;
use wgpu_unsupervised::metrics::adjusted_rand_index;
use wgpu_unsupervised::{datasets, Error, KMeans, KMeansInit, Matrix, RowChunks};

/// Inertia of `x` against `centres` (f64, on the host).
fn inertia(x: &[f32], d: usize, centres: &[f32]) -> f64 {
    x.chunks(d)
        .map(|row| {
            centres
                .chunks(d)
                .map(|c| {
                    row.iter()
                        .zip(c)
                        .map(|(a, b)| (*a as f64 - *b as f64).powi(2))
                        .sum::<f64>()
                })
                .fold(f64::INFINITY, f64::min)
        })
        .sum()
}

#[test]
fn seeds_are_distinct_rows_and_depend_only_on_the_seed() {
    let gpu = gpu();
    for (n, d, k, seed) in [(2000, 4, 20, 1), (1500, 8, 50, 2), (600, 2, 7, 3)] {
        let (x, _, _) = datasets::make_blobs(n, d, k, 0.5, (-50.0, 50.0), seed).unwrap();
        let m = Matrix::new(&x, d).unwrap();
        let params = KMeans::new(k).init(KMeansInit::PARALLEL).seed(seed);
        let seeds = params.initial_centroids(&gpu, &m).unwrap();
        assert_eq!(seeds.len(), k * d);
        let mut rows: Vec<usize> = seeds
            .chunks(d)
            .map(|c| {
                x.chunks(d)
                    .position(|r| r == c)
                    .expect("every seed is a data row")
            })
            .collect();
        rows.sort_unstable();
        rows.dedup();
        assert_eq!(rows.len(), k, "distinct rows");
        assert_eq!(params.initial_centroids(&gpu, &m).unwrap(), seeds);
        let other = params
            .clone()
            .seed(seed + 10)
            .initial_centroids(&gpu, &m)
            .unwrap();
        assert_ne!(other, seeds);
    }
}

#[test]
fn as_good_a_start_as_kmeans_plus_plus_on_separated_blobs() {
    let gpu = gpu();
    for seed in [4, 5, 6] {
        let (n, d, k) = (3000, 5, 30);
        let (x, truth, _) = datasets::make_blobs(n, d, k, 0.4, (-60.0, 60.0), seed).unwrap();
        let m = Matrix::new(&x, d).unwrap();
        let parallel = KMeans::new(k)
            .init(KMeansInit::PARALLEL)
            .seed(seed)
            .n_init(2);
        let plus = KMeans::new(k).seed(seed).n_init(2);
        let j_par = inertia(&x, d, &parallel.initial_centroids(&gpu, &m).unwrap());
        let j_pp = inertia(&x, d, &plus.initial_centroids(&gpu, &m).unwrap());
        assert!(
            j_par < 3.0 * j_pp,
            "seed {seed}: k-means|| start {j_par} vs k-means++ {j_pp}"
        );
        let model = parallel.fit(&gpu, &m).unwrap();
        let ari = adjusted_rand_index(model.labels(), &truth).unwrap();
        assert!(ari > 0.97, "seed {seed}: ARI {ari}");
        let reference = plus.fit(&gpu, &m).unwrap();
        assert!(
            model.inertia() <= 1.05 * reference.inertia(),
            "seed {seed}: {} vs {}",
            model.inertia(),
            reference.inertia()
        );
        assert!(model.init_seconds() > 0.0);
    }
}

#[test]
fn small_data_weights_streams_and_bad_parameters() {
    let gpu = gpu();
    // As many rows as clusters: the candidates are topped up to every row.
    let (x, _, _) = datasets::make_blobs(12, 3, 3, 1.0, (-5.0, 5.0), 7).unwrap();
    let m = Matrix::new(&x, 3).unwrap();
    let all = KMeans::new(12)
        .init(KMeansInit::PARALLEL)
        .fit(&gpu, &m)
        .unwrap();
    assert!(all.inertia() < 1e-6, "{}", all.inertia());

    let (y, _, _) = datasets::make_blobs(900, 3, 6, 0.5, (-20.0, 20.0), 8).unwrap();
    let my = Matrix::new(&y, 3).unwrap();
    let params = KMeans::new(6).init(KMeansInit::PARALLEL).seed(8);
    let w: Vec<f32> = (0..900).map(|i| 1.0 + (i % 3) as f32).collect();
    let weighted = params.fit_weighted(&gpu, &my, &w).unwrap();
    assert_eq!(weighted.labels().len(), 900);
    // A stream seeds from a sample of the rows, as k-means++ does.
    let small = crate::common::gpu();
    small.set_memory_budget(8 << 10); // about 300 of the 900 rows per piece
    let chunks = RowChunks::new(900, 3, || y.chunks(200 * 3));
    let streamed = params.fit_source(&small, &chunks).unwrap();
    let resident = params.fit(&gpu, &my).unwrap();
    assert!((streamed.inertia() - resident.inertia()).abs() <= 0.05 * resident.inertia());

    for bad in [
        KMeansInit::KMeansParallel {
            oversampling: 0.0,
            rounds: 5,
        },
        KMeansInit::KMeansParallel {
            oversampling: f64::NAN,
            rounds: 5,
        },
        KMeansInit::KMeansParallel {
            oversampling: 2.0,
            rounds: 0,
        },
    ] {
        assert!(matches!(
            KMeans::new(3).init(bad).fit(&gpu, &my),
            Err(Error::InvalidParameter { .. })
        ));
    }
    assert_eq!(
        "kmeans||".parse::<KMeansInit>().unwrap(),
        KMeansInit::PARALLEL
    );
    assert_eq!(
        "K-Means-Parallel".parse::<KMeansInit>().unwrap(),
        KMeansInit::PARALLEL
    );
}

/// Fashion-MNIST at k = 512 failed with "Copy ... overrunning the bounds of the Source
/// buffer": k-means‖ read every row's distance from the first chunk only, and the data (219 MB)
/// took two chunks of lavapipe's 128 MiB binding. The same at a small shape: many chunks,
/// large k, and duplicated rows so that clusters are left empty after seeding and repaired.
#[test]
fn data_in_many_chunks_with_large_k_and_empty_clusters() {
    for (n, d, k, rows_per_chunk, seed) in [(900, 3, 128, 97, 5u64), (640, 5, 200, 64, 6)] {
        // Fewer distinct rows than k, each repeated: seeds repeat, so Lloyd's first
        // assignment leaves clusters empty (ties go to the lowest index) and repairs them.
        let (base, _, _) = datasets::make_blobs(k / 2, d, 8, 1.0, (-20.0, 20.0), seed).unwrap();
        let x: Vec<f32> = base.iter().copied().cycle().take(n * d).collect();
        let m = Matrix::new(&x, d).unwrap();
        let one = gpu();
        let many = gpu();
        many.set_max_chunk_bytes((rows_per_chunk * d * 4) as u64);
        let params = KMeans::new(k)
            .init(KMeansInit::PARALLEL)
            .seed(seed)
            .max_iter(5);
        let chunked = params.fit(&many, &m).unwrap();
        let whole = params.fit(&one, &m).unwrap();
        assert_eq!(chunked.labels().len(), n);
        assert!(chunked.centroids().iter().all(|v| v.is_finite()));
        // Every distinct row is a centre: nothing is left unexplained.
        assert!(
            chunked.inertia() < 1e-6,
            "n {n} k {k}: inertia {}",
            chunked.inertia()
        );
        // The seeding is the same rows in one chunk or many: the same start.
        assert_eq!(
            params.initial_centroids(&many, &m).unwrap(),
            params.initial_centroids(&one, &m).unwrap(),
            "n {n} k {k}"
        );
        assert!(
            whole.inertia() < 1e-6,
            "n {n} k {k}: inertia {}",
            whole.inertia()
        );
    }
}

#[test]
fn many_rows_per_cluster_seed_from_a_sample_in_any_chunking() {
    // 30 000 rows for K = 12: past max(10 000, 256·K), so k-means‖ runs on a sample of 10 000
    // rows gathered on the device; the seeds are still distinct data rows, fixed by the seed
    // whatever the chunking, and as good a start.
    let gpu = gpu();
    let (n, d, k, seed) = (30_000, 3, 12, 9);
    let (x, truth, _) = datasets::make_blobs(n, d, k, 0.4, (-40.0, 40.0), seed).unwrap();
    let m = Matrix::new(&x, d).unwrap();
    let params = KMeans::new(k).init(KMeansInit::PARALLEL).seed(seed);
    let seeds = params.initial_centroids(&gpu, &m).unwrap();
    let mut rows: Vec<usize> = seeds
        .chunks(d)
        .map(|c| x.chunks(d).position(|r| r == c).expect("a data row"))
        .collect();
    rows.sort_unstable();
    rows.dedup();
    assert_eq!(rows.len(), k);
    let chunked = crate::common::gpu();
    chunked.set_max_chunk_bytes((7001 * d * 4) as u64);
    assert_eq!(params.initial_centroids(&chunked, &m).unwrap(), seeds);
    let model = params.fit(&gpu, &m).unwrap();
    let ari = adjusted_rand_index(model.labels(), &truth).unwrap();
    assert!(ari > 0.97, "ARI {ari}");
}
