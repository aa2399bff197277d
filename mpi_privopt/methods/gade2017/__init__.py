"""Gade & Vaidya: RSS-NB, RSS-LB and function sharing, the certificate of their
privacy and the attacks on them (docs/methods/gade2017.md).

``METHODS`` is this family's one registration: ``algorithm.name`` -> ``"module:Class"``
(the module relative to this package, imported when the name is first looked up).
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
