//! Host-side input: a validated, row-major view of an N x D matrix.
//!
//! [`Matrix`] borrows the caller's `f32` slice (no copy) and checks it once: non-empty, a whole
//! number of rows, every value finite. Everything downstream may then assume clean data.

use crate::error::{Error, Result};

/// A validated row-major N x D view over `f32` values (borrowed, never modified).
#[derive(Debug, Clone, Copy)]
pub struct Matrix<'a> {
    data: &'a [f32],
    n_rows: usize,
    n_features: usize,
    /// The largest |value|, from the same scan that checked them (what the fits' range
    /// scaling needs: no second pass over the data).
    max_abs: f32,
}

impl<'a> Matrix<'a> {
    /// Wraps `data` (row-major, `n_features` values per row) after validating it.
    ///
    /// Errors: [`Error::EmptyData`] for no rows or zero features, [`Error::Shape`] when the
    /// length is not a multiple of `n_features`, [`Error::NonFinite`] with the row and column
    /// of the first NaN or infinity.
    pub fn new(data: &'a [f32], n_features: usize) -> Result<Self> {
        check_shape_of(data.len(), n_features)?;
        let max_abs = scan_f32(data, n_features)?;
        Ok(Self {
            data,
            n_rows: data.len() / n_features,
            n_features,
            max_abs,
        })
    }

    /// Number of rows (samples), N.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Number of features (columns), D.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// The underlying row-major values.
    pub fn as_slice(&self) -> &'a [f32] {
        self.data
    }

    /// The largest |value| (found when the values were checked).
    pub fn max_abs(&self) -> f32 {
        self.max_abs
    }

    /// Row `i` as a slice.
    pub fn row(&self, i: usize) -> &'a [f32] {
        &self.data[i * self.n_features..(i + 1) * self.n_features]
    }

    /// The values widened to f64 (for the CPU reference).
    pub fn to_f64(&self) -> Vec<f64> {
        self.data.iter().map(|&v| v as f64).collect()
    }
}

/// Host rows of f32 ([`Matrix`]) or f64 ([`Matrix64`](crate::Matrix64)) values: what the
/// computations that run on the host in f64 read (the metrics of `metrics::internal`,
/// [`PcaModel::score_samples`](crate::PcaModel::score_samples)), so that f64 data reach
/// them with every digit.
pub trait HostMatrix {
    /// The type of the values.
    type Value: Copy + Into<f64>;
    /// Number of rows N.
    fn n_rows(&self) -> usize;
    /// Number of features D.
    fn n_features(&self) -> usize;
    /// Row `i` (i < N).
    fn values_of_row(&self, i: usize) -> &[Self::Value];
}

impl HostMatrix for Matrix<'_> {
    type Value = f32;
    fn n_rows(&self) -> usize {
        self.n_rows
    }
    fn n_features(&self) -> usize {
        self.n_features
    }
    fn values_of_row(&self, i: usize) -> &[f32] {
        self.row(i)
    }
}

impl HostMatrix for crate::Matrix64<'_> {
    type Value = f64;
    fn n_rows(&self) -> usize {
        crate::Matrix64::n_rows(self)
    }
    fn n_features(&self) -> usize {
        crate::Matrix64::n_features(self)
    }
    fn values_of_row(&self, i: usize) -> &[f64] {
        self.row(i)
    }
}

/// Checks row-major `data` of `n_features` columns: at least one column and one row, a whole
/// number of rows, every value finite (the first NaN/inf is reported with its position).
pub(crate) fn validate_row_major<T: Copy + Into<f64>>(data: &[T], n_features: usize) -> Result<()> {
    check_shape_of(data.len(), n_features)?;
    check_finite(data, n_features)
}

/// At least one column and one row, and a whole number of rows in `len` values.
fn check_shape_of(len: usize, n_features: usize) -> Result<()> {
    if n_features == 0 {
        return Err(Error::EmptyData {
            what: "input matrix",
            missing: "columns",
        });
    }
    if len == 0 {
        return Err(Error::EmptyData {
            what: "input matrix",
            missing: "rows",
        });
    }
    if !len.is_multiple_of(n_features) {
        return Err(Error::Shape { len, n_features });
    }
    Ok(())
}

