"""Schema upgrades with alembic, driven from Python (``placement-lite db``).

placement_lite's revision is kept in its own table
(``tables.VERSION_TABLE``), beside the reference's ``alembic_version``: a
database either service created can be served and migrated by the other.

Any number of processes, on any number of hosts and database nodes, may
upgrade one database at once (``placement-lite db sync``, every API process
with ``sync_on_startup``). No lock decides which process upgrades: none
would hold across a Galera cluster. Each step of a migration does only
what is not done yet (``migrations/steps.py``), so that a migration
another process left half done (MySQL and MariaDB commit DDL as it runs)
is finished, not repeated.
A process that loses a race to another (a table or index made meanwhile,
or seen half made, a revision recorded first, a conflict refusing its
transaction) starts again from the revision then recorded.

The revision itself is the one thing that must not be done twice: a
process that read no revision would record the first one beside the
newer one another recorded meanwhile (alembic inserts the first revision
and updates the later ones), leaving two. placement_lite's version table
holds one row: a second has the same ``one_row`` key, and is refused
(on a Galera cluster, by the certification of its transaction).

On PostgreSQL an upgrade first locks every table it may change, all in
one statement that gives way before another transaction could be ended
for a deadlock with it (:func:`_lock_tables`), and tries again for up to
TABLES_PATIENCE seconds: the services serving the database meanwhile
(the reference during a takeover, this release's other hosts) wait for
it, and never fail for it.

A database a newer release migrated records a revision this release's
migrations do not know. Every migration keeps the previous release serving
(expand now, contract in a later release: migrations/README.md), so such a
database is served as it is: :func:`upgrade` changes nothing and says so in
one line.
"""

import logging
import os
import random
import time

from alembic import command
from alembic.config import Config
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
import sqlalchemy as sa

from placement_lite import migrations
from placement_lite.db import api as db_api
from placement_lite.db import tables

LOG = logging.getLogger(__name__)

#: MySQL/MariaDB error of a table that another process is creating at
#: this moment, seen half made (DESCRIBE answers "skipped since its
#: definition is being modified by concurrent DDL statement").
_MYSQL_TABLE_IN_THE_MAKING = (1684,)
#: Times an upgrade starts again after losing a race to another process.
RACE_RETRIES = 30
#: It waits a random time up to this many seconds first.
RACE_BACKOFF = 0.5
#: Seconds an upgrade goes on trying to lock the tables (_lock_tables)
#: while the transactions of the services serving them keep one busy.
TABLES_PATIENCE = 300
#: PostgreSQL's SQLSTATE of a statement that ran past statement_timeout.
_QUERY_CANCELED = '57014'


class TablesBusy(Exception):
    """The tables an upgrade changes were not all free in time: nothing
    was changed, and the upgrade tries again (TABLES_PATIENCE)."""


def _alembic_config():
    config = Config()
    config.set_main_option('script_location',
                           os.path.dirname(os.path.abspath(migrations.__file__)))
    return config


def upgrade(database, revision='head'):
    """Bring the schema of ``database`` up to ``revision``, however many
    processes do so at once, unless a newer release migrated it (see the
    module's docstring); the revision the database is then at."""
    config = _alembic_config()
    known = _known_revisions(config)
    head = head_revision()
    recorded = None
    races = 0
    patience_ends = time.monotonic() + TABLES_PATIENCE
    while True:
        try:
            recorded = current_revision(database)
            if recorded is not None and recorded not in known:
                LOG.warning(
                    'The database schema is at revision %s, which a newer '
                    'release of placement_lite recorded (this release knows '
                    'up to %s): left as it is, and served as it is.',
                    recorded, head)
                return recorded
            with database.writer() as conn:
                if recorded != head:
                    _lock_tables(conn)
                _move_own_revision_out_of_alembic_version(conn, config)
                _ensure_one_row_version_table(conn)
                config.attributes['connection'] = conn
                command.upgrade(config, revision)
            return current_revision(database)
        except TablesBusy as exc:
            if time.monotonic() > patience_ends:
                raise TablesBusy('the tables of the schema stayed busy for '
                                 '%d seconds' % TABLES_PATIENCE) from exc
            LOG.info('Waiting for the tables to upgrade: %s.', exc)
        except Exception as exc:
            if races == RACE_RETRIES or not _lost_a_race(exc, database,
                                                         recorded):
                raise
            races += 1
            LOG.info('Another process is upgrading the database schema '
                     '(%s); starting again from the revision it recorded.',
                     db_api.describe_error(exc))
        time.sleep(random.uniform(0, RACE_BACKOFF))


def _lost_a_race(exc, database, recorded):
    """Whether ``exc`` came of another process upgrading at the same time.

    Reading the revision is part of the race: on a Galera node, another
    node's DDL (applied in total order) aborts a transaction that only
    read the version table, with a deadlock error."""
    return (db_api.is_duplicate(exc) or db_api.is_conflict(exc)
            or db_api.is_mysql_error(exc, *_MYSQL_TABLE_IN_THE_MAKING)
            or current_revision(database) != recorded)


