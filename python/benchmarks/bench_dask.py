"""Time per iteration of the Dask K-Means fit with 1 and 2 workers against the
single-process fit on the same rows, and the per-iteration overhead the scheduler adds.

Per-iteration times are differences: a fit of `--long` Lloyd iterations minus one of
`--short`, from the same given start (tol = 0, so both run exactly that many), divided by
the difference; the start, the tolerance pass and the final passes cancel. The overhead is
the same measure on rows too few to cost anything (the same number of partitions, 64 rows
each): what one map and one reduction cost without GPU work. The workers of each cluster
share the machine's cores (LP_NUM_THREADS = cores / workers for the software driver). The
setups are measured in turn, `--repeats` times, so that a machine whose load changes
disturbs them alike; the table gives the median and the best of the repeats.

    python python/benchmarks/bench_dask.py [--rows N] [--partitions P] [--k K] [--repeats R]
"""

import argparse
import json
import os
import statistics
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
    return (times[long] - times[short]) / (long - short)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--data", default=str(DEFAULT))
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--short", type=int, default=2)
    ap.add_argument("--long", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    X, _ = load(args.data, args.rows)
    n, d = X.shape
    k, short, long = args.k, args.short, args.long
    start = X[np.random.default_rng(0).choice(n, k, replace=False)].astype(np.float64)
    cores = os.cpu_count() or 1

    import dask.array as da
    from distributed import Client, LocalCluster

    from wgpu_unsupervised import dask as wd

    chunk = -(-n // args.partitions)
    tiny = np.ascontiguousarray(X[: 64 * args.partitions])
    tiny_start = tiny[:k].astype(np.float64)
    setups = {"single process": lambda m: wu.KMeans(k, init=start, max_iter=m, tol=0.0).fit(X)}
    clients = []
    for workers in (1, 2):
        env = {"LP_NUM_THREADS": str(max(1, cores // workers))}
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, env=env)
        client = Client(cluster, set_as_default=False)
        clients.append((cluster, client))
        Xd = client.persist(da.from_array(X, chunks=(chunk, d)))
        Td = client.persist(da.from_array(tiny, chunks=(64, d)))
        setups[f"Dask, {workers} worker(s)"] = (
            lambda m, c=client, Xd=Xd: wd.KMeans(k, init=start, max_iter=m, tol=0.0, client=c).fit(Xd))
        setups[f"Dask, {workers} worker(s): overhead, {args.partitions} x 64 rows"] = (
            lambda m, c=client, Td=Td: wd.KMeans(k, init=tiny_start, max_iter=m, tol=0.0, client=c).fit(Td))
    # Warm up: every process opens its device and builds and tunes its pipelines.
    for fit in setups.values():
        fit(1)
    samples = {name: [] for name in setups}
    for rep in range(args.repeats):
        for name, fit in setups.items():
            seconds = per_iteration(fit, short, long)
            samples[name].append(seconds)
            print(json.dumps(dict(setup=name, repeat=rep, n=n, d=d, k=k, partitions=args.partitions,
                                  seconds_per_iteration=round(seconds, 4), load=os.getloadavg()[0])),
                  flush=True)
    for cluster, client in clients:
        client.close()
        cluster.close()

    single = statistics.median(samples["single process"])
    print(f"\nmachine: {cores} CPUs, device {wu.device()}, load {os.getloadavg()}")
    print(f"Fashion-MNIST {n} x {d}, k = {k}, {args.partitions} partitions, "
          f"{args.repeats} repeats of ({long} - {short}) iterations")
    print("| setup | s / iteration (median) | best | single process / this (median) |")
    print("|---|---:|---:|---:|")
    for name, values in samples.items():
        med = statistics.median(values)
        ratio = "" if "overhead" in name else f"{single / med:.2f}"
        print(f"| {name} | {med:.3f} | {min(values):.3f} | {ratio} |")


if __name__ == "__main__":
    main()
