"""Reference solvers: the high-precision centralised optimum of a consensus problem.

Modules
-------
solution   :class:`ReferenceSolution`, what every reference is (a leaf: numpy only)
solver     :func:`solve_reference`: picks the method for the loss and regularisers
smooth     closed-form least squares and active-set Newton (smooth losses)
piecewise  HiGHS LP and smoothing continuation, with an exact KKT polish (absolute, hinge)
"""
