//! Gaussian mixtures.

use numpy::{PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use wgpu_unsupervised::gmm::{estimate_gaussian_parameters, InitialParameters};
use wgpu_unsupervised::{CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit};

use crate::convert::{
    array1, array2, from_json, labels_array, on_rows, on_weighted_rows, reduce_json, run, to_json,
    values, vector, Array, Labels, OrPy, Rows, View,
};
use crate::device::Device;

/// A fitted mixture (the library's `GaussianMixtureModel`). Covariances and precisions are
/// flat, in the library's layout; the Python wrapper gives them scikit-learn's shapes.
#[pyclass(frozen, module = "wgpu_unsupervised._core")]
pub struct GmmFit {
    pub model: GaussianMixtureModel,
}

#[pymethods]
impl GmmFit {
    #[getter]
    fn weights<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        array1(py, self.model.weights().to_vec())
    }

    #[getter]
    fn means<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        array2(py, self.model.means().to_vec(), self.model.n_features())
    }

    /// Covariances, flat in the layout of the covariance type.
    #[getter]
    fn covariances<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        array1(py, self.model.covariances().to_vec())
    }

    /// Precision matrices, flat in the layout of the covariance type.
    #[getter]
    fn precisions<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        array1(py, self.model.precisions())
    }

    /// Cholesky factors of the precisions, flat in the layout of the covariance type.
    #[getter]
    fn precisions_cholesky<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        array1(py, self.model.precisions_cholesky().to_vec())
    }

    #[getter]
    fn covariance_type(&self) -> &'static str {
        self.model.covariance_type().name()
    }

    #[getter]
    fn converged(&self) -> bool {
        self.model.converged()
    }

    #[getter]
    fn n_iter(&self) -> usize {
        self.model.n_iter()
    }

    /// The mean log-likelihood of the training rows under the kept run's last E-step.
    #[getter]
    fn lower_bound(&self) -> f64 {
        self.model.lower_bound()
    }

    /// Training labels (int64; empty for a model read back from JSON).
    #[getter]
    fn labels<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        labels_array(py, self.model.labels())
    }

    /// Free parameters of the mixture.
    #[getter]
    fn n_parameters(&self) -> usize {
        self.model.n_parameters()
    }

    fn predict<'py>(
        &self,
        py: Python<'py>,
        device: &Device,
        x: Rows<'py>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let labels = on_rows(py, &x, |x| self.model.predict(device.gpu, x))?;
        Ok(labels_array(py, &labels))
    }

    fn predict_proba<'py>(
        &self,
        py: Python<'py>,
        device: &Device,
        x: Rows<'py>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let p = on_rows(py, &x, |x| self.model.predict_proba(device.gpu, x))?;
        array2(py, p, self.model.k())
    }

    fn score_samples<'py>(
        &self,
        py: Python<'py>,
        device: &Device,
        x: Rows<'py>,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let s = on_rows(py, &x, |x| self.model.score_samples(device.gpu, x))?;
        Ok(array1(py, s))
    }

    fn score(&self, py: Python<'_>, device: &Device, x: Rows<'_>) -> PyResult<f64> {
        on_rows(py, &x, |x| self.model.score(device.gpu, x))
    }

    fn bic(&self, py: Python<'_>, device: &Device, x: Rows<'_>) -> PyResult<f64> {
        on_rows(py, &x, |x| self.model.bic(device.gpu, x))
    }

    fn aic(&self, py: Python<'_>, device: &Device, x: Rows<'_>) -> PyResult<f64> {
        on_rows(py, &x, |x| self.model.aic(device.gpu, x))
    }

    /// n samples (float64, grouped by component) and their components.
    fn sample<'py>(
        &self,
        py: Python<'py>,
        n: usize,
        seed: u64,
    ) -> PyResult<(Array<'py, f64>, Labels<'py>)> {
        let (x, labels) = run(py, || self.model.sample(n, seed))?;
        Ok((
            array2(py, x, self.model.n_features())?,
            labels_array(py, &labels),
        ))
    }

    fn to_json(&self) -> PyResult<String> {
        to_json(&self.model)
    }

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

