"""Helpers shared by the estimators: devices, seeds, the arrays handed to the library, the
parameter constraints every estimator shares, and the fitted model's methods on checked rows
(``OnDevice``).

The estimators check their parameters with scikit-learn's own machinery
(``_parameter_constraints``, checked at ``fit``: ``InvalidParameterError``, a ``ValueError``
naming the parameter) and their data with ``validate_data`` (2-D, numeric, finite, no
complex or sparse input, ``n_features_in_``, feature names; float32 and float64 kept as they
are, other dtypes made float64, as scikit-learn does). The algorithms and the checks of the
data against them (counts, shapes) are the Rust library's. float64 rows reach the library as
float64: it centres them in f64 before the f32 cast (its module ``origin``), so data far from
0 keep their digits; outputs are float64 where the input was.
"""

from __future__ import annotations

import numbers
from numbers import Integral

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from . import _core

#: The float types the estimators take as they are; anything else becomes float64 first
#: (scikit-learn's order: the first is the one other dtypes are converted to).
FLOAT_DTYPES = (np.float64, np.float32)

#: The constraint of every ``device`` parameter: None, an adapter index, or a name.
DEVICE = [None, Interval(Integral, 0, None, closed="left"), str]


def device(spec=None) -> _core.Device:
    """The device ``spec`` names: None (the best adapter), an index into ``adapters()``,
    or a part of an adapter's name. Opened once per process."""
    return _core.device(spec)


def adapters() -> list[dict]:
    """Every adapter on this machine, best first, numbered as ``device(index)`` takes them."""
    return _core.adapters()


def seed_of(random_state) -> int:
    """The library's seed (an unsigned 64-bit integer) for ``random_state``.

    An int is the seed itself; None draws one from NumPy's global generator (as
    scikit-learn does); a ``RandomState`` or ``Generator`` draws one from it.
    """
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be >= 0, got {random_state}")
        return int(random_state)
    rng = check_random_state(random_state)
    return int(rng.randint(np.iinfo(np.int32).max))


def rows(x) -> np.ndarray:
    """``x`` (float32 or float64) as aligned values in C order, in its own dtype: the same
    memory when it already is (read-only and memory-mapped arrays included), else one copy.
    (Arrays unpickled from buffers, as Dask hands them to workers, can be misaligned.)"""
    x = np.asarray(x)
    dtype = x.dtype if x.dtype in (np.float32, np.float64) else np.float64
    return np.require(x, dtype=dtype, requirements=("C_CONTIGUOUS", "ALIGNED"))


def as_f32(x) -> np.ndarray:
    """``x`` as aligned float32 in C order (weights, candidates: values the library takes in
    float32 only)."""
    return np.require(x, dtype=np.float32, requirements=("C_CONTIGUOUS", "ALIGNED"))


def check_x(estimator, X, *, reset: bool, **checks) -> np.ndarray:
    """scikit-learn's checks of ``X`` (float32 and float64 kept as they are, other dtypes
    made float64; complex, sparse, 1-D or 3-D input refused with scikit-learn's messages)."""
    return validate_data(estimator, X, dtype=FLOAT_DTYPES, reset=reset, **checks)


def check_weights(sample_weight, X) -> np.ndarray | None:
    """Per-row weights as float32 (None stays None: unweighted). The library scales them by a
    power of two itself, so any weights within float32's range fit; weights beyond it are
    refused with the reason rather than rounded to 0 or infinity."""
    if sample_weight is None:
        return None
    w = _check_sample_weight(sample_weight, X, dtype=np.float64)
    w32 = as_f32(w)
    lost = (w != 0) & ((w32 == 0) | ~np.isfinite(w32))
    if np.any(lost):
        i = int(np.argmax(lost))
        raise ValueError(
            f"sample_weight[{i}] = {w[i]!r} is beyond float32's range (1e-45 to 3.4e38), in "
            "which the GPU computes: divide the weights by a constant (it does not change the "
            "fit)"
        )
    return w32


def f64_or_none(x) -> np.ndarray | None:
    """A flat float64 copy of an optional array (given starts, overrides)."""
    if x is None:
        return None
    return np.ascontiguousarray(np.asarray(x, dtype=np.float64).ravel())


class OnDevice:
    """What the single-process estimators share once fitted: the library model's methods
    (``self._model``) on the device ``self.device`` names."""

    def _on_model(self, method: str, X, *, keep_dtype: bool = False):
        """The fitted model's ``method`` on the rows of ``X`` (checked against the fit), in
        the dtype of ``X`` with ``keep_dtype``."""
        check_is_fitted(self)
        X = check_x(self, X, reset=False)
        out = getattr(self._model, method)(device(self.device), rows(X))
        return out.astype(X.dtype, copy=False) if keep_dtype else out
