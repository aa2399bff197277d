"""A rank's state as a pickle that cannot run code when it is loaded.

A checkpoint saves the objects a run loop carries (mpi_privopt/services/checkpoint.py)
with pickle, which by itself would call whatever callable a file names. Loading here goes
through an allow-list (:class:`StateUnpickler`): a file may name only

* numpy's arrays, scalars and dtypes, its ``Generator``, ``SeedSequence`` and bit
  generators (the functions numpy pickles them with: :data:`NUMPY_GLOBALS`);
* builtins' containers and values (``slice``, ``set``, ``frozenset``, ``bytearray``,
  ``complex``) and ``collections``' ``OrderedDict`` and ``deque``;
* the classes the package defines (``mpi_privopt.*``) and those of the modules the run's
  config names (``problem.module``, ``algorithm.module``: mpi_privopt/user_modules.py),
  as classes only: a function or an object such a module imports is refused, and so is a
  class that pickles itself (its own ``__reduce__``) and any ``__main__`` module
  (importing one runs its command);
* a bound method of such an object (``getattr(obj, name)``; a public or private method
  its class defines, never a ``__dunder__`` name).

and only numpy's and builtins' callables may be *called* while loading (pickle's
``REDUCE``), never with a callable argument but numpy's bit generator classes (numpy's
``Generator`` constructor calls its second argument): an allowed class is made without
calling it (``cls.__new__``) and its saved attributes are put back (``__setstate__`` or
its ``__dict__``; never a ``__dunder__`` attribute, which could change its class). The old opcodes that call
a class (``INST``, ``OBJ``) are refused, and so is a persistent id that is not one of the
objects a resume supplies. The Python unpickler does this (its opcodes can be refused one
by one): about 30 times slower than C's, 63 ms for a rank of a 2000-iteration zcdp-nfl run
(a 129 kB state), once per resume. Saving loads what it pickled again through the same
allow-list, with C's unpickler (:class:`_SaveCheck`: 2.4 ms for that state, against 12 ms
for the pickling), so a method whose state holds anything else (a ``functools.partial``,
a ufunc, an exception) is told at its first checkpoint, not at its resume.

The classes that a checkpoint of each registered method actually holds were listed by
loading one of each (tests/mpi/test_checkpoint_every_method.py checkpoints and resumes
every method through this unpickler): package classes (the algorithm, its agent, network,
channels, traffic meter, ledger and its accountants, events, mechanisms, schedules, the
noise source, the problem's attributes, the divergence guard), numpy arrays, dtypes,
Generators (PCG64, SeedSequence), ``slice`` and bound methods (a problem's
``record_trackers``). The final form is plainer still: arrays and JSON written through a
state hook of the Method contract, with no pickle at all; that hook is not written yet
(docs/reliability.md, "What a resume reads").
"""
from __future__ import annotations

import functools
import importlib
import inspect
import io
import pickle
import types
import warnings
from typing import Any

__all__ = ["StatePickler", "StateUnpickler", "NUMPY_GLOBALS", "BUILTIN_GLOBALS",
           "pickle_state", "unpickle_state", "trusted_modules"]

#: numpy's globals a state may name (both spellings: numpy 2 moved ``core`` to ``_core``)
NUMPY_GLOBALS = frozenset({
    ("numpy", "dtype"), ("numpy", "ndarray"),
    ("numpy._core.numeric", "_frombuffer"), ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"), ("numpy.core.multiarray", "scalar"),
    ("numpy.random._pickle", "__generator_ctor"),
    ("numpy.random._pickle", "__bit_generator_ctor"),
    ("numpy.random._pickle", "__randomstate_ctor"),
    ("numpy.random._generator", "Generator"), ("numpy.random.mtrand", "RandomState"),
    ("numpy.random._pcg64", "PCG64"), ("numpy.random._pcg64", "PCG64DXSM"),
    ("numpy.random._mt19937", "MT19937"), ("numpy.random._philox", "Philox"),
    ("numpy.random._sfc64", "SFC64"),
    ("numpy.random.bit_generator", "SeedSequence"),
    ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"),
})
#: builtins' and collections' globals a state may name (``getattr``: a bound method)
BUILTIN_GLOBALS = frozenset({
    ("builtins", "slice"), ("builtins", "set"), ("builtins", "frozenset"),
    ("builtins", "bytearray"), ("builtins", "complex"), ("builtins", "getattr"),
    ("collections", "OrderedDict"), ("collections", "deque"),
})
_CALLABLE_GLOBALS = NUMPY_GLOBALS | BUILTIN_GLOBALS

