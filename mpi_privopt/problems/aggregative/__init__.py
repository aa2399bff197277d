"""Aggregative problems (Chen & Wang 2025): min_x sum_i f_i(x_i, g(x)), known through samples.

Modules
-------
objective       :class:`AggregativeObjective`, the contract the aggregative methods compute against
quadratic       the ``aggregative-quadratic`` instance, with its closed-form reference
personalised    the ``personalised`` classification task (eq. 22) on image data sets
sample_history  an agent's history of samples drawn, as count weights
centralised     one-process gradient descent on every agent's objective (a check)

The builders are named in :data:`~mpi_privopt.problems.registry.AGGREGATIVE_PROBLEMS`.
"""
