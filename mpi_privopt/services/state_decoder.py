"""Reading a checkpoint's state back: the JSON tree and arrays of
mpi_privopt/services/state_codec.py made into objects again, by its rules
(mpi_privopt/services/state_rules.py). Nothing a file names is ever called: a class is
made with ``cls.__new__(cls)`` and given back its attributes; arrays are read with
``np.load(allow_pickle=False)``."""
from __future__ import annotations

import collections
import importlib
import io
import zipfile
from typing import Any

import numpy as np

from .state_rules import (BIT_GENERATORS, BUILTIN_VALUES, LITERALS, StateDecodeError,
                          dunder, hidden_attribute, method_ok, refusal, within)

__all__ = ["decode_state"]


class _Decoder:
    def __init__(self, arrays, externals: dict[str, Any], roots: tuple[str, ...]) -> None:
        self.arrays = arrays
        self.externals = externals
        self.roots = roots
        self.memo: dict[int, Any] = {}
        #: class name -> (class, whether it has its own __setstate__)
        self.object_classes: dict[str, tuple[type, bool]] = {}

    def _keep(self, node: dict, obj: Any) -> Any:
        number = node.get("#")
        if not isinstance(number, int) or number in self.memo:
            raise StateDecodeError(f"an object is numbered {number!r} twice or not at all")
        self.memo[number] = obj
        return obj

    def decode(self, node: Any) -> Any:
        if type(node) in LITERALS:
            return node
        if type(node) is not dict:
            raise StateDecodeError(f"a node is a bare {type(node).__name__}")
        for tag in node:
            if tag != "#" and tag in _DECODERS:
                return _DECODERS[tag](self, node)
        raise StateDecodeError(f"unknown node {sorted(node)!r}")

    def items(self, value: Any) -> list:
        if type(value) is not list:
            raise StateDecodeError("a container's items are not a list")
        return [self.decode(v) for v in value]

    def pairs(self, value: Any, into) -> Any:
        for pair in _list(value):
            if type(pair) is not list or len(pair) != 2:
                raise StateDecodeError("a mapping's item is not a [key, value] pair")
            into[self.decode(pair[0])] = self.decode(pair[1])
        return into

    def ref(self, node: dict) -> Any:
        if node["ref"] not in self.memo:
            raise StateDecodeError(f"a reference to an unknown object {node['ref']!r}")
        return self.memo[node["ref"]]

    def ext(self, node: dict) -> Any:
        if not isinstance(node["ext"], str) or node["ext"] not in self.externals:
            raise StateDecodeError(f"the state names an unknown object {node['ext']!r}")
        return self.externals[node["ext"]]

    def list_(self, node: dict) -> list:
        out = self._keep(node, [])
        out.extend(self.items(node["list"]))
        return out

    def dict_(self, node: dict) -> dict:
        out = self._keep(node, {})
        if "dict" in node:
            if type(node["dict"]) is not dict:
                raise StateDecodeError("a dict node holds no object")
            for key, value in node["dict"].items():
                out[key] = self.decode(value)
            return out
        return self.pairs(node["items"], out)

    def _member(self, key: Any) -> np.ndarray:
        if not isinstance(key, str) or key not in self.arrays.files:
            raise StateDecodeError(f"the state names an array {key!r} it does not hold")
        return self.arrays[key]

    def array(self, node: dict) -> np.ndarray:
        return self._keep(node, self._member(node["array"]))

    def floats(self, node: dict) -> list:
        values = self._member(node["floats"])
        if values.dtype != np.float64 or values.ndim != 1:
            raise StateDecodeError("a list of floats is not held as one row of float64")
        return self._keep(node, values.tolist())

    def object_(self, node: dict) -> Any:
        known = self.object_classes.get(node["class"])
        if known is None:
            cls = self._object_class(node["class"])
            known = self.object_classes[node["class"]] = (
                cls, getattr(cls, "__setstate__", None) is not None)
        cls, setstate = known
        obj = self._keep(node, cls.__new__(cls))
        fields = node.get("fields")
        if fields is not None:
            # attributes only: a __dunder__ (__class__, __dict__) would change what the
            # object is, whoever puts them back
            if type(fields) is not dict or any(key[:2] == "__" for key in fields):
                raise StateDecodeError(f"the state of a {cls.__qualname__} sets a "
                                       "__dunder__ attribute, which a checkpoint never writes")
            state = {key: self.decode(value) for key, value in fields.items()}
            if setstate:
                obj.__setstate__(state)
            else:
                obj.__dict__.update(state)
            return obj
        state = self.decode(node.get("state"))
        parts = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
        for part in parts:
            if isinstance(part, dict) and any(map(hidden_attribute, part)):
                raise StateDecodeError(f"the state of a {cls.__qualname__} sets a "
                                       "__dunder__ attribute, which a checkpoint never writes")
        if state is None:  # as pickle: an object without attributes has no state to set
            return obj
        if setstate:
            obj.__setstate__(state)
            return obj
        # as pickle puts back an object without __setstate__: its __dict__, then slots
        for part in parts:
            if part is not None and not isinstance(part, dict):
                raise StateDecodeError(f"the state of a {cls.__qualname__} sets something "
                                       "other than its attributes")
        if parts[0]:
            obj.__dict__.update(parts[0])
        for key, value in (parts[1] or {}).items():
            setattr(obj, key, value)
        return obj

    def _object_class(self, name: Any) -> type:
        """The class ``name`` of an object, once it is one a checkpoint writes as
        attributes."""
        cls = self.cls(name)
        if cls.__reduce_ex__ is not object.__reduce_ex__ or \
                cls.__reduce__ is not object.__reduce__ or \
                issubclass(cls, BUILTIN_VALUES):
            raise StateDecodeError(f"the state names {cls.__module__}.{cls.__qualname__}, "
                                   "a class a checkpoint never writes as attributes")
        return cls

    def cls(self, name: Any) -> type:
        module, _, qual = name.partition(":") if isinstance(name, str) else ("", "", "")
        if not within(module, self.roots) or not qual or \
                any(dunder(part) for part in qual.split(".")):
            raise StateDecodeError(f"the state names {refusal(str(name).replace(':', '.'))}")
        found: Any = importlib.import_module(module)
        for part in qual.split("."):
            found = getattr(found, part, None)
        if not (isinstance(found, type) and within(found.__module__, self.roots)):
            raise StateDecodeError(f"the state names {refusal(module + '.' + qual)}")
        return found

    def method(self, node: dict) -> Any:
        owner = self.decode(node["method"])
        if not method_ok(owner, node.get("name"), self.roots):
            raise StateDecodeError(f"the state names a method {node.get('name')!r} of a "
                                   f"{type(owner).__qualname__}, which a checkpoint may "
                                   "not hold")
        return getattr(owner, node["name"])

    def generator(self, node: dict) -> np.random.Generator:
        number = node.get("#")
        bits = self.decode(node["generator"])
        if type(bits) not in BIT_GENERATORS.values():
            raise StateDecodeError("a Generator's bit generator is not one of numpy's")
        return self._keep({"#": number}, np.random.Generator(bits))

    def bitgen(self, node: dict) -> Any:
        cls = BIT_GENERATORS.get(node["bitgen"])
        if cls is None:
            raise StateDecodeError(f"the state names {refusal(str(node['bitgen']))}")
        number = node.get("#")
        seed = self.decode(node.get("seed_seq"))
        if not isinstance(seed, (np.random.SeedSequence, type(None))):
            raise StateDecodeError("a bit generator's seed is not a SeedSequence")
        bits = self._keep({"#": number}, cls(seed))
        state = self.decode(node["state"])
        try:
            bits.state = state
        except (TypeError, ValueError, KeyError) as err:
            raise StateDecodeError(f"a {cls.__name__}'s state is refused ({err})") from None
        return bits

    def seedseq(self, node: dict) -> np.random.SeedSequence:
        entropy, spawn_key, pool_size, children = _list(node["seedseq"], 4)
        seq = np.random.SeedSequence(self.decode(entropy), spawn_key=self.decode(spawn_key),
                                     pool_size=pool_size, n_children_spawned=children)
        return self._keep(node, seq)


