# Type stubs of the extension module wgpu_unsupervised._core (written by hand; checked
# against the built module with `python -m mypy.stubtest wgpu_unsupervised._core`).
#
# Arrays are NumPy arrays; data arrays (`_Rows`) must be float32 or float64, C-contiguous
# and aligned (the Python wrappers convert, copying only when needed); float64 rows are
# centred in f64 by the library before the f32 cast. Library errors arrive as ValueError
# (bad input) or RuntimeError (the device, or a panic caught at the boundary).

from typing import Any, Protocol, TypeAlias, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "Device",
    "GmmFit",
    "KMeansFit",
    "MiniBatchPartial",
    "Moments",
    "PcaFit",
    "__version__",
    "_panic_for_tests",
    "adapters",
    "agreement",
    "calinski_harabasz",
    "davies_bouldin",
    "device",
    "gmm_fit",
    "gmm_fit_remote",
    "inertia",
    "kmeans_fit",
    "kmeans_fit_remote",
    "kmeans_plusplus",
    "minibatch_kmeans_fit",
    "partition_answer",
    "partition_release",
    "partition_sessions",
    "pca_fit",
    "seed_candidates",
    "silhouette",
    "silhouette_precomputed",
    "spectral_fit",
    "worker_adapter",
    "window_system_probe_fails",
]
__version__: str

_F32: TypeAlias = npt.NDArray[np.float32]
_F64: TypeAlias = npt.NDArray[np.float64]
_I64: TypeAlias = npt.NDArray[np.int64]
_Rows: TypeAlias = npt.NDArray[np.float32] | npt.NDArray[np.float64]

# --- devices -------------------------------------------------------------------------

