//! K-Means, mini-batch K-Means and spectral clustering.

use numpy::{PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use wgpu_unsupervised::{
    Affinity, KMeans, KMeansInit, KMeansModel, MiniBatchKMeans, MiniBatchKMeansFit,
    SpectralClustering,
};

use crate::convert::{
    array1, array2, from_json, labels_array, on_rows, on_weighted_rows, reduce_json, to_json,
    Labels, OrPy, Rows,
};
use crate::device::Device;

/// The initialisation named `init`, or given centroids (k x d, float64).
pub fn kmeans_init(
    init: &str,
    centroids: Option<PyReadonlyArray2<'_, f64>>,
    oversampling: f64,
    rounds: usize,
) -> PyResult<KMeansInit> {
    if let Some(c) = centroids {
        let c = c
            .as_slice()
            .map_err(|_| PyValueError::new_err("init: a C-contiguous array"))?;
        return Ok(KMeansInit::Centroids(c.to_vec()));
    }
    Ok(match init.parse::<KMeansInit>().or_py()? {
        KMeansInit::KMeansParallel { .. } => KMeansInit::KMeansParallel {
            oversampling,
            rounds,
        },
        other => other,
    })
}

/// The library's K-Means parameters from the wrapper's (the metric, which only the
/// single-process fit takes, aside).
#[allow(clippy::too_many_arguments)]
pub fn kmeans_params(
    n_clusters: usize,
    init: &str,
    init_centroids: Option<PyReadonlyArray2<'_, f64>>,
    n_init: usize,
    max_iter: usize,
    tol: f64,
    seed: u64,
    oversampling: f64,
    rounds: usize,
) -> PyResult<KMeans> {
    Ok(KMeans::new(n_clusters)
        .init(kmeans_init(init, init_centroids, oversampling, rounds)?)
        .n_init(n_init)
        .max_iter(max_iter)
        .tol(tol)
        .seed(seed))
}

/// A fitted K-Means model (the library's `KMeansModel`).
#[pyclass(frozen, module = "wgpu_unsupervised._core")]
pub struct KMeansFit {
    pub model: KMeansModel,
}

#[pymethods]
impl KMeansFit {
    /// Centroids, k x d float32 (rounded; see `cluster_centers_f64`).
    #[getter]
    fn cluster_centers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        array2(py, self.model.centroids().to_vec(), self.model.n_features())
    }

    /// Centroids, k x d float64: the origin plus the centroids relative to it for a model
    /// of float64 data (every digit the fit has), else the float32 centroids widened.
    #[getter]
    fn cluster_centers_f64<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        array2(py, self.model.centroids_f64(), self.model.n_features())
    }

    /// The point float64 data were centred on before the float32 cast (None for float32).
    #[getter]
    fn origin<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<f64>>> {
        self.model.origin().map(|o| array1(py, o.to_vec()))
    }

    /// Training labels (int64; empty for a model read back from JSON).
    #[getter]
    fn labels<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        labels_array(py, self.model.labels())
    }

    /// Σ w‖x − c‖² of the training rows (Σ w(1 − cos) for the cosine metric).
    #[getter]
    fn inertia(&self) -> f64 {
        self.model.inertia()
    }

    /// Lloyd iterations of the kept run.
    #[getter]
    fn n_iter(&self) -> usize {
        self.model.n_iter()
    }

    /// Whether the kept run met its tolerance.
    #[getter]
    fn converged(&self) -> bool {
        self.model.converged()
    }

    /// Nearest centroid of every row (int64).
    fn predict<'py>(
        &self,
        py: Python<'py>,
        device: &Device,
        x: Rows<'py>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let labels = on_rows(py, &x, |x| self.model.predict(device.gpu, x))?;
        Ok(labels_array(py, &labels))
    }

    /// Distances from every row to every centroid, n x k float32.
    fn transform<'py>(
        &self,
        py: Python<'py>,
        device: &Device,
        x: Rows<'py>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let d = on_rows(py, &x, |x| self.model.transform(device.gpu, x))?;
        array2(py, d, self.model.k())
    }

    /// −Σ‖x − c‖² of the rows (higher is better).
    fn score(&self, py: Python<'_>, device: &Device, x: Rows<'_>) -> PyResult<f64> {
        on_rows(py, &x, |x| self.model.score(device.gpu, x))
    }

    /// The model as the library's JSON (without training labels).
    fn to_json(&self) -> PyResult<String> {
        to_json(&self.model)
    }

    /// A model from the library's JSON, validated.
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        Ok(Self {
            model: from_json(text)?,
        })
    }

    fn __reduce__(&self, py: Python<'_>) -> PyResult<(Py<PyAny>, (String,))> {
        reduce_json::<Self>(py, self.to_json()?)
    }
}

