//! Data for tests, examples and benchmarks: the embedded Iris and Digits sets (feature
//! `datasets`) and seeded synthetic data (always available: nothing is bundled for it).
//!
//! * `iris` (feature `datasets`): Fisher's Iris (150 x 4, three classes of 50), compiled into the library from
//!   `tests/data/iris_X.npy` and `iris_y.npy` (scikit-learn's copy; see
//!   `tests/data/README.md` for source and licence), so no file is read at run time.
//! * `digits` (feature `datasets`): the optical handwritten digits (1797 x 64, ten classes of about 180),
//!   compiled in the same way from `tests/data/digits_X.npy` and `digits_y.npy`.
//! * [`make_blobs`]: isotropic Gaussian blobs like scikit-learn's `make_blobs`. Centres
//!   `μ_k` are drawn uniformly from `center_box` in every coordinate, and point i of cluster
//!   `k = i mod centers` is `x_i = μ_k + σ z` with `z ~ N(0, I)`. The standard normals come
//!   from the Box–Muller transform: for `u_1 ∈ (0, 1]`, `u_2 ∈ [0, 1)` uniform,
//!   `sqrt(−2 ln u_1) · (cos 2π u_2, sin 2π u_2)` are two independent N(0, 1) draws.
//! * [`uniform`]: values uniform in [0, 1).
//!
//! Everything random is drawn from a ChaCha8 generator seeded by the caller, whose stream is
//! fixed across platforms and releases: the same seed gives the same data everywhere.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
#[cfg(feature = "datasets")]
use std::path::Path;

use crate::error::{Error, Result};
#[cfg(feature = "datasets")]
use crate::npy::{npy_labels_from_reader, npy_matrix_from_reader};
use crate::random::StandardNormal;

// The bundled files are compiled in only with the `datasets` feature (about 470 KB).
#[cfg(feature = "datasets")]
const IRIS_X: &[u8] = include_bytes!("../tests/data/iris_X.npy");
#[cfg(feature = "datasets")]
const IRIS_Y: &[u8] = include_bytes!("../tests/data/iris_y.npy");
#[cfg(feature = "datasets")]
const DIGITS_X: &[u8] = include_bytes!("../tests/data/digits_X.npy");
#[cfg(feature = "datasets")]
const DIGITS_Y: &[u8] = include_bytes!("../tests/data/digits_y.npy");

#[cfg(feature = "datasets")]
/// Fisher's Iris data: 150 rows x 4 features (sepal length, sepal width, petal length,
/// petal width, in cm) row-major as f32, and the species labels 0, 1, 2 (setosa,
/// versicolor, virginica), 50 of each in that order.
pub fn iris() -> (Vec<f32>, Vec<u32>) {
    try_iris().expect("embedded iris data is valid")
}

#[cfg(feature = "datasets")]
/// Parses the embedded Iris files; only fails if they were corrupted at build time.
fn try_iris() -> Result<(Vec<f32>, Vec<u32>)> {
    let x = npy_matrix_from_reader(
        IRIS_X,
        Some(IRIS_X.len() as u64),
        Path::new("<embedded iris_X.npy>"),
    )?;
    let y = npy_labels_from_reader(
        IRIS_Y,
        Some(IRIS_Y.len() as u64),
        Path::new("<embedded iris_y.npy>"),
    )?;
    if (x.n_rows, x.n_features) != (150, 4) || y.len() != 150 {
        return Err(Error::Format {
            path: "<embedded iris>".into(),
            reason: format!(
                "expected 150 x 4 data and 150 labels, found {} x {} and {}",
                x.n_rows,
                x.n_features,
                y.len()
            ),
        });
    }
    Ok((x.data, y))
}

#[cfg(feature = "datasets")]
/// The optical handwritten digits (scikit-learn's `load_digits`): 1797 rows x 64 features,
/// each row an 8 x 8 image read row by row whose pixels are counts 0..=16, row-major as
/// f32, and the digit shown, 0..=9 (174 to 183 of each).
pub fn digits() -> (Vec<f32>, Vec<u32>) {
    try_digits().expect("embedded digits data is valid")
}

#[cfg(feature = "datasets")]
/// Parses the embedded Digits files; only fails if they were corrupted at build time.
fn try_digits() -> Result<(Vec<f32>, Vec<u32>)> {
    let x = npy_matrix_from_reader(
        DIGITS_X,
        Some(DIGITS_X.len() as u64),
        Path::new("<embedded digits_X.npy>"),
    )?;
    let y = npy_labels_from_reader(
        DIGITS_Y,
        Some(DIGITS_Y.len() as u64),
        Path::new("<embedded digits_y.npy>"),
    )?;
    if (x.n_rows, x.n_features) != (1797, 64) || y.len() != 1797 {
        return Err(Error::Format {
            path: "<embedded digits>".into(),
            reason: format!(
                "expected 1797 x 64 data and 1797 labels, found {} x {} and {}",
                x.n_rows,
                x.n_features,
                y.len()
            ),
        });
    }
    Ok((x.data, y))
}

