"""Serve placement_lite under uwsgi, as operators do, and drive it with the
real ``openstack`` command (python-openstackclient + osc-placement, and
placement_lite's own plugin).

The server runs from ``etc/uwsgi.ini`` (the file the README gives
operators, see tests/servers.py) on a fresh SQLite or PostgreSQL database.
One server per backend serves the whole session, so tests use names of
their own and do not expect an empty service.

Each command runs in a process of its own, as ``openstack`` would, but
forked from a long-lived one per server that has made the imports
(tests/cli/shell.py): starting ``openstack`` took 1-2 s per command,
nearly all of it imports; a fork, tens of milliseconds.
test_openstack_command.py runs the installed command itself.
"""

import json
import select
import subprocess
import sys

import pytest

from tests import harness
from tests import servers


@pytest.fixture(scope='session', params=[
    pytest.param(name, marks=[pytest.mark.slow,
                              pytest.mark.needs(*harness.SERVERS_OF[name])])
    for name in harness.BACKENDS if name != 'mysql'])  # see ../conftest.py
def server(request):
    db = harness.fresh_database(request.param)
    db.dispose()
    running = servers.Uwsgi(db.url, processes=2)
    yield running
    running.cleanup()


class OpenStack:
    """Runs ``openstack`` against one server with admin-token auth."""

    def __init__(self, url):
        self.url = url
        self.shell = subprocess.Popen(
            [sys.executable, '-m', 'tests.cli.shell'], cwd=servers.REPO,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def __call__(self, *args, version='1.39', parse=True, check=True):
        command = ['--os-auth-type', 'admin_token', '--os-token', 'admin',
                   '--os-endpoint', self.url,
                   '--os-placement-api-version', version, *args]
        if parse:
            command += ['-f', 'json']
        self.shell.stdin.write(json.dumps(command) + '\n')
        self.shell.stdin.flush()
        if not select.select([self.shell.stdout], [], [], 120)[0]:
            raise AssertionError('%s: no answer in 120 s' % ' '.join(args))
        answer = self.shell.stdout.readline()
        if not answer:
            raise AssertionError('%s: the shell exited' % ' '.join(args))
        result = subprocess.CompletedProcess(command, *json.loads(answer))
        if check and result.returncode != 0:
            raise AssertionError('%s failed (%d):\n%s' % (
                ' '.join(args), result.returncode, result.stderr))
        if parse and result.returncode == 0:
            return json.loads(result.stdout) if result.stdout.strip() else None
        return result

    def close(self):
        self.shell.stdin.close()
        self.shell.wait(timeout=30)


@pytest.fixture(scope='session')
def openstack(server):
    shell = OpenStack(server.url)
    yield shell
    shell.close()
