"""Registered algorithms: ``ALGORITHMS[name]`` is the class for ``algorithm.name``.

A packaged method is registered here by name and module; its module is imported when
the name is first looked up (:class:`~.base.Registry`), so a rank running one method loads
only that method's modules and libraries (scipy, networkx where it needs them).
"""
from .base import ALGORITHMS, Algorithm, Registry, register

#: algorithm.name -> the module whose @register defines it
PACKAGED = {
    "admm": "admm", "dgd": "dgd", "zcdp-nfl": "zcdp_nfl",
    "eps-delta-nfl": "eps_delta_nfl", "p-admm": "p_admm", "zcdp-grad-nfl": "zcdp_grad_nfl",
    "fs": "function_sharing", "rss-nb": "rss", "rss-lb": "rss",  # Gade & Vaidya 2017
    "token-admm": "token_admm",  # Chan, Xie & Zhao 2023
    # Chen & Wang 2025; PDOP and [51] in its framework
    "aggregative-gt": "aggregative_gt", "aggregative-pat": "aggregative_pat",
    "ldp-aggregative": "ldp_aggregative",
    "pdop-aggregative": "aggregative_frameworks", "tvs-aggregative": "aggregative_frameworks",
}
ALGORITHMS.add_lazy({name: f"{__name__}.{module}" for name, module in PACKAGED.items()})

__all__ = ["ALGORITHMS", "PACKAGED", "Algorithm", "Registry", "register"]
