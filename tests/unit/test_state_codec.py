"""A rank's state as JSON and arrays (mpi_privopt/services/state_codec.py, its reader
state_decoder.py, their rules state_rules.py): what it keeps (values, aliasing, cycles,
random streams), what it refuses to write and to read, and that loading never touches
pickle. Every registered method's own state is saved and resumed
bitwise under mpiexec by tests/mpi/test_checkpoint_every_method.py."""
from __future__ import annotations

import ast
import collections
import functools
import json
import math
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import mpi_privopt
from mpi_privopt.config import load_config
from mpi_privopt.errors import ConfigError
from mpi_privopt.services.state_codec import (StateDecodeError, StateEncodeError,
                                              decode_state, encode_state, trusted_modules)

#: this test module's classes stand for the package's
TRUSTED = ("mpi_privopt", __name__)


class _Holder:
    """A state object with one of every kind of value a checkpoint keeps."""

    def __init__(self):
        self.values = np.arange(6.0).reshape(2, 3)
        self.fortran = np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))
        self.rng = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(1, 2)))
        self.seeds = np.random.SeedSequence(11)
        self.part = slice(1, 3)
        self.scalar, self.flag = np.float64(2.5), np.bool_(True)
        self.more = collections.deque([1, 2], maxlen=4), {3, 4}, frozenset({5}), complex(1, 2)
        self.ordered = collections.OrderedDict([(2, "b"), (1, "a")])
        self.keyed = {1: "one", (2, 3): [4.0], "s": None}
        self.floats = [math.inf, -math.inf, -0.0, 0.1, 2 ** 80, True]
        self.sigmas = [0.1 * k for k in range(40)] + [math.nan, -0.0]
        self.raw, self.buffer = b"\x00\xff", bytearray(b"ab")
        self.kind, self.dtype = _Holder, np.dtype([("a", "<f8"), ("b", "<i4", (2,))])
        self.callback = self.double

    def double(self, x):
        return 2 * x


class _Slotted:
    __slots__ = ("x", "y")


class _Restoring:
    """Saves less than it holds, and makes the rest again (a lock, a module)."""

    def __init__(self):
        self.kept, self.module = 3, os

    def __getstate__(self):
        return {"kept": self.kept}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.module = os


class _Method:
    """Stands for a method that says what its state is (checkpoint_fields)."""

    checkpoint_fields = ("x",)

    def __init__(self):
        self.agent, self.x, self.matrix = "the agent", np.ones(2), np.eye(3)


def _round_trip(roots, externals=None, trusted=TRUSTED):
    tree, arrays = encode_state(roots, externals or {}, trusted)
    tree = json.loads(json.dumps(tree))  # as the file holds it
    return decode_state(tree, arrays, externals or {}, trusted)


def test_every_kind_of_value_comes_back_as_it_was():
    holder = _Holder()
    holder.rng.standard_normal(3)
    back = _round_trip({"h": holder})["h"]
    assert type(back) is _Holder
    for name in ("values", "fortran"):
        saved, restored = getattr(holder, name), getattr(back, name)
        assert restored.dtype == saved.dtype and np.array_equal(restored, saved)
        assert restored.flags.f_contiguous == saved.flags.f_contiguous
    assert type(back.scalar) is np.float64 and back.scalar == 2.5
    assert type(back.flag) is np.bool_
    assert back.more == holder.more and back.more[0].maxlen == 4
    assert back.ordered == holder.ordered and list(back.ordered) == [2, 1]
    assert type(back.ordered) is collections.OrderedDict
    assert back.keyed == holder.keyed and back.part == holder.part
    assert [math.copysign(1, v) if v == 0 else v for v in back.floats] == \
        [math.copysign(1, v) if v == 0 else v for v in holder.floats]
    assert type(back.floats[-1]) is bool
    assert np.array_equal(back.sigmas, holder.sigmas, equal_nan=True)
    assert type(back.sigmas) is list and all(type(v) is float for v in back.sigmas)
    assert math.copysign(1, back.sigmas[-1]) == -1
    assert back.raw == holder.raw and type(back.buffer) is bytearray
    assert back.kind is _Holder and back.dtype == holder.dtype
    assert back.callback(3) == 6 and back.callback.__self__ is back


