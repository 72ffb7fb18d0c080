"""Database engines and transactions.

Every request runs its SQL on one connection obtained here: ``db.reader()``
for reads, ``db.writer()`` for writes, each in a transaction. On SQLite a
writer starts with ``BEGIN IMMEDIATE`` so concurrent writers are serialised
by the database instead of failing half-way; on PostgreSQL writers rely on
provider and consumer generations (optimistic concurrency) and on row locks
taken in a fixed order by the domain code.

On PostgreSQL readers have a pool of their own, in autocommit. At READ
COMMITTED, the isolation level used, each statement sees its own snapshot
whether in a transaction or not, so BEGIN and COMMIT would only add two
round trips to every read; and a round trip costs more than most reads
take to run.
"""

import contextlib
import os

import platformdirs
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.pool import NullPool

_WRITE = 'placement_lite_write'


def default_sqlite_path():
    """The embedded database file used when no connection is configured."""
    return os.path.join(platformdirs.user_data_dir('placement-lite'),
                        'placement.sqlite')


def default_connection_url():
    return 'sqlite:///' + default_sqlite_path()


def create_engine(url, max_pool_size=None, max_overflow=None,
                  pool_timeout=None, pool_recycle=3600, echo=False,
                  autocommit=False):
    """An engine for ``url``; ``autocommit`` (PostgreSQL only) runs every
    statement in a transaction of its own."""
    url = sa.engine.make_url(url)
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
    kwargs = {'pool_pre_ping': True, 'pool_recycle': pool_recycle,
              'echo': echo}
    if autocommit:
        kwargs['isolation_level'] = 'AUTOCOMMIT'
    if max_pool_size is not None:
        kwargs['pool_size'] = max_pool_size
    if max_overflow is not None:
        kwargs['max_overflow'] = max_overflow
    if pool_timeout is not None:
        kwargs['pool_timeout'] = pool_timeout
    return sa.create_engine(url, **kwargs)


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
    """One database: the engine plus the transaction helpers."""

    def __init__(self, url, **engine_kwargs):
        self.url = str(url)
        self.engine = create_engine(url, **engine_kwargs)
        if self.engine.dialect.name == 'postgresql':
            self.read_engine = create_engine(url, autocommit=True,
                                             **engine_kwargs)
        else:
            self.read_engine = self.engine

    @property
    def dialect(self):
        return self.engine.dialect.name

    @contextlib.contextmanager
    def reader(self):
        with self.read_engine.connect() as conn:
            with conn.begin():
                yield conn

    @contextlib.contextmanager
    def writer(self):
        with self.engine.connect() as conn:
            conn = conn.execution_options(**{_WRITE: True})
            with conn.begin():
                yield conn

    def dispose(self):
        self.engine.dispose()
        self.read_engine.dispose()


def from_conf(conf):
    group = conf.placement_database
    return Database(
        group.connection or default_connection_url(),
        max_pool_size=group.max_pool_size,
        max_overflow=group.max_overflow,
        pool_timeout=group.pool_timeout,
        pool_recycle=group.connection_recycle_time,
        echo=group.connection_debug >= 50,
    )
