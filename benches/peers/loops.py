"""The Lloyd, covariance and EM loops of the torch peer, written once for two array backends.

`TorchBackend` is the peer (CUDA or CPU). `NumpyBackend` runs the very same loops on the
host; it exists so that `peers.py --self-check` can hold the loops against scikit-learn on a
machine without torch, and it is never reported as a peer.

The loops follow scikit-learn's algorithms step for step (so that results agree), with the
N-sized work as dense matrix products:

* K-Means (Lloyd): ``d(x, c) = ‖x‖² − 2 x·c + ‖c‖²`` by one matrix product per block of rows
  (``‖x‖²`` is left out of the argmin and added back only for the inertia), the minimum and its
  index in one reduction, the sums by ``index_add_``, the counts by ``bincount``. An empty
  cluster takes the point farthest from its centre, as scikit-learn relocates it. After the
  last iteration one more assignment gives the labels and the inertia.
* PCA: the mean, the covariance ``Xcᵀ Xc / (n − 1)`` accumulated per block of centred rows,
  then ``eigh`` of the d × d matrix in float64 on the device, the top components with
  scikit-learn's sign rule (the largest |loading| of each component positive).
* EM (diag and full): scikit-learn's E-step through the Cholesky factor U of each precision
  (``log N = −½ (d log 2π + ‖(x − μ)ᵀ U‖²) + log det U``; for full covariances one product
  ``X [U₁ … U_k]`` per block of rows), log-sum-exp, responsibilities; the M-step's weighted
  sums as products ``Rᵀ X`` (full: one centred ``(R_j ∘ D)ᵀ D`` per component), the small
  k × d × d algebra (Cholesky, triangular inverse) in float64. The lower bound of an iteration
  is the mean log-likelihood of its E-step; one more E-step after the last M-step gives the
  labels, as scikit-learn's ``fit`` does.
"""

import math
import time
import warnings

import numpy as np

# Largest number of float32 values one block of a temporary (distances, products) may hold.
BLOCK_VALUES = 1 << 26


class NumpyBackend:
    """Host arrays: the stand-in used by the self-check where torch is not installed."""

    name = "numpy"
    device = "cpu"

    def put(self, a):
        return np.ascontiguousarray(a, dtype=np.float32)

    def host(self, a):
        return np.asarray(a)

    def zeros(self, shape, dtype=np.float32):
        return np.zeros(shape, dtype=dtype)

    def eye(self, d, dtype=np.float64):
        return np.eye(d, dtype=dtype)

    def f32(self, a):
        return a.astype(np.float32)

    def f64(self, a):
        return a.astype(np.float64)

    def index_add(self, target, index, src):
        np.add.at(target, index, src)

    def bincount(self, index, k):
        return np.bincount(index, minlength=k)

    def mean_rows(self, sums, counts):
        return sums / np.maximum(counts, 1)[:, None].astype(np.float32)

    def cat(self, parts):
        return np.concatenate(parts)

    def min_and_index(self, a):
        index = a.argmin(1)
        return np.take_along_axis(a, index[:, None], 1)[:, 0], index

    def logsumexp(self, a):
        m = a.max(1, keepdims=True)
        return (m + np.log(np.exp(a - m).sum(1, keepdims=True)))[:, 0]

    def permute(self, a, axes):
        return a.transpose(axes)

    def flip_rows(self, a):
        return a[::-1]

    def pick(self, a, index):
        return np.take_along_axis(a, index[:, None], 1)[:, 0]

    def diagonal(self, a):
        return np.diagonal(a, axis1=-2, axis2=-1)

    def cholesky(self, a):
        return np.linalg.cholesky(a)

    def inv_lower(self, lower):
        eye = np.broadcast_to(np.eye(lower.shape[-1]), lower.shape)
        return np.linalg.solve(lower, eye)

    def eigh(self, a):
        return np.linalg.eigh(a)

    def topk(self, a, m):
        return np.argsort(-a, kind="stable")[:m]

    def nonzero(self, mask):
        return np.nonzero(mask)[0]

    def log(self, a):
        return np.log(a)

    def exp(self, a):
        return np.exp(a)

    def sqrt(self, a):
        return np.sqrt(a)

    def maximum(self, a, value):
        return np.maximum(a, value)

    def sign(self, a):
        return np.sign(a)

    def sync(self):
        pass

    def device_timer(self):
        return WallTimer()


