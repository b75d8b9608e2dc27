"""The estimators against scikit-learn on real data, and the package's own promises:
inputs taken as they are, errors with the library's message, pickling, devices, the GIL
released while the GPU works."""

import os
import pickle
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from sklearn import cluster as skc
from sklearn import decomposition as skd
from sklearn import metrics as skm
from sklearn import mixture as skx

import wgpu_unsupervised as wu
from wgpu_unsupervised import metrics as wm


def test_kmeans_matches_scikit_learn_on_iris_from_the_same_start(iris):
    X, y = iris
    start, _ = skc.kmeans_plusplus(X.astype(np.float64), 3, random_state=0)
    ours = wu.KMeans(3, init=start, n_init=1, tol=1e-6).fit(X)
    ref = skc.KMeans(3, init=start, n_init=1, tol=1e-6).fit(X.astype(np.float64))
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-5)
    assert ours.n_iter_ == ref.n_iter_
    assert ours.cluster_centers_.dtype == np.float32
    assert wm.adjusted_rand_score(y, ours.labels_) > 0.7


def test_kmeans_fixed_iterations_runs_every_iteration(iris):
    X, _ = iris
    start, _ = skc.kmeans_plusplus(X.astype(np.float64), 3, random_state=1)
    early = wu.KMeans(3, init=start, n_init=1, max_iter=50).fit(X)
    fixed = wu.KMeans(3, init=start, n_init=1, max_iter=50, fixed_iterations=True).fit(X)
    assert early.n_iter_ < 50
    assert fixed.n_iter_ == 50
    np.testing.assert_array_equal(fixed.labels_, early.labels_)
    assert fixed.inertia_ == pytest.approx(early.inertia_, rel=1e-5)
    with pytest.raises(ValueError):
        wu.KMeans(3, fixed_iterations="yes").fit(X)


def test_kmeans_finds_what_scikit_learn_finds_on_digits(digits):
    X, y = digits
    ours = wu.KMeans(10, n_init=4, random_state=1).fit(X)
    ref = skc.KMeans(10, n_init=4, random_state=1).fit(X)
    # Different random streams: the same quality, not the same optimum.
    assert ours.inertia_ <= 1.02 * ref.inertia_
    np.testing.assert_array_equal(ours.predict(X), ours.labels_)
    assert skm.adjusted_rand_score(y, ours.labels_) > 0.55
    d = ours.transform(X)
    np.testing.assert_allclose(d.min(axis=1) ** 2, ((X - ours.cluster_centers_[ours.labels_]) ** 2).sum(1), rtol=1e-3, atol=1e-2)
    assert ours.score(X) == pytest.approx(-ours.inertia_, rel=1e-4)


