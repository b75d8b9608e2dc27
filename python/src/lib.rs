//! `wgpu_unsupervised._core`: the extension module under the Python package.
//!
//! A thin layer over the `wgpu-unsupervised` crate: every function converts its arguments
//! (NumPy arrays of float32 in C order, which the Python side prepares, copying only when
//! needed), releases the GIL while the library and the GPU work (`Python::detach`, through
//! `convert::on_rows` and its siblings), and converts the results back. Parameters and data are validated by the library; its errors
//! arrive as `ValueError` (bad input) or `RuntimeError` (the device) with its message.
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

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    device::register(m)?;
    cluster::register(m)?;
    mixture::register(m)?;
    decomposition::register(m)?;
    metrics::register(m)?;
    session::register(m)?;
    remote::register(m)?;
    Ok(())
}
