"""Time per iteration of the Dask K-Means fit with 1 and 2 workers against the
single-process fit on the same rows, and the per-iteration overhead the scheduler adds.

Per-iteration times are differences: a fit of `--long` Lloyd iterations minus one of
`--short`, from the same given start (tol = 0, so both run exactly that many), divided by
the difference; the start, the tolerance pass and the final passes cancel. The overhead is
the same measure on rows too few to cost anything (the same number of partitions, 64 rows
each): what one map and one reduction cost without GPU work. Each cluster's workers share
the machine's cores (LP_NUM_THREADS = cores / workers for the software driver).

    python python/benchmarks/bench_dask.py [--rows N] [--partitions P] [--k K]
"""

import argparse
import json
import os
import time

import numpy as np

import wgpu_unsupervised as wu
from fashion_mnist import DEFAULT, load


def per_iteration(fit, short, long):
    times = {}
    for n in (short, long):
        began = time.perf_counter()
        model = fit(n)
        times[n] = time.perf_counter() - began
        assert model.n_iter_ == n, (model.n_iter_, n)
    return (times[long] - times[short]) / (long - short), times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--data", default=str(DEFAULT))
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--short", type=int, default=2)
    ap.add_argument("--long", type=int, default=12)
    args = ap.parse_args()
    X, _ = load(args.data, args.rows)
    n, d = X.shape
    k, short, long = args.k, args.short, args.long
    start = X[np.random.default_rng(0).choice(n, k, replace=False)].astype(np.float64)
    cores = os.cpu_count() or 1
    results = []

    def record(setup, seconds, times, **extra):
        r = dict(setup=setup, n=n, d=d, k=k, partitions=args.partitions,
                 seconds_per_iteration=round(seconds, 4),
                 fit_seconds={str(a): round(b, 3) for a, b in times.items()}, **extra)
        results.append(r)
        print(json.dumps(r), flush=True)

    single, times = per_iteration(
        lambda m: wu.KMeans(k, init=start, max_iter=m, tol=0.0).fit(X), short, long)
    record("single process", single, times)

    import dask.array as da
    from distributed import Client, LocalCluster

    from wgpu_unsupervised import dask as wd

    chunk = -(-n // args.partitions)
    tiny = np.ascontiguousarray(X[: 64 * args.partitions])
    for workers in (1, 2):
        env = {"LP_NUM_THREADS": str(max(1, cores // workers))}
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None, env=env) as cluster, Client(cluster) as client:
            Xd = client.persist(da.from_array(X, chunks=(chunk, d)))
            # Warm up: every worker opens its device and builds its pipelines.
            wd.KMeans(k, init=start, max_iter=1, tol=0.0).fit(Xd)
            seconds, times = per_iteration(
                lambda m: wd.KMeans(k, init=start, max_iter=m, tol=0.0).fit(Xd), short, long)
            record(f"Dask, {workers} worker(s)", seconds, times, speedup=round(single / seconds, 2))
            Td = client.persist(da.from_array(tiny, chunks=(64, d)))
            wd.KMeans(k, init=tiny[:k].astype(np.float64), max_iter=1, tol=0.0).fit(Td)
            overhead, times = per_iteration(
                lambda m: wd.KMeans(k, init=tiny[:k].astype(np.float64), max_iter=m, tol=0.0).fit(Td),
                short, long)
            record(f"Dask, {workers} worker(s), scheduler overhead ({args.partitions} x 64 rows)",
                   overhead, times)

    print(f"\nmachine: {cores} CPUs, device {wu.device()}, load {os.getloadavg()}")
    print("| setup | s / iteration | vs single process |\n|---|---|---|")
    for r in results:
        print(f"| {r['setup']} | {r['seconds_per_iteration']} | {r.get('speedup', '')} |")


if __name__ == "__main__":
    main()
