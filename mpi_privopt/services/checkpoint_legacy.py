"""The metadata of a checkpoint file of format 1, for ``report`` only.

Format 1 (before the files had a checked header) wrote each rank's file as a bare pickle
of ``{"meta": ..., "state": ...}``. ``report`` still shows a run killed then from its
metadata, read by an unpickler that imports no class at all (plain dicts, lists, numbers
and strings only: with no callable to reach, nothing can run). A resume never reads such
a file (its ``latest.json`` names another format: mpi_privopt/services/checkpoint_format.py).
"""
from __future__ import annotations

import io
import pickle
from pathlib import Path

from .checkpoint_format import CheckpointDamaged

__all__ = ["format_1_meta"]


class _MetaUnpickler(pickle.Unpickler):
    """Plain data only: every global a file names is refused."""

    def find_class(self, module, name):  # noqa: D102
        raise pickle.UnpicklingError(f"a checkpoint's metadata names {module}.{name}")


def format_1_meta(path: Path, data: bytes) -> dict:
    """The ``meta`` of a format-1 file's bytes ``data`` (read from ``path``)."""
    try:
        meta = _MetaUnpickler(io.BytesIO(data)).load()["meta"]
    except Exception as err:  # noqa: BLE001 (anything a damaged pickle raises)
        raise CheckpointDamaged(f"the checkpoint file {path} cannot be read: {err}",
                                "start a new run") from None
    if not isinstance(meta, dict):
        raise CheckpointDamaged(f"the checkpoint file {path} holds no checkpoint record",
                                "start a new run")
    return meta
