"""Honest-but-curious attacks on the Gade & Vaidya methods (and on DGD, their baseline).

A coalition of passive agents follows the protocol, records every message on its links
(:mod:`.transcript`), and inverts the target's projected gradient steps to estimate the
target's gradients and, for polynomial objectives, its function (:mod:`.inversion`).
:mod:`.runner` runs a configuration under MPI with the recorders attached and scores the
estimates against the target's ground truth. :mod:`.subset_sum` (with
:mod:`.subset_sum_runner`) is Gade & Vaidya's second property seen from the attacker: a
coalition recovers the sum of a group's objectives under Function Sharing exactly when it
separates the group from the other agents.

Launch (one rank per agent)::

    mpiexec -n 5 python -m mpi4py -m mpi_privopt.methods.gade2017.attacks CONFIG --coalition 1 --target 0 \\
        [--set section.key=value ...] --out DIR
    mpiexec -n 5 python -m mpi4py -m mpi_privopt.methods.gade2017.attacks gade2017-fig1-fs --coalition 0,2 \\
        --sums --set run.iterations=1
"""
from .inversion import SUPPORTED, CoalitionView, PublicProtocol, fit_polynomial, invert_gradients
from .runner import SUCCESS_THRESHOLD, run_attack, score_attack
from .subset_sum_runner import run_subset_sum_attack
from .transcript import LinkRecorder, TargetProbe

__all__ = ["SUPPORTED", "SUCCESS_THRESHOLD", "CoalitionView", "LinkRecorder", "PublicProtocol",
           "TargetProbe", "fit_polynomial", "invert_gradients", "run_attack",
           "run_subset_sum_attack", "score_attack"]