@final
class Device:
    """An open GPU device (opened once per process and spec)."""
    @property
    def name(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def device_type(self) -> str: ...
    @property
    def driver(self) -> str: ...
    @property
    def spec(self) -> str | None: ...
    def __reduce__(self) -> tuple[Any, tuple[str | None]]: ...

def device(spec: int | str | None = None) -> Device:
    """The device `spec` names: None (best adapter), an index into adapters(), or a part
    of an adapter's name (optionally prefixed by a backend, e.g. "vulkan:")."""

def adapters() -> list[dict[str, Any]]:
    """Every adapter, best first: index, name, backend, device_type, driver."""

def worker_adapter(index: int) -> int:
    """The adapter index of the worker numbered `index` (one GPU per worker)."""

def _panic_for_tests(message: str) -> None:
    """Panics inside the guard every binding runs in: a RuntimeError (a test hook)."""

def window_system_probe_fails() -> bool:
    """Whether opening the GPU would print Mesa's XDG_RUNTIME_DIR line here (no display
    reachable, the device-selection layer not configured); reads the environment only."""

# --- K-Means, mini-batch K-Means, spectral clustering ---------------------------------

@final
class KMeansFit:
    """A fitted K-Means model."""
    @property
    def cluster_centers(self) -> _F32: ...
    @property
    def cluster_centers_f64(self) -> _F64: ...
    @property
    def origin(self) -> _F64 | None: ...
    @property
    def labels(self) -> _I64: ...
    @property
    def inertia(self) -> float: ...
    @property
    def n_iter(self) -> int: ...
    @property
    def converged(self) -> bool: ...
    def predict(self, device: Device, x: _Rows) -> _I64: ...
    def transform(self, device: Device, x: _Rows) -> _F32: ...
    def score(self, device: Device, x: _Rows) -> float: ...
    def to_json(self) -> str: ...
    @staticmethod
    def from_json(text: str) -> KMeansFit: ...
    def __reduce__(self) -> tuple[Any, tuple[str]]: ...

def kmeans_fit(
    device: Device,
    x: _Rows,
    sample_weight: _F32 | None,
    *,
    n_clusters: int,
    init: str,
    init_centroids: _F64 | None,
    n_init: int,
    max_iter: int,
    tol: float,
    fixed_iterations: bool,
    seed: int,
    metric: str,
    oversampling: float,
    rounds: int,
) -> KMeansFit: ...
def kmeans_plusplus(
    device: Device, x: _Rows, n_clusters: int, sample_weight: _F32 | None, seed: int
) -> tuple[_F32, _I64]: ...
def minibatch_kmeans_fit(
    device: Device,
    x: _Rows,
    sample_weight: _F32 | None,
    *,
    n_clusters: int,
    init: str,
    init_centroids: _F64 | None,
    batch_size: int,
    max_iter: int,
    max_no_improvement: int | None,
    reassignment_ratio: float,
    tol: float,
    n_init: int,
    init_size: int | None,
    seed: int,
) -> KMeansFit: ...

@final
class MiniBatchPartial:
    """A mini-batch K-Means fed batch by batch."""
    def __new__(
        cls,
        *,
        n_clusters: int,
        init: str,
        init_centroids: _F64 | None,
        reassignment_ratio: float,
        n_init: int,
        init_size: int | None,
        seed: int,
    ) -> MiniBatchPartial: ...
    def partial_fit(self, device: Device, x: _Rows, sample_weight: _F32 | None) -> None: ...
    def model(self, device: Device, x: _Rows, sample_weight: _F32 | None) -> KMeansFit: ...
    @property
    def n_steps(self) -> int: ...
    @property
    def counts(self) -> _F64 | None: ...

def spectral_fit(
    device: Device,
    x: _Rows,
    *,
    n_clusters: int,
    affinity: str,
    gamma: float,
    n_neighbors: int,
    n_init: int,
    seed: int,
    tol: float,
    max_iter: int,
) -> tuple[_I64, _F32, _F64, int]: ...

# --- Gaussian mixtures ----------------------------------------------------------------

@final
class GmmFit:
    """A fitted Gaussian mixture; covariances and precisions flat in the library's layout."""
    @property
    def weights(self) -> _F64: ...
    @property
    def means(self) -> _F64: ...
    @property
    def covariances(self) -> _F64: ...
    @property
    def precisions(self) -> _F64: ...
    @property
    def precisions_cholesky(self) -> _F64: ...
    @property
    def covariance_type(self) -> str: ...
    @property
    def converged(self) -> bool: ...
    @property
    def n_iter(self) -> int: ...
    @property
    def lower_bound(self) -> float: ...
    @property
    def labels(self) -> _I64: ...
    @property
    def n_parameters(self) -> int: ...
    def predict(self, device: Device, x: _Rows) -> _I64: ...
    def predict_proba(self, device: Device, x: _Rows) -> _F32: ...
    def score_samples(self, device: Device, x: _Rows) -> _F32: ...
    def score(self, device: Device, x: _Rows) -> float: ...
    def bic(self, device: Device, x: _Rows) -> float: ...
    def aic(self, device: Device, x: _Rows) -> float: ...
    def sample(self, n: int, seed: int) -> tuple[_F64, _I64]: ...
    def to_json(self) -> str: ...
    @staticmethod
    def from_json(text: str) -> GmmFit: ...
    def __reduce__(self) -> tuple[Any, tuple[str]]: ...

def gmm_fit(
    device: Device,
    x: _Rows,
    sample_weight: _F32 | None,
    *,
    n_components: int,
    covariance_type: str,
    tol: float,
    reg_covar: float,
    max_iter: int,
    n_init: int,
    init: str,
    init_rows: _I64 | None,
    weights_init: _F64 | None,
    means_init: _F64 | None,
    precisions_init: _F64 | None,
    warm_start: GmmFit | None,
    seed: int,
) -> GmmFit: ...

# --- PCA ------------------------------------------------------------------------------

@final
class PcaFit:
    """A fitted PCA."""
    @property
    def components(self) -> _F64: ...
    @property
    def explained_variance(self) -> _F64: ...
    @property
    def explained_variance_ratio(self) -> _F64: ...
    @property
    def singular_values(self) -> _F64: ...
    @property
    def mean(self) -> _F64: ...
    @property
    def noise_variance(self) -> float: ...
    @property
    def n_components(self) -> int: ...
    @property
    def n_samples(self) -> int: ...
    @property
    def n_iter(self) -> int: ...
    def transform(self, device: Device, x: _Rows) -> _F32: ...
    def inverse_transform(self, device: Device, z: _Rows) -> _F32: ...
    def inverse_transform_f64(self, device: Device, z: _Rows) -> _F64: ...
    def score_samples(self, x: _Rows) -> _F64: ...
    def covariance(self) -> _F64: ...
    def precision(self) -> _F64: ...
    def to_json(self) -> str: ...
    @staticmethod
    def from_json(text: str) -> PcaFit: ...
    def __reduce__(self) -> tuple[Any, tuple[str]]: ...

def pca_fit(
    device: Device,
    x: _Rows,
    *,
    n_components: int | float | str | None,
    whiten: bool,
    solver: str,
    tol: float,
    max_iter: int,
    seed: int,
) -> PcaFit: ...
@final
class Moments:
    """Exact merged moments (count, mean, co-moment) of the rows seen."""
    @staticmethod
    def of(device: Device, x: _Rows) -> Moments: ...
    def merged(self, others: list[Moments]) -> Moments: ...
    @property
    def n_samples(self) -> int: ...
    @property
    def n_features(self) -> int: ...
    @property
    def mean(self) -> _F64: ...
    def fit(
        self,
        device: Device,
        *,
        n_components: int | float | str | None,
        whiten: bool,
        solver: str,
        tol: float,
        max_iter: int,
        seed: int,
    ) -> PcaFit: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> Moments: ...
    def __reduce__(self) -> tuple[Any, tuple[bytes]]: ...

# --- metrics --------------------------------------------------------------------------

def silhouette(
    device: Device, x: _Rows, labels: _I64, sample_size: int | None, seed: int
) -> tuple[float, _I64, _F64]: ...
def silhouette_precomputed(distances: _Rows, labels: _I64) -> tuple[float, _F64]: ...
def calinski_harabasz(x: _Rows, labels: _I64) -> float: ...
def davies_bouldin(x: _Rows, labels: _I64) -> float: ...
def agreement(
    name: str,
    labels_true: _I64,
    labels_pred: _I64,
    average_method: str = "arithmetic",
    beta: float = 1.0,
) -> float: ...
def inertia(x: _Rows, labels: _I64) -> float: ...

# --- distributed fits -----------------------------------------------------------------

class _Bridge(Protocol):
    """What the remote fits call back into, once per round of requests."""
    def run(self, kind: str, requests: list[tuple[int, bytes]]) -> list[bytes]: ...
    def seed(self, candidates: _F32, weights: _F32, k: int, seed: int) -> _F32: ...

def partition_answer(
    device: Device,
    key: str,
    x: _Rows,
    kind: str,
    request: bytes,
    origin: _F64 | None = None,
) -> bytes:
    """The reply of partition `key` (its rows `x`; float64 rows centred on the driver's
    `origin`) to one request ("kmeans" or "mixture")."""

def partition_release(keys: list[str] | None = None) -> int: ...
def partition_sessions() -> dict[str, Any]: ...
def seed_candidates(device: Device, candidates: _F32, weights: _F32, k: int, seed: int) -> _F32: ...
def kmeans_fit_remote(
    bridge: _Bridge,
    sizes: list[int],
    d: int,
    *,
    n_clusters: int,
    init: str,
    init_centroids: _F64 | None,
    n_init: int,
    max_iter: int,
    tol: float,
    seed: int,
    oversampling: float,
    rounds: int,
    origin: _F64 | None = None,
) -> KMeansFit: ...
def gmm_fit_remote(
    bridge: _Bridge,
    sizes: list[int],
    d: int,
    *,
    n_components: int,
    covariance_type: str,
    tol: float,
    reg_covar: float,
    max_iter: int,
    n_init: int,
    init: str,
    weights_init: _F64 | None,
    means_init: _F64 | None,
    precisions_init: _F64 | None,
    seed: int,
    origin: _F64 | None = None,
) -> GmmFit: ...
