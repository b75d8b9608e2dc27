"""Issue 24's spectral-clustering benchmark: scikit-learn's SpectralClustering (2 threads)
and this crate's `spectral_bench` example on the same points, in the same run.

    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 python benches/peers/spectral.py [TIMEOUT_S]

Data: scikit-learn's make_moons(n, noise=0.05) and make_circles(n, noise=0.05, factor=0.5),
random_state=0, written as float32 .npy. Times: scikit-learn's fit_predict; the crate's fit
with the data already on the device (`fit_seconds`) and the whole process (adapter, file).
ARI against the true labels for both. A crate run past TIMEOUT_S (default 300) is reported as
such.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")

import numpy as np  # noqa: E402
from sklearn.cluster import SpectralClustering  # noqa: E402
from sklearn.datasets import make_circles, make_moons  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402

BIN = os.path.join(os.path.dirname(__file__), "../../target/release/examples/spectral_bench")
CASES = [
    ("moons", 5000, "nn", 10),
    ("circles", 5000, "nn", 10),
    ("moons", 5000, "rbf", 30.0),
    ("moons", 50000, "nn", 10),
]


def main():
    timeout = float(sys.argv[1]) if len(sys.argv) > 1 else 300.0
    print("load:", os.getloadavg(), flush=True)
    tmp = tempfile.mkdtemp()
    for shape, n, graph, param in CASES:
        make = make_moons if shape == "moons" else make_circles
        kw = {} if shape == "moons" else {"factor": 0.5}
        x, y = make(n, noise=0.05, random_state=0, **kw)
        path = os.path.join(tmp, f"{shape}{n}.npy")
        np.save(path, x.astype(np.float32))
        sk = SpectralClustering(
            2,
            affinity="nearest_neighbors" if graph == "nn" else "rbf",
            n_neighbors=int(param) if graph == "nn" else 10,
            gamma=float(param) if graph == "rbf" else 1.0,
            random_state=0,
        )
        t = time.perf_counter()
        sk_labels = sk.fit_predict(x)
        sk_s = time.perf_counter() - t
        out = os.path.join(tmp, "labels.npy")
        t = time.perf_counter()
        try:
            run = subprocess.run(
                [BIN, path, "2", graph, str(param), "--labels", out],
                capture_output=True, text=True, timeout=timeout,
            )
            wall = time.perf_counter() - t
            if run.returncode != 0:
                ours = {"error": run.stderr.strip().splitlines()[-1:]}
            else:
                ours = json.loads(run.stdout.strip().splitlines()[-1])
                labels = np.load(out).ravel().astype(int)
                ours["ari"] = round(adjusted_rand_score(y, labels), 4)
                ours["process_seconds"] = round(wall, 2)
        except subprocess.TimeoutExpired:
            ours = {"error": f"over {timeout:.0f} s"}
        print(json.dumps({
            "data": f"{shape} {n}", "graph": graph, "param": param,
            "sklearn_seconds": round(sk_s, 3),
            "sklearn_ari": round(adjusted_rand_score(y, sk_labels), 4),
            "crate": ours,
        }), flush=True)
    print("load:", os.getloadavg(), flush=True)


if __name__ == "__main__":
    main()
