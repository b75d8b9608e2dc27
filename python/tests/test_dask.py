"""Distributed fits on a local Dask cluster of two worker processes: equal to the
single-process fits, sessions that keep rows and never use stale ones, and faults (a
worker killed mid-fit, a map task failing once) that leave the model unchanged."""

import os
import signal
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="wgpu_unsupervised.dask needs dask[array]")
distributed = pytest.importorskip("distributed", reason="wgpu_unsupervised.dask needs distributed")

import wgpu_unsupervised as wu  # noqa: E402
from wgpu_unsupervised import _core  # noqa: E402
from wgpu_unsupervised import _dask_workers as wdw  # noqa: E402
from wgpu_unsupervised import dask as wd  # noqa: E402

CHUNK = 300  # rows per partition: Digits (1797 rows) in 6 partitions


@pytest.fixture(scope="module")
def client():
    # Two software devices share two cores: one thread each keeps them from fighting.
    os.environ.setdefault("LP_NUM_THREADS", "1")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture
def healthy(client):
    """Two workers before and after the test, and no hooks left behind."""
    client.wait_for_workers(2, timeout=120)
    yield client
    wd._round_hook = None
    client.run(_clear_fault_hook)
    client.wait_for_workers(2, timeout=120)


def _clear_fault_hook():
    wdw._fault_hook = None


def _sessions(client):
    return client.run(_core.partition_sessions)


def _total(stats, field):
    return sum(s[field] for s in stats.values())


def test_kmeans_equals_the_single_process_fit(healthy, digits):
    X, _ = digits
    start = X[[0, 100, 200, 300, 400, 500, 600, 700, 800, 900]].astype(np.float64)
    before = _sessions(healthy)
    dist = wd.KMeans(10, init=start, tol=1e-6).fit(da.from_array(X, chunks=(CHUNK, 64)))
    after = _sessions(healthy)
    single = wu.KMeans(10, init=start, tol=1e-6).fit(X)
    assert dist.n_iter_ == single.n_iter_ > 5
    np.testing.assert_allclose(dist.cluster_centers_, single.cluster_centers_, rtol=1e-4, atol=1e-4)
    assert dist.inertia_ == pytest.approx(single.inertia_, rel=1e-5)
    # The labels stay on the workers: a lazy dask array over the persisted rows.
    assert isinstance(dist.labels_, da.Array)
    labels = dist.labels_.compute()
    assert np.sum(labels != single.labels_) <= 2
    # One map and one reduction per iteration: the tolerance pass, the iterations and the
    # last labelling pass (no round gathers the labels).
    assert dist.n_rounds_ == 1 + 1 + dist.n_iter_ + 1
    # Each partition's rows went up once on the worker that ran its tasks (Dask's work
    # stealing may move a task once to the other worker, which then uploads it there);
    # every later request reused them; all were released at the end.
    uploads = _total(after, "uploads") - _total(before, "uploads")
    reuses = _total(after, "reuses") - _total(before, "reuses")
    assert 6 <= uploads <= 12, uploads
    assert uploads + reuses == 6 * dist.n_rounds_ - 5  # the tolerance pass's row 0: one partition
    assert reuses >= 5 * uploads
    assert all(not s["keys"] for s in after.values())


def test_kmeans_parallel_start_is_deterministic_and_good(healthy, digits):
    X, y = digits
    Xd = da.from_array(X, chunks=(CHUNK, 64))
    a = wd.KMeans(10, random_state=3).fit(Xd)
    b = wd.KMeans(10, random_state=3, init_max_iter=5, oversampling_factor=2.0).fit(
        da.from_array(X, chunks=(CHUNK, 64))
    )
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    single = wu.KMeans(10, random_state=3, n_init=1).fit(X)
    assert a.inertia_ <= 1.05 * single.inertia_
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(y, a.labels_.compute()) > 0.5
    pred = a.predict(Xd)
    assert isinstance(pred, da.Array)
    np.testing.assert_array_equal(pred.compute(), a.labels_.compute())
    dist = a.transform(Xd)
    assert isinstance(dist, da.Array) and dist.shape == (len(X), 10)
    np.testing.assert_allclose(dist.compute(), a._model.transform(wu.device(), X), rtol=1e-6)


