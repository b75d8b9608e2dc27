"""Clustering metrics: the internal criteria (silhouette on the GPU, Calinski–Harabasz,
Davies–Bouldin) and the agreement scores between two labellings, with scikit-learn's
names and arguments. Labels may be any values; they are encoded as 0..k-1 here."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_array
from sklearn.utils.validation import column_or_1d

from . import _core
from ._base import FLOAT_DTYPES, rows, seed_of

__all__ = [
    "silhouette_score",
    "silhouette_samples",
    "calinski_harabasz_score",
    "davies_bouldin_score",
    "rand_score",
    "adjusted_rand_score",
    "mutual_info_score",
    "normalized_mutual_info_score",
    "adjusted_mutual_info_score",
    "homogeneity_score",
    "completeness_score",
    "v_measure_score",
    "homogeneity_completeness_v_measure",
    "fowlkes_mallows_score",
]


def _codes(labels) -> np.ndarray:
    """Labels of any values as codes 0..k-1 (int64), in the order of the sorted values."""
    labels = column_or_1d(labels)
    return np.unique(labels, return_inverse=True)[1].astype(np.int64).ravel()


def _x(X) -> np.ndarray:
    """The rows as the library takes them: float32 or float64 (centred in float64 there),
    other dtypes float64; complex, sparse or non-2-D input refused."""
    return rows(check_array(X, dtype=FLOAT_DTYPES))


def _distances(X) -> np.ndarray:
    """A precomputed distance matrix in its own float dtype: its diagonal is checked at that
    dtype's tolerance (100 x its epsilon), as scikit-learn does."""
    return rows(check_array(X, dtype=FLOAT_DTYPES))


def silhouette_score(
    X, labels, *, metric="euclidean", sample_size=None, random_state=None, device=None
):
    """Mean silhouette coefficient (Euclidean distance sums on the GPU; ``metric=
    "precomputed"``: X is an n x n distance matrix). ``sample_size`` evaluates a random
    sample of rows drawn with ``random_state``."""
    if metric == "precomputed":
        if sample_size is not None:
            raise ValueError("sample_size is not supported with metric='precomputed'")
        return _core.silhouette_precomputed(_distances(X), _codes(labels))[0]
    if metric != "euclidean":
        raise ValueError(f"metric must be 'euclidean' or 'precomputed', got {metric!r}")
    score, _, _ = _core.silhouette(
        _core.device(device), _x(X), _codes(labels), sample_size, seed_of(random_state)
    )
    return score


def silhouette_samples(X, labels, *, metric="euclidean", device=None):
    """The silhouette coefficient of every row."""
    if metric == "precomputed":
        return _core.silhouette_precomputed(_distances(X), _codes(labels))[1]
    if metric != "euclidean":
        raise ValueError(f"metric must be 'euclidean' or 'precomputed', got {metric!r}")
    _, rows, samples = _core.silhouette(_core.device(device), _x(X), _codes(labels), None, 0)
    out = np.empty(len(samples))
    out[rows] = samples
    return out


def calinski_harabasz_score(X, labels):
    """Calinski–Harabasz index (between- over within-cluster dispersion)."""
    return _core.calinski_harabasz(_x(X), _codes(labels))


def davies_bouldin_score(X, labels):
    """Davies–Bouldin index (lower is better)."""
    return _core.davies_bouldin(_x(X), _codes(labels))


def _agreement(name, labels_true, labels_pred, **kw):
    return _core.agreement(name, _codes(labels_true), _codes(labels_pred), **kw)


def rand_score(labels_true, labels_pred):
    """Rand index."""
    return _agreement("rand", labels_true, labels_pred)


def adjusted_rand_score(labels_true, labels_pred):
    """Adjusted Rand index."""
    return _agreement("adjusted_rand", labels_true, labels_pred)


def mutual_info_score(labels_true, labels_pred):
    """Mutual information (nats)."""
    return _agreement("mutual_info", labels_true, labels_pred)


def normalized_mutual_info_score(labels_true, labels_pred, *, average_method="arithmetic"):
    """Normalised mutual information."""
    return _agreement(
        "normalized_mutual_info", labels_true, labels_pred, average_method=average_method
    )


def adjusted_mutual_info_score(labels_true, labels_pred, *, average_method="arithmetic"):
    """Adjusted mutual information."""
    return _agreement(
        "adjusted_mutual_info", labels_true, labels_pred, average_method=average_method
    )


def homogeneity_score(labels_true, labels_pred):
    """Homogeneity: each cluster holds one class."""
    return _agreement("homogeneity", labels_true, labels_pred)


def completeness_score(labels_true, labels_pred):
    """Completeness: each class is in one cluster."""
    return _agreement("completeness", labels_true, labels_pred)


def v_measure_score(labels_true, labels_pred, *, beta=1.0):
    """V-measure: the weighted harmonic mean of homogeneity and completeness."""
    return _agreement("v_measure", labels_true, labels_pred, beta=beta)


def homogeneity_completeness_v_measure(labels_true, labels_pred, *, beta=1.0):
    """(homogeneity, completeness, V-measure)."""
    return (
        homogeneity_score(labels_true, labels_pred),
        completeness_score(labels_true, labels_pred),
        v_measure_score(labels_true, labels_pred, beta=beta),
    )


def fowlkes_mallows_score(labels_true, labels_pred):
    """Fowlkes–Mallows index."""
    return _agreement("fowlkes_mallows", labels_true, labels_pred)
