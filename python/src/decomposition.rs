//! PCA and incremental PCA (exact moments merged chunk by chunk).

use numpy::{PyArray1, PyArray2};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use wgpu_unsupervised::{Components, Pca, PcaModel, PcaMoments};

use crate::convert::{
    array1, array2, from_json, on_rows, reduce_json, run, to_json, OrPy, Rows, View,
};
use crate::device::Device;

/// `n_components` as the library's `Components`: an int, a float fraction in (0, 1),
/// "mle", or None (all min(n, d)).
fn components(value: &Bound<'_, PyAny>, n: usize, d: usize) -> PyResult<Components> {
    if value.is_none() {
        return Ok(Components::Count(n.min(d)));
    }
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(
            "n_components: expected an int, a float, 'mle' or None, got a bool",
        ));
    }
    if let Ok(s) = value.extract::<String>() {
        if s == "mle" {
            return Ok(Components::Mle);
        }
        return Err(PyValueError::new_err(format!(
            "n_components: expected an int, a float in (0, 1), 'mle' or None, got {s:?}"
        )));
    }
    if value.is_instance_of::<pyo3::types::PyInt>() {
        let m: i64 = value.extract()?;
        return match usize::try_from(m) {
            Ok(m) => Ok(Components::Count(m)),
            Err(_) => Err(PyValueError::new_err(format!(
                "n_components must be >= 0, got {m}"
            ))),
        };
    }
    if let Ok(f) = value.extract::<f64>() {
        if f > 0.0 && f < 1.0 {
            return Ok(Components::Fraction(f));
        }
        return Err(PyValueError::new_err(format!(
            "n_components: a float must be in (0, 1), got {f}"
        )));
    }
    Err(PyTypeError::new_err(format!(
        "n_components: expected an int, a float, 'mle' or None, got {}",
        value.get_type().name()?
    )))
}

/// The library's PCA parameters from the wrapper's, for data of n x d.
#[allow(clippy::too_many_arguments)]
fn pca_params(
    n_components: &Bound<'_, PyAny>,
    n: usize,
    d: usize,
    whiten: bool,
    solver: &str,
    tol: f64,
    max_iter: usize,
    seed: u64,
) -> PyResult<Pca> {
    Ok(Pca::new(components(n_components, n, d)?)
        .whiten(whiten)
        .solver(solver.parse().or_py()?)
        .tol(tol)
        .max_iter(max_iter)
        .seed(seed))
}

/// A fitted PCA (the library's `PcaModel`).
#[pyclass(frozen, module = "wgpu_unsupervised._core")]
pub struct PcaFit {
    pub model: PcaModel,
}

impl PcaFit {
    /// The values of the kept components of a per-axis vector of the model.
    fn kept<'py>(&self, py: Python<'py>, per_axis: &[f64]) -> Bound<'py, PyArray1<f64>> {
        array1(py, per_axis[..self.model.n_components()].to_vec())
    }
}

#[pymethods]
impl PcaFit {
    /// Principal axes, n_components x d.
    #[getter]
    fn components<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        array2(
            py,
            self.model.components().to_vec(),
            self.model.n_features(),
        )
    }

    #[getter]
    fn explained_variance<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.kept(py, self.model.explained_variance())
    }

    #[getter]
    fn explained_variance_ratio<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.kept(py, self.model.explained_variance_ratio())
    }

    #[getter]
    fn singular_values<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.kept(py, self.model.singular_values())
    }

    #[getter]
    fn mean<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        array1(py, self.model.mean().to_vec())
    }

    #[getter]
    fn noise_variance(&self) -> f64 {
        self.model.noise_variance()
    }

    #[getter]
    fn n_components(&self) -> usize {
        self.model.n_components()
    }

    #[getter]
    fn n_samples(&self) -> usize {
        self.model.n_samples()
    }

    /// Power iterations run (0 for the full eigendecomposition).
    #[getter]
    fn n_iter(&self) -> usize {
        self.model.n_iter()
    }

    fn transform<'py>(
        &self,
        py: Python<'py>,
        device: &Device,
        x: Rows<'py>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let z = on_rows(py, &x, |x| self.model.transform(device.gpu, x))?;
        array2(py, z, self.model.n_components())
    }

    fn inverse_transform<'py>(
        &self,
        py: Python<'py>,
        device: &Device,
        z: Rows<'py>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let x = on_rows(py, &z, |z| self.model.inverse_transform(device.gpu, z))?;
        array2(py, x, self.model.n_features())
    }

    /// Reconstructions in float64: relative to the mean on the device, the mean added in
    /// float64 (no digits lost to a mean far from 0).
    fn inverse_transform_f64<'py>(
        &self,
        py: Python<'py>,
        device: &Device,
        z: Rows<'py>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let x = on_rows(py, &z, |z| self.model.inverse_transform_f64(device.gpu, z))?;
        array2(py, x, self.model.n_features())
    }

    /// Log-likelihood of every row under the probabilistic PCA model (float64; float64 rows
    /// are read in float64).
    fn score_samples<'py>(
        &self,
        py: Python<'py>,
        x: Rows<'py>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let s = on_rows(py, &x, |x| match x {
            View::F32(m) => self.model.score_samples(m),
            View::F64(m) => self.model.score_samples(m),
        })?;
        Ok(array1(py, s))
    }

    /// The model covariance, d x d.
    fn covariance<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        array2(py, self.model.covariance(), self.model.n_features())
    }

    /// The model precision, d x d.
    fn precision<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        array2(py, self.model.precision().or_py()?, self.model.n_features())
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

