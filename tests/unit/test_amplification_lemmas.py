"""The analysis of Chan, Xie & Zhao 2023 checked numerically (docs/methods/chan2023.md).

The shared kernel (mpi_privopt.methods.chan2023.gradient_admm) has A = I, B = -I. Lemmas 6.5 and
7.6 are stated for a general A = [I | D] and B, so this file writes Algorithm 1 for general
(A, B, c) once (``general_iteration``), independently of the kernel, checks that it agrees
with the kernel where both apply, and tests the lemmas on both.
"""
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from mpi_privopt.methods.chan2023 import gradient_admm as admm
from mpi_privopt.privacy.amplification import contraction_factor, eta_interval, strongly_convex_terms


# ---------------------------------------------------------------------------------------------
# Algorithm 1 for general A, B, c (the test's own computation)
# ---------------------------------------------------------------------------------------------
def general_iteration(x, lam, grad_f, G, A, B, c, beta, eta):
    """y -> lambda -> x of Algorithm 1: eqs. (5), (6) and Lemma 3.2's closed form (7)."""
    y = G(lam - beta * A @ x)
    lam1 = lam - beta * (A @ x + B @ y - c)
    M = np.eye(A.shape[1]) + eta * beta * A.T @ A
    x1 = np.linalg.solve(M, x - eta * (grad_f(x) + A.T @ (beta * (B @ y - c) - lam1)))
    return y, lam1, x1


def quadratic_G(H, h, B, c, beta):
    """G(w) = argmin_y 1/2 y'Hy + h'y + beta/2 ||B y - c - w/beta||^2 (H + beta B'B > 0)."""
    K = H + beta * B.T @ B
    return lambda w: np.linalg.solve(K, -h + B.T @ (beta * c + w))


def random_psd(rng, d, lo, hi, rank=None):
    """A symmetric matrix with eigenvalues in [lo, hi] (the largest equal to hi)."""
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    ev = rng.uniform(lo, hi, size=d)
    ev[0] = hi
    if rank is not None:
        ev[rank:] = 0.0
    return (Q * ev) @ Q.T


def logistic(rng, n, nu):
    """f(x) = sum_i log(1 + exp(a_i'x)) scaled to be nu-smooth (not quadratic)."""
    Adata = rng.normal(size=(5, n))
    Adata *= np.sqrt(4 * nu) / np.linalg.norm(Adata, 2)   # smoothness ||Adata||^2 / 4 = nu
    return lambda x: Adata.T @ (1 / (1 + np.exp(-Adata @ x)))


def random_instance(rng, strongly_convex):
    m = int(rng.integers(1, 5))
    n = m + int(rng.integers(0, 4))
    ell = int(rng.integers(1, 5))
    A = np.hstack([np.eye(m), rng.normal(size=(m, n - m))])      # A = [I | D] (Remark 3.4)
    B = rng.normal(size=(m, ell))
    c = rng.normal(size=m)
    beta = float(rng.uniform(0.1, 3.0))
    if strongly_convex:
        nu = float(rng.uniform(0.2, 3.0))
        mu = float(rng.uniform(0.05, 1.0)) * nu
        mu_g = float(rng.uniform(0.05, 2.0))
        H = random_psd(rng, ell, mu_g, mu_g + 2.0)
        if rng.random() < 0.5:
            Hf, bf = random_psd(rng, n, mu, nu), rng.normal(size=n)
            grad_f = lambda x: Hf @ x - bf                        # noqa: E731
        else:                                                    # logistic + ridge
            g_log = logistic(rng, n, nu - mu)
            grad_f = lambda x: g_log(x) + mu * x                  # noqa: E731
        lo, hi = eta_interval(nu, mu, mu_g, beta, np.linalg.norm(A.T @ B, 2))
        eta = float(rng.uniform(lo, hi))
        extra = dict(nu=nu, mu=mu, mu_g=mu_g, norm_AtB=np.linalg.norm(A.T @ B, 2))
    else:
        nu = float(rng.uniform(0.2, 3.0))
        H = random_psd(rng, ell, 0.0, 2.0, rank=int(rng.integers(0, ell + 1)))
        H += 1e-3 * np.eye(ell) if np.linalg.matrix_rank(H + B.T @ B) < ell else 0.0
        if rng.random() < 0.5:
            Hf, bf = random_psd(rng, n, 0.0, nu, rank=int(rng.integers(1, n + 1))), rng.normal(size=n)
            grad_f = lambda x: Hf @ x - bf                        # noqa: E731
        else:
            grad_f = logistic(rng, n, nu)
        eta = float(rng.uniform(0.2, 1.0)) / nu if rng.random() < 0.5 else 1.0 / nu
        extra = {}
    G = quadratic_G(H, rng.normal(size=ell), B, c, beta)
    return dict(A=A, B=B, c=c, beta=beta, eta=eta, grad_f=grad_f, G=G, n=n, m=m, **extra)


