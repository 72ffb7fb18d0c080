"""Database engines and transactions.

Every request runs its SQL on one connection obtained here: ``db.reader()``
for reads, ``db.write(work)`` for writes, each in a transaction. On SQLite a
writer starts with ``BEGIN IMMEDIATE`` so concurrent writers are serialised
by the database instead of failing half-way; on PostgreSQL writers rely on
provider and consumer generations (optimistic concurrency) and on row locks
taken all at once, never waited for while others are held (db.locks). MySQL and MariaDB (driver
PyMySQL, ``mysql+pymysql://``) work as PostgreSQL does: their writers run
at READ COMMITTED too, not at InnoDB's default REPEATABLE READ, under which
a read after a lock wait would still see the snapshot taken before it (and
a capacity check would count allocations as they were, over-committing).

Every write goes through ``db.write(work)``: when the database refuses its
transaction for a concurrent one (a deadlock, a Galera certification
conflict, a serialization failure, a lock wait timeout) or ``work`` finds
that a concurrent write got there first (:class:`Retry`), the whole write
runs again in a new transaction, which sees what the other committed. On
a Galera cluster any node may take any write: row locks hold on one node
only, and a transaction that conflicts with one committed on another node
is refused at its commit (error 1213), then retried here.

On PostgreSQL and MySQL readers have a pool of their own, in autocommit.
At READ COMMITTED, the isolation level used, each statement sees its own
snapshot whether in a transaction or not, so BEGIN and COMMIT would only
add two round trips to every read; and a round trip costs more than most
reads take to run.

A process never uses a connection another process opened: a pooled
connection remembers the process that opened it and is set aside, unused
and unclosed, when checked out anywhere else (a WSGI server that builds
the application before forking its workers would otherwise let them share
the master's sockets). ``build_app`` also empties the pools once start-up
work is done, so nothing is open when a server forks. A pooled connection
is pinged before use only after a second or more unused.

With ``[placement_database] slave_connection``, ``replica_reader()`` reads
from a streaming replica: only reads whose answer a client may act on
through a later, checked write go there (allocation candidates, the
provider listing, project usages). Every write, and every read a write depends on, stays
on the primary.
"""

import contextlib
import logging
import os
import random
import time

import platformdirs
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite
from sqlalchemy.pool import NullPool

from placement_lite import observe
from placement_lite.db import locks

LOG = logging.getLogger(__name__)

_WRITE = 'placement_lite_write'
#: How many times a write is tried again by default (``[placement]
#: allocation_conflict_retry_count``'s default).
WRITE_RETRIES = 10
#: A retried write first waits a random time up to this many seconds
#: times its attempt's number, so that writers that collided do not
#: collide again at once.
RETRY_BACKOFF = 0.005
#: How many times one write waits for rows another transaction held
#: (locks.Busy) before it gives up: each wait ends when that transaction
#: ends, so the writes it waits for make progress.
MOST_LOCK_WAITS = 100
#: Connections opened by a parent process, kept referenced so that the
#: child never closes them: closing would end the parent's session.
_INHERITED = []
#: Seconds a pooled connection may stay unused before it is pinged.
PING_AFTER_IDLE = 1.0


def default_sqlite_path():
    """The embedded database file used when no connection is configured."""
    return os.path.join(platformdirs.user_data_dir('placement-lite'),
                        'placement.sqlite')


def default_connection_url():
    return 'sqlite:///' + default_sqlite_path()


