"""Fits across processes and machines on Dask: K-Means (k-means‖ start), PCA and Gaussian
mixtures over a ``dask.array`` whose rows are chunked across the workers.

How a fit runs
--------------
The loop runs on the client, in the Rust library (``KMeans::fit_remote``,
``GaussianMixture::fit_remote``): every iteration is **one map** over the partitions, a
Dask task per row chunk that returns the partition's mergeable statistics, and **one
reduction** on the client, which merges them in float64 in partition order and updates the
model. The result equals the single-process fit of the same rows from the same start
within float32 rounding. PCA needs one map in all (each partition's moments).

Each worker keeps its partitions' rows on its GPU across iterations: a partition session
in the extension, keyed by the chunk's Dask key and checked against a checksum and the
shape of the rows each task brings, so stale rows are never used. A worker that restarts
has no sessions; its first task rebuilds them from the rows Dask hands it (recomputed from
lineage if they were lost). Map tasks are pure (their replies depend on the request and the
rows only; random draws come from streams numbered by seed, round and partition), so a
retried task, a recomputed partition or a killed worker gives the same model as an
undisturbed fit.

One GPU per worker: the adapter of each worker comes from ``devices`` (a mapping from the
worker's name or address to an adapter index or name), else from the worker's index (its
name when it is a number, as ``LocalCluster`` names them, else its position among the
workers' names) modulo the number of adapters.
"""

from __future__ import annotations

import uuid
from numbers import Integral, Real

import dask
import dask.array as da
import numpy as np
from distributed import get_client
from sklearn.base import BaseEstimator, ClusterMixin, DensityMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._base import seed_of
from ._dask_workers import _answer, _apply, _moments, _pca_fit, _seed
from .cluster import INIT, init_args
from .decomposition import N_COMPONENTS, PcaMixin, pca_params
from .mixture import MIXTURE_CONSTRAINTS, MixtureMixin

__all__ = ["KMeans", "PCA", "GaussianMixture", "release_sessions"]

# Test hook (None in normal use): called with the round number before every round of
# requests on the client. (The workers' hook is `_dask_workers._fault_hook`.)
_round_hook = None

#: The parameters every Dask estimator has besides the algorithm's.
DISTRIBUTED = {
    "devices": [dict, None],
    "client": "no_validation",
    "retries": [Interval(Integral, 0, None, closed="left")],
}


def release_sessions(client=None, keys=None) -> dict:
    """Drops the partition sessions (all, or those of ``keys``) on every worker, freeing
    their device memory; returns how many each worker dropped."""
    client = client or get_client()
    return client.run(_core.partition_release, keys)


# --- client side ---------------------------------------------------------------------


def _worker_names(client) -> list[str]:
    """The names of the client's workers, sorted (a worker's position among them is its
    index when its name is not a number)."""
    return sorted(str(w["name"]) for w in client.scheduler_info()["workers"].values())


def _rows(X) -> da.Array:
    """``X`` as a dask array of float32 or float64 rows (other dtypes made float64, complex
    refused), one chunk along the features, its row chunks known."""
    if not isinstance(X, da.Array):
        X = da.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D dask array, got {X.ndim} dimension(s)")
    if np.issubdtype(X.dtype, np.complexfloating):
        raise ValueError("Complex data not supported")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if len(X.chunks[1]) != 1:
        X = X.rechunk({1: -1})
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    return X


