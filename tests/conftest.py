"""pytest options shared by the whole suite.

By default every database-backed test runs on SQLite and on PostgreSQL;
``--backend sqlite`` (or ``postgresql``) narrows that while developing.
"""

import pytest

from tests import harness


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
