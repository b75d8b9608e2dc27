//! `ndarray` arrays as data, and models' parameters as arrays (feature `ndarray`, the
//! `ndarray` 0.16 that linfa 0.8 uses).
//!
//! Every fit, predict and transform takes `&impl GpuInput`; `ArrayView2<f32>`,
//! `Array2<f32>`, `ArrayView2<f64>` and `Array2<f64>` implement it:
//!
//! - **f32 in standard (C, row-major) layout** is uploaded straight from the array's memory,
//!   as a [`Matrix`] would be; any other layout (a transposed view, a column slice) is first
//!   copied into row-major order on the host. The values are checked for NaN and infinity.
//! - **f64** is centred in f64 before it is rounded to f32, as every f64 input is (module
//!   [`origin`](crate::origin)): a fit takes the column means in f64 and keeps them in the
//!   model (a K-Means model's origin, a PCA model's mean, a mixture's means), and predict,
//!   transform and score subtract the model's origin in f64 first. So data far from 0 (an
//!   offset of 10⁸) lose nothing to the cast. Where f32 cannot hold the centred values
//!   (their spread beyond f32's range), the error is [`Error::Float32Range`]. Results are
//!   computed in f32 on the GPU (host algebra in f64) as for any input.
//!
//! Arrays are not streamed: data over the device-memory budget should come as a
//! [`RowSource`](crate::RowSource) (or a [`Matrix`] over the array's slice, which streams).
//!
//! Parameters as arrays (views, no copy): [`KMeansModel::centroids_array`] (K × D),
//! [`PcaModel::components_array`] (M × D), [`PcaModel::mean_array`] (D),
//! [`GaussianMixtureModel::means_array`] (K × D), [`GaussianMixtureModel::weights_array`] (K)
//! and [`GaussianMixtureModel::covariances_array`] with scikit-learn's shapes per covariance
//! type: full (K, D, D), tied (D, D), diag (K, D), spherical (K).
//!
//! ```
//! use ndarray::Array2;
//! use wgpu_unsupervised::{Gpu, KMeans};
//!
//! let gpu = Gpu::new()?;
//! let x = Array2::from_shape_fn((200, 2), |(i, j)| ((i % 2) * 10 + j) as f32 + (i as f32).sin());
//! let model = KMeans::new(2).seed(1).fit(&gpu, &x.view())?;
//! assert_eq!(model.centroids_array().dim(), (2, 2));
//! let labels = model.predict(&gpu, &x.t().t())?; // any layout
//! assert_eq!(labels, model.labels());
//! # Ok::<(), wgpu_unsupervised::Error>(())
//! ```
//!
//! [`Error::Float32Range`]: crate::Error::Float32Range

use std::borrow::Cow;

use ::ndarray::{Array2, ArrayView1, ArrayView2, ArrayViewD, IxDyn};

use crate::error::Result;
use crate::gmm::{CovarianceType, GaussianMixtureModel};
use crate::gpu::{Gpu, GpuInput, GpuMatrix};
use crate::kmeans::KMeansModel;
use crate::pca::PcaModel;
use crate::{Matrix, Matrix64};

/// The rows of `view` as row-major f32: borrowed when the layout is already standard.
fn rows_f32<'a>(view: &'a ArrayView2<'_, f32>) -> Cow<'a, [f32]> {
    match view.as_slice() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(view.iter().copied().collect()),
    }
}

/// The rows of `view` as row-major f64: borrowed when the layout is already standard.
fn rows_f64<'a>(view: &'a ArrayView2<'_, f64>) -> Cow<'a, [f64]> {
    match view.as_slice() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(view.iter().copied().collect()),
    }
}

/// The f64 rows of `view` uploaded as f32 without centring (what the paths that do not
/// centre see; module [`origin`](crate::origin)).
fn upload_f64(gpu: &Gpu, view: &ArrayView2<'_, f64>) -> Result<Cow<'static, GpuMatrix>> {
    let rows = rows_f64(view);
    let m = Matrix64::new(&rows, view.ncols())?;
    Ok(Cow::Owned(m.on_gpu(gpu)?.into_owned()))
}

/// Uploads row-major `values` of `d` features (checked like any [`Matrix`]).
fn upload(gpu: &Gpu, values: &[f32], d: usize) -> Result<Cow<'static, GpuMatrix>> {
    Ok(Cow::Owned(GpuMatrix::upload(
        gpu,
        &Matrix::new(values, d)?,
    )?))
}

