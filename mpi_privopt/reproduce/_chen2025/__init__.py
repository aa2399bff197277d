"""Pieces of ``reproduce chen2025``: the runs (settings), the tracker diagnostics recorded
inside them, the panels' data and the figures."""