/// Isotropic Gaussian blobs (see the module docs), like scikit-learn's `make_blobs`.
///
/// Returns the `n` x `n_features` points (row-major), their labels, and the `centers` x
/// `n_features` true centres. Point i belongs to cluster `i % centers`, so the clusters are
/// balanced (sizes differ by at most one) and interleaved.
///
/// Errors: [`Error::InvalidParameter`] when `n`, `n_features` or `centers` is 0, when
/// `cluster_std` is negative or not finite, or when `center_box` is not a finite `(lo, hi)`
/// with `lo <= hi`; [`Error::TooFewSamples`] when `centers > n`.
pub fn make_blobs(
    n: usize,
    n_features: usize,
    centers: usize,
    cluster_std: f32,
    center_box: (f32, f32),
    seed: u64,
) -> Result<(Vec<f32>, Vec<u32>, Vec<f32>)> {
    for (name, v) in [("n", n), ("n_features", n_features), ("centers", centers)] {
        Error::require_count(name, v)?;
    }
    if centers > n {
        return Err(Error::TooFewSamples { k: centers, n });
    }
    Error::require_non_negative("cluster_std", cluster_std as f64)?;
    let (lo, hi) = center_box;
    if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
        return Err(Error::invalid(
            "center_box",
            format!("must be finite with lo <= hi, got ({lo}, {hi})"),
        ));
    }
    let len = n
        .checked_mul(n_features)
        .ok_or_else(|| Error::invalid("n", "n x n_features overflows usize"))?;

    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (lo, hi, std) = (lo as f64, hi as f64, cluster_std as f64);
    let center_values: Vec<f64> = (0..centers * n_features)
        .map(|_| lo + (hi - lo) * rng.random::<f64>())
        .collect();

    let mut normal = StandardNormal::default();
    // A size the host cannot hold is an error, not an abort.
    let mut x = Vec::new();
    x.try_reserve_exact(len).map_err(|_| {
        Error::invalid(
            "n",
            format!("{n} x {n_features} values do not fit in host memory"),
        )
    })?;
    let mut labels = Vec::with_capacity(n);
    for i in 0..n {
        let k = i % centers;
        for &c in &center_values[k * n_features..(k + 1) * n_features] {
            x.push((c + std * normal.sample(&mut rng)) as f32);
        }
        labels.push(k as u32);
    }
    let centers = center_values.iter().map(|&c| c as f32).collect();
    Ok((x, labels, centers))
}

/// scikit-learn's `make_moons(n, shuffle=False, noise)`: two interleaved half circles in 2-D,
/// the classic case K-Means cannot separate. The first ⌊n/2⌋ points, label 0, lie on
/// (cos t, sin t) and the others, label 1, on (1 − cos t, 0.5 − sin t), t evenly spaced over
/// [0, π] on each; then Gaussian noise of standard deviation `noise` is added to every
/// coordinate (ChaCha8, seeded by `seed`).
///
/// Returns the `n` x 2 points (row-major) and their labels.
///
/// Errors: [`Error::InvalidParameter`] when `n` < 2 or `noise` is negative or not finite.
pub fn make_moons(n: usize, noise: f32, seed: u64) -> Result<(Vec<f32>, Vec<u32>)> {
    two_curves(
        n,
        noise,
        seed,
        |outer, t| {
            let t = std::f64::consts::PI * t;
            if outer {
                (t.cos(), t.sin())
            } else {
                (1.0 - t.cos(), 0.5 - t.sin())
            }
        },
        true,
    )
}

/// scikit-learn's `make_circles(n, shuffle=False, noise, factor)`: a circle of radius 1
/// (label 0, the first ⌊n/2⌋ points) around a circle of radius `factor` (label 1), points
/// evenly spaced on each (2πi/m, end point excluded), then Gaussian noise of standard
/// deviation `noise` on every coordinate.
///
/// Errors: [`Error::InvalidParameter`] when `n` < 2, `noise` is negative or not finite, or
/// `factor` is not in (0, 1).
pub fn make_circles(n: usize, noise: f32, factor: f32, seed: u64) -> Result<(Vec<f32>, Vec<u32>)> {
    if !(factor > 0.0 && factor < 1.0) {
        return Err(Error::invalid(
            "factor",
            format!("{factor}: must be in (0, 1)"),
        ));
    }
    let r = factor as f64;
    two_curves(
        n,
        noise,
        seed,
        |outer, t| {
            let t = 2.0 * std::f64::consts::PI * t;
            let scale = if outer { 1.0 } else { r };
            (scale * t.cos(), scale * t.sin())
        },
        false,
    )
}

