"""Empirical privacy audits: lower bounds on what crossed a link, against the ledger."""
