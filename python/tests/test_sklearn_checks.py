"""scikit-learn's own estimator checks on every estimator.

Every check runs; the ones that cannot pass are listed as expected failures with the
reason (strict: a listed check that starts passing fails the run, so the list stays true).
"""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import wgpu_unsupervised as wu

# Random starts (k-means++, K-Means for the mixture's start) draw from a stream indexed by
# rows: a row given weight w is one draw, the same row repeated w times is w draws, so the
# same seed starts elsewhere and may end in another local optimum. scikit-learn lists the
# same check as an expected failure for its own KMeans and MiniBatchKMeans. From a given
# start, weights equal repeated rows: test_estimators.py checks that.
WEIGHTS_VS_REPEATS = (
    "integer weights and repeated rows draw different random starts from the same seed "
    "(as scikit-learn's own KMeans); equal from a given start, see test_estimators.py"
)
# scikit-learn 1.9's GaussianMixture takes no sample_weight, so this check never runs for it;
# ours does, and its K-Means start draws as K-Means does (the check shuffles the weighted
# rows too, so no index-based draw can match). From a given start the weighted mixture is the
# repeated one: test_estimators.py and the library's gmm_weights tests check that.
MIXTURE_WEIGHTS_VS_REPEATS = (
    "the K-Means start draws from the same seed differently for weighted, shuffled rows and "
    "repeated ones (scikit-learn's GaussianMixture has no sample_weight, so the check does "
    "not run for it); equal from a given start, see test_estimators.py"
)

EXPECTED_FAILURES = {
    "KMeans": {"check_sample_weight_equivalence_on_dense_data": WEIGHTS_VS_REPEATS},
    "MiniBatchKMeans": {"check_sample_weight_equivalence_on_dense_data": WEIGHTS_VS_REPEATS},
    "GaussianMixture": {
        "check_sample_weight_equivalence_on_dense_data": MIXTURE_WEIGHTS_VS_REPEATS
    },
}


def expected_failures(estimator):
    return EXPECTED_FAILURES.get(type(estimator).__name__, {})


ESTIMATORS = [
    wu.KMeans(n_clusters=3, random_state=0),
    wu.MiniBatchKMeans(n_clusters=3, batch_size=64, random_state=0),
    wu.PCA(n_components=2, random_state=0),
    wu.IncrementalPCA(n_components=2),
    wu.GaussianMixture(n_components=2, random_state=0),
    wu.SpectralClustering(n_clusters=3, n_init=2, random_state=0),
]


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failures, xfail_strict=True)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_every_estimator_is_checked():
    names = {type(e).__name__ for e in ESTIMATORS}
    assert names == {
        "KMeans",
        "MiniBatchKMeans",
        "PCA",
        "IncrementalPCA",
        "GaussianMixture",
        "SpectralClustering",
    }
    assert set(EXPECTED_FAILURES) <= names
