//! Adapters and devices: `device(spec)` opens (once per process and spec) the adapter a
//! spec names, `adapters()` lists them, `worker_adapter(i)` maps a worker's index to one.

use std::sync::Mutex;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use wgpu_unsupervised::{AdapterOptions, Gpu, GpuInfo};

use crate::convert::{run, OrPy};

/// The devices opened by this process, by spec. A device lives as long as the process (its
/// partitions and pipelines are cached on it), so it is leaked rather than dropped.
static DEVICES: Mutex<Vec<(String, &'static Gpu)>> = Mutex::new(Vec::new());

/// An open GPU device (`device(spec)` opens it once per process; cheap to pass around).
#[pyclass(frozen, module = "wgpu_unsupervised._core")]
pub struct Device {
    pub gpu: &'static Gpu,
    spec: Option<String>,
}

impl Device {
    fn info(&self) -> &GpuInfo {
        self.gpu.info()
    }
}

#[pymethods]
impl Device {
    /// The adapter's name as its driver reports it.
    #[getter]
    fn name(&self) -> String {
        self.info().name.clone()
    }

    /// "Vulkan", "Metal", "Dx12" or "Gl".
    #[getter]
    fn backend(&self) -> String {
        self.info().backend.clone()
    }

    /// "DiscreteGpu", "IntegratedGpu", "VirtualGpu", "Cpu" (software, e.g. lavapipe).
    #[getter]
    fn device_type(&self) -> String {
        self.info().device_type.clone()
    }

    /// Driver name and version, when the backend reports them.
    #[getter]
    fn driver(&self) -> String {
        self.info().driver.clone()
    }

    /// The spec the device was opened with (`None`: the best adapter).
    #[getter]
    fn spec(&self) -> Option<String> {
        self.spec.clone()
    }

    fn __repr__(&self) -> String {
        format!("Device({})", self.info())
    }

    fn __reduce__(&self, py: Python<'_>) -> PyResult<(Py<PyAny>, (Option<String>,))> {
        let open = py.import("wgpu_unsupervised._core")?.getattr("device")?;
        Ok((open.unbind(), (self.spec.clone(),)))
    }
}

/// The spec as a selector: `None` (best adapter), an index into `adapters()`, or a part of
/// an adapter's name, optionally prefixed by a backend (`"vulkan:1"`, `"gl:"`).
fn selector(spec: Option<&Bound<'_, PyAny>>) -> PyResult<Option<String>> {
    let Some(spec) = spec else { return Ok(None) };
    if spec.is_none() {
        return Ok(None);
    }
    if let Ok(i) = spec.extract::<i64>() {
        if spec.is_instance_of::<pyo3::types::PyBool>() || i < 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "device: an adapter index must be an integer >= 0, got {spec}"
            )));
        }
        return Ok(Some(i.to_string()));
    }
    if let Ok(s) = spec.extract::<String>() {
        return Ok(Some(s));
    }
    Err(PyTypeError::new_err(format!(
        "device: expected None, an adapter index or a name, got {}",
        spec.get_type().name()?
    )))
}

/// The device a spec names, opened on first use.
pub fn open(py: Python<'_>, spec: Option<String>) -> PyResult<Device> {
    let key = spec.clone().unwrap_or_default();
    if let Some(&(_, gpu)) = DEVICES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(k, _)| *k == key)
    {
        return Ok(Device { gpu, spec });
    }
    let options = match &spec {
        None => AdapterOptions::default(),
        Some(s) => AdapterOptions::from_selector(s).or_py()?,
    };
    let gpu = run(py, || Gpu::with_options(&options))?;
    let mut devices = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
    // Another thread may have opened it meanwhile; keep the first.
    if let Some(&(_, first)) = devices.iter().find(|(k, _)| *k == key) {
        return Ok(Device { gpu: first, spec });
    }
    let gpu: &'static Gpu = Box::leak(Box::new(gpu));
    devices.push((key, gpu));
    Ok(Device { gpu, spec })
}

/// device(spec=None) -> Device
///
/// The device `spec` names: None for the best adapter (honouring WGPU_BACKEND and
/// WGPU_ADAPTER_NAME), an index into `adapters()`, or a part of an adapter's name
/// (optionally "vulkan:", "metal:", "dx12:" or "gl:" first). Opened once per process.
#[pyfunction]
#[pyo3(signature = (spec=None))]
fn device(py: Python<'_>, spec: Option<&Bound<'_, PyAny>>) -> PyResult<Device> {
    open(py, selector(spec)?)
}

/// adapters() -> list[dict]
///
/// Every adapter, best first, as `device(index)` numbers them: index, name, backend,
/// device_type, driver.
#[pyfunction]
fn adapters(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let list = run(py, || Gpu::adapters(&AdapterOptions::default()))?;
    list.iter()
        .enumerate()
        .map(|(i, a)| {
            let d = PyDict::new(py);
            d.set_item("index", i)?;
            d.set_item("name", &a.name)?;
            d.set_item("backend", &a.backend)?;
            d.set_item("device_type", &a.device_type)?;
            d.set_item("driver", &a.driver)?;
            Ok(d)
        })
        .collect()
}

/// worker_adapter(index) -> int
///
/// The adapter (an index for `device`) of the worker numbered `index`: one GPU per worker,
/// cycling through the hardware adapters (the software ones when there is no hardware).
#[pyfunction]
fn worker_adapter(py: Python<'_>, index: usize) -> PyResult<usize> {
    let list = run(py, || Gpu::adapters(&AdapterOptions::default()))?;
    let hardware: Vec<usize> = (0..list.len())
        .filter(|&i| list[i].device_type != "Cpu")
        .collect();
    let pool = if hardware.is_empty() {
        (0..list.len()).collect()
    } else {
        hardware
    };
    Ok(pool[index % pool.len()])
}

/// window_system_probe_fails() -> bool
///
/// Whether opening the GPU would print Mesa's `XDG_RUNTIME_DIR` line on this machine (no
/// display reachable, Mesa's device-selection layer not configured by the user): the
/// library's `headless::window_system_probe_fails`. Reads the environment; changes nothing.
#[pyfunction]
fn window_system_probe_fails() -> bool {
    wgpu_unsupervised::headless::window_system_probe_fails()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Device>()?;
    m.add_function(wrap_pyfunction!(device, m)?)?;
    m.add_function(wrap_pyfunction!(adapters, m)?)?;
    m.add_function(wrap_pyfunction!(worker_adapter, m)?)?;
    m.add_function(wrap_pyfunction!(window_system_probe_fails, m)?)?;
    Ok(())
}
