//! Conversions between NumPy arrays and the library's views, the library's errors as
//! Python exceptions, and the one way every binding runs the library ([`run`]): the GIL
//! released while the library works, its error mapped, a panic caught as `RuntimeError`.

use std::borrow::Cow;

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use wgpu_unsupervised::{Error, Gpu, GpuInput, GpuMatrix, Matrix, Matrix64, RowSource};

/// An n x d NumPy array owned by Python (an output).
pub type Array<'py, T> = Bound<'py, PyArray2<T>>;
/// A NumPy vector of labels (int64).
pub type Labels<'py> = Bound<'py, PyArray1<i64>>;

/// The library's error as a Python exception: `ValueError` for bad input (data, parameters,
/// models, shapes), `RuntimeError` for the device (no adapter, memory, limits, loss),
/// `OSError` for files; the message is the library's.
pub fn to_py(e: Error) -> PyErr {
    let message = e.to_string();
    match e {
        Error::EmptyData { .. }
        | Error::Shape { .. }
        | Error::NonFinite { .. }
        | Error::TooFewSamples { .. }
        | Error::FeatureMismatch { .. }
        | Error::InvalidParameter { .. }
        | Error::InvalidBuffer(_)
        | Error::InvalidModel { .. }
        | Error::ModelFormat { .. }
        | Error::Source { .. }
        | Error::OutOfRange { .. }
        | Error::Float32Range { .. }
        | Error::Format { .. } => PyValueError::new_err(message),
        Error::Io { .. } => PyOSError::new_err(message),
        _ => PyRuntimeError::new_err(message),
    }
}

/// `Result` of the library into `PyResult`.
pub trait OrPy<T> {
    /// The value, or the error as a Python exception ([`to_py`]).
    fn or_py(self) -> PyResult<T>;
}

impl<T> OrPy<T> for wgpu_unsupervised::Result<T> {
    fn or_py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// A 2-D array of float32 or float64 rows in C order (the Python side makes it so, copying
/// only when needed): float64 stays float64, so that the library centres it in f64 before
/// the f32 cast (its module `origin`).
#[derive(FromPyObject)]
pub enum Rows<'py> {
    /// float32 rows.
    F32(PyReadonlyArray2<'py, f32>),
    /// float64 rows.
    F64(PyReadonlyArray2<'py, f64>),
}

/// The library's validated view of [`Rows`]: a `Matrix` or a `Matrix64`, which every fit,
/// predict, transform and metric takes.
pub enum View<'a> {
    /// float32 rows.
    F32(Matrix<'a>),
    /// float64 rows.
    F64(Matrix64<'a>),
}

fn c_order<'a, T: numpy::Element>(x: &'a PyReadonlyArray2<'_, T>) -> PyResult<(&'a [T], usize)> {
    let d = x.shape()[1];
    let values = x.as_slice().map_err(|_| {
        PyValueError::new_err(
            "expected an aligned C-contiguous array (the Python wrapper converts)",
        )
    })?;
    Ok((values, d))
}

impl Rows<'_> {
    /// The validated view (finite values, whole rows, rows and columns).
    pub fn view(&self) -> PyResult<View<'_>> {
        match self {
            Rows::F32(x) => {
                let (values, d) = c_order(x)?;
                Ok(View::F32(Matrix::new(values, d).or_py()?))
            }
            Rows::F64(x) => {
                let (values, d) = c_order(x)?;
                Ok(View::F64(Matrix64::new(values, d).or_py()?))
            }
        }
    }

    /// Rows N and features D.
    pub fn shape(&self) -> (usize, usize) {
        let s = match self {
            Rows::F32(x) => x.shape(),
            Rows::F64(x) => x.shape(),
        };
        (s[0], s[1])
    }
}

impl View<'_> {
    /// Rows N.
    pub fn n_rows(&self) -> usize {
        GpuInput::shape(self).0
    }

    /// Features D.
    pub fn n_features(&self) -> usize {
        GpuInput::shape(self).1
    }
}

impl GpuInput for View<'_> {
    fn shape(&self) -> (usize, usize) {
        match self {
            View::F32(m) => GpuInput::shape(m),
            View::F64(m) => GpuInput::shape(m),
        }
    }
    fn on_gpu(&self, gpu: &Gpu) -> wgpu_unsupervised::Result<Cow<'_, GpuMatrix>> {
        match self {
            View::F32(m) => m.on_gpu(gpu),
            View::F64(m) => m.on_gpu(gpu),
        }
    }
    fn as_source(&self) -> Option<&dyn RowSource> {
        Some(self)
    }
    fn f64_rows(&self) -> Option<Cow<'_, [f64]>> {
        match self {
            View::F32(_) => None,
            View::F64(m) => GpuInput::f64_rows(m),
        }
    }
}