/// pca_fit(device, x, *, n_components, whiten, solver, tol, max_iter, seed) -> PcaFit
#[pyfunction]
#[pyo3(signature = (device, x, *, n_components, whiten, solver, tol, max_iter, seed))]
#[allow(clippy::too_many_arguments)]
fn pca_fit(
    py: Python<'_>,
    device: &Device,
    x: Rows<'_>,
    n_components: &Bound<'_, PyAny>,
    whiten: bool,
    solver: &str,
    tol: f64,
    max_iter: usize,
    seed: u64,
) -> PyResult<PcaFit> {
    let (n, d) = x.shape();
    let params = pca_params(n_components, n, d, whiten, solver, tol, max_iter, seed)?;
    let model = on_rows(py, &x, |x| params.fit(device.gpu, x))?;
    Ok(PcaFit { model })
}

/// Merged moments of the rows seen so far (count, mean, co-moment, exact in f64): the state
/// of an incremental PCA, and what each partition of a distributed PCA returns.
#[pyclass(frozen, module = "wgpu_unsupervised._core")]
pub struct Moments {
    pub moments: PcaMoments,
}

#[pymethods]
impl Moments {
    /// The moments of the rows of `x` (one pass on the device; the full d x d co-moment).
    #[staticmethod]
    fn of(py: Python<'_>, device: &Device, x: Rows<'_>) -> PyResult<Self> {
        let moments = on_rows(py, &x, |x| PcaMoments::of(device.gpu, x, true))?;
        Ok(Self { moments })
    }

    /// These moments merged with `others`, in order (Chan's formulas, f64).
    fn merged(&self, others: Vec<PyRef<'_, Moments>>) -> PyResult<Self> {
        let mut moments = self.moments.clone();
        for o in others {
            moments.merge(&o.moments).or_py()?;
        }
        Ok(Self { moments })
    }

    /// Rows seen.
    #[getter]
    fn n_samples(&self) -> u64 {
        self.moments.n
    }

    #[getter]
    fn n_features(&self) -> usize {
        self.moments.n_features
    }

    #[getter]
    fn mean<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        array1(py, self.moments.mean.clone())
    }

    /// The PCA of these moments: `n_components` as for `pca_fit` (full or power solver).
    #[pyo3(signature = (device, *, n_components, whiten, solver, tol, max_iter, seed))]
    #[allow(clippy::too_many_arguments)]
    fn fit(
        &self,
        py: Python<'_>,
        device: &Device,
        n_components: &Bound<'_, PyAny>,
        whiten: bool,
        solver: &str,
        tol: f64,
        max_iter: usize,
        seed: u64,
    ) -> PyResult<PcaFit> {
        let (n, d) = (self.moments.n as usize, self.moments.n_features);
        let params = pca_params(n_components, n, d, whiten, solver, tol, max_iter, seed)?;
        let model = run(py, || params.fit_moments(device.gpu, &self.moments))?;
        Ok(PcaFit { model })
    }

    /// The library's moments as bytes (JSON; exact floats).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, to_json(&self.moments)?.as_bytes()))
    }

    /// Moments from `to_bytes`, checked.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        let text = std::str::from_utf8(data).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let moments: PcaMoments = from_json(text)?;
        moments.check().or_py()?;
        Ok(Self { moments })
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Py<PyAny>, (Bound<'py, PyBytes>,))> {
        let cls = py.get_type::<Self>().getattr("from_bytes")?;
        Ok((cls.unbind(), (self.to_bytes(py)?,)))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PcaFit>()?;
    m.add_class::<Moments>()?;
    m.add_function(wrap_pyfunction!(pca_fit, m)?)?;
    Ok(())
}