def create_engine(url, max_pool_size=None, max_overflow=None,
                  pool_timeout=None, pool_recycle=3600, echo=False,
                  autocommit=False):
    """An engine for ``url``; ``autocommit`` (PostgreSQL, MySQL) runs every
    statement in a transaction of its own."""
    url = sa.engine.make_url(url)
    if url.get_backend_name() == 'mariadb':
        # The same dialect, named 'mysql' wherever the code asks.
        url = url.set(drivername='mysql+%s' % url.get_driver_name())
    if url.get_backend_name() == 'sqlite':
        database = url.database
        if database and database != ':memory:':
            os.makedirs(os.path.dirname(os.path.abspath(database)),
                        exist_ok=True)
        engine = sa.create_engine(
            url, connect_args={'timeout': 60, 'check_same_thread': False},
            poolclass=NullPool, echo=echo)
        _take_over_sqlite_transactions(engine)
        return engine
    kwargs = {'pool_recycle': pool_recycle, 'echo': echo}
    if autocommit:
        kwargs['isolation_level'] = 'AUTOCOMMIT'
    if max_pool_size is not None:
        kwargs['pool_size'] = max_pool_size
    if max_overflow is not None:
        kwargs['max_overflow'] = max_overflow
    if pool_timeout is not None:
        kwargs['pool_timeout'] = pool_timeout
    if url.get_backend_name() == 'mysql':
        _mysql_engine_options(url, kwargs)
    engine = sa.create_engine(url, **kwargs)
    _check_pooled_connections(engine)
    return engine


def _mysql_engine_options(url, kwargs):
    """MySQL/MariaDB: 4-byte UTF-8 on the wire unless the URL says
    otherwise, and READ COMMITTED (see the module's docstring).

    No ROLLBACK when a connection goes back to the pool: every transaction
    here has ended by then (committed, or rolled back by its context), and
    PyMySQL sends a ROLLBACK even when there is nothing to roll back (and
    in autocommit): one round trip more per request, which fails with a
    logged traceback on a connection the server has just dropped."""
    if 'charset' not in url.query:
        kwargs['connect_args'] = {'charset': 'utf8mb4'}
    kwargs.setdefault('isolation_level', 'READ COMMITTED')
    kwargs['pool_reset_on_return'] = None


def _check_pooled_connections(engine):
    """On checkout, refuse a pooled connection opened by another process,
    and ping one left idle for more than PING_AFTER_IDLE seconds; the pool
    replaces a refused connection, or one that does not answer.

    A connection refused for its process is detached without being closed
    (closing it would end the session of the process that owns it) and
    stays referenced for the life of this process. A connection used a
    moment ago is not pinged: a ping on every checkout is one more round
    trip in every request. If the database went away in that moment, the
    request fails as it would have a moment later, and the failure
    empties the pool.
    """

    @event.listens_for(engine, 'connect')
    def _on_connect(_dbapi_connection, record):
        record.info['pid'] = os.getpid()
        record.info['returned_at'] = time.monotonic()

    @event.listens_for(engine, 'checkin')
    def _on_checkin(_dbapi_connection, record):
        record.info['returned_at'] = time.monotonic()

    @event.listens_for(engine, 'checkout')
    def _on_checkout(dbapi_connection, record, proxy):
        info = record.info
        if info.get('pid') != os.getpid():
            _INHERITED.append(dbapi_connection)
            record.dbapi_connection = proxy.dbapi_connection = None
            raise sa.exc.DisconnectionError(
                'connection opened by process %s, not %s'
                % (info.get('pid'), os.getpid()))
        if time.monotonic() - info.get('returned_at', 0) > PING_AFTER_IDLE:
            try:
                cursor = dbapi_connection.cursor()
                try:
                    cursor.execute('SELECT 1')
                finally:
                    cursor.close()
            except Exception as exc:  # noqa: any failure means a dead link
                raise sa.exc.DisconnectionError(str(exc)) from exc


def _take_over_sqlite_transactions(engine):
    """Let SQLAlchemy, not pysqlite, emit BEGIN, so writers can say IMMEDIATE."""

    @event.listens_for(engine, 'connect')
    def _on_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, 'begin')
    def _on_begin(connection):
        if connection.get_execution_options().get(_WRITE):
            connection.exec_driver_sql('BEGIN IMMEDIATE')
        else:
            connection.exec_driver_sql('BEGIN')


