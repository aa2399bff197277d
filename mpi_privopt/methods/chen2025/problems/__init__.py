"""Chen & Wang's aggregative problems (docs/methods/chen2025.md, "Problem").

Modules
-------
quadratic     the ``aggregative-quadratic`` instance, with its closed-form reference
personalised  the ``personalised`` classification task (eq. 22) on image data sets

Both are named in the family's ``AGGREGATIVE_PROBLEMS`` table; the problem core
(:mod:`mpi_privopt.problems.aggregative`) holds the contract they meet.
"""