impl GpuInput for ArrayView2<'_, f32> {
    fn shape(&self) -> (usize, usize) {
        self.dim()
    }
    fn on_gpu(&self, gpu: &Gpu) -> Result<Cow<'_, GpuMatrix>> {
        upload(gpu, &rows_f32(self), self.ncols())
    }
}

impl GpuInput for Array2<f32> {
    fn shape(&self) -> (usize, usize) {
        self.dim()
    }
    fn on_gpu(&self, gpu: &Gpu) -> Result<Cow<'_, GpuMatrix>> {
        upload(gpu, &rows_f32(&self.view()), self.ncols())
    }
}

impl GpuInput for ArrayView2<'_, f64> {
    fn shape(&self) -> (usize, usize) {
        self.dim()
    }
    fn on_gpu(&self, gpu: &Gpu) -> Result<Cow<'_, GpuMatrix>> {
        upload_f64(gpu, self)
    }
    fn f64_rows(&self) -> Option<Cow<'_, [f64]>> {
        Some(rows_f64(self))
    }
}

impl GpuInput for Array2<f64> {
    fn shape(&self) -> (usize, usize) {
        self.dim()
    }
    fn on_gpu(&self, gpu: &Gpu) -> Result<Cow<'_, GpuMatrix>> {
        upload_f64(gpu, &self.view())
    }
    fn f64_rows(&self) -> Option<Cow<'_, [f64]>> {
        match self.as_slice() {
            Some(s) => Some(Cow::Borrowed(s)),
            None => Some(Cow::Owned(self.iter().copied().collect())),
        }
    }
}

/// A view of `values` with `shape` (the model's own storage, so the shape always fits).
fn view<'a, T>(shape: &[usize], values: &'a [T]) -> ArrayViewD<'a, T> {
    ArrayViewD::from_shape(IxDyn(shape), values).expect("a model's parameters fit their shape")
}

impl KMeansModel {
    /// The centroids as a K × D array view (feature `ndarray`).
    pub fn centroids_array(&self) -> ArrayView2<'_, f32> {
        ArrayView2::from_shape((self.k(), self.n_features()), self.centroids())
            .expect("K x D centroids")
    }
}

impl PcaModel {
    /// The components as an M × D array view, one component per row (feature `ndarray`).
    pub fn components_array(&self) -> ArrayView2<'_, f64> {
        ArrayView2::from_shape((self.n_components(), self.n_features()), self.components())
            .expect("M x D components")
    }

    /// The mean as a length-D array view (feature `ndarray`).
    pub fn mean_array(&self) -> ArrayView1<'_, f64> {
        ArrayView1::from(self.mean())
    }
}

impl GaussianMixtureModel {
    /// The component means as a K × D array view (feature `ndarray`).
    pub fn means_array(&self) -> ArrayView2<'_, f64> {
        ArrayView2::from_shape((self.k(), self.n_features()), self.means()).expect("K x D means")
    }

    /// The mixing weights as a length-K array view (feature `ndarray`).
    pub fn weights_array(&self) -> ArrayView1<'_, f64> {
        ArrayView1::from(self.weights())
    }

    /// The covariances in scikit-learn's shape for the covariance type: full (K, D, D), tied
    /// (D, D), diag (K, D), spherical (K) (feature `ndarray`).
    pub fn covariances_array(&self) -> ArrayViewD<'_, f64> {
        let (k, d) = (self.k(), self.n_features());
        let shape: &[usize] = match self.covariance_type() {
            CovarianceType::Full => &[k, d, d],
            CovarianceType::Tied => &[d, d],
            CovarianceType::Diag => &[k, d],
            CovarianceType::Spherical => &[k],
        };
        view(shape, self.covariances())
    }
}
