//! float64 data, centred in f64 before the f32 cast: the one place where the crate's f64
//! input meets its f32 kernels.
//!
//! The GPU computes in f32, whose values near 10⁸ are 8 apart: rounding `X + 1e8` to f32 keeps
//! the offset and loses the data (a K-Means inertia several times scikit-learn's, a mixture's
//! log-likelihood of the wrong sign). Every fit, predict, transform, score and metric is
//! translation-invariant or is made so here:
//!
//! - **fits** of f64 data ([`Matrix64`], `ndarray` f64 arrays, the Python package's float64
//!   arrays, the command line's f8 `.npy` files) take the column means in f64 (two passes:
//!   the mean, then the mean of the residuals), subtract them in f64, cast the differences to
//!   f32 one piece at a time, fit, and move the model back by those means: the *origin*.
//!   Given starts (K-Means centroids, a mixture's means) are moved to the centred frame
//!   first. The model keeps what it needs of the origin: a K-Means model keeps the origin and
//!   its centroids relative to it ([`KMeansModel::origin`](crate::KMeansModel::origin),
//!   [`KMeansModel::centroids_f64`](crate::KMeansModel::centroids_f64)); a PCA model's
//!   mean and a mixture's means are f64 in the data's units already.
//! - **predict, transform and score** of f64 data subtract the model's origin (a K-Means
//!   model's origin, else the mean of its centroids; a PCA model's mean; a mixture's
//!   weighted mean of its means) in f64 before the cast, against the model moved by the same
//!   origin, so their results carry the precision of the centred data.
//! - **metrics** (silhouette, Calinski–Harabasz, Davies–Bouldin, inertia) and spectral
//!   clustering centre f64 data on their column means.
//!
//! f32 data are used as they are (the caller's values are already rounded, as
//! scikit-learn's float32 path keeps them), and scaled by a power of two where their
//! magnitude needs it ([`crate::data::range_scale`]). Where f32 cannot hold the centred
//! data, because their spread about the origin lies outside f32's range, the fit is refused
//! with [`Error::Float32Range`], which says so, rather than with a non-finite value the caller
//! never had.

use std::borrow::Cow;

use crate::data::{validate_row_major, Matrix};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, GpuInput, GpuMatrix};
use crate::source::RowSource;

/// A validated row-major N x D view over `f64` values (borrowed, never modified): data that
/// every fit, predict, transform and metric centres in f64 before the f32 cast (module docs).
#[derive(Debug, Clone, Copy)]
pub struct Matrix64<'a> {
    data: &'a [f64],
    n_rows: usize,
    n_features: usize,
}

impl<'a> Matrix64<'a> {
    /// Wraps `data` (row-major, `n_features` values per row) after validating it as
    /// [`Matrix::new`] does: rows and columns, a whole number of rows, every value finite.
    ///
    /// Errors: [`Error::EmptyData`], [`Error::Shape`], [`Error::NonFinite`] (row and column
    /// from 0).
    pub fn new(data: &'a [f64], n_features: usize) -> Result<Self> {
        validate_row_major(data, n_features)?;
        Ok(Self {
            data,
            n_rows: data.len() / n_features,
            n_features,
        })
    }

    /// Number of rows N.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Number of features D.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// The row-major values.
    pub fn as_slice(&self) -> &'a [f64] {
        self.data
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &'a [f64] {
        &self.data[i * self.n_features..(i + 1) * self.n_features]
    }

    /// The column means, in f64: the mean, corrected by the mean of the residuals about it
    /// (so that a large offset does not cost the small differences).
    pub fn column_means(&self) -> Vec<f64> {
        column_means(self.data, self.n_features)
    }

    /// The rows less `origin` (D values), in f64, rounded to f32: what the kernels see of
    /// these rows in a fit centred on `origin`. For the partitions of a remote fit, which
    /// centre their rows on the driver's global mean (module docs).
    ///
    /// Errors: an origin of another length ([`Error::FeatureMismatch`]), a spread about it
    /// outside f32's range ([`Error::Float32Range`]).
    pub fn centred_on(&self, origin: &[f64]) -> Result<Vec<f32>> {
        let c = Centred::of_input(self, Some(origin))?.expect("f64 rows");
        c.gather(&(0..self.n_rows).collect::<Vec<_>>())
    }
}

