"""Which MPI family a launcher or an mpi4py vendor belongs to (``doctor`` and the launch
line both ask)."""
from __future__ import annotations

import re

__all__ = ["FAMILIES", "launcher_family", "vendor_family"]

#: the MPI families a launcher's ``--version`` text names
FAMILIES = {"MPICH": ("hydra", "mpich"), "Open MPI": ("open mpi", "openrte", "open-mpi"),
            "Intel MPI": ("intel",)}


def launcher_family(text: str) -> str | None:
    """The MPI family a launcher's ``--version`` output names, or None."""
    lowered = text.lower()
    for family, words in FAMILIES.items():
        if any(word in lowered for word in words):
            return family
    return None


def vendor_family(vendor: str) -> str | None:
    """The launcher family that belongs to an mpi4py vendor name (MPICH derivatives too)."""
    if vendor in FAMILIES:
        return vendor
    return "MPICH" if re.search(r"mpich|mvapich|cray", vendor, re.I) else None
