"""pytest options shared by the whole suite.

By default every database-backed test runs on SQLite and on PostgreSQL,
and the tests marked ``mysql`` (a module's ``pytestmark``) on MariaDB too;
``--backend sqlite`` (or ``postgresql``, ``mysql``) narrows that while
developing.

Before the tests start (in the process that hands them to xdist's
workers), the servers they start are installed when missing
(tests/provision.py); a test needing one still missing is skipped, saying
which. A test needs the server of its backend, and those it is marked
``needs`` with; one needing the server of a backend ``--backend`` leaves
out is skipped too.

Every test runs under the generation guard (tests/generation_guard.py): a
transaction writing a provider's inventories or traits without bumping its
generation fails the test.

The terminal summary ends with the counts of nova's functional tests run
against placement_lite (tests/test_nova_functional.py), when it ran.
"""

import pytest

from tests import generation_guard
from tests import harness
from tests import provision
from tests import test_nova_functional
from tests.nova import environment as nova_environment

generation_guard.install()


def pytest_addoption(parser):
    parser.addoption('--backend', action='append', choices=harness.BACKENDS,
                     help='database backend(s) to run against '
                          '(default: all of them)')


@pytest.hookimpl(trylast=True)  # after the terminal reporter's
def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'needs(*servers): starts these servers (names of '
                   'tests/provision.py SERVERS): skipped when one is missing')
    config.addinivalue_line(
        'markers', 'slow: not in the edit-test loop (-m "not slow", '
                   'docs/testing.md)')
    config.addinivalue_line(
        'markers', 'mysql: run on MariaDB too (the backend fixture gets '
                   "'mysql' as well as 'sqlite' and 'postgresql')")
    config.addinivalue_line(
        'markers', 'only_backends(*names): run on these backends only '
                   '(of those selected)')
    # Once per run: not in xdist's workers, which start after this.
    if not (hasattr(config, 'workerinput') or config.option.help
            or config.option.collectonly):
        reporter = config.pluginmanager.get_plugin('terminalreporter')
        provision.provision(say=reporter.write_line if reporter else print)
    # With -n and no --dist of the command line's, xdist's worksteal: each
    # worker takes half of the tests, in order (neighbours sharing a world or
    # server stay together), and one that runs out takes half of what the
    # other has left. See pytest_collection_modifyitems for the order.
    if getattr(config.option, 'dist', 'no') == 'load' and not any(
            arg.startswith('--dist') or arg == '-d'
            for arg in config.invocation_params.args):
        config.option.dist = 'worksteal'


def pytest_collection_modifyitems(config, items):
    """Skip the tests needing a server that is missing, or serves a
    backend --backend leaves out; run the slow tests first.

    The long tests start early and the short ones even out the end."""
    items.sort(key=lambda item: item.get_closest_marker('slow') is None)
    selected = config.getoption('backend') or harness.BACKENDS
    reasons = {name: 'needs ' + provision.missing_line(server)
               for name, server in provision.BY_NAME.items()
               if provision.find(name) is None}
    for backend in set(harness.BACKENDS) - set(selected):
        for name in harness.SERVERS_OF[backend]:
            reasons[name] = 'backend %s not selected' % backend
    for item in items:
        needed = {name for mark in item.iter_markers('needs')
                  for name in mark.args}
        unknown = needed - provision.BY_NAME.keys()
        if unknown:
            raise ValueError('%s needs unknown servers: %s'
                             % (item.nodeid, ', '.join(sorted(unknown))))
        for name in sorted(needed & reasons.keys()):
            item.add_marker(pytest.mark.skip(reason=reasons[name]))


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


def pytest_unconfigure(config):
    harness.remove_workdir()


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
        metafunc.parametrize('backend', [
            pytest.param(name, marks=pytest.mark.needs(
                *harness.SERVERS_OF[name]))
            for name in backends_of(metafunc.config, metafunc.definition)])


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
