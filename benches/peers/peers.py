#!/usr/bin/env python3
"""Peers of wgpu-unsupervised on the same shapes: scikit-learn, torch and FAISS.

Writes one JSON object per line and per measurement (the format `wgpu-unsupervised bench
--json` writes too; see README.md beside this file), to stdout or --out. Notes go to stderr.
scikit-learn is the reference peer; torch (the Lloyd, covariance and EM loops of loops.py on
CUDA or the CPU) and FAISS (its K-Means) run where they are installed and are skipped with
one line on stderr where they are not.

Examples:
  peers.py --fmnist /path/to/fashion-mnist                    # the issue's shapes
  peers.py --quick --blobs 4000,16,8                          # a smoke run
  peers.py --blobs 1000000,256,4096 --k 4096 --only kmeans --iterations 5
  peers.py --fmnist DIR --write-npy fmnist.npy --prepare      # data for `bench --input`
  peers.py --self-check                                       # torch/numpy loops vs sklearn
"""

import argparse
import gzip
import json
import math
import os
import platform
import struct
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loops  # noqa: E402  (beside this file)

KERNELS = ("kmeans", "pca", "gmm-diag", "gmm-full")
IMPLS = ("torch", "faiss", "scikit-learn")
GMM_REG = 1e-6


def note(*parts):
    print("peers:", *parts, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- cost model


def cost(kernel, n, d, k, it):
    """(flops, bytes) of a fit: the minimum work, identical on both sides (README.md)."""
    if kernel == "kmeans":
        return it * 2.0 * n * d * k, it * 4.0 * n * d
    if kernel == "pca":
        return float(n) * d * (d + 1), 4.0 * n * d
    if kernel in ("gmm-diag", "gmm-spherical"):
        return it * 7.0 * n * k * d, it * 4.0 * n * d
    if kernel in ("gmm-full", "gmm-tied"):
        return it * float(n) * k * (2.0 * d * d + 5.0 * d), it * 4.0 * n * d
    raise ValueError(kernel)


def record(impl, kernel, shape, seconds, peak, extra):
    """One measurement in the shared format (efficiency against the bounding ceiling)."""
    n, d, k, it = shape
    flops, nbytes = cost(kernel, n, d, k, it)
    t_compute = flops / (peak["peak_gflops"] * 1e9)
    t_memory = nbytes / (peak["peak_gbps"] * 1e9)
    out = {
        "impl": impl, "kind": "fit", "kernel": kernel, "n": n, "d": d, "k": k,
        "iterations": it, "seconds": seconds, "flops": flops, "bytes": nbytes,
        "gflops": flops / seconds / 1e9, "gbps": nbytes / seconds / 1e9,
        "peak_gflops": peak["peak_gflops"], "peak_gbps": peak["peak_gbps"],
        "efficiency": max(t_compute, t_memory) / seconds,
        "bound": "compute" if t_compute >= t_memory else "memory",
        "adapter": peak["adapter"],
    }
    out.update(extra)
    return out


# ---------------------------------------------------------------- data


def read_idx(path):
    """An idx file (gzip or plain) as a float32 (rows, features) matrix."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte idx file")
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    return data.reshape(dims[0], -1).astype(np.float32)


def load_fmnist(folder):
    """Train then test images: 70000 x 784 float32 of the raw 0..255 values."""
    parts = []
    for stem in ("train-images-idx3-ubyte", "t10k-images-idx3-ubyte"):
        for name in (stem + ".gz", stem):
            path = os.path.join(folder, name)
            if os.path.exists(path):
                parts.append(read_idx(path))
                break
        else:
            raise FileNotFoundError(f"{folder}: no {stem}[.gz]")
    return np.concatenate(parts)


def make_blobs(n, d, centres, seed):
    """Isotropic unit-variance blobs around centres in a ±10 box; row i is from centre i % k."""
    rng = np.random.default_rng(seed)
    c = rng.uniform(-10, 10, size=(centres, d)).astype(np.float32)
    x = np.empty((n, d), dtype=np.float32)
    step = max(1, (1 << 24) // d)
    for s in range(0, n, step):
        e = min(n, s + step)
        x[s:e] = c[np.arange(s, e) % centres] + rng.standard_normal((e - s, d), dtype=np.float32)
    return x


def project(x, components):
    """The first principal components (covariance, eigh in float64, sklearn's signs)."""
    mean = x.mean(0, dtype=np.float64)
    cov = np.zeros((x.shape[1], x.shape[1]))
    for s in range(0, x.shape[0], 1 << 16):
        xc = x[s:s + (1 << 16)] - mean
        cov += xc.T @ xc
    _, vectors = np.linalg.eigh(cov / (x.shape[0] - 1))
    top = vectors[:, ::-1][:, :components].T
    top *= np.sign(top[np.arange(components), np.abs(top).argmax(1)])[:, None]
    return ((x - mean) @ top.T).astype(np.float32)


# ---------------------------------------------------------------- ceilings


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def numpy_ceilings(threads, quick):
    """float32 numpy matmul (best of 5) and a threaded np.copyto (read + write bytes)."""
    from threadpoolctl import threadpool_limits

    m = 1024 if quick else 2048
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, m), dtype=np.float32)
    b = rng.standard_normal((m, m), dtype=np.float32)
    with threadpool_limits(limits=threads):
        a @ b
        t_mm = best_of(lambda: a @ b, 5)
    values = (1 << 23) if quick else (1 << 26)
    src = np.ones(values, dtype=np.float32)
    dst = np.empty_like(src)
    bounds = np.linspace(0, values, threads + 1).astype(int)
    with ThreadPoolExecutor(threads) as pool:
        def copy():
            list(pool.map(lambda i: np.copyto(dst[bounds[i]:bounds[i + 1]],
                                              src[bounds[i]:bounds[i + 1]]), range(threads)))
        copy()
        t_copy = best_of(copy, 5)
    return {"peak_gflops": 2.0 * m ** 3 / t_mm / 1e9,
            "peak_gbps": 2.0 * src.nbytes / t_copy / 1e9,
            "adapter": cpu_model(), "device": "cpu"}


