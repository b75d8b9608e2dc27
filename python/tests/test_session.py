"""The extension's distributed-fit machinery without Dask: the library's remote fits driven
through an in-process bridge, and partition sessions that never answer from stale rows."""

import numpy as np
import pytest

import wgpu_unsupervised as wu
from wgpu_unsupervised import _core


class InProcess:
    """The bridge protocol answered in this process: one session per partition."""

    def __init__(self, parts, prefix="part"):
        self.parts = [np.ascontiguousarray(p, dtype=np.float32) for p in parts]
        self.keys = [f"{prefix}-{i}" for i in range(len(parts))]
        self.device = wu.device()
        self.recorded = []

    def run(self, kind, requests):
        self.recorded.append((kind, requests))
        return [
            _core.partition_answer(self.device, self.keys[p], self.parts[p], kind, r)
            for p, r in requests
        ]

    def seed(self, candidates, weights, k, seed):
        return _core.seed_candidates(self.device, candidates, weights, k, seed)


def kmeans_remote(bridge, **kw):
    params = dict(n_clusters=3, init="k-means||", init_centroids=None, n_init=1, max_iter=100,
                  tol=1e-4, seed=0, oversampling=2.0, rounds=5)
    params.update(kw)
    sizes = [len(p) for p in bridge.parts]
    return _core.kmeans_fit_remote(bridge, sizes, bridge.parts[0].shape[1], **params)


def test_remote_kmeans_through_a_bridge_equals_the_local_fit(iris):
    X, _ = iris
    start = X[[0, 70, 140]].astype(np.float64)
    bridge = InProcess(np.array_split(X, 4), prefix="equal")
    remote = kmeans_remote(bridge, init="given", init_centroids=start)
    local = wu.KMeans(3, init=start).fit(X)
    np.testing.assert_allclose(remote.cluster_centers, local.cluster_centers_, rtol=1e-5, atol=1e-5)
    # The labels stay with the partitions: the driver's model has none, and predicting the
    # partitions' rows gives the local fit's.
    assert remote.labels.size == 0
    np.testing.assert_array_equal(remote.predict(wu.device(), X), local.labels_)
    _core.partition_release(bridge.keys)


def test_an_exception_in_the_bridge_reaches_the_caller(iris):
    X, _ = iris

    class Broken(InProcess):
        def run(self, kind, requests):
            if len(self.recorded) == 3:
                raise KeyError("the engine broke")
            return super().run(kind, requests)

    with pytest.raises(KeyError, match="the engine broke"):
        kmeans_remote(Broken(np.array_split(X, 2), prefix="broken"))


def test_a_session_never_answers_from_stale_rows(iris):
    X, _ = iris
    bridge = InProcess([X], prefix="stale")
    kmeans_remote(bridge)
    kind, requests = next((k, r) for k, r in bridge.recorded if len(r) == 1 and k == "kmeans")
    request = requests[0][1]
    dev = wu.device()
    a = np.ascontiguousarray(X)
    b = np.ascontiguousarray(X[::-1] + 1.0)
    before = _core.partition_sessions()
    reply_a = _core.partition_answer(dev, "stale-key", a, kind, request)
    assert _core.partition_answer(dev, "stale-key", a, kind, request) == reply_a
    reply_b = _core.partition_answer(dev, "stale-key", b, kind, request)
    fresh_b = _core.partition_answer(dev, "fresh-key", b, kind, request)
    after = _core.partition_sessions()
    assert reply_b == fresh_b != reply_a
    assert after["replaced"] - before["replaced"] == 1
    assert after["reuses"] - before["reuses"] == 1
    # Rows with one value changed are other rows too.
    c = a.copy()
    c[17, 2] += 1.0
    _core.partition_answer(dev, "stale-key", c, kind, request)
    assert _core.partition_sessions()["replaced"] - after["replaced"] == 1
    assert _core.partition_release(["stale-key", "fresh-key"]) == 2
    assert "stale-key" not in _core.partition_sessions()["keys"]


def test_a_request_that_is_not_one_is_a_value_error(iris):
    X, _ = iris
    with pytest.raises(ValueError, match="not one"):
        _core.partition_answer(wu.device(), "junk", np.ascontiguousarray(X), "kmeans", b"\xff\xff")
    with pytest.raises(ValueError, match="unknown request kind"):
        _core.partition_answer(wu.device(), "junk", np.ascontiguousarray(X), "nope", b"")
