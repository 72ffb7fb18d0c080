"""A worker that dies in the middle of a request, on every serving line.

A write is held inside the application: the test locks the provider row
it must update (PostgreSQL), so the worker that took it waits in its
transaction. That worker is then killed as the OOM killer or a
segmentation fault would kill it (SIGKILL, SIGSEGV), and its client must
know within DEADLINE that no answer will come:

- uwsgi's HTTP router closes the connection without an answer (it has no
  way to answer). It kept the connection for the client's next request
  and closed it 60 s later (its http-timeout): placement_lite now resets
  the connection of a worker that dies (placement_lite/worker_death.py);
- ``placement-lite serve`` is one process: it closes the connection as it
  dies, and nothing starts it again.

The write is not applied; on the uwsgi lines the master starts another
worker and the next request is served. Behind nginx the client does not
even see it: nginx sends the request, whatever its method, to the other
host, which applies it once; nginx answers 502, in Placement's format,
only when no host is left. And only a worker that dies resets its
connection: a large answer to a slow client arrives whole.
"""

import concurrent.futures
import contextlib
import http.client
import json
import os
import resource
import signal
import socket
import time
import uuid

import pytest
import sqlalchemy as sa

from placement_lite.db import lookups
from placement_lite.db import tables
from tests import harness
from tests import servers

pytestmark = [pytest.mark.slow, pytest.mark.needs('postgresql')]

PROVIDER = '0c4b2d6e-8f1a-4e3b-9d5c-7a6f1e2b3c4d'
INVENTORIES = '/resource_providers/%s/inventories' % PROVIDER
#: VCPU's id among the resource classes.
VCPU = 0
#: Seconds within which the client must know its request is lost.
DEADLINE = 5.0
#: The connection closed without an answer.
CLOSED = 'closed'
BAD_GATEWAY = (502, {'errors': [{
    'status': 502, 'title': 'Bad Gateway',
    'detail': 'No API host answered the request: none could be reached, '
              'or the one handling it failed.'}]})


class Line:
    """One serving line on ``db_url``: uwsgi's router; nginx in front of
    two API hosts; ``placement-lite serve``."""

    def __init__(self, name, db_url):
        self.hosts = []
        self.nginx = None
        self.dev = None
        if name == 'router':
            self.hosts = [servers.Uwsgi(db_url, processes=2)]
            self.port = self.hosts[0].port
        elif name == 'nginx':
            self.hosts = [servers.Uwsgi(db_url, section='behind-nginx',
                                        processes=2) for _ in range(2)]
            self.nginx = servers.Nginx([host.port for host in self.hosts])
            self.port = self.nginx.port
        else:
            self.dev = servers.DevServer(db_url)
            self.port = self.dev.port

    def in_a_request(self):
        """{host index: pids of its processes holding a request}; the
        development server is host 0."""
        if self.dev:
            holding = {0: servers.holding_connections(
                [self.dev.process.pid], self.dev.port)}
        else:
            holding = {index: host.workers_in_a_request()
                       for index, host in enumerate(self.hosts)}
        return {index: pids for index, pids in holding.items() if pids}

    def stop(self):
        if self.nginx:
            self.nginx.stop()
        for host in self.hosts:
            host.cleanup()
        if self.dev:
            self.dev.stop()


@contextlib.contextmanager
def started(name):
    """(Line, engine on its fresh database) with PROVIDER created."""
    db = harness.fresh_database('postgresql')
    db.dispose()
    line = Line(name, db.url)
    engine = sa.create_engine(db.url)
    try:
        assert servers.request(line.port, 'POST', '/resource_providers', {
            'name': 'held', 'uuid': PROVIDER})[0] == 200
        yield line, engine
    finally:
        engine.dispose()
        line.stop()


@pytest.fixture(scope='module', autouse=True)
def no_core_files():
    """A process killed by SIGSEGV leaves no core file in the tree."""
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
    yield
    resource.setrlimit(resource.RLIMIT_CORE, (soft, hard))


@contextlib.contextmanager
def provider_locked(engine):
    """PROVIDER's row locked, for as long as the block runs."""
    with engine.connect() as conn, conn.begin():
        conn.execute(sa.text('SELECT id FROM resource_providers '
                             'WHERE uuid = :uuid FOR UPDATE'),
                     {'uuid': PROVIDER})
        yield


def send(port, method, body, timeout):
    """(what came back: (status, body) or CLOSED, when it came)."""
    try:
        outcome = servers.request(port, method, INVENTORIES, body,
                                  timeout=timeout)
    except http.client.RemoteDisconnected:
        outcome = CLOSED
    return outcome, time.monotonic()


def held_worker(line, engine):
    """(host index, pid) of the process whose request waits for the lock."""
    assert harness.wait_for(
        lambda: harness.postgres_lock_waits(engine) == 1, timeout=30)
    ((host, (pid,)),) = line.in_a_request().items()
    return host, int(pid)


def provider_in_database(engine):
    """(generation, {resource class id: total}) of PROVIDER."""
    with engine.connect() as conn:
        generation, provider_id = conn.execute(sa.text(
            'SELECT generation, id FROM resource_providers WHERE uuid = '
            ':uuid'), {'uuid': PROVIDER}).one()
        totals = dict(conn.execute(sa.text(
            'SELECT resource_class_id, total FROM inventories WHERE '
            'resource_provider_id = :id'), {'id': provider_id}).all())
    return generation, totals


