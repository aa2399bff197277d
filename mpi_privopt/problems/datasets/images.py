"""Image classification data for the personalised-learning task: offline stand-ins and files.

Every data set is an :class:`ImageData`: ``uint8`` images of shape (N, C, H, W) (the layout
of the CNNs) with a scale that maps them to [0, 1], integer labels 0..9, and a train/test
split. Two stand-ins ship with the package (scikit-learn's wheel holds the digits), so the
task runs offline; real MNIST / CIFAR-10 are read from a user's files (:mod:`image_files`).

``digits`` (MNIST stand-in)
    scikit-learn's ``load_digits``: 1797 grey 8x8 images, pixel values 0..16 (scale 1/16).
``colour-digits`` (CIFAR-10 stand-in, notes 6.2 (a))
    The same digits in colour: each image gets a background colour ``b`` and a foreground
    colour ``f`` (a pair uniform in [0, 1]^3, the brighter one, by mean over channels, the
    foreground; redrawn until it is brighter by at least :data:`MIN_CONTRAST`), the pixel
    is ``b + a (f - b) + N(0, NOISE^2)`` with ``a`` the grey intensity in [0, 1], clipped
    to [0, 1] and stored as ``uint8`` (scale 1/255), optionally upsampled (nearest
    neighbour) by an integer factor. The class is in the shape only, never in the colour;
    random hues and the noise make it harder than the grey digits, and the fixed
    brightness order keeps it learnable by a linear model (were the order random too, a
    linear model would be at chance: the pixel sign of the shape would flip).

The stand-ins are fixed data sets, like MNIST: their colours, noise and train/test split
come from constant seeds (:data:`DATASET_SEED`), never from the run's seed, so every run
and every agent sees the same images. The train/test split is stratified: a fraction
:data:`TEST_FRACTION` of every class (rounded) is the test set.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["ImageData", "STAND_INS", "DATASET_SEED", "TEST_FRACTION", "MIN_CONTRAST",
           "NOISE", "CLASSES", "digits", "colour_digits", "stratified_split"]

#: number of classes of every data set here (digits, MNIST, CIFAR-10)
CLASSES = 10
#: the constant seed of the stand-ins' colours, noise and train/test split
DATASET_SEED = 20250626
#: share of every class held out as the stand-ins' test set
TEST_FRACTION = 0.2
#: colour digits: the least brightness (mean over channels) by which the foreground
#: exceeds the background
MIN_CONTRAST = 0.2
#: colour digits: standard deviation of the pixel noise (on the [0, 1] scale)
NOISE = 0.15

# stream keys under DATASET_SEED (one stream per job, so changing one leaves the others)
_SPLIT_STREAM, _COLOUR_STREAM = 1, 2


@dataclass(frozen=True)
class ImageData:
    """A labelled image data set with a train/test split.

    Attributes
    ----------
    name : str
    train_images, test_images : ndarray of uint8, shape (N, C, H, W)
    train_labels, test_labels : ndarray of int64, shape (N,), values 0..classes-1
    scale : float
        ``scale * image`` is in [0, 1].
    classes : int
    """

    name: str
    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    scale: float
    classes: int = CLASSES

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """(C, H, W)."""
        return tuple(self.train_images.shape[1:])

    def as_float(self, images: np.ndarray) -> np.ndarray:
        """Images scaled to [0, 1] as float64 (the models' input)."""
        return images.astype(np.float64) * self.scale


def stratified_split(labels: np.ndarray, test_fraction: float,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (train, test) row indices holding ``round(test_fraction * n_c)`` of each class c
    out for the test set, chosen uniformly with ``rng``."""
    test = []
    for c in np.unique(labels):
        rows = rng.permutation(np.flatnonzero(labels == c))
        test.append(rows[:int(round(test_fraction * rows.size))])
    test_rows = np.sort(np.concatenate(test))
    train_rows = np.setdiff1d(np.arange(labels.size), test_rows)
    return train_rows, test_rows


def _dataset_rng(stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([DATASET_SEED, stream]))


@lru_cache(maxsize=1)
def _grey_digits() -> tuple[np.ndarray, np.ndarray]:
    # scikit-learn is a core dependency: the digits ship inside its wheel (no download)
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = bunch.images.astype(np.uint8)[:, None, :, :]  # values 0..16, exact
    return images, bunch.target.astype(np.int64)


def _with_split(name: str, images: np.ndarray, labels: np.ndarray, scale: float) -> ImageData:
    train, test = stratified_split(labels, TEST_FRACTION, _dataset_rng(_SPLIT_STREAM))
    return ImageData(name, images[train], labels[train], images[test], labels[test], scale)


def digits() -> ImageData:
    """scikit-learn's 8x8 digits as an MNIST stand-in (1438 train, 359 test images)."""
    images, labels = _grey_digits()
    return _with_split("digits", images, labels, 1.0 / 16.0)


def _contrasting_colours(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    foreground = rng.uniform(size=(n, 3))
    background = rng.uniform(size=(n, 3))
    while True:  # the brighter colour is the foreground; redraw pairs too close (few rounds)
        darker = foreground.mean(axis=1) < background.mean(axis=1)
        foreground[darker], background[darker] = background[darker], foreground[darker]
        weak = foreground.mean(axis=1) - background.mean(axis=1) < MIN_CONTRAST
        if not weak.any():
            return foreground, background
        foreground[weak] = rng.uniform(size=(int(weak.sum()), 3))
        background[weak] = rng.uniform(size=(int(weak.sum()), 3))


def colour_digits(upsample: int = 1) -> ImageData:
    """The digits in random colours with noise (a CIFAR-10 stand-in); see the module docstring.

    Parameters
    ----------
    upsample : int
        Integer factor of nearest-neighbour upsampling (1: 8x8 images, 2: 16x16).
    """
    if int(upsample) != upsample or upsample < 1:
        raise ValueError(f"upsample must be a positive integer, got {upsample!r}")
    grey, labels = _grey_digits()
    rng = _dataset_rng(_COLOUR_STREAM)
    n = labels.size
    foreground, background = _contrasting_colours(n, rng)
    intensity = grey.astype(np.float64) / 16.0                      # (n, 1, 8, 8)
    pixels = (background[:, :, None, None]
              + intensity * (foreground - background)[:, :, None, None]
              + NOISE * rng.standard_normal((n, 3) + grey.shape[2:]))
    images = np.rint(np.clip(pixels, 0.0, 1.0) * 255.0).astype(np.uint8)
    if upsample > 1:
        images = images.repeat(upsample, axis=2).repeat(upsample, axis=3)
    return _with_split("colour-digits", images, labels, 1.0 / 255.0)


#: the offline stand-ins by name, and what they stand in for
STAND_INS = {"digits": ("MNIST", digits), "colour-digits": ("CIFAR-10", colour_digits)}