#: the opcodes that call a class with arguments (pickle protocols 0 and 1)
_CALLING_OPCODES = (pickle.INST[0], pickle.OBJ[0])


def trusted_modules(cfg=None) -> tuple[str, ...]:
    """The modules whose classes a state may hold: the package's and, for ``cfg``, those
    of your own problem and method (``problem.module``, ``algorithm.module``)."""
    roots = ["mpi_privopt"]
    if cfg is not None:
        for spec in (getattr(cfg.problem, "module", ""), getattr(cfg.algorithm, "module", "")):
            if spec:
                roots.append(spec.split(":", 1)[0])
    return tuple(roots)


def _within(module: str | None, roots: tuple[str, ...]) -> bool:
    # never a ``__main__``: importing one runs a command (a reproduction's)
    return bool(module) and "__main__" not in module.split(".") and any(
        module == r or module.startswith(r + ".") for r in roots)


def _method_ok(obj: Any, name: Any, roots: tuple[str, ...]) -> bool:
    """Whether ``getattr(obj, name)`` is a method of an allowed class (a bound method)."""
    if not isinstance(name, str) or (name.startswith("__") and name.endswith("__")):
        return False
    cls = type(obj)
    return _within(cls.__module__, roots) and isinstance(
        inspect.getattr_static(cls, name, None), types.FunctionType)


def _refusal(module: str, name: str) -> str:
    return (f"{module}.{name}, which a checkpoint may not hold (only numpy arrays, scalars, "
            "dtypes and random generators, builtin containers, and the classes of "
            "mpi_privopt and of the modules the config names)")


def _allowed_global(resolve, module: str, name: str, roots: tuple[str, ...],
                    bound_method) -> Any:
    """What ``module.name`` in a state may be (``resolve``: pickle's own ``find_class``,
    called only for an allowed module), or ``pickle.UnpicklingError``."""
    if (module, name) in _CALLABLE_GLOBALS:
        if (module, name) == ("builtins", "getattr"):
            return bound_method
        return resolve(module, name)
    if _within(module, roots):
        found = resolve(module, name)
        if isinstance(found, type) and _within(found.__module__, roots):
            if found.__reduce_ex__ is not object.__reduce_ex__ or \
                    found.__reduce__ is not object.__reduce__:
                # loading would have to call what its __reduce__ names
                raise pickle.UnpicklingError(
                    f"the state names {module}.{name}, a class that pickles itself "
                    "(__reduce__), which a checkpoint may not hold (give it "
                    "__getstate__/__setstate__ instead)")
            return found
    raise pickle.UnpicklingError(f"the state names {_refusal(module, name)}")


def _bound_method_getter(roots: tuple[str, ...]):
    def bound_method(obj, name):
        if not _method_ok(obj, name, roots):
            raise pickle.UnpicklingError(
                f"the state names a method {name!r} of a {type(obj).__qualname__}, which a "
                "checkpoint may not hold")
        return getattr(obj, name)
    return bound_method


