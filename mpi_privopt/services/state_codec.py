"""A rank's state as JSON and numpy arrays: loading it runs no code a file names.

A checkpoint saves the objects a run loop carries (mpi_privopt/services/checkpoint.py).
:func:`encode_state` walks them into a JSON tree and a dict of arrays (written with
``np.savez``, read with ``np.load(allow_pickle=False)``); :func:`decode_state` builds them
again. No pickle is involved either way, so a file can only ever *describe* data: what
it may describe is fixed here, and everything else is refused with one message.

What a state may hold, and how it is written (each JSON node is a literal or an object
with one tag key; ``"#"`` numbers an object that keeps its identity):

* ``None``, ``bool``, ``int``, ``float``, ``str``: JSON literals (floats exactly: JSON
  writes the shortest text that reads back to the same double; ``inf``/``nan`` too);
* ``list`` (a long list of floats as an array member: ``{"floats": "a2"}``), ``dict``
  (``{"dict": ...}`` when every key is a string, else ``{"items":
  [[key, value], ...]}``), ``tuple``, ``set``, ``frozenset``, ``collections.deque`` and
  ``OrderedDict``, ``slice``, ``complex``, ``bytes``, ``bytearray``;
* numpy arrays (``{"array": "a3"}``: a member of the archive; never of dtype object),
  scalars (their bytes in hex, with their dtype) and dtypes;
* numpy ``Generator``\\ s, their bit generators (``PCG64``, ``PCG64DXSM``, ``MT19937``,
  ``Philox``, ``SFC64``: the bit generator's ``.state`` dict and its ``SeedSequence``) and
  ``SeedSequence``\\ s (entropy, spawn key, pool size, children spawned);
* an object of a class the package defines (``mpi_privopt.*``) or one of the modules the
  run's config names (``problem.module``, ``algorithm.module``:
  mpi_privopt/user_modules.py), never of a ``__main__`` module (importing one runs its
  command): ``{"class": "module:Qual.Name", "fields": {...}}``, its ``__getstate__()``
  (its attributes, by default; ``"state"`` when that is not a map of names). Loading makes
  it with ``cls.__new__(cls)`` (never calling the class) and puts the state back as pickle
  would: the class's own ``__setstate__``, or the attributes (never a ``__dunder__`` one,
  which could change what the object is). A method that declares
  :attr:`~mpi_privopt.methods.contract.Algorithm.checkpoint_fields` has only those
  attributes saved;
* such a class itself (``{"type": ...}``) and a bound method of such an object (``{"method":
  owner, "name": ...}``: a function its class defines, never a ``__dunder__`` name);
* the objects the resume's fresh set-up supplies (:func:`~.checkpoint.externals`: the
  communicators, graph, config sections, problem), by name only: ``{"ext": "cfg.run"}``.

An object reached twice is written once and referred to (``{"ref": 7}``), so aliasing
(which of a channel's two buffers is the one last sent, an iterate that *is* a channel
buffer) comes back as it was, cycles included.
"""
from __future__ import annotations

import collections
import io
import types
from typing import Any

import numpy as np

from .state_decoder import decode_state
from .state_rules import (BIT_GENERATORS, BUILTIN_VALUES, FLOAT_RUN, LITERALS,
                          StateDecodeError, StateEncodeError, dunder, hidden_attribute,
                          method_ok, refusal, trusted_modules, within)

__all__ = ["StateDecodeError", "StateEncodeError", "decode_state", "encode_state",
           "trusted_modules"]


# -- encoding ----------------------------------------------------------------------------