def _list(value: Any, length: int | None = None) -> list:
    if type(value) is not list or (length is not None and len(value) != length):
        raise StateDecodeError("a node's value is not a list of the expected length")
    return value


def _odict(dec: _Decoder, node: dict) -> collections.OrderedDict:
    return dec.pairs(node["odict"], dec._keep(node, collections.OrderedDict()))


def _deque(dec: _Decoder, node: dict) -> collections.deque:
    out = dec._keep(node, collections.deque(maxlen=node.get("maxlen")))
    out.extend(dec.items(node["deque"]))
    return out


def _set(dec: _Decoder, node: dict) -> set:
    out = dec._keep(node, set())
    out.update(dec.items(node["set"]))
    return out


def _scalar(dec: _Decoder, node: dict) -> np.generic:
    dtype = _dtype(node["scalar"])
    raw = bytes.fromhex(node["hex"])
    if len(raw) != dtype.itemsize:
        raise StateDecodeError(f"a {dtype} scalar of {len(raw)} bytes")
    return np.frombuffer(raw, dtype=dtype)[0].copy()


def _dtype(descr: Any) -> np.dtype:
    try:
        dtype = np.lib.format.descr_to_dtype(descr)
    except (TypeError, ValueError, KeyError) as err:
        raise StateDecodeError(f"the state names a dtype {descr!r} ({err})") from None
    if dtype.hasobject:
        raise StateDecodeError(refusal("a numpy dtype of Python objects"))
    return dtype


