"""The Python surface fuzzed with Hypothesis, as the library's readers are fuzzed with
proptest: random parameters (valid or not: negative, zero, float, None, strings, booleans,
NaN) and random arrays (empty, one row, NaN, inf, huge, tiny, integer or float32 or float64)
must give a model or scikit-learn's exceptions (ValueError, TypeError; InvalidParameterError
is both), never a panic, an OverflowError or any other exception. Cases are bounded so that
the whole file runs in well under a minute on lavapipe."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import wgpu_unsupervised as wu

#: Values a parameter may be given: valid ones (small counts, half the draws) and every kind
#: of invalid one.
ANY_VALUE = st.one_of(
    st.integers(1, 6),
    st.sampled_from([None, "auto", "full", "diag", "rbf", "k-means++", 0.5, 1e-3]),
    st.integers(-3, 12),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.none(),
    st.booleans(),
    st.sampled_from(["auto", "full", "banana", "", "k-means++", "random", "diag", "rbf"]),
)

#: The parameters fuzzed per estimator (the counts and choices a user sets).
PARAMS = {
    wu.KMeans: ["n_clusters", "n_init", "max_iter", "tol", "init", "metric", "init_rounds"],
    wu.MiniBatchKMeans: ["n_clusters", "batch_size", "max_iter", "init_size", "reassignment_ratio"],
    wu.PCA: ["n_components", "whiten", "solver", "tol", "max_iter"],
    wu.IncrementalPCA: ["n_components", "whiten", "batch_size"],
    wu.GaussianMixture: ["n_components", "covariance_type", "tol", "reg_covar", "max_iter", "n_init"],
    wu.SpectralClustering: ["n_clusters", "affinity", "gamma", "n_neighbors", "n_init"],
}

#: Arrays a user may hand over: any small shape, any of the dtypes scikit-learn takes, any
#: values float64 holds.
ARRAYS = st.one_of(
    hnp.arrays(
        dtype=st.sampled_from([np.float32, np.float64]),
        shape=hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=12),
        elements=st.floats(allow_nan=True, allow_infinity=True, width=32),
    ),
    hnp.arrays(
        dtype=np.float64,
        shape=st.tuples(st.integers(1, 40), st.integers(1, 5)),
        elements=st.floats(-1e300, 1e300, width=64),
    ),
    hnp.arrays(dtype=np.int64, shape=st.tuples(st.integers(1, 30), st.integers(1, 4)),
               elements=st.integers(-(2**40), 2**40)),
)

FUZZ = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)


def accepted(call):
    """``call()``: a result, or scikit-learn's kinds of exception, never another."""
    try:
        return call()
    except (ValueError, TypeError) as e:
        assert "internal error" not in str(e), e
        return None
    except Exception as e:  # noqa: BLE001 - the point: no other exception may come out
        pytest.fail(f"{type(e).__name__}: {e}")


def blob_data():
    rng = np.random.default_rng(0)
    return np.vstack([rng.normal(c, 0.3, size=(20, 3)) for c in (-3, 0, 3)])


@pytest.mark.parametrize("cls", list(PARAMS), ids=lambda c: c.__name__)
def test_random_parameters_give_a_model_or_scikit_learns_errors(cls):
    X = blob_data()
    fitted = []

    @FUZZ
    @given(st.data())
    def case(data):
        names = data.draw(st.lists(st.sampled_from(PARAMS[cls]), min_size=1, max_size=2, unique=True))
        params = {name: data.draw(ANY_VALUE, label=name) for name in names}
        est = cls(**params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # init_size below n_clusters
            if accepted(lambda: est.fit(X)) is None:
                return
        fitted.append(params)
        for method in ("predict", "transform", "score"):
            if hasattr(est, method):
                accepted(lambda m=method: getattr(est, m)(X[:7]))

    case()
    # Not only refusals: some of the random parameters were valid and fitted.
    assert len(fitted) >= 3, fitted


@pytest.mark.parametrize(
    "make",
    [
        lambda: wu.KMeans(2, random_state=0),
        lambda: wu.MiniBatchKMeans(2, random_state=0, batch_size=8),
        lambda: wu.PCA(1),
        lambda: wu.GaussianMixture(1, random_state=0),
        lambda: wu.SpectralClustering(2, random_state=0, n_init=1),
    ],
    ids=["KMeans", "MiniBatchKMeans", "PCA", "GaussianMixture", "SpectralClustering"],
)
def test_random_arrays_give_a_model_or_scikit_learns_errors(make):
    models = []

    @FUZZ
    @given(ARRAYS)
    def case(X):
        before = X.copy()
        est = make()
        fitted = accepted(lambda: est.fit(X))
        if fitted is not None:
            models.append(X.shape)
        # The caller's array is never changed.
        np.testing.assert_array_equal(X, before)
        if fitted is not None:
            for method in ("predict", "transform"):
                if hasattr(est, method):
                    out = accepted(lambda m=method: getattr(est, m)(X))
                    if out is not None:
                        assert len(out) == len(X)

    case()
    assert len(models) >= 3, models


@FUZZ
@given(ARRAYS, st.integers(-2, 6))
def test_random_metrics_and_seeding_inputs(X, k):
    labels = np.arange(len(X)) % max(k, 1)
    accepted(lambda: wu.metrics.silhouette_score(X, labels))
    accepted(lambda: wu.metrics.calinski_harabasz_score(X, labels))
    accepted(lambda: wu.metrics.davies_bouldin_score(X, labels))
    accepted(lambda: wu.kmeans_plusplus(X, k, random_state=0))
