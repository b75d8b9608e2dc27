//! Conversions between NumPy arrays and the library's views, the library's errors as
//! Python exceptions, and the one way every binding runs the library on an array: the view
//! checked, the GIL released while the library works, its error mapped.

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use wgpu_unsupervised::{Error, Matrix};

/// An n x d NumPy array owned by Python.
pub type Rows<'py, T> = Bound<'py, PyArray2<T>>;
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

/// The values of a 2-D float32 array in C order (the Python side makes it so).
pub fn rows<'a>(x: &'a PyReadonlyArray2<'_, f32>) -> PyResult<(&'a [f32], usize)> {
    let d = x.shape()[1];
    let values = x.as_slice().map_err(|_| {
        PyValueError::new_err(
            "expected an aligned C-contiguous float32 array (the Python wrapper converts)",
        )
    })?;
    Ok((values, d))
}

/// A validated matrix view of a 2-D float32 array.
pub fn matrix<'a>(x: &'a PyReadonlyArray2<'_, f32>) -> PyResult<Matrix<'a>> {
    let (values, d) = rows(x)?;
    Matrix::new(values, d).or_py()
}

/// `f` on the matrix view of `x`, with the GIL released while it runs; the library's error
/// as a Python exception.
pub fn on_rows<T, F>(py: Python<'_>, x: &PyReadonlyArray2<'_, f32>, f: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&Matrix<'_>) -> wgpu_unsupervised::Result<T> + Send,
{
    let x = matrix(x)?;
    py.detach(|| f(&x)).or_py()
}

/// As [`on_rows`], with the optional per-row weights (`None`: unweighted).
pub fn on_weighted_rows<T, F>(
    py: Python<'_>,
    x: &PyReadonlyArray2<'_, f32>,
    sample_weight: Option<&PyReadonlyArray1<'_, f32>>,
    f: F,
) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&Matrix<'_>, Option<&[f32]>) -> wgpu_unsupervised::Result<T> + Send,
{
    let x = matrix(x)?;
    let w = sample_weight.map(values).transpose()?;
    py.detach(|| f(&x, w)).or_py()
}

/// As [`on_rows`], with the rows' labels (int64 codes 0..k).
pub fn on_labelled_rows<T, F>(
    py: Python<'_>,
    x: &PyReadonlyArray2<'_, f32>,
    labels: &PyReadonlyArray1<'_, i64>,
    f: F,
) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&Matrix<'_>, &[u32]) -> wgpu_unsupervised::Result<T> + Send,
{
    let x = matrix(x)?;
    let labels = labels_from(labels, "labels")?;
    py.detach(|| f(&x, &labels)).or_py()
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