/// Values per thread of [`largest_abs_bits`] below which one thread scans alone.
const SCAN_VALUES_PER_THREAD: usize = 1 << 22;

/// The largest |value| of `data` as f32 bits (the sign bit cleared); `None` for no values. A
/// NaN or infinity has bits ≥ 0x7f80_0000, above every finite value, so one integer maximum
/// (which compilers vectorise, where a float maximum must mind NaNs) both finds the largest
/// value and tells whether any is not finite. Large data are split over the available
/// threads: the scan is bound by memory bandwidth, which one core does not fill.
fn largest_abs_bits(data: &[f32]) -> Option<u32> {
    let fold = abs_bits_max;
    if data.is_empty() {
        return None;
    }
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let parts = threads.min(data.len().div_ceil(SCAN_VALUES_PER_THREAD));
    if parts <= 1 {
        return Some(fold(data));
    }
    let per = data.len().div_ceil(parts);
    Some(std::thread::scope(|s| {
        let handles: Vec<_> = data.chunks(per).map(|c| s.spawn(move || fold(c))).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .max()
            .unwrap_or(0)
    }))
}

/// The largest |value| of `part` as f32 bits (0 for none) on this thread: an integer maximum
/// over the absolute bits, which compilers vectorise (see [`largest_abs_bits`]).
/// Bits ≥ 0x7f80_0000 mean a NaN or an infinity.
pub(crate) fn abs_bits_max(part: &[f32]) -> u32 {
    part.iter()
        .fold(0u32, |m, v| m.max(v.to_bits() & 0x7fff_ffff))
}

/// The index of the first NaN or infinity of `piece`, if any: one vectorised scan
/// ([`abs_bits_max`]), and a search only when it finds one. What a piece read from a file
/// is checked by, on the thread that reads it.
#[cfg(any(feature = "io", test))]
pub(crate) fn first_non_finite(piece: &[f32]) -> Option<usize> {
    if abs_bits_max(piece) < 0x7f80_0000 {
        return None;
    }
    piece.iter().position(|v| !v.is_finite())
}

/// The largest |value| of f32 data, or [`Error::NonFinite`] at the first NaN or infinity
/// (found by a second scan only when there is one).
fn scan_f32(data: &[f32], n_features: usize) -> Result<f32> {
    let bits = largest_abs_bits(data).unwrap_or(0);
    if bits >= 0x7f80_0000 {
        check_finite(data, n_features)?;
    }
    Ok(f32::from_bits(bits))
}

/// Checks per-row sample weights: one per row, finite, non-negative, not all zero.
pub(crate) fn check_sample_weights(weights: &[f32], n_rows: usize) -> Result<()> {
    if weights.len() != n_rows {
        return Err(Error::invalid(
            "sample_weight",
            format!("{} weights for {n_rows} rows", weights.len()),
        ));
    }
    if let Some(i) = weights.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
        return Err(Error::invalid(
            "sample_weight",
            format!("weight {} of row {i} is not finite and >= 0", weights[i]),
        ));
    }
    if !weights.iter().any(|&w| w > 0.0) {
        return Err(Error::invalid("sample_weight", "every weight is 0"));
    }
    Ok(())
}

/// Per-row weights multiplied by the power of two that brings the largest into [1, 2), and
/// that factor (1, and the weights as they are, when they are there already or all zero).
///
/// A weighted fit's answer does not depend on the weights' scale (centroids, means,
/// covariances, responsibilities and the weighted mean log-likelihood are ratios of weighted
/// sums), but the device sums them in f32: weights of 10³⁸ overflow there and weights of
/// 10⁻²⁰ lose their rows' products to underflow. Scaled by a power of two (exact), they do
/// neither; sums reported in the weights' units (a K-Means inertia) are divided by the
/// factor again.
pub(crate) fn weights_in_range(weights: &[f32]) -> (std::borrow::Cow<'_, [f32]>, f32) {
    let largest = weights.iter().fold(0.0f32, |m, &w| m.max(w));
    if largest == 0.0 || !largest.is_finite() || (1.0..2.0).contains(&largest) {
        return (std::borrow::Cow::Borrowed(weights), 1.0);
    }
    let exponent = (largest as f64).log2().floor() as i32;
    let factor = 2f32.powi(-exponent.clamp(-126, 126));
    let scaled = weights.iter().map(|&w| w * factor).collect();
    (std::borrow::Cow::Owned(scaled), factor)
}

