"""Test harness: fresh databases on SQLite, PostgreSQL and MariaDB, and apps
on them.

Each gabbi file (and each test that asks) gets an :class:`Environment`: a
new database, migrated and holding the standard names, and the whole WSGI
application on it. Databases are copied from a per-backend template made once
per process, so a fresh one costs a file copy (SQLite) or a
``CREATE DATABASE ... TEMPLATE`` (PostgreSQL) or the template's tables
recreated from their ``SHOW CREATE TABLE`` and their rows copied (MariaDB).

PostgreSQL comes from a throwaway server that this module starts on a free
port in a temporary directory (as the ``postgres`` user when running as
root, because PostgreSQL refuses to run as root). Tests on a backend whose
server binaries cannot be found are skipped (tests/provision.py); a server
that does not start raises. MariaDB likewise comes from a throwaway
server (:class:`MariaDBServer`, the Debian package's ``mariadbd``), run as
the ``mysql`` user when running as root.

Tests run on the backends of :data:`BACKENDS` except ``mysql``, which only
the tests marked ``mysql`` run on (see tests/conftest.py): the gabbi files,
the conformance ratchet, the concurrency tests and the migrations.
"""

import atexit
import io
import itertools
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time

from oslo_config import cfg
import pymysql
import sqlalchemy as sa

from placement_lite import app as placement_app
from placement_lite import conf as config
from placement_lite.db import api as db_api
from placement_lite.db import migrate
from placement_lite.domain import standard_names
from tests import provision

BACKENDS = ('sqlite', 'postgresql', 'mysql')
#: The servers (tests/provision.py) each backend needs.
SERVERS_OF = {'sqlite': (), 'postgresql': ('postgresql',),
              'mysql': ('mariadb',)}
_counter = itertools.count()
_templates = {}
#: SQLite test databases live in memory-backed /dev/shm when there is one:
#: every commit's fsync would otherwise cost tens of milliseconds.
def _fast_dir():
    return '/dev/shm' if os.access('/dev/shm', os.W_OK) else None


_workdir = tempfile.mkdtemp(prefix='placement-lite-tests-', dir=_fast_dir())
_workdir_owner = os.getpid()


def remove_workdir():
    """Remove the test databases' directory (memory, in /dev/shm), from
    the process that made it only: a child forked by a test leaves it.
    pytest calls it as it ends, since its xdist workers end without
    running ``atexit``."""
    if os.getpid() == _workdir_owner:
        shutil.rmtree(_workdir, True)


atexit.register(remove_workdir)


def make_conf(**overrides):
    """A ConfigOpts for tests: noauth2, extensions on, no config file.

    ``overrides`` maps ``group.option`` (or ``option`` for DEFAULT) to values.
    """
    conf = cfg.ConfigOpts()
    config.register_opts(conf)
    conf([], project='placement', default_config_files=[])
    conf.set_override('auth_strategy', 'noauth2', group='api')
    for key, value in overrides.items():
        group, _sep, name = key.rpartition('.')
        conf.set_override(name, value, group=group or None)
    return conf


class Environment:
    """A fresh database and the application serving it."""

    def __init__(self, backend, database_url=None, **conf_overrides):
        """A fresh database on ``backend``, or the database at
        ``database_url`` as it is."""
        self.backend = backend
        self.db = (db_api.Database(database_url) if database_url
                   else fresh_database(backend))
        self.conf = make_conf(**conf_overrides)
        self.app = placement_app.build_app(self.conf, db=self.db)

    def request(self, method, path, body=None, version='latest',
                token='admin', headers=None):
        """Call the app in-process; returns (status_code, headers, json_or_None).

        ``body`` is sent as JSON, or as it is when it is bytes."""
        status, response_headers, raw = self.respond(
            method, path, body, version, token, headers)
        return status, response_headers, json.loads(raw) if raw else None

    def respond(self, method, path, body=None, version='latest',
                token='admin', headers=None):
        """request(), the answer's body left as the bytes it is."""
        environ = {
            'REQUEST_METHOD': method, 'SCRIPT_NAME': '',
            'SERVER_NAME': 'localhost', 'SERVER_PORT': '80',
            'SERVER_PROTOCOL': 'HTTP/1.1', 'wsgi.url_scheme': 'http',
            'wsgi.input': None, 'wsgi.errors': None,
            'wsgi.multithread': False, 'wsgi.multiprocess': False,
            'wsgi.run_once': False,
            'HTTP_OPENSTACK_API_VERSION': 'placement %s' % version,
            'HTTP_ACCEPT': 'application/json',
        }
        if token is not None:
            environ['HTTP_X_AUTH_TOKEN'] = token
        path, _sep, query = path.partition('?')
        environ['PATH_INFO'] = path
        environ['QUERY_STRING'] = query

        if isinstance(body, bytes):
            data = body
        else:
            data = json.dumps(body).encode() if body is not None else b''
        environ['wsgi.input'] = io.BytesIO(data)
        environ['wsgi.errors'] = io.StringIO()
        environ['CONTENT_LENGTH'] = str(len(data))
        if body is not None:
            environ['CONTENT_TYPE'] = 'application/json'
        for name, value in (headers or {}).items():
            environ['HTTP_' + name.upper().replace('-', '_')] = value
        captured = {}

        def start_response(status, response_headers, exc_info=None):
            captured['status'] = int(status.split()[0])
            captured['headers'] = {k.lower(): v for k, v in response_headers}

        raw = b''.join(self.app(environ, start_response))
        return captured['status'], captured['headers'], raw

    def close(self):
        self.db.dispose()


