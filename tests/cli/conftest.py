"""Serve placement_lite under uwsgi, as operators do, and drive it with the
real ``openstack`` command (python-openstackclient + osc-placement, and
placement_lite's own plugin).

The server runs from ``etc/uwsgi.ini`` (the file the README gives operators)
with only the listening port and the configuration directory changed, on a
fresh SQLite or PostgreSQL database. One server per backend serves the whole
session, so tests use names of their own and do not expect an empty service.
"""

import configparser
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

import pytest

from tests import harness

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir,
                                    os.pardir))
BIN = os.path.dirname(sys.executable)


class Server:
    def __init__(self, backend):
        self.workdir = tempfile.mkdtemp(prefix='placement-lite-cli-')
        self.db = harness.fresh_database(backend)
        self.db.dispose()
        self.port = harness._free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        with open(os.path.join(self.workdir, 'placement.conf'), 'w') as conf:
            conf.write('[api]\nauth_strategy = noauth2\n'
                       '[placement_database]\nconnection = %s\n'
                       % self.db.url)
        ini = configparser.ConfigParser(strict=False)
        ini.read(os.path.join(REPO, 'etc', 'uwsgi.ini'))
        ini['uwsgi']['http11-socket'] = '127.0.0.1:%d' % self.port
        ini['uwsgi']['env'] = 'OS_PLACEMENT_CONFIG_DIR=%s' % self.workdir
        ini['uwsgi']['processes'] = '2'
        ini_path = os.path.join(self.workdir, 'uwsgi.ini')
        with open(ini_path, 'w') as handle:
            ini.write(handle)
        self.log = open(os.path.join(self.workdir, 'uwsgi.log'), 'w')
        self.process = subprocess.Popen(
            [os.path.join(BIN, 'uwsgi'), '--ini', ini_path],
            cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONPATH=REPO))
        if not harness.wait_for(self._answers, timeout=60):
            self.stop()
            raise RuntimeError('uwsgi did not start; see %s' % self.log.name)

    def _answers(self):
        try:
            with urllib.request.urlopen(self.url + '/', timeout=2):
                return True
        except OSError:
            return False

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


@pytest.fixture(scope='session', params=harness.BACKENDS)
def server(request):
    backends = request.config.getoption('backend') or harness.BACKENDS
    if request.param not in backends:
        pytest.skip('backend %s not selected' % request.param)
    running = Server(request.param)
    yield running
    running.stop()


class OpenStack:
    """Runs ``openstack`` against one server with admin-token auth."""

    def __init__(self, url):
        self.url = url

    def __call__(self, *args, version='1.39', parse=True, check=True):
        command = [os.path.join(BIN, 'openstack'),
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
