"""nova's virtual environment, and nova's tests run in it.

The environment (``.bench/nova-venv``, gitignored) holds nova 34.0.0, what
its functional tests import, the reference (for comparison runs only:
nova's tests against placement_lite never import it) and placement_lite,
installed in editable mode from this checkout, so that a change to
placement_lite needs no new environment. It is built on first use by one
process at a time (pytest-xdist workers may all ask at once) and reused
while :func:`wanted` is unchanged: the packages below and placement_lite's
own dependencies. uv (the project's test dependency) installs it: about
7 seconds where pip took 75-100.
"""

import concurrent.futures
import fcntl
import json
import os
import subprocess
import sys
import threading
import time
import tomllib

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BENCH_DIR = os.path.join(REPO, '.bench')
VENV = os.path.join(BENCH_DIR, 'nova-venv')

NOVA_PACKAGES = (
    'nova==34.0.0',
    # The reference, only for ``python -m tests.nova --reference``.
    'openstack-placement==16.0.0',
    # nova's tests turn SQLAlchemy's deprecation warnings into errors, and
    # SQLAlchemy 2.1 deprecates noload(), which nova's database code uses:
    # nova 34.0.0's tests run with 2.0.
    'SQLAlchemy<2.1',
    # Of nova's test-requirements.txt, what its functional tests import.
    'ddt', 'fixtures', 'oslotest', 'testscenarios', 'testtools',
    'wsgi-intercept',
)

#: What tox's ``functional`` environment of nova 34.0.0 sets (its default:
#: eventlet, leaked greenlets failing a test), and nova's per-test timeout.
NOVA_TEST_ENVIRONMENT = {
    'OS_NOVA_DISABLE_EVENTLET_PATCHING': 'False',
    'NOVA_RAISE_ON_GREENLET_LEAK': 'True',
    'OS_TEST_TIMEOUT': '160',
    'OS_STDOUT_CAPTURE': '1',
    'OS_STDERR_CAPTURE': '1',
}


def wanted():
    """The text recorded in a built environment: the packages asked for,
    and placement_lite's own dependencies (changing one rebuilds it)."""
    with open(os.path.join(REPO, 'pyproject.toml'), 'rb') as handle:
        project = tomllib.load(handle)['project']
    return '\n'.join(NOVA_PACKAGES + ('-e .',)
                     + tuple(project['dependencies'])) + '\n'


_building = None


def start_building():
    """:func:`python` in a thread of its own, once per process: a test
    process starts it when it has nova's tests to run, and goes on with
    others meanwhile. Returns its future."""
    global _building
    if _building is None:
        _building = concurrent.futures.Future()

        def build():
            try:
                _building.set_result(python(log=lambda message: None))
            except BaseException as error:
                _building.set_exception(error)

        threading.Thread(target=build, name='nova-environment',
                         daemon=True).start()
    return _building


def python_when_built():
    """What :func:`python` returns, once the build started by
    :func:`start_building` (started now if it was not) is over."""
    return start_building().result()


def python(log=print):
    """The environment's interpreter, building the environment first if
    it is missing or out of date. Returns ``(path, seconds spent
    building)``, 0 when it was reused."""
    os.makedirs(BENCH_DIR, exist_ok=True)
    with open(os.path.join(BENCH_DIR, 'nova-venv.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _python(log)


def _python(log):
    interpreter = os.path.join(VENV, 'bin', 'python')
    marker = os.path.join(VENV, 'nova-packages.txt')
    if os.path.exists(marker) and open(marker).read() == wanted():
        return interpreter, 0.0
    log('creating %s with %s and placement_lite'
        % (VENV, ' '.join(NOVA_PACKAGES)))
    started = time.monotonic()
    for command in (['venv', '--quiet', '--clear', '--python',
                     sys.executable, VENV],
                    ['pip', 'install', '--quiet', '--python', interpreter,
                     *NOVA_PACKAGES, '--editable', REPO]):
        done = subprocess.run([sys.executable, '-m', 'uv', *command],
                              capture_output=True, text=True, cwd=REPO)
        if done.returncode:
            raise RuntimeError('uv %s failed:\n%s%s' % (
                command[0], done.stdout, done.stderr))
    _link_nova_etc(interpreter)
    with open(marker, 'w') as out:
        out.write(wanted())
    return interpreter, time.monotonic() - started


def _link_nova_etc(interpreter):
    """nova's tests read ``$state_path/etc/nova/api-paste.ini``, where
    ``state_path`` defaults to the directory above the ``nova`` package: a
    source tree's top. Installed, that is site-packages, and the wheel puts
    ``etc/nova`` under the environment's prefix instead: link it there."""
    found = subprocess.run(
        [interpreter, '-c', 'import sysconfig; '
         'print(sysconfig.get_path("purelib"))'],
        capture_output=True, text=True, check=True)
    site_packages = found.stdout.strip()
    os.symlink(os.path.relpath(os.path.join(VENV, 'etc'), site_packages),
               os.path.join(site_packages, 'etc'))


def run(interpreter, names, report_path, reference=False, exclude=(),
        timeout=3600):
    """Run nova's tests ``names`` (dotted names of modules, classes or
    tests, or modules' paths) in the environment, leaving out ``exclude``;
    returns the runner's report (see :mod:`tests.nova.runner`), which it
    leaves at ``report_path``. With ``reference`` they run against the
    reference, as nova ships them."""
    return _runner(interpreter, ['--reference'] if reference else [],
                   names, exclude, report_path, timeout)


def list_tests(interpreter, names, report_path, exclude=()):
    """The dotted names of the tests :func:`run` would run."""
    return _runner(interpreter, ['--list'], names, exclude, report_path,
                   timeout=600)['ids']


def _runner(interpreter, options, names, exclude, report_path, timeout):
    command = [interpreter, '-m', 'tests.nova.runner',
               '--report', report_path, *options]
    for name in exclude:
        command += ['--exclude', name]
    environment = dict(os.environ, **NOVA_TEST_ENVIRONMENT)
    environment.pop('PYTHONPATH', None)
    # The environment is installed without bytecode (compiling all of it
    # took longer than installing it): each module nova's tests import is
    # compiled by the first run that imports it, and only by that one.
    environment.pop('PYTHONDONTWRITEBYTECODE', None)
    if os.path.exists(report_path):
        os.remove(report_path)
    done = subprocess.run(command + list(names), cwd=REPO, env=environment,
                          capture_output=True, text=True, timeout=timeout)
    if not os.path.exists(report_path):
        raise RuntimeError('the nova runner wrote no report (exit status '
                           '%d):\n%s%s' % (done.returncode, done.stdout,
                                           done.stderr[-20000:]))
    with open(report_path) as handle:
        return json.load(handle)