class FileSession:
    """The environment one gabbi file runs in, created when first needed.

    Fixtures may add configuration overrides before anything asks for the
    environment; the first fixture (or the gabbi intercept) that needs the
    application creates it.
    """

    def __init__(self, backend):
        self.backend = backend
        self.conf_overrides = {}
        self._environment = None

    def environment(self):
        if self._environment is None:
            self._environment = Environment(self.backend,
                                            **self.conf_overrides)
        return self._environment

    def close(self):
        if self._environment is not None:
            self._environment.close()


_session = None


def begin_file(backend):
    global _session
    _session = FileSession(backend)
    return _session


def session():
    return _session


def end_file():
    global _session
    if _session is not None:
        _session.close()
    _session = None


def fresh_database(backend):
    if backend not in _templates:
        _templates[backend] = _make_template(backend)
    name = 'test_%d_%d' % (os.getpid(), next(_counter))
    if backend == 'sqlite':
        path = os.path.join(_workdir, name + '.sqlite')
        shutil.copyfile(_templates['sqlite'], path)
        return db_api.Database('sqlite:///' + path)
    if backend == 'mysql':
        return db_api.Database(mariadb_server().create_database(
            name, template=_templates['mysql']))
    return db_api.Database(create_postgres_database(name, migrated=True))


def create_postgres_database(name, migrated=False):
    """Create database ``name`` on the throwaway server; return its URL.

    With ``migrated`` it is a copy of placement_lite's template (schema and
    standard names); otherwise it is empty, e.g. for another service to
    create its own schema in.
    """
    if migrated and 'postgresql' not in _templates:
        _templates['postgresql'] = _make_template('postgresql')
    return postgres_server().create_database(
        name, template=_templates['postgresql'] if migrated else None)


def empty_database_url(backend):
    """The URL of a new database without any schema, on ``backend``."""
    name = 'empty_%d_%d' % (os.getpid(), next(_counter))
    if backend == 'sqlite':
        return 'sqlite:///' + os.path.join(_workdir, name + '.sqlite')
    if backend == 'mysql':
        return mariadb_server().create_database(name)
    return create_postgres_database(name)


def _make_template(backend):
    if backend == 'sqlite':
        path = os.path.join(_workdir, 'template.sqlite')
        db = db_api.Database('sqlite:///' + path)
        template = path
    elif backend == 'mysql':
        template = 'template_%d' % os.getpid()
        db = db_api.Database(mariadb_server().create_database(template))
    else:
        server = postgres_server()
        template = 'template_%d' % os.getpid()
        with server.admin_engine().connect() as conn:
            conn.exec_driver_sql('CREATE DATABASE %s' % template)
        db = db_api.Database(server.url(template))
    migrate.upgrade(db)
    standard_names.ensure_synced(db)
    db.dispose()
    if backend == 'mysql':
        return mariadb_server().template(template)
    return template


