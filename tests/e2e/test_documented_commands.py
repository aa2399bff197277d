"""Every shell command shown in README.md and docs/usage.md runs, and exits as documented.

The ```bash blocks of both pages are read at test time, so a command added to them is
tested without touching this file. Each command runs as written, with short settings
substituted (:func:`shorten`): fewer iterations and ranks, a temporary ``--out``, a
small bench, placeholders (``RUN_DIR``, ``NAME``, ``K``, ``[CONFIG]``) filled in. Blocks
that cannot run here are left out by :data:`SKIPPED`, each with its reason.

The launch scripts run against a stand-in of their environment (:func:`launch_env`): its
``python`` is this interpreter, and its record already lists every extra, so they install
nothing (their install step is tested in tests/unit/test_env_script.py).
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from launch_util import MPIEXEC, child_env, launcher_flags, needs_mpiexec

pytestmark = needs_mpiexec

REPO = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/usage.md")

#: commands that cannot run here (matched by their first words), with the reason
SKIPPED = {
    "./launch/test.sh": "the whole test suite, of which this test is a part (it would recurse)",
    "pip install": "installs packages from the network into the running environment "
                   "(the launch scripts' install step: tests/unit/test_env_script.py)",
    "sbatch": "needs a Slurm cluster (tests/cluster)",
    "srun": "needs a Slurm cluster (tests/cluster)",
    "qsub": "needs a PBS cluster",
}
#: the documented exit status of a command documented to fail (first words -> status)
EXPECTED_STATUS: dict[str, int] = {}
#: ranks at most for a documented ``mpiexec -n K`` / ``local.sh`` (2 shared cores)
RANKS = 4
#: iterations of a documented run
ITERATIONS = 5
#: every subprocess's bound (a hung command fails the test instead of hanging CI)
TIMEOUT = 120


def shell_blocks(page: str) -> list[tuple[int, str]]:
    """The ```bash / ```sh blocks of ``page``: (first line number, text)."""
    text = (REPO / page).read_text()
    return [(text[:m.start()].count("\n") + 2, m.group(1))
            for m in re.finditer(r"^```(?:bash|sh|shell)\n(.*?)^```", text, re.M | re.S)]


def commands(block: str) -> list[tuple[int, str]]:
    """The block's commands with the offset of their first line: continuation lines
    joined, comments and blank lines dropped."""
    found, current, first = [], "", 0
    for offset, line in enumerate(block.splitlines()):
        first = offset if not current else first
        current += line
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        if shlex.split(current, comments=True):  # as written, without its comment
            found.append((first, re.sub(r"(^|\s)#.*$", "", current).strip()))
        current = ""
    return found


def documented() -> list[tuple[str, str]]:
    """(where, command) for every command of :data:`PAGES`."""
    found = []
    for page in PAGES:
        for line, block in shell_blocks(page):
            found += [(f"{page}:{line + offset}", cmd) for offset, cmd in commands(block)]
    return found


def skipped(cmd: str) -> str | None:
    words = cmd.split()
    for start, reason in SKIPPED.items():
        if words[:len(start.split())] == start.split():
            return reason
    return None


def shorten(cmd: str, tmp: Path, run_dir: Path) -> str:
    """``cmd`` with short settings and its placeholders filled in."""
    # a synopsis: K ranks, optional parts in brackets ("..." repeats them)
    words = shlex.split(re.sub(r"\s\[[^\]]*\](\.\.\.)?", "", cmd))
    words = [str(RANKS) if w == "K" else w for w in words]
    if "mpiexec" in words:  # fewer ranks, and the flags this launcher needs
        at = words.index("mpiexec")
        if words[at + 1] == "-n":
            words[at + 2] = str(min(int(words[at + 2]), RANKS))
            words[at + 3:at + 3] = launcher_flags()
    if "./launch/local.sh" in words:  # its RANKS (default 8), at most RANKS
        words = [f"RANKS={RANKS}", *(w for w in words if not w.startswith("RANKS="))]
    words = [str(run_dir) if w == "RUN_DIR" else w for w in words]
    words = ["chen2025" if w == "NAME" else w for w in words]
    if (("mpi_privopt" in words and "run" in words or "./launch/local.sh" in words)
            and "reproduce" not in words):
        words = [w for w in words if not w.startswith("run.iterations=")]
        words = [w for i, w in enumerate(words)
                 if not (w == "--set" and (i + 1 == len(words) or words[i + 1] == "--set"))]
        words += ["--set", f"run.iterations={ITERATIONS}", "--set", "run.eval_every=1",
                  "--out", str(tmp / "run-out")]
    if "bench" in words:
        words += ["--sizes", "8", "--repeats", "3", "--iterations", "5"]
    line = shlex.join(words)
    return line.replace("./launch/", f"{REPO}/launch/")


def launch_env(tmp: Path) -> dict[str, str]:
    """The launch scripts' environment as a stand-in: ``bin/python`` is this interpreter
    (but refuses ``-m pip``), and the record of extras lists all of them for the current
    pyproject.toml."""
    venv = tmp / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(  # pip refused: nothing may be installed from here
        '#!/bin/sh\nif [ "$1 $2" = "-m pip" ]; then echo "stand-in: no pip" >&2; exit 1; fi\n'
        f'exec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    pyproject = (REPO / "pyproject.toml").read_bytes()
    extras = tomllib.loads(pyproject.decode())["project"]["optional-dependencies"]
    (venv / ".mpi_privopt-extras").write_text(
        "\n".join([hashlib.sha256(pyproject).hexdigest()[:16], *extras]) + "\n")
    path = os.environ.get("PATH", "")
    here = str(Path(sys.executable).parent)
    if here not in path.split(os.pathsep):  # the mpiexec beside this interpreter
        path = f"{path}{os.pathsep}{here}"
    # a reader's fresh shell has no EXTRAS (the site-MPI suite runs with EXTRAS=test,
    # which would stand in for every script's own choice of extras)
    return {"MPI_PRIVOPT_VENV": str(venv), "PYTHON": sys.executable, "PATH": path,
            "EXTRAS": ""}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A directory to run in, with a finished run (6 agents: the coalition example names
    agents 1, 3 and 5) and the ``myrun.toml`` of the examples."""
    tmp = tmp_path_factory.mktemp("documented")
    run_dir = tmp / "a-run"
    proc = run_line(shlex.join([MPIEXEC, "-n", "6", *launcher_flags(), sys.executable,
                                "-m", "mpi4py", "-m", "mpi_privopt", "run", "--quiet",
                                "--set", f"run.iterations={ITERATIONS}", "--out",
                                str(run_dir)]), tmp, {})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (tmp / "myrun.toml").write_text(
        (REPO / "mpi_privopt" / "experiments" / "default.toml").read_text())
    # the README's `source .venv/bin/activate`: the environment these tests run in
    activate = Path(sys.prefix) / "bin" / "activate"
    (tmp / ".venv" / "bin").mkdir(parents=True)
    (tmp / ".venv" / "bin" / "activate").write_text(
        activate.read_text() if activate.exists() else
        f'export PATH={shlex.quote(str(Path(sys.executable).parent))}:"$PATH"\n')
    return tmp, run_dir, launch_env(tmp)


