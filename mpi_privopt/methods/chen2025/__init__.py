"""Chen & Wang: LDP stochastic aggregative optimization and its baselines in the same
framework (aggregative GT, PAT, PDOP and [51]); its budget, eq. (21), and audit
(docs/methods/chen2025.md).

This family's one registration (:mod:`mpi_privopt.families`): ``METHODS``
(``algorithm.name`` -> ``"module:Class"``) and ``AGGREGATIVE_PROBLEMS`` (``problem.name`` ->
``"module:builder"``), each module relative to this package and imported when the name is
first looked up.
"""

METHODS = {
    "ldp-aggregative": "ldp_aggregative:LDPAggregative",
    "aggregative-gt": "aggregative_gt:AggregativeGT",
    "aggregative-pat": "aggregative_pat:AggregativePAT",
    "pdop-aggregative": "aggregative_frameworks:PDOPAggregative",
    "tvs-aggregative": "aggregative_frameworks:TVSAggregative",
}

AGGREGATIVE_PROBLEMS = {
    "aggregative-quadratic": "problems.quadratic:build_quadratic",
    # eq. (22): docs/datasets.md
    "personalised": "problems.personalised:build_personalised",
}