class PostgresServer:
    """A throwaway PostgreSQL cluster in a temporary directory.

    With ``primary`` (another PostgresServer), a streaming replica of it,
    made by ``pg_basebackup -R``: read-only, replaying what the primary
    writes. Durability is traded for speed: no fsync and, unless
    ``synchronous_commit``, commits that do not wait for their WAL to be
    written (a replica only receives written WAL, so such a primary feeds
    it about every 200 ms, its ``wal_writer_delay``).
    """

    def __init__(self, primary=None, synchronous_commit=False):
        self.synchronous_commit = synchronous_commit
        self.bindir = _find_postgres_bindir()
        self.datadir = tempfile.mkdtemp(prefix='placement-lite-pg-')
        self.port = _free_port()
        self.run_as = 'postgres' if os.geteuid() == 0 else None
        if self.run_as:
            entry = pwd.getpwnam(self.run_as)
            os.chown(self.datadir, entry.pw_uid, entry.pw_gid)
        if primary is None:
            self._run('initdb', '-D', self.datadir, '-U', 'postgres',
                      '--auth=trust', '-E', 'UTF8', '--no-sync')
        else:
            self._run('pg_basebackup', '-h', '127.0.0.1', '-p',
                      str(primary.port), '-U', 'postgres', '-D',
                      self.datadir, '-R', '-X', 'stream', '--no-sync',
                      '--checkpoint=fast')
        self.start()
        atexit.register(self.destroy)
        self._admin = None

    def start(self):
        options = ('-p %d -k %s -c listen_addresses=127.0.0.1 '
                   '-c max_connections=300 -c fsync=off '
                   '-c full_page_writes=off -c synchronous_commit=%s'
                   % (self.port, self.datadir,
                      'on' if self.synchronous_commit else 'off'))
        self._run('pg_ctl', '-D', self.datadir, '-l',
                  os.path.join(self.datadir, 'server.log'), '-w', '-o',
                  options, 'start')

    def stop(self, mode='immediate'):
        """Stop the server (``fast`` ends sessions cleanly, as a restart by
        an operator does; ``immediate`` as a crash)."""
        self._run('pg_ctl', '-D', self.datadir, '-m', mode, '-w', 'stop')

    def promote(self):
        """Make this replica a primary (``pg_ctl promote``), as a failover
        tool does once the primary is gone."""
        self._run('pg_ctl', '-D', self.datadir, '-w', 'promote')

    def wait_for_synchronous_standby(self):
        """From now on, a commit is acknowledged only once a replica has
        its WAL (``synchronous_standby_names = '*'``): a failover to the
        replica then loses no acknowledged write."""
        with self.admin_engine().connect() as conn:
            conn.exec_driver_sql(
                "ALTER SYSTEM SET synchronous_standby_names = '*'")
            conn.exec_driver_sql('SELECT pg_reload_conf()')

    def _run(self, program, *args):
        command = [os.path.join(self.bindir, program), *args]
        if self.run_as:
            command = ['runuser', '-u', self.run_as, '--'] + command
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, cwd='/')

    def create_database(self, name, template=None):
        """Create database ``name`` (a copy of ``template`` if given);
        return its URL."""
        statement = 'CREATE DATABASE %s' % name
        if template:
            statement += ' TEMPLATE %s' % template
        with self.admin_engine().connect() as conn:
            conn.exec_driver_sql(statement)
        return self.url(name)

    def url(self, database):
        return 'postgresql+psycopg2://postgres@127.0.0.1:%d/%s' % (
            self.port, database)

    def dump(self, database, path):
        """Save ``database`` to ``path`` (pg_dump's custom format)."""
        self._client('pg_dump', '-Fc', '-f', path, database)

    def restore(self, database, path):
        """Load a :meth:`dump` into the existing, empty ``database``."""
        self._client('pg_restore', '--no-owner', '-d', database, path)

    def vacuum(self, database):
        """VACUUM ANALYZE ``database``: a freshly loaded database lacks the
        planner's statistics and the visibility map of one in service, and
        autovacuum would otherwise catch up in the middle of a measurement."""
        self._client('vacuumdb', '--analyze', '--quiet', database)

    def copy_rows(self, source, target, keep=()):
        """Make the rows of database ``target`` those of ``source`` (same
        schema), except in the tables named in ``keep``."""
        with tempfile.NamedTemporaryFile(suffix='.dump') as dump:
            self._client('pg_dump', '--data-only', '-Fc', '-f', dump.name,
                         *('--exclude-table=%s' % name for name in keep),
                         source)
            engine = sa.create_engine(self.url(target),
                                      isolation_level='AUTOCOMMIT')
            try:
                with engine.connect() as conn:
                    tables = conn.exec_driver_sql(
                        "SELECT tablename FROM pg_tables "
                        "WHERE schemaname = 'public'").scalars().all()
                    emptied = sorted(set(tables) - set(keep))
                    conn.exec_driver_sql('TRUNCATE %s RESTART IDENTITY'
                                         % ', '.join(emptied))
            finally:
                engine.dispose()
            self._client('pg_restore', '--data-only', '--disable-triggers',
                         '-d', target, dump.name)

    def _client(self, program, *args):
        done = subprocess.run(
            [os.path.join(self.bindir, program), '-h', '127.0.0.1',
             '-p', str(self.port), '-U', 'postgres', *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode:
            raise RuntimeError('%s failed: %s' % (program, done.stderr))

    def admin_engine(self):
        if self._admin is None:
            self._admin = sa.create_engine(self.url('postgres'),
                                           isolation_level='AUTOCOMMIT')
        return self._admin

    def destroy(self):
        """Stop the server and remove its files."""
        if self._admin is not None:
            self._admin.dispose()
        try:
            self.stop()
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.datadir, ignore_errors=True)


_server = None


def postgres_server():
    global _server
    if _server is None:
        _server = PostgresServer()
    return _server


def _find_postgres_bindir():
    initdb = provision.require('postgresql')['initdb']
    return os.path.dirname(os.path.realpath(initdb))


class MariaDBServer:
    """A throwaway MariaDB server in a temporary directory, from the
    Debian package's binaries (``mariadb-install-db``, ``mariadbd``).

    Anyone connects as root without a password (``--skip-grant-tables``),
    on 127.0.0.1 at :attr:`port` or at the socket in the data directory.
    Durability is traded for speed: no doublewrite buffer, no binary log,
    and commits that do not flush InnoDB's log.
    """

    def __init__(self):
        self._make_directory()
        self.install()
        self.start()

    def _make_directory(self):
        """The data directory, the port; destroyed at exit."""
        self.bindir, self.install_db = _find_mariadb_binaries()
        self.datadir = tempfile.mkdtemp(prefix='placement-lite-mariadb-',
                                        dir=_fast_dir())
        self.socket = os.path.join(self.datadir, 'mariadb.sock')
        self.port = _free_port()
        self.run_as = 'mysql' if os.geteuid() == 0 else None
        self._process = None
        self._admin = None
        if self.run_as:
            entry = pwd.getpwnam(self.run_as)
            os.chown(self.datadir, entry.pw_uid, entry.pw_gid)
        atexit.register(self.destroy)

    def install(self):
        """Make the system tables (mariadb-install-db)."""
        self._run(self.install_db, '--no-defaults',
                  '--datadir=%s' % self._data(), '--skip-test-db',
                  '--auth-root-authentication-method=normal',
                  *self._user(), *self._server_options())

    def _data(self):
        return os.path.join(self.datadir, 'data')

    def _user(self):
        return ['--user=%s' % self.run_as] if self.run_as else []

    @staticmethod
    def _server_options():
        return ['--innodb-log-file-size=16M', '--innodb-doublewrite=0',
                '--innodb-flush-log-at-trx-commit=0',
                '--innodb-buffer-pool-size=64M', '--skip-log-bin',
                '--innodb-flush-method=nosync',
                '--innodb-buffer-pool-dump-at-shutdown=0',
                '--innodb-buffer-pool-load-at-startup=0']

    def _command(self, log):
        """mariadbd and its options, logging to ``log``."""
        return [os.path.join(self.bindir, 'mariadbd'), '--no-defaults',
                '--datadir=%s' % self._data(), '--socket=%s' % self.socket,
                '--port=%d' % self.port, '--bind-address=127.0.0.1',
                '--pid-file=%s' % os.path.join(self.datadir, 'mariadb.pid'),
                '--log-error=%s' % log, '--skip-grant-tables',
                '--max-connections=300', '--character-set-server=utf8mb4',
                '--collation-server=utf8mb4_bin', *self._user(),
                *self._server_options(), *self._more_options()]

    def start(self, timeout=60):
        log = os.path.join(self.datadir, 'server.log')
        self._process = subprocess.Popen(
            self._command(log),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd='/')
        if not wait_for(self._answers, timeout=timeout):
            self._process.kill()
            self._process.wait()
            with open(log, errors='replace') as handle:
                tail = handle.read()[-2000:]
            raise RuntimeError('MariaDB did not start:\n%s' % tail)

    def _more_options(self):
        """Options of a kind of server (a Galera node's)."""
        return []

    def _answers(self):
        if self._process.poll() is not None:
            raise RuntimeError('mariadbd exited with status %d; see %s'
                               % (self._process.returncode, self.datadir))
        try:
            pymysql.connect(unix_socket=self.socket, user='root').close()
        except pymysql.err.OperationalError:
            return False
        return True

    def stop(self, mode='immediate'):
        """Stop the server (``fast`` shuts it down cleanly, as a restart by
        an operator does; ``immediate`` kills it, as a crash)."""
        if self._process is None or self._process.poll() is not None:
            return
        if mode == 'immediate':
            self._process.kill()
        else:
            self._process.terminate()
        self._process.wait(timeout=120)

    def _run(self, program, *args):
        subprocess.run([program, *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       cwd='/')

    def url(self, database):
        return 'mysql+pymysql://root@127.0.0.1:%d/%s?charset=utf8mb4' % (
            self.port, database)

    def admin_engine(self):
        if self._admin is None:
            self._admin = sa.create_engine(self.url('mysql'),
                                           isolation_level='AUTOCOMMIT')
        return self._admin

    def template(self, database):
        """What :meth:`create_database` copies ``database`` from: its name,
        its tables' definitions and the names of those holding rows."""
        with self.admin_engine().connect() as conn:
            conn.exec_driver_sql('USE %s' % database)
            tables = conn.exec_driver_sql('SHOW TABLES').scalars().all()
            definitions = [conn.exec_driver_sql(
                'SHOW CREATE TABLE %s' % name).one()[1] for name in tables]
            filled = [name for name in tables if conn.exec_driver_sql(
                'SELECT 1 FROM %s LIMIT 1' % name).first()]
        return database, tuple(definitions), tuple(filled)

    def create_database(self, name, template=None):
        """Create database ``name`` (a copy of a :meth:`template` if
        given); return its URL."""
        with self.admin_engine().connect() as conn:
            conn.exec_driver_sql('CREATE DATABASE %s' % name)
            if template:
                source, definitions, filled = template
                conn.exec_driver_sql('USE %s' % name)
                conn.exec_driver_sql('SET foreign_key_checks = 0')
                for definition in definitions:
                    conn.exec_driver_sql(definition)
                for table in filled:
                    conn.exec_driver_sql('INSERT INTO %s SELECT * FROM %s.%s'
                                         % (table, source, table))
                conn.exec_driver_sql('SET foreign_key_checks = 1')
                conn.exec_driver_sql('USE mysql')
        return self.url(name)

    def destroy(self):
        """Stop the server and remove its files."""
        if self._admin is not None:
            self._admin.dispose()
        self.stop()
        shutil.rmtree(self.datadir, ignore_errors=True)


_mariadb = None


def mariadb_server():
    global _mariadb
    if _mariadb is None:
        _mariadb = MariaDBServer()
    return _mariadb


class GaleraNode(MariaDBServer):
    """One MariaDB server of a :class:`GaleraCluster`."""

    def __init__(self, cluster, name):
        self.cluster = cluster
        self.name = name
        self.bootstrap = False
        self.start_position = None
        self._make_directory()
        self.galera_port = _free_port()
        self.ist_port = _free_port()
        self.sst_port = _free_port()

    def start(self, timeout=180):
        """Start the node; after a crash, from the position its storage
        recovers (``mariadbd --wsrep-recover``, as Debian's systemd unit
        does with galera_recovery), so that it catches up by IST."""
        self.start_position = self._recovered_position()
        super().start(timeout)

    def _recovered_position(self):
        """uuid:seqno of the last transaction the node committed, when
        it was not shut down cleanly (its grastate.dat says seqno -1)."""
        try:
            with open(os.path.join(self._data(), 'grastate.dat')) as state:
                if not re.search(r'^seqno:\s+-1$', state.read(), re.M):
                    return None
        except FileNotFoundError:
            return None
        log = os.path.join(self.datadir, 'recover.log')
        subprocess.run(self._command(log) + ['--wsrep-recover'],
                       check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, cwd='/')
        with open(log, errors='replace') as handle:
            found = re.findall(r'WSREP: Recovered position: (\S+)',
                               handle.read())
        return found[-1] if found else None

    def _more_options(self):
        provider_options = ';'.join((
            'gmcast.listen_addr=tcp://127.0.0.1:%d' % self.galera_port,
            'ist.recv_addr=127.0.0.1:%d' % self.ist_port,
            'gcache.size=32M'))
        return [
            '--wsrep-on=ON', '--wsrep-provider=%s' % self.cluster.library,
            '--wsrep-cluster-name=placement-lite-tests',
            '--wsrep-cluster-address=gcomm://%s' % (
                '' if self.bootstrap else self.cluster.addresses()),
            '--wsrep-node-name=%s' % self.name,
            '--wsrep-node-address=127.0.0.1:%d' % self.galera_port,
            '--wsrep-provider-options=%s' % provider_options,
            '--wsrep-sst-method=rsync',
            '--wsrep-sst-receive-address=127.0.0.1:%d' % self.sst_port,
            '--binlog-format=ROW', '--innodb-autoinc-lock-mode=2',
            *(['--wsrep-start-position=%s' % self.start_position]
              if self.start_position else [])]

    def _answers(self):
        return super()._answers() and self.state() is not None

    def state(self):
        """The node's wsrep_local_state_comment (``Synced``...), None when
        it does not answer."""
        try:
            conn = pymysql.connect(unix_socket=self.socket, user='root',
                                   connect_timeout=2, read_timeout=5)
        except pymysql.err.OperationalError:
            return None
        try:
            with conn.cursor() as cursor:
                cursor.execute("SHOW GLOBAL STATUS LIKE "
                               "'wsrep_local_state_comment'")
                row = cursor.fetchone()
        except pymysql.err.MySQLError:
            return None
        finally:
            conn.close()
        return row[1] if row else None

    def copy_data_from(self, node):
        """This node's data directory made a copy of (stopped) ``node``'s."""
        shutil.rmtree(self._data(), ignore_errors=True)
        subprocess.run(['cp', '-a', node._data(), self._data()], check=True)

    def log_text(self):
        with open(os.path.join(self.datadir, 'server.log'),
                  errors='replace') as log:
            return log.read()


class GaleraCluster:
    """Three MariaDB servers (:class:`GaleraNode`) on 127.0.0.1, one
    Galera cluster: every node takes writes and certifies them against
    the others' (multi-master, synchronous), as Debian's mariadb-server and
    galera-4 run in production.

    The first node's system tables are made once and the cluster is
    bootstrapped on them; the others start from a copy of its data
    directory, so they join without a state transfer. A node killed and
    started again catches up from the others' write-set cache (IST).
    """

    def __init__(self, size=3):
        self.library = provision.require('galera')['libgalera_smm.so']
        self.nodes = [GaleraNode(self, 'node%d' % index)
                      for index in range(1, size + 1)]
        first = self.nodes[0]
        first.install()
        first.bootstrap = True
        first.start()
        first.stop('fast')
        for node in self.nodes[1:]:
            node.copy_data_from(first)
        first.start()
        first.bootstrap = False
        for node in self.nodes[1:]:
            node.start()
        self.wait_synced()

    def addresses(self):
        return ','.join('127.0.0.1:%d' % node.galera_port
                        for node in self.nodes)

    def wait_synced(self, timeout=120):
        """Wait until every node is Synced in a cluster of all of them."""
        if not wait_for(lambda: all(node.state() == 'Synced'
                                    for node in self.nodes)
                        and self.size_seen() == len(self.nodes),
                        timeout=timeout):
            raise RuntimeError('Galera nodes not synced: %s' % [
                node.state() for node in self.nodes])

    def size_seen(self):
        """The cluster's size as the first node sees it."""
        conn = pymysql.connect(unix_socket=self.nodes[0].socket,
                               user='root')
        try:
            with conn.cursor() as cursor:
                cursor.execute("SHOW GLOBAL STATUS LIKE "
                               "'wsrep_cluster_size'")
                return int(cursor.fetchone()[1])
        finally:
            conn.close()

    def create_database(self, name):
        """An empty database ``name``; the URLs of it on each node."""
        self.nodes[0].create_database(name)
        return [node.url(name) for node in self.nodes]

    def destroy(self):
        for node in self.nodes:
            node.destroy()


def _find_mariadb_binaries():
    """(directory of mariadbd, path of mariadb-install-db)."""
    found = provision.require('mariadb')
    return os.path.dirname(found['mariadbd']), found['mariadb-install-db']


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def postgres_lock_waits(engine):
    """How many sessions of ``engine``'s PostgreSQL database wait for a
    lock (a row another transaction holds)."""
    with engine.connect() as conn:
        return conn.execute(sa.text(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = "
            "'Lock' AND datname = current_database()")).scalar()


def wait_for(predicate, timeout=30.0, interval=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False