def run_line(line: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """``line`` run by bash in ``cwd``, in a clean child environment with ``env`` on top."""
    return subprocess.run(["bash", "-c", line], capture_output=True, text=True,
                          timeout=TIMEOUT, cwd=cwd, env=child_env(env))


def test_the_pages_show_commands():
    """The extraction finds the commands (a changed fence must not empty this test)."""
    found = [cmd for _, cmd in documented()]
    assert "./launch/local.sh" in found
    assert any("mpi_privopt privacy epsilon" in cmd for cmd in found)


@pytest.mark.parametrize("where,cmd", documented(), ids=[w for w, _ in documented()])
def test_documented_command_runs(where, cmd, workspace):
    reason = skipped(cmd)
    if reason:
        pytest.skip(reason)
    tmp, run_dir, env = workspace
    out = tmp / "run-out"
    if out.exists():  # each run command writes its own run directory
        shutil.rmtree(out)
    line = shorten(cmd, tmp, run_dir)
    proc = run_line(line, tmp, env)
    status = next((s for start, s in EXPECTED_STATUS.items() if cmd.startswith(start)), 0)
    assert proc.returncode == status, (
        f"{where}: {cmd}\nran as: {line}\nexit {proc.returncode}\n"
        f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
    assert "Traceback" not in proc.stderr, proc.stderr


def test_local_sh_reproduce_is_launch_reproduce_sh(workspace):
    """``./launch/local.sh reproduce ...`` (README) runs launch/reproduce.sh, which asks
    for the reproduce extra: with it missing from the record, that is the one install."""
    tmp, _, env = workspace
    proc = run_line(f"{REPO}/launch/local.sh reproduce --help", tmp, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "chen2025" in proc.stdout and "installing" not in proc.stdout
    record = Path(env["MPI_PRIVOPT_VENV"]) / ".mpi_privopt-extras"
    kept = record.read_text()
    try:  # without the reproduce extra in the record it is installed first (here the
        # stand-in's pip refuses: one message, exit 2, and nothing else runs)
        record.write_text("".join(line for line in kept.splitlines(keepends=True)
                                  if line.strip() != "reproduce"))
        proc = run_line(f"{REPO}/launch/local.sh reproduce --help", tmp, env)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "(new: reproduce)" in proc.stdout and "chen2025" not in proc.stdout
        assert "stand-in: no pip" in proc.stderr
    finally:
        record.write_text(kept)
