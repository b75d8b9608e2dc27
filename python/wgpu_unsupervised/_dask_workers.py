"""The worker side of the Dask fits (``wgpu_unsupervised.dask``): which device a worker
uses, and the map tasks, each pure (its reply depends on its arguments and the rows only).
A non-finite value in a block is reported with its row in the whole array."""

from __future__ import annotations

import functools
import re
import zlib

import numpy as np
from distributed import get_worker

from . import _core
from ._base import as_f32, rows

# Test hook (None in normal use): called with (kind, key) at the start of every map task
# on a worker.
_fault_hook = None


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


def _global_rows(block, first_row):
    """Raises the error of a non-finite value in ``block`` with its row in the whole array
    (``first_row`` is the block's first), as the library words it; nothing when every value
    is finite."""
    bad = ~np.isfinite(np.asarray(block))
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(
            f"non-finite value ({block[i, j]}) at row {first_row + int(i)}, column {int(j)}"
        )


def _on_block(block, first_row, call):
    """``call()`` on a block's rows; a ValueError caused by a non-finite value is raised
    again naming the row in the whole array (checked only on failure: free otherwise)."""
    try:
        return call()
    except ValueError:
        _global_rows(block, first_row)
        raise


def _answer(block, key, kind, request, devices, names, origin, first_row, fit_id):
    """One partition's reply to one request (a map task); float64 rows are centred on the
    driver's ``origin`` in float64 there. ``fit_id`` only names the fit in the task's key, so
    that a later fit never receives an earlier fit's result (an error kept by Dask for a
    future someone still holds)."""
    if _fault_hook is not None:
        _fault_hook(kind, key)
    device = _worker_device(devices, names)
    return _on_block(
        block,
        first_row,
        lambda: _core.partition_answer(device, key, rows(block), kind, request, origin),
    )


def _seed(candidates, weights, k, seed, devices, names):
    device = _worker_device(devices, names)
    return _core.seed_candidates(device, as_f32(candidates), as_f32(weights), k, seed)


def _moments(block, first_row, devices, names):
    """A partition's moments (float64 rows: about their own mean, taken in float64)."""
    device = _worker_device(devices, names)
    return _on_block(block, first_row, lambda: _core.Moments.of(device, rows(block)).to_bytes())


def _pca_fit(parts, params, devices, names):
    """The PCA of the merged moments of the partitions (on a worker: it needs a device)."""
    first, *rest = [_core.Moments.from_bytes(b) for b in parts]
    merged = first.merged(rest)
    return merged.fit(_worker_device(devices, names), **params)


def _apply(block, model, method, width, dtype, devices, names, block_info=None):
    """A fitted model's ``method`` (predict, transform, ...) on one block; ``width`` is the
    number of output columns (None: one value per row)."""
    x = rows(block)
    if x.shape[0] == 0:
        return np.empty((0,) if width is None else (0, width), dtype=dtype)
    first = block_info[0]["array-location"][0][0] if block_info else 0
    device = _worker_device(devices, names)
    out = _on_block(block, first, lambda: getattr(model, method)(device, x))
    return np.asarray(out).astype(dtype, copy=False)