_DECODERS = {
    "ref": _Decoder.ref, "ext": _Decoder.ext, "list": _Decoder.list_,
    "dict": _Decoder.dict_, "items": _Decoder.dict_, "array": _Decoder.array,
    "floats": _Decoder.floats,
    "class": _Decoder.object_, "method": _Decoder.method,
    "generator": _Decoder.generator, "bitgen": _Decoder.bitgen,
    "seedseq": _Decoder.seedseq, "odict": _odict, "deque": _deque, "set": _set,
    "scalar": _scalar,
    "tuple": lambda dec, node: tuple(dec.items(node["tuple"])),
    "frozenset": lambda dec, node: frozenset(dec.items(node["frozenset"])),
    "slice": lambda dec, node: slice(*dec.items(_list(node["slice"], 3))),
    "complex": lambda dec, node: complex(*_list(node["complex"], 2)),
    "bytes": lambda dec, node: bytes.fromhex(node["bytes"]),
    "bytearray": lambda dec, node: dec._keep(node, bytearray.fromhex(node["bytearray"])),
    "dtype": lambda dec, node: _dtype(node["dtype"]),
    "type": lambda dec, node: dec.cls(node["type"]),
}


def decode_state(tree: Any, arrays: bytes, externals: dict[str, Any],
                 trusted: tuple[str, ...] = ("mpi_privopt",)) -> Any:
    """The roots :func:`encode_state` wrote, each name of ``externals`` replaced by its
    object. Nothing a file names is ever called: classes are made with ``__new__``.

    Raises
    ------
    StateDecodeError
        When the state names anything outside what a checkpoint may hold, or is malformed.
    """
    try:
        archive = np.load(io.BytesIO(arrays), allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise StateDecodeError(f"its arrays cannot be read ({err})") from None
    with archive:
        try:
            return _Decoder(archive, externals, trusted).decode(tree)
        except StateDecodeError:
            raise
        # a malformed node, an array member numpy will not read without pickle, a class
        # path naming no module, a number past its type's range, nesting past Python's
        # recursion limit
        except (KeyError, TypeError, AttributeError, ValueError, OSError, IndexError,
                ImportError, ArithmeticError, RecursionError) as err:
            raise StateDecodeError(f"the state is malformed ({type(err).__name__}: "
                                   f"{err})") from None
