"""Fashion-MNIST 70k (train then t10k) as float32 pixels / 255, from the idx.gz files the
repository's data README describes (not in the repository: 220 MB as float32)."""

import gzip
from pathlib import Path

import numpy as np

DEFAULT = Path(__file__).resolve().parents[3] / "shared" / "data" / "fashion-mnist"


def load(folder=DEFAULT, n=None):
    """(X, y): 70000 x 784 float32 in [0, 1] and the labels, or the first ``n`` rows."""
    folder = Path(folder)
    xs, ys = [], []
    for part in ("train", "t10k"):
        with gzip.open(folder / f"{part}-images-idx3-ubyte.gz") as f:
            xs.append(np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, 784))
        with gzip.open(folder / f"{part}-labels-idx1-ubyte.gz") as f:
            ys.append(np.frombuffer(f.read(), dtype=np.uint8, offset=8))
    X = np.concatenate(xs).astype(np.float32) / 255.0
    y = np.concatenate(ys).astype(np.int64)
    return (X, y) if n is None else (X[:n], y[:n])
