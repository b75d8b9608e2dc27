"""Clustering estimators: K-Means, mini-batch K-Means and spectral clustering on the GPU."""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils import check_array
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from . import _core
from ._base import DEVICE, OnDevice, check_weights, check_x, device, rows, seed_of

__all__ = ["KMeans", "MiniBatchKMeans", "SpectralClustering", "kmeans_plusplus"]

#: What K-Means and mini-batch K-Means take as ``init``.
INIT = [StrOptions({"k-means++", "k-means||", "random"}), "array-like"]


def init_args(init, n_features=None):
    """(name, centroids): a named initialisation, or given centroids as float64 (checked:
    2-D, finite, real, of ``n_features`` columns when given)."""
    if isinstance(init, str):
        return init, None
    c = check_array(init, dtype=np.float64, input_name="init")
    if n_features is not None and c.shape[1] != n_features:
        raise ValueError(
            f"The shape of the initial centers {c.shape} does not match the number of "
            f"features of the data {n_features}."
        )
    return "given", np.ascontiguousarray(c)


def _n_init(n_init, init, auto_random: int) -> int:
    if isinstance(n_init, str) and n_init == "auto":
        return auto_random if isinstance(init, str) and init == "random" else 1
    return n_init


class _Centroids(
    OnDevice, ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin, BaseEstimator
):
    """What K-Means and mini-batch K-Means share: the fit's common arguments and what they
    do once fitted."""

    def _fit(self, fit, X, sample_weight, **params):
        """``fit`` (a fit of the extension) on the rows of ``X``, with the arguments both
        estimators have and ``params``; the model's attributes set."""
        X = check_x(self, X, reset=True)
        name, centroids = init_args(self.init, X.shape[1])
        model = fit(
            device(self.device),
            rows(X),
            check_weights(sample_weight, X),
            n_clusters=self.n_clusters,
            init=name,
            init_centroids=centroids,
            seed=seed_of(self.random_state),
            **params,
        )
        self._set_model(model, X.dtype)
        self.n_iter_ = model.n_iter
        return model

    def _set_model(self, model, dtype) -> None:
        self._model = model
        # float64 data: every digit the fit has (origin + relative centroids).
        centers = model.cluster_centers_f64 if dtype == np.float64 else model.cluster_centers
        self.cluster_centers_ = centers.astype(dtype, copy=False)
        self.labels_ = model.labels
        self.inertia_ = model.inertia
        self._n_features_out = self.cluster_centers_.shape[0]

    def predict(self, X):
        """Index of the nearest centroid of every row."""
        return self._on_model("predict", X)

    def transform(self, X):
        """Distances from every row to every centroid (n_samples x n_clusters), in the
        dtype of ``X``."""
        return self._on_model("transform", X, keep_dtype=True)

    def fit_transform(self, X, y=None, sample_weight=None):
        """Fits, then the distances of the rows to the centroids."""
        return self.fit(X, sample_weight=sample_weight).transform(X)

    def score(self, X, y=None):
        """Opposite of the K-Means objective of ``X`` (higher is better)."""
        return self._on_model("score", X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class KMeans(_Centroids):
    """K-Means clustering (Lloyd) on the GPU.

    Parameters
    ----------
    n_clusters : int, default=8
    init : {"k-means++", "k-means||", "random"} or array of shape (n_clusters, n_features)
        Greedy k-means++ (scikit-learn's), k-means‖ (Bahmani et al.; ``oversampling_factor``
        and ``init_rounds``), K distinct rows, or given centroids.
    n_init : "auto" or int, default="auto"
        Restarts, the lowest inertia kept ("auto": 10 with random init, else 1).
    max_iter : int, default=300
    tol : float, default=1e-4
        On the squared centroid shift, relative to the mean feature variance.
    fixed_iterations : bool, default=False
        Run exactly ``max_iter`` iterations per restart, with no convergence test (as
        FAISS's ``niter``; a fixed budget or a benchmark's loop): the GPU runs them back
        to back, several submissions ahead of the host. ``n_iter_`` is then ``max_iter``.
    random_state : int, RandomState or None
        An int is the library's seed: the same seed gives the same model on an adapter.
    metric : {"euclidean", "cosine"}, default="euclidean"
        "cosine" is spherical K-Means (unit rows and centroids, inertia Σ(1 − cos)).
    oversampling_factor : float, default=2.0
        k-means‖: candidates drawn per round, per cluster.
    init_rounds : int, default=5
        k-means‖ sampling rounds.
    device : int, str or None
        The adapter: an index into ``adapters()``, a part of its name, or None (the best).

    Attributes
    ----------
    cluster_centers_, labels_, inertia_, n_iter_, n_features_in_, feature_names_in_
    """

    _parameter_constraints: dict = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "init": INIT,
        "n_init": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "fixed_iterations": ["boolean"],
        "random_state": ["random_state"],
        "metric": [StrOptions({"euclidean", "cosine"})],
        "oversampling_factor": [Interval(Real, 0, None, closed="neither")],
        "init_rounds": [Interval(Integral, 1, None, closed="left")],
        "device": DEVICE,
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        init="k-means++",
        n_init="auto",
        max_iter=300,
        tol=1e-4,
        fixed_iterations=False,
        random_state=None,
        metric="euclidean",
        oversampling_factor=2.0,
        init_rounds=5,
        device=None,
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.fixed_iterations = fixed_iterations
        self.random_state = random_state
        self.metric = metric
        self.oversampling_factor = oversampling_factor
        self.init_rounds = init_rounds
        self.device = device

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Clusters the rows of ``X`` (optionally weighted)."""
        self._fit(
            _core.kmeans_fit,
            X,
            sample_weight,
            n_init=_n_init(self.n_init, self.init, 10),
            max_iter=self.max_iter,
            tol=self.tol,
            fixed_iterations=self.fixed_iterations,
            metric=self.metric,
            oversampling=self.oversampling_factor,
            rounds=self.init_rounds,
        )
        return self


class MiniBatchKMeans(_Centroids):
    """Mini-batch K-Means (Sculley 2010, scikit-learn's variant) on the GPU.

    Parameters
    ----------
    n_clusters : int, default=8
    init : {"k-means++", "k-means||", "random"} or array of shape (n_clusters, n_features)
    max_iter : int, default=100
        Epochs over the data.
    batch_size : int, default=1024
    tol : float, default=0.0
    max_no_improvement : int or None, default=10
    init_size : int or None
    n_init : "auto" or int, default="auto"
        ("auto": 3 with random init, else 1).
    reassignment_ratio : float, default=0.01
    random_state : int, RandomState or None
    device : int, str or None

    ``partial_fit`` makes one step per batch; after unpickling it continues from
    ``cluster_centers_`` (the running counts start again).
    """

    _parameter_constraints: dict = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "init": INIT,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_no_improvement": [Interval(Integral, 0, None, closed="left"), None],
        "init_size": [Interval(Integral, 1, None, closed="left"), None],
        "n_init": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "reassignment_ratio": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "device": DEVICE,
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        init="k-means++",
        max_iter=100,
        batch_size=1024,
        tol=0.0,
        max_no_improvement=10,
        init_size=None,
        n_init="auto",
        reassignment_ratio=0.01,
        random_state=None,
        device=None,
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.tol = tol
        self.max_no_improvement = max_no_improvement
        self.init_size = init_size
        self.n_init = n_init
        self.reassignment_ratio = reassignment_ratio
        self.random_state = random_state
        self.device = device

    def _init_size(self):
        """``init_size``, as scikit-learn takes it: below ``n_clusters`` it warns and uses
        3·n_clusters (the library caps it at the rows)."""
        if self.init_size is not None and self.init_size < self.n_clusters:
            warnings.warn(
                f"init_size={self.init_size} should be larger than n_clusters="
                f"{self.n_clusters}. Setting it to min(3*n_clusters, n_samples)",
                RuntimeWarning,
                stacklevel=3,
            )
            return 3 * self.n_clusters
        return self.init_size

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Clusters the rows of ``X`` by mini-batch steps."""
        model = self._fit(
            _core.minibatch_kmeans_fit,
            X,
            sample_weight,
            batch_size=self.batch_size,
            max_iter=self.max_iter,
            max_no_improvement=self.max_no_improvement,
            reassignment_ratio=self.reassignment_ratio,
            tol=self.tol,
            n_init=_n_init(self.n_init, self.init, 3),
            init_size=self._init_size(),
        )
        self.n_steps_ = model.n_iter
        self._partial = None
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, sample_weight=None):
        """One mini-batch step on the rows of ``X`` (the first call also initialises; float64
        rows are centred on the first batch's mean, kept for every later batch)."""
        first = not hasattr(self, "cluster_centers_")
        X = check_x(self, X, reset=first)
        if getattr(self, "_partial", None) is None:
            if first:
                name, centroids = init_args(self.init, X.shape[1])
            else:
                name, centroids = "given", self.cluster_centers_.astype(np.float64)
            self._partial = _core.MiniBatchPartial(
                n_clusters=self.n_clusters,
                init=name,
                init_centroids=centroids,
                reassignment_ratio=self.reassignment_ratio,
                n_init=_n_init(self.n_init, self.init, 3),
                init_size=self._init_size(),
                seed=seed_of(self.random_state),
            )
        x = rows(X)
        w = check_weights(sample_weight, X)
        dev = device(self.device)
        self._partial.partial_fit(dev, x, w)
        self._set_model(self._partial.model(dev, x, w), X.dtype)
        self.n_steps_ = self._partial.n_steps
        return self

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_partial", None)
        return state


class SpectralClustering(ClusterMixin, BaseEstimator):
    """Spectral clustering on the GPU: an RBF or k-nearest-neighbour graph applied without
    an N x N matrix, the normalised Laplacian's leading eigenvectors, K-Means on them.

    Parameters
    ----------
    n_clusters : int, default=8
    affinity : {"rbf", "nearest_neighbors"}, default="rbf"
    gamma : float, default=1.0
        RBF kernel coefficient.
    n_neighbors : int, default=10
        Neighbours of the k-NN graph (at most 64).
    n_init : int, default=10
        K-Means restarts on the embedding.
    eigen_tol : float, default=1e-5
    max_iter : int, default=3000
        Eigen-solver iterations.
    random_state : int, RandomState or None
    device : int, str or None

    Attributes
    ----------
    labels_, embedding_ (the spectral embedding), eigenvalues_, n_iter_, n_features_in_
    """

    _parameter_constraints: dict = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "affinity": [StrOptions({"rbf", "nearest_neighbors"})],
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "n_neighbors": [Interval(Integral, 1, 64, closed="both")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "eigen_tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "device": DEVICE,
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        affinity="rbf",
        gamma=1.0,
        n_neighbors=10,
        n_init=10,
        eigen_tol=1e-5,
        max_iter=3000,
        random_state=None,
        device=None,
    ):
        self.n_clusters = n_clusters
        self.affinity = affinity
        self.gamma = gamma
        self.n_neighbors = n_neighbors
        self.n_init = n_init
        self.eigen_tol = eigen_tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.device = device

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Clusters the rows of ``X`` (at least 2; float64 rows centred in float64 first)."""
        X = check_x(self, X, reset=True, ensure_min_samples=2)
        labels, embedding, eigenvalues, n_iter = _core.spectral_fit(
            device(self.device),
            rows(X),
            n_clusters=self.n_clusters,
            affinity=self.affinity,
            gamma=self.gamma,
            n_neighbors=self.n_neighbors,
            n_init=self.n_init,
            seed=seed_of(self.random_state),
            tol=self.eigen_tol,
            max_iter=self.max_iter,
        )
        self.labels_ = labels
        self.embedding_ = embedding
        self.eigenvalues_ = eigenvalues
        self.n_iter_ = n_iter
        return self


@validate_params(
    {
        "X": ["array-like"],
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "sample_weight": ["array-like", None],
        "random_state": ["random_state"],
        "device": DEVICE,
    },
    prefer_skip_nested_validation=True,
)
def kmeans_plusplus(X, n_clusters, *, sample_weight=None, random_state=None, device=None):
    """Greedy k-means++ seeds of ``X`` on the GPU (scikit-learn's ``kmeans_plusplus``):
    returns (centers, indices); the centers are the rows ``X[indices]``, in the dtype of
    ``X`` (float32 kept, anything else float64)."""
    X = check_array(X, dtype=[np.float64, np.float32])
    if X.shape[0] < n_clusters:
        raise ValueError(f"n_samples={X.shape[0]} should be >= n_clusters={n_clusters}.")
    w = check_weights(sample_weight, X)
    _, indices = _core.kmeans_plusplus(_core.device(device), rows(X), n_clusters, w, seed_of(random_state))
    return X[indices], indices
