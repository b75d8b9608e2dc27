//! The driver side of distributed fits: the library's remote fits
//! (`KMeans::fit_remote`, `GaussianMixture::fit_remote`) run here with the GIL released,
//! and each round of requests calls back into a Python bridge object, which sends them to
//! the partitions (for Dask, one task per partition) and returns the replies in order:
//!
//! - `bridge.run(kind, requests)`: `kind` "kmeans" or "mixture", `requests` a list of
//!   (partition index, request bytes); returns the reply bytes in the same order;
//! - `bridge.seed(candidates, weights, k, seed)`: greedy weighted k-means++ among
//!   candidates (`seed_candidates` on some device), a k x d float32 array.
//!
//! The loop, the merges (f64, partition order) and every decision stay in the library; an
//! exception raised by the bridge stops the fit and is re-raised as it was.

use numpy::{PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use wgpu_unsupervised::gmm::{GmmReply, GmmRequest, RemoteGaussianMixture};
use wgpu_unsupervised::kmeans::{KMeansReply, KMeansRequest, RemoteKMeans};
use wgpu_unsupervised::{Error, Result, Translate};

use crate::cluster::{kmeans_params, KMeansFit};
use crate::convert::{array1, array2, panicked, to_py, vector};
use crate::mixture::{mixture_params, GmmFit};
use crate::session::encode;

/// The Python bridge as the library's remote partitions.
struct Bridge {
    obj: Py<PyAny>,
    sizes: Vec<usize>,
    d: usize,
    /// The first exception the bridge raised, re-raised when the fit returns.
    error: Option<PyErr>,
}

impl Bridge {
    /// The library's remote fit `fit` over partitions of `sizes` rows of `d` features
    /// reached through the Python bridge `obj`, with the GIL released; the fit's result, or
    /// the bridge's own exception when it raised one.
    fn fit<T, F>(py: Python<'_>, obj: Py<PyAny>, sizes: Vec<usize>, d: usize, fit: F) -> PyResult<T>
    where
        T: Send,
        F: FnOnce(&mut Bridge) -> Result<T> + Send,
    {
        let mut bridge = Bridge {
            obj,
            sizes,
            d,
            error: None,
        };
        let result = py
            .detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fit(&mut bridge))));
        match result {
            Ok(result) => result.map_err(|e| bridge.error.take().unwrap_or_else(|| to_py(e))),
            Err(panic) => Err(panicked(panic.as_ref())),
        }
    }

    /// Keeps a Python exception and gives the library an error that stops the fit.
    fn fail(&mut self, e: PyErr) -> Error {
        let reason = format!("the engine failed: {e}");
        self.error.get_or_insert(e);
        Error::Source { reason }
    }

    /// `bridge.run(kind, requests)`, the replies decoded.
    fn run<Q: serde::Serialize, A: serde::de::DeserializeOwned>(
        &mut self,
        kind: &str,
        requests: Vec<(usize, Q)>,
    ) -> Result<Vec<A>> {
        let encoded: Vec<(usize, Vec<u8>)> = requests
            .iter()
            .map(|(p, r)| Ok((*p, encode(r)?)))
            .collect::<PyResult<_>>()
            .map_err(|e| self.fail(e))?;
        let replies: PyResult<Vec<Vec<u8>>> = Python::attach(|py| {
            let args: Vec<(usize, Bound<'_, PyBytes>)> = encoded
                .iter()
                .map(|(p, b)| (*p, PyBytes::new(py, b)))
                .collect();
            let out = self.obj.bind(py).call_method1("run", (kind, args))?;
            out.try_iter()?
                .map(|item| Ok(item?.cast_into::<PyBytes>()?.as_bytes().to_vec()))
                .collect()
        });
        let replies = replies.map_err(|e| self.fail(e))?;
        replies
            .iter()
            .map(|b| {
                postcard::from_bytes(b).map_err(|e| Error::Source {
                    reason: format!("a reply that is not one: {e}"),
                })
            })
            .collect()
    }
}

impl RemoteKMeans for Bridge {
    fn partition_shapes(&self) -> (Vec<usize>, usize) {
        (self.sizes.clone(), self.d)
    }

    fn run(&mut self, requests: Vec<(usize, KMeansRequest)>) -> Result<Vec<KMeansReply>> {
        Bridge::run(self, "kmeans", requests)
    }