def torch_ceilings(torch, backend, quick):
    """fp32 matmul (TF32 off) and a device copy_ (read + write), timed after a warm-up."""
    dev = backend.device
    m = 2048 if quick else 8192
    a = torch.randn(m, m, device=dev)
    b = torch.randn(m, m, device=dev)
    values = (1 << 24) if quick else (1 << 28)
    src = torch.ones(values, device=dev)
    dst = torch.empty_like(src)

    def timed(fn, repeats):
        fn()
        backend.sync()
        best = math.inf
        for _ in range(repeats):
            t = backend.device_timer()
            t.start()
            fn()
            t.stop()
            backend.sync()
            best = min(best, t.seconds())
        return best

    t_mm = timed(lambda: a @ b, 5)
    t_copy = timed(lambda: dst.copy_(src), 10)
    adapter = torch.cuda.get_device_name() if backend.cuda else cpu_model()
    del a, b, src, dst
    if backend.cuda:
        torch.cuda.empty_cache()
    return {"peak_gflops": 2.0 * m ** 3 / t_mm / 1e9,
            "peak_gbps": 2.0 * 4 * values / t_copy / 1e9,
            "adapter": adapter, "device": "cuda" if backend.cuda else "cpu"}


# ---------------------------------------------------------------- the peers


def quiet(fn):
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fn()


class Sklearn:
    """scikit-learn under threadpoolctl's limit."""

    impl = "scikit-learn"

    def __init__(self, threads, quick):
        import sklearn
        from threadpoolctl import threadpool_limits

        self.version = sklearn.__version__
        self.threads = threads
        self.limits = threadpool_limits
        self.peak = numpy_ceilings(threads, quick)
        self.extra = {"device": "cpu", "threads": threads, "version": self.version,
                      "timing": "wall clock, best of the repeats"}
        self.warm_up()

    def warm_up(self):
        """Loads the OpenMP and BLAS pools once, off the clock."""
        x = make_blobs(2000, 8, 4, 1)
        self.run("kmeans", x, 4, 2, None)
        self.run("gmm-full", x, 4, 2, loops.gmm_start(x, 4))

    def run(self, kernel, x, k, it, start):
        """One fit; returns (seconds, iterations done, quality figures)."""
        from sklearn.cluster import KMeans
        from sklearn.decomposition import PCA
        from sklearn.mixture import GaussianMixture

        with self.limits(limits=self.threads):
            if kernel == "kmeans":
                est = KMeans(k, init=x[:k], n_init=1, algorithm="lloyd", tol=0.0, max_iter=it)
            elif kernel == "pca":
                est = PCA(k, svd_solver="covariance_eigh")
            else:
                weights, means, s2 = start
                kind = kernel.split("-")[1]
                d = x.shape[1]
                prec = (np.broadcast_to(np.eye(d) / s2, (k, d, d)).copy() if kind == "full"
                        else np.full((k, d), 1.0 / s2))
                est = GaussianMixture(k, covariance_type=kind, tol=0.0, max_iter=it,
                                      reg_covar=GMM_REG, n_init=1, init_params="random_from_data",
                                      random_state=0, weights_init=weights, means_init=means,
                                      precisions_init=prec)
            t0 = time.perf_counter()
            quiet(lambda: est.fit(x))
            seconds = time.perf_counter() - t0
        self.last = est
        if kernel == "kmeans":
            return seconds, int(est.n_iter_), {"inertia": float(est.inertia_)}
        if kernel == "pca":
            return seconds, 1, {"explained_variance_sum": float(est.explained_variance_.sum())}
        return seconds, int(est.n_iter_), {"lower_bound": float(est.lower_bound_)}