def step(inst, x, lam):
    _, lam1, x1 = general_iteration(x, lam, inst["grad_f"], inst["G"], inst["A"], inst["B"],
                                    inst["c"], inst["beta"], inst["eta"])
    return x1, lam1


def custom_norm2(dx, dlam, A, beta, eta, R=1.0):
    """||(dx, dlam)||_*^2 = R ||dx||^2 + (eta/beta) ||dlam - beta A dx||^2 (Defs. 6.3, 7.4)."""
    u = dlam - beta * A @ dx
    return R * dx @ dx + eta / beta * u @ u


# ---------------------------------------------------------------------------------------------
# The kernel against the general iteration, the soft threshold, convergence (items 1-2)
# ---------------------------------------------------------------------------------------------
def test_kernel_equals_the_general_iteration_for_A_I_B_minus_I():
    rng = np.random.default_rng(1)
    n, beta, eta, c2 = 6, 0.9, 1.7, 0.1
    pen = admm.ElasticNetPenalty(c1=0.0, c2=c2)         # c1 = 0: g quadratic, G linear
    Hf = random_psd(rng, n, 0.0, 0.5)
    I = np.eye(n)
    G = quadratic_G(2 * c2 * I, np.zeros(n), -I, np.zeros(n), beta)
    for _ in range(5):
        x, lam = rng.normal(size=n), rng.normal(size=n)
        y_k, lam_k, x_k = admm.iteration(x, lam, Hf @ x, pen, beta, eta)
        y_g, lam_g, x_g = general_iteration(x, lam, lambda v: Hf @ v, G, I, -I, np.zeros(n),
                                            beta, eta)
        np.testing.assert_allclose(np.concatenate([y_k, lam_k, x_k]),
                                   np.concatenate([y_g, lam_g, x_g]), rtol=1e-12, atol=1e-12)


def test_soft_threshold_y_step_equals_brute_force_minimisation():
    # G(w) = argmin_y c1|y| + c2 y^2 + (beta/2)(y + w/beta)^2, coordinate-wise
    rng = np.random.default_rng(2)
    for c1, c2, beta in ((0.01, 0.1, 0.9), (0.5, 0.1, 0.3), (1.0, 0.0, 2.0), (0.0, 0.3, 1.0)):
        pen = admm.ElasticNetPenalty(c1=c1, c2=c2)
        w = np.concatenate([rng.normal(scale=2.0, size=20), [c1, -c1, 0.0, c1 * 1.0001]])
        y = pen.minimiser(w, beta)
        for wi, yi in zip(w, y):
            obj = lambda v: c1 * abs(v) + c2 * v * v + beta / 2 * (v + wi / beta) ** 2  # noqa: E731
            ref = minimize_scalar(obj, bounds=(-50, 50), method="bounded",
                                  options={"xatol": 1e-12}).x
            assert yi == pytest.approx(ref, abs=1e-7)
            assert obj(yi) <= obj(ref) + 1e-14


def test_noiseless_iteration_converges_to_the_minimiser():
    # sigma = 0 and the full f in every iteration: (x, y) -> argmin f(x) + g(x), the
    # KKT point of (1) with A = I, B = -I, c = 0 (lambda -> grad f(x*)); found independently
    # by proximal gradient (ISTA).
    rng = np.random.default_rng(3)
    n, beta, c1, c2 = 5, 0.9, 0.05, 0.1
    Adata = rng.normal(size=(30, n)) / np.sqrt(30)
    b = rng.normal(size=30)
    grad = lambda x: 2 * Adata.T @ (Adata @ x - b)                 # noqa: E731
    nu = 2 * np.linalg.norm(Adata, 2) ** 2
    pen = admm.ElasticNetPenalty(c1, c2)
    x, lam = 3 * np.ones(n), np.zeros(n)
    for _ in range(3000):
        y, lam, x = admm.iteration(x, lam, grad(x), pen, beta, 1 / nu)
    step_ = 1 / (nu + 2 * c2)
    z = np.zeros(n)
    for _ in range(20000):
        v = z - step_ * (grad(z) + 2 * c2 * z)
        z = admm.soft_threshold(v, step_ * c1)
    np.testing.assert_allclose(x, z, atol=1e-9)
    np.testing.assert_allclose(y, z, atol=1e-9)
    np.testing.assert_allclose(lam, grad(z), atol=1e-9)


