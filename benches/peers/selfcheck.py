"""`peers.py --self-check`: the peers' loops against scikit-learn on small blobs.

Every loop of loops.py runs on the numpy stand-in and, where torch is installed, on torch
(the device of --torch-device, default CUDA when available, and the CPU). FAISS's K-Means is
checked through the inertia of its centroids (not on the empty-cluster case: FAISS splits a
big cluster where scikit-learn takes the farthest point). A figure passes when its relative difference
to scikit-learn's is at most 1e-3: the inertia for K-Means (also with an empty cluster to
relocate), the sum of the explained variances for PCA, the lower bound for the mixtures;
and so must the fitted parameters (centroids, components, covariances; relative Frobenius
norm), since the lower bound moves only to second order with an error in the covariances.
"""

import sys

import numpy as np

import loops
import peers

TOLERANCE = 1e-3


def cases():
    """(name, kernel, matrix, k, iterations)."""
    x = peers.make_blobs(3000, 8, 5, 3)
    dup = x.copy()
    dup[1] = dup[0]  # two equal starting centres: one cluster is empty at once
    flat = peers.make_blobs(3000, 2, 6, 4)  # overlapping clusters: EM still moving at it. 4
    return [
        ("kmeans", "kmeans", x, 5, 10),
        ("kmeans, empty cluster", "kmeans", dup, 5, 10),
        ("kmeans, k=40", "kmeans", x, 40, 4),
        ("pca", "pca", x, 4, 1),
        ("gmm-diag", "gmm-diag", x, 5, 10),
        ("gmm-full", "gmm-full", x, 5, 10),
        ("gmm-diag, d=2", "gmm-diag", flat, 6, 4),
        ("gmm-full, d=2", "gmm-full", flat, 6, 4),
    ]


def figures(kernel, B, X, k, it, x_host):
    """(checked figure, fitted parameters) of one fit on backend B."""
    if kernel == "kmeans":
        centroids, _, inertia = loops.kmeans(B, X, k, it)
        return float(inertia), B.host(centroids)
    if kernel == "pca":
        components, variances = loops.pca(B, X, k)
        return float(B.host(variances).sum()), B.host(components)
    kind = kernel.split("-")[1]
    _, bound, model = loops.gmm(B, X, kind, k, it, peers.GMM_REG, loops.gmm_start(x_host, k))
    return float(bound), model.covariances()


def parameters(kernel, est):
    """scikit-learn's counterpart of `figures`' parameters."""
    if kernel == "kmeans":
        return est.cluster_centers_
    if kernel == "pca":
        return est.components_
    return est.covariances_


def relative(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a), np.linalg.norm(b), 1e-30))


def inertia(x, centroids):
    x64, c64 = x.astype(np.float64), np.asarray(centroids, dtype=np.float64)
    d2 = (x64 ** 2).sum(1)[:, None] - 2 * x64 @ c64.T + (c64 ** 2).sum(1)[None, :]
    return float(np.maximum(d2.min(1), 0).sum())


def backends(a):
    out = [("numpy stand-in", loops.NumpyBackend())]
    try:
        import torch
    except ImportError:
        peers.note("self-check: torch not installed; only the numpy stand-in runs the loops")
        return out
    devices = ["cpu"]
    want = a.torch_device or ("cuda" if torch.cuda.is_available() else "cpu")
    if want.startswith("cuda"):
        if torch.cuda.is_available():
            devices.insert(0, want)
        else:
            peers.note("self-check: CUDA not available to torch; torch checked on the CPU only")
    for dev in devices:
        out.append((f"torch {dev}", loops.TorchBackend(torch, dev, a.threads)))
    return out


def run(a):
    sk = peers.Sklearn(a.threads, quick=True)
    try:
        fa = peers.Faiss(a.threads, True, (a.torch_device or "cuda") == "cuda")
    except ImportError:
        fa = None
        peers.note("self-check: faiss not installed; FAISS not checked")
    failed, total = 0, 0
    loop_backends = backends(a)
    for name, kernel, x, k, it in cases():
        start = loops.gmm_start(x, k) if kernel.startswith("gmm") else None
        ref = list(sk.run(kernel, x, k, it, start)[2].values())[0]
        ref_params = parameters(kernel, sk.last)
        results = [(label, *figures(kernel, B, B.put(x), k, it, x)) for label, B in loop_backends]
        # FAISS fills an empty cluster by splitting a big one, not as scikit-learn does.
        if fa is not None and kernel == "kmeans" and "empty" not in name:
            centroids = fa.run(kernel, x, k, it, None)[2]["centroids"]
            results.append(("faiss", inertia(x, centroids), centroids))
        for label, value, params in results:
            rel = relative(value, ref)
            rel_params = relative(params, ref_params)
            ok = rel <= TOLERANCE and rel_params <= TOLERANCE
            total += 1
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name:<22} {label:<15} {value:.6e} vs "
                  f"scikit-learn {ref:.6e}  rel {rel:.1e}, parameters rel {rel_params:.1e}",
                  flush=True)
    print(f"self-check: {total - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(peers.main(["--self-check"] + sys.argv[1:]))