class Database:
    """One database: the engine plus the transaction helpers.

    ``replica_url`` names a read-only streaming replica of the same
    database, for ``replica_reader()``. ``write_retries``: how many times
    :meth:`write` tries a write again.
    """

    def __init__(self, url, replica_url=None, write_retries=WRITE_RETRIES,
                 **engine_kwargs):
        self.url = str(url)
        self.write_retries = write_retries
        self.engine = create_engine(url, **engine_kwargs)
        if self.engine.dialect.name in ('postgresql', 'mysql'):
            self.read_engine = create_engine(url, autocommit=True,
                                             **engine_kwargs)
        else:
            self.read_engine = self.engine
        if replica_url:
            self.replica_engine = create_engine(replica_url, autocommit=True,
                                                **engine_kwargs)
        else:
            self.replica_engine = self.read_engine

    @property
    def dialect(self):
        return self.engine.dialect.name

    @contextlib.contextmanager
    def reader(self):
        with self.read_engine.connect() as conn:
            with conn.begin():
                yield conn

    @contextlib.contextmanager
    def replica_reader(self):
        """A read that may lag the primary by the replication delay (the
        primary itself when no replica is configured)."""
        with self.replica_engine.connect() as conn:
            with conn.begin():
                yield conn

    @contextlib.contextmanager
    def writer(self):
        with self.engine.connect() as conn:
            conn = conn.execution_options(**{_WRITE: True})
            with conn.begin():
                yield conn

    def write(self, work, on_retry=None):
        """``work(conn)`` in a writer transaction; what it returns.

        When the database refuses the transaction for a concurrent one
        (:func:`is_conflict`), or ``work`` raises :class:`Retry`, what it
        did is rolled back and it runs again in a new transaction, up to
        ``write_retries`` more times, after a short random wait; then
        :class:`StillConflicting` is raised. When rows ``work`` locks are
        held by another transaction (:class:`locks.Busy`), it is rolled
        back, waits until they are free and runs again, without counting
        an attempt (at most MOST_LOCK_WAITS times). Any other exception ends the
        write (rolled back) at once. ``on_retry()``, when given, is called
        before each new attempt.
        """
        attempts = self.write_retries + 1
        attempt = waits = 0
        while attempt < attempts:
            try:
                with self.writer() as conn:
                    return work(conn)
            except locks.Busy as busy:
                waits += 1
                if waits <= MOST_LOCK_WAITS:
                    observe.watcher.write_waited_for_rows()
                    try:
                        locks.wait_until_free(self.read_engine, busy)
                    except Exception as exc:
                        # A Galera node ends the waiting statement as a
                        # deadlock (1213) when it applies the holder's
                        # committed write: the rows are free.
                        if not is_conflict(exc):
                            raise
                    continue
                conflict = busy
                break
            except Exception as exc:
                if not is_conflict(exc):
                    raise
                conflict = exc
            attempt += 1
            LOG.info('Write attempt %d of %d met a concurrent write: %s',
                     attempt, attempts, describe_error(conflict))
            if attempt < attempts:
                if on_retry is not None:
                    on_retry()
                time.sleep(random.uniform(0, RETRY_BACKOFF * attempt))
        LOG.warning('A write met a concurrent one on each of its %d '
                    'attempts (and waited %d times for rows another held); '
                    'it changed nothing.', attempt, waits)
        raise StillConflicting(describe_error(conflict)) from conflict

    def dispose(self):
        """Close every pooled connection."""
        for engine in {self.engine, self.read_engine, self.replica_engine}:
            engine.dispose()


class Retry(Exception):
    """Raised by a write's work when a concurrent write got there first in
    a way its transaction cannot see past (a generation moved under it, a
    row it was creating appeared): :meth:`Database.write` runs it again in
    a new transaction."""


class StillConflicting(Exception):
    """A write met a concurrent one on each of its attempts; nothing of it
    was committed."""