/// kmeans_fit(device, x, sample_weight, n_clusters, init, init_centroids, n_init,
/// max_iter, tol, fixed_iterations, seed, metric, oversampling, rounds) -> KMeansFit
#[pyfunction]
#[pyo3(signature = (device, x, sample_weight, *, n_clusters, init, init_centroids, n_init, max_iter, tol, fixed_iterations, seed, metric, oversampling, rounds))]
#[allow(clippy::too_many_arguments)]
fn kmeans_fit(
    py: Python<'_>,
    device: &Device,
    x: Rows<'_>,
    sample_weight: Option<PyReadonlyArray1<'_, f32>>,
    n_clusters: usize,
    init: &str,
    init_centroids: Option<PyReadonlyArray2<'_, f64>>,
    n_init: usize,
    max_iter: usize,
    tol: f64,
    fixed_iterations: bool,
    seed: u64,
    metric: &str,
    oversampling: f64,
    rounds: usize,
) -> PyResult<KMeansFit> {
    let params = kmeans_params(
        n_clusters,
        init,
        init_centroids,
        n_init,
        max_iter,
        tol,
        seed,
        oversampling,
        rounds,
    )?
    .metric(metric.parse().or_py()?)
    .fixed_iterations(fixed_iterations);
    let model = on_weighted_rows(py, &x, sample_weight.as_ref(), |x, w| match w {
        None => params.fit(device.gpu, x),
        Some(w) => params.fit_weighted(device.gpu, x, w),
    })?;
    Ok(KMeansFit { model })
}

/// kmeans_plusplus(device, x, n_clusters, sample_weight, seed) -> (centers, indices)
#[pyfunction]
fn kmeans_plusplus<'py>(
    py: Python<'py>,
    device: &Device,
    x: Rows<'py>,
    n_clusters: usize,
    sample_weight: Option<PyReadonlyArray1<'py, f32>>,
    seed: u64,
) -> PyResult<(Bound<'py, PyArray2<f32>>, Labels<'py>)> {
    let params = KMeans::new(n_clusters).seed(seed);
    let (centers, idx, d) = on_weighted_rows(py, &x, sample_weight.as_ref(), |x, w| {
        let (centers, idx) = params.kmeans_plusplus(device.gpu, x, w)?;
        Ok((centers, idx, x.n_features()))
    })?;
    let idx: Vec<i64> = idx.iter().map(|&i| i as i64).collect();
    Ok((array2(py, centers, d)?, array1(py, idx)))
}

/// The library's mini-batch parameters from the wrapper's.
#[allow(clippy::too_many_arguments)]
fn minibatch(
    n_clusters: usize,
    init: KMeansInit,
    batch_size: usize,
    max_iter: usize,
    max_no_improvement: Option<usize>,
    reassignment_ratio: f64,
    tol: f64,
    n_init: usize,
    init_size: Option<usize>,
    seed: u64,
) -> MiniBatchKMeans {
    MiniBatchKMeans::new(n_clusters)
        .init(init)
        .batch_size(batch_size)
        .max_iter(max_iter)
        .max_no_improvement(max_no_improvement)
        .reassignment_ratio(reassignment_ratio)
        .tol(tol)
        .n_init(n_init)
        .init_size(init_size)
        .seed(seed)
}

/// minibatch_kmeans_fit(...) -> KMeansFit
#[pyfunction]
#[pyo3(signature = (device, x, sample_weight, *, n_clusters, init, init_centroids, batch_size, max_iter, max_no_improvement, reassignment_ratio, tol, n_init, init_size, seed))]
#[allow(clippy::too_many_arguments)]
fn minibatch_kmeans_fit(
    py: Python<'_>,
    device: &Device,
    x: Rows<'_>,
    sample_weight: Option<PyReadonlyArray1<'_, f32>>,
    n_clusters: usize,
    init: &str,
    init_centroids: Option<PyReadonlyArray2<'_, f64>>,
    batch_size: usize,
    max_iter: usize,
    max_no_improvement: Option<usize>,
    reassignment_ratio: f64,
    tol: f64,
    n_init: usize,
    init_size: Option<usize>,
    seed: u64,
) -> PyResult<KMeansFit> {
    let init = kmeans_init(init, init_centroids, 2.0, 5)?;
    let params = minibatch(
        n_clusters,
        init,
        batch_size,
        max_iter,
        max_no_improvement,
        reassignment_ratio,
        tol,
        n_init,
        init_size,
        seed,
    );
    let model = on_weighted_rows(py, &x, sample_weight.as_ref(), |x, w| match w {
        None => params.fit(device.gpu, x),
        Some(w) => params.fit_weighted(device.gpu, x, w),
    })?;
    Ok(KMeansFit { model })
}