class WallTimer:
    """Wall-clock stand-in for a pair of CUDA events."""

    def start(self):
        self.t0 = time.perf_counter()

    def stop(self):
        self.t1 = time.perf_counter()

    def seconds(self):
        return self.t1 - self.t0


class CudaTimer:
    """A pair of CUDA events; `seconds` synchronises on the second."""

    def __init__(self, torch):
        self.begin = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def start(self):
        self.begin.record()

    def stop(self):
        self.end.record()

    def seconds(self):
        self.end.synchronize()
        return self.begin.elapsed_time(self.end) / 1e3


class TorchBackend:
    """torch tensors on `device` ("cuda" or "cpu"); float32 without TF32."""

    name = "torch"

    def __init__(self, torch, device, threads=None):
        self.torch = torch
        self.device = device
        self.cuda = device.startswith("cuda")
        if threads and not self.cuda:
            torch.set_num_threads(threads)
        disable_tf32(torch)

    def put(self, a):
        t = self.torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
        return t.to(self.device)

    def host(self, a):
        return a.detach().cpu().numpy()

    def zeros(self, shape, dtype=None):
        dtype = dtype or self.torch.float32
        if dtype is np.float64:
            dtype = self.torch.float64
        return self.torch.zeros(shape, dtype=dtype, device=self.device)

    def eye(self, d, dtype=None):
        return self.torch.eye(d, dtype=self.torch.float64, device=self.device)

    def f32(self, a):
        return a.to(self.torch.float32)

    def f64(self, a):
        return a.to(self.torch.float64)

    def index_add(self, target, index, src):
        target.index_add_(0, index, src)

    def bincount(self, index, k):
        return self.torch.bincount(index, minlength=k)

    def mean_rows(self, sums, counts):
        return sums / counts.clamp_min(1)[:, None].to(sums.dtype)

    def cat(self, parts):
        return self.torch.cat(parts)

    def min_and_index(self, a):
        values, index = self.torch.min(a, 1)
        return values, index

    def logsumexp(self, a):
        return self.torch.logsumexp(a, 1)

    def permute(self, a, axes):
        return a.permute(*axes)

    def flip_rows(self, a):
        return self.torch.flip(a, [0])

    def pick(self, a, index):
        return a.gather(1, index[:, None])[:, 0]

    def diagonal(self, a):
        return self.torch.diagonal(a, dim1=-2, dim2=-1)

    def cholesky(self, a):
        return self.torch.linalg.cholesky(a)

    def inv_lower(self, lower):
        eye = self.torch.eye(lower.shape[-1], dtype=lower.dtype, device=lower.device)
        return self.torch.linalg.solve_triangular(lower, eye, upper=False)  # eye broadcasts

    def eigh(self, a):
        return self.torch.linalg.eigh(a)

    def topk(self, a, m):
        return self.torch.topk(a, m).indices

    def nonzero(self, mask):
        return self.torch.nonzero(mask)[:, 0]

    def log(self, a):
        return self.torch.log(a)

    def exp(self, a):
        return self.torch.exp(a)

    def sqrt(self, a):
        return self.torch.sqrt(a)

    def maximum(self, a, value):
        return self.torch.clamp_min(a, value)

    def sign(self, a):
        return self.torch.sign(a)

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def device_timer(self):
        return CudaTimer(self.torch) if self.cuda else WallTimer()


