"""The two services under uwsgi, and an HTTP client for them.

placement_lite runs from this checkout with the project's interpreter; the
reference (openstack-placement 16.0.0 from PyPI) runs from its own virtual
environment, created once under ``.bench/`` and reused. Both get the same
uwsgi settings and a PostgreSQL database each on the harness's throwaway
server; both listen on 127.0.0.1 only.
"""

import fcntl
import glob
import http.client
import json
import math
import os
import signal
import subprocess
import sys
import time

from placement_lite.db import tables
from tests import harness
from tests.bench import builder

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BENCH_DIR = os.path.join(REPO, '.bench')
REFERENCE_PACKAGES = ('openstack-placement==16.0.0', 'psycopg2-binary',
                      'uwsgi')
#: Installed beside REFERENCE_PACKAGES: the reference on MariaDB
#: (``mysql+pymysql://`` URLs). Left out of the key of the benchmark's
#: cache of the reference's PostgreSQL databases, which it does not shape.
REFERENCE_DRIVERS = ('PyMySQL',)


def reference_venv(log=print):
    """The reference's virtual environment, created on first use (by one
    process at a time: test workers may all ask for it at once)."""
    os.makedirs(BENCH_DIR, exist_ok=True)
    with open(os.path.join(BENCH_DIR, 'reference-venv.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _reference_venv(log)


def _reference_venv(log):
    venv = os.path.join(BENCH_DIR, 'reference-venv')
    marker = os.path.join(venv, 'bench-packages.txt')
    packages = REFERENCE_PACKAGES + REFERENCE_DRIVERS
    wanted = '\n'.join(packages) + '\n'
    if os.path.exists(marker) and open(marker).read() == wanted:
        return venv
    log('creating %s with %s' % (venv, ' '.join(packages)))
    subprocess.run([sys.executable, '-m', 'venv', '--clear', venv],
                   check=True)
    installed = subprocess.run(
        [os.path.join(venv, 'bin', 'pip'), 'install', '-q', *packages],
        capture_output=True, text=True)
    if installed.returncode:
        raise RuntimeError('pip install failed:\n' + installed.stdout
                           + installed.stderr)
    with open(marker, 'w') as out:
        out.write(wanted)
    return venv


def commit():
    """The short id of the commit checked out, or 'unknown'."""
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'],
                              cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'


def percentile(samples, fraction):
    """Nearest-rank percentile; None of no samples."""
    if not samples:
        return None
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


class HttpClient:
    """JSON client for one service: one connection per request.

    uwsgi binds a worker to a keep-alive connection until the client closes
    it, so clients keeping connections open would starve each other once
    there are more of them than workers; closing each one avoids that.
    """

    def __init__(self, port, timeout=300.0):
        self.port = port
        self.timeout = timeout

    def fetch(self, method, path, body=None, version='1.39', timeout=None):
        """One request; returns ``(status, raw body, seconds)``.

        Raises ``TimeoutError`` when the service takes longer than
        ``timeout`` (default: the client's).
        """
        status, _headers, raw, seconds = self.exchange(
            method, path, body, version, timeout)
        return status, raw, seconds

    def exchange(self, method, path, body=None, version='1.39',
                 timeout=None):
        """fetch(), the answer's headers too: ``(status, {lowercase name:
        value}, raw body, seconds)``."""
        headers = {'x-auth-token': 'admin', 'accept': 'application/json',
                   'openstack-api-version': 'placement %s' % version,
                   'connection': 'close'}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers['content-type'] = 'application/json'
        connection = http.client.HTTPConnection(
            '127.0.0.1', self.port, timeout=timeout or self.timeout)
        try:
            started = time.perf_counter()
            connection.request(method, path, data, headers)
            response = connection.getresponse()
            raw = response.read()
            return (response.status,
                    {name.lower(): value
                     for name, value in response.getheaders()},
                    raw, time.perf_counter() - started)
        finally:
            connection.close()

    def request(self, method, path, body=None, version='1.39'):
        """Same signature as ``tests.harness.Environment.request``."""
        status, headers, raw, _seconds = self.exchange(method, path, body,
                                                       version)
        return status, headers, json.loads(raw) if raw else None


class UwsgiService:
    """One placement service under uwsgi on 127.0.0.1:``port``."""

    def __init__(self, name, port, home, uwsgi, module, config, workdir,
                 processes=2, threads=1, pythonpath=None, lazy=True,
                 request_log=False):
        """``lazy``: each worker builds the application (``--lazy-apps``);
        otherwise the master builds it and forks the workers.
        ``request_log``: uwsgi logs each request (the worker's pid, the
        method and URI) in :attr:`log_path`."""
        self.name = name
        self.port = port
        self.workdir = workdir
        os.makedirs(workdir, exist_ok=True)
        with open(os.path.join(workdir, 'placement.conf'), 'w') as out:
            out.write(config)
        self.log_path = os.path.join(workdir, 'uwsgi.log')
        self.command = [
            uwsgi, '--http11-socket', '127.0.0.1:%d' % port,
            '--module', module, '--home', home,
            '--processes', str(processes), '--threads', str(threads),
            '--master', '--need-app', '--die-on-term',
            # As etc/uwsgi.ini: a query string of a hundred aggregate uuids
            # does not fit uwsgi's default 4 KB.
            '--buffer-size', '65535']
        if lazy:
            self.command.append('--lazy-apps')
        if not request_log:
            self.command.append('--disable-logging')
        self.lazy = lazy
        self.processes = processes
        self.env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=workdir)
        if pythonpath:
            self.env['PYTHONPATH'] = pythonpath
        self.process = None

    def start(self, timeout=90.0):
        """Start uwsgi; return once the application is loaded (by each
        worker with lazy-apps, else by the master), every worker is
        spawned and one answers."""
        with open(self.log_path, 'ab') as log:
            logged = log.tell()
            self.process = subprocess.Popen(
                self.command, env=self.env, cwd=self.workdir, stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        client = HttpClient(self.port, timeout=5.0)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if (self._ready_workers(logged) == (
                        self.processes if self.lazy else 1)
                        and len(self.worker_pids()) == self.processes
                        and client.fetch('GET', '/')[0] == 200):
                    return
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError('%s did not start on port %d; see %s'
                           % (self.name, self.port, self.log_path))

    def _ready_workers(self, offset):
        """How many applications uwsgi has logged ready since ``offset``
        (one per worker with lazy-apps, else the master's)."""
        with open(self.log_path, 'rb') as log:
            log.seek(offset)
            return log.read().count(b') ready in ')

    def stop(self):
        """Stop uwsgi and its workers, even one stuck in a long request.

        uwsgi runs in its own process group, so the group's id (the master's
        pid) reaches exactly the processes this service started.
        """
        if self.process is None:
            return
        group = self.process.pid
        if self.process.poll() is None:
            os.killpg(group, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        self.process = None
        _wait_until_gone(group)

    def restart(self):
        self.stop()
        self.start()

    def worker_pids(self):
        """The workers' pids: the master's children."""
        if self.process is None:
            return []
        return sorted(children(self.process.pid))

    def worker_memory(self):
        """Resident memory (kB) of each worker."""
        sizes = []
        for pid in self.worker_pids():
            try:
                with open('/proc/%d/status' % pid) as handle:
                    status = handle.read()
            except OSError:
                continue
            sizes.append(int(status.split('VmRSS:')[1].split()[0]))
        return sizes


def _wait_until_gone(group, timeout=10.0):
    """Wait until no process of ``group`` is left: a worker still dying
    holds the listening socket, and the next start could not bind it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def placement_lite(port, database_url, workdir, extra_config='',
                   checkout=REPO, **settings):
    """placement_lite from this checkout (or another, ``checkout``: its
    code run with this one's packages), on its migrated database;
    ``extra_config`` is appended to its placement.conf."""
    config = ('[api]\nauth_strategy = noauth2\n'
              '[placement_database]\nconnection = %s\n%s' % (database_url,
                                                              extra_config))
    return UwsgiService(
        'placement_lite', port, sys.prefix,
        os.path.join(os.path.dirname(sys.executable), 'uwsgi'),
        'placement_lite.wsgi:application', config, workdir,
        pythonpath=checkout, **settings)


def reference(port, database_url, workdir, venv, extra_config='',
              **settings):
    """The reference on an empty database, whose schema it creates first.

    The schema is synced once before uwsgi starts, so that its workers
    (each running ``sync_on_startup``) find nothing left to do rather than
    racing each other to create tables. ``extra_config`` is appended to
    its placement.conf.
    """
    config = ('[api]\nauth_strategy = noauth2\n'
              '[placement_database]\nconnection = %s\n'
              'sync_on_startup = True\n%s' % (database_url, extra_config))
    service = UwsgiService(
        'reference', port, venv, os.path.join(venv, 'bin', 'uwsgi'),
        'placement.wsgi.api:application', config, workdir, **settings)
    subprocess.run([os.path.join(venv, 'bin', 'placement-manage'),
                    '--config-dir', workdir, 'db', 'sync'],
                   check=True, env=service.env, cwd=workdir,
                   stdout=subprocess.DEVNULL)
    return service


#: The reference's own revision table, and placement_lite's tables: what a
#: copy of placement_lite's rows into the reference's database leaves out.
NOT_COPIED = ('alembic_version', tables.VERSION_TABLE, 'device_profiles',
              'device_profiles_id_seq', tables.PROVIDER_WRITES,
              tables.STRUCTURE_WRITES)


def copy_to_reference(lite_database, reference_database):
    """Make the reference's database (its schema synced) hold the rows of
    placement_lite's: the schemas are the same."""
    harness.postgres_server().copy_rows(lite_database, reference_database,
                                        keep=NOT_COPIED)


def cloud_templates(cloud, names, venv, prefix, log=print):
    """{service: a database holding ``cloud``}, for each of ``names``:
    placement_lite's written in bulk (tests/bench/builder.py), the
    reference's a copy of its rows on the reference's own schema. Runs
    that change the cloud start on copies of these (:func:`start_on_copy`).
    Returns (databases, seconds the bulk write took)."""
    lite = '%s_lite_tpl_%d_%d' % (prefix, cloud.hosts, os.getpid())
    log('writing %d hosts (%d providers, %d consumers) in bulk'
        % (cloud.hosts, len(cloud.providers), len(cloud.consumers)))
    _url, seconds = builder.new_database(lite, cloud)
    log('written in %.0f s' % seconds)
    databases = {'placement_lite': lite}
    if 'reference' in names:
        ref = '%s_reference_tpl_%d_%d' % (prefix, cloud.hosts, os.getpid())
        url = harness.create_postgres_database(ref)
        reference(0, url, os.path.join(BENCH_DIR, ref), venv)  # its schema
        copy_to_reference(lite, ref)
        harness.postgres_server().vacuum(ref)
        databases['reference'] = ref
    return {name: databases[name] for name in names}, seconds


def start_on_copy(name, template, run, venv, processes=4, extra_config='',
                  checkout=REPO):
    """Service ``name`` started on a new database ``run``, a copy of
    ``template`` (``service.database``: its name); ``extra_config`` is
    appended to its placement.conf; placement_lite from ``checkout``."""
    url = harness.postgres_server().create_database(run, template=template)
    workdir = os.path.join(BENCH_DIR, run)
    port = harness._free_port()
    if name == 'placement_lite':
        service = placement_lite(port, url, workdir, extra_config,
                                 checkout, processes=processes)
    else:
        service = reference(port, url, workdir, venv, extra_config,
                            processes=processes)
    service.database = run
    service.start()
    return service


def children(pid):
    """The pids whose parent is ``pid``."""
    found = set()
    for stat in glob.glob('/proc/[0-9]*/stat'):
        try:
            with open(stat) as handle:
                fields = handle.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.split('/')[2]))
    return found
