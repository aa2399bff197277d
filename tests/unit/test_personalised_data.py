"""The personalised task's data: stand-ins, the 60/40 class split, real-file loaders."""
from __future__ import annotations

import gzip
import pickle

import numpy as np
import pytest

from mpi_privopt.errors import ConfigError, DataError
from mpi_privopt.problems.datasets.class_split import OWN_SHARE, claimants, split_by_class
from mpi_privopt.problems.datasets.images import (MIN_CONTRAST, TEST_FRACTION, colour_digits,
                                             digits)
from mpi_privopt.problems.datasets.image_files import (MNIST_FILES, load_cifar10, load_image_data,
                                              load_mnist)
from mpi_privopt.methods.chen2025.problems.personalised import build_personalised


# --- stand-ins ---------------------------------------------------------------------------

def test_digits_are_scaled_to_unit_interval_and_split_by_class():
    data = digits()
    assert data.train_images.shape[1:] == (1, 8, 8) and data.train_images.dtype == np.uint8
    assert data.train_labels.size + data.test_labels.size == 1797
    scaled = data.as_float(data.train_images)
    assert scaled.min() == 0.0 and scaled.max() == 1.0
    all_labels = np.concatenate([data.train_labels, data.test_labels])
    for c in range(10):
        n_c = int(np.sum(all_labels == c))
        assert int(np.sum(data.test_labels == c)) == round(TEST_FRACTION * n_c)


