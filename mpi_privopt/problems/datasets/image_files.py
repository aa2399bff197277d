"""Real MNIST and CIFAR-10 from a user's files (the task cannot download them).

MNIST: the four IDX files of the original distribution, plain or gzipped, in ``data_dir``::

    train-images-idx3-ubyte  train-labels-idx1-ubyte
    t10k-images-idx3-ubyte   t10k-labels-idx1-ubyte

CIFAR-10: the "python version" batches (``data_batch_1`` .. ``data_batch_5``, ``test_batch``),
in ``data_dir`` or in ``data_dir/cifar-10-batches-py`` (the folder of the official archive).
The batches are pickles: only read files you trust (unpickling runs code).

Missing or malformed files raise :class:`DataError` naming the path expected and the fix.
"""
from __future__ import annotations

import gzip
import os
import pickle

import numpy as np

from mpi_privopt.errors import ConfigError, DataError
from mpi_privopt.problems.datasets.images import STAND_INS, ImageData

__all__ = ["MNIST_FILES", "CIFAR_FILES", "CIFAR_SUBDIR", "DATASETS", "load_mnist",
           "load_cifar10", "load_image_data", "read_idx"]

#: (train images, train labels, test images, test labels)
MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
               "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
CIFAR_FILES = tuple(f"data_batch_{k}" for k in range(1, 6)) + ("test_batch",)
CIFAR_SUBDIR = "cifar-10-batches-py"

_MNIST_URL = "http://yann.lecun.com/exdb/mnist/ (or any mirror of the four IDX files)"
_CIFAR_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
# IDX magic: 0x08 = unsigned byte, then the number of dimensions
_IDX_UBYTE = 0x08


def _find(data_dir: str, name: str, dataset: str, fix: str) -> str:
    for candidate in (os.path.join(data_dir, name), os.path.join(data_dir, name + ".gz")):
        if os.path.isfile(candidate):
            return candidate
    raise DataError(f"{dataset}: file {os.path.join(data_dir, name)!r} (or .gz) not found", fix)


def read_idx(path: str, dims: int) -> np.ndarray:
    """An IDX file of unsigned bytes with ``dims`` dimensions (gzipped if it ends in .gz)."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as fh:
            raw = fh.read()
    except OSError as err:
        raise DataError(f"cannot read {path!r}: {err}", "check the file's permissions") from None
    header = 4 + 4 * dims
    if len(raw) < header or raw[0] != 0 or raw[1] != 0 or raw[2] != _IDX_UBYTE \
            or raw[3] != dims:
        raise DataError(f"{path!r} is not an IDX file of unsigned bytes with {dims} "
                        f"dimension(s) (bad magic number)",
                        "use the original MNIST files (uncompressed or .gz)")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=dims, offset=4))
    if len(raw) - header != int(np.prod(shape)):
        raise DataError(f"{path!r}: {len(raw) - header} data bytes, the header says "
                        f"{int(np.prod(shape))} for shape {shape} (truncated file?)",
                        "download the file again")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)


def load_mnist(data_dir: str) -> ImageData:
    """MNIST from its four IDX files in ``data_dir`` (60000 train, 10000 test images)."""
    fix = (f"put {', '.join(MNIST_FILES)} (plain or .gz, from {_MNIST_URL}) in "
           f"{data_dir!r}, or use dataset = \"digits\" (the offline stand-in)")
    paths = [_find(data_dir, name, "mnist", fix) for name in MNIST_FILES]
    arrays = [read_idx(p, 3 if k % 2 == 0 else 1) for k, p in enumerate(paths)]
    for images, labels, pi, pl in ((arrays[0], arrays[1], paths[0], paths[1]),
                                   (arrays[2], arrays[3], paths[2], paths[3])):
        if images.shape[0] != labels.shape[0]:
            raise DataError(f"{pi!r} holds {images.shape[0]} images but {pl!r} "
                            f"{labels.shape[0]} labels", "use matching MNIST files")
    return ImageData("mnist", arrays[0][:, None], arrays[1].astype(np.int64),
                     arrays[2][:, None], arrays[3].astype(np.int64), 1.0 / 255.0)


def _cifar_batch(path: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        with open(path, "rb") as fh:
            batch = pickle.load(fh, encoding="bytes")
        data = np.asarray(batch[b"data"], dtype=np.uint8)
        labels = np.asarray(batch[b"labels"], dtype=np.int64)
    except (OSError, pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError) as err:
        raise DataError(f"{path!r} is not a CIFAR-10 python batch ({type(err).__name__}: "
                        f"{err})", f"use the batches of {_CIFAR_URL}") from None
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or data.shape[0] != labels.size:
        raise DataError(f"{path!r}: data of shape {data.shape} with {labels.size} labels, "
                        f"expected (N, 3072) and N labels", f"use the batches of {_CIFAR_URL}")
    return data.reshape(-1, 3, 32, 32), labels


def load_cifar10(data_dir: str) -> ImageData:
    """CIFAR-10 from its python batches (50000 train, 10000 test images)."""
    nested = os.path.join(data_dir, CIFAR_SUBDIR)
    folder = nested if os.path.isdir(nested) else data_dir
    fix = (f"unpack {_CIFAR_URL} into {data_dir!r} (it makes {CIFAR_SUBDIR}/ with "
           f"{', '.join(CIFAR_FILES)}), or use dataset = \"colour-digits\" (the offline "
           f"stand-in)")
    batches = []
    for name in CIFAR_FILES:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            raise DataError(f"cifar10: file {path!r} not found", fix)
        batches.append(_cifar_batch(path))
    train_images = np.concatenate([b[0] for b in batches[:-1]])
    train_labels = np.concatenate([b[1] for b in batches[:-1]])
    return ImageData("cifar10", train_images, train_labels, batches[-1][0], batches[-1][1],
                     1.0 / 255.0)


#: every data set the personalised task knows: the stand-ins and the real ones
DATASETS = ("digits", "colour-digits", "mnist", "cifar10")
_REAL = {"mnist": (load_mnist, "digits"), "cifar10": (load_cifar10, "colour-digits")}


def load_image_data(name: str, data_dir: str | None) -> ImageData:
    """The data set ``name`` (one of :data:`DATASETS`); real ones read from ``data_dir``."""
    if name in STAND_INS:
        data = STAND_INS[name][1]()
    elif name in _REAL:
        loader, stand_in = _REAL[name]
        if not data_dir:
            raise ConfigError(f"dataset {name!r} is read from your files, but no data_dir "
                              f"is given", f"set data_dir ([problem.options]) to the folder "
                              f"holding them, or use dataset = \"{stand_in}\" (the offline "
                              f"stand-in)")
        if not os.path.isdir(data_dir):
            raise DataError(f"data_dir {data_dir!r} (for dataset {name!r}) is not a folder",
                            "give the folder that holds the data set's files (paths are "
                            "relative to the job's working directory)")
        data = loader(data_dir)
    else:
        raise ConfigError(f"unknown dataset {name!r}", f"use one of {list(DATASETS)}")
    for labels in (data.train_labels, data.test_labels):
        if labels.size and (labels.min() < 0 or labels.max() >= data.classes):
            raise DataError(f"dataset {name!r}: labels outside 0..{data.classes - 1} "
                            f"(found {int(labels.min())}..{int(labels.max())})",
                            "use the original files")
    return data