class _Encoder:
    def __init__(self, externals: dict[str, Any], roots: tuple[str, ...]) -> None:
        self.names = {id(obj): name for name, obj in externals.items()}
        self.roots = roots
        self.memo: dict[int, int] = {}
        self.keep: list[Any] = []  # what the memo's ids name stays alive while encoding
        self.arrays: dict[str, np.ndarray] = {}
        self.classes: dict[type, str] = {}

    def _new(self, obj: Any, node: dict) -> dict:
        node["#"] = self.memo[id(obj)] = len(self.memo)
        self.keep.append(obj)
        return node

    def encode(self, obj: Any) -> Any:
        kind = type(obj)
        if kind in LITERALS:
            return obj
        name = self.names.get(id(obj))
        if name is not None:
            return {"ext": name}
        seen = self.memo.get(id(obj))
        if seen is not None:
            return {"ref": seen}
        if kind is list:
            if len(obj) >= FLOAT_RUN and all(type(v) is float for v in obj):
                # a long list of floats (a schedule's sigmas) as an array member: exact,
                # and a fraction of its JSON's size and reading time
                return self._new(obj, {"floats": self._array(np.array(obj, np.float64))})
            node = self._new(obj, {"list": None})
            node["list"] = [self.encode(v) for v in obj]
            return node
        if kind is dict:
            return self._dict(obj, self._new(obj, {}))
        if kind is tuple:
            return {"tuple": [self.encode(v) for v in obj]}
        if kind is np.ndarray:
            if obj.dtype.hasobject:
                raise StateEncodeError(refusal("a numpy array of Python objects"))
            return self._new(obj, {"array": self._array(obj)})
        if isinstance(obj, np.generic):
            return {"scalar": np.lib.format.dtype_to_descr(obj.dtype),
                    "hex": obj.tobytes().hex()}
        return self._other(obj, kind)

    def _array(self, array: np.ndarray) -> str:
        key = f"a{len(self.arrays)}"
        self.arrays[key] = array
        return key

    def _dict(self, obj: dict, node: dict) -> dict:
        if all(type(k) is str for k in obj):
            node["dict"] = {k: self.encode(v) for k, v in obj.items()}
        else:
            node["items"] = [[self.encode(k), self.encode(v)] for k, v in obj.items()]
        return node

    def _other(self, obj: Any, kind: type) -> Any:
        if kind is set:
            node = self._new(obj, {"set": None})
            node["set"] = [self.encode(v) for v in obj]
            return node
        if kind is frozenset:
            return {"frozenset": [self.encode(v) for v in obj]}
        if kind is collections.OrderedDict:
            node = self._new(obj, {"odict": None})
            node["odict"] = [[self.encode(k), self.encode(v)] for k, v in obj.items()]
            return node
        if kind is collections.deque:
            node = self._new(obj, {"deque": None, "maxlen": obj.maxlen})
            node["deque"] = [self.encode(v) for v in obj]
            return node
        if kind is slice:
            return {"slice": [self.encode(obj.start), self.encode(obj.stop),
                              self.encode(obj.step)]}
        if kind is complex:
            return {"complex": [obj.real, obj.imag]}
        if kind is bytes:
            return {"bytes": obj.hex()}
        if kind is bytearray:
            return self._new(obj, {"bytearray": obj.hex()})
        if kind is np.dtype or isinstance(obj, np.dtype):
            return {"dtype": np.lib.format.dtype_to_descr(obj)}
        if kind is np.random.Generator:
            node = self._new(obj, {"generator": None})
            node["generator"] = self.encode(obj.bit_generator)
            return node
        if kind in BIT_GENERATORS.values():
            node = self._new(obj, {"bitgen": kind.__name__})
            node["state"] = self.encode(obj.state)
            node["seed_seq"] = self.encode(obj.seed_seq)
            return node
        if kind is np.random.SeedSequence:
            return self._new(obj, {"seedseq": [self.encode(obj.entropy),
                                               self.encode(tuple(obj.spawn_key)),
                                               obj.pool_size, obj.n_children_spawned]})
        if kind is types.MethodType:
            owner, name = obj.__self__, obj.__func__.__name__
            if not method_ok(owner, name, self.roots) or \
                    getattr(owner, name).__func__ is not obj.__func__:
                raise StateEncodeError(refusal(f"a method {name!r} of a "
                                                f"{type(owner).__qualname__}"))
            return {"method": self.encode(owner), "name": name}
        if isinstance(obj, type):
            return {"type": _class_name(obj, self.roots)}
        return self._object(obj, kind)

    def _object(self, obj: Any, kind: type) -> dict:
        name = self.classes.get(kind)
        if name is None:
            name = self.classes[kind] = _object_class(kind, self.roots)
        node = self._new(obj, {"class": name})
        state = obj.__getstate__()
        fields = getattr(kind, "checkpoint_fields", None)
        if fields is not None and isinstance(state, dict):
            # the method says what its state is (its agent always): the rest comes from
            # the resume's fresh set-up (checkpoint.restore_state)
            state = {key: state[key] for key in ("agent", *fields) if key in state}
        if type(state) is dict and all(type(k) is str for k in state):
            hidden = next((k for k in state if hidden_attribute(k)), None)
            if hidden is not None:  # the reader refuses it: say so now, not at the resume
                raise StateEncodeError(f"{name} has an attribute {hidden!r}: a checkpoint "
                                       "never writes __dunder__ attributes")
            # its attributes (the usual case), as a plain map: the dict is the object's
            # own, never shared, so it needs no number of its own
            node["fields"] = {k: self.encode(v) for k, v in state.items()}
        else:
            node["state"] = self.encode(state)
        return node


def _object_class(kind: type, roots: tuple[str, ...]) -> str:
    """The name an object of class ``kind`` is written under, once it is known to be
    one a checkpoint may hold as attributes."""
    name = _class_name(kind, roots)
    if issubclass(kind, BUILTIN_VALUES):
        raise StateEncodeError(f"{name} subclasses a builtin container or value, which a "
                               "checkpoint does not save")
    if kind.__reduce_ex__ is not object.__reduce_ex__ or \
            kind.__reduce__ is not object.__reduce__:
        # its attributes are not what it is (an exception's args, an enum's member)
        raise StateEncodeError(f"{name}, a class that pickles itself (__reduce__), "
                               "which a checkpoint may not hold (give it "
                               "__getstate__/__setstate__ instead)")
    return name


def _class_name(cls: type, roots: tuple[str, ...]) -> str:
    qual = cls.__qualname__
    if not within(cls.__module__, roots) or "<locals>" in qual or \
            any(dunder(part) for part in qual.split(".")):
        raise StateEncodeError(refusal(f"{cls.__module__}.{qual}"))
    return f"{cls.__module__}:{qual}"


def encode_state(roots: dict[str, Any], externals: dict[str, Any],
                 trusted: tuple[str, ...] = ("mpi_privopt",)) -> tuple[Any, bytes]:
    """``roots`` as a JSON tree and the ``.npz`` bytes of its arrays, each object of
    ``externals`` written by its name only.

    Raises
    ------
    StateEncodeError
        When the state holds something a checkpoint may not hold (module docstring).
    """
    encoder = _Encoder(externals, trusted)
    tree = encoder.encode(roots)
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **encoder.arrays)
    return tree, buffer.getvalue()
