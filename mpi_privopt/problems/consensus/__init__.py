"""Consensus problems: min_w F(w) = sum_k f_k(w), agent k knowing only its own f_k.

Modules
-------
losses              per-sample losses of z = x^T w (:data:`LOSSES`)
regularizers        the elastic-net penalty R
local               :class:`LocalProblem` (f_k with clipping, full or minibatch gradients)
global_problem      :class:`GlobalProblem` (F, for evaluation and the reference only)
records             one private function per record, for a token method (Chan et al. 2023)
polynomial          polynomials on a monomial basis (Gade & Vaidya 2017)
polynomial_presets  the named polynomial objectives
polynomial_problem  an agent's polynomial objective and the sum's reference
"""