/// The points of two curves: `at(outer, t)` for t in [0, 1] (end point included when
/// `closed_range`, else t = i/m), ⌊n/2⌋ on the outer curve then the rest on the inner, with
/// Gaussian noise.
fn two_curves(
    n: usize,
    noise: f32,
    seed: u64,
    at: impl Fn(bool, f64) -> (f64, f64),
    closed_range: bool,
) -> Result<(Vec<f32>, Vec<u32>)> {
    if n < 2 {
        return Err(Error::invalid(
            "n",
            format!("{n}: two curves need at least 2 points"),
        ));
    }
    Error::require_non_negative("noise", noise as f64)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut normal = StandardNormal::default();
    let n_outer = n / 2;
    let mut x = Vec::with_capacity(2 * n);
    let mut labels = Vec::with_capacity(n);
    for (outer, m) in [(true, n_outer), (false, n - n_outer)] {
        for i in 0..m {
            let t = match (closed_range, m) {
                (true, 1) => 0.0,
                (true, _) => i as f64 / (m - 1) as f64,
                (false, _) => i as f64 / m as f64,
            };
            let (a, b) = at(outer, t);
            x.push((a + noise as f64 * normal.sample(&mut rng)) as f32);
            x.push((b + noise as f64 * normal.sample(&mut rng)) as f32);
            labels.push(u32::from(!outer));
        }
    }
    Ok((x, labels))
}

