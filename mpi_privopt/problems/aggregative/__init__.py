"""The aggregative problem core: min_x sum_i f_i(x_i, g(x)), known through samples.

Modules
-------
objective       :class:`AggregativeObjective`, the contract the aggregative methods compute against
sample_history  an agent's history of samples drawn, as count weights
centralised     one-process gradient descent on every agent's objective (a check)

The packaged instances are Chen & Wang's own (:mod:`mpi_privopt.methods.chen2025.problems`);
the builders are named in :data:`~mpi_privopt.problems.registry.AGGREGATIVE_PROBLEMS`.
"""
