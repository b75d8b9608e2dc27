"""PCA on the GPU: the covariance (or its products) on the device, the eigen-problem in
float64 on the host; and an incremental PCA whose merged moments are exact."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils import check_array
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._base import DEVICE, FLOAT_DTYPES, OnDevice, check_x, device, rows, seed_of

__all__ = ["PCA", "IncrementalPCA"]

#: What every PCA takes as ``n_components``: a count, a fraction of the variance in (0, 1),
#: Minka's MLE, or None (all).
N_COMPONENTS = [
    Interval(Integral, 0, None, closed="left"),
    Interval(Real, 0, 1, closed="neither"),
    StrOptions({"mle"}),
    None,
]


def pca_params(estimator) -> dict:
    """The keyword arguments of a PCA fit (``pca_fit``, ``Moments.fit``) from the
    estimator's parameters (PCA's and the Dask PCA's)."""
    return dict(
        n_components=estimator.n_components,
        whiten=estimator.whiten,
        solver=estimator.solver,
        tol=estimator.tol,
        max_iter=estimator.max_iter,
        seed=seed_of(estimator.random_state),
    )


class PcaMixin:
    """What every PCA (single-process, incremental, Dask) sets from the library's model."""

    def _set_model(self, model, dtype=np.float64) -> None:
        self._model = model
        self.components_ = model.components.astype(dtype, copy=False)
        self.explained_variance_ = model.explained_variance.astype(dtype, copy=False)
        self.explained_variance_ratio_ = model.explained_variance_ratio.astype(dtype, copy=False)
        self.singular_values_ = model.singular_values.astype(dtype, copy=False)
        self.mean_ = model.mean.astype(dtype, copy=False)
        self.noise_variance_ = model.noise_variance
        self.n_components_ = model.n_components
        self.n_samples_ = model.n_samples


class _Projection(
    OnDevice, PcaMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator
):
    """What PCA and incremental PCA share once fitted."""

    def _set_model(self, model, dtype) -> None:
        super()._set_model(model, dtype)
        # Power iterations, or 1 for the exact eigensolver (one direct solve): a fitted
        # transformer with ``max_iter`` ran at least once (scikit-learn's convention).
        self.n_iter_ = max(1, model.n_iter)
        self._n_features_out = model.n_components

    def transform(self, X):
        """The rows projected on the principal axes (whitened with ``whiten``), in the
        dtype of ``X``."""
        return self._on_model("transform", X, keep_dtype=True)

    def inverse_transform(self, X):
        """Rows in the original space from their projections, in the dtype of ``X``
        (float64: the mean added in float64)."""
        check_is_fitted(self)
        Z = check_array(X, dtype=FLOAT_DTYPES)
        if Z.ndim == 2 and Z.shape[1] != self.n_components_:
            raise ValueError(
                f"X has {Z.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_components_} components as input"
            )
        if Z.dtype == np.float64:
            return self._model.inverse_transform_f64(device(self.device), rows(Z))
        return self._model.inverse_transform(device(self.device), rows(Z))

    def score_samples(self, X):
        """Log-likelihood of every row under the probabilistic PCA model."""
        check_is_fitted(self)
        X = check_x(self, X, reset=False)
        return self._model.score_samples(rows(X))

    def score(self, X, y=None):
        """Mean log-likelihood of the rows under the probabilistic PCA model."""
        return float(np.mean(self.score_samples(X)))

    def get_covariance(self):
        """The model covariance, n_features x n_features."""
        check_is_fitted(self)
        return self._model.covariance()

    def get_precision(self):
        """The inverse of the model covariance."""
        check_is_fitted(self)
        return self._model.precision()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class PCA(_Projection):
    """Principal component analysis on the GPU.

    Parameters
    ----------
    n_components : int, float, "mle" or None
        A count, the fraction of variance to keep (0 < f < 1), Minka's MLE, or None (all
        min(n_samples, n_features)).
    whiten : bool, default=False
    solver : {"auto", "full", "power", "matrix-free"}, default="auto"
        Full eigendecomposition of the covariance, block power iteration on it, or power
        iteration by products with the rows (no d x d matrix).
    tol : float, default=1e-5
        Power iteration tolerance.
    max_iter : int, default=1000
    random_state : int, RandomState or None
        Start of the power iteration.
    device : int, str or None

    Attributes
    ----------
    components_, explained_variance_, explained_variance_ratio_, singular_values_, mean_,
    noise_variance_, n_components_, n_samples_, n_features_in_
    """

    _parameter_constraints: dict = {
        "n_components": N_COMPONENTS,
        "whiten": ["boolean"],
        "solver": [StrOptions({"auto", "full", "power", "matrix-free"})],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "device": DEVICE,
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
        device=None,
    ):
        self.n_components = n_components
        self.whiten = whiten
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.device = device

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fits the principal axes of the rows of ``X`` (float64 rows centred in float64)."""
        X = check_x(self, X, reset=True, ensure_min_samples=2)
        model = _core.pca_fit(device(self.device), rows(X), **pca_params(self))
        self._set_model(model, X.dtype)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Fits, then the projections of the rows."""
        return self.fit(X).transform(X)


class IncrementalPCA(_Projection):
    """PCA fitted chunk by chunk (``partial_fit``) from exact merged moments: unlike
    scikit-learn's sequential SVD updates, the model equals a PCA of all rows seen within
    float32 rounding.

    Parameters
    ----------
    n_components : int, float, "mle" or None
    whiten : bool, default=False
    batch_size : int or None
        Kept for scikit-learn compatibility; ``fit`` takes the moments of all rows at once
        (the library streams them through the device when they exceed its memory).
    device : int, str or None

    Attributes
    ----------
    as PCA, and n_samples_seen_
    """

    _parameter_constraints: dict = {
        "n_components": N_COMPONENTS,
        "whiten": ["boolean"],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "device": DEVICE,
    }

    def __init__(self, n_components=None, *, whiten=False, batch_size=None, device=None):
        self.n_components = n_components
        self.whiten = whiten
        self.batch_size = batch_size
        self.device = device

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fits from the moments of the rows of ``X`` (forgetting earlier ones)."""
        X = check_x(self, X, reset=True, ensure_min_samples=2)
        self._moments = None
        return self._add(X)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Adds the rows of ``X`` to the moments and refits."""
        first = getattr(self, "_moments", None) is None
        X = check_x(self, X, reset=first)
        return self._add(X)

    def _add(self, X):
        dev = device(self.device)
        moments = _core.Moments.of(dev, rows(X))
        if getattr(self, "_moments", None) is not None:
            moments = self._moments.merged([moments])
        model = moments.fit(
            dev,
            n_components=self.n_components,
            whiten=self.whiten,
            solver="full",
            tol=1e-5,
            max_iter=1000,
            seed=0,
        )
        self._moments = moments
        self._set_model(model, X.dtype)
        self.n_samples_seen_ = moments.n_samples
        return self
