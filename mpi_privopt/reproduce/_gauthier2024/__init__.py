"""Pieces of ``reproduce gauthier2024``: the runs and launching (:mod:`.jobs`), figures and
tables (:mod:`.figures`)."""
