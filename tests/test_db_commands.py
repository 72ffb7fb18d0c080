"""``placement-lite db sync`` / ``db version`` and the migrations themselves."""

import datetime
import os
import subprocess
import sys
import threading
import time

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
import pymysql
import pytest
import sqlalchemy as sa

from placement_lite import cli
from placement_lite.db import api as db_api
from placement_lite.db import lookups
from placement_lite.db import migrate
from placement_lite.db import tables
from placement_lite.migrations import steps
from tests import harness

#: Run on MariaDB too (see tests/conftest.py).
pytestmark = [pytest.mark.mysql, pytest.mark.slow]

BIN = os.path.dirname(sys.executable)


def _empty_database(backend, tmp_path):
    if backend == 'sqlite':
        return db_api.Database('sqlite:///%s' % (tmp_path / 'empty.sqlite'))
    return db_api.Database(harness.empty_database_url(backend))


#: Indexes on expressions, which autogenerate cannot compare (the database
#: gives back its own spelling of the expression).
EXPRESSION_INDEXES = {'inventories_resource_class_largest_unit_idx'}


def _comparable(_object, name, type_, _reflected, _compare_to):
    """Not an expression index, nor the reference's version table (which
    placement_lite's schema holds but does not model)."""
    if type_ == 'index':
        return name not in EXPRESSION_INDEXES
    return not (type_ == 'table' and name == tables.REFERENCE_VERSION_TABLE)


def _index_definitions(conn):
    """{index name: its SQL} of the expression indexes, as stored."""
    if conn.dialect.name == 'postgresql':
        query = 'SELECT indexname, indexdef FROM pg_indexes'
    elif conn.dialect.name == 'mysql':
        return {}  # no index on expressions (see migration 0003)
    else:
        query = "SELECT name, sql FROM sqlite_master WHERE type = 'index'"
    return {name: definition for name, definition
            in conn.exec_driver_sql(query) if name in EXPRESSION_INDEXES}


def _mysql_collations(db):
    """The collations of the tables placement_lite created (all but the
    version tables alembic creates)."""
    with db.engine.connect() as conn:
        return set(conn.exec_driver_sql(
            "SELECT table_collation FROM information_schema.tables "
            "WHERE table_schema = DATABASE() AND table_name NOT IN "
            "('alembic_version', %s)", (tables.VERSION_TABLE,)).scalars())


def _differences(db):
    """What autogenerate finds between the database and tables.py."""
    with db.engine.connect() as conn:
        return compare_metadata(
            MigrationContext.configure(conn, opts={
                'include_object': _comparable,
                'version_table': tables.VERSION_TABLE}),
            tables.metadata)


def test_migrations_create_exactly_the_schema(backend, tmp_path):
    """Upgrading an empty database to head leaves nothing for autogenerate,
    and creates the expression indexes it cannot compare (none on
    MariaDB); MariaDB's tables compare names byte for byte."""
    db = _empty_database(backend, tmp_path)
    try:
        migrate.upgrade(db)
        with db.engine.connect() as conn:
            definitions = _index_definitions(conn)
        assert _differences(db) == []
        if backend == 'mysql':
            assert definitions == {}
            assert _mysql_collations(db) == {'utf8mb4_nopad_bin'}
        else:
            assert set(definitions) == EXPRESSION_INDEXES
            largest = definitions[
                'inventories_resource_class_largest_unit_idx']
            assert 'resource_class_id' in largest
            assert 'CASE' in largest and 'max_unit' in largest
        assert migrate.current_revision(db) == migrate.head_revision()
        with db.engine.connect() as conn:
            assert conn.exec_driver_sql(
                'SELECT version_num FROM alembic_version').all() == [
                (tables.REFERENCE_HEAD,)]
    finally:
        db.dispose()


def _reference_revisions(db):
    with db.engine.connect() as conn:
        return conn.exec_driver_sql(
            'SELECT version_num FROM alembic_version').all()


UPGRADERS = 8
#: Each upgrading process: it waits until the time given, then upgrades.
UPGRADER = (
    'import sys, time\n'
    'from placement_lite.db import api, migrate\n'
    'database = api.Database(sys.argv[1])\n'
    'time.sleep(max(0, float(sys.argv[2]) - time.time()))\n'
    'migrate.upgrade(database)\n')