/// Returns [`Error::NonFinite`] for the first NaN/inf in row-major `data`.
pub(crate) fn check_finite<T: Copy + Into<f64>>(data: &[T], n_features: usize) -> Result<()> {
    match data.iter().position(|&v| !v.into().is_finite()) {
        None => Ok(()),
        Some(i) => Err(non_finite_at(i, n_features, data[i].into())),
    }
}

pub(crate) fn non_finite_at(flat_index: usize, n_features: usize, value: f64) -> Error {
    Error::NonFinite {
        row: flat_index / n_features,
        col: flat_index % n_features,
        value: format!("{value}"),
    }
}

/// The largest |value| (as powers of two) that the kernels take as they are: squares and
/// products of such data, summed over thousands of features and rows in f32, neither
/// overflow (2⁴⁰ squared and summed 2²⁴ times stays below f32's 2¹²⁸) nor lose their small
/// differences to underflow (a difference 2⁻²⁴ below 2⁻³², squared, is still 2⁻¹¹², a normal
/// f32). Data outside are multiplied by a power of two first ([`range_scale`]).
pub const F32_RANGE: (f32, f32) = (1.0 / (1u64 << 32) as f32, (1u64 << 40) as f32);

/// The power of two the data of largest |value| `max_abs` are multiplied by before the
/// kernels see them: 1 inside [`F32_RANGE`] (and for data of zeros), else 2⁻ᵉ with
/// 2ᵉ ≤ `max_abs` < 2ᵉ⁺¹, which brings the largest value into [1, 2). Multiplying by a power
/// of two is exact in floating point, so every result is reported back in the caller's units
/// without rounding of its own.
pub fn range_scale(max_abs: f32) -> f32 {
    let (low, high) = F32_RANGE;
    if max_abs == 0.0 || !max_abs.is_finite() || (low..=high).contains(&max_abs) {
        return 1.0;
    }
    // Subnormal maxima would ask for 2^127 and more; 2^126 still brings them to normal f32.
    let exponent = (max_abs as f64).log2().floor() as i32;
    2f32.powi(-exponent.clamp(-126, 126))
}

