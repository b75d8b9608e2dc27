//! The worker side of distributed fits: partition sessions.
//!
//! A session keeps one partition's rows on this process's device across the requests of a
//! fit (and of later fits on the same data), so a worker uploads its rows once rather than
//! on every iteration. Sessions are keyed by the engine's name for the partition (for Dask,
//! the chunk's key) and checked against the rows each request brings: their shape, the
//! device, and a 64-bit XXH3 checksum of their bytes. Rows that differ in any way (the same
//! key with other data, another device) replace the session, so stale rows are never used.
//! A restarted worker has no sessions: the first request rebuilds each one from the rows
//! the engine hands it (recomputed from lineage if they were lost), and requests are pure,
//! so the replies are those an undisturbed worker would give.
//!
//! Requests and replies travel as bytes (the library's request and reply types in postcard)
//! that the Python side carries without looking inside.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use std::borrow::Cow;

use numpy::{PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use wgpu_unsupervised::gmm::{GmmPartition, GmmRequest};
use wgpu_unsupervised::kmeans::{seed_candidates as library_seeds, KMeansPartition, KMeansRequest};
use wgpu_unsupervised::{Gpu, GpuMatrix, Matrix, Matrix64};

use crate::convert::{array2, run, values, vector, Rows, View};
use crate::device::Device;

/// One partition's rows on a device, as the requests of both kinds see them.
struct Partitions {
    kmeans: KMeansPartition<'static>,
    mixture: GmmPartition<'static>,
}

/// A session: what its rows are (checked on every request) and the partitions.
struct Entry {
    key: String,
    gpu: &'static Gpu,
    checksum: u64,
    shape: (usize, usize),
    parts: Arc<Mutex<Partitions>>,
}

/// The sessions of this process, oldest first.
static SESSIONS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
/// Sessions made (rows uploaded), reused, and replaced because the rows differed.
static UPLOADS: AtomicU64 = AtomicU64::new(0);
static REUSES: AtomicU64 = AtomicU64::new(0);
static REPLACED: AtomicU64 = AtomicU64::new(0);

/// The sessions, also after a panic while they were held (the panic became a Python
/// exception; the list itself is whole, so the next request goes on with it).
fn sessions() -> std::sync::MutexGuard<'static, Vec<Entry>> {
    SESSIONS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The checksum of a partition's rows: XXH3 (64 bits) of their bytes.
fn checksum(values: &[f32]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytemuck::cast_slice(values))
}

/// The session of `key` for these rows: the existing one when it holds the same rows on the
/// same device, else a new one (uploading the rows, replacing a stale one).
fn session(
    gpu: &'static Gpu,
    key: &str,
    values: &[f32],
    d: usize,
) -> wgpu_unsupervised::Result<Arc<Mutex<Partitions>>> {
    let sum = checksum(values);
    let shape = (values.len() / d.max(1), d);
    {
        let sessions = sessions();
        if let Some(e) = sessions.iter().find(|e| e.key == key) {
            if std::ptr::eq(e.gpu, gpu) && e.checksum == sum && e.shape == shape {
                REUSES.fetch_add(1, Ordering::Relaxed);
                return Ok(e.parts.clone());
            }
        }
    }
    let x = GpuMatrix::upload(gpu, &Matrix::new(values, d)?)?;
    let parts = Arc::new(Mutex::new(Partitions {
        kmeans: KMeansPartition::new(gpu, x.clone()),
        mixture: GmmPartition::new(gpu, x),
    }));
    UPLOADS.fetch_add(1, Ordering::Relaxed);
    let entry = Entry {
        key: key.to_string(),
        gpu,
        checksum: sum,
        shape,
        parts: parts.clone(),
    };
    let mut sessions = sessions();
    match sessions.iter_mut().find(|e| e.key == key) {
        Some(slot) => {
            REPLACED.fetch_add(1, Ordering::Relaxed);
            *slot = entry;
        }
        None => sessions.push(entry),
    }
    Ok(parts)
}

