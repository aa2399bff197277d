"""Registered algorithms: ``ALGORITHMS[name]`` is the class for ``algorithm.name``."""
from .base import ALGORITHMS, Algorithm, register
from . import admm, dgd, zcdp_nfl  # noqa: F401  (importing registers them)
from . import eps_delta_nfl, p_admm, zcdp_grad_nfl  # noqa: F401
from . import function_sharing, rss  # noqa: F401  (Gade & Vaidya 2017)
from . import token_admm  # noqa: F401  (Chan, Xie & Zhao 2023)
from . import aggregative_gt, aggregative_pat, ldp_aggregative  # noqa: F401  (Chen & Wang 2025)
from . import aggregative_frameworks  # noqa: F401  (PDOP and [51] in its framework)

__all__ = ["ALGORITHMS", "Algorithm", "register"]
