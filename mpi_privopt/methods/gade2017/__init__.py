"""Gade & Vaidya: RSS-NB, RSS-LB and function sharing, the certificate of their
privacy and the attacks on them (docs/methods/gade2017.md).

This family's one registration (:mod:`mpi_privopt.families`): ``METHODS``
(``algorithm.name`` -> ``"module:Class"``), ``POLYNOMIAL_PRESETS`` (``problem.preset`` of
the polynomial problem -> ``"module:function"``) and its attack, each module relative to
this package and imported when the name is first looked up.
"""

#: the methods whose exchanges this family's curious-neighbour attack inverts
#: (``attacks/inversion.py``); ``audit`` runs it on a non-private run of one of them
ATTACKED = ("dgd", "fs", "rss-nb", "rss-lb")
#: the attack's entry point: ``run_attack(cfg, receivers, target, out, comm, progress)``
ATTACK = "attacks.runner:run_attack"

METHODS = {
    "rss-nb": "rss:RSSNB",
    "rss-lb": "rss:RSSLB",
    "fs": "function_sharing:FunctionSharing",
}

POLYNOMIAL_PRESETS = {
    "gade2017": "problems:figure1_polynomial",  # Sec. VII, Figure 1
}
