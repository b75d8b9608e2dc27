"""float64 data far from 0: the estimators on Fashion-MNIST 70k (70000 x 784, float64) plus
an offset, beside scikit-learn in the same process (issue 35, item 1). Prints one JSON line
per measurement.

    python python/benchmarks/offsets.py [--rows N] [--offsets 0 1e7 1e8]

Measured: K-Means (k = 10, one k-means++ start) inertia; PCA (50 components) explained
variance ratio; diagonal and full mixtures (5 components) on the 20 leading principal
components (mean log-likelihood); Calinski-Harabasz of scikit-learn's K-Means labels; spectral
clustering (RBF) on the first 1500 rows, agreement (ARI) of either library's labels of the
offset rows with scikit-learn's labels of the rows without the offset. Every estimator gets X + offset as float64, as a user hands it over.
"""

import argparse
import json
import time

import numpy as np
from sklearn import cluster as skc
from sklearn import decomposition as skd
from sklearn import metrics as skm
from sklearn import mixture as skx

import wgpu_unsupervised as wu
from fashion_mnist import DEFAULT, load


def emit(**fields):
    print(json.dumps(fields), flush=True)


def run(fn):
    began = time.perf_counter()
    try:
        out = fn()
        return out, round(time.perf_counter() - began, 2), None
    except Exception as e:  # noqa: BLE001 - the probe records what went wrong
        return None, round(time.perf_counter() - began, 2), f"{type(e).__name__}: {e}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--data", default=str(DEFAULT))
    ap.add_argument("--offsets", type=float, nargs="+", default=[0.0, 1e7, 1e8])
    ap.add_argument("--skip", nargs="*", default=[])
    ap.add_argument("--gmm-covariances", nargs="+", default=["diag", "full"])
    args = ap.parse_args()
    X32, _ = load(args.data, args.rows)
    X = X32.astype(np.float64)
    n, d = X.shape
    # The mixture's data: the 20 leading principal components (scikit-learn's, once).
    Z = skd.PCA(20, random_state=0).fit_transform(X)
    sk_labels = skc.KMeans(10, n_init=1, random_state=0).fit(X).labels_
    sub = X[:1500]
    reference = None
    if "spectral" not in args.skip:
        reference = skc.SpectralClustering(10, gamma=0.02, random_state=0).fit(sub).labels_
    for off in args.offsets:
        Xo, Zo, So = X + off, Z + off, sub + off
        base = dict(n=n, d=d, offset=off, version=wu.__version__)
        if "kmeans" not in args.skip:
            for lib, est in (
                ("sklearn", skc.KMeans(10, n_init=1, random_state=0)),
                ("wgpu", wu.KMeans(10, n_init=1, random_state=0)),
            ):
                m, s, err = run(lambda: est.fit(Xo))
                emit(what="kmeans_inertia", lib=lib, value=None if m is None else m.inertia_,
                     seconds=s, error=err, **base)
        if "pca" not in args.skip:
            for lib, est in (("sklearn", skd.PCA(50)), ("wgpu", wu.PCA(50))):
                m, s, err = run(lambda: est.fit(Xo))
                emit(what="pca_ratio_sum", lib=lib,
                     value=None if m is None else float(np.sum(m.explained_variance_ratio_)),
                     first=None if m is None else float(m.explained_variance_ratio_[0]),
                     seconds=s, error=err, **base)
        for cov in [] if "gmm" in args.skip else args.gmm_covariances:
            for lib, est in (
                ("sklearn", skx.GaussianMixture(5, covariance_type=cov, random_state=0)),
                ("wgpu", wu.GaussianMixture(5, covariance_type=cov, random_state=0)),
            ):
                m, s, err = run(lambda: est.fit(Zo))
                emit(what=f"gmm_{cov}_score", lib=lib,
                     value=None if m is None else float(m.score(Zo)),
                     seconds=s, error=err, **dict(base, d=20))
        if "ch" not in args.skip:
            for lib, fn in (
                ("sklearn", skm.calinski_harabasz_score),
                ("wgpu", wu.metrics.calinski_harabasz_score),
            ):
                v, s, err = run(lambda: fn(Xo, sk_labels))
                emit(what="calinski_harabasz", lib=lib, value=v, seconds=s, error=err, **base)
        if "spectral" not in args.skip:
            labels = {}
            for lib, est in (
                ("sklearn", skc.SpectralClustering(10, gamma=0.02, random_state=0)),
                ("wgpu", wu.SpectralClustering(10, gamma=0.02, random_state=0)),
            ):
                m, s, err = run(lambda: est.fit(So))
                labels[lib] = None if m is None else m.labels_
                emit(what="spectral_seconds", lib=lib, seconds=s, error=err,
                     **dict(base, n=len(sub)))
            # Both against scikit-learn's clustering of the rows without the offset (the
            # clustering does not depend on it; scikit-learn's RBF of offset rows does).
            for lib in ("sklearn", "wgpu"):
                if labels[lib] is not None:
                    emit(what="spectral_ari_vs_sklearn_without_offset", lib=lib,
                         value=skm.adjusted_rand_score(reference, labels[lib]),
                         **dict(base, n=len(sub)))


if __name__ == "__main__":
    main()
