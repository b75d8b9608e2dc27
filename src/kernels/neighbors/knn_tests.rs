//! The neighbour search (`knn.rs` and its host twin `host.rs`): both device variants and the
//! host search against brute-force lists, with chunks, uniform slices and data split into runs,
//! past the size where llvmpipe's loop budget (`GpuInfo::loop_back_edge_budget`) once cut the
//! search short, ties and non-finite rows.

use super::host::nearest_neighbors_host;
use super::knn::{nearest_neighbors_with, KnnVariant, KNN_UNIFORM_MAX_K};
use crate::data::Matrix;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::tests::{gpu, random};
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::primitives::pairs::UNIFORM_MAX_D;

const VARIANTS: [KnnVariant; 2] = [KnnVariant::Storage, KnnVariant::Uniform];

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
        let own = crate::gpu::Gpu::new().unwrap();
        let g = chunked(&gpu, &own, chunk, d);
        let xg = GpuMatrix::upload(g, &Matrix::new(&x, d).unwrap()).unwrap();
        let rows: Vec<usize> = (0..n).step_by(n / 40).chain([n - 1]).collect();
        let mut first: Option<(Vec<u32>, Vec<f32>)> = None;
        // The uniform kernel keeps the query and the lists in registers: D <= 32, k <= 16.
        let fits = d <= UNIFORM_MAX_D && k <= KNN_UNIFORM_MAX_K;
        let device = VARIANTS
            .into_iter()
            .filter(|&v| fits || v == KnnVariant::Storage);
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
        let device = nearest_neighbors_with(&gpu, &xg, k, KnnVariant::Storage).unwrap();
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
    let device = nearest_neighbors_with(&gpu, &xg, k, KnnVariant::Storage).unwrap();
    let host = nearest_neighbors_host(&x, d, k);
    assert_eq!(device.0, host.0);
    assert!(host.0[7 * k..8 * k].iter().all(|&j| j == u32::MAX));
    assert!(host.0.iter().all(|&j| j != 7 && j != 30));
}