impl RowSource for View<'_> {
    fn shape(&self) -> (usize, usize) {
        GpuInput::shape(self)
    }
    fn visit_rows(
        &self,
        max_rows: usize,
        visit: &mut dyn FnMut(usize, &[f32]) -> wgpu_unsupervised::Result<()>,
    ) -> wgpu_unsupervised::Result<()> {
        match self {
            View::F32(m) => m.visit_rows(max_rows, visit),
            View::F64(m) => m.visit_rows(max_rows, visit),
        }
    }
    fn gather(&self, indices: &[usize]) -> wgpu_unsupervised::Result<Vec<f32>> {
        match self {
            View::F32(m) => m.gather(indices),
            View::F64(m) => m.gather(indices),
        }
    }
    fn max_abs(&self) -> Option<f32> {
        match self {
            View::F32(m) => RowSource::max_abs(m),
            View::F64(m) => RowSource::max_abs(m),
        }
    }
    fn f64_rows(&self) -> Option<Cow<'_, [f64]>> {
        GpuInput::f64_rows(self)
    }
    fn rows_in_memory(&self) -> Option<&[f32]> {
        match self {
            View::F32(m) => m.rows_in_memory(),
            View::F64(_) => None,
        }
    }
}

/// `f` run with the GIL released, a panic caught: the library's error as a Python exception
/// ([`to_py`]), a panic as `RuntimeError` (never pyo3's `PanicException`, a `BaseException`
/// that `except Exception` does not catch). Every binding runs the library through here.
pub fn run<T, F>(py: Python<'_>, f: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> wgpu_unsupervised::Result<T> + Send,
{
    match py.detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))) {
        Ok(result) => result.or_py(),
        Err(panic) => Err(panicked(panic.as_ref())),
    }
}

/// A caught panic as a `RuntimeError` with its message.
pub fn panicked(panic: &(dyn std::any::Any + Send)) -> PyErr {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    PyRuntimeError::new_err(format!(
        "internal error in wgpu-unsupervised (a bug; please report it with the call that \
         raised it): {what}"
    ))
}

/// `f` on the view of `x`, with the GIL released while it runs ([`run`]).
pub fn on_rows<T, F>(py: Python<'_>, x: &Rows<'_>, f: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&View<'_>) -> wgpu_unsupervised::Result<T> + Send,
{
    let x = x.view()?;
    run(py, || f(&x))
}

/// As [`on_rows`], with the optional per-row weights (`None`: unweighted).
pub fn on_weighted_rows<T, F>(
    py: Python<'_>,
    x: &Rows<'_>,
    sample_weight: Option<&PyReadonlyArray1<'_, f32>>,
    f: F,
) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&View<'_>, Option<&[f32]>) -> wgpu_unsupervised::Result<T> + Send,
{
    let x = x.view()?;
    let w = sample_weight.map(values).transpose()?;
    run(py, || f(&x, w))
}

/// As [`on_rows`], with the rows' labels (int64 codes 0..k).
pub fn on_labelled_rows<T, F>(
    py: Python<'_>,
    x: &Rows<'_>,
    labels: &PyReadonlyArray1<'_, i64>,
    f: F,
) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&View<'_>, &[u32]) -> wgpu_unsupervised::Result<T> + Send,
{
    let x = x.view()?;
    let labels = labels_from(labels, "labels")?;
    run(py, || f(&x, &labels))
}

/// The values of a 1-D array (weights, labels), contiguous.
pub fn values<'a, T: numpy::Element>(v: &'a PyReadonlyArray1<'_, T>) -> PyResult<&'a [T]> {
    v.as_slice()
        .map_err(|_| PyValueError::new_err("expected a contiguous 1-D array"))
}

/// Row-major values as an `n x d` array.
pub fn array2<T: numpy::Element>(
    py: Python<'_>,
    v: Vec<T>,
    d: usize,
) -> PyResult<Bound<'_, PyArray2<T>>> {
    let n = v.len().checked_div(d).unwrap_or(0);
    v.into_pyarray(py).reshape([n, d])
}

/// Values as a 1-D array.
pub fn array1<T: numpy::Element>(py: Python<'_>, v: Vec<T>) -> Bound<'_, PyArray1<T>> {
    v.into_pyarray(py)
}

/// Labels as int64 (scikit-learn's label arrays are integers; the library's are u32).
pub fn labels_array<'py>(py: Python<'py>, labels: &[u32]) -> Bound<'py, PyArray1<i64>> {
    labels
        .iter()
        .map(|&l| l as i64)
        .collect::<Vec<_>>()
        .into_pyarray(py)
}

/// Non-negative integer labels from a 1-D int64 array.
pub fn labels_from(v: &PyReadonlyArray1<'_, i64>, what: &str) -> PyResult<Vec<u32>> {
    values(v)?
        .iter()
        .map(|&l| {
            u32::try_from(l).map_err(|_| {
                PyValueError::new_err(format!(
                    "{what}: labels must be integers in [0, 2^32), got {l}"
                ))
            })
        })
        .collect()
}

/// A model as the library's serde JSON (models pickle through it).
pub fn to_json<T: serde::Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// An optional float64 vector (given parts of a start) as owned values, in its logical order.
pub fn vector(v: Option<PyReadonlyArray1<'_, f64>>) -> Option<Vec<f64>> {
    v.map(|a| a.as_array().iter().copied().collect())
}

/// `__reduce__` of a model class `T` pickled as the library's JSON: `(T.from_json, (json,))`.
pub fn reduce_json<T: pyo3::PyTypeInfo>(
    py: Python<'_>,
    json: String,
) -> PyResult<(Py<PyAny>, (String,))> {
    let cls = py.get_type::<T>().getattr("from_json")?;
    Ok((cls.unbind(), (json,)))
}

/// A model from the library's serde JSON; every model is validated as it is read.
pub fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> PyResult<T> {
    serde_json::from_str(text).map_err(|e| PyValueError::new_err(e.to_string()))
}
