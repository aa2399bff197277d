"""Chen & Wang: LDP stochastic aggregative optimization and its baselines in the same
framework (aggregative GT, PAT, PDOP and [51]); its budget, eq. (21), and audit
(docs/methods/chen2025.md).

``METHODS`` is this family's one registration: ``algorithm.name`` -> ``"module:Class"``
(the module relative to this package, imported when the name is first looked up).
"""

METHODS = {
    "ldp-aggregative": "ldp_aggregative:LDPAggregative",
    "aggregative-gt": "aggregative_gt:AggregativeGT",
    "aggregative-pat": "aggregative_pat:AggregativePAT",
    "pdop-aggregative": "aggregative_frameworks:PDOPAggregative",
    "tvs-aggregative": "aggregative_frameworks:TVSAggregative",
}