class Torch:
    """The loops of loops.py on a torch device, timed host to host after a warm-up fit."""

    impl = "torch"

    def __init__(self, device, threads, quick):
        import torch

        self.torch = torch
        self.backend = loops.TorchBackend(torch, device, threads)
        self.peak = torch_ceilings(torch, self.backend, quick)
        self.extra = {"device": self.peak["device"], "version": torch.__version__,
                      "timing": "wall clock host to host (upload included), best of the repeats;"
                                " seconds_device: CUDA events around the loop"}
        if not self.backend.cuda:
            self.extra["threads"] = torch.get_num_threads()
        self.warmed = set()

    def run(self, kernel, x, k, it, start):
        """One fit; the first of each kernel and shape follows an untimed 2-iteration fit."""
        key = (kernel, x.shape, k)
        if key not in self.warmed:
            self.warmed.add(key)
            self.run(kernel, x, k, min(it, 2), start)
        B = self.backend
        B.sync()
        t0 = time.perf_counter()
        X = B.put(x)
        timer = B.device_timer()
        timer.start()
        if kernel == "kmeans":
            C, labels, inertia = loops.kmeans(B, X, k, it)
            timer.stop()
            out = (B.host(C), B.host(labels), float(inertia))
            quality = {"inertia": out[2]}
        elif kernel == "pca":
            comps, var = loops.pca(B, X, k)
            timer.stop()
            out = (B.host(comps), B.host(var))
            quality = {"explained_variance_sum": float(out[1].sum())}
        else:
            labels, bound, _ = loops.gmm(B, X, kernel.split("-")[1], k, it, GMM_REG, start)
            timer.stop()
            out = (B.host(labels), float(bound))
            quality = {"lower_bound": out[1]}
        B.sync()
        seconds = time.perf_counter() - t0
        quality["seconds_device"] = timer.seconds()
        del X, out
        return seconds, it, quality


class Faiss:
    """faiss.Kmeans from the same first k rows, without subsampling (K-Means only)."""

    impl = "faiss"

    def __init__(self, threads, quick, use_gpu):
        import faiss

        self.faiss = faiss
        self.gpu = use_gpu and hasattr(faiss, "get_num_gpus") and faiss.get_num_gpus() > 0
        if not self.gpu:
            faiss.omp_set_num_threads(threads)
        self.peak = None  # borrowed from the peer on the same device (set by main)
        self.extra = {"device": "cuda" if self.gpu else "cpu", "version": faiss.__version__,
                      "timing": "wall clock, best of the repeats"}
        if not self.gpu:
            self.extra["threads"] = threads

    def run(self, kernel, x, k, it, start):
        n, d = x.shape
        km = self.faiss.Kmeans(d, k, niter=it, seed=1, gpu=self.gpu, spherical=False,
                               max_points_per_centroid=n, min_points_per_centroid=1,
                               verbose=False)
        t0 = time.perf_counter()
        km.train(x, init_centroids=np.ascontiguousarray(x[:k]))
        seconds = time.perf_counter() - t0
        return seconds, it, {"objective_last_iteration": float(km.obj[-1]),
                             "centroids": km.centroids}


# ---------------------------------------------------------------- driver


def parse_list(text, kind=str, sep=","):
    return [kind(v) for v in text.split(sep) if v.strip()]


