"""The Figure 2 stand-in data: scikit-learn's bundled breast-cancer set, split over agents.

The paper's MNIST and Reuters sets need downloads; ``load_breast_cancer`` ships inside the
scikit-learn wheel (569 samples, 30 features, 2 classes). Features are standardised with
the training split's mean and deviation, an intercept column of ones is appended, 20 % of
the samples (stratified) are held out as the test set, and the training samples are dealt
at random to the agents in equal shares (IID), written as ``.npz`` files the package reads
through ``problem.data`` (arrays X, y, agent).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mpi_privopt.problems.datasets.agent_data import classification_labels

__all__ = ["write_breast_cancer", "test_accuracy"]


def write_breast_cancer(folder: Path, agents: int, seed: int) -> tuple[Path, Path]:
    """Write ``train.npz`` (X, y, agent) and ``test.npz`` (X, y) under ``folder``.

    Returns
    -------
    (train_path, test_path)
    """
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.2, random_state=seed, stratify=y)
    mean, scale = X_train.mean(axis=0), X_train.std(axis=0)

    def prepare(A: np.ndarray) -> np.ndarray:
        return np.hstack([(A - mean) / scale, np.ones((len(A), 1))])

    owner = np.arange(len(y_train)) % agents
    np.random.default_rng(seed).shuffle(owner)
    folder.mkdir(parents=True, exist_ok=True)
    train, test = folder / "train.npz", folder / "test.npz"
    np.savez(train, X=prepare(X_train), y=y_train.astype(float), agent=owner.astype(float))
    np.savez(test, X=prepare(X_test), y=y_test.astype(float))
    return train, test


def test_accuracy(models: np.ndarray, test_path: Path) -> np.ndarray:
    """Test accuracy of each row of ``models`` (labels 0/1 read as -1/+1; sign(0) = +1)."""
    with np.load(test_path) as data:
        X, y = data["X"], classification_labels(data["y"], str(test_path))
    predictions = np.where(np.atleast_2d(models) @ X.T < 0, -1.0, 1.0)
    return (predictions == y).mean(axis=1)