def test_processes_upgrading_at_once_all_reach_head(backend, tmp_path):
    """Eight processes upgrade one empty database at the same moment, as
    eight API processes with sync_on_startup starting together: no lock
    decides which one upgrades (none would hold across a Galera cluster;
    on PostgreSQL each locks the tables, as one statement that gives up
    soon, only to keep others from deadlocking with it); each that loses a
    race starts again, and all end at head with the schema exact and each
    revision recorded once."""
    db = _empty_database(backend, tmp_path)
    at = time.time() + 5
    processes = [subprocess.Popen(
        [sys.executable, '-c', UPGRADER, db.url, str(at)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for _ in range(UPGRADERS)]
    try:
        errors = [process.communicate(timeout=180)[1]
                  for process in processes]
        failed = [error for process, error in zip(processes, errors)
                  if process.returncode]
        assert not failed, '\n'.join(failed)
        assert migrate.current_revision(db) == migrate.head_revision()
        assert _differences(db) == []
        assert _reference_revisions(db) == [(tables.REFERENCE_HEAD,)]
    finally:
        for process in processes:
            process.kill()
        db.dispose()


def test_an_upgrade_left_half_done_is_finished(backend, tmp_path,
                                               monkeypatch):
    """A process that died in the middle of the first migration (on MySQL
    and MariaDB, whose DDL commits as it runs, with some tables and
    indexes made) leaves a database the next upgrade finishes."""
    db = _empty_database(backend, tmp_path)
    made = []
    create_index = steps.create_index

    def dying_on_the_fifth_index(*args):
        if len(made) == 4:
            raise RuntimeError('the process died here')
        create_index(*args)
        made.append(args[0])

    try:
        monkeypatch.setattr(steps, 'create_index', dying_on_the_fifth_index)
        with pytest.raises(RuntimeError):
            migrate.upgrade(db)
        monkeypatch.undo()
        migrate.upgrade(db)
        assert migrate.current_revision(db) == migrate.head_revision()
        assert _differences(db) == []
        assert _reference_revisions(db) == [(tables.REFERENCE_HEAD,)]
    finally:
        db.dispose()


@pytest.mark.only_backends('mysql')
def test_a_table_seen_half_made_is_a_lost_race(backend, tmp_path,
                                               monkeypatch):
    """MariaDB answers 1684 for a table another process is creating at
    that moment (seen when eight processes upgraded at once): the upgrade
    starts again, and reaches head."""
    db = _empty_database(backend, tmp_path)
    create_index = steps.create_index
    seen = []

    def half_made_once(name, table, columns):
        if not seen:
            seen.append(table)
            raise sa.exc.OperationalError(
                'DESCRIBE %s' % table, {}, pymysql.err.OperationalError(
                    1684, "Table '%s' was skipped since its definition is "
                    'being modified by concurrent DDL statement' % table))
        create_index(name, table, columns)

    monkeypatch.setattr(steps, 'create_index', half_made_once)
    try:
        migrate.upgrade(db)
        assert seen == ['resource_providers']
        assert migrate.current_revision(db) == migrate.head_revision()
        assert _differences(db) == []
    finally:
        db.dispose()


@pytest.mark.only_backends('mysql')
def test_a_read_of_the_revision_aborted_is_a_lost_race(backend, tmp_path,
                                                       monkeypatch):
    """On a Galera node another node's DDL aborts a transaction that only
    read the version table (error 1213, seen when three hosts ran ``db
    sync`` at once): the upgrade starts again, and reaches head."""
    db = _empty_database(backend, tmp_path)
    current_revision = migrate.current_revision
    aborted = []

    def aborted_once(database):
        if not aborted:
            aborted.append(database)
            raise sa.exc.OperationalError(
                'SELECT version_num', {}, pymysql.err.OperationalError(
                    1213, 'Deadlock found when trying to get lock; try '
                    'restarting transaction'))
        return current_revision(database)

    monkeypatch.setattr(migrate, 'current_revision', aborted_once)
    try:
        migrate.upgrade(db)
        assert aborted == [db]
        assert current_revision(db) == migrate.head_revision()
        assert _differences(db) == []
    finally:
        db.dispose()


def _waiting_for_a_lock(db):
    """How many sessions of ``db``'s database wait for a lock."""
    with db.engine.connect() as conn:
        return conn.exec_driver_sql(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type "
            "= 'Lock' AND datname = current_database()").scalar()


@pytest.mark.only_backends('postgresql')
def test_an_upgrade_gives_way_to_a_claim_it_would_deadlock_with(
        backend, tmp_path):
    """A claim (the reference's, during a takeover) holds allocations, and
    keeps them while the upgrade to head waits past ``deadlock_timeout``;
    then it updates resource_providers, which the upgrade's triggers
    would lock first (migration 0007). Had the upgrade kept
    resource_providers while it waited for allocations, the claim would
    close a cycle and PostgreSQL would end the claim; the upgrade gives
    way, the claim commits, and the upgrade then reaches head."""
    db = _empty_database(backend, tmp_path)
    upgraded = []
    try:
        migrate.upgrade(db, '0006')
        with db.engine.connect() as claim:
            claiming = claim.begin()
            claim.exec_driver_sql('LOCK TABLE allocations IN ROW EXCLUSIVE '
                                  'MODE')
            upgrade = threading.Thread(
                target=lambda: upgraded.append(migrate.upgrade(db)))
            upgrade.start()
            assert harness.wait_for(lambda: _waiting_for_a_lock(db) == 1,
                                    timeout=10)
            time.sleep(1.5)
            claim.exec_driver_sql('UPDATE resource_providers '
                                  'SET generation = generation + 1')
            claiming.commit()
        upgrade.join(60)
        assert upgraded == [migrate.head_revision()]
        assert _differences(db) == []
    finally:
        db.dispose()


@pytest.mark.only_backends('postgresql')
def test_tables_busy_past_the_patience_change_nothing(backend, tmp_path,
                                                     monkeypatch, capsys):
    """A transaction that keeps reading resource_providers keeps the
    upgrade from locking it: once TABLES_PATIENCE has passed, ``db sync``
    stops with one line saying so, and the schema is as it was."""
    db = _empty_database(backend, tmp_path)
    conf = tmp_path / 'placement.conf'
    conf.write_text('[placement_database]\nconnection = %s\n' % db.url)
    monkeypatch.setattr(migrate, 'TABLES_PATIENCE', 0)
    try:
        migrate.upgrade(db, '0006')
        with db.engine.connect() as reading, reading.begin():
            reading.exec_driver_sql('SELECT count(*) FROM resource_providers')
            with pytest.raises(SystemExit) as exited:
                cli.main(['--config-file', str(conf), 'db', 'sync'])
        assert exited.value.code == 1
        assert capsys.readouterr().err == (
            'placement-lite: error: the tables of the schema stayed busy '
            'for 0 seconds; nothing was changed: run it again when fewer '
            'requests are served\n')
        assert migrate.current_revision(db) == '0006'
        assert not sa.inspect(db.engine).has_table(tables.PROVIDER_WRITES)
    finally:
        db.dispose()


def test_db_sync_and_version_commands(backend, tmp_path):
    db = _empty_database(backend, tmp_path)
    db.dispose()
    conf = tmp_path / 'placement.conf'
    conf.write_text('[placement_database]\nconnection = %s\n' % db.url)
    command = [os.path.join(BIN, 'placement-lite'), '--config-file', str(conf)]

    before = subprocess.run(command + ['db', 'version'], capture_output=True,
                            text=True, check=True)
    synced = subprocess.run(command + ['db', 'sync'], capture_output=True,
                            text=True, check=True)
    after = subprocess.run(command + ['db', 'version'], capture_output=True,
                           text=True, check=True)

    assert before.stdout.strip() == 'None'
    assert synced.stdout.strip() == migrate.head_revision()
    assert after.stdout.strip() == migrate.head_revision()


def test_own_revision_moves_out_of_alembic_version(backend, tmp_path):
    """A database placement_lite migrated before it kept its revision in a
    table of its own: db sync moves the revision there and leaves the
    reference's revision in alembic_version, which the schema has."""
    db = _empty_database(backend, tmp_path)
    try:
        migrate.upgrade(db)
        with db.engine.begin() as conn:
            conn.exec_driver_sql('DROP TABLE %s' % tables.VERSION_TABLE)
            conn.exec_driver_sql("UPDATE alembic_version SET version_num = "
                                 "'%s'" % migrate.head_revision())

        migrate.upgrade(db)

        assert migrate.current_revision(db) == migrate.head_revision()
        with db.engine.connect() as conn:
            assert conn.exec_driver_sql(
                'SELECT version_num FROM alembic_version').all() == [
                (tables.REFERENCE_HEAD,)]
    finally:
        db.dispose()


def test_the_version_table_holds_one_row(backend, tmp_path):
    """A version table alembic created (before placement_lite made its
    own) gets the ``one_row`` key on the next upgrade; a second revision
    is then refused, as one recorded by a process that lost a race."""
    db = _empty_database(backend, tmp_path)
    try:
        migrate.upgrade(db)
        with db.engine.begin() as conn:
            conn.exec_driver_sql('DROP TABLE %s' % tables.VERSION_TABLE)
            conn.exec_driver_sql(
                'CREATE TABLE %s (version_num VARCHAR(32) NOT NULL '
                'PRIMARY KEY)' % tables.VERSION_TABLE)
            conn.exec_driver_sql("INSERT INTO %s VALUES ('%s')" % (
                tables.VERSION_TABLE, migrate.head_revision()))

        migrate.upgrade(db)

        with pytest.raises(sa.exc.IntegrityError):
            with db.engine.begin() as conn:
                conn.exec_driver_sql(
                    "INSERT INTO %s (version_num) VALUES ('0001')"
                    % tables.VERSION_TABLE)
        with db.engine.connect() as conn:
            assert conn.exec_driver_sql(
                'SELECT version_num, one_row FROM %s' % tables.VERSION_TABLE
            ).all() == [(migrate.head_revision(), 'x')]
    finally:
        db.dispose()


@pytest.mark.only_backends('mysql')
def test_mysql_allocation_ratios_become_the_doubles_the_api_showed(backend):
    """A database at 0003 on MariaDB holds ratios in single precision (as
    the reference's does); 0004 makes each the double of the decimal the
    API showed, so capacities computed in SQL match: 10 x 0.7 is 7."""
    db = db_api.Database(harness.empty_database_url(backend))
    try:
        migrate.upgrade(db, revision='0003')
        with db.engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO resource_providers (id, uuid, name, generation, "
                "root_provider_id) VALUES (1, "
                "'5eed0000-0000-4000-a000-000000000001', 'rp', 1, 1)")
            conn.exec_driver_sql(
                'INSERT INTO inventories (resource_provider_id, '
                'resource_class_id, total, reserved, min_unit, max_unit, '
                'step_size, allocation_ratio) VALUES '
                '(1, 0, 10, 0, 1, 10, 1, 0.7), (1, 1, 100, 0, 1, 100, 1, 16.1)')
            assert conn.exec_driver_sql(
                'SELECT total * allocation_ratio FROM inventories '
                'ORDER BY resource_class_id').scalars().all()[0] < 7

        migrate.upgrade(db)

        with db.engine.connect() as conn:
            assert conn.exec_driver_sql(
                'SELECT allocation_ratio, total * allocation_ratio '
                'FROM inventories ORDER BY resource_class_id').all() == [
                (0.7, 7.0), (16.1, 100 * 16.1)]
        env = harness.Environment(backend, database_url=db.url)
        try:
            status, _headers, body = env.request(
                'GET', '/allocation_candidates?resources=VCPU:7',
                version='1.20')
        finally:
            env.close()
        assert status == 200 and len(body['allocation_requests']) == 1
    finally:
        db.dispose()



def test_standard_names_without_a_creation_time_get_one(backend, tmp_path):
    """Before 0005 the standard names were added without a creation time,
    which the reference cannot list; 0005 gives them the upgrade's time and
    leaves the times already recorded alone."""
    db = _empty_database(backend, tmp_path)
    try:
        migrate.upgrade(db, revision='0004')
        with db.engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO traits (name, created_at) VALUES "
                "('HW_CPU_X86_AVX2', NULL), "
                "('CUSTOM_OLD', '2020-01-02 03:04:05')")
            conn.exec_driver_sql(
                "INSERT INTO resource_classes (id, name) VALUES (0, 'VCPU')")
        before = lookups.utcnow().replace(microsecond=0)

        migrate.upgrade(db)

        with db.engine.connect() as conn:
            traits = dict(conn.execute(sa.select(
                tables.traits.c.name, tables.traits.c.created_at)).all())
            vcpu = conn.execute(sa.select(
                tables.resource_classes.c.created_at)).scalar_one()
        assert traits['CUSTOM_OLD'] == datetime.datetime(2020, 1, 2, 3, 4, 5)
        assert before <= traits['HW_CPU_X86_AVX2'] <= lookups.utcnow()
        assert vcpu == traits['HW_CPU_X86_AVX2']
    finally:
        db.dispose()
