"""wgpu-unsupervised: K-Means, PCA, Gaussian mixtures, spectral clustering and clustering
metrics on any GPU (Vulkan, Metal, DX12, GL, or the lavapipe software driver), as
scikit-learn estimators.

>>> import numpy as np
>>> from wgpu_unsupervised import KMeans
>>> X = np.random.default_rng(0).normal(size=(1000, 4)).astype(np.float32)
>>> KMeans(n_clusters=3, random_state=0).fit(X).cluster_centers_.shape
(3, 4)

The estimators are thin: parameters are checked by scikit-learn's own machinery
(``InvalidParameterError``, naming the parameter), data by ``validate_data``; the algorithms
are the Rust library's, whose errors arrive as ``ValueError`` (bad input) or
``RuntimeError`` (the device, or a panic caught at the boundary). float64 data stay float64:
the library centres them in float64 before the float32 cast, so data far from 0 keep their
digits. ``wgpu_unsupervised.dask`` fits K-Means, PCA and mixtures across the workers of a
Dask cluster, the client holding no value per row.
"""

import os as _os

from . import _core

# A quiet start on machines without a display (servers, containers, CI, Dask workers): there,
# Mesa's device-selection layer probes for a Wayland compositor that cannot exist and
# libwayland prints "error: XDG_RUNTIME_DIR is invalid or not set in the environment." for
# every GPU instance. NODEVICE_SELECT=1 is that layer's own switch; it is set only in exactly
# that case and never over a user's own setting of the layer (the library's
# headless::avoid_window_system_probe, done here through os.environ so that Python and the
# worker processes it starts see it too). No GPU instance exists before this line runs.
if _core.window_system_probe_fails():
    _os.environ["NODEVICE_SELECT"] = "1"

from ._base import adapters, device  # noqa: E402
from .cluster import KMeans, MiniBatchKMeans, SpectralClustering, kmeans_plusplus  # noqa: E402
from .decomposition import PCA, IncrementalPCA  # noqa: E402
from .mixture import GaussianMixture  # noqa: E402

__version__ = _core.__version__

__all__ = [
    "KMeans",
    "MiniBatchKMeans",
    "SpectralClustering",
    "kmeans_plusplus",
    "PCA",
    "IncrementalPCA",
    "GaussianMixture",
    "adapters",
    "device",
    "metrics",
]

from . import metrics  # noqa: E402  (the metrics module, after the estimators)
