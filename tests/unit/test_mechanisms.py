"""Mechanisms: the release carries the noise it was made with and its cost."""
import numpy as np
import pytest

from mpi_privopt.privacy.accountants import pure_epsilon, zcdp_rho
from mpi_privopt.privacy.mechanisms import GaussianMechanism, LaplaceMechanism
from mpi_privopt.privacy.noise import agent_noise
from mpi_privopt.privacy.release import PRIVATE

#: why the secure-noise tests skip without the 'secure' extra (CI installs it)
NEEDS_SECURE = "secure noise needs cryptography (pip install 'mpi_privopt[secure]')"


def test_fast_gaussian_release_is_value_plus_the_agents_stream():
    value = np.arange(5.0)
    release = GaussianMechanism(agent_noise("fast", 3, 1)).release(value, 0.2, 1.5)
    expected = value + agent_noise("fast", 3, 1).gaussian(1.5, (5,))
    np.testing.assert_array_equal(release.payload, expected)
    assert release.kind == PRIVATE
    assert release.event.sensitivity == 0.2 and release.event.sigma == 1.5
    assert zcdp_rho(release.event) == pytest.approx(0.04 / (2 * 2.25))


@pytest.mark.parametrize("mechanism", [GaussianMechanism, LaplaceMechanism])
def test_a_release_into_a_given_buffer_is_the_same_release(mechanism):
    value = np.arange(4.0)
    fresh = mechanism(agent_noise("fast", 2, 1)).release(value, 0.3, 2.0)
    buffer = np.full(4, np.nan)
    into = mechanism(agent_noise("fast", 2, 1)).release(value, 0.3, 2.0, out=buffer)
    assert into.payload is buffer
    np.testing.assert_array_equal(buffer, fresh.payload)
    assert into.event == fresh.event
    np.testing.assert_array_equal(value, np.arange(4.0))   # the clean value is untouched


def test_laplace_release_books_pure_epsilon():
    release = LaplaceMechanism(agent_noise("fast", 0, 0)).release(np.zeros(4), 1.0, 4.0)
    assert pure_epsilon(release.event) == pytest.approx(0.25)


def test_secure_release_is_on_the_lattice_and_books_the_rounding():
    pytest.importorskip("cryptography", reason=NEEDS_SECURE)
    noise = agent_noise("secure", 0, 0)
    value = np.array([0.1, -2.3, 7.77])
    release = GaussianMechanism(noise).release(value, 0.5, 1.0)
    g = noise.granularity
    np.testing.assert_array_equal(release.payload / g, np.round(release.payload / g))
    assert release.event.sensitivity == pytest.approx(0.5 + g * np.sqrt(3), rel=0, abs=1e-15)
    assert release.event.sensitivity > 0.5
