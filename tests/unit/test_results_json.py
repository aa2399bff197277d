"""The run directory's JSON files (mpi_privopt/results.py): json's C encoder, laid out
for reading, the same values as the indenting encoder wrote."""
import json
import math

import numpy as np

from mpi_privopt.results import to_json_text, write_json


def _plain(value):
    """The same data as plain Python, converted the slow way (the reference)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else json.dumps(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


DATA = {
    "agents": 3, "rows": "sender",
    "total": {"bytes": np.arange(9, dtype=np.int64).reshape(3, 3),
              "seconds": np.full((3, 3), 0.1) / 3, "flags": np.eye(3, dtype=bool)},
    "links": {"0->1": [1.5, float("inf")], 2: np.float64(2.5), True: np.int64(7)},
    "agents_list": [{"agent": 0, "epsilon": math.inf}, {"agent": 1, "epsilon": 0.25}],
    "hosts": ["a", "b", "c"], "empty": {}, "none": [], "pair": (1, 2), "nothing": None,
}


def test_the_text_reads_back_as_the_same_values():
    text = to_json_text(DATA)
    assert json.loads(text) == _plain(DATA)
    # and as the indenting encoder's text did
    assert json.loads(text) == json.loads(json.dumps(_plain(DATA), indent=2))


def test_keys_are_one_per_line_and_a_matrix_a_row_per_line():
    lines = to_json_text(DATA).splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    assert '  "agents": 3,' in lines and '  "rows": "sender",' in lines
    assert '      [0, 1, 2],' in lines and '      [6, 7, 8]' in lines  # "bytes", a row a line
    assert '    {"agent": 0, "epsilon": Infinity},' in lines  # unbounded, as before
    assert '  "empty": {},' in lines and '  "pair": [1, 2],' in lines


def test_a_written_file_is_the_text_and_a_newline(tmp_path):
    write_json(tmp_path / "x.json", DATA, durable=True)
    assert (tmp_path / "x.json").read_text() == to_json_text(DATA) + "\n"
    assert not list(tmp_path.glob(".*partial"))