#: PostgreSQL SQLSTATEs of a transaction refused for a concurrent one:
#: serialization failure, deadlock detected.
_CONFLICT_SQLSTATES = {'40001', '40P01'}
#: MySQL/MariaDB errors doing the same: deadlock (on a Galera node, a
#: certification conflict with a transaction committed on another node,
#: or one brute-force aborted by it) and lock wait timeout.
_MYSQL_CONFLICTS = (1213, 1205)


def is_conflict(exc):
    """Whether ``exc`` says the write met a concurrent one, and would go
    through if tried again in a new transaction (see Database.write); or
    was raised while such a refusal was being handled: MariaDB ends the
    whole transaction on a deadlock (on Galera, a certification conflict),
    its savepoints with it, so rolling back to the savepoint the refused
    statement ran in fails (1305, no such savepoint), the refusal its
    context."""
    while exc is not None:
        if isinstance(exc, Retry):
            return True
        if isinstance(exc, sa.exc.DBAPIError) and (
                getattr(exc.orig, 'pgcode', None) in _CONFLICT_SQLSTATES
                or is_mysql_error(exc, *_MYSQL_CONFLICTS)
                or 'database is locked' in str(exc.orig)):
            return True
        exc = exc.__context__
    return False


def describe_error(exc):
    """``exc`` in one line: the database's own error when it is one."""
    if isinstance(exc, sa.exc.DBAPIError):
        return '%s: %s' % (type(exc.orig).__name__,
                           ' '.join(str(exc.orig).split()))
    return '%s: %s' % (type(exc).__name__, exc)


#: PostgreSQL SQLSTATEs saying that what a statement would create exists:
#: unique violation, duplicate table, duplicate object (an index...),
#: duplicate column.
_DUPLICATE_SQLSTATES = {'23505', '42P07', '42710', '42701'}
#: MySQL/MariaDB errors doing the same: table exists, duplicate column,
#: duplicate key name, duplicate entry.
_MYSQL_DUPLICATES = (1050, 1060, 1061, 1062)


def is_duplicate(exc):
    """Whether ``exc`` says that a table, column, index or unique key a
    statement would create exists already (made by another process; on
    SQLite a writer runs alone and never meets one)."""
    if not isinstance(exc, sa.exc.DBAPIError):
        return False
    return (getattr(exc.orig, 'pgcode', None) in _DUPLICATE_SQLSTATES
            or is_mysql_error(exc, *_MYSQL_DUPLICATES))


def is_unavailable(exc):
    """Whether ``exc`` says the database could not serve the request for
    now (unreachable, restarting, connection dropped, locked, no pooled
    connection free in time, a write that kept meeting concurrent ones)
    rather than that the request or the code is wrong."""
    if isinstance(exc, StillConflicting) or getattr(
            exc, 'connection_invalidated', False):
        return True
    mysql_code = _mysql_error_code(exc)
    if mysql_code is not None and isinstance(exc, sa.exc.OperationalError):
        return (mysql_code in _MYSQL_UNAVAILABLE
                or _MYSQL_CLIENT_ERRORS[0] <= mysql_code
                < _MYSQL_CLIENT_ERRORS[1])
    return isinstance(exc, (sa.exc.OperationalError, sa.exc.InterfaceError,
                            sa.exc.TimeoutError))


#: MySQL/MariaDB server errors saying the server cannot serve for now:
#: too many connections, shutting down, lock wait timeout, deadlock,
#: unknown command (a Galera node not ready), connection killed,
#: disconnected for inactivity. PyMySQL raises OperationalError for these
#: and for every server error it does not know, so the codes are needed.
_MYSQL_UNAVAILABLE = {1040, 1053, 1205, 1213, 1047, 1927, 4031}
#: The client library's own errors (cannot connect, server gone, lost
#: connection...): [2000, 3000).
_MYSQL_CLIENT_ERRORS = (2000, 3000)