def test_colour_digits_are_deterministic_coloured_and_keep_the_labels():
    a, b = colour_digits(), colour_digits()
    for name in ("train_images", "train_labels", "test_images", "test_labels"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    grey = digits()
    assert np.array_equal(a.train_labels, grey.train_labels)     # same split, same digits
    assert a.train_images.shape[1:] == (3, 8, 8)
    img = a.as_float(a.train_images)
    # not grey: the channels differ, and colours vary from image to image
    assert np.mean(np.abs(img[:, 0] - img[:, 1])) > 0.05
    assert np.std(img.mean(axis=(2, 3)), axis=0).min() > 0.1
    # the digit is visible: in every image the pixels lit in the grey image are brighter
    # than the unlit ones (a random brightness order would make half of them darker), by
    # MIN_CONTRAST typically (less where intensity < 1, clipping and noise eat into it)
    g = grey.as_float(grey.train_images)[:, 0]
    fg = np.array([img[k][:, g[k] >= 0.75].mean() for k in range(len(img))])
    bg = np.array([img[k][:, g[k] == 0.0].mean() for k in range(len(img))])
    assert np.all(fg - bg > 0.05) and np.median(fg - bg) > MIN_CONTRAST


def test_colour_digits_upsampling_is_nearest_neighbour():
    small, big = colour_digits(), colour_digits(upsample=2)
    assert big.train_images.shape[1:] == (3, 16, 16)
    assert np.array_equal(big.train_images[:, :, ::2, ::2], small.train_images)
    assert np.array_equal(big.train_images[:, :, 1::2, 1::2], small.train_images)


# --- the split ---------------------------------------------------------------------------

def test_heterogeneous_claims_are_the_method_page_pairs():
    assert claimants("heterogeneous", 5, 10) == [[0], [0], [1], [1], [2], [2], [3], [3],
                                                 [4], [4]]


def test_literal_claims_read_classes_i_and_2i_one_indexed():
    claims = claimants("literal", 5, 10)
    assert claims == [[0], [0, 1], [2], [1, 3], [4], [2], [], [3], [], [4]]


@pytest.mark.parametrize("split", ["heterogeneous", "literal"])
def test_every_row_goes_to_exactly_one_agent(split):
    labels = digits().train_labels
    parts = split_by_class(labels, 5, split, np.random.default_rng(3), 10)
    rows = np.concatenate(parts)
    assert np.array_equal(np.sort(rows), np.arange(labels.size))
    assert all(p.size > 0 for p in parts)


@pytest.mark.parametrize("m", [1, 2, 7, 10, 13])
def test_other_agent_counts_split_every_row_once_and_favour_claimants(m):
    labels = digits().train_labels
    parts = split_by_class(labels, m, "heterogeneous", np.random.default_rng(m), 10)
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(labels.size))
    claims = claimants("heterogeneous", m, 10)
    for c, own in enumerate(claims):
        assert own == [c * m // 10]
        got = [int(np.sum(labels[p] == c)) for p in parts]
        n_c = int(np.sum(labels == c))
        assert got[own[0]] == (n_c if m == 1 else round(OWN_SHARE * n_c))


def test_heterogeneous_class_shares_are_60_and_10_percent():
    labels = digits().train_labels
    parts = split_by_class(labels, 5, "heterogeneous", np.random.default_rng(0), 10)
    for c in range(10):
        n_c = int(np.sum(labels == c))
        owner = c // 2
        for a, rows in enumerate(parts):
            got = int(np.sum(labels[rows] == c))
            if a == owner:
                assert got == round(OWN_SHARE * n_c)
            else:   # the other 40% evenly over 4 agents
                rest = n_c - round(OWN_SHARE * n_c)
                assert got in (rest // 4, rest // 4 + 1), (c, a, got)


def test_literal_shared_and_unclaimed_classes():
    labels = digits().train_labels
    parts = split_by_class(labels, 5, "literal", np.random.default_rng(0), 10)
    counts = np.array([[np.sum(labels[p] == c) for c in range(10)] for p in parts])
    n = np.bincount(labels, minlength=10)
    # digit 1 claimed by agents 0 and 1: they share 60%
    assert counts[0, 1] + counts[1, 1] == round(0.6 * n[1])
    assert abs(int(counts[0, 1]) - int(counts[1, 1])) <= 1
    # digit 6 claimed by nobody: even over all five
    assert counts[:, 6].max() - counts[:, 6].min() <= 1 and counts[:, 6].sum() == n[6]


def test_split_depends_on_seed_only():
    a = build_personalised({}, 2, 5, seed=7)
    b = build_personalised({}, 2, 5, seed=7)
    c = build_personalised({}, 2, 5, seed=8)
    assert np.array_equal(a.images, b.images) and np.array_equal(a.labels, b.labels)
    assert not (a.labels.size == c.labels.size and np.array_equal(a.images, c.images))


def test_a_split_leaving_an_agent_empty_is_refused_naming_it():
    with pytest.raises(ConfigError) as err:
        build_personalised({}, 0, 400, seed=0)
    msg = str(err.value)
    assert "over 400 agents leaves agent(s) [" in msg
    assert "without test samples" in msg or "without training samples" in msg
    fits = int(err.value.fix.split("with ")[1].split()[0])
    assert 1 < fits < 400
    build_personalised({}, fits - 1, fits, seed=0)     # the suggestion works
    with pytest.raises(ConfigError):                   # and is the largest that does
        build_personalised({}, 0, fits + 1, seed=0)


# --- options ------------------------------------------------------------------------------

@pytest.mark.parametrize("options, key", [
    ({"dataset": "imagenet"}, "dataset"), ({"lambda_pen": -1.0}, "lambda_pen"),
    ({"lambda_pen": float("nan")}, "lambda_pen"), ({"batch": 0}, "batch"),
    ({"batch": 1.5}, "batch"), ({"split": "iid"}, "split"), ({"model": "mlp"}, "model"),
    ({"data_dir": 3}, "data_dir"), ({"lamda_pen": 0.5}, "lamda_pen")])
def test_bad_options_are_refused_naming_the_key(options, key):
    with pytest.raises(ConfigError, match=key):
        build_personalised(options, 0, 5, seed=0)


# --- real files ---------------------------------------------------------------------------

def test_real_dataset_without_data_dir_names_the_fix():
    with pytest.raises(ConfigError) as err:
        load_image_data("mnist", None)
    assert "data_dir" in str(err.value) and "digits" in err.value.fix


def test_mnist_missing_files_name_the_path(tmp_path):
    with pytest.raises(DataError) as err:
        load_mnist(str(tmp_path))
    assert str(tmp_path / MNIST_FILES[0]) in str(err.value)
    assert "train-labels-idx1-ubyte" in err.value.fix


def _write_idx(path, array, compress):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(
        int(d).to_bytes(4, "big") for d in array.shape)
    opener = gzip.open if compress else open
    with opener(path, "wb") as fh:
        fh.write(header + array.astype(np.uint8).tobytes())


def test_mnist_idx_files_plain_and_gzipped(tmp_path):
    rng = np.random.default_rng(0)
    arrays = [rng.integers(0, 256, (12, 28, 28)), rng.integers(0, 10, 12),
              rng.integers(0, 256, (5, 28, 28)), rng.integers(0, 10, 5)]
    for k, (name, arr) in enumerate(zip(MNIST_FILES, arrays)):
        _write_idx(tmp_path / (name + (".gz" if k % 2 else "")), arr, compress=bool(k % 2))
    data = load_mnist(str(tmp_path))
    assert data.train_images.shape == (12, 1, 28, 28)
    assert np.array_equal(data.train_images[:, 0], arrays[0])
    assert np.array_equal(data.test_labels, arrays[3])
    assert data.scale == 1 / 255


def test_mnist_bad_magic_is_refused(tmp_path):
    for name in MNIST_FILES:
        (tmp_path / name).write_bytes(b"\x00\x00\x0d\x03" + b"\x00" * 20)
    with pytest.raises(DataError, match="magic"):
        load_mnist(str(tmp_path))


def test_cifar10_python_batches(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(1)
    batches = {}
    for name in [f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]:
        batches[name] = (rng.integers(0, 256, (4, 3072)).astype(np.uint8),
                         rng.integers(0, 10, 4).tolist())
        with open(folder / name, "wb") as fh:
            pickle.dump({b"data": batches[name][0], b"labels": batches[name][1]}, fh)
    data = load_cifar10(str(tmp_path))
    assert data.train_images.shape == (20, 3, 32, 32) and data.test_images.shape == (4, 3, 32, 32)
    assert np.array_equal(data.train_images[4].reshape(-1), batches["data_batch_2"][0][0])
    assert data.test_labels.tolist() == batches["test_batch"][1]


def test_cifar10_missing_batch_names_the_path(tmp_path):
    with pytest.raises(DataError) as err:
        load_cifar10(str(tmp_path))
    assert str(tmp_path / "data_batch_1") in str(err.value)
    assert "cifar-10-python.tar.gz" in err.value.fix
