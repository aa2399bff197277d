"""Pieces of ``reproduce gade2017``: data (:mod:`.data`), jobs and launching (:mod:`.jobs`),
figures and tables (:mod:`.figures`)."""
