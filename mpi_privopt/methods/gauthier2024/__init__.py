"""Gauthier et al.: zCDP-NFL and its baselines (eps-delta-NFL, zCDP-grad-NFL, P-ADMM),
with their noise schedules (docs/methods/gauthier2024.md).

``METHODS`` is this family's one registration: ``algorithm.name`` -> ``"module:Class"``
(the module relative to this package, imported when the name is first looked up).
"""

METHODS = {
    "zcdp-nfl": "zcdp_nfl:ZCDPNFL",
    "eps-delta-nfl": "eps_delta_nfl:EpsDeltaNFL",
    "zcdp-grad-nfl": "zcdp_grad_nfl:ZCDPGradNFL",
    "p-admm": "p_admm:PADMM",
}
