"""The Python estimators beside scikit-learn on Fashion-MNIST 70k (70000 x 784), in the same
process: fit time, and the quality each reaches. Prints JSON lines and a Markdown table.

    python python/benchmarks/bench_estimators.py [--rows N] [--data FOLDER]
"""

import argparse
import json
import os
import time

import numpy as np
from sklearn import cluster as skc
from sklearn import decomposition as skd
from sklearn import metrics as skm
from sklearn import mixture as skx

import wgpu_unsupervised as wu
from fashion_mnist import DEFAULT, load


def timed(fn):
    began = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - began


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--data", default=str(DEFAULT))
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    X, y = load(args.data, args.rows)
    n, d = X.shape
    it = args.iters
    rows = []

    def record(what, lib, seconds, cols=d, **extra):
        r = dict(what=what, lib=lib, n=n, d=cols, seconds=round(seconds, 3), **extra)
        rows.append(r)
        print(json.dumps(r), flush=True)

    start = X[np.random.default_rng(0).choice(n, 10, replace=False)].astype(np.float64)
    # The first fit on a device compiles its pipelines and tunes its kernels' variants for
    # the shape (kept for the process): timed apart, as "first fit".
    _, t = timed(lambda: wu.KMeans(10, init=start, max_iter=1, tol=0.0).fit(X))
    record("KMeans k=10, first fit (1 iteration): compile + tune", "wgpu_unsupervised", t)
    ours, t = timed(lambda: wu.KMeans(10, init=start, max_iter=it, tol=0.0).fit(X))
    record(f"KMeans k=10, {it} Lloyd iterations from the same start", "wgpu_unsupervised", t,
           inertia=round(ours.inertia_, 1), ari=round(skm.adjusted_rand_score(y, ours.labels_), 4))
    ref, t = timed(lambda: skc.KMeans(10, init=start, n_init=1, max_iter=it, tol=0.0).fit(X))
    record(f"KMeans k=10, {it} Lloyd iterations from the same start", "scikit-learn", t,
           inertia=round(ref.inertia_, 1), ari=round(skm.adjusted_rand_score(y, ref.labels_), 4))

    _, t = timed(lambda: wu.PCA(50).fit(X))
    record("PCA 50 components, first fit: compile + tune", "wgpu_unsupervised", t)
    ours, t = timed(lambda: wu.PCA(50).fit(X))
    record("PCA 50 components", "wgpu_unsupervised", t, variance=round(float(ours.explained_variance_ratio_.sum()), 5),
           solver_iterations=ours.n_iter_)
    ref, t = timed(lambda: skd.PCA(50).fit(X))
    record("PCA 50 components", "scikit-learn", t, variance=round(float(ref.explained_variance_ratio_.sum()), 5))

    Z = ref.transform(X).astype(np.float32)
    means = Z[np.random.default_rng(1).choice(n, 10, replace=False)].astype(np.float64)
    kw = dict(covariance_type="diag", max_iter=it, tol=0.0, means_init=means,
              weights_init=np.full(10, 0.1), precisions_init=np.ones((10, 50)))
    _, t = timed(lambda: wu.GaussianMixture(10, **dict(kw, max_iter=1)).fit(Z))
    record("GaussianMixture, first fit (1 iteration): compile + tune", "wgpu_unsupervised", t, cols=50)
    ours, t = timed(lambda: wu.GaussianMixture(10, **kw).fit(Z))
    record(f"GaussianMixture K=10 diag on the 50 PCs, {it} EM iterations", "wgpu_unsupervised", t, cols=50,
           lower_bound=round(ours.lower_bound_, 4))
    ref, t = timed(lambda: skx.GaussianMixture(10, **kw).fit(Z))
    record(f"GaussianMixture K=10 diag on the 50 PCs, {it} EM iterations", "scikit-learn", t, cols=50,
           lower_bound=round(ref.lower_bound_, 4))

    print(f"\nmachine: {os.cpu_count()} CPUs, device {wu.device()}, load {os.getloadavg()}")
    print("| fit | library | seconds | result |\n|---|---|---|---|")
    for r in rows:
        extra = ", ".join(f"{k} {v}" for k, v in r.items() if k not in ("what", "lib", "n", "d", "seconds"))
        print(f"| {r['what']} ({r['n']} x {r['d']}) | {r['lib']} | {r['seconds']} | {extra} |")


if __name__ == "__main__":
    main()
