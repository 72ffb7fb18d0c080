"""Reads from a streaming replica: ``[placement_database] slave_connection``.

The test starts a PostgreSQL primary and a replica of it made with
``pg_basebackup -R``, and placement_lite under uwsgi (etc/uwsgi.ini) with
``connection`` on the primary and ``slave_connection`` on the replica.
Allocation candidates, the provider listing and project usages come from
the replica; everything else (one provider and its usages, every write and
every check a write makes) from the primary. The replica's replay is paused to show which is which, and to
make its candidates stale: claims made from them are refused (409), never
over-committed.
"""

import time
import uuid

import pytest

from placement_lite.db import api as db_api
from placement_lite.db import migrate
from tests import claims
from tests import harness
from tests import servers

pytestmark = [pytest.mark.slow, pytest.mark.needs('postgresql')]

CLAIMERS = 8
LOAD_SECONDS = 6.0


class Replicated:
    """A primary, its replica, and placement_lite reading from both."""

    def __init__(self):
        self.primary = harness.PostgresServer(synchronous_commit=True)
        url = self.primary.create_database('placement')
        self.database = db_api.Database(url)
        migrate.upgrade(self.database)
        self.replica = harness.PostgresServer(primary=self.primary)
        self.server = servers.Uwsgi(
            url, processes=2,
            extra_conf='slave_connection = %s\n' % self.replica.url(
                'placement'))
        self.port = self.server.port

    def _on_replica(self, statement):
        with self.replica.admin_engine().connect() as conn:
            return conn.exec_driver_sql(statement).scalar()

    def pause_replay(self):
        self._on_replica('SELECT pg_wal_replay_pause()')

    def resume_replay(self):
        self._on_replica('SELECT pg_wal_replay_resume()')

    def caught_up(self):
        """Whether the replica has replayed everything the primary wrote."""
        with self.primary.admin_engine().connect() as conn:
            written = conn.exec_driver_sql(
                'SELECT pg_current_wal_lsn()').scalar()
        return self._on_replica(
            "SELECT pg_last_wal_replay_lsn() >= '%s'::pg_lsn" % written)

    def close(self):
        self.server.cleanup()
        self.database.dispose()
        self.replica.destroy()
        self.primary.destroy()


@pytest.fixture(scope='module')
def replicated():
    setup = Replicated()
    yield setup
    setup.close()


def _listed(port, path, key='resource_providers'):
    status, body = servers.request(port, 'GET', path)
    assert status == 200
    return {provider['uuid'] for provider in body[key]}


def _candidate_roots(port):
    status, body = servers.request(
        port, 'GET', '/allocation_candidates?resources=VCPU:1')
    assert status == 200
    return set(body['provider_summaries'])


def test_reads_come_from_the_replica_until_it_replays(replicated):
    port = replicated.port
    replicated.pause_replay()
    try:
        [provider] = claims.create_providers(port, count=1, prefix='late')
        # Writes, and reads of one provider, are the primary's.
        status, shown = servers.request(port, 'GET',
                                        '/resource_providers/' + provider)
        assert (status, shown['uuid']) == (200, provider)
        consumer = str(uuid.uuid4())
        status, _ = servers.request(
            port, 'PUT', '/allocations/' + consumer,
            dict(claims.PROJECT, consumer_generation=None, allocations={
                provider: {'resources': {'VCPU': 2}}}))
        assert status == 204
        status, held = servers.request(port, 'GET', '/allocations/' + consumer)
        assert held['allocations'][provider]['resources'] == {'VCPU': 2}
        status, usages = servers.request(
            port, 'GET', '/resource_providers/%s/usages' % provider)
        assert (status, usages['usages']) == (200, {'VCPU': 2,
                                                    'MEMORY_MB': 0})
        # Listings, candidates and usages are the replica's.
        assert provider not in _listed(port, '/resource_providers')
        assert provider not in _candidate_roots(port)
        status, usages = servers.request(port, 'GET',
                                         '/usages?project_id=project')
        assert (status, usages) == (200, {'usages': {}})
    finally:
        replicated.resume_replay()
    assert harness.wait_for(replicated.caught_up, timeout=30)
    assert provider in _listed(port, '/resource_providers')
    assert provider in _candidate_roots(port)
    status, usages = servers.request(port, 'GET', '/usages?project_id=project')
    assert (status, usages) == (200, {'usages': {'VCPU': 2}})


def test_replication_lag_seen_by_a_listing(replicated):
    """How long a new provider takes to appear in the listing (printed)."""
    port = replicated.port
    lags = []
    for _ in range(5):
        [provider] = claims.create_providers(port, count=1, prefix='lag')
        created = time.monotonic()
        assert harness.wait_for(
            lambda: provider in _listed(port, '/resource_providers'),
            timeout=30, interval=0.001)
        lags.append(time.monotonic() - created)
    print('\nreplica lag seen by GET /resource_providers: %s ms' % ', '.join(
        '%.1f' % (1000 * lag) for lag in lags))


class CandidateClaimer(claims.Client):
    """Claims what the candidates it reads offer (two VCPUs and 512 MB)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.candidate_statuses = []

    def random_allocation(self):
        status, body = servers.request(
            self.port, 'GET',
            '/allocation_candidates?resources=VCPU:2,MEMORY_MB:512&limit=10')
        self.candidate_statuses.append(status)
        if status != 200 or not body['allocation_requests']:
            return super().random_allocation()
        chosen = self.random.choice(body['allocation_requests'])
        return {provider: entry['resources']
                for provider, entry in chosen['allocations'].items()}


def test_claims_from_stale_candidates_never_overcommit(replicated):
    port = replicated.port
    providers = claims.create_providers(port, prefix='stale')
    before = claims.allocations_in_database(replicated.database)
    assert harness.wait_for(replicated.caught_up, timeout=30)
    replicated.pause_replay()
    try:
        deadline = time.monotonic() + LOAD_SECONDS
        claimers = [CandidateClaimer(port, providers, seed, deadline)
                    for seed in range(CLAIMERS)]
        claims.run(claimers, LOAD_SECONDS + 60)
        # The replica still offers every provider whole.
        assert set(providers) <= _candidate_roots(port)
    finally:
        replicated.resume_replay()
    answers = claims.answers(claimers)
    statuses = [answer.status for answer in answers]
    print('\n%d claims from candidates read on a paused replica: %d '
          'answered 204, %d answered 409' % (
              len(statuses), statuses.count(204), statuses.count(409)))
    assert {status for claimer in claimers
            for status in claimer.candidate_statuses} == {200}
    assert set(statuses) <= {204, 409}
    assert statuses.count(409) > 0
    held = claims.allocations_in_database(replicated.database)
    claims.assert_not_overcommitted(held)
    made = {consumer: allocation for consumer, allocation in held.items()
            if consumer not in before}
    assert made == {consumer: allocation for claimer in claimers
                    for consumer, allocation in claimer.live.items()}