/// `n` x `d` values uniform in [0, 1), row-major, from a ChaCha8 generator seeded by `seed`.
///
/// # Panics
///
/// If `n * d` overflows `usize` (no such vector could be allocated anyway).
pub fn uniform(n: usize, d: usize, seed: u64) -> Vec<f32> {
    let len = n.checked_mul(d).expect("n * d overflows usize");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..len).map(|_| rng.random::<f32>()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn make_blobs_too_large_for_the_host_is_an_error() {
        // 2^60 x 4 f32 values (2^64 bytes): no overflow of the count, but no host can hold them.
        let e = make_blobs(1 << 60, 4, 3, 1.0, (-1.0, 1.0), 0).unwrap_err();
        assert!(e.to_string().contains("host memory"), "{e}");
    }

    #[cfg(feature = "datasets")]
    #[test]
    fn iris_is_embedded_and_sane() {
        assert!(try_iris().is_ok());
        let (x, y) = iris();
        assert_eq!(x.len(), 600);
        assert_eq!(y.len(), 150);
        // First row of Fisher's table: 5.1, 3.5, 1.4, 0.2, setosa.
        assert_eq!(&x[..4], &[5.1, 3.5, 1.4, 0.2]);
        for c in 0..3u32 {
            assert_eq!(y.iter().filter(|&&l| l == c).count(), 50);
        }
        assert_eq!(y[0], 0);
        assert_eq!(y[149], 2);
        // Feature means from scikit-learn's description: 5.84, 3.05 (rounded), 3.76, 1.20.
        let mean = |j: usize| x.iter().skip(j).step_by(4).map(|&v| v as f64).sum::<f64>() / 150.0;
        assert!((mean(0) - 5.843).abs() < 1e-3);
        assert!((mean(2) - 3.758).abs() < 1e-3);
        assert!((mean(3) - 1.199).abs() < 1e-3);
    }

    #[cfg(feature = "datasets")]
    #[test]
    fn digits_are_embedded_and_sane() {
        assert!(try_digits().is_ok());
        let (x, y) = digits();
        assert_eq!(x.len(), 1797 * 64);
        assert_eq!(y.len(), 1797);
        // Pixel counts are whole numbers in 0..=16.
        assert!(x
            .iter()
            .all(|&v| (0.0..=16.0).contains(&v) && v.fract() == 0.0));
        // First image, top two rows: the start of a zero.
        let top: [f32; 16] = [
            0., 0., 5., 13., 9., 1., 0., 0., 0., 0., 13., 15., 10., 15., 5., 0.,
        ];
        assert_eq!(&x[..16], &top);
        assert!(y.iter().all(|&l| l <= 9));
        assert_eq!(&y[..10], &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let counts: Vec<usize> = (0..10u32)
            .map(|c| y.iter().filter(|&&l| l == c).count())
            .collect();
        assert_eq!(counts, [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]);
    }

    #[test]
    fn blobs_are_seeded_balanced_and_centred() {
        let (x, y, c) = make_blobs(3000, 2, 3, 0.5, (-10.0, 10.0), 9).unwrap();
        assert_eq!((x.len(), y.len(), c.len()), (6000, 3000, 6));
        assert!(c.iter().all(|&v| (-10.0..=10.0).contains(&v)));
        assert_eq!(make_blobs(3000, 2, 3, 0.5, (-10.0, 10.0), 9).unwrap().0, x);
        assert_ne!(make_blobs(3000, 2, 3, 0.5, (-10.0, 10.0), 10).unwrap().0, x);
        for k in 0..3usize {
            let members: Vec<&[f32]> = x
                .chunks(2)
                .zip(&y)
                .filter(|(_, &l)| l as usize == k)
                .map(|(p, _)| p)
                .collect();
            assert_eq!(members.len(), 1000);
            for j in 0..2 {
                let vals: Vec<f64> = members.iter().map(|p| p[j] as f64).collect();
                let m = vals.iter().sum::<f64>() / 1000.0;
                let var = vals.iter().map(|v| (v - m).powi(2)).sum::<f64>() / 1000.0;
                // Sample mean within ~5 standard errors, variance near 0.25.
                assert!((m - c[k * 2 + j] as f64).abs() < 0.08, "{m}");
                assert!((var - 0.25).abs() < 0.04, "{var}");
            }
        }
        // Uneven split: sizes differ by at most one.
        let (_, y, _) = make_blobs(10, 1, 3, 1.0, (0.0, 1.0), 0).unwrap();
        assert_eq!(y, vec![0, 1, 2, 0, 1, 2, 0, 1, 2, 0]);
        // Zero spread puts every point on its centre.
        let (x, y, c) = make_blobs(4, 1, 2, 0.0, (0.0, 1.0), 1).unwrap();
        for (v, l) in x.iter().zip(&y) {
            assert_eq!(*v, c[*l as usize]);
        }
    }

    #[test]
    fn blobs_reject_bad_parameters() {
        let bad = [
            make_blobs(0, 2, 1, 1.0, (0.0, 1.0), 0),
            make_blobs(5, 0, 1, 1.0, (0.0, 1.0), 0),
            make_blobs(5, 2, 0, 1.0, (0.0, 1.0), 0),
            make_blobs(5, 2, 1, f32::NAN, (0.0, 1.0), 0),
            make_blobs(5, 2, 1, -1.0, (0.0, 1.0), 0),
            make_blobs(5, 2, 1, 1.0, (1.0, 0.0), 0),
            make_blobs(5, 2, 1, 1.0, (0.0, f32::INFINITY), 0),
        ];
        for r in bad {
            assert!(matches!(r, Err(Error::InvalidParameter { .. })), "{r:?}");
        }
        assert!(matches!(
            make_blobs(2, 2, 3, 1.0, (0.0, 1.0), 0),
            Err(Error::TooFewSamples { k: 3, n: 2 })
        ));
    }

    #[test]
    fn uniform_is_seeded_and_in_range() {
        let u = uniform(1000, 3, 4);
        assert_eq!(u.len(), 3000);
        assert!(u.iter().all(|&v| (0.0..1.0).contains(&v)));
        assert_eq!(u, uniform(1000, 3, 4));
        let mean = u.iter().map(|&v| v as f64).sum::<f64>() / 3000.0;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
        assert!(uniform(0, 3, 0).is_empty());
    }

    #[test]
    fn moons_and_circles_follow_their_curves() {
        let (x, y) = super::make_moons(101, 0.0, 0).unwrap();
        assert_eq!((x.len(), y.len()), (202, 101));
        assert_eq!(y.iter().filter(|&&l| l == 0).count(), 50);
        // Outer moon on the unit circle's upper half, inner one shifted by (1, 0.5).
        for (p, &l) in x.chunks(2).zip(&y) {
            let (a, b) = if l == 0 {
                (p[0], p[1])
            } else {
                (1.0 - p[0], 0.5 - p[1])
            };
            assert!(
                (a * a + b * b - 1.0).abs() < 1e-5 && b >= -1e-6,
                "{p:?} {l}"
            );
        }
        let (c, y) = super::make_circles(100, 0.0, 0.3, 0).unwrap();
        for (p, &l) in c.chunks(2).zip(&y) {
            let r = (p[0] * p[0] + p[1] * p[1]).sqrt();
            assert!((r - if l == 0 { 1.0 } else { 0.3 }).abs() < 1e-5);
        }
        let (noisy, _) = super::make_moons(50, 0.1, 3).unwrap();
        assert_eq!(noisy, super::make_moons(50, 0.1, 3).unwrap().0);
        assert_ne!(noisy, super::make_moons(50, 0.1, 4).unwrap().0);
        assert!(super::make_moons(1, 0.0, 0).is_err());
        assert!(super::make_moons(10, -1.0, 0).is_err());
        assert!(super::make_circles(10, 0.0, 1.0, 0).is_err());
        assert!(super::make_circles(10, 0.0, 0.0, 0).is_err());
    }
}