# ---------------------------------------------------------------------------------------------
# Section 5.2's counter-example: one iteration can expand the Euclidean distance
# ---------------------------------------------------------------------------------------------
def test_counter_example_one_iteration_expands_the_euclidean_distance():
    # g = 0, B = 0, A = I, beta = 1, f = 0, eta -> 0: lambda picks up beta dx while x keeps it
    n, beta = 3, 1.0
    I, Z = np.eye(n), np.zeros((n, 1))
    G = lambda w: np.zeros(1)                                    # noqa: E731  (B = 0: y is irrelevant)
    x0, x0p = np.array([1.0, -2.0, 0.5]), np.zeros(n)
    ratios = []
    for eta in (1e-1, 1e-2, 1e-3):
        out = [general_iteration(x, np.zeros(n), lambda v: 0 * v, G, I, Z, np.zeros(n), beta, eta)
               for x in (x0, x0p)]
        dlam, dx = out[0][1] - out[1][1], out[0][2] - out[1][2]
        ratio = (dx @ dx + dlam @ dlam) / ((x0 - x0p) @ (x0 - x0p))
        ratios.append(ratio)
        assert ratio > 1.5
        # ... while the customised norm does not grow (Lemma 6.5; f = 0 is 1/eta-smooth)
        before = custom_norm2(x0 - x0p, np.zeros(n), I, beta, eta)
        assert custom_norm2(dx, dlam, I, beta, eta) <= before * (1 + 1e-12)
    assert ratios[-1] == pytest.approx(1.996, abs=5e-4)             # about 2 at eta = 1e-3
    assert ratios == sorted(ratios)


# ---------------------------------------------------------------------------------------------
# Lemma 6.5 and Lemma 7.6 on random instances (items 4-5)
# ---------------------------------------------------------------------------------------------
def test_lemma_6_5_customised_norm_never_increases():
    rng = np.random.default_rng(65)
    worst = 0.0
    for _ in range(200):
        inst = random_instance(rng, strongly_convex=False)
        n, m = inst["n"], inst["m"]
        x, xp = rng.normal(size=n), rng.normal(size=n)
        lam, lamp = rng.normal(size=m), rng.normal(size=m)
        for _ in range(3):                                        # a few iterations in a row
            before = custom_norm2(x - xp, lam - lamp, inst["A"], inst["beta"], inst["eta"])
            (x, lam), (xp, lamp) = step(inst, x, lam), step(inst, xp, lamp)
            after = custom_norm2(x - xp, lam - lamp, inst["A"], inst["beta"], inst["eta"])
            worst = max(worst, after / before)
    assert worst <= 1 + 1e-10
    assert worst > 0.5                                             # the check has teeth


def test_lemma_7_6_squared_customised_norm_shrinks_by_lfrak():
    rng = np.random.default_rng(76)
    worst = 0.0
    for _ in range(300):
        inst = random_instance(rng, strongly_convex=True)
        n, m = inst["n"], inst["m"]
        t = strongly_convex_terms(inst["eta"], inst["beta"], inst["nu"], inst["mu"],
                                  inst["mu_g"], np.linalg.norm(inst["A"], 2), inst["norm_AtB"])
        x, xp = rng.normal(size=n), rng.normal(size=n)
        lam, lamp = rng.normal(size=m), rng.normal(size=m)
        before = custom_norm2(x - xp, lam - lamp, inst["A"], inst["beta"], inst["eta"], t.R)
        (x, lam), (xp, lamp) = step(inst, x, lam), step(inst, xp, lamp)
        after = custom_norm2(x - xp, lam - lamp, inst["A"], inst["beta"], inst["eta"], t.R)
        assert t.contraction < 1
        worst = max(worst, after / before / t.contraction)
    assert worst <= 1 + 1e-10
    assert worst > 0.3


@pytest.mark.parametrize("strongly_convex", [False, True])
def test_lemmas_hold_for_the_kernel_with_the_non_smooth_elastic_net(strongly_convex):
    # The kernel's instance (A = I, B = -I, g = c1|y|_1 + c2|y|^2, mu_g = 2 c2) with
    # least-squares records, plus a ridge term in the strongly convex case
    # (docs/methods/chan2023.md, "Strong convexity in the experiments").
    rng = np.random.default_rng(7 + strongly_convex)
    n, r, beta, c1, c2 = 8, 0.5, 0.9, 0.3, 0.1
    pen = admm.ElasticNetPenalty(c1, c2)
    mu = 0.25 if strongly_convex else 0.0
    nu = 2 * r * r + mu
    if strongly_convex:
        lo, hi = eta_interval(nu, mu, 2 * c2, beta)
        eta = 0.5 * (lo + hi)
        lfrak = contraction_factor(eta, beta, nu, mu, 2 * c2)
        R = strongly_convex_terms(eta, beta, nu, mu, 2 * c2).R
    else:
        eta, lfrak, R = 1 / nu, 1.0, 1.0
    worst = 0.0
    for _ in range(100):
        a = rng.normal(size=n)
        a *= r / np.linalg.norm(a)
        b = rng.normal()
        grad = lambda x: 2 * a * (a @ x - b) + mu * x              # noqa: E731
        x, xp = rng.normal(scale=3, size=n), rng.normal(scale=3, size=n)
        lam, lamp = rng.normal(size=n), rng.normal(size=n)
        before = custom_norm2(x - xp, lam - lamp, np.eye(n), beta, eta, R)
        _, lam, x = admm.iteration(x, lam, grad(x), pen, beta, eta)
        _, lamp, xp = admm.iteration(xp, lamp, grad(xp), pen, beta, eta)
        after = custom_norm2(x - xp, lam - lamp, np.eye(n), beta, eta, R)
        worst = max(worst, after / before / lfrak)
    assert worst <= 1 + 1e-10
