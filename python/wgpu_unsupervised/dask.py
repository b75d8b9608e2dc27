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

import functools
import re
import zlib

import dask
import dask.array as da
import numpy as np
from distributed import get_client, get_worker
from sklearn.base import BaseEstimator, ClusterMixin, DensityMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._base import as_f32, seed_of
from .cluster import init_args
from .decomposition import PcaMixin, pca_params
from .mixture import MixtureMixin

__all__ = ["KMeans", "PCA", "GaussianMixture", "release_sessions"]

# Test hooks (None in normal use): called with (kind, key) at the start of every map task
# on a worker, and with the round number before every round of requests on the client.
_fault_hook = None
_round_hook = None


# --- worker side ---------------------------------------------------------------------


def _worker_index(worker, names) -> int:
    name = worker.name
    if isinstance(name, int):
        return name
    text = str(name)
    if text.isdigit():
        return int(text)
    tail = re.search(r"-(\d+)$", text)
    if tail:
        return int(tail.group(1))
    if names and text in names:
        return names.index(text)
    return zlib.crc32(text.encode())


def _worker_device(devices, names):
    """This worker's device: from the explicit mapping, else by the worker's index."""
    worker = get_worker()
    if devices is not None:
        for key in (worker.name, str(worker.name), worker.address):
            if key in devices:
                return _core.device(devices[key])
        raise ValueError(
            f"devices names no adapter for worker {worker.name!r} ({worker.address})"
        )
    return _core.device(_adapter_of(_worker_index(worker, names)))


@functools.lru_cache(maxsize=None)
def _adapter_of(index: int) -> int:
    """The adapter of the worker numbered ``index`` (listing adapters once per process)."""
    return _core.worker_adapter(index)


def _answer(block, key, kind, request, devices, names):
    """One partition's reply to one request (a map task)."""
    if _fault_hook is not None:
        _fault_hook(kind, key)
    device = _worker_device(devices, names)
    return _core.partition_answer(device, key, as_f32(block), kind, request)


def _seed(candidates, weights, k, seed, devices, names):
    device = _worker_device(devices, names)
    return _core.seed_candidates(device, as_f32(candidates), as_f32(weights), k, seed)


def _moments(block, devices, names):
    device = _worker_device(devices, names)
    return _core.Moments.of(device, as_f32(block)).to_bytes()


def _pca_fit(parts, params, devices, names):
    first, *rest = [_core.Moments.from_bytes(b) for b in parts]
    merged = first.merged(rest)
    return merged.fit(_worker_device(devices, names), **params)


def _apply(block, model, method, width, dtype, devices, names):
    """A fitted model's ``method`` (predict, transform, ...) on one block; ``width`` is the
    number of output columns (None: one value per row)."""
    x = as_f32(block)
    if x.shape[0] == 0:
        return np.empty((0,) if width is None else (0, width), dtype=dtype)
    return getattr(model, method)(_worker_device(devices, names), x)


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
    """``X`` as a float32 dask array with one chunk along the features, persisted."""
    if not isinstance(X, da.Array):
        X = da.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D dask array, got {X.ndim} dimension(s)")
    if X.dtype != np.float32:
        X = X.astype(np.float32)
    if len(X.chunks[1]) != 1:
        X = X.rechunk({1: -1})
    return X


class _Bridge:
    """The library's bridge to the partitions: one Dask task per partition and request."""

    def __init__(self, client, X: da.Array, devices, retries: int):
        self.client = client
        self.X = client.persist(X)
        blocks = self.X.to_delayed().ravel()
        keys = [str(b.key) for b in blocks]
        sizes = list(self.X.chunks[0])
        kept = [i for i, s in enumerate(sizes) if s > 0]
        self.blocks = [blocks[i] for i in kept]
        self.keys = [keys[i] for i in kept]
        self.sizes = [sizes[i] for i in kept]
        self.d = int(self.X.shape[1])
        self.devices = devices
        self.names = _worker_names(client)
        self.retries = retries
        self.rounds = 0

    def run(self, kind, requests):
        self.rounds += 1
        if _round_hook is not None:
            _round_hook(self.rounds)
        tasks = [
            dask.delayed(_answer, pure=True)(
                self.blocks[p], self.keys[p], kind, request, self.devices, self.names
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
        tasks = [dask.delayed(fn, pure=True)(b, *args, self.devices, self.names) for b in self.blocks]
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

    def _bridge(self, X):
        client = self.client or get_client()
        X = _rows(X)
        bridge = _Bridge(client, X, self.devices, self.retries)
        if not bridge.sizes:
            raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required")
        self.n_features_in_ = bridge.d
        return bridge

    def _fit_remote(self, X, fit, **params):
        """The library's remote ``fit`` (``kmeans_fit_remote``, ``gmm_fit_remote``) over the
        partitions of ``X`` with ``params``; the sessions released, the training labels (a
        dask array chunked as ``X``) and the rounds of requests set."""
        bridge = self._bridge(X)
        try:
            model = fit(bridge, bridge.sizes, bridge.d, **params)
        finally:
            bridge.release()
        self._model = model
        self.labels_ = da.from_array(model.labels, chunks=(bridge.X.chunks[0],))
        self.n_rounds_ = bridge.rounds
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
    cluster_centers_, labels_ (a dask array), inertia_, n_iter_, n_features_in_
    """

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

    def fit(self, X, y=None):
        """Clusters the rows of the dask array ``X``."""
        name, centroids = init_args(self.init)
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
        self.cluster_centers_ = model.cluster_centers
        self.inertia_ = model.inertia
        self.n_iter_ = model.n_iter
        return self

    def predict(self, X):
        """Nearest centroid of every row: a dask array."""
        return self._map(X, "predict", np.int64, None)

    def transform(self, X):
        """Distances of every row to every centroid: a dask array (n x n_clusters)."""
        return self._map(X, "transform", np.float32, self.n_clusters)


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
    """

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

    def fit(self, X, y=None):
        """Fits the principal axes of the rows of the dask array ``X``."""
        bridge = self._bridge(X)
        parts = bridge.map_blocks(_moments)
        model = bridge.submit(_pca_fit, list(parts), pca_params(self))
        self._set_model(model)
        return self

    def transform(self, X):
        """The rows projected on the principal axes: a dask array."""
        return self._map(X, "transform", np.float32, self.n_components_)

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
    """

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

    def fit(self, X, y=None):
        """Fits the mixture to the rows of the dask array ``X``."""
        model = self._fit_remote(X, _core.gmm_fit_remote, **self._em_params())
        self._set_model(model)
        return self

    def predict(self, X):
        """The most probable component of every row: a dask array."""
        return self._map(X, "predict", np.int64, None)

    def predict_proba(self, X):
        """p(component | row): a dask array (n x n_components)."""
        return self._map(X, "predict_proba", np.float32, self.n_components)

    def score_samples(self, X):
        """log p(x) of every row: a dask array."""
        return self._map(X, "score_samples", np.float32, None)