class _Bridge:
    """The library's bridge to the partitions: one Dask task per partition and request.

    The rows are persisted on the workers and stay there; float64 rows get a global origin,
    their mean taken by Dask in one pass (D values to the client), which every partition
    centres its rows on before the float32 cast. The client holds the partitions' sizes and
    the replies of one round (statistics of K x D values), never a value per row."""

    def __init__(self, client, X: da.Array, devices, retries: int, origin: bool):
        self.client = client
        self.X = client.persist(X)
        blocks = self.X.to_delayed().ravel()
        keys = [str(b.key) for b in blocks]
        sizes = list(self.X.chunks[0])
        firsts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
        kept = [i for i, s in enumerate(sizes) if s > 0]
        self.blocks = [blocks[i] for i in kept]
        self.keys = [keys[i] for i in kept]
        self.sizes = [int(sizes[i]) for i in kept]
        self.firsts = [firsts[i] for i in kept]
        self.d = int(self.X.shape[1])
        self.devices = devices
        self.names = _worker_names(client)
        self.retries = retries
        self.rounds = 0
        self.fit_id = uuid.uuid4().hex
        self.origin = None
        if origin and self.X.dtype == np.float64 and self.sizes:
            mean = self.X.mean(axis=0, dtype=np.float64)
            self.origin = np.ascontiguousarray(client.compute(mean).result(), dtype=np.float64)
            if not np.all(np.isfinite(self.origin)):
                # A non-finite value somewhere: the partitions name it (global row).
                self.origin = np.zeros(self.d)

    def run(self, kind, requests):
        self.rounds += 1
        if _round_hook is not None:
            _round_hook(self.rounds)
        tasks = [
            dask.delayed(_answer, pure=True)(
                self.blocks[p], self.keys[p], kind, request, self.devices, self.names,
                self.origin, self.firsts[p], self.fit_id,
            )
            for p, request in requests
        ]
        futures = self.client.compute(tasks, retries=self.retries)
        return self.client.gather(futures)

    def seed(self, candidates, weights, k, seed):
        future = self.client.submit(
            _seed, candidates, weights, k, seed, self.devices, self.names,
            pure=True, retries=self.retries,
        )
        return future.result()

    def map_blocks(self, fn, *args):
        tasks = [
            dask.delayed(fn, pure=True)(b, first, *args, self.devices, self.names)
            for b, first in zip(self.blocks, self.firsts)
        ]
        return self.client.gather(self.client.compute(tasks, retries=self.retries))

    def submit(self, fn, *args):
        return self.client.submit(fn, *args, self.devices, self.names, pure=True, retries=self.retries).result()

    def release(self):
        try:
            self.client.run(_core.partition_release, self.keys, on_error="ignore")
        except Exception:  # noqa: BLE001 - a dead worker has nothing left to release
            pass


class _Distributed(BaseEstimator):
    """What the Dask estimators share: the client, devices, and block-wise methods."""

    def _bridge(self, X, origin=False):
        client = self.client or get_client()
        X = _rows(X)
        bridge = _Bridge(client, X, self.devices, self.retries, origin)
        if not bridge.sizes:
            raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required")
        self.n_features_in_ = bridge.d
        return bridge

    def _fit_remote(self, X, fit, **params):
        """The library's remote ``fit`` (``kmeans_fit_remote``, ``gmm_fit_remote``) over the
        partitions of ``X`` with ``params`` (float64 rows centred on their global mean);
        the sessions released; the training labels a lazy dask array over the persisted
        rows (computed on the workers when asked for: the client never holds them); the
        rounds of requests counted."""
        bridge = self._bridge(X, origin=True)
        try:
            model = fit(bridge, bridge.sizes, bridge.d, origin=bridge.origin, **params)
        finally:
            bridge.release()
        self._model = model
        self._dtype = bridge.X.dtype
        self.n_rounds_ = bridge.rounds
        self.labels_ = self._map(bridge.X, "predict", np.int64, None)
        return model

    def _map(self, X, method, dtype, width):
        """``method`` of the fitted model on every block of ``X``: a dask array."""
        check_is_fitted(self)
        X = _rows(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input"
            )
        names = None
        if self.devices is None:
            names = _worker_names(self.client or get_client())
        kw = dict(dtype=dtype, meta=np.empty((0,) * (1 if width is None else 2), dtype=dtype))
        args = (self._model, method, width, dtype, self.devices, names)
        if width is None:
            return X.map_blocks(_apply, *args, drop_axis=1, **kw)
        return X.map_blocks(_apply, *args, chunks=(X.chunks[0], (width,)), **kw)

    def _out_dtype(self, X):
        """The float dtype of outputs for ``X``: float64 unless ``X`` is float32."""
        return np.float32 if _rows(X).dtype == np.float32 else np.float64