/// A mini-batch K-Means fed batch by batch (the library's `MiniBatchKMeansFit`).
#[pyclass(module = "wgpu_unsupervised._core")]
pub struct MiniBatchPartial {
    inner: MiniBatchKMeansFit,
}

#[pymethods]
impl MiniBatchPartial {
    #[new]
    #[pyo3(signature = (*, n_clusters, init, init_centroids, reassignment_ratio, n_init, init_size, seed))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        n_clusters: usize,
        init: &str,
        init_centroids: Option<PyReadonlyArray2<'_, f64>>,
        reassignment_ratio: f64,
        n_init: usize,
        init_size: Option<usize>,
        seed: u64,
    ) -> PyResult<Self> {
        let init = kmeans_init(init, init_centroids, 2.0, 5)?;
        let params = minibatch(
            n_clusters,
            init,
            1024,
            1,
            None,
            reassignment_ratio,
            0.0,
            n_init,
            init_size,
            seed,
        );
        Ok(Self {
            inner: params.partial(),
        })
    }

    /// One step on a batch (the first batch also initialises the centroids).
    fn partial_fit(
        &mut self,
        py: Python<'_>,
        device: &Device,
        x: Rows<'_>,
        sample_weight: Option<PyReadonlyArray1<'_, f32>>,
    ) -> PyResult<()> {
        let inner = &mut self.inner;
        on_weighted_rows(py, &x, sample_weight.as_ref(), |x, w| match w {
            None => inner.partial_fit(device.gpu, x),
            Some(w) => inner.partial_fit_weighted(device.gpu, x, w),
        })
    }

    /// The model of the centroids so far, labels and inertia of `x`.
    fn model(
        &self,
        py: Python<'_>,
        device: &Device,
        x: Rows<'_>,
        sample_weight: Option<PyReadonlyArray1<'_, f32>>,
    ) -> PyResult<KMeansFit> {
        let model = on_weighted_rows(py, &x, sample_weight.as_ref(), |x, w| match w {
            None => self.inner.model(device.gpu, x),
            Some(w) => self.inner.model_weighted(device.gpu, x, w),
        })?;
        Ok(KMeansFit { model })
    }

    /// Steps taken.
    #[getter]
    fn n_steps(&self) -> usize {
        self.inner.n_steps()
    }

    /// Rows absorbed per centroid (None before the first batch).
    #[getter]
    fn counts<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<f64>>> {
        self.inner.counts().map(|c| array1(py, c.to_vec()))
    }
}

/// spectral_fit(device, x, *, n_clusters, affinity, gamma, n_neighbors, n_init, seed, tol,
/// max_iter) -> (labels, embedding, eigenvalues, n_iter)
#[pyfunction]
#[pyo3(signature = (device, x, *, n_clusters, affinity, gamma, n_neighbors, n_init, seed, tol, max_iter))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn spectral_fit<'py>(
    py: Python<'py>,
    device: &Device,
    x: Rows<'py>,
    n_clusters: usize,
    affinity: &str,
    gamma: f64,
    n_neighbors: usize,
    n_init: usize,
    seed: u64,
    tol: f64,
    max_iter: usize,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray2<f32>>,
    Bound<'py, PyArray1<f64>>,
    usize,
)> {
    let affinity = match affinity {
        "rbf" => Affinity::Rbf { gamma },
        "nearest_neighbors" => Affinity::NearestNeighbors { n_neighbors },
        other => {
            return Err(PyValueError::new_err(format!(
                "affinity: expected 'rbf' or 'nearest_neighbors', got {other:?}"
            )))
        }
    };
    let params = SpectralClustering::new(n_clusters)
        .affinity(affinity)
        .n_init(n_init)
        .seed(seed)
        .tol(tol)
        .max_iter(max_iter);
    let (model, n) = on_rows(py, &x, |x| Ok((params.fit(device.gpu, x)?, x.n_rows())))?;
    let width = model.embedding().len() / n.max(1);
    Ok((
        labels_array(py, model.labels()),
        array2(py, model.embedding().to_vec(), width.max(1))?,
        array1(py, model.eigenvalues().to_vec()),
        model.n_iter(),
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<KMeansFit>()?;
    m.add_class::<MiniBatchPartial>()?;
    m.add_function(wrap_pyfunction!(kmeans_fit, m)?)?;
    m.add_function(wrap_pyfunction!(kmeans_plusplus, m)?)?;
    m.add_function(wrap_pyfunction!(minibatch_kmeans_fit, m)?)?;
    m.add_function(wrap_pyfunction!(spectral_fit, m)?)?;
    Ok(())
}