/// The starting point scikit-learn calls "random_from_data": the rows `indices` as the
/// means, each the only member of its component (one-hot responsibilities on those rows,
/// the library's M-step), as given parameters.
fn from_rows(
    gpu: &wgpu_unsupervised::Gpu,
    x: &View<'_>,
    indices: &[usize],
    t: CovarianceType,
    reg_covar: f64,
) -> wgpu_unsupervised::Result<InitialParameters> {
    let (n, k) = (wgpu_unsupervised::GpuInput::shape(x).0, indices.len());
    let mut resp = vec![0f32; n * k];
    for (c, &i) in indices.iter().enumerate() {
        if i >= n {
            return Err(wgpu_unsupervised::Error::InvalidParameter {
                name: "init_params",
                reason: format!("row {i} of {n} rows"),
            });
        }
        resp[i * k + c] = 1.0;
    }
    let p = estimate_gaussian_parameters(gpu, x, &resp, k, t, reg_covar)?;
    let model = GaussianMixtureModel::from_parameters(t, p.weights, p.means, p.covariances)?;
    Ok(model.initial_parameters())
}

/// The library's mixture parameters from the wrapper's.
#[allow(clippy::too_many_arguments)]
pub fn mixture_params(
    n_components: usize,
    covariance_type: &str,
    tol: f64,
    reg_covar: f64,
    max_iter: usize,
    n_init: usize,
    init: &str,
    weights_init: Option<Vec<f64>>,
    means_init: Option<Vec<f64>>,
    precisions_init: Option<Vec<f64>>,
    seed: u64,
) -> PyResult<GaussianMixture> {
    let init: GmmInit = init.parse().or_py()?;
    let mut params = GaussianMixture::new(n_components)
        .covariance(covariance_type.parse().or_py()?)
        .tol(tol)
        .reg_covar(reg_covar)
        .max_iter(max_iter)
        .n_init(n_init)
        .seed(seed)
        .init(init);
    if let Some(w) = weights_init {
        params = params.weights_init(w);
    }
    if let Some(m) = means_init {
        params = params.means_init(m);
    }
    if let Some(p) = precisions_init {
        params = params.precisions_init(p);
    }
    Ok(params)
}

/// gmm_fit(device, x, sample_weight, *, ...) -> GmmFit
///
/// `init` is "kmeans", "k-means++" or "random"; with `init_rows` (K row indices) the start
/// is those rows ("random_from_data"); with `warm_start` the previous model's parameters.
#[pyfunction]
#[pyo3(signature = (device, x, sample_weight, *, n_components, covariance_type, tol, reg_covar, max_iter, n_init, init, init_rows, weights_init, means_init, precisions_init, warm_start, seed))]
#[allow(clippy::too_many_arguments)]
fn gmm_fit(
    py: Python<'_>,
    device: &Device,
    x: Rows<'_>,
    sample_weight: Option<PyReadonlyArray1<'_, f32>>,
    n_components: usize,
    covariance_type: &str,
    tol: f64,
    reg_covar: f64,
    max_iter: usize,
    n_init: usize,
    init: &str,
    init_rows: Option<PyReadonlyArray1<'_, i64>>,
    weights_init: Option<PyReadonlyArray1<'_, f64>>,
    means_init: Option<PyReadonlyArray1<'_, f64>>,
    precisions_init: Option<PyReadonlyArray1<'_, f64>>,
    warm_start: Option<&GmmFit>,
    seed: u64,
) -> PyResult<GmmFit> {
    let mut params = mixture_params(
        n_components,
        covariance_type,
        tol,
        reg_covar,
        max_iter,
        n_init,
        if init == "random_from_data" {
            "kmeans"
        } else {
            init
        },
        vector(weights_init),
        vector(means_init),
        vector(precisions_init),
        seed,
    )?;
    if let Some(previous) = warm_start {
        params = params.warm_start(&previous.model);
    }
    let rows: Option<Vec<usize>> = init_rows
        .as_ref()
        .map(|r| {
            values(r)?
                .iter()
                .map(|&i| {
                    usize::try_from(i)
                        .map_err(|_| PyValueError::new_err("init_rows: negative index"))
                })
                .collect()
        })
        .transpose()?;
    let gpu = device.gpu;
    let model = on_weighted_rows(py, &x, sample_weight.as_ref(), |x, w| {
        let mut params = params;
        if let (Some(rows), None) = (&rows, warm_start) {
            let (n, d) = wgpu_unsupervised::GpuInput::shape(x);
            params.validate(n, d)?;
            let start = from_rows(gpu, x, rows, params.covariance_type, params.reg_covar)?;
            params = params.init(GmmInit::Given(start));
        }
        match w {
            None => params.fit(gpu, x),
            Some(w) => params.fit_weighted(gpu, x, w),
        }
    })?;
    Ok(GmmFit { model })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<GmmFit>()?;
    m.add_function(wrap_pyfunction!(gmm_fit, m)?)?;
    Ok(())
}
