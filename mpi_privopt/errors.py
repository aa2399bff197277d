"""Errors that carry a message for the user: what is wrong and how to fix it.

Every check of user input raises a subclass of :class:`UserError`. The command line
prints ``str(err)`` on rank 0 and exits non-zero on every rank, so no rank hangs.
"""
from __future__ import annotations


class UserError(Exception):
    """Bad input from the user.

    Parameters
    ----------
    what : str
        What is wrong, naming the offending key, file or value.
    fix : str, optional
        How to fix it.
    """

    def __init__(self, what: str, fix: str | None = None) -> None:
        self.what = what
        self.fix = fix
        super().__init__(what if fix is None else f"{what}\n  how to fix: {fix}")


class ConfigError(UserError):
    """A malformed or invalid configuration."""


class TopologyError(UserError):
    """A graph that cannot be used: disconnected, wrong size, bad edge list."""


class DataError(UserError):
    """A data set that cannot be used: NaN/inf, wrong agent column, unreadable file."""


class PrivacyBudgetExceeded(UserError):
    """A release would exceed an agent's privacy budget."""


class InternalError(UserError):
    """An unexpected exception (a bug, not the user's input) inside a collective step.

    It takes the collective path of a :class:`UserError` (:mod:`mpi_privopt.mpiutil`): every
    rank raises it, rank 0 says it once and every rank leaves with status 1, instead of
    the failing rank's traceback while the others wait for it in the next collective call.
    ``detail`` is the failing rank's traceback, printed when ``MPI_PRIVOPT_TRACEBACK=1``.
    """

    status = 1

    def __init__(self, what: str, fix: str | None = None, detail: str = "") -> None:
        super().__init__(what, fix)
        self.detail = detail
