//! The public neighbour queries (`wgpu_unsupervised::neighbors`) against f64 brute force, on
//! blobs far from the origin and on uniform data, one chunk and many, and their errors.

use crate::common::{gpu, random_matrix};
use wgpu_unsupervised::{datasets, neighbors, Error, GpuMatrix, Matrix};

/// Squared distances in f64 from row `q` to every row.
fn sq_dists(x: &[f32], d: usize, q: usize) -> Vec<f64> {
    (0..x.len() / d)
        .map(|j| {
            (0..d)
                .map(|f| (x[q * d + f] as f64 - x[j * d + f] as f64).powi(2))
                .sum()
        })
        .collect()
}

#[test]
fn radius_and_k_neighbours_match_brute_force_far_from_the_origin_and_in_chunks() {
    let gpu = gpu();
    let own = wgpu_unsupervised::Gpu::new().unwrap();
    for (seed, offset) in [(1u64, 0.0f32), (2, 1.0e3)] {
        let (mut x, _, _) = datasets::make_blobs(1500, 6, 5, 1.0, (-10.0, 10.0), seed).unwrap();
        x.iter_mut().for_each(|v| *v += offset);
        let d = 6;
        let (radius, k) = (1.2f32, 7);
        for chunk_rows in [None, Some(211)] {
            let g = match chunk_rows {
                Some(rows) => {
                    own.set_max_chunk_bytes((rows * d * 4) as u64);
                    &own
                }
                None => &gpu,
            };
            let xg = GpuMatrix::upload(g, &Matrix::new(&x, d).unwrap()).unwrap();
            let within = neighbors::radius_neighbors(g, &xg, radius).unwrap();
            let nearest = neighbors::k_nearest_neighbors(g, &xg, k).unwrap();
            assert_eq!((within.n_rows(), nearest.k()), (1500, k));
            let what = format!("seed {seed} offset {offset} chunks {chunk_rows:?}");
            let r2 = (radius as f64).powi(2);
            for q in (0..1500).step_by(37) {
                let all = sq_dists(&x, d, q);
                // f32 data at 1e3 carry distances to about 1e-4 absolute: a pair within that
                // of the radius may fall either side.
                let slack = 1e-5 * r2 + 4e-4 * (offset as f64 / 1e3);
                let (cols, values) = within.neighbors(q);
                for (j, &d2) in all.iter().enumerate() {
                    let listed = cols.contains(&(j as u32));
                    if d2 < r2 - slack || d2 > r2 + slack {
                        assert_eq!(listed, d2 <= r2, "{what}: row {q}, {j} at d² {d2}");
                    }
                }
                assert!(cols.windows(2).all(|w| w[0] < w[1]) && cols.contains(&(q as u32)));
                for (&c, &v) in cols.iter().zip(values) {
                    assert!(
                        (v as f64 - all[c as usize]).abs() <= 1e-4 * r2 + slack,
                        "{what}"
                    );
                }
                let mut order: Vec<usize> = (0..1500).collect();
                order.sort_by(|&a, &b| all[a].total_cmp(&all[b]).then(a.cmp(&b)));
                let got = nearest.indices(q);
                assert_eq!(got[0] as usize, q, "{what}: row {q} is not its own nearest");
                for (t, &j) in got.iter().enumerate() {
                    let (a, b) = (all[j as usize], all[order[t]]);
                    assert!((a - b).abs() <= 1e-5 * b + slack, "{what}: row {q} #{t}");
                }
            }
            // The same answers whatever the chunking.
            if chunk_rows.is_some() {
                let whole = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
                assert_eq!(
                    neighbors::radius_neighbors(&gpu, &whole, radius).unwrap(),
                    within,
                    "{what}"
                );
                assert_eq!(
                    neighbors::k_nearest_neighbors(&gpu, &whole, k).unwrap(),
                    nearest,
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn bad_queries_are_errors() {
    let gpu = gpu();
    let x = random_matrix(20, 3, 4, 0.0, 1.0);
    let m = Matrix::new(&x, 3).unwrap();
    for radius in [-0.5f32, f32::NAN, f32::INFINITY] {
        let e = neighbors::radius_neighbors(&gpu, &m, radius).unwrap_err();
        assert!(
            matches!(e, Error::InvalidParameter { name: "radius", .. }),
            "{e}"
        );
    }
    for k in [0, 21, neighbors::MAX_K + 1] {
        let e = neighbors::k_nearest_neighbors(&gpu, &m, k).unwrap_err();
        assert!(
            matches!(e, Error::InvalidParameter { name: "k", .. }),
            "{k}: {e}"
        );
    }
    let all = neighbors::k_nearest_neighbors(&gpu, &m, 20).unwrap();
    assert!(all.all_indices().iter().all(|&j| j < 20));
    // Radius 0: each row alone (no duplicates in uniform data).
    let alone = neighbors::radius_neighbors(&gpu, &m, 0.0).unwrap();
    assert_eq!(alone.row_starts(), (0..=20).collect::<Vec<u32>>());
}

#[test]
fn float64_rows_far_from_the_origin_keep_their_neighbours() {
    // Rows offset by 1e8 in f64: cast to f32 as they are, every row would round to the same
    // few values (f32 spacing there is 8) and the lists would be ties. Centred in f64 first,
    // the lists are those of f64 brute force. Two seeds; radius and k queries.
    let gpu = gpu();
    for seed in [3u64, 4] {
        let (n, d, k) = (300, 3, 6);
        let small = random_matrix(n, d, seed, 0.0, 4.0);
        let far: Vec<f64> = small.iter().map(|&v| v as f64 + 1e8).collect();
        let m = wgpu_unsupervised::Matrix64::new(&far, d).unwrap();
        let knn = neighbors::k_nearest_neighbors(&gpu, &m, k).unwrap();
        let radius = 0.5f32;
        let within = neighbors::radius_neighbors(&gpu, &m, radius).unwrap();
        for q in 0..n {
            let exact: Vec<f64> = (0..n)
                .map(|j| {
                    (0..d)
                        .map(|f| (far[q * d + f] - far[j * d + f]).powi(2))
                        .sum()
                })
                .collect();
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by(|&a, &b| exact[a].total_cmp(&exact[b]).then(a.cmp(&b)));
            let got: Vec<usize> = knn.indices(q).iter().map(|&j| j as usize).collect();
            assert_eq!(got, order[..k], "seed {seed}, row {q}");
            let mut inside: Vec<u32> = (0..n as u32)
                .filter(|&j| exact[j as usize] <= (radius as f64).powi(2))
                .collect();
            let mut found = within.neighbors(q).0.to_vec();
            found.sort_unstable();
            inside.sort_unstable();
            assert_eq!(found, inside, "seed {seed}, row {q}");
        }
    }
}
