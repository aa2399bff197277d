"""Empirical privacy audit of a link: lower bounds on what an observer learns, against the
ledger's upper bound (docs/privacy-audit.md).

* :mod:`.stats`: Clopper-Pearson intervals, lower bounds on the Gaussian-DP mu and on
  (epsilon, delta) from a test's error rates, threshold selection, trial counts, noise
  tests, membership-advantage bounds (pure functions, for any audit or attack);
* :mod:`.canary`: the replace-one canary (clipped gradient +-c1 u) and, per method, the
  clean value of each world computed by the method's own step functions;
* :mod:`.shift`: the one formula of the white-box sensitivity check (a release's realised
  shift over its booked sensitivity), shared by every harness and the contract's check;
* :mod:`.harness`: what is attached to the agents of a run (the target's trials, every
  agent's wire record);
* :mod:`.method_audit`: what a method's ``audit()`` hook returns (how the runner attaches
  to it), and the audit through a method's mechanism; the methods whose release path is
  not one mechanism call on a step's value have theirs in their family
  (``methods/chan2023/audit.py``: token-admm's ``_iterate``; ``methods/chen2025/audit.py``:
  ldp-aggregative's packed Laplace messages of a private state, audited in pure epsilon
  through shadow trajectories);
* :mod:`.runner`: :func:`run_audit` under MPI and the report;
* :mod:`.command`: ``python -m mpi_privopt audit``.

Launch (one rank per agent)::

    mpiexec -n 5 python -m mpi4py -m mpi_privopt audit gauthier2024-ridge --trials 4000
"""
from .stats import (audit_bound, clopper_pearson, eps_lower_bound, gdp_mu_lower_bound,
                    mi_advantage_bound, trials_needed)

__all__ = ["audit_bound", "clopper_pearson", "eps_lower_bound", "gdp_mu_lower_bound",
           "mi_advantage_bound", "trials_needed"]
