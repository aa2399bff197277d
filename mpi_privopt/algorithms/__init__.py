"""Registered algorithms: ``ALGORITHMS[name]`` is the class for ``algorithm.name``."""
from .base import ALGORITHMS, Algorithm, register
from . import admm, dgd, zcdp_nfl  # noqa: F401  (importing registers them)

__all__ = ["ALGORITHMS", "Algorithm", "register"]
