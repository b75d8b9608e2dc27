"""The client's memory during Dask fits over many rows (issue 35, item 4): the rows are made
on the workers (never on the client), persisted, and fitted; a thread samples the client
process's resident set size every 20 ms. Prints one JSON line per fit.

    python python/benchmarks/dask_memory.py [--rows 8000000 32000000] [--d 8] [--k 8]

The client should hold O(K·D): its RSS grows by the same few MB whatever the rows (before
issue 35 it gathered every row's label and distance: 26-29 bytes a row).
"""

import argparse
import json
import os
import threading
import time

import numpy as np
import psutil


class PeakRss:
    """The largest RSS of this process while the block runs, sampled every 20 ms."""

    def __init__(self):
        self.process = psutil.Process()
        self.peak = 0
        self._stop = threading.Event()

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.02)

    def __enter__(self):
        self.start = self.process.memory_info().rss
        self.peak = self.start
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, nargs="+", default=[8_000_000, 32_000_000])
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--partitions-rows", type=int, default=1_000_000)
    ap.add_argument("--max-iter", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    import dask.array as da
    from distributed import Client, LocalCluster

    from wgpu_unsupervised import dask as wd

    cores = os.cpu_count() or 1
    env = {"LP_NUM_THREADS": str(max(1, cores // args.workers))}
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, env=env, memory_limit=0)
    client = Client(cluster)
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 10, size=(args.k, args.d))
    start = centres + rng.normal(0, 1, size=centres.shape)
    try:
        for n in args.rows:
            chunks = (args.partitions_rows, args.d)
            # Blobs made on the workers: a centre per row plus unit noise, float32.
            state = da.random.RandomState(n)
            which = state.randint(0, args.k, size=n, chunks=chunks[0])
            noise = state.normal(0, 1, size=(n, args.d), chunks=chunks)
            X = (da.from_array(centres)[which] + noise).astype(np.float32)
            X = client.persist(X)
            client.wait_for_workers(args.workers)
            X.sum().compute()  # made and held on the workers before the measure starts
            # One start with a centre far from every row: its cluster empties on the first
            # pass and is repaired (the partitions send their farthest rows, not every row).
            far = start.copy()
            far[-1] = 1e3
            for name, est in (
                ("kmeans", wd.KMeans(args.k, init=start, max_iter=args.max_iter, tol=0.0)),
                ("kmeans-repair", wd.KMeans(args.k, init=far, max_iter=args.max_iter, tol=0.0)),
                ("gmm-diag", wd.GaussianMixture(args.k, covariance_type="diag",
                                                means_init=start, max_iter=args.max_iter, tol=0.0)),
            ):
                began = time.perf_counter()
                with PeakRss() as rss:
                    est.fit(X)
                    # The labels counted where they are: K numbers come back.
                    counts = da.bincount(est.labels_, minlength=args.k).compute()
                print(json.dumps(dict(
                    fit=name, rows=n, d=args.d, k=args.k, partitions=len(X.chunks[0]),
                    iterations=int(est.n_iter_), seconds=round(time.perf_counter() - began, 1),
                    client_rss_before_mb=round(rss.start / 2**20, 1),
                    client_rss_peak_mb=round(rss.peak / 2**20, 1),
                    client_growth_mb=round((rss.peak - rss.start) / 2**20, 1),
                    labels_counted_on_workers=int(counts.sum()),
                )), flush=True)
            del X
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
