"""Chan, Xie & Zhao: gradient ADMM as a token with privacy amplification by iteration;
its gradient-ADMM kernel, token schedules and audit (docs/methods/chan2023.md).

This family's one registration (:mod:`mpi_privopt.families`): ``METHODS``
(``algorithm.name`` -> ``"module:Class"``) and ``CONSENSUS_PROBLEMS`` (``problem.name`` ->
``"module:ProblemSpec"``), each module relative to this package and imported when the name
is first looked up.
"""

METHODS = {
    "token-admm": "token_admm:TokenADMM",
}

CONSENSUS_PROBLEMS = {
    "singular": "problems:SINGULAR",  # the records of Sec. 5
}
