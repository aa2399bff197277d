"""Pieces of ``reproduce chan2023``: the paper's settings (:mod:`.settings`), the
single-process replay of the authors' notebook and its corrected mode (:mod:`.replay`), the
statistical tests (:mod:`.significance`), and the figures and tables (:mod:`.figures`)."""
