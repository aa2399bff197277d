"""The golden set: short fixed-seed runs of every registered algorithm and packaged experiment.

Recorded before the architecture renovation (``record.py``) and compared after every change
by ``tests/e2e/test_golden.py``: final models, traffic and ledger bitwise identical,
metrics equal to rtol 1e-12 (timing columns excluded).
"""

RANKS = 4
ITERATIONS = 20

#: packaged experiments, each as it is but shorter
EXPERIMENTS = (
    "default", "admm-ridge", "dgd-ridge",
    "gade2017-fig1-dgd", "gade2017-fig1-fs", "gade2017-fig1-rss-lb", "gade2017-fig1-rss-nb",
    "gade2017-logistic-dgd", "gade2017-logistic-fs", "gade2017-logistic-rss-lb",
    "gade2017-logistic-rss-nb",
    "gauthier2024-elastic-net", "gauthier2024-lad", "gauthier2024-ridge",
    "token-admm-elastic-net",
    "ldp-aggregative-quadratic", "ldp-aggregative-digits",
)

#: the Chen & Wang baselines' accounting, as recorded
NOMINAL = ("privacy.accounting=nominal",)

#: registered algorithms no packaged experiment runs, and variants worth pinning
VARIANTS = {
    "eps-delta-nfl": ("gauthier2024-ridge", ["algorithm.name=eps-delta-nfl",
                                             "algorithm.mechanism=analytic"]),
    "eps-delta-nfl-classical": ("gauthier2024-ridge", ["algorithm.name=eps-delta-nfl",
                                                       "privacy.epsilon=1"]),
    "zcdp-grad-nfl": ("gauthier2024-elastic-net", ["algorithm.name=zcdp-grad-nfl",
                                                   "algorithm.step=0.05"]),
    "p-admm": ("gauthier2024-ridge", ["algorithm.name=p-admm"]),
    "zcdp-nfl-tight": ("default", ["algorithm.conversion=tight", "algorithm.tau=1"]),
    "zcdp-nfl-exact": ("default", ["algorithm.conversion=exact"]),
    "zcdp-nfl-noiseless": ("default", ["algorithm.noiseless=true", "privacy.epsilon=inf"]),
    "admm-lad": ("gauthier2024-lad", ["algorithm.name=admm", "privacy.epsilon=inf",
                                      "algorithm.eta=0.1"]),
    "dgd-fused-box": ("dgd-ridge", ["algorithm.gradient_at=fused", "algorithm.box=1",
                                    "algorithm.init=uniform"]),
    # the baselines run with the nominal accounting, as recorded (the tracking ones have no
    # other: docs/methods/chen2025.md, "Derived accounting")
    "aggregative-gt": ("ldp-aggregative-quadratic", ["algorithm.name=aggregative-gt",
                                                     "algorithm.constant_weight=0.3",
                                                     "algorithm.alpha0=0.5", *NOMINAL]),
    "aggregative-pat": ("ldp-aggregative-quadratic", ["algorithm.name=aggregative-pat",
                                                      "algorithm.constant_weight=0.3",
                                                      *NOMINAL]),
    "pdop-aggregative": ("ldp-aggregative-quadratic", ["algorithm.name=pdop-aggregative",
                                                       "algorithm.constant_weight=0.3",
                                                       *NOMINAL]),
    "tvs-aggregative": ("ldp-aggregative-quadratic", ["algorithm.name=tvs-aggregative",
                                                      "algorithm.constant_weight=0.3",
                                                      *NOMINAL]),
}


def cases() -> dict[str, tuple[str, list[str]]]:
    """name -> (experiment, overrides), every run ``ITERATIONS`` long, evaluated each step."""
    out = {name: (name, []) for name in EXPERIMENTS}
    out.update({name: (exp, list(sets)) for name, (exp, sets) in VARIANTS.items()})
    common = [f"run.iterations={ITERATIONS}", "run.eval_every=1", "run.progress_every=0"]
    return {name: (exp, sets + common) for name, (exp, sets) in out.items()}
