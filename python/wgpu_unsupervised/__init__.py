"""wgpu-unsupervised: K-Means, PCA, Gaussian mixtures, spectral clustering and clustering
metrics on any GPU (Vulkan, Metal, DX12, GL, or the lavapipe software driver), as
scikit-learn estimators.

>>> import numpy as np
>>> from wgpu_unsupervised import KMeans
>>> X = np.random.default_rng(0).normal(size=(1000, 4)).astype(np.float32)
>>> KMeans(n_clusters=3, random_state=0).fit(X).cluster_centers_.shape
(3, 4)

The estimators are thin: the algorithms, their parameter checks and the data checks are
the Rust library's, whose errors arrive as ``ValueError`` (bad input) or ``RuntimeError``
(the device). ``wgpu_unsupervised.dask`` fits K-Means, PCA and mixtures across the
workers of a Dask cluster.
"""

from . import _core
from ._base import adapters, device
from .cluster import KMeans, MiniBatchKMeans, SpectralClustering, kmeans_plusplus
from .decomposition import PCA, IncrementalPCA
from .mixture import GaussianMixture

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
