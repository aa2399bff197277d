"""Gade & Vaidya: RSS-NB, RSS-LB and function sharing, the certificate of their
privacy and the attacks on them (docs/methods/gade2017.md).

``METHODS`` is this family's one registration: ``algorithm.name`` -> ``"module:Class"``
(the module relative to this package, imported when the name is first looked up).
"""

METHODS = {
    "rss-nb": "rss:RSSNB",
    "rss-lb": "rss:RSSLB",
    "fs": "function_sharing:FunctionSharing",
}
