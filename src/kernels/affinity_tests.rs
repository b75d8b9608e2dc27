//! The affinity products of spectral clustering (`affinity.rs`): both variants (and the
//! neighbour search's host twin) against f64 host sums and brute-force neighbour lists, with chunks, several column passes, uniform
//! slices and data split into runs, and past the size where llvmpipe's loop budget
//! (`GpuInfo::loop_back_edge_budget`) once cut the neighbour search short.

use super::affinity::{
    nearest_neighbors_with, rbf_times_block_with, AffinityVariant, KNN_UNIFORM_MAX_K, UNIFORM_MAX_D,
};
use super::affinity_host::nearest_neighbors_host;
use crate::data::Matrix;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::tests::{gpu, random};
use crate::gpu::{Gpu, GpuMatrix};

const VARIANTS: [AffinityVariant; 2] = [AffinityVariant::Storage, AffinityVariant::Uniform];

fn assert_close(what: &str, gpu: &[f32], host: &[f64]) {
    assert_eq!(gpu.len(), host.len(), "{what}");
    for (i, (&g, &h)) in gpu.iter().zip(host).enumerate() {
        let tol = 1e-5 * h.abs().max(1.0);
        assert!((g as f64 - h).abs() <= tol, "{what}[{i}]: {g} vs {h}");
    }
}

/// A device whose data chunks hold `rows` rows of `d` features, or the shared one.
fn chunked<'a>(shared: &'a Gpu, own: &'a Gpu, rows: Option<usize>, d: usize) -> &'a Gpu {
    match rows {
        Some(rows) => {
            own.set_max_chunk_bytes((rows * d * 4) as u64);
            own
        }
        None => shared,
    }
}

#[test]
fn the_rbf_product_is_right_in_both_variants_at_every_chunking_and_block_width() {
    let gpu = gpu();
    // 70 rows of 1, 17 (one feature past a staging step) and 3 features; 40 columns take two
    // passes of RBF_COLS; chunks of 23 rows leave partial tiles and workgroups; 1100 rows of
    // 31 features with 20 columns fill several uniform slices (16384 values: 528 rows).
    for (n, d, m, chunk) in [
        (70, 1, 3, None),
        (70, 17, 40, Some(23)),
        (70, 3, 32, Some(23)),
        (1100, 31, 20, Some(700)),
        // Past the uniform kernel's registers: the storage kernel, in several runs of rows
        // within llvmpipe's loop budget.
        (2000, 33, 5, None),
    ] {
        let gamma = 0.7 / d as f64;
        let x = random(n * d, d as u64);
        let v = random(n * m, 100 + m as u64);
        let mut host = vec![0.0f64; n * m];
        for i in 0..n {
            for j in (0..n).filter(|&j| j != i) {
                let d2: f64 = (0..d)
                    .map(|f| (x[i * d + f] as f64 - x[j * d + f] as f64).powi(2))
                    .sum();
                let w = (-gamma * d2).exp();
                for c in 0..m {
                    host[i * m + c] += w * v[j * m + c] as f64;
                }
            }
        }
        let own = crate::Gpu::new().unwrap();
        let g = chunked(&gpu, &own, chunk, d);
        let xg = GpuMatrix::upload(g, &Matrix::new(&x, d).unwrap()).unwrap();
        let vb = DeviceBuffer::from_slice(g, "block", &v);
        let mut first: Option<Vec<f32>> = None;
        for (variant, wg) in [
            (AffinityVariant::Storage, 32),
            (AffinityVariant::Storage, 64),
            (AffinityVariant::Storage, 128),
            (AffinityVariant::Uniform, 64),
        ]
        .into_iter()
        .filter(|&(v, _)| d <= UNIFORM_MAX_D || v == AffinityVariant::Storage)
        {
            let out = rbf_times_block_with(g, &xg, gamma as f32, &vb, m, (variant, wg)).unwrap();
            let what = format!("n = {n}, D = {d}, m = {m}, {variant:?}, RBF_WG_SIZE = {wg}");
            assert_close(&what, &out, &host);
            // Every variant and workgroup size sums each query in the same order.
            match &first {
                None => first = Some(out),
                Some(f) => assert!(
                    f.iter().zip(&out).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{what}: not the same bits as the first variant"
                ),
            }
        }
    }
}

/// The `k` nearest rows of row `q` by f64 distances of the f32 values, ties by index.
fn brute_force(x: &[f32], d: usize, q: usize, k: usize) -> Vec<u32> {
    let n = x.len() / d;
    let mut all: Vec<(f64, u32)> = (0..n)
        .map(|j| {
            let d2 = (0..d)
                .map(|f| (x[q * d + f] as f64 - x[j * d + f] as f64).powi(2))
                .sum();
            (d2, j as u32)
        })
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    all[..k].iter().map(|p| p.1).collect()
}

/// Checks the lists of the sampled rows against brute force: the same rows, or, where
/// the f32 distances tie or swap near-equal neighbours, the same distances.
fn check_lists(
    what: &str,
    x: &[f32],
    d: usize,
    k: usize,
    rows: &[usize],
    got: &[u32],
    dist: &[f32],
) {
    for &q in rows {
        let want = brute_force(x, d, q, k);
        let list = &got[q * k..(q + 1) * k];
        assert_eq!(
            list[0] as usize, q,
            "{what}: row {q} is not its own nearest"
        );
        let d2 = |j: u32| -> f64 {
            (0..d)
                .map(|f| (x[q * d + f] as f64 - x[j as usize * d + f] as f64).powi(2))
                .sum()
        };
        for t in 0..k {
            let (a, b) = (d2(list[t]), d2(want[t]));
            assert!(
                list[t] == want[t] || (a - b).abs() <= 1e-5 * b.max(1e-12),
                "{what}: row {q}, neighbour {t}: {} (d² {a}) vs {} (d² {b})",
                list[t],
                want[t]
            );
            assert!(
                (dist[q * k + t] as f64 - a).abs() <= 1e-5 * a.max(1e-6),
                "{what}: d²"
            );
        }
    }
}