class StatePickler(pickle.Pickler):
    """Pickles a state, each of ``names``' objects by its name only."""

    def __init__(self, file, names: dict[int, str]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._names = names

    def persistent_id(self, obj):  # noqa: D102 (pickle's hook)
        return self._names.get(id(obj))


class _SaveCheck(pickle.Unpickler):
    """Loads a state just pickled, with the allow-list's globals (C speed): whether
    :class:`StateUnpickler` will accept it. The bytes are ours, so the Python unpickler's
    refusal of calls is not needed here: our pickler calls a package class only when
    that class pickles itself, which :func:`_allowed_global` refuses."""

    def __init__(self, file, objects: dict[str, Any], roots: tuple[str, ...]) -> None:
        super().__init__(file)
        self._objects = objects
        self._roots = roots
        self._bound_method = _bound_method_getter(roots)

    def persistent_load(self, pid):  # noqa: D102
        return self._objects[pid]

    def find_class(self, module, name):  # noqa: D102
        return _allowed_global(super().find_class, module, name, self._roots,
                               self._bound_method)


class StateUnpickler(pickle._Unpickler):  # the Python one: its opcodes can be refused
    """Loads a state written by :class:`StatePickler` through the allow-list (module
    docstring); anything else is a ``pickle.UnpicklingError`` naming it."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file, objects: dict[str, Any], roots: tuple[str, ...]) -> None:
        super().__init__(file)
        self._objects = objects
        self._roots = roots
        self._bound_method = _bound_method_getter(roots)

    def persistent_load(self, pid):  # noqa: D102
        if not isinstance(pid, str) or pid not in self._objects:
            raise pickle.UnpicklingError(f"the state names an unknown object {pid!r}")
        return self._objects[pid]

    def find_class(self, module, name):  # noqa: D102
        return _allowed_global(super().find_class, module, name, self._roots,
                               self._bound_method)

    def _load_reduce(self):
        func, args = self.stack[-2], self.stack[-1]
        # only numpy's and builtins' callables (and the bound-method getter) are called
        if func is not self._bound_method and id(func) not in _callable_ids():
            raise pickle.UnpicklingError(
                f"the state calls {getattr(func, '__qualname__', type(func).__name__)} "
                "while loading; only numpy's and builtins' constructors may be called")
        # ... and never with a callable they would call in turn (numpy's Generator
        # constructor calls its second argument), but numpy's bit generator classes
        if func is not self._bound_method and any(
                callable(arg) and id(arg) not in _bit_generator_ids() for arg in args):
            raise pickle.UnpicklingError(
                f"the state passes a callable to {getattr(func, '__qualname__', func)} "
                "while loading; only numpy's bit generator classes may be passed")
        pickle._Unpickler.load_reduce(self)

    def _load_build(self):
        state = self.stack[-1]
        parts = state if isinstance(state, tuple) and len(state) == 2 else (state,)
        # attributes only: a __dunder__ (__class__, __dict__) would change what the
        # object is, or run a descriptor
        if any(isinstance(part, dict) and any(not isinstance(key, str) or
                                              key.startswith("__") for key in part)
               for part in parts):
            raise pickle.UnpicklingError("the state sets a __dunder__ attribute while "
                                         "loading, which a checkpoint never writes")
        pickle._Unpickler.load_build(self)

    def _refuse_call(self):
        raise pickle.UnpicklingError("the state uses an opcode that calls a class (INST, "
                                     "OBJ), which a checkpoint never writes")

    dispatch[pickle.REDUCE[0]] = _load_reduce
    dispatch[pickle.BUILD[0]] = _load_build
    for _code in _CALLING_OPCODES:
        dispatch[_code] = _refuse_call
    del _code


#: numpy's classes a state may pass to numpy's constructors (bit generators)
_BIT_GENERATORS = frozenset({
    ("numpy.random._pcg64", "PCG64"), ("numpy.random._pcg64", "PCG64DXSM"),
    ("numpy.random._mt19937", "MT19937"), ("numpy.random._philox", "Philox"),
    ("numpy.random._sfc64", "SFC64"), ("numpy.random.bit_generator", "SeedSequence"),
})


@functools.cache
def _bit_generator_ids() -> frozenset[int]:
    found = []
    for module, name in _BIT_GENERATORS:
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            pass
    return frozenset(map(id, found))


@functools.cache
def _callable_ids() -> frozenset[int]:
    """The ids of the objects :data:`_CALLABLE_GLOBALS` name (those this numpy has; each
    lives in its module as long as the process)."""
    found = []
    with warnings.catch_warnings():  # numpy 2 warns of its old ``numpy.core`` names
        warnings.simplefilter("ignore", DeprecationWarning)
        for module, name in _CALLABLE_GLOBALS:
            try:
                found.append(getattr(importlib.import_module(module), name))
            except (ImportError, AttributeError):
                pass
    return frozenset(map(id, found))


def pickle_state(roots: dict[str, Any], externals: dict[str, Any],
                 trusted: tuple[str, ...] = ("mpi_privopt",)) -> bytes:
    """``roots`` pickled, every object of ``externals`` saved by its name only, once it is
    known to load through the allow-list (loaded again at C speed: about as long as the
    pickling).

    Raises
    ------
    pickle.PicklingError
        When the state holds something a checkpoint may not hold (module docstring).
    """
    names = {id(obj): name for name, obj in externals.items()}
    buffer = io.BytesIO()
    StatePickler(buffer, names).dump(roots)
    data = buffer.getvalue()
    try:
        _SaveCheck(io.BytesIO(data), externals, trusted).load()
    except pickle.UnpicklingError as err:
        raise pickle.PicklingError(str(err).replace("the state names ", "", 1)) from None
    return data


def unpickle_state(state: bytes, externals: dict[str, Any],
                   trusted: tuple[str, ...] = ("mpi_privopt",)) -> dict[str, Any]:
    """The roots of :func:`pickle_state`, each name of ``externals`` replaced by its
    object, through the allow-list.

    Raises
    ------
    pickle.UnpicklingError
        When the state names or calls anything outside the allow-list.
    """
    return StateUnpickler(io.BytesIO(state), externals, trusted).load()
