"""Serve placement_lite under uwsgi, as operators do, and drive it with the
real ``openstack`` command (python-openstackclient + osc-placement, and
placement_lite's own plugin).

The server runs from ``etc/uwsgi.ini`` (the file the README gives
operators, see tests/servers.py) on a fresh SQLite or PostgreSQL database.
One server per backend serves the whole session, so tests use names of
their own and do not expect an empty service.
"""

import json
import os
import subprocess

import pytest

from tests import harness
from tests import servers


@pytest.fixture(scope='session', params=[
    pytest.param(name, marks=pytest.mark.needs(*harness.SERVERS_OF[name]))
    for name in harness.BACKENDS if name != 'mysql'])  # see ../conftest.py
def server(request):
    backends = request.config.getoption('backend') or harness.BACKENDS
    if request.param not in backends:
        pytest.skip('backend %s not selected' % request.param)
    db = harness.fresh_database(request.param)
    db.dispose()
    running = servers.Uwsgi(db.url, processes=2)
    yield running
    running.cleanup()


class OpenStack:
    """Runs ``openstack`` against one server with admin-token auth."""

    def __init__(self, url):
        self.url = url

    def __call__(self, *args, version='1.39', parse=True, check=True):
        command = [os.path.join(servers.BIN, 'openstack'),
                   '--os-auth-type', 'admin_token', '--os-token', 'admin',
                   '--os-endpoint', self.url,
                   '--os-placement-api-version', version, *args]
        if parse:
            command += ['-f', 'json']
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=120)
        if check and result.returncode != 0:
            raise AssertionError('%s failed (%d):\n%s' % (
                ' '.join(args), result.returncode, result.stderr))
        if parse and result.returncode == 0:
            return json.loads(result.stdout) if result.stdout.strip() else None
        return result


@pytest.fixture(scope='session')
def openstack(server):
    return OpenStack(server.url)