class KMeans(ClusterMixin, _Distributed):
    """K-Means over a dask.array, rows chunked across the workers (k-means‖ start).

    Parameters
    ----------
    n_clusters : int, default=8
    init : {"k-means||", "k-means++", "random"} or array (n_clusters, n_features)
        k-means‖ takes ``init_max_iter`` rounds of two map tasks each (a worker measures
        its rows against each round's new candidates only), one more weighting the
        candidates, and greedy k-means++ among them (one task); k-means++ runs on a
        sample of max(10 000, 256 k) rows.
    n_init : int, default=1
    max_iter : int, default=300
    tol : float, default=1e-4
    random_state : int, RandomState or None
    oversampling_factor : float, default=2.0
    init_max_iter : int, default=5
    devices : dict or None
        Worker name (or address) -> adapter index or name; None: by the worker's index.
    client : distributed.Client or None
        None: the current client.
    retries : int, default=2
        Retries of a failed map task.

    Attributes
    ----------
    cluster_centers_, labels_ (a lazy dask array over the persisted rows: the labels stay
    on the workers), inertia_, n_iter_, n_rounds_, n_features_in_

    float64 rows are centred on their global mean (one Dask pass) in float64 on the workers
    before the float32 cast; ``cluster_centers_`` are then float64 with every digit.
    """

    _parameter_constraints: dict = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "init": INIT,
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "oversampling_factor": [Interval(Real, 0, None, closed="neither")],
        "init_max_iter": [Interval(Integral, 1, None, closed="left")],
        **DISTRIBUTED,
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        init="k-means||",
        n_init=1,
        max_iter=300,
        tol=1e-4,
        random_state=None,
        oversampling_factor=2.0,
        init_max_iter=5,
        devices=None,
        client=None,
        retries=2,
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.oversampling_factor = oversampling_factor
        self.init_max_iter = init_max_iter
        self.devices = devices
        self.client = client
        self.retries = retries

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Clusters the rows of the dask array ``X``."""
        name, centroids = init_args(self.init, _rows(X).shape[1])
        model = self._fit_remote(
            X,
            _core.kmeans_fit_remote,
            n_clusters=self.n_clusters,
            init=name,
            init_centroids=centroids,
            n_init=self.n_init,
            max_iter=self.max_iter,
            tol=self.tol,
            seed=seed_of(self.random_state),
            oversampling=self.oversampling_factor,
            rounds=self.init_max_iter,
        )
        if self._dtype == np.float64:
            self.cluster_centers_ = model.cluster_centers_f64
        else:
            self.cluster_centers_ = model.cluster_centers
        self.inertia_ = model.inertia
        self.n_iter_ = model.n_iter
        return self

    def predict(self, X):
        """Nearest centroid of every row: a dask array."""
        return self._map(X, "predict", np.int64, None)

    def transform(self, X):
        """Distances of every row to every centroid: a dask array (n x n_clusters), float64
        unless ``X`` is float32."""
        return self._map(X, "transform", self._out_dtype(X), self.n_clusters)

    def score(self, X, y=None):
        """Opposite of the K-Means objective of ``X`` (higher is better): a float, summed
        on the workers."""
        d = self._map(X, "transform", np.float64, self.n_clusters)
        return -float((d.min(axis=1) ** 2).sum().compute())


class PCA(PcaMixin, TransformerMixin, _Distributed):
    """PCA over a dask.array: one map (each partition's count, mean and co-moment), one
    merge (Chan's formulas, float64, partition order), the eigen-problem on a worker.

    Parameters
    ----------
    n_components : int, float, "mle" or None
    whiten : bool, default=False
    solver : {"auto", "full", "power"}, default="auto"
    tol, max_iter, random_state : of the power solver
    devices, client, retries : as for KMeans

    Each partition's moments are taken about its own mean (float64 rows: in float64 on
    the worker), and merged in float64, so data far from 0 keep their digits.
    """

    _parameter_constraints: dict = {
        "n_components": N_COMPONENTS,
        "whiten": ["boolean"],
        "solver": [StrOptions({"auto", "full", "power"})],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        **DISTRIBUTED,
    }

    def __init__(
        self,
        n_components=None,
        *,
        whiten=False,
        solver="auto",
        tol=1e-5,
        max_iter=1000,
        random_state=None,
        devices=None,
        client=None,
        retries=2,
    ):
        self.n_components = n_components
        self.whiten = whiten
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.devices = devices
        self.client = client
        self.retries = retries

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fits the principal axes of the rows of the dask array ``X``."""
        bridge = self._bridge(X)
        parts = bridge.map_blocks(_moments)
        model = bridge.submit(_pca_fit, list(parts), pca_params(self))
        self._set_model(model, bridge.X.dtype)
        self.n_iter_ = max(1, model.n_iter)
        return self

    def transform(self, X):
        """The rows projected on the principal axes: a dask array (float64 unless ``X`` is
        float32)."""
        return self._map(X, "transform", self._out_dtype(X), self.n_components_)

    def inverse_transform(self, X):
        """Rows in the original space from their projections: a dask array (float64 unless
        ``X`` is float32; float64: the mean added in float64)."""
        Z = _rows(X)
        if Z.shape[1] != self.n_components_:
            raise ValueError(
                f"X has {Z.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_components_} components as input"
            )
        method = "inverse_transform_f64" if Z.dtype == np.float64 else "inverse_transform"
        dtype = Z.dtype
        names = None if self.devices is not None else _worker_names(self.client or get_client())
        args = (self._model, method, self.n_features_in_, dtype, self.devices, names)
        return Z.map_blocks(
            _apply, *args, dtype=dtype, chunks=(Z.chunks[0], (self.n_features_in_,)),
            meta=np.empty((0, 0), dtype=dtype),
        )

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)


