"""The command layer: handlers of ``python -m mpi_privopt`` sub-commands that are not a run.

:mod:`.privacy` answers ``privacy {epsilon, calibrate, coalition}`` by hand;
:mod:`.noise_bench` times the noise sources (``python -m mpi_privopt.commands.noise_bench``).
Application code: nothing in the library layers (privacy, network, problems, algorithms)
imports this package (``tests/unit/test_import_rules.py``).
"""
