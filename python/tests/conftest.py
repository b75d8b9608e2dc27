"""Shared fixtures: the real datasets of the repository (tests/data: Iris and Digits, see
its README for their origin and licence)."""

from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"


@pytest.fixture(scope="session")
def iris():
    return np.load(DATA / "iris_X.npy"), np.load(DATA / "iris_y.npy")


@pytest.fixture(scope="session")
def digits():
    return np.load(DATA / "digits_X.npy"), np.load(DATA / "digits_y.npy")


@pytest.fixture(scope="session")
def blobs():
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=3000, n_features=6, centers=5, cluster_std=0.6, random_state=3)
    return X.astype(np.float32), y
