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
import importlib
import inspect
import io
import types
import zipfile
from typing import Any

import numpy as np

__all__ = ["StateDecodeError", "StateEncodeError", "decode_state", "encode_state",
           "trusted_modules"]

_BIT_GENERATORS = {cls.__name__: cls for cls in (
    np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox,
    np.random.SFC64)}
_LITERALS = (type(None), bool, int, float, str)
#: a list of at least this many floats is written as an array member
_FLOAT_RUN = 16


class StateEncodeError(TypeError):
    """The state holds something a checkpoint may not hold (module docstring)."""


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


def _within(module: Any, roots: tuple[str, ...]) -> bool:
    # never a ``__main__``: importing one runs a command (a reproduction's)
    return isinstance(module, str) and bool(module) and \
        "__main__" not in module.split(".") and \
        any(module == r or module.startswith(r + ".") for r in roots)


def _dunder(name: Any) -> bool:
    return not isinstance(name, str) or (name.startswith("__") and name.endswith("__"))


def _refusal(what: str) -> str:
    return (f"{what}, which a checkpoint may not hold (only numpy arrays, scalars, dtypes "
            "and random generators, builtin containers, and the classes of mpi_privopt "
            "and of the modules the config names)")


def _method_ok(owner: Any, name: Any, roots: tuple[str, ...]) -> bool:
    """Whether ``getattr(owner, name)`` is a method its allowed class defines."""
    if _dunder(name):
        return False
    cls = type(owner)
    return _within(cls.__module__, roots) and isinstance(
        inspect.getattr_static(cls, name, None), types.FunctionType)


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
        if kind in _LITERALS:
            return obj
        name = self.names.get(id(obj))
        if name is not None:
            return {"ext": name}
        seen = self.memo.get(id(obj))
        if seen is not None:
            return {"ref": seen}
        if kind is list:
            if len(obj) >= _FLOAT_RUN and all(type(v) is float for v in obj):
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
                raise StateEncodeError(_refusal("a numpy array of Python objects"))
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
        if kind in (set, frozenset):
            items = [self.encode(v) for v in obj]
            return self._new(obj, {"set": items}) if kind is set else {"frozenset": items}
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
        if kind in _BIT_GENERATORS.values():
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
            if not _method_ok(owner, name, self.roots) or \
                    getattr(owner, name).__func__ is not obj.__func__:
                raise StateEncodeError(_refusal(f"a method {name!r} of a "
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
    if issubclass(kind, (tuple, list, dict, set, frozenset, np.ndarray, np.generic)):
        raise StateEncodeError(f"{name} subclasses a builtin container, which a "
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
    if not _within(cls.__module__, roots) or "<locals>" in qual or \
            any(_dunder(part) for part in qual.split(".")):
        raise StateEncodeError(_refusal(f"{cls.__module__}.{qual}"))
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


# -- decoding ----------------------------------------------------------------------------

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
        if type(node) in _LITERALS:
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
            if isinstance(part, dict) and any(map(_dunder_key, part)):
                raise StateDecodeError(f"the state of a {cls.__qualname__} sets a "
                                       "__dunder__ attribute, which a checkpoint never writes")
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
                issubclass(cls, (tuple, list, dict, set, frozenset, np.ndarray)):
            raise StateDecodeError(f"the state names {cls.__module__}.{cls.__qualname__}, "
                                   "a class a checkpoint never writes as attributes")
        return cls

    def cls(self, name: Any) -> type:
        module, _, qual = name.partition(":") if isinstance(name, str) else ("", "", "")
        if not _within(module, self.roots) or not qual or \
                any(_dunder(part) for part in qual.split(".")):
            raise StateDecodeError(f"the state names {_refusal(str(name).replace(':', '.'))}")
        found: Any = importlib.import_module(module)
        for part in qual.split("."):
            found = getattr(found, part, None)
        if not (isinstance(found, type) and _within(found.__module__, self.roots)):
            raise StateDecodeError(f"the state names {_refusal(module + '.' + qual)}")
        return found

    def method(self, node: dict) -> Any:
        owner = self.decode(node["method"])
        if not _method_ok(owner, node.get("name"), self.roots):
            raise StateDecodeError(f"the state names a method {node.get('name')!r} of a "
                                   f"{type(owner).__qualname__}, which a checkpoint may "
                                   "not hold")
        return getattr(owner, node["name"])

    def generator(self, node: dict) -> np.random.Generator:
        number = node.get("#")
        bits = self.decode(node["generator"])
        if type(bits) not in _BIT_GENERATORS.values():
            raise StateDecodeError("a Generator's bit generator is not one of numpy's")
        return self._keep({"#": number}, np.random.Generator(bits))

    def bitgen(self, node: dict) -> Any:
        cls = _BIT_GENERATORS.get(node["bitgen"])
        if cls is None:
            raise StateDecodeError(f"the state names {_refusal(str(node['bitgen']))}")
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


def _dunder_key(key: Any) -> bool:
    return not isinstance(key, str) or key.startswith("__")


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
    return np.frombuffer(bytes.fromhex(node["hex"]), dtype=dtype)[0].copy()


def _dtype(descr: Any) -> np.dtype:
    try:
        dtype = np.lib.format.descr_to_dtype(descr)
    except (TypeError, ValueError, KeyError) as err:
        raise StateDecodeError(f"the state names a dtype {descr!r} ({err})") from None
    if dtype.hasobject:
        raise StateDecodeError(_refusal("a numpy dtype of Python objects"))
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
        except (KeyError, TypeError, AttributeError) as err:  # a malformed node
            raise StateDecodeError(f"the state is malformed ({type(err).__name__}: "
                                   f"{err})") from None