/// The column means of row-major `values` of `d` features (see [`Matrix64::column_means`]).
pub(crate) fn column_means(values: &[f64], d: usize) -> Vec<f64> {
    let n = (values.len() / d.max(1)).max(1) as f64;
    let mut mean = vec![0.0f64; d];
    for row in values.chunks_exact(d) {
        mean.iter_mut().zip(row).for_each(|(m, v)| *m += v);
    }
    mean.iter_mut().for_each(|m| *m /= n);
    let mut residual = vec![0.0f64; d];
    for row in values.chunks_exact(d) {
        for ((r, v), m) in residual.iter_mut().zip(row).zip(&mean) {
            *r += v - m;
        }
    }
    mean.iter_mut()
        .zip(&residual)
        .for_each(|(m, r)| *m += r / n);
    mean
}

/// f64 values rounded to f32, refusing a finite value beyond f32's range with
/// [`Error::Float32Range`] (never a silent infinity).
fn to_f32(values: &[f64], what: &str) -> Result<Vec<f32>> {
    values
        .iter()
        .map(|&v| {
            let f = v as f32;
            if f.is_finite() {
                Ok(f)
            } else {
                Err(Error::Float32Range {
                    what: what.to_string(),
                    value: v,
                })
            }
        })
        .collect()
}

impl GpuInput for Matrix64<'_> {
    fn shape(&self) -> (usize, usize) {
        (self.n_rows, self.n_features)
    }

    /// The values rounded to f32 (no centring: the fits and predictions that centre do so
    /// through [`GpuInput::f64_rows`] before they get here).
    fn on_gpu(&self, gpu: &Gpu) -> Result<Cow<'_, GpuMatrix>> {
        let values = to_f32(self.data, "a float64 value")?;
        Ok(Cow::Owned(GpuMatrix::upload(
            gpu,
            &Matrix::new(&values, self.n_features)?,
        )?))
    }

    fn as_source(&self) -> Option<&dyn RowSource> {
        Some(self)
    }

    fn f64_rows(&self) -> Option<Cow<'_, [f64]>> {
        Some(Cow::Borrowed(self.data))
    }
}

impl RowSource for Matrix64<'_> {
    fn shape(&self) -> (usize, usize) {
        (self.n_rows, self.n_features)
    }

    fn visit_rows(
        &self,
        max_rows: usize,
        visit: &mut dyn FnMut(usize, &[f32]) -> Result<()>,
    ) -> Result<()> {
        let d = self.n_features;
        let max_rows = max_rows.max(1);
        for (i, rows) in self.data.chunks(max_rows * d).enumerate() {
            visit(i * max_rows, &to_f32(rows, "a float64 value")?)?;
        }
        Ok(())
    }

    fn gather(&self, indices: &[usize]) -> Result<Vec<f32>> {
        let rows = crate::source::gather_by_index(self.data, self.n_features, indices)?;
        to_f32(&rows, "a float64 value")
    }

    fn f64_rows(&self) -> Option<Cow<'_, [f64]>> {
        Some(Cow::Borrowed(self.data))
    }
}

/// f64 rows less an origin, in f64, rounded to f32 a piece at a time: what the kernels see of
/// f64 data (module docs). A [`RowSource`] and a [`GpuInput`] (uploaded piece by piece, never
/// as a whole f32 copy on the host).
pub(crate) struct Centred<'a> {
    values: Cow<'a, [f64]>,
    n_features: usize,
    origin: Vec<f64>,
    /// The largest |x − origin|, rounded to f32.
    max_abs: f32,
}

impl<'a> Centred<'a> {
    /// The f64 rows of `x` centred on `origin`, or on their own column means when `None`;
    /// `None` when `x` holds f32 values (they are used as they are).
    ///
    /// Errors: those of [`Matrix64::new`], an origin of another length
    /// ([`Error::FeatureMismatch`]), and [`Error::Float32Range`] when the spread about the
    /// origin lies outside f32's range.
    pub(crate) fn of_input(x: &'a impl GpuInput, origin: Option<&[f64]>) -> Result<Option<Self>> {
        match x.f64_rows() {
            Some(values) => Self::new(values, x.shape().1, origin).map(Some),
            None => Ok(None),
        }
    }

    /// [`Centred::of_input`] of a [`RowSource`].
    pub(crate) fn of_source(
        x: &'a (impl RowSource + ?Sized),
        origin: Option<&[f64]>,
    ) -> Result<Option<Self>> {
        match x.f64_rows() {
            Some(values) => Self::new(values, x.shape().1, origin).map(Some),
            None => Ok(None),
        }
    }

