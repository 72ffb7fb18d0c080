"""placement_lite's writes cannot deadlock with a writer that locks in
another order: the reference, on the same database during a takeover,
bumps the generations of a claim's providers at the end of its
transaction, in the order of the request body (db/locks.py).

Each test holds one row the way the reference does, lets placement_lite's
write run into it, then has the holder lock a row placement_lite's write
needs as well. Had placement_lite kept what it locked while it waited,
that would close a cycle: PostgreSQL ends one side after
``deadlock_timeout``, InnoDB at once, and either logs the deadlock.
"""

import logging
import threading

import pytest
import sqlalchemy as sa

from placement_lite.db import tables
from tests import harness
from tests import metrics_scrape

pytestmark = [pytest.mark.mysql, pytest.mark.only_backends('postgresql',
                                                           'mysql')]

HOST = '10c00000-0000-4000-8000-000000000001'
NUMA = '10c00000-0000-4000-8000-000000000002'
CONSUMER = '10c00000-0000-4000-8000-0000000000c1'
PROJECT = '10c00000-0000-4000-8000-0000000000e1'
USER = '10c00000-0000-4000-8000-0000000000e2'
rp = tables.resource_providers


def _request(environment, method, path, body, version):
    status, _headers, answer = environment.request(method, path, body,
                                                   version=version)
    assert status in (200, 204), (method, path, status, answer)
    return answer


def _nested_host(environment):
    """A host with MEMORY_MB on its root and VCPU on its child (created
    after it: the child's id is the larger); {uuid: id}."""
    for uuid, name, parent in ((HOST, 'host', None), (NUMA, 'numa', HOST)):
        body = {'name': name, 'uuid': uuid}
        if parent:
            body['parent_provider_uuid'] = parent
        _request(environment, 'POST', '/resource_providers', body, '1.20')
    for uuid, inventories in ((HOST, {'MEMORY_MB': {'total': 4096}}),
                              (NUMA, {'VCPU': {'total': 8}})):
        _request(environment, 'PUT', '/resource_providers/%s/inventories'
                 % uuid, {'resource_provider_generation': 0,
                          'inventories': inventories}, '1.20')
    with environment.db.reader() as conn:
        return dict(conn.execute(sa.select(rp.c.uuid, rp.c.id)
                                 .where(rp.c.uuid.in_([HOST, NUMA]))).all())


def _waiting_for_a_lock(environment):
    """Whether some session of the database waits for a row lock."""
    with environment.db.reader() as conn:
        if environment.backend == 'postgresql':
            return conn.execute(sa.text(
                "SELECT count(*) FROM pg_stat_activity WHERE "
                "wait_event_type = 'Lock' AND datname = current_database()"
            )).scalar() > 0
        return conn.execute(sa.text(
            "SELECT count(*) FROM information_schema.innodb_trx "
            "WHERE trx_state = 'LOCK WAIT'")).scalar() > 0


def _bump(conn, provider_id):
    conn.execute(rp.update().where(rp.c.id == provider_id)
                 .values(generation=rp.c.generation + 1))


@pytest.mark.parametrize('write', ['claim', 'emptying claim'])
def test_a_claim_never_closes_a_cycle_of_lock_waits(backend, caplog, write):
    """The other writer holds the child (listed first in a nova body) and
    then bumps the root; the claim of both goes through after it, having
    waited without holding the root: no deadlock on either side. It
    waited once for the child's row (counted), but on MariaDB a claim
    inserting allocations: InnoDB makes it wait before it locks anything,
    in the foreign-key check of the insert, which takes a shared lock on
    each provider (PostgreSQL's key-share lock does not wait for a
    generation's update)."""
    environment = harness.Environment(backend, **{'metrics.enabled': True})
    caplog.set_level(logging.INFO, logger='placement_lite.db.api')
    try:
        ids = _nested_host(environment)
        body = {'allocations': {NUMA: {'resources': {'VCPU': 2}},
                                HOST: {'resources': {'MEMORY_MB': 512}}},
                'project_id': PROJECT, 'user_id': USER,
                'consumer_generation': None}
        if write == 'emptying claim':
            _request(environment, 'PUT', '/allocations/%s' % CONSUMER, body,
                     '1.28')
            body = {'allocations': {}, 'project_id': PROJECT,
                    'user_id': USER, 'consumer_generation': 1}
        answers = []
        with environment.db.engine.connect() as other:
            holding = other.begin()
            _bump(other, ids[NUMA])
            claim = threading.Thread(target=lambda: answers.append(
                environment.request('PUT', '/allocations/%s' % CONSUMER,
                                    body, version='1.28')[::2]))
            claim.start()
            harness.wait_for(lambda: _waiting_for_a_lock(environment),
                             timeout=10)
            _bump(other, ids[HOST])
            holding.commit()
        claim.join(30)
        assert answers == [(204, None)]
        assert [record.getMessage() for record in caplog.records
                if 'eadlock' in record.getMessage()] == []
        allocations = _request(environment, 'GET', '/allocations/%s'
                               % CONSUMER, None, '1.28')['allocations']
        if write == 'claim':
            assert {uuid: held['resources'] for uuid, held
                    in allocations.items()} == {
                NUMA: {'VCPU': 2}, HOST: {'MEMORY_MB': 512}}
        else:
            assert allocations == {}
        assert metrics_scrape.value(
            metrics_scrape.scrape(environment),
            'placement_db_lock_waits_total') == (
                0 if backend == 'mysql' and write == 'claim' else 1)
    finally:
        environment.close()