/// A partition's rows as the fit sees them: float32 rows as they are; float64 rows less the
/// driver's global `origin`, in f64, rounded to f32 (the library's `Matrix64::centred_on`).
fn partition_rows<'a>(
    py: Python<'_>,
    x: &'a View<'a>,
    origin: Option<&[f64]>,
) -> PyResult<Cow<'a, [f32]>> {
    match (x, origin) {
        (View::F32(m), None) => Ok(Cow::Borrowed(m.as_slice())),
        (View::F64(m), Some(o)) => run(py, || m.centred_on(o)).map(Cow::Owned),
        (View::F64(_), None) => Err(PyValueError::new_err(
            "float64 partitions need the driver's origin (the rows' global mean)",
        )),
        (View::F32(m), Some(o)) => run(py, || {
            let wide: Vec<f64> = m.as_slice().iter().map(|&v| v as f64).collect();
            Matrix64::new(&wide, m.n_features())?.centred_on(o)
        })
        .map(Cow::Owned),
    }
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> PyResult<T> {
    postcard::from_bytes(bytes)
        .map_err(|e| PyValueError::new_err(format!("a request that is not one: {e}")))
}

pub fn encode<T: serde::Serialize>(value: &T) -> PyResult<Vec<u8>> {
    postcard::to_allocvec(value).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// partition_answer(device, key, rows, kind, request, origin=None) -> bytes
///
/// The reply of the partition `key` (x: its float32 or float64 C-order rows; float64 rows
/// centred on the driver's `origin` in f64) to one request of a distributed fit; `kind` is
/// "kmeans" or "mixture".
#[pyfunction]
#[pyo3(signature = (device, key, x, kind, request, origin=None))]
fn partition_answer<'py>(
    py: Python<'py>,
    device: &Device,
    key: &str,
    x: Rows<'py>,
    kind: &str,
    request: &[u8],
    origin: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let (_, d) = x.shape();
    let origin = vector(origin);
    let view = x.view()?;
    let values = partition_rows(py, &view, origin.as_deref())?;
    let values = &values[..];
    let gpu = device.gpu;
    let reply = match kind {
        "kmeans" => {
            let request: KMeansRequest = decode(request)?;
            let reply = run(py, || {
                session(gpu, key, values, d)?
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .kmeans
                    .answer(&request)
            })?;
            encode(&reply)?
        }
        "mixture" => {
            let request: GmmRequest = decode(request)?;
            let reply = run(py, || {
                session(gpu, key, values, d)?
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .mixture
                    .answer(&request)
            })?;
            encode(&reply)?
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown request kind {other:?}"
            )))
        }
    };
    Ok(PyBytes::new(py, &reply))
}

/// partition_release(keys=None) -> int
///
/// Drops the sessions of `keys` (all when None), freeing their device memory; returns how
/// many were dropped.
#[pyfunction]
#[pyo3(signature = (keys=None))]
fn partition_release(keys: Option<Vec<String>>) -> usize {
    let mut sessions = sessions();
    let before = sessions.len();
    match keys {
        None => sessions.clear(),
        Some(keys) => sessions.retain(|e| !keys.contains(&e.key)),
    }
    before - sessions.len()
}

/// partition_sessions() -> dict
///
/// What this process holds: `keys` (the sessions, oldest first), and the counts of
/// `uploads`, `reuses` and `replaced` (sessions rebuilt because their rows differed).
#[pyfunction]
fn partition_sessions(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    let keys: Vec<String> = sessions().iter().map(|e| e.key.clone()).collect();
    d.set_item("keys", keys)?;
    d.set_item("uploads", UPLOADS.load(Ordering::Relaxed))?;
    d.set_item("reuses", REUSES.load(Ordering::Relaxed))?;
    d.set_item("replaced", REPLACED.load(Ordering::Relaxed))?;
    Ok(d)
}

/// seed_candidates(device, candidates, weights, k, seed) -> ndarray (k x d float32)
///
/// Greedy weighted k-means++ of k seeds among weighted candidates: the last step of a
/// distributed k-means‖, run on any device.
#[pyfunction]
fn seed_candidates<'py>(
    py: Python<'py>,
    device: &Device,
    candidates: PyReadonlyArray2<'py, f32>,
    weights: PyReadonlyArray1<'py, f32>,
    k: usize,
    seed: u64,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let d = candidates.shape()[1];
    let c = candidates
        .as_slice()
        .map_err(|_| PyValueError::new_err("candidates: a C-contiguous array"))?;
    let w = values(&weights)?;
    let seeds = run(py, || library_seeds(device.gpu, c, d, w, k, seed))?;
    array2(py, seeds, d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(partition_answer, m)?)?;
    m.add_function(wrap_pyfunction!(partition_release, m)?)?;
    m.add_function(wrap_pyfunction!(partition_sessions, m)?)?;
    m.add_function(wrap_pyfunction!(seed_candidates, m)?)?;
    Ok(())
}