def test_pca_equals_the_single_process_fit(healthy, digits):
    X, _ = digits
    Xd = da.from_array(X, chunks=(CHUNK, 64))
    dist = wd.PCA(n_components=8).fit(Xd)
    single = wu.PCA(n_components=8).fit(X)
    np.testing.assert_allclose(dist.explained_variance_, single.explained_variance_, rtol=1e-5)
    np.testing.assert_allclose(dist.mean_, single.mean_, rtol=1e-5, atol=1e-6)
    signs = np.sign(np.sum(dist.components_ * single.components_, axis=1))
    np.testing.assert_allclose(dist.components_ * signs[:, None], single.components_, atol=1e-4)
    Z = dist.transform(Xd)
    assert isinstance(Z, da.Array)
    np.testing.assert_allclose(Z.compute() * signs, single.transform(X), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_gaussian_mixture_equals_the_single_process_fit(healthy, iris, covariance_type):
    X, _ = iris
    start = wu.GaussianMixture(3, covariance_type=covariance_type, max_iter=1, random_state=0).fit(X)
    given = dict(
        weights_init=start.weights_, means_init=start.means_, precisions_init=start.precisions_
    )
    kw = dict(covariance_type=covariance_type, max_iter=15, tol=0.0, **given)
    dist = wd.GaussianMixture(3, **kw).fit(da.from_array(X, chunks=(40, 4)))
    single = wu.GaussianMixture(3, **kw).fit(X)
    assert dist.n_iter_ == single.n_iter_ == 15
    np.testing.assert_allclose(dist.means_, single.means_, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(dist.covariances_, single.covariances_, rtol=1e-2, atol=1e-3)
    assert dist.lower_bound_ == pytest.approx(single.lower_bound_, abs=1e-4)
    proba = dist.predict_proba(da.from_array(X, chunks=(40, 4)))
    assert isinstance(proba, da.Array)
    np.testing.assert_allclose(proba.compute(), single.predict_proba(X), atol=1e-3)


def test_stale_rows_under_a_known_key_are_never_used(healthy, monkeypatch, digits):
    X, _ = digits
    X = X[:600]
    other = (X[::-1] * 0.5 + 1.0).astype(np.float32)
    monkeypatch.setattr(wd._Bridge, "release", lambda self: None)  # keep the sessions
    start = X[:4].astype(np.float64)
    try:
        wd.KMeans(4, init=start).fit(da.from_array(X, chunks=(CHUNK, 64), name="same-name"))
        before = _sessions(healthy)
        # The same Dask keys, other rows: the sessions must be rebuilt, not reused.
        dist = wd.KMeans(4, init=start).fit(da.from_array(other, chunks=(CHUNK, 64), name="same-name"))
        after = _sessions(healthy)
    finally:
        wd.release_sessions(healthy)
    single = wu.KMeans(4, init=start).fit(other)
    np.testing.assert_allclose(dist.cluster_centers_, single.cluster_centers_, rtol=1e-4, atol=1e-4)
    # Each partition was uploaded again on whichever worker ran it: replacing the stale
    # session there, or new where that worker had none. (test_session.py checks the
    # replacement itself, deterministically.)
    fresh = sum(_total(after, f) - _total(before, f) for f in ("replaced", "uploads"))
    assert fresh >= 2


def test_a_worker_killed_mid_fit_gives_the_same_model(healthy, digits):
    X, _ = digits
    calm = wd.KMeans(10, random_state=7, tol=0.0, max_iter=12).fit(da.from_array(X, chunks=(CHUNK, 64)))
    victim = sorted(healthy.scheduler_info()["workers"])[0]
    pid = healthy.run(os.getpid)[victim]
    killed = []
    at = calm.n_rounds_ - 6  # in the Lloyd iterations, after the k-means|| start

    def kill(round_):
        if round_ == at and not killed:
            os.kill(pid, signal.SIGKILL)
            killed.append(time.time())

    wd._round_hook = kill
    disturbed = wd.KMeans(10, random_state=7, tol=0.0, max_iter=12).fit(
        da.from_array(X, chunks=(CHUNK, 64))
    )
    assert killed, "the worker was not killed"
    np.testing.assert_array_equal(disturbed.cluster_centers_, calm.cluster_centers_)
    np.testing.assert_array_equal(disturbed.labels_.compute(), calm.labels_.compute())
    assert (disturbed.inertia_, disturbed.n_iter_) == (calm.inertia_, calm.n_iter_)
    healthy.wait_for_workers(2, timeout=120)
    assert pid not in healthy.run(os.getpid).values()  # a new process took the old one's place


def _fail_once_after(calls):
    """Installs a hook on this worker that raises once, at its `calls`-th map task."""
    state = {"n": 0}

    def hook(kind, key):
        state["n"] += 1
        if state["n"] == calls:
            raise RuntimeError("injected failure")

    wdw._fault_hook = hook


def test_a_task_failing_once_gives_the_same_model(healthy, iris):
    X, _ = iris
    kw = dict(covariance_type="diag", random_state=1, tol=0.0, max_iter=10)
    calm = wd.GaussianMixture(3, **kw).fit(da.from_array(X, chunks=(40, 4)))
    healthy.run(_fail_once_after, 9)
    disturbed = wd.GaussianMixture(3, **kw).fit(da.from_array(X, chunks=(40, 4)))
    np.testing.assert_array_equal(disturbed.means_, calm.means_)
    np.testing.assert_array_equal(disturbed.covariances_, calm.covariances_)
    assert disturbed.lower_bound_ == calm.lower_bound_
    # Without retries the injected failure reaches the caller.
    healthy.run(_fail_once_after, 3)
    with pytest.raises(RuntimeError, match="injected failure"):
        wd.GaussianMixture(3, retries=0, **kw).fit(da.from_array(X, chunks=(40, 4)))


def test_devices_are_chosen_per_worker(healthy, iris):
    X, _ = iris
    Xd = da.from_array(X, chunks=(50, 4))
    by_index = wd.KMeans(3, random_state=0).fit(Xd)
    name = wu.adapters()[0]["name"].split()[0]
    mapped = wd.KMeans(3, random_state=0, devices={0: 0, 1: name}).fit(Xd)
    np.testing.assert_array_equal(by_index.cluster_centers_, mapped.cluster_centers_)
    with pytest.raises(ValueError, match="devices names no adapter"):
        wd.KMeans(3, random_state=0, devices={0: 0}, retries=0).fit(Xd)


def test_bad_input_is_rejected(healthy):
    bad = np.ones((100, 3), dtype=np.float32)
    bad[57, 1] = np.nan
    # The row is the whole array's (57), not the partition's (7).
    for dtype in (np.float32, np.float64):
        Xd = da.from_array(bad.astype(dtype), chunks=(25, 3))
        with pytest.raises(ValueError, match=r"non-finite value \(nan\) at row 57, column 1"):
            wd.KMeans(2, retries=0).fit(Xd)
        with pytest.raises(ValueError, match="at row 57, column 1"):
            wd.PCA(2, retries=0).fit(Xd)
    good = wd.KMeans(2, random_state=0).fit(da.from_array(np.ones((100, 3)) + np.arange(100)[:, None], chunks=(25, 3)))
    with pytest.raises(ValueError, match="at row 57, column 1"):
        good.predict(da.from_array(bad, chunks=(25, 3))).compute()
    with pytest.raises(ValueError, match="Complex data not supported"):
        wd.KMeans(2).fit(da.from_array(bad.astype(complex), chunks=(25, 3)))
    with pytest.raises(ValueError, match="'n_clusters' parameter of KMeans"):
        wd.KMeans(-1).fit(da.from_array(np.ones((10, 2)), chunks=(5, 2)))
    with pytest.raises(ValueError, match="2-D"):
        wd.PCA(2).fit(da.ones(10, chunks=5))


def _offset(X, offset):
    """``X`` in float64 plus a different offset per column (offset times 1, -3, 7, ...)."""
    factors = np.resize([1.0, -3.0, 7.0, 0.5], X.shape[1])
    return X.astype(np.float64) + offset * factors


@pytest.mark.parametrize("offset", [0.0, 1e8])
def test_float64_data_far_from_zero_equal_the_single_process_fits(healthy, iris, offset):
    X = _offset(iris[0], offset)
    Xd = da.from_array(X, chunks=(40, 4))
    start = X[[0, 70, 140]]
    dist = wd.KMeans(3, init=start).fit(Xd)
    single = wu.KMeans(3, init=start).fit(X)
    assert dist.cluster_centers_.dtype == np.float64
    np.testing.assert_allclose(dist.cluster_centers_ - start[0], single.cluster_centers_ - start[0], atol=1e-4)
    assert dist.inertia_ == pytest.approx(single.inertia_, rel=1e-5)
    assert np.sum(dist.labels_.compute() != single.labels_) <= 1
    assert dist.transform(Xd).dtype == np.float64
    g = dict(covariance_type="full", random_state=0, max_iter=20, tol=0.0)
    gd = wd.GaussianMixture(3, init_params="k-means++", **g).fit(Xd)
    gs = wu.GaussianMixture(3, init_params="k-means++", **g).fit(X)
    # The same fit up to where the distributed k-means++ sample starts (it is a sample):
    # the quality of the single-process fit, and the score of its rows.
    assert gd.score(Xd) == pytest.approx(gd.lower_bound_, abs=1e-3)
    assert gd.score(Xd) > gs.score(X) - 0.1
    pd_ = wd.PCA(2).fit(Xd)
    ps = wu.PCA(2).fit(X)
    np.testing.assert_allclose(pd_.explained_variance_, ps.explained_variance_, rtol=1e-5)
    np.testing.assert_allclose(pd_.mean_ - start[0], ps.mean_ - start[0], atol=1e-5)
    back = pd_.inverse_transform(pd_.transform(Xd)).compute()
    np.testing.assert_allclose(back - start[0], ps.inverse_transform(ps.transform(X)) - start[0], atol=1e-3)


def test_mixture_scores_sampling_and_pca_inverse(healthy, iris):
    X, _ = iris
    Xd = da.from_array(X, chunks=(40, 4))
    kw = dict(covariance_type="diag", random_state=2, max_iter=30)
    g = wd.GaussianMixture(3, **kw).fit(Xd)
    score = g.score(Xd)
    local = g._model.score(wu.device(), X)
    assert score == pytest.approx(local, rel=1e-6)
    n, p = len(X), g._model.n_parameters
    assert g.bic(Xd) == pytest.approx(-2 * local * n + p * np.log(n), rel=1e-6)
    assert g.aic(Xd) == pytest.approx(-2 * local * n + 2 * p, rel=1e-6)
    samples, comps = g.sample(500)
    assert samples.shape == (500, 4) and comps.shape == (500,)
    assert np.all(np.bincount(comps, minlength=3) > 0)
    with pytest.raises(ValueError, match="n_samples"):
        g.sample(0)
    pca = wd.PCA(2).fit(Xd)
    Z = pca.transform(Xd)
    back = pca.inverse_transform(Z)
    assert isinstance(back, da.Array) and back.shape == X.shape
    single = wu.PCA(2).fit(X)
    np.testing.assert_allclose(back.compute(), single.inverse_transform(single.transform(X)), atol=1e-3)


def test_the_client_holds_no_value_per_row(healthy, monkeypatch):
    # Every round's replies are statistics of K x D values: their total size does not grow
    # with the rows (the labels stay on the workers, the repair sends K + empty rows).
    sizes = {}

    def record(n_rows):
        run = wd._Bridge.run

        def counting(self, kind, requests):
            replies = run(self, kind, requests)
            sizes[n_rows] = max(sizes.get(n_rows, 0), sum(len(r) for r in replies))
            return replies

        return counting

    rng = np.random.default_rng(0)
    for n in (2_000, 16_000):
        X = np.concatenate([rng.normal(c, 0.5, size=(n // 4, 3)) for c in (-6, -2, 2, 6)])
        # A far centre: its cluster empties and is repaired.
        start = np.vstack([X[[0, n // 2, n - 1]], [[1e3, 1e3, 1e3]]])
        monkeypatch.setattr(wd._Bridge, "run", record(n))
        model = wd.KMeans(4, init=start, max_iter=20).fit(da.from_array(X, chunks=(n // 8, 3)))
        assert isinstance(model.labels_, da.Array)
        assert np.all(np.bincount(model.labels_.compute(), minlength=4) > 0)
    # 16 000 labels and distances alone would be 128 kB.
    assert sizes[16_000] <= 1.1 * sizes[2_000] and sizes[16_000] < 32_000, sizes