    fn new(values: Cow<'a, [f64]>, d: usize, origin: Option<&[f64]>) -> Result<Self> {
        validate_row_major(&values, d)?;
        let origin = match origin {
            Some(o) if o.len() != d => {
                return Err(Error::FeatureMismatch {
                    expected: o.len(),
                    found: d,
                })
            }
            Some(o) => o.to_vec(),
            None => column_means(&values, d),
        };
        let spread = values
            .chunks_exact(d)
            .flat_map(|row| row.iter().zip(&origin).map(|(v, o)| (v - o).abs()))
            .fold(0.0f64, f64::max);
        // Differences down to the smallest normal f32 keep their precision once scaled
        // (`data::range_scale`); past f32's largest value they cannot be held at all.
        if spread != 0.0 && !(f32::MIN_POSITIVE as f64..=f32::MAX as f64).contains(&spread) {
            return Err(Error::Float32Range {
                what: "the spread of the float64 data about their mean".into(),
                value: spread,
            });
        }
        Ok(Self {
            values,
            n_features: d,
            origin,
            max_abs: spread as f32,
        })
    }

    /// The point the rows are centred on.
    pub(crate) fn origin(&self) -> &[f64] {
        &self.origin
    }

    /// `rows` (whole rows of f64) less the origin, rounded to f32.
    fn centred(&self, rows: &[f64]) -> Vec<f32> {
        rows.chunks_exact(self.n_features)
            .flat_map(|row| row.iter().zip(&self.origin).map(|(v, o)| (v - o) as f32))
            .collect()
    }

    /// `fit` (a fit of `params` on the centred rows) for f64 data: the parameters' given
    /// starts moved into the centred frame, the model moved back by the origin.
    pub(crate) fn fit<P: Translate, M: Translate>(
        &self,
        params: &P,
        fit: impl FnOnce(&P, &Self) -> Result<M>,
    ) -> Result<M> {
        let there: Vec<f64> = self.origin.iter().map(|v| -v).collect();
        let model = fit(&params.clone().translated(&there)?, self)?;
        model.translated(&self.origin)
    }
}

impl RowSource for Centred<'_> {
    fn shape(&self) -> (usize, usize) {
        (self.values.len() / self.n_features, self.n_features)
    }

    fn visit_rows(
        &self,
        max_rows: usize,
        visit: &mut dyn FnMut(usize, &[f32]) -> Result<()>,
    ) -> Result<()> {
        let max_rows = max_rows.max(1);
        for (i, rows) in self.values.chunks(max_rows * self.n_features).enumerate() {
            visit(i * max_rows, &self.centred(rows))?;
        }
        Ok(())
    }

    fn gather(&self, indices: &[usize]) -> Result<Vec<f32>> {
        Ok(self.centred(&crate::source::gather_by_index(
            &self.values,
            self.n_features,
            indices,
        )?))
    }

    fn max_abs(&self) -> Option<f32> {
        Some(self.max_abs)
    }
}

impl GpuInput for Centred<'_> {
    fn shape(&self) -> (usize, usize) {
        RowSource::shape(self)
    }

    fn on_gpu(&self, gpu: &Gpu) -> Result<Cow<'_, GpuMatrix>> {
        Ok(Cow::Owned(crate::gpu::stream::upload_source(gpu, self)?))
    }

    fn as_source(&self) -> Option<&dyn RowSource> {
        Some(self)
    }
}

/// What moves with the data when they are translated: parameters with given starts (their
/// positions), fitted models (their means, centroids, origins) and moments (their mean).
///
/// The fits of f64 data use it to fit in the centred frame and report in the data's; a
/// driver of a remote fit whose partitions centre their rows on a global origin
/// ([`Matrix64::centred_on`]) does the same by hand: the parameters translated by −origin,
/// the model by +origin.
pub trait Translate: Clone {
    /// The same thing for data moved by `by` (D values: every position plus `by`).
    ///
    /// Errors: a position that the thing keeps in f32 and that f32 cannot hold
    /// ([`Error::Float32Range`]).
    fn translated(self, by: &[f64]) -> Result<Self>;
}

/// Checks a translation `by` for positions of `d` features: D finite values.
///
/// Errors: another length ([`Error::FeatureMismatch`]), a value that is not finite
/// ([`Error::NonFinite`]).
pub(crate) fn check_shift(by: &[f64], d: usize) -> Result<()> {
    if by.len() != d {
        return Err(Error::FeatureMismatch {
            expected: d,
            found: by.len(),
        });
    }
    crate::data::check_finite(by, d.max(1))
}