def test_pca_matches_scikit_learn_on_digits(digits):
    X, _ = digits
    ours = wu.PCA(n_components=10).fit(X)
    ref = skd.PCA(n_components=10, svd_solver="full").fit(X.astype(np.float64))
    np.testing.assert_allclose(ours.explained_variance_, ref.explained_variance_, rtol=1e-4)
    np.testing.assert_allclose(ours.explained_variance_ratio_, ref.explained_variance_ratio_, rtol=1e-4)
    np.testing.assert_allclose(ours.mean_, ref.mean_, rtol=1e-5, atol=1e-5)
    # The same axes up to sign.
    dots = np.abs(np.sum(ours.components_ * ref.components_, axis=1))
    np.testing.assert_allclose(dots, 1.0, atol=1e-4)
    signs = np.sign(np.sum(ours.components_ * ref.components_, axis=1))
    np.testing.assert_allclose(ours.transform(X) * signs, ref.transform(X), rtol=1e-3, atol=2e-3)
    assert ours.score(X) == pytest.approx(ref.score(X), rel=1e-4)
    np.testing.assert_allclose(ours.get_covariance(), ref.get_covariance(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("n_components", [0.9, "mle", None])
def test_pca_component_choices_match_scikit_learn(digits, n_components):
    X, _ = digits
    ours = wu.PCA(n_components=n_components).fit(X)
    ref = skd.PCA(n_components=n_components, svd_solver="full").fit(X.astype(np.float64))
    assert ours.n_components_ == ref.n_components_


def test_pca_whitening_and_inverse(iris):
    X, _ = iris
    p = wu.PCA(n_components=2, whiten=True).fit(X)
    Z = p.transform(X)
    np.testing.assert_allclose(np.var(Z, axis=0, ddof=1), 1.0, rtol=1e-4)
    back = wu.PCA(n_components=4).fit(X)
    np.testing.assert_allclose(back.inverse_transform(back.transform(X)), X, atol=1e-4)


def test_incremental_pca_is_exact(digits):
    X, _ = digits
    inc = wu.IncrementalPCA(n_components=8)
    for chunk in np.array_split(X, 5):
        inc.partial_fit(chunk)
    full = wu.PCA(n_components=8).fit(X)
    assert inc.n_samples_seen_ == len(X)
    np.testing.assert_allclose(inc.explained_variance_, full.explained_variance_, rtol=1e-4)
    again = pickle.loads(pickle.dumps(inc)).partial_fit(X[:10])
    assert again.n_samples_seen_ == len(X) + 10


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # tol=0 on purpose
@pytest.mark.parametrize("covariance_type", ["full", "tied", "diag", "spherical"])
def test_gaussian_mixture_matches_scikit_learn_on_iris_from_the_same_start(iris, covariance_type):
    X, _ = iris
    start = skx.GaussianMixture(3, covariance_type=covariance_type, max_iter=1, random_state=0).fit(X.astype(np.float64))
    given = dict(weights_init=start.weights_, means_init=start.means_, precisions_init=start.precisions_)
    kw = dict(covariance_type=covariance_type, max_iter=20, tol=0.0, **given)
    ours = wu.GaussianMixture(3, **kw).fit(X)
    ref = skx.GaussianMixture(3, **kw).fit(X.astype(np.float64))
    np.testing.assert_allclose(ours.weights_, ref.weights_, rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(ours.means_, ref.means_, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(ours.covariances_, ref.covariances_, rtol=1e-2, atol=2e-3)
    assert ours.covariances_.shape == ref.covariances_.shape
    assert ours.precisions_cholesky_.shape == ref.precisions_cholesky_.shape
    assert ours.lower_bound_ == pytest.approx(ref.lower_bound_, abs=1e-3)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=2e-3)
    np.testing.assert_allclose(ours.score_samples(X), ref.score_samples(X), rtol=1e-3, atol=1e-3)
    assert ours.bic(X) == pytest.approx(ref.bic(X), rel=1e-3)
    assert ours.aic(X) == pytest.approx(ref.aic(X), rel=1e-3)


@pytest.mark.parametrize("init_params", ["kmeans", "k-means++", "random", "random_from_data"])
def test_gaussian_mixture_starts(iris, init_params):
    X, y = iris
    g = wu.GaussianMixture(3, init_params=init_params, random_state=2, n_init=2).fit(X)
    assert np.isfinite(g.lower_bound_) and g.converged_
    samples, components = g.sample(500)
    assert samples.shape == (500, 4) and components.shape == (500,)
    assert np.all(np.diff(components) >= 0)  # grouped by component, as scikit-learn
    np.testing.assert_array_equal(g.fit_predict(X), g.predict(X))


def test_minibatch_kmeans(blobs):
    X, y = blobs
    mb = wu.MiniBatchKMeans(5, batch_size=256, random_state=0).fit(X)
    assert skm.adjusted_rand_score(y, mb.labels_) > 0.99
    inc = wu.MiniBatchKMeans(5, random_state=0)
    for chunk in np.array_split(X, 10):
        inc.partial_fit(chunk)
    assert inc.n_steps_ == 10
    assert skm.adjusted_rand_score(y, inc.predict(X)) > 0.99
    resumed = pickle.loads(pickle.dumps(inc)).partial_fit(X[:300])
    assert resumed.cluster_centers_.shape == (5, 6)


def test_spectral_clustering_separates_moons():
    from sklearn.datasets import make_moons

    X, y = make_moons(400, noise=0.05, random_state=0)
    s = wu.SpectralClustering(2, affinity="nearest_neighbors", n_neighbors=10, random_state=0).fit(X)
    assert skm.adjusted_rand_score(y, s.labels_) > 0.99
    assert wu.KMeans(2, random_state=0).fit(X).inertia_ > 0  # K-Means cannot (not asserted)


def test_metrics_match_scikit_learn(iris):
    X, y = iris
    labels = wu.KMeans(3, random_state=0).fit(X).labels_
    names = np.array(["setosa", "versicolor", "virginica"])[y]  # any label values
    assert wm.silhouette_score(X, labels) == pytest.approx(skm.silhouette_score(X, labels), rel=1e-4)
    np.testing.assert_allclose(wm.silhouette_samples(X, labels), skm.silhouette_samples(X, labels), rtol=1e-3, atol=1e-4)
    D = skm.pairwise_distances(X.astype(np.float64))
    assert wm.silhouette_score(D, labels, metric="precomputed") == pytest.approx(
        skm.silhouette_score(D, labels, metric="precomputed"), rel=1e-9)
    assert wm.calinski_harabasz_score(X, labels) == pytest.approx(skm.calinski_harabasz_score(X, labels), rel=1e-4)
    assert wm.davies_bouldin_score(X, labels) == pytest.approx(skm.davies_bouldin_score(X, labels), rel=1e-4)
    for name in ["rand_score", "adjusted_rand_score", "mutual_info_score", "normalized_mutual_info_score",
                 "adjusted_mutual_info_score", "homogeneity_score", "completeness_score",
                 "v_measure_score", "fowlkes_mallows_score"]:
        ours = getattr(wm, name)(names, labels)
        ref = getattr(skm, name)(names, labels)
        assert ours == pytest.approx(ref, rel=1e-9, abs=1e-12), name
    assert wm.normalized_mutual_info_score(names, labels, average_method="geometric") == pytest.approx(
        skm.normalized_mutual_info_score(names, labels, average_method="geometric"), rel=1e-9)
    assert wm.silhouette_score(X, labels, sample_size=100, random_state=0) > 0.4


def test_inputs_are_taken_as_they_are(iris, tmp_path):
    X, _ = iris
    ref = wu.KMeans(3, random_state=0).fit(X)
    X64 = X.astype(np.float64)
    fortran = np.asfortranarray(X)
    readonly = X.copy()
    readonly.flags.writeable = False
    np.save(tmp_path / "x.npy", X)
    mapped = np.load(tmp_path / "x.npy", mmap_mode="r")
    for data in [X64, fortran, readonly, mapped]:
        km = wu.KMeans(3, random_state=0).fit(data)
        np.testing.assert_allclose(km.cluster_centers_, ref.cluster_centers_, rtol=1e-6)
        assert km.cluster_centers_.dtype == np.asarray(data).dtype
        assert km.transform(data).dtype == np.asarray(data).dtype
    # No copy where none is needed: read-only and mapped float32 C-order rows go as they are.
    from wgpu_unsupervised._base import as_f32

    assert np.shares_memory(as_f32(readonly), readonly)
    assert np.shares_memory(as_f32(mapped), mapped)
    assert not np.shares_memory(as_f32(fortran), fortran)


def test_library_errors_arrive_as_value_and_runtime_errors(iris):
    X, _ = iris
    with pytest.raises(ValueError, match="k = 200 is larger than the number of samples n = 150"):
        wu.KMeans(200).fit(X)
    # Parameters are checked by scikit-learn's machinery, naming the parameter.
    with pytest.raises(ValueError, match="'covariance_type' parameter of GaussianMixture"):
        wu.GaussianMixture(2, covariance_type="banana").fit(X)
    with pytest.raises(ValueError, match="'tol' parameter of GaussianMixture"):
        wu.GaussianMixture(2, tol=-1.0).fit(X)
    with pytest.raises(ValueError, match="feature count mismatch|expecting 4 features"):
        wu.KMeans(3, random_state=0).fit(X).predict(X[:, :3])
    with pytest.raises(RuntimeError, match="no GPU adapter found"):
        wu.KMeans(3, device="no-such-adapter").fit(X)


def test_estimators_pickle_with_their_models(iris):
    X, _ = iris
    for est in [wu.KMeans(3, random_state=0), wu.MiniBatchKMeans(3, random_state=0),
                wu.PCA(2), wu.GaussianMixture(3, covariance_type="diag", random_state=0)]:
        est.fit(X)
        back = pickle.loads(pickle.dumps(est))
        method = "transform" if hasattr(est, "transform") else "predict"
        np.testing.assert_array_equal(getattr(back, method)(X), getattr(est, method)(X))


def test_same_seed_same_model_and_devices(iris):
    X, _ = iris
    a = wu.KMeans(3, init="k-means||", random_state=5, n_init=3).fit(X)
    b = wu.KMeans(3, init="k-means||", random_state=5, n_init=3, device=0).fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    listed = wu.adapters()
    assert listed and listed[0]["index"] == 0
    name = listed[0]["name"].split()[0]
    c = wu.KMeans(3, init="k-means||", random_state=5, n_init=3, device=name).fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, c.cluster_centers_)
    assert wu.device(0).name == listed[0]["name"]


def test_weights_equal_repeated_rows_from_a_given_start(iris):
    X, _ = iris
    w = np.random.default_rng(0).integers(0, 3, size=len(X))
    repeated = np.repeat(X, w, axis=0)
    start = X[[0, 60, 120]].astype(np.float64)
    a = wu.KMeans(3, init=start, tol=0.0).fit(X, sample_weight=w)
    b = wu.KMeans(3, init=start, tol=0.0).fit(repeated)
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-5, atol=1e-5)
    assert a.inertia_ == pytest.approx(b.inertia_, rel=1e-5)
    g = dict(means_init=start, weights_init=[1 / 3] * 3, precisions_init=np.ones((3, 4)), covariance_type="diag", tol=0.0, max_iter=10)
    ga = wu.GaussianMixture(3, **g).fit(X, sample_weight=w)
    gb = wu.GaussianMixture(3, **g).fit(repeated)
    np.testing.assert_allclose(ga.means_, gb.means_, rtol=1e-4, atol=1e-4)


def test_cosine_kmeans(digits):
    X, y = digits
    km = wu.KMeans(10, metric="cosine", random_state=0, n_init=2).fit(X)
    norms = np.linalg.norm(km.cluster_centers_, axis=1)
    np.testing.assert_allclose(norms, 1.0, rtol=1e-4)
    assert skm.adjusted_rand_score(y, km.labels_) > 0.5


def test_kmeans_plusplus_seeds(iris):
    X, _ = iris
    centers, idx = wu.kmeans_plusplus(X, 3, random_state=0)
    np.testing.assert_array_equal(centers, X[idx])
    assert len(set(idx.tolist())) == 3


def test_the_gil_is_released_while_the_gpu_works(digits):
    X, _ = digits
    X = np.tile(X, (2, 1))

    def spin(until):
        ticks = 0
        while not until():
            ticks += 1
        return ticks

    # The loop's own pace, alone.
    began = time.perf_counter()
    alone = spin(lambda: time.perf_counter() - began > 0.3) / 0.3
    done = threading.Event()

    def fit():
        # Fits for at least 0.6 s, however fast one fit is on this adapter, so that the
        # loop's share below is measured over a long enough time.
        started = time.perf_counter()
        while time.perf_counter() - started < 0.6:
            wu.KMeans(20, random_state=0, tol=0.0, max_iter=20).fit(X)
        done.set()

    t = threading.Thread(target=fit)
    began = time.perf_counter()
    t.start()
    ticks = spin(done.is_set)
    t.join()
    elapsed = time.perf_counter() - began
    # A fit holding the GIL would leave this loop only the moments the fit spends in
    # Python (a few percent); released, the loop keeps a good share of its pace (it shares
    # the CPU with the software driver's threads).
    assert elapsed > 0.5, elapsed
    assert ticks > 0.15 * alone * elapsed, (ticks, alone, elapsed)


QUIET_FIT = """
import numpy as np
import wgpu_unsupervised as wu
X = np.random.default_rng(0).normal(size=(200, 3)).astype(np.float32)
wu.KMeans(2, random_state=0).fit(X)
print(len(wu.adapters()))
"""


def test_a_machine_without_a_display_starts_quietly():
    # The environment of a server or a CI job: no runtime directory, no display, the
    # device-selection layer not configured. Opening the GPU prints nothing on stderr.
    layer = ("NODEVICE_SELECT", "MESA_VK_DEVICE_SELECT", "DRI_PRIME")
    gone = ("XDG_RUNTIME_DIR", "WAYLAND_DISPLAY", "WAYLAND_SOCKET") + layer
    env = {k: v for k, v in os.environ.items() if k not in gone}
    env.pop("MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE", None)
    run = subprocess.run(
        [sys.executable, "-c", QUIET_FIT], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == "", run.stderr
    assert int(run.stdout) >= 1
    # A user's own setting of the layer is left as it is.
    env["NODEVICE_SELECT"] = "0"
    check = "import os, wgpu_unsupervised; print(os.environ['NODEVICE_SELECT'])"
    run = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True)
    assert run.stdout.strip() == "0", run.stderr