    fn seed_candidates(
        &mut self,
        candidates: &[f32],
        d: usize,
        weights: &[f32],
        k: usize,
        seed: u64,
    ) -> Result<Vec<f32>> {
        let out: PyResult<Vec<f32>> = Python::attach(|py| {
            let c = array2(py, candidates.to_vec(), d)?;
            let w = array1(py, weights.to_vec());
            let seeds = self.obj.bind(py).call_method1("seed", (c, w, k, seed))?;
            let seeds = seeds.cast_into::<numpy::PyArray2<f32>>()?;
            Ok(seeds.readonly().as_array().iter().copied().collect())
        });
        out.map_err(|e| self.fail(e))
    }
}

impl RemoteGaussianMixture for Bridge {
    fn run_mixture(&mut self, requests: Vec<(usize, GmmRequest)>) -> Result<Vec<GmmReply>> {
        Bridge::run(self, "mixture", requests)
    }
}

/// `fit` of `params` in the frame of partitions centred on `origin` (their rows less it, in
/// f64: float64 data), the model moved back to the data's units; `fit` of `params` as they
/// are without an origin.
fn in_frame<P: Translate, M: Translate>(
    params: P,
    origin: Option<Vec<f64>>,
    fit: impl FnOnce(P) -> PyResult<M>,
) -> PyResult<M> {
    let Some(origin) = origin else {
        return fit(params);
    };
    let there: Vec<f64> = origin.iter().map(|v| -v).collect();
    let model = fit(params.translated(&there).map_err(to_py)?)?;
    model.translated(&origin).map_err(to_py)
}

/// kmeans_fit_remote(bridge, sizes, d, *, ..., origin=None) -> KMeansFit
///
/// K-Means over partitions of `sizes` rows of `d` features reached through `bridge`; with
/// `origin`, the partitions centre their (float64) rows on it and the model is moved back.
#[pyfunction]
#[pyo3(signature = (bridge, sizes, d, *, n_clusters, init, init_centroids, n_init, max_iter, tol, seed, oversampling, rounds, origin=None))]
#[allow(clippy::too_many_arguments)]
fn kmeans_fit_remote(
    py: Python<'_>,
    bridge: Py<PyAny>,
    sizes: Vec<usize>,
    d: usize,
    n_clusters: usize,
    init: &str,
    init_centroids: Option<PyReadonlyArray2<'_, f64>>,
    n_init: usize,
    max_iter: usize,
    tol: f64,
    seed: u64,
    oversampling: f64,
    rounds: usize,
    origin: Option<PyReadonlyArray1<'_, f64>>,
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
    )?;
    let model = in_frame(params, vector(origin), |p| {
        Bridge::fit(py, bridge, sizes, d, |b| p.fit_remote(b))
    })?;
    Ok(KMeansFit { model })
}

/// gmm_fit_remote(bridge, sizes, d, *, ...) -> GmmFit
///
/// A Gaussian mixture over partitions of `sizes` rows of `d` features reached through
/// `bridge` (`init`: "kmeans", "k-means++" or "random").
#[pyfunction]
#[pyo3(signature = (bridge, sizes, d, *, n_components, covariance_type, tol, reg_covar, max_iter, n_init, init, weights_init, means_init, precisions_init, seed, origin=None))]
#[allow(clippy::too_many_arguments)]
fn gmm_fit_remote(
    py: Python<'_>,
    bridge: Py<PyAny>,
    sizes: Vec<usize>,
    d: usize,
    n_components: usize,
    covariance_type: &str,
    tol: f64,
    reg_covar: f64,
    max_iter: usize,
    n_init: usize,
    init: &str,
    weights_init: Option<PyReadonlyArray1<'_, f64>>,
    means_init: Option<PyReadonlyArray1<'_, f64>>,
    precisions_init: Option<PyReadonlyArray1<'_, f64>>,
    seed: u64,
    origin: Option<PyReadonlyArray1<'_, f64>>,
) -> PyResult<GmmFit> {
    let params = mixture_params(
        n_components,
        covariance_type,
        tol,
        reg_covar,
        max_iter,
        n_init,
        init,
        vector(weights_init),
        vector(means_init),
        vector(precisions_init),
        seed,
    )?;
    let model = in_frame(params, vector(origin), |p| {
        Bridge::fit(py, bridge, sizes, d, |b| p.fit_remote(b))
    })?;
    Ok(GmmFit { model })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(kmeans_fit_remote, m)?)?;
    m.add_function(wrap_pyfunction!(gmm_fit_remote, m)?)?;
    Ok(())
}