def arguments(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n", 2)[2])
    src = p.add_mutually_exclusive_group()
    src.add_argument("--fmnist", metavar="DIR", help="Fashion-MNIST idx files (train + test)")
    src.add_argument("--input", metavar="X.npy", help="a 2-D .npy matrix (cast to float32)")
    src.add_argument("--blobs", metavar="N,D,K", help="synthetic Gaussian blobs")
    p.add_argument("--seed", type=int, default=0, help="seed of --blobs (default 0)")
    p.add_argument("--name", help="the `data` label of the records (default: from the source)")
    p.add_argument("--write-npy", metavar="PATH",
                   help="save the matrix used as float32 .npy (and PATH.pcaP.npy, the "
                        "projection the mixtures use, when they run on one)")
    p.add_argument("--prepare", action="store_true",
                   help="only load/make the data and write --write-npy; measure nothing")
    p.add_argument("--only", default=",".join(KERNELS), help="fits to run (default: all)")
    p.add_argument("--impl", default=",".join(IMPLS), help="peers to run (default: all installed)")
    p.add_argument("--k", help="clusters for K-Means (default 10,256; the blobs' K for --blobs)")
    p.add_argument("--gmm-k", type=int, default=10, help="mixture components (default 10)")
    p.add_argument("--pca-components", type=int, default=50, help="PCA components (default 50)")
    p.add_argument("--gmm-pca", type=int, default=50,
                   help="mixtures run on this many principal components when D is larger "
                        "(default 50; 0: on the raw data)")
    p.add_argument("--gmm-input", metavar="X.npy",
                   help="the mixtures run on this matrix (e.g. a projection written before by "
                        "--write-npy) instead of projecting the data")
    p.add_argument("--iterations", type=int,
                   help="iterations of every fit (default: 30 for K-Means, 20 for EM)")
    p.add_argument("--em-iterations", type=int, help="iterations of EM (default: --iterations)")
    p.add_argument("--kmeans-iterations", metavar="K:IT,...",
                   help="iterations of the K-Means fit with K clusters, per K (default: "
                        "--iterations); the GPU kit passes the counts our fits did, so that "
                        "both sides do the same work")
    p.add_argument("--repeats", type=int, default=1, help="timed runs per fit, best kept")
    p.add_argument("--threads", type=int, default=2, help="CPU threads of the CPU peers")
    p.add_argument("--torch-device", help="cuda or cpu (default: cuda when available)")
    p.add_argument("--max-seconds", type=float,
                   help="start no new fit after this many seconds (the rest is skipped)")
    p.add_argument("--quick", action="store_true",
                   help="small shapes for a smoke run (at most 5000 rows, few iterations)")
    p.add_argument("--self-check", action="store_true",
                   help="compare the torch loops (and the numpy stand-in) with scikit-learn on "
                        "a small case; exit 1 on a relative difference over 1e-3")
    p.add_argument("--out", metavar="FILE", help="write the JSON lines here (default stdout)")
    p.add_argument("--append", action="store_true", help="append to --out instead of replacing")
    return p.parse_args(argv)


def load_data(a):
    """(matrix, label); --quick keeps at most 5000 rows."""
    if a.fmnist:
        x, name = load_fmnist(a.fmnist), "fashion-mnist"
    elif a.input:
        x = np.load(a.input, mmap_mode="r")
        if x.ndim != 2:
            raise SystemExit(f"peers: {a.input}: expected a 2-D matrix, found {x.shape}")
        x, name = np.ascontiguousarray(x, dtype=np.float32), os.path.basename(a.input)
    elif a.blobs:
        n, d, c = parse_list(a.blobs, int)
        x, name = make_blobs(n, d, c, a.seed), f"blobs-{n}x{d}-{c}-seed{a.seed}"
    elif a.quick:
        x, name = make_blobs(4000, 32, 8, a.seed), f"blobs-4000x32-8-seed{a.seed}"
    else:
        raise SystemExit("peers: give the data: --fmnist DIR, --input X.npy or --blobs N,D,K")
    if a.quick and x.shape[0] > 5000:
        x, name = x[:5000].copy(), name + "-first5000"
    if not np.isfinite(x).all():
        raise SystemExit("peers: the data has non-finite values")
    return x, a.name or name


def open_peers(a, impls):
    """The peers that can run here; one stderr line for each one that cannot."""
    peers = []
    if "torch" in impls:
        try:
            import torch

            dev = a.torch_device or ("cuda" if torch.cuda.is_available() else "cpu")
            if dev.startswith("cuda") and not torch.cuda.is_available():
                note("torch: CUDA is not available to torch; torch peer skipped "
                     "(--torch-device cpu runs it on the CPU)")
            else:
                peers.append(Torch(dev, a.threads, a.quick))
        except ImportError:
            note("torch: not installed; torch peer skipped")
    if "faiss" in impls:
        try:
            peers.append(Faiss(a.threads, a.quick, (a.torch_device or "cuda") == "cuda"))
        except ImportError:
            note("faiss: not installed; FAISS peer skipped")
    if "scikit-learn" in impls or "sklearn" in impls:
        try:
            peers.append(Sklearn(a.threads, a.quick))
        except ImportError as e:
            note(f"scikit-learn: not installed ({e.name}); scikit-learn peer skipped "
                 "(pip install scikit-learn threadpoolctl)")
    for p in peers:
        if p.impl == "faiss":
            same = [q for q in peers if q.extra.get("device") == p.extra["device"] and q.peak]
            p.peak = same[0].peak if same else numpy_ceilings(a.threads, a.quick)
    return peers


def plan(a, x):
    """[(kernel, matrix, k, iterations, data suffix)] in the order they run."""
    only = parse_list(a.only)
    unknown = [o for o in only if o not in KERNELS]
    if unknown:
        raise SystemExit(f"peers: unknown --only {unknown}; known: {', '.join(KERNELS)}")
    if a.k:
        ks = parse_list(a.k, int)
    elif a.blobs:
        ks = [parse_list(a.blobs, int)[2]]
    else:
        ks = [10, 64] if a.quick else [10, 256]
    it_km = a.iterations or (5 if a.quick else 30)
    it_em = a.em_iterations or a.iterations or (5 if a.quick else 20)
    n, d = x.shape
    jobs = []
    per_k = {k: it for k, it in (parse_list(pair, int, ":")
                                 for pair in parse_list(a.kmeans_iterations or ""))}
    if "kmeans" in only:
        jobs += [("kmeans", x, k, per_k.get(k, it_km), "") for k in ks if k <= n]
    if "pca" in only:
        jobs.append(("pca", x, min(a.pca_components, d), 1, ""))
    gmm = [o for o in only if o.startswith("gmm")]
    if gmm:
        p = a.gmm_pca
        if a.gmm_input:
            xm = np.ascontiguousarray(np.load(a.gmm_input), dtype=np.float32)
            suffix = "-" + os.path.basename(a.gmm_input).rsplit(".npy", 1)[0].split(".")[-1]
        else:
            xm, suffix = (project(x, p), f"-pca{p}") if 0 < p < d else (x, "")
        jobs += [(g, xm, a.gmm_k, it_em, suffix) for g in gmm]
    return jobs


def write_npy(a, x, jobs):
    np.save(a.write_npy, x)
    note(f"wrote {a.write_npy} ({x.shape[0]} x {x.shape[1]} float32)")
    projected = [j for j in jobs if j[4]]
    if projected:
        stem = a.write_npy[:-4] if a.write_npy.endswith(".npy") else a.write_npy
        path = f"{stem}.{projected[0][4][1:]}.npy"
        np.save(path, projected[0][1])
        note(f"wrote {path} (the matrix the mixtures run on)")


def measure(a, peers, jobs, data, emit):
    t_start = time.perf_counter()
    for kernel, x, k, it, suffix in jobs:
        start = loops.gmm_start(x, k) if kernel.startswith("gmm") else None
        for peer in peers:
            if peer.impl == "faiss" and kernel != "kmeans":
                continue
            if a.max_seconds and time.perf_counter() - t_start > a.max_seconds:
                note(f"{peer.impl} {kernel} k={k}: skipped, past --max-seconds {a.max_seconds}")
                continue
            try:
                runs = [peer.run(kernel, x, k, it, start) for _ in range(max(1, a.repeats))]
            except Exception as e:  # one failing fit must not lose the others
                note(f"{peer.impl} {kernel} {x.shape[0]}x{x.shape[1]} k={k}: failed: {e!r}")
                continue
            seconds, done, quality = min(runs, key=lambda r: r[0])
            quality.pop("centroids", None)
            extra = dict(peer.extra, data=data + suffix, iterations_requested=it,
                         repeats=len(runs), **quality)
            emit(record(peer.impl, kernel, (x.shape[0], x.shape[1], k, done), seconds,
                        peer.peak, extra))


def main(argv=None):
    a = arguments(argv)
    if a.self_check:
        import selfcheck

        return selfcheck.run(a)
    x, data = load_data(a)
    note(f"data {data}: {x.shape[0]} x {x.shape[1]}")
    jobs = plan(a, x)
    if a.write_npy:
        write_npy(a, x, jobs)
    if a.prepare:
        return 0
    peers = open_peers(a, parse_list(a.impl))
    if not peers:
        note("no peer can run here")
        return 1
    out = open(a.out, "a" if a.append else "w") if a.out else sys.stdout

    def emit(rec):
        out.write(json.dumps(rec) + "\n")
        out.flush()
        note(f"{rec['impl']:>12} {rec['kernel']:<8} n={rec['n']} d={rec['d']} k={rec['k']} "
             f"it={rec['iterations']}: {rec['seconds']:.3f} s, {rec['gflops']:.1f} GFLOP/s, "
             f"efficiency {rec['efficiency']:.3f}")

    measure(a, peers, jobs, data, emit)
    if out is not sys.stdout:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