def disable_tf32(torch):
    """Plain fp32 products (the ceiling is measured the same way): the fp32_precision settings
    of torch >= 2.9, else the older allow_tf32 flags (torch refuses a mix of the two)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.backends.cuda.matmul.fp32_precision = "ieee"
            torch.backends.cudnn.conv.fp32_precision = "ieee"
            return
        except (AttributeError, RuntimeError, ValueError):
            pass
        try:
            torch.set_float32_matmul_precision("highest")
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        except (AttributeError, RuntimeError):
            pass


def row_blocks(n, per_row):
    """(start, stop) blocks of rows whose temporaries hold at most BLOCK_VALUES values."""
    rows = max(1, BLOCK_VALUES // max(1, per_row))
    return [(s, min(n, s + rows)) for s in range(0, n, rows)]


# ---------------------------------------------------------------- K-Means (Lloyd)


def assign(B, X, C):
    """Labels and min_c(‖c‖² − 2 x·c) per row (add ‖x‖² for the squared distance)."""
    n, k = X.shape[0], C.shape[0]
    c2 = (C * C).sum(1)
    parts = []
    for s, e in row_blocks(n, k):
        parts.append(B.min_and_index(c2[None, :] - 2.0 * (X[s:e] @ C.T)))
    if len(parts) == 1:
        return parts[0][1], parts[0][0]
    return B.cat([p[1] for p in parts]), B.cat([p[0] for p in parts])


def kmeans(B, X, k, iterations):
    """Lloyd from the first k rows; returns (centroids, labels, inertia) on the device."""
    x2 = (X * X).sum(1)
    C = X[:k] * 1.0
    for _ in range(iterations):
        labels, part = assign(B, X, C)
        sums = B.zeros(C.shape)
        B.index_add(sums, labels, X)
        counts = B.bincount(labels, k)
        empty = B.nonzero(counts == 0)
        if len(empty) > 0:
            # scikit-learn's relocation: each empty cluster takes one of the points farthest
            # from their own centre, which leaves its old cluster.
            far = B.topk(x2 + part, len(empty))
            for j in range(len(empty)):
                row, old = far[j], labels[far[j]]
                sums[old] -= X[row]
                sums[empty[j]] = X[row]
                counts[old] -= 1
                counts[empty[j]] = 1
        # A cluster left empty after relocation keeps its sums, as in scikit-learn.
        C = B.mean_rows(sums, counts)
    labels, part = assign(B, X, C)
    inertia = B.f64(B.maximum(x2 + part, 0.0)).sum()
    return C, labels, inertia


# ---------------------------------------------------------------- PCA


def pca(B, X, components):
    """Covariance then eigh; returns (components × d, their variances) on the device."""
    n, d = X.shape
    mean = X.mean(0)
    cov = B.zeros((d, d))
    for s, e in row_blocks(n, d):
        xc = X[s:e] - mean[None, :]
        cov += xc.T @ xc
    values, vectors = B.eigh(B.f64(cov) / (n - 1))
    # eigh sorts ascending: the last columns are the largest components.
    top = B.flip_rows(vectors[:, d - components:].T)
    values = B.flip_rows(values[d - components:])
    # scikit-learn's svd_flip rule: the largest |loading| of each component is positive.
    signs = B.sign(B.pick(top, abs(top).argmax(1)))
    return top * signs[:, None], values


# ---------------------------------------------------------------- Gaussian mixtures (EM)


def gmm_start(X_host, k):
    """Equal weights, the first k rows as means, s²·I with s² the mean per-feature variance."""
    x64 = X_host.astype(np.float64)
    s2 = max(float(x64.var(0).mean()), 1e-12)
    return np.full(k, 1.0 / k), X_host[:k].astype(np.float64), s2


class Mixture:
    """Parameters of a diagonal or full mixture on the device (precisions as Cholesky U)."""

    def __init__(self, B, kind, weights, means, s2, d):
        self.B, self.kind = B, kind
        k = len(weights)
        self.log_w = B.put(np.log(weights))
        self.means = B.put(means)
        if kind == "full":
            self.U = B.put(np.broadcast_to(np.eye(d) / math.sqrt(s2), (k, d, d)).copy())
        else:
            self.U = B.put(np.full((k, d), 1.0 / math.sqrt(s2)))
        self._refresh()

    def _refresh(self):
        B = self.B
        diag = B.diagonal(self.U) if self.kind == "full" else self.U
        self.log_det = B.log(diag).sum(1)

    def weighted_log_prob(self, xs):
        """log π_j + log N(x | μ_j, Σ_j) for a block of rows: (rows, k)."""
        B, d = self.B, xs.shape[1]
        k = self.means.shape[0]
        if self.kind == "full":
            u_all = B.permute(self.U, (1, 0, 2)).reshape(d, k * d)
            mu_u = (self.means[:, None, :] @ self.U)[:, 0, :]
            y = (xs @ u_all).reshape(xs.shape[0], k, d) - mu_u[None, :, :]
            maha = (y * y).sum(2)
        else:
            prec = self.U * self.U
            maha = ((self.means * self.means * prec).sum(1)[None, :]
                    - 2.0 * (xs @ (self.means * prec).T) + (xs * xs) @ prec.T)
        return -0.5 * (d * math.log(2 * math.pi) + maha) + (self.log_det + self.log_w)[None, :]

    def e_step(self, X):
        """(responsibilities n × k on the device, mean log-likelihood as a device scalar)."""
        B, n = self.B, X.shape[0]
        k, d = self.means.shape
        resp, total = [], 0.0
        for s, e in row_blocks(n, k * (d if self.kind == "full" else 1)):
            wlp = self.weighted_log_prob(X[s:e])
            lse = B.logsumexp(wlp)
            resp.append(B.exp(wlp - lse[:, None]))
            total = total + B.f64(lse).sum()
        return (resp[0] if len(resp) == 1 else B.cat(resp)), total / n

    def m_step(self, X, resp, reg, x_sq=None):
        """scikit-learn's M-step (weights, means, covariances, precision factors)."""
        B, n, d = self.B, X.shape[0], X.shape[1]
        k = resp.shape[1]
        nk = resp.sum(0) + 10 * float(np.finfo(np.float32).eps)
        rx = resp.T @ X
        means = rx / nk[:, None]
        if self.kind == "full":
            cov = B.zeros((k, d, d), dtype=np.float64)
            for j in range(k):
                diff = X - means[j][None, :]
                cov[j] = B.f64((resp[:, j:j + 1] * diff).T @ diff) / B.f64(nk[j])
            cov = cov + reg * B.eye(d)[None, :, :]
            lower = B.cholesky(cov)
            self.U = B.f32(B.permute(B.inv_lower(lower), (0, 2, 1)))
        else:
            x_sq = X * X if x_sq is None else x_sq
            avg_x2 = (resp.T @ x_sq) / nk[:, None]
            cov = avg_x2 - 2.0 * means * rx / nk[:, None] + means * means + reg
            if bool((cov <= 0).any()):
                raise FloatingPointError("a diagonal covariance is not positive")
            self.U = 1.0 / B.sqrt(cov)
        weights = nk / n
        self.log_w = B.log(weights / weights.sum())
        self.means = means
        self._refresh()

    def covariances(self):
        """The covariances on the host, float64: (U Uᵀ)⁻¹ per component, or 1 / U²."""
        u = self.B.host(self.U).astype(np.float64)
        if self.kind == "full":
            return np.linalg.inv(u @ u.transpose(0, 2, 1))
        return 1.0 / (u * u)


def gmm(B, X, kind, k, iterations, reg, start):
    """EM with tol = 0 from `start` (gmm_start); returns (labels, last lower bound, model)."""
    weights, means, s2 = start
    model = Mixture(B, kind, weights, means, s2, X.shape[1])
    x_sq = X * X if kind != "full" else None
    lower_bound = None
    for _ in range(iterations):
        resp, lower_bound = model.e_step(X)
        model.m_step(X, resp, reg, x_sq)
    resp, _ = model.e_step(X)
    return resp.argmax(1), lower_bound, model
