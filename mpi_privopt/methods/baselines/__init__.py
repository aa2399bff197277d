"""The non-private baselines the papers compare against, and on which their methods build:
DGD (Nedic & Ozdaglar) and linearized ADMM. Their privacy loss is unbounded.

``METHODS`` is this family's one registration: ``algorithm.name`` -> ``"module:Class"``
(the module relative to this package, imported when the name is first looked up).
"""

METHODS = {
    "dgd": "dgd:DGD",
    "admm": "admm:LinearizedADMM",
}