/// `positions` (row-major rows of `by.len()` values) plus `by`, row by row.
pub fn translate_rows(positions: &mut [f64], by: &[f64]) {
    if by.is_empty() {
        return;
    }
    for row in positions.chunks_exact_mut(by.len()) {
        row.iter_mut().zip(by).for_each(|(p, b)| *p += b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_means_keep_small_differences_under_a_large_offset() {
        let rows: Vec<f64> = (0..1000)
            .flat_map(|i| [1e8 + (i % 7) as f64 * 1e-3, -3.0e12 + (i % 3) as f64])
            .collect();
        let m = Matrix64::new(&rows, 2).unwrap().column_means();
        let exact0 = 1e8 + (0..1000).map(|i| (i % 7) as f64 * 1e-3).sum::<f64>() / 1000.0;
        let exact1 = -3.0e12 + (0..1000).map(|i| (i % 3) as f64).sum::<f64>() / 1000.0;
        assert!((m[0] - exact0).abs() <= 1e-8 * 1e-3, "{} vs {exact0}", m[0]);
        assert!((m[1] - exact1).abs() <= 1e-3 * 1e-3, "{} vs {exact1}", m[1]);
    }

    #[test]
    fn centred_rows_are_the_differences_and_the_spread_is_checked() {
        let rows = [1e9 + 0.25, 5.0, 1e9 - 0.25, 7.0];
        let m = Matrix64::new(&rows, 2).unwrap();
        let c = Centred::of_input(&m, None).unwrap().unwrap();
        assert_eq!(c.origin(), &[1e9, 6.0]);
        let mut got = Vec::new();
        c.visit_rows(1, &mut |_, r| {
            got.extend_from_slice(r);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, vec![0.25, -1.0, -0.25, 1.0]);
        assert_eq!(c.gather(&[1, 1]).unwrap(), vec![-0.25, 1.0, -0.25, 1.0]);
        assert_eq!(RowSource::max_abs(&c), Some(1.0));
        // Beyond f32 when centred: a clear error, not an infinity.
        let wide = [1e300, 0.0, -1e300, 0.0];
        let e = Centred::of_input(&Matrix64::new(&wide, 2).unwrap(), None)
            .err()
            .unwrap();
        assert!(matches!(e, Error::Float32Range { .. }), "{e}");
        assert!(e.to_string().contains("float32"), "{e}");
        // Below f32's smallest normal value: refused too.
        let tiny = [1e-300, 0.0, -1e-300, 0.0];
        assert!(Centred::of_input(&Matrix64::new(&tiny, 2).unwrap(), None).is_err());
        // Far from 0 but close together: fine.
        let offset = [1e39, 1.0, 1e39 + 1e25, 2.0];
        assert!(Centred::of_input(&Matrix64::new(&offset, 2).unwrap(), None).is_ok());
        // An origin of another length.
        assert!(Centred::of_input(&m, Some(&[0.0])).is_err());
        // f32 data are not centred.
        let f = [1.0f32, 2.0];
        assert!(Centred::of_input(&Matrix::new(&f, 2).unwrap(), None)
            .unwrap()
            .is_none());
    }

    #[test]
    fn translations_must_fit_the_model() {
        let m = crate::KMeansModel::from_centroids(vec![0.0, 1.0, 2.0, 3.0], 2).unwrap();
        assert!(matches!(
            m.clone().translated(&[1.0]),
            Err(Error::FeatureMismatch { .. })
        ));
        assert!(m.clone().translated(&[f64::NAN, 0.0]).is_err());
        let moved = m.translated(&[10.0, -10.0]).unwrap();
        assert_eq!(moved.centroids(), &[10.0, -9.0, 12.0, -7.0]);
        assert_eq!(moved.origin(), Some(&[10.0, -10.0][..]));
        assert_eq!(moved.centroids_f64(), vec![10.0, -9.0, 12.0, -7.0]);
        moved.validate().unwrap();
        // Beyond f32: the K-Means model says it cannot keep it.
        let far = crate::KMeansModel::from_centroids(vec![0.0, 1.0], 2).unwrap();
        assert!(matches!(
            far.translated(&[1e39, 0.0]),
            Err(Error::Float32Range { .. })
        ));
    }

    #[test]
    fn plain_casts_refuse_values_beyond_f32() {
        let rows = [1e39, 0.0];
        let m = Matrix64::new(&rows, 2).unwrap();
        let e = m.gather(&[0]).unwrap_err();
        assert!(matches!(e, Error::Float32Range { .. }), "{e}");
        assert!(Matrix64::new(&[f64::NAN, 0.0], 2).is_err());
    }
}
