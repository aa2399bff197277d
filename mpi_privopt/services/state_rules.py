"""The rules of what a checkpoint's state may hold, shared by its writer and its reader
(mpi_privopt/services/state_codec.py describes the format and the rules)."""
from __future__ import annotations

import inspect
import types
from typing import Any

import numpy as np

__all__ = ["BIT_GENERATORS", "BUILTIN_VALUES", "FLOAT_RUN", "LITERALS", "StateDecodeError",
           "StateEncodeError", "dunder", "hidden_attribute", "method_ok", "refusal",
           "trusted_modules", "within"]

#: numpy's bit generators a state may hold, by name
BIT_GENERATORS = {cls.__name__: cls for cls in (
    np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox,
    np.random.SFC64)}
#: the values written as JSON literals (their exact types: a subclass is not one)
LITERALS = (type(None), bool, int, float, str)
#: a list of at least this many floats is written as an array member
FLOAT_RUN = 16
#: builtin types whose subclasses a checkpoint does not hold as objects: their value is
#: not in their attributes (a subclass of str would come back as "")
BUILTIN_VALUES = (tuple, list, dict, set, frozenset, str, bytes, bytearray, int, float,
                  complex, np.ndarray, np.generic)


class StateEncodeError(TypeError):
    """The state holds something a checkpoint may not hold (state_codec.py's docstring)."""


class StateDecodeError(ValueError):
    """A saved state describes something a checkpoint may not hold, or is malformed."""


def trusted_modules(cfg=None) -> tuple[str, ...]:
    """The modules whose classes a state may hold: the package's and, for ``cfg``, those
    of your own problem and method (``problem.module``, ``algorithm.module``)."""
    roots = ["mpi_privopt"]
    if cfg is not None:
        for spec in (getattr(cfg.problem, "module", ""), getattr(cfg.algorithm, "module", "")):
            if spec:
                roots.append(spec.split(":", 1)[0])
    return tuple(roots)


def within(module: Any, roots: tuple[str, ...]) -> bool:
    # never a ``__main__``: importing one runs a command (a reproduction's)
    return isinstance(module, str) and bool(module) and \
        "__main__" not in module.split(".") and \
        any(module == r or module.startswith(r + ".") for r in roots)


def dunder(name: Any) -> bool:
    return not isinstance(name, str) or (name.startswith("__") and name.endswith("__"))


def hidden_attribute(key: Any) -> bool:
    """An attribute name a checkpoint never writes (the writer refuses it, the reader too):
    not a string, or starting with ``__``."""
    return not isinstance(key, str) or key.startswith("__")


def refusal(what: str) -> str:
    return (f"{what}, which a checkpoint may not hold (only numpy arrays, scalars, dtypes "
            "and random generators, builtin containers, and the classes of mpi_privopt "
            "and of the modules the config names)")


def method_ok(owner: Any, name: Any, roots: tuple[str, ...]) -> bool:
    """Whether ``getattr(owner, name)`` is a method its allowed class defines."""
    if dunder(name):
        return False
    cls = type(owner)
    return within(cls.__module__, roots) and isinstance(
        inspect.getattr_static(cls, name, None), types.FunctionType)