class GaussianMixture(MixtureMixin, DensityMixin, _Distributed):
    """A Gaussian mixture over a dask.array: each EM iteration one map (the partitions'
    E-step statistics) and one merge on the client.

    Parameters
    ----------
    n_components, covariance_type, tol, reg_covar, max_iter, n_init, weights_init,
    means_init, precisions_init, random_state : as ``wgpu_unsupervised.GaussianMixture``
    init_params : {"kmeans", "k-means++", "random"}, default="kmeans"
        "kmeans" runs the distributed K-Means (k-means++ on a sample) first; "random" draws
        each partition's responsibilities from its own stream.
    devices, client, retries : as for KMeans

    float64 rows are centred on their global mean (one Dask pass) in float64 on the workers
    before the float32 cast; the means come back in the data's units, in float64.
    """

    _parameter_constraints: dict = {
        **MIXTURE_CONSTRAINTS,
        "init_params": [StrOptions({"kmeans", "k-means++", "random"})],
        **DISTRIBUTED,
    }

    def __init__(
        self,
        n_components=1,
        *,
        covariance_type="full",
        tol=1e-3,
        reg_covar=1e-6,
        max_iter=100,
        n_init=1,
        init_params="kmeans",
        weights_init=None,
        means_init=None,
        precisions_init=None,
        random_state=None,
        devices=None,
        client=None,
        retries=2,
    ):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_params = init_params
        self.weights_init = weights_init
        self.means_init = means_init
        self.precisions_init = precisions_init
        self.random_state = random_state
        self.devices = devices
        self.client = client
        self.retries = retries

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fits the mixture to the rows of the dask array ``X``."""
        model = self._fit_remote(X, _core.gmm_fit_remote, **self._em_params())
        self._set_model(model)
        return self

    def predict(self, X):
        """The most probable component of every row: a dask array."""
        return self._map(X, "predict", np.int64, None)

    def predict_proba(self, X):
        """p(component | row): a dask array (n x n_components, float64)."""
        return self._map(X, "predict_proba", np.float64, self.n_components)

    def score_samples(self, X):
        """log p(x) of every row: a dask array (float64)."""
        return self._map(X, "score_samples", np.float64, None)

    def score(self, X, y=None):
        """Mean log-likelihood of the rows (a float, summed on the workers)."""
        return float(self.score_samples(X).mean().compute())

    def bic(self, X):
        """Bayesian information criterion on ``X`` (lower is better)."""
        n = _rows(X).shape[0]
        return -2 * self.score(X) * n + self._model.n_parameters * np.log(n)

    def aic(self, X):
        """Akaike information criterion on ``X`` (lower is better)."""
        n = _rows(X).shape[0]
        return -2 * self.score(X) * n + 2 * self._model.n_parameters

    def sample(self, n_samples=1):
        """``n_samples`` draws from the mixture (numpy arrays on the client: X grouped by
        component, and the components), from ``random_state``."""
        check_is_fitted(self)
        if not (isinstance(n_samples, Integral) and n_samples >= 1):
            raise ValueError(f"Invalid value for 'n_samples': {n_samples!r} (at least 1)")
        return self._model.sample(int(n_samples), seed_of(self.random_state))
