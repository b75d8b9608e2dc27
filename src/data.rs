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
}

impl<'a> Matrix<'a> {
    /// Wraps `data` (row-major, `n_features` values per row) after validating it.
    ///
    /// Errors: [`Error::EmptyData`] for no rows or zero features, [`Error::Shape`] when the
    /// length is not a multiple of `n_features`, [`Error::NonFinite`] with the row and column
    /// of the first NaN or infinity.
    pub fn new(data: &'a [f32], n_features: usize) -> Result<Self> {
        validate_row_major(data, n_features)?;
        Ok(Self {
            data,
            n_rows: data.len() / n_features,
            n_features,
        })
    }

    /// A view over values already checked (a mapped file checked when it was opened).
    #[cfg(feature = "io")]
    pub(crate) fn checked(data: &'a [f32], n_rows: usize, n_features: usize) -> Self {
        debug_assert_eq!(data.len(), n_rows * n_features);
        Self {
            data,
            n_rows,
            n_features,
        }
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

    /// Row `i` as a slice.
    pub fn row(&self, i: usize) -> &'a [f32] {
        &self.data[i * self.n_features..(i + 1) * self.n_features]
    }

    /// The values widened to f64 (for the CPU reference).
    pub fn to_f64(&self) -> Vec<f64> {
        self.data.iter().map(|&v| v as f64).collect()
    }
}

/// Checks row-major `data` of `n_features` columns: at least one column and one row, a whole
/// number of rows, every value finite (the first NaN/inf is reported with its position).
pub(crate) fn validate_row_major<T: Copy + Into<f64>>(data: &[T], n_features: usize) -> Result<()> {
    if n_features == 0 {
        return Err(Error::EmptyData {
            what: "input matrix",
            missing: "columns",
        });
    }
    if data.is_empty() {
        return Err(Error::EmptyData {
            what: "input matrix",
            missing: "rows",
        });
    }
    if !data.len().is_multiple_of(n_features) {
        return Err(Error::Shape {
            len: data.len(),
            n_features,
        });
    }
    check_finite(data, n_features)
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn views_rows() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let m = Matrix::new(&v, 3).unwrap();
        assert_eq!((m.n_rows(), m.n_features()), (2, 3));
        assert_eq!(m.row(1), &[4.0, 5.0, 6.0]);
        assert_eq!(m.to_f64()[5], 6.0);
    }
}