def test_random_streams_go_on_where_they_stopped():
    holder = _Holder()
    holder.rng.standard_normal(5)
    back = _round_trip({"h": holder})["h"]
    assert back.rng.standard_normal(4).tolist() == holder.rng.standard_normal(4).tolist()
    # the SeedSequence a stream was made from, and one held alone, spawn the same children
    assert back.rng.bit_generator.seed_seq.spawn_key == (1, 2)
    assert [s.entropy for s in back.seeds.spawn(2)] == [s.entropy for s in holder.seeds.spawn(2)]
    assert back.seeds.spawn(1)[0].spawn_key == holder.seeds.spawn(1)[0].spawn_key
    for cls in (np.random.MT19937, np.random.Philox, np.random.SFC64, np.random.PCG64DXSM):
        rng = np.random.Generator(cls(5))
        rng.integers(0, 10, 3)
        again = _round_trip({"g": rng})["g"]
        assert again.integers(0, 2 ** 62, 5).tolist() == rng.integers(0, 2 ** 62, 5).tolist()


def test_shared_references_and_cycles_are_kept():
    buffer = np.zeros(3)
    holder = _Holder()
    holder.outgoing = holder.last_sent = buffer
    holder.same_list = holder.again = [buffer]
    holder.me = holder
    holder.stream_a = holder.stream_b = holder.rng
    back = _round_trip({"h": holder, "also": buffer})
    restored = back["h"]
    assert restored.outgoing is restored.last_sent is back["also"]
    assert restored.same_list is restored.again and restored.same_list[0] is back["also"]
    assert restored.me is restored and restored.stream_a is restored.stream_b
    restored.outgoing[0] = 1.0
    assert restored.last_sent[0] == 1.0


def test_slots_getstate_and_externals():
    slotted = _Slotted()
    slotted.x, slotted.y = 1, [2]
    comm = object()  # stands for what the fresh set-up supplies (a communicator)
    back = _round_trip({"s": slotted, "r": _Restoring(), "c": comm}, {"net.comm": comm})
    assert (back["s"].x, back["s"].y) == (1, [2])
    assert back["r"].kept == 3 and back["r"].module is os
    assert back["c"] is comm


def test_a_method_that_says_what_its_state_is_saves_only_that():
    tree, arrays = encode_state({"m": _Method()}, {}, TRUSTED)
    saved = tree["dict"]["m"]["fields"]
    assert sorted(saved) == ["agent", "x"]  # its agent always; the matrix is not written
    back = decode_state(tree, arrays, {}, TRUSTED)["m"]
    assert back.agent == "the agent" and not hasattr(back, "matrix")


@pytest.mark.parametrize("held", [functools.partial(print, 1), os.getcwd, np.add,
                                  ConfigError("x"), lambda: 1, collections.Counter("ab"),
                                  np.array([object()]), np.random.RandomState(1),
                                  _Holder().rng.standard_normal])
def test_saving_refuses_what_a_checkpoint_may_not_hold(held):
    # told at the first checkpoint, never at the resume
    with pytest.raises(StateEncodeError):
        encode_state({"x": held}, {}, TRUSTED)


def _class(name: str, **state) -> dict:
    return {"class": name, "#": 0, "fields": state}


@pytest.mark.parametrize("tree, refused", [
    (_class("posix:system"), "posix.system, which a checkpoint may not hold"),
    (_class("builtins:eval"), "builtins.eval"),
    ({"type": "subprocess:Popen"}, "subprocess.Popen"),
    # a package function is no class: never called, never returned
    (_class("mpi_privopt.cli:main"), "mpi_privopt.cli.main"),
    # importing a __main__ runs its command: never imported
    (_class("mpi_privopt.methods.gade2017.reproduce.__main__:main"), "__main__.main"),
    (_class("mpi_privopt.results:RunDirectory.__init__"), "RunDirectory.__init__"),
    # an object's class changed while its attributes are put back
    (_class("mpi_privopt.results:RunDirectory", __class__="x"), "__dunder__ attribute"),
    # ... also through a class's own __setstate__ (a channel sets each name it is given)
    (_class("mpi_privopt.network.channels:BroadcastChannel",
            __class__={"type": "mpi_privopt.results:RunDirectory"}), "__dunder__ attribute"),
    ({"class": "mpi_privopt.results:RunDirectory", "#": 0, "state": {"list": [1], "#": 1}},
     "other than its attributes"),
    ({"method": _class("mpi_privopt.results:RunDirectory"), "name": "__init__"},
     "a method '__init__'"),
    ({"method": _class("mpi_privopt.results:RunDirectory"), "name": "path"},
     "a method 'path'"),
    ({"ext": "known2"}, "unknown object 'known2'"),
    ({"ref": 3}, "unknown object 3"),
    ({"array": "a9", "#": 0}, "an array 'a9'"),
    ({"bitgen": "Evil", "#": 0, "state": None}, "Evil"),
    ({"dtype": "|O"}, "dtype of Python objects"),
    ({"exec": "print(1)"}, "unknown node"),
    (_class("mpi_privopt.errors:ConfigError"), "never writes as attributes"),
])
def test_a_crafted_state_is_refused_and_runs_nothing(tree, refused):
    _tree, arrays = encode_state({}, {}, TRUSTED)
    with pytest.raises(StateDecodeError, match=refused):
        decode_state(tree, arrays, {"known": 1})


