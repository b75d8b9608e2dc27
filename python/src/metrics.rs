//! Clustering metrics: the internal criteria on data and labels, and the agreement scores
//! between two labellings. Labels arrive as int64 codes 0..k (the Python side encodes
//! arbitrary labels).

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use wgpu_unsupervised::metrics::{self, AverageMethod};

use crate::convert::{array1, labels_from, on_labelled_rows, on_rows, OrPy, Rows, View};
use crate::device::Device;

fn average(name: &str) -> PyResult<AverageMethod> {
    match name {
        "min" => Ok(AverageMethod::Min),
        "geometric" => Ok(AverageMethod::Geometric),
        "arithmetic" => Ok(AverageMethod::Arithmetic),
        "max" => Ok(AverageMethod::Max),
        other => Err(PyValueError::new_err(format!(
            "average_method: expected 'min', 'geometric', 'arithmetic' or 'max', got {other:?}"
        ))),
    }
}

/// silhouette(device, x, labels, sample_size, seed) -> (score, rows, samples)
#[pyfunction]
#[allow(clippy::type_complexity)]
fn silhouette<'py>(
    py: Python<'py>,
    device: &Device,
    x: Rows<'py>,
    labels: PyReadonlyArray1<'py, i64>,
    sample_size: Option<usize>,
    seed: u64,
) -> PyResult<(f64, Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<f64>>)> {
    let s = on_labelled_rows(py, &x, &labels, |x, labels| {
        metrics::silhouette(device.gpu, x, labels, sample_size, seed)
    })?;
    let rows = s.rows.iter().map(|&r| r as i64).collect();
    Ok((s.score, array1(py, rows), array1(py, s.samples)))
}

/// silhouette_precomputed(distances (n x n float32 or float64), labels) -> (score, samples)
///
/// The diagonal is checked at the tolerance of the matrix's own dtype (100 x its epsilon),
/// as scikit-learn does.
#[pyfunction]
fn silhouette_precomputed<'py>(
    py: Python<'py>,
    distances: Rows<'py>,
    labels: PyReadonlyArray1<'py, i64>,
) -> PyResult<(f64, Bound<'py, PyArray1<f64>>)> {
    let (n, _) = distances.shape();
    let labels = labels_from(&labels, "labels")?;
    let (score, samples) = on_rows(py, &distances, |d| match d {
        View::F32(m) => precomputed(m.as_slice(), n, &labels),
        View::F64(m) => precomputed(m.as_slice(), n, &labels),
    })?;
    Ok((score, array1(py, samples)))
}

/// The mean silhouette and the samples' from a precomputed matrix.
fn precomputed<T: metrics::DistanceValue>(
    d: &[T],
    n: usize,
    labels: &[u32],
) -> wgpu_unsupervised::Result<(f64, Vec<f64>)> {
    let samples = metrics::silhouette_samples_precomputed(d, n, labels)?;
    let score = samples.iter().sum::<f64>() / n as f64;
    Ok((score, samples))
}

#[pyfunction]
fn calinski_harabasz(
    py: Python<'_>,
    x: Rows<'_>,
    labels: PyReadonlyArray1<'_, i64>,
) -> PyResult<f64> {
    on_labelled_rows(py, &x, &labels, |x, labels| match x {
        View::F32(m) => metrics::calinski_harabasz(m, labels),
        View::F64(m) => metrics::calinski_harabasz(m, labels),
    })
}

#[pyfunction]
fn davies_bouldin(py: Python<'_>, x: Rows<'_>, labels: PyReadonlyArray1<'_, i64>) -> PyResult<f64> {
    on_labelled_rows(py, &x, &labels, |x, labels| match x {
        View::F32(m) => metrics::davies_bouldin(m, labels),
        View::F64(m) => metrics::davies_bouldin(m, labels),
    })
}

/// agreement(name, labels_true, labels_pred, average_method, beta) -> float
///
/// One of "rand", "adjusted_rand", "mutual_info", "normalized_mutual_info",
/// "adjusted_mutual_info", "homogeneity", "completeness", "v_measure", "fowlkes_mallows".
#[pyfunction]
#[pyo3(signature = (name, labels_true, labels_pred, average_method="arithmetic", beta=1.0))]
fn agreement(
    name: &str,
    labels_true: PyReadonlyArray1<'_, i64>,
    labels_pred: PyReadonlyArray1<'_, i64>,
    average_method: &str,
    beta: f64,
) -> PyResult<f64> {
    let a = labels_from(&labels_true, "labels_true")?;
    let b = labels_from(&labels_pred, "labels_pred")?;
    let r = match name {
        "rand" => metrics::rand_index(&a, &b),
        "adjusted_rand" => metrics::adjusted_rand_index(&a, &b),
        "mutual_info" => metrics::mutual_info_score(&a, &b),
        "normalized_mutual_info" => {
            metrics::normalized_mutual_info_score(&a, &b, average(average_method)?)
        }
        "adjusted_mutual_info" => {
            metrics::adjusted_mutual_info_score(&a, &b, average(average_method)?)
        }
        "homogeneity" => metrics::homogeneity_score(&a, &b),
        "completeness" => metrics::completeness_score(&a, &b),
        "v_measure" => metrics::v_measure_score(&a, &b, beta),
        "fowlkes_mallows" => metrics::fowlkes_mallows_score(&a, &b),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown agreement score {other:?}"
            )))
        }
    };
    r.or_py()
}

/// inertia(x, labels) -> Σ‖x − mean of its cluster‖²
#[pyfunction]
fn inertia(py: Python<'_>, x: Rows<'_>, labels: PyReadonlyArray1<'_, i64>) -> PyResult<f64> {
    on_labelled_rows(py, &x, &labels, |x, labels| match x {
        View::F32(m) => metrics::inertia(m, labels),
        View::F64(m) => metrics::inertia(m, labels),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(silhouette, m)?)?;
    m.add_function(wrap_pyfunction!(silhouette_precomputed, m)?)?;
    m.add_function(wrap_pyfunction!(calinski_harabasz, m)?)?;
    m.add_function(wrap_pyfunction!(davies_bouldin, m)?)?;
    m.add_function(wrap_pyfunction!(agreement, m)?)?;
    m.add_function(wrap_pyfunction!(inertia, m)?)?;
    Ok(())
}
