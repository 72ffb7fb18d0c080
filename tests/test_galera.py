"""placement_lite on a three-node MariaDB Galera cluster (tests/harness.py
:class:`GaleraCluster`, on 127.0.0.1).

- Claims on every node at once: one uwsgi server per node, clients spread
  over the three; certification conflicts between nodes are tried again,
  so every answer is 204 or 409, nothing is over-committed, the cluster
  holds exactly what was acknowledged, and the three nodes hold the same
  rows.
- Start-up: one server per node, all started at once on an empty database,
  with ``sync_on_startup`` or after three ``placement-lite db sync`` run
  at once: every server serves.
- Failover: etc/haproxy-placement-galera.cfg in front of the nodes, each
  checked by ``placement-lite galera-check``; the active node is killed
  (SIGKILL) under load: only requests answered within the check's
  detection time get a 503, none after, and every acknowledged write is
  there; the node catches up (IST) and is checked Synced again.
"""

import os
import subprocess
import time

import os_traits
import pymysql
import pytest

from placement_lite import errors
from placement_lite.db import api as db_api
from placement_lite.db import migrate
from placement_lite.domain import standard_names
from tests import claims
from tests import harness
from tests import servers

pytestmark = [pytest.mark.needs('mariadb', 'galera'), pytest.mark.slow]

CLIENTS = 12
LOAD_SECONDS = 5.0
#: The tables a claim writes, compared node by node.
CLAIMED_TABLES = ('resource_providers', 'inventories', 'allocations',
                  'consumers', 'projects', 'users')
#: HAProxy's detection of a dead node (inter 1s, fall 2), plus the time a
#: request sent just before takes to fail, plus a loaded machine's slack.
DETECTION = 2.0
SLACK = 3.0


@pytest.fixture(scope='module')
def cluster():
    cluster = harness.GaleraCluster()
    yield cluster
    cluster.destroy()


def new_database(cluster, name):
    """A migrated database with the standard names; its URL on each node."""
    urls = cluster.create_database(name)
    database = db_api.Database(urls[0])
    migrate.upgrade(database)
    standard_names.ensure_synced(database)
    database.dispose()
    return urls


def checksums(node, database):
    """CHECKSUM TABLE of the claimed tables on ``node``, once the node has
    applied every transaction the cluster committed before."""
    conn = pymysql.connect(unix_socket=node.socket, user='root',
                           database=database)
    try:
        with conn.cursor() as cursor:
            cursor.execute('SET SESSION wsrep_sync_wait = 1')
            cursor.execute('CHECKSUM TABLE %s' % ', '.join(CLAIMED_TABLES))
            return [checksum for _table, checksum in cursor.fetchall()]
    finally:
        conn.close()


def retried(hosts):
    """Writes tried again after meeting a concurrent one, from the logs."""
    return sum(host.log_text().count('met a concurrent write')
               for host in hosts)


def _assert_nodes_agree(cluster, database, hosts):
    """Every node holds the same claimed tables of ``database``, and no
    service of ``hosts`` logged a problem."""
    first, *others = [checksums(node, database) for node in cluster.nodes]
    assert others == [first, first]
    for host in hosts:
        assert host.problems_in_log() == []


def test_claims_on_every_node_at_once(cluster):
    urls = new_database(cluster, 'claims')
    hosts = [servers.Uwsgi(url, processes=2) for url in urls]
    database = db_api.Database(urls[0])
    try:
        providers = claims.create_providers(hosts[0].port)
        deadline = time.monotonic() + LOAD_SECONDS
        clients = [claims.Client(hosts[seed % 3].port, providers, seed,
                                 deadline) for seed in range(CLIENTS)]
        elapsed = claims.run(clients, LOAD_SECONDS + 60)

        statuses = [answer.status for answer in claims.answers(clients)]
        print('\n%d clients on 3 nodes, %.1fs: %d requests, %d answered '
              '204, %d answered 409; %d writes tried again after a '
              'conflict' % (CLIENTS, elapsed, len(statuses),
                            statuses.count(204), statuses.count(409),
                            retried(hosts)))
        assert set(statuses) <= {204, 409}, '\n'.join([
            line for host in hosts for line in host.log_text().splitlines()
            if ('WARNING' in line or 'HTTP/1.1 503' in line)
            and not line.startswith('***')][-20:])
        assert statuses.count(204) > 0
        claims.assert_exact(database, hosts[0].port, providers, clients)
        _assert_nodes_agree(cluster, 'claims', hosts)
    finally:
        database.dispose()
        for host in hosts:
            host.cleanup()


