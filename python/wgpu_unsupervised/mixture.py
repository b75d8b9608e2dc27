"""Gaussian mixtures fitted by EM on the GPU."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._base import DEVICE, OnDevice, check_weights, check_x, device, f64_or_none, rows, seed_of

__all__ = ["GaussianMixture"]

#: The parameters every mixture (single-process and Dask) shares, and their constraints.
MIXTURE_CONSTRAINTS: dict = {
    "n_components": [Interval(Integral, 1, None, closed="left")],
    "covariance_type": [StrOptions({"full", "tied", "diag", "spherical"})],
    "tol": [Interval(Real, 0.0, None, closed="left")],
    "reg_covar": [Interval(Real, 0.0, None, closed="left")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "n_init": [Interval(Integral, 1, None, closed="left")],
    "weights_init": ["array-like", None],
    "means_init": ["array-like", None],
    "precisions_init": ["array-like", None],
    "random_state": ["random_state"],
}


def covariance_shape(covariance_type: str, k: int, d: int) -> tuple:
    """scikit-learn's shape of the covariances (and precisions) of a covariance type."""
    return {"full": (k, d, d), "tied": (d, d), "diag": (k, d), "spherical": (k,)}[covariance_type]


class MixtureMixin:
    """What the single-process and the Dask mixtures share: the library's EM parameters
    from the estimator's, and the fitted attributes from the library's model."""

    def _em_params(self) -> dict:
        """The keyword arguments of ``gmm_fit`` and ``gmm_fit_remote`` that both take."""
        return dict(
            n_components=self.n_components,
            covariance_type=self.covariance_type,
            tol=self.tol,
            reg_covar=self.reg_covar,
            max_iter=self.max_iter,
            n_init=self.n_init,
            init=self.init_params,
            weights_init=f64_or_none(self.weights_init),
            means_init=f64_or_none(self.means_init),
            precisions_init=f64_or_none(self.precisions_init),
            seed=seed_of(self.random_state),
        )

    def _set_model(self, model) -> None:
        self._model = model
        k, d = model.means.shape
        shape = covariance_shape(model.covariance_type, k, d)
        self.weights_ = model.weights
        self.means_ = model.means
        self.covariances_ = model.covariances.reshape(shape)
        self.precisions_ = model.precisions.reshape(shape)
        self.precisions_cholesky_ = model.precisions_cholesky.reshape(shape)
        self.converged_ = model.converged
        self.n_iter_ = model.n_iter
        self.lower_bound_ = model.lower_bound


class GaussianMixture(OnDevice, MixtureMixin, DensityMixin, BaseEstimator):
    """A Gaussian mixture fitted by EM on the GPU (E-step and M-step sums on the device,
    the small algebra in float64 on the host).

    Parameters
    ----------
    n_components : int, default=1
    covariance_type : {"full", "tied", "diag", "spherical"}, default="full"
    tol : float, default=1e-3
        On the change of the mean log-likelihood lower bound.
    reg_covar : float, default=1e-6
    max_iter : int, default=100
    n_init : int, default=1
    init_params : {"kmeans", "k-means++", "random", "random_from_data"}, default="kmeans"
        "random_from_data" starts from ``n_components`` distinct rows drawn with
        ``random_state`` as the means (one run: ``n_init`` does not apply to it).
    weights_init, means_init, precisions_init : array or None
        Given parts of the start, replacing those ``init_params`` computes.
    random_state : int, RandomState or None
    warm_start : bool, default=False
        Start the next ``fit`` from this one's parameters.
    device : int, str or None

    Attributes
    ----------
    weights_, means_, covariances_, precisions_, precisions_cholesky_, converged_,
    n_iter_, lower_bound_, lower_bounds_, n_features_in_
    """

    _parameter_constraints: dict = {
        **MIXTURE_CONSTRAINTS,
        "init_params": [StrOptions({"kmeans", "k-means++", "random", "random_from_data"})],
        "warm_start": ["boolean"],
        "device": DEVICE,
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
        warm_start=False,
        device=None,
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
        self.warm_start = warm_start
        self.device = device

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Fits the mixture to the rows of ``X`` (optionally weighted; float64 rows centred in
        float64)."""
        self._fit(X, sample_weight)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_predict(self, X, y=None, sample_weight=None):
        """Fits, then the most probable component of every row under the final
        parameters."""
        return self._fit(X, sample_weight).labels

    def _fit(self, X, sample_weight):
        X = check_x(self, X, reset=not (self.warm_start and hasattr(self, "_model")))
        start_rows = None
        if self.init_params == "random_from_data":
            rng = check_random_state(self.random_state)
            if 0 < self.n_components <= X.shape[0]:
                start_rows = rng.choice(X.shape[0], size=self.n_components, replace=False)
                start_rows = start_rows.astype(np.int64)
        model = _core.gmm_fit(
            device(self.device),
            rows(X),
            check_weights(sample_weight, X),
            init_rows=start_rows,
            warm_start=self._model if self.warm_start and hasattr(self, "_model") else None,
            **self._em_params(),
        )
        self._set_model(model)
        return model

    def predict(self, X):
        """The most probable component of every row."""
        return self._on_model("predict", X)

    def predict_proba(self, X):
        """p(component | row), n_samples x n_components (rows sum to 1)."""
        return self._on_model("predict_proba", X).astype(np.float64)

    def score_samples(self, X):
        """log p(x) of every row."""
        return self._on_model("score_samples", X).astype(np.float64)

    def score(self, X, y=None):
        """Mean log-likelihood of the rows."""
        return self._on_model("score", X)

    def bic(self, X):
        """Bayesian information criterion on ``X`` (lower is better)."""
        return self._on_model("bic", X)

    def aic(self, X):
        """Akaike information criterion on ``X`` (lower is better)."""
        return self._on_model("aic", X)

    def sample(self, n_samples=1):
        """``n_samples`` draws from the mixture (grouped by component) and their
        components, from ``random_state``."""
        check_is_fitted(self)
        return self._model.sample(n_samples, seed_of(self.random_state))
