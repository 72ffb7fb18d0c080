"""tests/provision.py decides, for the servers the tests start, between
found, installed (the commands it runs, here recorded and not run) and
missing (one line each, saying why)."""

import os
import subprocess

import pytest

from tests import provision

ALL_FILES = [file for server in provision.SERVERS for file in server.files]
STOPS = [['service', 'postgresql', 'stop'], ['service', 'mariadb', 'stop'],
         ['service', 'nginx', 'stop'], ['service', 'haproxy', 'stop'],
         ['service', 'prometheus', 'stop']]
#: Every file but nginx's.
ALL_BUT_NGINX = [file for file in ALL_FILES if file != 'nginx']


class Machine:
    """A search directory for the servers' files, a PATH holding the
    programs given, and a ``run`` recording commands: an ``apt-get
    install`` puts the files of the packages named in the search
    directory unless ``installs`` is False."""

    def __init__(self, tmp_path, programs=('apt-get',), files=(),
                 installs=True, sudo_answers=0, apt_answers=0):
        self.found = tmp_path / 'found'
        self.bin = tmp_path / 'bin'
        self.found.mkdir()
        self.bin.mkdir()
        for name in files:
            (self.found / name).touch()
        for name in programs:
            (self.bin / name).touch(mode=0o755)
        self.environ = {'PATH': str(self.bin),
                        provision.SEARCH_PATH: str(self.found)}
        self.installs = installs
        self.sudo_answers = sudo_answers
        self.apt_answers = apt_answers
        self.commands = []
        self.said = []

    def run(self, command, **_kwargs):
        self.commands.append(command)
        if command == ['sudo', '-n', 'true']:
            return subprocess.CompletedProcess(command, self.sudo_answers)
        if 'install' in command and self.installs:
            for server in provision.SERVERS:
                if server.package in command:
                    for name in server.files:
                        (self.found / name).touch()
        status = self.apt_answers if 'apt-get' in command else 0
        return subprocess.CompletedProcess(command, status, 'apt says',
                                           ' and fails' if status else '')

    def provision(self, euid=0):
        return provision.provision(self.environ, euid, self.run,
                                   self.said.append)


def apt(*args, prefix=()):
    return [*prefix, 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get',
            '-q', '-y', '-o', 'DPkg::Lock::Timeout=600', *args]


def test_all_found_runs_nothing(tmp_path):
    machine = Machine(tmp_path, files=ALL_FILES)
    assert machine.provision() == []
    assert (machine.commands, machine.said) == ([], [])


def test_root_installs_only_the_missing_packages(tmp_path):
    machine = Machine(tmp_path, files=['nginx'])
    assert machine.provision() == []
    assert machine.commands == [
        apt('update'),
        apt('install', '--no-install-recommends', 'postgresql',
            'mariadb-server', 'galera-4', 'haproxy', 'podman', 'runc',
            'catatonit', 'debootstrap', 'prometheus'),
        ['service', 'postgresql', 'stop'], ['service', 'mariadb', 'stop'],
        ['service', 'haproxy', 'stop'], ['service', 'prometheus', 'stop']]
    assert machine.said == [
        'placement_lite tests: installing postgresql mariadb-server '
        'galera-4 haproxy podman runc catatonit debootstrap prometheus '
        '(apt-get) for the servers the tests start; '
        'PLACEMENT_LITE_TEST_INSTALL=0 not to']


def test_a_user_with_passwordless_sudo_installs_through_it(tmp_path):
    machine = Machine(tmp_path, programs=['apt-get', 'sudo'])
    assert machine.provision(euid=1000) == []
    sudo = ['sudo', '-n']
    assert machine.commands == [
        ['sudo', '-n', 'true'],
        apt('update', prefix=sudo),
        apt('install', '--no-install-recommends', 'postgresql',
            'mariadb-server', 'nginx-light', 'galera-4', 'haproxy',
            'podman', 'runc', 'catatonit', 'debootstrap', 'prometheus',
            prefix=sudo),
        *[sudo + stop for stop in STOPS]]


@pytest.mark.parametrize('programs,euid,environ,why,commands', [
    (['apt-get', 'sudo'], 1000, {}, 'not root, and sudo -n is refused',
     [['sudo', '-n', 'true']]),
    (['apt-get'], 1000, {}, 'not root, and sudo -n is refused', []),
    ([], 0, {}, 'no apt-get on this machine', []),
    (['apt-get'], 0, {'PLACEMENT_LITE_TEST_INSTALL': '0'},
     'PLACEMENT_LITE_TEST_INSTALL=0', []),
], ids=['sudo-refused', 'no-sudo', 'no-apt-get', 'opt-out'])
def test_a_server_that_may_not_be_installed_is_skipped(
        tmp_path, programs, euid, environ, why, commands):
    machine = Machine(tmp_path, programs=programs, sudo_answers=1,
                      files=['initdb', 'pg_ctl', 'mariadbd',
                             'libgalera_smm.so', 'haproxy', 'promtool',
                             'podman', 'runc', 'catatonit', 'debootstrap'])
    machine.environ.update(environ)
    assert machine.provision(euid) == ['mariadb', 'nginx']
    assert machine.commands == commands
    assert machine.said == [
        'placement_lite tests: mariadb not found (mariadbd, '
        'mariadb-install-db; Debian package mariadb-server), not installed '
        '(%s): the tests needing it are skipped' % why,
        'placement_lite tests: nginx not found (nginx; Debian package '
        'nginx-light), not installed (%s): the tests needing it are '
        'skipped' % why]


def test_a_failed_install_is_shown_and_stops_nothing(tmp_path):
    machine = Machine(tmp_path, files=ALL_BUT_NGINX, apt_answers=100)
    assert machine.provision() == ['nginx']
    assert machine.commands == [apt('update')]
    assert machine.said[1:] == [
        'apt says and fails',
        'placement_lite tests: nginx not found (nginx; Debian package '
        'nginx-light), not installed (%s failed): the tests needing it are '
        'skipped' % ' '.join(apt('update'))]


def test_a_package_installed_but_not_found_is_said(tmp_path):
    machine = Machine(tmp_path, files=ALL_BUT_NGINX, installs=False)
    assert machine.provision() == ['nginx']
    assert machine.said[-1] == (
        'placement_lite tests: nginx not found (nginx; Debian package '
        'nginx-light), not installed (installed, yet not found): the tests '
        'needing it are skipped')


def test_the_newest_postgresql_then_path_then_sbin(tmp_path, monkeypatch):
    for version in ('14', '15'):
        (tmp_path / version / 'bin').mkdir(parents=True)
    server = provision.Server('postgresql', 'postgresql', ('initdb',),
                              dirs=(str(tmp_path / '*' / 'bin'),))
    assert provision.search_path(server, {'PATH': '/a:/b'}) == [
        str(tmp_path / '15' / 'bin'), str(tmp_path / '14' / 'bin'), '/a',
        '/b', '/usr/local/sbin', '/usr/sbin', '/sbin']
    assert provision.search_path(server, {
        'PATH': '/a', provision.SEARCH_PATH: '/c:/d'}) == ['/c', '/d']


def test_every_file_of_a_server_is_found_or_none(tmp_path):
    for name in ('mariadbd', 'initdb', 'pg_ctl'):
        (tmp_path / name).touch()
    environ = {provision.SEARCH_PATH: str(tmp_path)}
    assert provision.find('postgresql', environ) == {
        'initdb': os.path.join(tmp_path, 'initdb'),
        'pg_ctl': os.path.join(tmp_path, 'pg_ctl')}
    assert provision.find('mariadb', environ) is None
