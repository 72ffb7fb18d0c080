"""pytest options shared by the whole suite.

By default every database-backed test runs on SQLite and on PostgreSQL,
and the tests marked ``mysql`` (a module's ``pytestmark``) on MariaDB too;
``--backend sqlite`` (or ``postgresql``, ``mysql``) narrows that while
developing.

Every test runs under the generation guard (tests/generation_guard.py): a
transaction writing a provider's inventories or traits without bumping its
generation fails the test.

The terminal summary ends with the counts of nova's functional tests run
against placement_lite (tests/test_nova_functional.py), when it ran.
"""

import pytest

from tests import generation_guard
from tests import harness
from tests import test_nova_functional
from tests.nova import environment as nova_environment

generation_guard.install()


def pytest_addoption(parser):
    parser.addoption('--backend', action='append', choices=harness.BACKENDS,
                     help='database backend(s) to run against '
                          '(default: all of them)')


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'mysql: run on MariaDB too (the backend fixture gets '
                   "'mysql' as well as 'sqlite' and 'postgresql')")
    config.addinivalue_line(
        'markers', 'only_backends(*names): run on these backends only '
                   '(of those selected)')


NOVA_TESTS = 'tests/test_nova_functional.py'
NOVA_CHUNKS = len(test_nova_functional.CHUNKS)
#: The counts tests/test_nova_functional.py recorded, one dict per chunk,
#: and the seconds spent building nova's environment.
_nova_counts = []
_nova_builds = []


def pytest_collection_finish(session):
    """Start building nova's environment (tests/nova) in the background
    when this process is to run nova's tests."""
    if session.config.option.collectonly:
        return
    if any(item.nodeid.startswith(NOVA_TESTS) for item in session.items):
        nova_environment.start_building()


def pytest_runtest_logreport(report):
    if report.when != 'call':
        return
    for name, value in report.user_properties:
        if name == 'nova_tests':
            _nova_counts.append(value)
        elif name == 'nova_environment_built_seconds':
            _nova_builds.append(value)


def pytest_terminal_summary(terminalreporter):
    if not _nova_counts:
        return
    totals = {key: sum(chunk[key] for chunk in _nova_counts)
              for key in ('ran', 'passed', 'failed', 'skipped')}
    line = ("nova's functional tests against placement_lite: %d ran, "
            '%d passed, %d failed, %d skipped (%d of %d chunks)' % (
                totals['ran'], totals['passed'], totals['failed'],
                totals['skipped'], len(_nova_counts), NOVA_CHUNKS))
    if _nova_builds:
        line += "; nova's environment built in %.1f s" % max(_nova_builds)
    terminalreporter.write_line(line)


def backends_of(config, node):
    """The backends a test (``node``) runs on: those selected, without
    MariaDB unless the test is marked ``mysql``."""
    backends = config.getoption('backend') or harness.BACKENDS
    if node.get_closest_marker('mysql') is None:
        backends = [name for name in backends if name != 'mysql']
    only = node.get_closest_marker('only_backends')
    if only is not None:
        backends = [name for name in backends if name in only.args]
    return backends


def pytest_generate_tests(metafunc):
    if 'backend' in metafunc.fixturenames:
        metafunc.parametrize('backend',
                             backends_of(metafunc.config, metafunc.definition))


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
