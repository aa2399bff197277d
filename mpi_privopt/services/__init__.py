"""The run services: what the engine calls at named points around its loop.

One module per service (checkpoint.py and its files: checkpoint_files.py,
checkpoint_format.py, checkpoint_choice.py, checkpoint_legacy.py, state_codec.py,
state_decoder.py, state_rules.py; resume.py, stop_signal.py,
faults.py, watchdog.py, divergence.py, budget_stop.py, progress.py); base.py declares what
they see (``RunContext``, ``LoopState``) and the hook they implement (``RunService``).
docs/architecture.md, "Run services", lists the points and who does what. Nothing is
imported here: ``config`` imports the watchdog's defaults before MPI starts.
"""