def test_allocation_claims_on_every_node_at_once(cluster):
    """Claims of 1.43 (single, batches on distinct trees, batches in one
    aggregate) sent through every node at once until nothing fits: each
    node's service writes its own transactions, the cluster certifies them
    against each other, and still no inventory is over-committed, the
    database holds exactly the claims answered 200, every other answer is
    "nothing fits" or, for a claim the cluster refused on each attempt,
    "concurrent update" (try again), and the nodes agree."""
    urls = new_database(cluster, 'allocation_claims')
    hosts = [servers.Uwsgi(url, processes=2) for url in urls]
    database = db_api.Database(urls[0])
    try:
        racks = claims.put_in_racks(hosts[0].port, claims.create_providers(
            hosts[0].port, count=6))
        deadline = time.monotonic() + 60
        clients = [claims.AllocationClaimer(hosts[seed % 3].port, seed,
                                            deadline)
                   for seed in range(CLIENTS)]
        claims.run(clients, 120)

        # A claim whose transaction the cluster refused on each attempt
        # (certified against another node's) is told to try again, and
        # wrote nothing (the database holds exactly the claims answered
        # 200, below).
        retry = [answer for client in clients
                 for answer in client.unexpected
                 if answer[0] == 409 and answer[1]['errors'][0]['code']
                 == errors.CONCURRENT_UPDATE]
        assert [answer for client in clients
                for answer in client.unexpected if answer not in retry] == []
        held = claims.allocations_in_database(database)
        claims.assert_not_overcommitted(held)
        assert held == {consumer: allocation for client in clients
                        for consumer, allocation in client.claimed.items()}
        assert [providers for client in clients
                for providers in client.packed
                if not any(providers <= rack for rack in racks)] == []
        assert any(client.nothing_fit for client in clients)
        _assert_nodes_agree(cluster, 'allocation_claims', hosts)
    finally:
        database.dispose()
        for host in hosts:
            host.cleanup()


@pytest.mark.parametrize('sync', ['sync_on_startup', 'db sync'])
def test_servers_on_every_node_starting_together(cluster, sync):
    """Three servers of two lazy workers, one per node, on an empty
    database: six processes migrate it (sync_on_startup), or three
    ``placement-lite db sync`` at once do, then all add the standard
    names at the same moment."""
    name = 'startup_%s' % sync.replace(' ', '_')
    urls = cluster.create_database(name)
    extra = 'sync_on_startup = true\n' if sync == 'sync_on_startup' else ''
    hosts = [servers.Uwsgi(url, processes=2, lazy=True, start=False,
                           extra_conf=extra) for url in urls]
    try:
        if sync == 'db sync':
            syncs = [subprocess.Popen(
                [os.path.join(servers.BIN, 'placement-lite'), 'db', 'sync'],
                cwd=servers.REPO, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True,
                env=dict(os.environ, OS_PLACEMENT_CONFIG_DIR=host.workdir))
                for host in hosts]
            outputs = [process.communicate(timeout=180) for process in syncs]
            assert [(process.returncode, out.strip()) for process, (out, _)
                    in zip(syncs, outputs)] == [
                (0, migrate.head_revision())] * 3, outputs
        for host in hosts:
            host.launch()
        for host in hosts:
            host.wait_ready()
        for host in hosts:
            status, traits = servers.request(host.port, 'GET', '/traits')
            assert status == 200
            assert sorted(traits['traits']) == sorted(os_traits.get_traits())
            assert host.problems_in_log() == []
        for url in urls:
            database = db_api.Database(url)
            try:
                assert migrate.current_revision(database) == (
                    migrate.head_revision())
            finally:
                database.dispose()
    finally:
        for host in hosts:
            host.cleanup()


@pytest.mark.needs('haproxy')
def test_active_node_killed_behind_haproxy(cluster):
    urls = new_database(cluster, 'failover')
    checks = [servers.GaleraCheck(node) for node in cluster.nodes]
    proxy = servers.HAProxy(cluster.nodes, checks)
    active = cluster.nodes[0]
    server = servers.Uwsgi(proxy.url('failover'), processes=4)
    database = db_api.Database(urls[1])
    try:
        assert [check.status() for check in checks] == [
            (200, 'Galera node is Synced.\r\n')] * 3
        providers = claims.create_providers(server.port)
        writers, readers = claims.mixed_load(server.port, providers, 60)
        claims.start(writers + readers)
        time.sleep(2.0)
        active.stop('immediate')
        killed_at = time.monotonic()
        for client in writers + readers:
            client.deadline = killed_at + 8.0
        claims.finish(writers + readers, 90)
        down = checks[0].status()

        answers = claims.answers(writers + readers)
        unavailable = [answer.at - killed_at for answer in answers
                       if answer.status == 503]
        served = [answer.at - killed_at for answer in answers
                  if answer.at > killed_at and answer.status in (200, 204)]
        print('\n%d requests, statuses %s; %d answered 503, the last '
              '%.2f s after the kill; first success after it %.2f s'
              % (len(answers), sorted({a.status for a in answers}),
                 len(unavailable), max(unavailable, default=0),
                 min(served)))
        assert {answer.status for answer in answers} <= {
            200, 204, 409, 503}
        assert max(unavailable, default=0) < DETECTION + SLACK
        assert [answer for answer in answers if answer.status == 503
                and answer.error['title'] != 'Service Unavailable'] == []
        assert max(served) > DETECTION + SLACK
        assert down[0] == 503
        assert down[1].startswith('Galera node does not answer: ')
        claims.assert_whole(database, writers)
        assert 'Traceback' not in server.log_text()

        active.start()
        cluster.wait_synced()
        assert checks[0].status() == (200, 'Galera node is Synced.\r\n')
        assert 'IST received' in active.log_text()
    finally:
        database.dispose()
        server.cleanup()
        proxy.stop()
        for check in checks:
            check.stop()


def test_galera_check_of_a_server_without_galera():
    check = servers.GaleraCheck(harness.mariadb_server())
    try:
        assert check.status() == (503, 'Not a Galera node (wsrep is off).\r\n')
    finally:
        check.stop()