def test_an_array_member_that_needs_pickle_is_refused():
    import io
    buffer = io.BytesIO()
    np.savez(buffer, a0=np.array([print, 1], dtype=object))  # pickled inside the .npy
    with pytest.raises(StateDecodeError, match="malformed .*allow_pickle"):
        decode_state({"array": "a0", "#": 0}, buffer.getvalue(), {})
    with pytest.raises(StateDecodeError, match="its arrays cannot be read"):
        decode_state({"list": [], "#": 0}, b"not a zip", {})


def test_only_the_configs_own_modules_are_trusted():
    cfg = load_config("dgd-ridge", [])
    assert trusted_modules(cfg) == ("mpi_privopt",)
    with pytest.raises(StateEncodeError, match=f"{__name__}._Holder"):
        encode_state({"h": _Holder()}, {}, trusted_modules(cfg))
    tree, arrays = encode_state({"h": _Holder()}, {}, TRUSTED)
    with pytest.raises(StateDecodeError, match=f"{__name__}._Holder"):
        decode_state(tree, arrays, {}, trusted_modules(cfg))


def test_loading_never_unpickles(monkeypatch):
    tree, arrays = encode_state({"h": _Holder()}, {}, TRUSTED)

    def refuse(*args, **kwargs):
        raise AssertionError("pickle was used while loading a state")
    for name in ("load", "loads", "Unpickler", "_Unpickler", "_load", "_loads"):
        monkeypatch.setattr(pickle, name, refuse)
    assert decode_state(tree, arrays, {}, TRUSTED)["h"].callback(2) == 4


def test_no_checkpoint_module_imports_pickle():
    # the only reader of a pickle left is format 1's metadata, for report (no class)
    services = Path(mpi_privopt.__file__).parent / "services"
    for name in ("state_codec", "state_decoder", "state_rules", "checkpoint",
                 "checkpoint_files", "checkpoint_format",
                 "checkpoint_choice", "resume"):
        tree = ast.parse((services / f"{name}.py").read_text())
        imported = {alias.name for node in ast.walk(tree)
                    if isinstance(node, (ast.Import, ast.ImportFrom))
                    for alias in node.names} | {
            node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert "pickle" not in imported, name


@pytest.mark.parametrize("tree", [
    {"scalar": "<f8", "hex": "", "#": 0},                      # no bytes for the scalar
    {"scalar": "<f8", "hex": "00" * 9, "#": 0},                # one byte too many
    _class("mpi_privopt.nope:Foo"),                            # a module that is not there
    {"bitgen": "PCG64", "#": 0, "state": {"state": {"state": 2**200, "inc": 1},
                                           "has_uint32": 0, "uinteger": 0}},
    None,                                                      # nested: made below
])
def test_a_malformed_state_is_one_refusal_never_a_traceback(tree):
    if tree is None:  # nested past Python's recursion limit
        tree = {"list": [], "#": 0}
        for n in range(1, 3000):
            tree = {"list": [tree], "#": n}
    _tree, arrays = encode_state({}, {}, TRUSTED)
    with pytest.raises(StateDecodeError):
        decode_state(tree, arrays, {})


class _Text(str):
    """A str subclass: its value is not in its attributes."""


def test_a_subclass_of_a_builtin_value_or_a_dunder_attribute_is_refused_when_saved():
    with pytest.raises(StateEncodeError, match="builtin container or value"):
        encode_state({"x": _Text("abc")}, {}, TRUSTED)
    holder = _Holder()
    holder.__dict__["__note"] = 1
    with pytest.raises(StateEncodeError, match="'__note'"):
        encode_state({"h": holder}, {}, TRUSTED)


class _Empty:
    """No attributes: Python 3.11's object.__getstate__ gives None (pickle then sets
    nothing); a class with __setstate__ must not be handed None."""

    def __setstate__(self, state):
        self.__dict__.update(state)


def test_an_object_without_attributes_comes_back():
    tree, arrays = encode_state({"e": _Empty()}, {}, TRUSTED)
    assert isinstance(decode_state(tree, arrays, {}, TRUSTED)["e"], _Empty)