/// The largest |value| accepted from rows read after the scale was set by others (a source
/// that does not know its largest value sets it from its first rows): 2⁵⁰ once scaled, whose
/// squares summed over 2²⁷ terms still stay below f32's 2¹²⁸.
pub(crate) const F32_SAFE_MAX: f32 = (1u64 << 50) as f32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_scan_finds_the_largest_value_and_the_first_non_finite_one() {
        let m = Matrix::new(&[1.0, -7.5, 0.0, 3.0], 2).unwrap();
        assert_eq!(m.max_abs(), 7.5);
        assert_eq!(Matrix::new(&[0.0, -0.0], 1).unwrap().max_abs(), 0.0);
        assert_eq!(
            Matrix::new(&[f32::MAX, -1.0], 1).unwrap().max_abs(),
            f32::MAX
        );
        // Large enough to be split over threads: the largest value and the first bad one are
        // found wherever they fall.
        let d = 7;
        let mut x: Vec<f32> = (0..(3 << 22) + 5)
            .map(|i| (i % 1000) as f32 * 1e-3)
            .collect();
        x.truncate(x.len() / d * d);
        let last = x.len() - 3;
        x[last] = -42.0;
        assert_eq!(Matrix::new(&x, d).unwrap().max_abs(), 42.0);
        for (at, bad) in [
            (x.len() - 1, f32::INFINITY),
            (123_457, f32::NAN),
            (5 << 20, -f32::INFINITY),
        ] {
            let mut y = x.clone();
            y[at] = bad;
            let next = (at + 1).min(y.len() - 1);
            y[next] = f32::NAN;
            match Matrix::new(&y, d) {
                Err(Error::NonFinite { row, col, .. }) => assert_eq!((row, col), (at / d, at % d)),
                other => panic!("{at}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_piece_check_finds_the_first_non_finite_value_or_none() {
        let clean: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) * 1e3).collect();
        assert_eq!(first_non_finite(&clean), None);
        assert_eq!(first_non_finite(&[]), None);
        assert_eq!(first_non_finite(&[f32::MAX, -f32::MAX, 0.0]), None);
        for (at, bad) in [(0, f32::NAN), (517, f32::INFINITY), (999, -f32::INFINITY)] {
            let mut y = clean.clone();
            y[at] = bad;
            y[999.min(at + 3)] = f32::NAN;
            assert_eq!(first_non_finite(&y), Some(at), "{bad} at {at}");
        }
        assert_eq!(abs_bits_max(&[-2.5, 1.0]), 2.5f32.to_bits());
    }

    #[test]
    fn rejects_bad_shapes_and_values() {
        assert!(matches!(Matrix::new(&[], 3), Err(Error::EmptyData { .. })));
        assert!(matches!(
            Matrix::new(&[1.0], 0),
            Err(Error::EmptyData { .. })
        ));
        assert!(matches!(
            Matrix::new(&[1.0, 2.0], 3),
            Err(Error::Shape { .. })
        ));
        let e = Matrix::new(&[1.0, 2.0, 3.0, f32::NAN], 2).unwrap_err();
        assert!(matches!(e, Error::NonFinite { row: 1, col: 1, .. }), "{e}");
        let e = Matrix::new(&[f32::NEG_INFINITY, 0.0], 2).unwrap_err();
        assert!(e.to_string().contains("-inf"), "{e}");
    }

    #[test]
    fn weights_are_scaled_by_a_power_of_two_into_one_to_two() {
        for w in [
            vec![1e38f32, 2e37, 0.0],
            vec![1e-20, 3e-20],
            vec![0.3, 0.6],
            vec![5.0, 1.0],
        ] {
            let (scaled, f) = weights_in_range(&w);
            assert_eq!(f.to_bits() & 0x007f_ffff, 0, "{f} is a power of two");
            let top = scaled.iter().fold(0.0f32, |m, &v| m.max(v));
            assert!((1.0..2.0).contains(&top), "{w:?}: {top}");
            for (a, b) in scaled.iter().zip(&w) {
                assert_eq!(*a, b * f, "exact");
            }
        }
        assert_eq!(weights_in_range(&[1.5, 0.25]).1, 1.0);
        assert_eq!(weights_in_range(&[0.0, 0.0]).1, 1.0);
    }

    #[test]
    fn views_rows() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let m = Matrix::new(&v, 3).unwrap();
        assert_eq!((m.n_rows(), m.n_features()), (2, 3));
        assert_eq!(m.row(1), &[4.0, 5.0, 6.0]);
        assert_eq!(m.to_f64()[5], 6.0);
    }

    #[test]
    fn range_scale_is_one_in_range_and_a_power_of_two_outside() {
        for m in [0.0, 1.0, 3.5e-10, 1.0e12, f32::NAN, f32::INFINITY] {
            assert_eq!(range_scale(m), 1.0, "{m}");
        }
        for m in [1e-30f32, 3e-20, 1e20, 3.4e38, 1e-40, 1e-45] {
            let s = range_scale(m);
            assert_eq!(s.to_bits() & 0x007f_ffff, 0, "{s} is a power of two");
            let scaled = m * s;
            if m.is_normal() {
                assert!((1.0..4.0).contains(&scaled), "{m} x {s} = {scaled}");
            } else {
                // Subnormal data: 2^126 is the largest factor, and it brings them in range.
                assert!(
                    scaled >= F32_RANGE.0 && scaled < 1.0,
                    "{m} x {s} = {scaled}"
                );
            }
        }
    }
}
