"""With its servers' binaries out of sight, the suite says so once per
server and skips the tests needing each, naming it: a run of pytest on a
few tests, with PLACEMENT_LITE_TEST_SERVER_PATH pointing at an empty
directory and PLACEMENT_LITE_TEST_INSTALL=0 (tests/provision.py)."""

import os
import re
import subprocess
import sys

import pytest

from tests import servers

pytestmark = pytest.mark.slow


def test_tests_needing_a_missing_server_are_skipped_by_name(tmp_path):
    done = subprocess.run(
        [sys.executable, '-m', 'pytest', '-p', 'no:xdist', '-rs',
         'tests/test_gabbits.py::test_gabbi_file[sqlite-traits.yaml]',
         'tests/test_gabbits.py::test_gabbi_file[postgresql-traits.yaml]',
         'tests/test_gabbits.py::test_gabbi_file[mysql-traits.yaml]',
         'tests/test_serving_slow_clients.py'],
        cwd=servers.REPO, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PLACEMENT_LITE_TEST_SERVER_PATH=str(tmp_path),
                 PLACEMENT_LITE_TEST_INSTALL='0'))
    lines = done.stdout.splitlines()
    said = [line for line in lines if line.startswith('placement_lite')]
    # The reasons of the skips, without where the test is defined.
    skipped = sorted(re.sub(r'(:\d+)?: ', ' ', line, count=1)
                     for line in lines if line.startswith('SKIPPED'))
    assert done.returncode == 0, done.stdout + done.stderr
    assert said == [
        'placement_lite tests: %s not found (%s; Debian package %s), not '
        'installed (PLACEMENT_LITE_TEST_INSTALL=0): the tests needing it '
        'are skipped' % server for server in (
            ('postgresql', 'initdb, pg_ctl', 'postgresql'),
            ('mariadb', 'mariadbd, mariadb-install-db', 'mariadb-server'),
            ('nginx', 'nginx', 'nginx-light'),
            ('galera', 'libgalera_smm.so', 'galera-4'),
            ('haproxy', 'haproxy', 'haproxy'),
            ('podman', 'podman', 'podman'),
            ('runc', 'runc', 'runc'),
            ('catatonit', 'catatonit', 'catatonit'),
            ('debootstrap', 'debootstrap', 'debootstrap'),
            ('promtool', 'promtool', 'prometheus'))]
    assert skipped == [
        'SKIPPED [1] tests/test_gabbits.py needs mariadb not found '
        '(mariadbd, mariadb-install-db; Debian package mariadb-server)',
        'SKIPPED [1] tests/test_gabbits.py needs postgresql not found '
        '(initdb, pg_ctl; Debian package postgresql)',
        'SKIPPED [1] tests/test_serving_slow_clients.py needs nginx not '
        'found (nginx; Debian package nginx-light)']
    assert re.search(r' 1 passed, 3 skipped[ ,]', lines[-1])