def _mysql_error_code(exc):
    """The MySQL/MariaDB error number of ``exc`` (from PyMySQL or
    mysqlclient), None for another database's exception."""
    orig = getattr(exc, 'orig', None)
    module = type(orig).__module__ or ''
    if not module.startswith(('pymysql', 'MySQLdb')):
        return None
    args = getattr(orig, 'args', ())
    return args[0] if args and isinstance(args[0], int) else None


def is_mysql_error(exc, *codes):
    """Whether ``exc`` is a MySQL/MariaDB error numbered one of ``codes``."""
    return _mysql_error_code(exc) in codes


def retry_while_unavailable(db, options, work):
    """``work()``, tried again every ``options.retry_interval`` seconds
    while the database is unavailable, at most ``options.max_retries``
    times (-1: until it answers), as oslo.db does when a service starts.
    An SQLite file is not a server that may come back: no retry."""
    retries = 0
    while True:
        try:
            return work()
        except Exception as exc:
            if (not is_unavailable(exc) or db.dialect == 'sqlite'
                    or retries == options.max_retries):
                raise
            retries += 1
            LOG.warning('The placement database is unavailable (%s); '
                        'retry %d of %s in %d s.', exc.__class__.__name__,
                        retries, 'unlimited' if options.max_retries < 0
                        else options.max_retries, options.retry_interval)
            db.dispose()
            time.sleep(options.retry_interval)


def insert_ignoring_duplicates(conn, table, rows):
    """Insert ``rows``, skipping those whose unique key another writer
    inserted first (committed, or committing concurrently)."""
    conn.execute(insert_ignoring(conn, table), rows)


def insert_ignoring(conn, table, index_elements=None):
    """An INSERT into ``table`` that skips the rows whose unique key
    (``index_elements``, any by default; MySQL: any) is already taken:
    ON CONFLICT DO NOTHING, INSERT IGNORE on MySQL/MariaDB."""
    return insert_ignoring_on(conn.dialect.name, table, index_elements)


def insert_ignoring_on(dialect, table, index_elements=None):
    """insert_ignoring, for the dialect named ``dialect``."""
    if dialect == 'mysql':
        return sa.insert(table).prefix_with('IGNORE')
    module = postgresql if dialect == 'postgresql' else sqlite
    return module.insert(table).on_conflict_do_nothing(
        index_elements=index_elements)


@contextlib.contextmanager
def zero_is_an_id(conn):
    """MySQL/MariaDB: an id of 0 inserted into an AUTO_INCREMENT column (the
    reference's resource_classes.id) is stored as 0 (VCPU's id), not
    replaced by the next value, which would take MEMORY_MB's."""
    if conn.dialect.name != 'mysql':
        yield
        return
    mode = conn.exec_driver_sql('SELECT @@SESSION.sql_mode').scalar()
    conn.exec_driver_sql(
        "SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, "
        "',NO_AUTO_VALUE_ON_ZERO')")
    try:
        yield
    finally:
        conn.execute(sa.text('SET SESSION sql_mode = :mode'), {'mode': mode})


def with_parameters(url, parameters):
    """``url`` with the query parameters ``parameters`` (``a=1&b=2``, as
    oslo.db's ``connection_parameters``) added to its own."""
    if not parameters:
        return url
    url = sa.engine.make_url(url).update_query_string(parameters,
                                                      append=True)
    return url.render_as_string(hide_password=False)


def from_conf(conf):
    group = conf.placement_database
    return Database(
        with_parameters(group.connection or default_connection_url(),
                        group.connection_parameters),
        replica_url=group.slave_connection and with_parameters(
            group.slave_connection, group.connection_parameters),
        write_retries=conf.placement.allocation_conflict_retry_count,
        max_pool_size=group.max_pool_size,
        max_overflow=group.max_overflow,
        pool_timeout=group.pool_timeout,
        pool_recycle=group.connection_recycle_time,
        echo=group.connection_debug >= 50,
    )
