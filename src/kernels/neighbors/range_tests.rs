//! The radius query (`range.rs` and its host twin): the device passes and the host search
//! against f64 brute force, with chunks and data split into runs, several shapes and seeds,
//! duplicates at radius 0, and the radius checks.

use super::csr::Csr;
use super::host::within_radius_host;
use super::range::{checked_radius_sq, within_radius_device};
use crate::data::Matrix;
use crate::gpu::tests::{gpu, random};
use crate::gpu::GpuMatrix;

/// Each row's neighbours by f64 distances of the f32 values: (certainly in, borderline),
/// where a pair within a relative 1e-5 of ε² may fall on either side of it in f32.
fn brute_force(x: &[f32], d: usize, radius_sq: f32) -> Vec<(Vec<u32>, Vec<u32>)> {
    let n = x.len() / d;
    let r = radius_sq as f64;
    (0..n)
        .map(|i| {
            let (mut sure, mut edge) = (Vec::new(), Vec::new());
            for j in 0..n {
                let d2: f64 = (0..d)
                    .map(|f| (x[i * d + f] as f64 - x[j * d + f] as f64).powi(2))
                    .sum();
                let slack = 1e-5 * r.max(d2) + 1e-30;
                if d2 <= r - slack {
                    sure.push(j as u32);
                } else if d2 <= r + slack {
                    edge.push(j as u32);
                }
            }
            (sure, edge)
        })
        .collect()
}

/// `got` holds every certain neighbour, nothing outside the border, in increasing index,
/// with each distance right to f32 rounding.
fn check(what: &str, x: &[f32], d: usize, radius_sq: f32, got: &Csr) {
    let want = brute_force(x, d, radius_sq);
    assert_eq!(got.n_rows(), want.len(), "{what}");
    let mut entries = 0;
    for (i, (sure, edge)) in want.iter().enumerate() {
        let (cols, values) = got.row(i);
        assert!(
            cols.windows(2).all(|w| w[0] < w[1]),
            "{what}: row {i} not in order"
        );
        for s in sure {
            assert!(cols.contains(s), "{what}: row {i} misses {s}");
        }
        for (&c, &v) in cols.iter().zip(values) {
            assert!(
                sure.contains(&c) || edge.contains(&c),
                "{what}: row {i} has {c}, which is outside the radius"
            );
            let d2: f64 = (0..d)
                .map(|f| (x[i * d + f] as f64 - x[c as usize * d + f] as f64).powi(2))
                .sum();
            assert!(
                (v as f64 - d2).abs() <= 1e-5 * d2.max(1e-6),
                "{what}: row {i}, {c}: d² {v} vs {d2}"
            );
        }
        entries += cols.len();
    }
    assert!(entries >= want.len(), "{what}: fewer entries than rows");
}

#[test]
fn device_and_host_find_the_brute_force_neighbourhoods_with_chunks_and_runs() {
    let gpu = gpu();
    let own = crate::gpu::Gpu::new().unwrap();
    for (n, d, seed, radius) in [
        (300, 2, 1, 0.1f32),
        (257, 5, 2, 0.5),
        (130, 1, 3, 0.02),
        (90, 33, 4, 2.4),
        // Past llvmpipe's loop budget in one dispatch: the data go in several runs.
        (2000, 30, 5, 1.9),
    ] {
        let x = random(n * d, seed);
        let radius_sq = checked_radius_sq(radius).unwrap();
        let host = within_radius_host(&x, d, radius_sq);
        check(&format!("host n {n} d {d}"), &x, d, radius_sq, &host);
        // Chunks of 37 rows (queries and data both cut), and one chunk.
        for chunk in [Some(37), None] {
            let g = match chunk {
                Some(rows) => {
                    own.set_max_chunk_bytes((rows * d * 4) as u64);
                    &own
                }
                None => &gpu,
            };
            let xg = GpuMatrix::upload(g, &Matrix::new(&x, d).unwrap()).unwrap();
            let device = within_radius_device(g, &xg, radius_sq).unwrap();
            let what = format!("device n {n} d {d} chunk {chunk:?}");
            check(&what, &x, d, radius_sq, &device);
            // llvmpipe computes fma as a multiply and an add, as the host loop does: the
            // same lists and bits.
            assert_eq!(device, host, "{what}");
        }
    }
}

#[test]
fn radius_zero_finds_each_row_and_its_duplicates_only() {
    let gpu = gpu();
    let d = 3;
    let mut x = random(50 * d, 9);
    // Row 10 repeats row 3; row 20 differs from row 3 in its last bit.
    let row3 = x[3 * d..4 * d].to_vec();
    x[10 * d..11 * d].copy_from_slice(&row3);
    x[20 * d..21 * d].copy_from_slice(&row3);
    x[20 * d + 2] = f32::from_bits(x[20 * d + 2].to_bits() + 1);
    let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    let csr = within_radius_device(&gpu, &xg, 0.0).unwrap();
    assert_eq!(csr.row(3).0, [3, 10]);
    assert_eq!(csr.row(10).0, [3, 10]);
    assert_eq!(csr.row(20).0, [20]);
    assert_eq!(csr.row(0).0, [0]);
    assert_eq!(csr, within_radius_host(&x, d, 0.0));
}

#[test]
fn bad_radii_are_errors() {
    for r in [-1.0f32, f32::NAN, f32::INFINITY, 2e19] {
        assert!(checked_radius_sq(r).is_err(), "{r}");
    }
    assert_eq!(checked_radius_sq(0.0).unwrap(), 0.0);
    assert_eq!(checked_radius_sq(3.0).unwrap(), 9.0);
}
