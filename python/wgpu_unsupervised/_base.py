"""Helpers shared by the estimators: devices, seeds, the arrays handed to the library, and
the fitted model's methods on checked rows (``OnDevice``).

The estimators convert and call; the algorithms, their parameter checks and the checks of
the data (finite values, shapes, counts) are the Rust library's. scikit-learn's
``validate_data`` does the array checks scikit-learn users expect (2-D, numeric, no
complex or sparse input, ``n_features_in_``, feature names).
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from . import _core

#: The float types the estimators take as they are; anything else becomes float64 first.
FLOAT_DTYPES = (np.float32, np.float64)


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


def as_f32(x) -> np.ndarray:
    """``x`` as aligned float32 in C order: the same memory when it already is (read-only
    and memory-mapped arrays included), else one copy. (Arrays unpickled from buffers, as
    Dask hands them to workers, can be misaligned.)"""
    return np.require(x, dtype=np.float32, requirements=("C_CONTIGUOUS", "ALIGNED"))


def check_x(estimator, X, *, reset: bool, **checks) -> np.ndarray:
    """scikit-learn's checks of ``X`` (float32 and float64 kept as they are)."""
    return validate_data(estimator, X, dtype=FLOAT_DTYPES, reset=reset, **checks)


def check_weights(sample_weight, X) -> np.ndarray | None:
    """Per-row weights as float32 (None stays None: unweighted)."""
    if sample_weight is None:
        return None
    return as_f32(_check_sample_weight(sample_weight, X, dtype=X.dtype))


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
        out = getattr(self._model, method)(device(self.device), as_f32(X))
        return out.astype(X.dtype, copy=False) if keep_dtype else out