@pytest.mark.parametrize('signum', [signal.SIGKILL, signal.SIGSEGV],
                         ids=['SIGKILL', 'SIGSEGV'])
@pytest.mark.parametrize('name', ['router', 'dev'])
def test_the_client_of_a_dying_worker_knows_at_once(name, signum):
    with started(name) as (line, engine), \
            concurrent.futures.ThreadPoolExecutor(1) as pool:
        with provider_locked(engine):
            sent = pool.submit(send, line.port, 'POST', {
                'resource_class': 'VCPU', 'total': 8,
                'resource_provider_generation': 0}, 2 * DEADLINE)
            host, pid = held_worker(line, engine)
            killed_at = time.monotonic()
            os.kill(pid, signum)
            outcome, answered_at = sent.result()
            assert harness.postgres_lock_waits(engine) == 1
        waited = answered_at - killed_at
        print('\n[%s, %s] %s %.3f s after the kill' % (
            name, signal.Signals(signum).name, outcome, waited))
        assert outcome == CLOSED
        assert waited < DEADLINE
        # Its transaction was never committed.
        assert harness.wait_for(
            lambda: harness.postgres_lock_waits(engine) == 0, timeout=30)
        assert provider_in_database(engine) == (0, {})
        if line.dev:
            assert line.dev.process.wait(timeout=30) == -signum
            with pytest.raises(ConnectionRefusedError):
                servers.request(line.port, 'GET', INVENTORIES)
            return
        # The master saw it die, and started another.
        assert harness.wait_for(
            lambda: 'Respawned uWSGI worker' in line.hosts[host].log_text())
        assert '(pid: %d) died' % pid in line.hosts[host].log_text()
        assert servers.request(line.port, 'GET', INVENTORIES) == (
            200, {'resource_provider_generation': 0, 'inventories': {}})


#: A write of PROVIDER's inventory by each method, and its answer.
WRITES = {
    'PUT': ({'resource_provider_generation': 0,
             'inventories': {'VCPU': {'total': 8}}},
            (200, {'resource_provider_generation': 1, 'inventories': {
                'VCPU': {'total': 8, 'reserved': 0, 'min_unit': 1,
                         'max_unit': 2147483647, 'step_size': 1,
                         'allocation_ratio': 1.0}}})),
    'POST': ({'resource_class': 'VCPU', 'total': 8,
              'resource_provider_generation': 0},
             (201, {'resource_provider_generation': 1,
                    'total': 8, 'reserved': 0,
                    'min_unit': 1, 'max_unit': 2147483647, 'step_size': 1,
                    'allocation_ratio': 1.0})),
}


@pytest.mark.needs('nginx')
@pytest.mark.parametrize('method', sorted(WRITES))
def test_nginx_sends_a_write_whose_worker_died_to_the_other_host(method):
    """The write the dead worker held goes to the other host, which
    applies it once the lock is released (the dead worker's transaction is
    rolled back: it never committed). A POST too: had the first try
    committed, the second would be refused, its generation gone."""
    body, answer = WRITES[method]
    with started('nginx') as (line, engine), \
            concurrent.futures.ThreadPoolExecutor(1) as pool:
        with provider_locked(engine):
            sent = pool.submit(send, line.port, method, body, 60)
            host, pid = held_worker(line, engine)
            os.kill(pid, signal.SIGKILL)
            # The other host's worker waits for the lock too, behind the
            # dead worker's session.
            assert harness.wait_for(
                lambda: harness.postgres_lock_waits(engine) == 2,
                timeout=30)
            assert list(line.in_a_request()) == [1 - host]
        outcome, _answered_at = sent.result()
        assert outcome == answer
        assert provider_in_database(engine) == (1, {VCPU: 8})


@pytest.mark.needs('nginx')
def test_nginx_answers_502_in_placements_format_when_no_host_is_left():
    with started('nginx') as (line, engine):
        for host in line.hosts:
            host.kill()
        assert servers.request(line.port, 'GET', INVENTORIES) == BAD_GATEWAY


#: Providers listed by the large answer (with PROVIDER: 3.4 MB of JSON).
LISTED = 6000


def test_a_large_answer_to_a_slow_client_arrives_whole():
    """Once the answer is written the worker's connection closes as by
    default again. Left at a linger of 0 s, the close threw away what the
    router had not read yet: this client got 1.4 MB of the 3.4 MB."""
    with started('router') as (line, engine):
        providers = tables.resource_providers
        with engine.begin() as conn:
            conn.execute(providers.insert(), [
                {'uuid': str(uuid.UUID(int=number)),
                 'name': 'listed-%05d-%s' % (number, 'x' * 180),
                 'generation': 0, 'created_at': lookups.utcnow()}
                for number in range(LISTED)])
            conn.execute(providers.update().where(
                providers.c.root_provider_id.is_(None)).values(
                    root_provider_id=providers.c.id))
        with socket.create_connection(('127.0.0.1', line.port),
                                      timeout=60) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(b'GET /resource_providers HTTP/1.1\r\n'
                         b'Host: placement\r\nX-Auth-Token: admin\r\n'
                         b'Connection: close\r\n\r\n')
            # The worker writes the answer while the client reads none.
            time.sleep(3)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
            response = http.client.HTTPResponse(sock)
            response.begin()
            body = json.loads(response.read())
    assert response.status == 200
    assert len(body['resource_providers']) == LISTED + 1
