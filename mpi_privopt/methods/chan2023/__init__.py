"""Chan, Xie & Zhao: gradient ADMM as a token with privacy amplification by iteration;
its gradient-ADMM kernel, token schedules and audit (docs/methods/chan2023.md).

``METHODS`` is this family's one registration: ``algorithm.name`` -> ``"module:Class"``
(the module relative to this package, imported when the name is first looked up).
"""

METHODS = {
    "token-admm": "token_admm:TokenADMM",
}