#[test]
fn both_neighbour_searches_find_the_brute_force_lists_with_chunks_and_slices() {
    let gpu = gpu();
    // Chunks of 37 rows; 9000 rows of 2 features fill more than one slice (8192 rows);
    // 33 features (past the uniform kernel's registers) fall back to storage there.
    for (n, d, k, chunk) in [
        (300, 3, 7, Some(37)),
        (9000, 2, 10, None),
        (200, 33, 64, None),
        (500, 32, 16, Some(200)),
    ] {
        let x = random(n * d, 7 + d as u64);
        let own = crate::Gpu::new().unwrap();
        let g = chunked(&gpu, &own, chunk, d);
        let xg = GpuMatrix::upload(g, &Matrix::new(&x, d).unwrap()).unwrap();
        let rows: Vec<usize> = (0..n).step_by(n / 40).chain([n - 1]).collect();
        let mut first: Option<(Vec<u32>, Vec<f32>)> = None;
        // The uniform kernel keeps the query and the lists in registers: D <= 32, k <= 16.
        let fits = d <= UNIFORM_MAX_D && k <= KNN_UNIFORM_MAX_K;
        let device = VARIANTS
            .into_iter()
            .filter(|&v| fits || v == AffinityVariant::Storage);
        for variant in device.map(Some).chain([None]) {
            let (index, dist) = match variant {
                Some(v) => nearest_neighbors_with(g, &xg, k, v).unwrap(),
                None => nearest_neighbors_host(&x, d, k),
            };
            let what = format!("n = {n}, D = {d}, k = {k}, {variant:?} (None: the host)");
            check_lists(&what, &x, d, k, &rows, &index, &dist);
            match &first {
                None => first = Some((index, dist)),
                Some((i0, d0)) => {
                    assert_eq!(i0, &index, "{what}: lists differ between variants");
                    assert!(d0
                        .iter()
                        .zip(&dist)
                        .all(|(a, b)| a.to_bits() == b.to_bits()));
                }
            }
        }
    }
}

#[test]
fn the_neighbour_search_fills_every_list_past_llvmpipes_loop_budget() {
    // 16 000 rows: each invocation of the storage kernel once walked all of them, about 4
    // back-edges a row, and llvmpipe stopped its loops at 65 535 (lists left unfilled).
    let gpu = gpu();
    let (n, d, k) = (16_000, 2, 10);
    let x = random(n * d, 99);
    let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    let rows: Vec<usize> = (0..n).step_by(997).chain([n - 1]).collect();
    for variant in VARIANTS {
        let (index, dist) = nearest_neighbors_with(&gpu, &xg, k, variant).unwrap();
        let what = format!("n = {n}, {variant:?}");
        assert!(
            index.iter().all(|&j| (j as usize) < n),
            "{what}: a list left unfilled"
        );
        check_lists(&what, &x, d, k, &rows, &index, &dist);
    }
}

#[test]
fn the_host_search_breaks_ties_as_the_kernels_do() {
    // Points of a 7 x 5 grid, each many times over: most distances tie, in the first feature
    // too, so the order (distance, index) alone decides the lists.
    let gpu = gpu();
    let (n, d) = (300, 2);
    let x: Vec<f32> = (0..n)
        .flat_map(|i| [(i % 7) as f32 * 0.5, ((i / 7) % 5) as f32])
        .collect();
    let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    for k in [1, 10, 16] {
        let device = nearest_neighbors_with(&gpu, &xg, k, AffinityVariant::Storage).unwrap();
        let host = nearest_neighbors_host(&x, d, k);
        assert_eq!(device.0, host.0, "k = {k}: lists differ");
        assert_eq!(device.1, host.1, "k = {k}: distances differ");
    }
}

#[test]
fn a_non_finite_row_gets_the_kernels_lists_from_the_host_search() {
    // Data that skipped the finiteness check (GpuMatrix::from_buffer_unchecked): a NaN row is
    // nobody's neighbour and its own list stays unfilled, in both searches, with no panic.
    let gpu = gpu();
    let (n, d, k) = (120, 3, 5);
    let mut x = random(n * d, 41);
    x[7 * d + 1] = f32::NAN;
    x[30 * d] = f32::NAN;
    let buffer = DeviceBuffer::from_slice(&gpu, "rows with NaN", &x);
    let xg = GpuMatrix::from_buffer_unchecked(&gpu, buffer.raw(), 0, n, d).unwrap();
    let device = nearest_neighbors_with(&gpu, &xg, k, AffinityVariant::Storage).unwrap();
    let host = nearest_neighbors_host(&x, d, k);
    assert_eq!(device.0, host.0);
    assert!(host.0[7 * k..8 * k].iter().all(|&j| j == u32::MAX));
    assert!(host.0.iter().all(|&j| j != 7 && j != 30));
    // Spectral clustering of such data is an error, not a panic.
    let graph = crate::Affinity::NearestNeighbors { n_neighbors: k };
    let fit = crate::SpectralClustering::new(2)
        .affinity(graph)
        .fit(&gpu, &xg);
    assert!(fit.is_err(), "{:?}", fit.map(|m| m.labels().len()));
}
