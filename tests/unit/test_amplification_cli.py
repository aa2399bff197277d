"""``python -m mpi_privopt privacy amplification``: the amplification calculator by hand."""
import json

import pytest

from mpi_privopt.cli import main as command_line
from mpi_privopt.privacy.amplification import (AmplificationConstants, amplification_ratio,
                                               local_rho)


def run(capsys, *args):
    with pytest.raises(SystemExit) as stop:
        command_line(["privacy", "amplification", *args])
    out = capsys.readouterr()
    return stop.value.code, out.out, out.err


PAPER = ("--eta", "1.753086", "--beta", "0.9", "--nu", "0.5", "--mu", "0.5", "--mu-g", "0.2")


def test_json_gives_the_library_numbers(capsys):
    code, out, _ = run(capsys, *PAPER, "--sigma", "68", "--radius", "8", "--k", "0,12,40", "--json")
    assert code == 0
    result = json.loads(out)
    c = AmplificationConstants(eta=1.753086, beta=0.9, nu=0.5, mu=0.5, mu_g=0.2)
    loc = local_rho(1.753086, 8.0, 68.0)
    assert result["local_rho"] == pytest.approx(loc, rel=1e-14)
    assert result["booked"] == "convex" and result["warning"] is None
    assert result["booked_rho"] == pytest.approx([loc * amplification_ratio(k, c) for k in (0, 12, 40)])
    # convex C = 2 (1 + 0.9 eta) = 5.156: T = 6 is the first T above C, k = 12
    assert result["first_k_below_local"]["convex"] == 12
    assert result["first_k_below_local"]["strongly-convex-conservative"] == 18


def test_midpoint_eta_by_default_and_the_table(capsys):
    code, out, _ = run(capsys, "--beta", "0.9", "--nu", "0.5", "--mu", "0.5", "--mu-g", "0.2",
                       "--sigma", "0.01", "--radius", "8", "--bound", "strongly-convex")
    assert code == 0
    assert "eta = 1.753," in out and "booked by a run: strongly-convex-conservative" in out
    assert "smallest k below local" in out


def test_a_bound_that_does_not_apply_is_one_note(capsys):
    code, out, _ = run(capsys, "--eta", "3", "--beta", "0.9", "--nu", "0.5", "--sigma", "1",
                       "--radius", "8", "--k", "0,20")
    assert code == 0
    assert out.count("note:") == 1 and "booking local privacy" in out
    assert "booked by a run: local" in out


@pytest.mark.parametrize("args, words", [
    (("--beta", "0.9", "--nu", "0.5", "--sigma", "1", "--radius", "8"), "--eta is missing"),
    (PAPER + ("--sigma", "-1", "--radius", "8"), "--sigma"),
    (PAPER + ("--sigma", "1", "--radius", "0"), "--radius"),
    (PAPER + ("--sigma", "1", "--radius", "8", "--k", "x"), "--k"),
    (PAPER + ("--sigma", "1", "--radius", "8", "--k", "1.5"), "whole numbers"),
    (PAPER + ("--sigma", "1", "--radius", "8", "--k", "-2"), "whole numbers"),
    (("--eta", "1", "--beta", "0.9", "--nu", "0.5", "--mu", "0.9", "--sigma", "1", "--radius", "8"),
     "mu = 0.9 exceeds nu"),
])
def test_bad_input_is_one_message(capsys, args, words):
    code, out, err = run(capsys, *args)
    assert code == 2 and words in err and "Traceback" not in err
