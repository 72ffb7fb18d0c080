"""pytest options shared by the whole suite.

By default every database-backed test runs on SQLite and on PostgreSQL;
``--backend sqlite`` (or ``postgresql``) narrows that while developing.

Every test runs under the generation guard (tests/generation_guard.py): a
transaction writing a provider's inventories or traits without bumping its
generation fails the test.
"""

import pytest

from tests import generation_guard
from tests import harness

generation_guard.install()


def pytest_addoption(parser):
    parser.addoption('--backend', action='append', choices=harness.BACKENDS,
                     help='database backend(s) to run against '
                          '(default: all of them)')


def pytest_generate_tests(metafunc):
    if 'backend' in metafunc.fixturenames:
        backends = metafunc.config.getoption('backend') or harness.BACKENDS
        metafunc.parametrize('backend', backends)


@pytest.fixture
def environment(backend):
    """A fresh database and app on it, for pytest tests that need one."""
    env = harness.Environment(backend)
    yield env
    env.close()


@pytest.fixture(autouse=True)
def _generation_guard():
    """Fail the test if a write without a bump was caught during it, even
    where the app turned the guard's exception into a 500."""
    seen = len(generation_guard.caught)
    yield
    caught = generation_guard.caught[seen:]
    del generation_guard.caught[seen:]
    if caught:
        pytest.fail('generation guard: ' + '; '.join(caught))
