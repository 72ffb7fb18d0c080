"""PostgreSQL: the logs of migration 0007, which processes read to bring
what they keep up to date (db/cloud/reads.py): every statement writing
a provider's row or its allocations logs the provider, whichever service
writes; every one writing what providers are (not what they use) logs
its transaction; both are trimmed of what no process reads any more."""

import importlib

import pytest
import sqlalchemy as sa

from placement_lite.db import tables
from placement_lite.db.cloud import reads
from tests import candidate_worlds as worlds

pytestmark = pytest.mark.only_backends('postgresql')

MIGRATION = importlib.import_module(
    'placement_lite.migrations.versions.0007_provider_writes')
LOG = tables.provider_writes
STRUCTURE = tables.structure_writes
RP = tables.resource_providers
ALLOC = tables.allocations


def _logged(conn):
    """{(transaction id, provider id)} in the log."""
    return set(conn.execute(sa.select(LOG.c.transaction_id,
                                      LOG.c.provider_id)).all())


def _in_one_transaction(db, write):
    """The log's rows added by ``write(conn)``, run in one transaction,
    and that transaction's id."""
    with db.writer() as conn:
        before = _logged(conn)
    with db.writer() as conn:
        write(conn)
        transaction = conn.exec_driver_sql(
            'SELECT pg_current_xact_id()::text::bigint').scalar()
    with db.writer() as conn:
        return _logged(conn) - before, transaction


def test_every_write_of_a_provider_or_its_allocations_is_logged(environment):
    db = environment.db
    ids = worlds.load_into_db(db, [
        {'name': 'cn1', 'inventories': {'VCPU': 8}},
        {'name': 'cn2', 'inventories': {'VCPU': 8}},
        {'name': 'numa', 'parent': 'cn2', 'inventories': {'VCPU': 2}}])
    cn1, cn2, numa = ids['cn1'], ids['cn2'], ids['numa']

    def allocate(conn):
        conn.execute(ALLOC.insert(), [
            {'resource_provider_id': provider, 'consumer_id': 'c',
             'resource_class_id': 0, 'used': 1} for provider in (cn1, numa)])

    def bump(conn):
        conn.execute(RP.update().where(RP.c.id == cn2).values(
            generation=RP.c.generation + 1))

    def use_more(conn):
        conn.execute(ALLOC.update().where(ALLOC.c.consumer_id == 'c')
                     .values(used=2))

    def release(conn):
        conn.execute(ALLOC.delete().where(ALLOC.c.consumer_id == 'c'))

    def delete_numa(conn):
        conn.execute(tables.inventories.delete().where(
            tables.inventories.c.resource_provider_id == numa))
        conn.execute(RP.delete().where(RP.c.id == numa))

    for write, written in ((allocate, {cn1, numa}), (bump, {cn2}),
                           (use_more, {cn1, numa}), (release, {cn1, numa}),
                           (delete_numa, {numa})):
        logged, transaction = _in_one_transaction(db, write)
        assert logged == {(transaction, provider) for provider in written}
    # A provider created is logged by its own transaction.
    created = worlds.load_into_db(db, [{'name': 'cn3'}])['cn3']
    with db.writer() as conn:
        assert created in {provider for _t, provider in _logged(conn)}


def test_the_log_is_trimmed_of_what_no_process_reads(environment):
    kept = MIGRATION.KEPT_TRANSACTIONS
    with environment.db.writer() as conn:
        conn.execute(LOG.delete())
        conn.execute(STRUCTURE.delete())
        conn.execute(LOG.insert(), [
            {'transaction_id': transaction, 'provider_id': 1}
            for transaction in (10, 99, 100, 150)])
        conn.execute(STRUCTURE.insert(), [
            {'transaction_id': transaction} for transaction in (99, 100)])
        conn.execute(sa.text('SELECT %s(:newest)' % MIGRATION.TRIM),
                     {'newest': kept + 100})
        assert _logged(conn) == {(100, 1), (150, 1)}
        assert conn.execute(sa.select(
            STRUCTURE.c.transaction_id)).scalars().all() == [100]


def test_the_triggers_are_those_a_process_looks_for(environment):
    """A process reads the logs only when every trigger writing them is
    there (reads.LOGGING_TRIGGERS)."""
    with environment.db.writer() as conn:
        found = {name for name in conn.exec_driver_sql(
            'SELECT tgname FROM pg_trigger').scalars()
            if name.startswith('placement_lite_')}
    assert found == set(reads.LOGGING_TRIGGERS)


def _structure_logged(db, write):
    """Whether ``write(conn)``, run in one transaction, is logged as a
    write of what providers are."""
    with db.writer() as conn:
        write(conn)
        transaction = conn.exec_driver_sql(
            'SELECT pg_current_xact_id()::text::bigint').scalar()
    with db.writer() as conn:
        return conn.execute(sa.select(STRUCTURE.c.transaction_id).where(
            STRUCTURE.c.transaction_id == transaction)).first() is not None


def test_what_providers_are_is_logged_apart_from_what_they_use(environment):
    db = environment.db
    ids = worlds.load_into_db(db, [
        {'name': 'cn1', 'inventories': {'VCPU': 8}, 'aggregates': ['a']},
        {'name': 'cn2', 'inventories': {'VCPU': 8}},
        {'name': 'numa', 'parent': 'cn2'}])
    cn1, cn2, numa = ids['cn1'], ids['cn2'], ids['numa']
    rpa = tables.resource_provider_aggregates

    def bump(conn, provider):
        conn.execute(RP.update().where(RP.c.id == provider).values(
            generation=RP.c.generation + 1))

    written = {
        'an allocation': (lambda conn: conn.execute(ALLOC.insert().values(
            resource_provider_id=cn1, consumer_id='c', resource_class_id=0,
            used=1)), False),
        'a generation': (lambda conn: bump(conn, cn1), False),
        'an allocation deleted': (lambda conn: conn.execute(
            ALLOC.delete()), False),
        'an inventory': (lambda conn: (bump(conn, cn1), conn.execute(
            tables.inventories.update().where(
                tables.inventories.c.resource_provider_id == cn1).values(
                total=16))), True),
        'a membership': (lambda conn: conn.execute(rpa.delete().where(
            rpa.c.resource_provider_id == cn1)), True),
        'a trait': (lambda conn: (bump(conn, cn2), conn.execute(
            tables.resource_provider_traits.insert().values(
                resource_provider_id=cn2, trait_id=1))), True),
        'a parent': (lambda conn: conn.execute(
            RP.update().where(RP.c.id == numa).values(
                parent_provider_id=cn1, root_provider_id=cn1)), True),
    }
    assert {what: _structure_logged(db, write)
            for what, (write, _logged) in written.items()} == {
        what: logged for what, (_write, logged) in written.items()}


def test_the_logs_take_the_ids_they_are_given(environment):
    """No sequence behind the logs' keys: each row is a transaction's own
    id (and a provider's)."""
    with environment.db.writer() as conn:
        defaults = conn.execute(sa.text(
            'SELECT table_name, column_name, column_default '
            'FROM information_schema.columns '
            'WHERE table_name IN (:log, :structure)'),
            {'log': tables.PROVIDER_WRITES,
             'structure': tables.STRUCTURE_WRITES}).all()
    assert sorted(defaults) == [
        (tables.PROVIDER_WRITES, 'provider_id', None),
        (tables.PROVIDER_WRITES, 'transaction_id', None),
        (tables.STRUCTURE_WRITES, 'transaction_id', None)]
