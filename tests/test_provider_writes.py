"""PostgreSQL: the log of the providers each transaction wrote (migration
0007), which processes read to bring what they keep up to date
(db/cloud/reads.py): every statement writing a provider's row or its
allocations logs it, whichever service writes, and the log is trimmed of
what no process reads any more."""

import importlib

import pytest
import sqlalchemy as sa

from placement_lite.db import tables
from tests import candidate_worlds as worlds

pytestmark = pytest.mark.only_backends('postgresql')

MIGRATION = importlib.import_module(
    'placement_lite.migrations.versions.0007_provider_writes')
LOG = tables.provider_writes
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
        conn.execute(LOG.insert(), [
            {'transaction_id': transaction, 'provider_id': 1}
            for transaction in (10, 99, 100, 150)])
        conn.execute(sa.text('SELECT %s(:newest)' % MIGRATION.TRIM),
                     {'newest': kept + 100})
        assert _logged(conn) == {(100, 1), (150, 1)}
