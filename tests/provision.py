"""The servers the tests start, found on this machine or installed.

The tests start throwaway servers of their own (tests/harness.py,
tests/servers.py) from the binaries of Debian's packages, and run
Prometheus' ``promtool`` (tests/promlint.py), installed the same way. Before any test
runs, :func:`provision` looks for each server of :data:`SERVERS` and, when
some are missing, installs their packages with ``apt-get`` if it may (as
root, or through passwordless ``sudo -n``; not with
``PLACEMENT_LITE_TEST_INSTALL=0``), then stops the services the packages
started. A server still missing is reported in one line, and the tests
that need it are skipped (tests/conftest.py): a test needs a server when
it is marked ``needs(name)`` or runs on the backend it serves.

``PLACEMENT_LITE_TEST_SERVER_PATH`` (directories, ``:``-separated), when
set, is the only place searched: pointing it elsewhere hides servers.
"""

import dataclasses
import glob
import os
import shutil
import subprocess

OPT_OUT = 'PLACEMENT_LITE_TEST_INSTALL'
SEARCH_PATH = 'PLACEMENT_LITE_TEST_SERVER_PATH'
#: Searched after PATH: where Debian puts daemons, often not on a user's PATH.
SBIN = ('/usr/local/sbin', '/usr/sbin', '/sbin')


@dataclasses.dataclass(frozen=True)
class Server:
    name: str  # as in ``@pytest.mark.needs(name)``
    package: str  # the Debian package providing it
    files: tuple  # what the tests run, all of which must be found
    dirs: tuple = ()  # globs of directories searched before PATH
    services: tuple = ()  # started by the package; stopped once installed


SERVERS = (
    Server('postgresql', 'postgresql', ('initdb', 'pg_ctl'),
           dirs=('/usr/lib/postgresql/*/bin',), services=('postgresql',)),
    Server('mariadb', 'mariadb-server', ('mariadbd', 'mariadb-install-db'),
           services=('mariadb',)),
    Server('nginx', 'nginx-light', ('nginx',), services=('nginx',)),
    # The Galera library MariaDB loads (wsrep_provider) for a cluster.
    Server('galera', 'galera-4', ('libgalera_smm.so',),
           dirs=('/usr/lib/galera',)),
    Server('haproxy', 'haproxy', ('haproxy',), services=('haproxy',)),
    # The container image's tests (tests/containers.py): podman, the
    # runtime it is run with, the pause process of the pods `podman kube
    # play` makes, and what makes the Debian base image.
    Server('podman', 'podman', ('podman',)),
    Server('runc', 'runc', ('runc',)),
    Server('catatonit', 'catatonit', ('catatonit',),
           dirs=('/usr/libexec/podman',)),
    Server('debootstrap', 'debootstrap', ('debootstrap',)),
    # Not a server: Prometheus' linter of exposed metric names, which
    # tests/promlint.py runs; the package also starts a Prometheus server.
    Server('promtool', 'prometheus', ('promtool',),
           services=('prometheus',)),
)
BY_NAME = {server.name: server for server in SERVERS}


def search_path(server, environ=os.environ):
    """The directories searched for ``server``'s files, in order."""
    if SEARCH_PATH in environ:
        return environ[SEARCH_PATH].split(os.pathsep)
    # Newest version first: /usr/lib/postgresql/16/bin before 15.
    versioned = [directory for pattern in server.dirs for directory in
                 sorted(glob.glob(pattern), reverse=True)]
    return versioned + environ.get('PATH', os.defpath).split(
        os.pathsep) + list(SBIN)


def find(name, environ=os.environ):
    """{file: path} of every file of the server called ``name``, or None
    when one of them is missing."""
    server = BY_NAME[name]
    path = os.pathsep.join(search_path(server, environ))
    found = {file: shutil.which(file, mode=os.F_OK, path=path)
             for file in server.files}
    return None if None in found.values() else found


def require(name):
    """find(name), or a RuntimeError saying what is missing."""
    found = find(name)
    if found is None:
        raise RuntimeError(missing_line(BY_NAME[name]))
    return found


def missing_line(server):
    """What the tests say of a server they cannot find."""
    return '%s not found (%s; Debian package %s)' % (
        server.name, ', '.join(server.files), server.package)


def installer(environ=os.environ, euid=None, run=subprocess.run):
    """(command prefix, None) when packages may be installed: [] as root,
    ['sudo', '-n'] with passwordless sudo; (None, why not) otherwise."""
    if environ.get(OPT_OUT) == '0':
        return None, '%s=0' % OPT_OUT
    if shutil.which('apt-get', path=environ.get('PATH')) is None:
        return None, 'no apt-get on this machine'
    if (os.geteuid() if euid is None else euid) == 0:
        return [], None
    if shutil.which('sudo', path=environ.get('PATH')) and run(
            ['sudo', '-n', 'true'], capture_output=True).returncode == 0:
        return ['sudo', '-n'], None
    return None, 'not root, and sudo -n is refused'


def install_commands(prefix, servers):
    """The commands installing the packages of ``servers``, and those
    stopping the services these start (which may fail)."""
    apt = [*prefix, 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get',
           '-q', '-y', '-o', 'DPkg::Lock::Timeout=600']
    install = [apt + ['update'],
               apt + ['install', '--no-install-recommends',
                      *(server.package for server in servers)]]
    stop = [[*prefix, 'service', service, 'stop']
            for server in servers for service in server.services]
    return install, stop


def provision(environ=os.environ, euid=None, run=subprocess.run, say=print):
    """Install the missing servers when allowed; say one line for each
    server still missing. Returns the names of those."""
    missing = [server for server in SERVERS
               if find(server.name, environ) is None]
    if not missing:
        return []
    prefix, refusal = installer(environ, euid, run)
    if prefix is not None:
        refusal = _install(prefix, missing, run, say)
    missing = [server for server in missing
               if find(server.name, environ) is None]
    for server in missing:
        say('placement_lite tests: %s, not installed (%s): the tests '
            'needing it are skipped' % (missing_line(server), refusal or
                                        'installed, yet not found'))
    return [server.name for server in missing]


def _install(prefix, servers, run, say):
    """Install the packages of ``servers``; None, or why it failed."""
    install, stop = install_commands(prefix, servers)
    say('placement_lite tests: installing %s (apt-get) for the servers the '
        'tests start; %s=0 not to'
        % (' '.join(server.package for server in servers), OPT_OUT))
    for command in install:
        done = run(command, capture_output=True, text=True)
        if done.returncode:
            say((done.stdout + done.stderr)[-2000:])
            return '%s failed' % ' '.join(command)
    for command in stop:
        try:
            run(command, capture_output=True)
        except OSError:  # no service command: nothing was started
            pass
    return None
