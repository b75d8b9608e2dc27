//! What a fit or a prediction accepts as data: a host [`Matrix`] (uploaded for the call) or a
//! [`GpuMatrix`] already on the device (used in place, never copied). Every algorithm takes
//! `&impl GpuInput`, so callers that keep their data on the device pay for no transfer.

use std::borrow::Cow;

use crate::data::Matrix;
use crate::error::Result;
use crate::gpu::{Gpu, GpuMatrix};
use crate::source::RowSource;

/// Data a fit or prediction can take: a host [`Matrix`] (uploaded for the call) or a
/// [`GpuMatrix`] already on the device (used in place).
pub trait GpuInput {
    /// Rows and features.
    fn shape(&self) -> (usize, usize);
    /// The data on the device, uploading it if needed.
    fn on_gpu(&self, gpu: &Gpu) -> Result<Cow<'_, GpuMatrix>>;
    /// The data as a [`RowSource`] when they are on the host: the fits stream host data
    /// that exceed the device-memory budget instead of failing.
    fn as_source(&self) -> Option<&dyn RowSource> {
        None
    }
    /// The row-major f64 values when the data are f64 (a
    /// [`Matrix64`](crate::origin::Matrix64), an `ndarray` f64 array): every fit, predict
    /// and transform then centres them in f64 before the f32 cast (module
    /// [`origin`](crate::origin)). `None` (the default) for f32 data.
    fn f64_rows(&self) -> Option<Cow<'_, [f64]>> {
        None
    }
}

impl GpuInput for Matrix<'_> {
    fn shape(&self) -> (usize, usize) {
        (self.n_rows(), self.n_features())
    }
    fn on_gpu(&self, gpu: &Gpu) -> Result<Cow<'_, GpuMatrix>> {
        Ok(Cow::Owned(GpuMatrix::upload(gpu, self)?))
    }
    fn as_source(&self) -> Option<&dyn RowSource> {
        Some(self)
    }
}

impl GpuInput for GpuMatrix {
    fn shape(&self) -> (usize, usize) {
        (self.n_rows(), self.n_features())
    }
    fn on_gpu(&self, _gpu: &Gpu) -> Result<Cow<'_, GpuMatrix>> {
        Ok(Cow::Borrowed(self))
    }
}
