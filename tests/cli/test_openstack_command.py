"""The ``openstack`` command itself, as installed: it finds osc-placement's
commands and placement_lite's plugin (the other tests run its shell in a
process of their own, tests/cli/shell.py)."""

import json
import os
import subprocess

from tests import servers


def test_the_command_runs_both_plugins(server, openstack):
    provider = openstack('resource', 'provider', 'create', 'cli-command')
    profile = openstack('device', 'profile', 'create', 'cli-command',
                        '--group', 'resources:VGPU=1', version='1')
    answers = []
    for version, args in (
            ('1.39', ['resource', 'provider', 'list', '--name', 'cli-command']),
            ('1', ['device', 'profile', 'list', '--name', 'cli-command'])):
        done = subprocess.run(
            [os.path.join(servers.BIN, 'openstack'), '--os-auth-type',
             'admin_token', '--os-token', 'admin', '--os-endpoint',
             server.url, '--os-placement-api-version', version, *args,
             '-f', 'json', '-c', 'uuid'],
            capture_output=True, text=True, timeout=120)
        answers.append((done.returncode, json.loads(done.stdout or 'null'),
                        done.stderr))
    openstack('device', 'profile', 'delete', 'cli-command', version='1',
              parse=False)
    openstack('resource', 'provider', 'delete', provider['uuid'], parse=False)
    assert answers == [(0, [{'uuid': provider['uuid']}], ''),
                       (0, [{'uuid': profile['uuid']}], '')]
