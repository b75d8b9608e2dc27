//! `wgpu_unsupervised._core`: the extension module under the Python package.
//!
//! A thin layer over the `wgpu-unsupervised` crate: every function converts its arguments
//! (NumPy arrays of float32 or float64 in C order, which the Python side prepares, copying
//! only when needed; float64 stays float64 so that the library centres it in f64), runs the
//! library with the GIL released and any panic caught (`convert::run`, through
//! `convert::on_rows` and its siblings), and converts the results back. Data are validated by
//! the library; its errors arrive as `ValueError` (bad input) or `RuntimeError` (the device,
//! or a panic: never pyo3's `PanicException`) with its message.
//!
//! Modules: `device` (adapters and the per-process devices), `cluster` (K-Means,
//! mini-batch K-Means, spectral clustering), `mixture`, `decomposition` (PCA, incremental
//! PCA), `metrics`, `session` (the worker side of distributed fits: partitions kept on the
//! device) and `remote` (the driver side: the library's remote fits calling back into
//! Python for each round of requests).

use pyo3::prelude::*;

mod cluster;
mod convert;
mod decomposition;
mod device;
mod metrics;
mod mixture;
mod remote;
mod session;

/// _panic_for_tests(message) -> None
///
/// Panics inside the guard every binding runs the library in (`convert::run`), so that the
/// tests can check that a panic reaches Python as `RuntimeError` (the library itself has no
/// panic left to trigger on purpose).
#[pyfunction]
fn _panic_for_tests(py: Python<'_>, message: String) -> PyResult<()> {
    convert::run(py, move || -> wgpu_unsupervised::Result<()> {
        panic!("{message}")
    })
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    device::register(m)?;
    cluster::register(m)?;
    mixture::register(m)?;
    decomposition::register(m)?;
    metrics::register(m)?;
    session::register(m)?;
    remote::register(m)?;
    Ok(())
}