def _lock_tables(conn):
    """PostgreSQL: the tables of placement_lite's schema that the database
    has, locked (ACCESS EXCLUSIVE) until the upgrade commits, all at once;
    TablesBusy when they are not all free within half the server's
    ``deadlock_timeout``.

    A migration's DDL would lock each table as it comes to it, holding the
    ones before. A claim that holds allocations (written) and then updates
    its providers' generations, meeting a migration that holds
    resource_providers (a trigger made) and waits for allocations, closes
    a cycle; when the claim started waiting first, PostgreSQL ends the
    claim (the reference answers it with a 500). Locked here, in one
    statement that gives up before any transaction waiting for it can
    check for a deadlock, the migration never waits while its locks hold
    another waiting beyond that: if a cycle forms, the upgrade gives way,
    and the transactions it held wait less than ``deadlock_timeout``."""
    if conn.dialect.name != 'postgresql':
        return
    existing = [name for name in sa.inspect(conn).get_table_names()
                if name in tables.metadata.tables]
    if not existing:
        return
    giving_up_ms = max(conn.exec_driver_sql(
        "SELECT setting::int FROM pg_settings "
        "WHERE name = 'deadlock_timeout'").scalar() // 2, 1)
    conn.exec_driver_sql('SET LOCAL statement_timeout = %d' % giving_up_ms)
    preparer = conn.dialect.identifier_preparer
    try:
        conn.exec_driver_sql('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE' % (
            ', '.join(preparer.quote(name) for name in existing)))
    except sa.exc.OperationalError as exc:
        if getattr(exc.orig, 'pgcode', None) == _QUERY_CANCELED:
            raise TablesBusy('the tables were not all free within %d ms'
                             % giving_up_ms) from exc
        raise
    conn.exec_driver_sql('SET LOCAL statement_timeout TO DEFAULT')


def _move_own_revision_out_of_alembic_version(conn, config):
    """Databases placement_lite created before it had its own version table
    keep its revision in ``alembic_version``: move it to its own table and
    record the reference's revision there, which their schema has."""
    inspector = sa.inspect(conn)
    if (inspector.has_table(tables.VERSION_TABLE)
            or not inspector.has_table(tables.REFERENCE_VERSION_TABLE)):
        return
    reference_version = sa.table(tables.REFERENCE_VERSION_TABLE,
                                 sa.column('version_num'))
    revision = conn.execute(sa.select(reference_version.c.version_num)
                            ).scalar()
    if revision not in _known_revisions(config):
        return
    own_version = _own_version_table()
    own_version.create(conn)
    conn.execute(own_version.insert().values(version_num=revision))
    conn.execute(reference_version.update().values(
        version_num=tables.REFERENCE_HEAD))


#: The version table's column whose value every row shares, and its
#: unique index.
_ONE_ROW = 'one_row'
_ONE_ROW_INDEX = 'placement_lite_version_one_row_idx'


def _one_row_column():
    return sa.Column(_ONE_ROW, sa.String(1), nullable=False,
                     server_default='x')


def _own_version_table():
    """placement_lite's version table: alembic's, plus ``one_row``."""
    return sa.Table(
        tables.VERSION_TABLE, sa.MetaData(),
        sa.Column('version_num', sa.String(32), nullable=False),
        _one_row_column(),
        sa.PrimaryKeyConstraint('version_num',
                                name='%s_pkc' % tables.VERSION_TABLE),
        sa.Index(_ONE_ROW_INDEX, _ONE_ROW, unique=True))


def _ensure_one_row_version_table(conn):
    """Create the version table, or give the one alembic created (before
    this existed) its ``one_row`` column and index."""
    inspector = sa.inspect(conn)
    if not inspector.has_table(tables.VERSION_TABLE):
        _own_version_table().create(conn)
        return
    operations = Operations(MigrationContext.configure(conn))
    if _ONE_ROW not in {column['name'] for column in
                        inspector.get_columns(tables.VERSION_TABLE)}:
        operations.add_column(tables.VERSION_TABLE, _one_row_column())
    if _ONE_ROW_INDEX not in {index['name'] for index in
                              inspector.get_indexes(tables.VERSION_TABLE)}:
        operations.create_index(_ONE_ROW_INDEX, tables.VERSION_TABLE,
                                [_ONE_ROW], unique=True)


def _known_revisions(config):
    return {script.revision for script in
            ScriptDirectory.from_config(config).walk_revisions()}


def is_newer(revision):
    """Whether ``revision``, as recorded in a database, is one a newer
    release recorded: one this release's migrations do not know."""
    return (revision is not None
            and revision not in _known_revisions(_alembic_config()))


def current_revision(database):
    with database.engine.connect() as conn:
        return MigrationContext.configure(
            conn, opts={'version_table': tables.VERSION_TABLE}
        ).get_current_revision()


def head_revision():
    return ScriptDirectory.from_config(_alembic_config()).get_current_head()
