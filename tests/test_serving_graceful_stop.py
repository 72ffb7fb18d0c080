"""Stopping uwsgi (SIGTERM: systemd's stop, a container runtime's, a
rolling restart) answers every request it accepted, those waiting in a
socket's queue for a free worker included (placement_lite/drain.py).

Both workers are held in the middle of a transaction: the test locks the
provider rows their writes must update. A third request then waits in the
queue: on the router line the router took it and passed it to the
workers' socket; behind nginx nginx did. SIGTERM comes, and once the
grace period is over the lock is released: all three requests must be
answered in full (200, their writes committed), then uwsgi exits by
itself and the next connection is refused. Left to uwsgi, the queued
request was reset when it exited.

During the grace period a host with a free worker answers /healthcheck
503 and every other request as before.
"""

import concurrent.futures
import time

import pytest
import sqlalchemy as sa

from tests import harness
from tests import servers

#: A provider per request: two held by the workers, one queued.
PROVIDERS = ['5a7e3c8e-2f4b-4c1d-9a0e-6b3f2d1c0e9%d' % n for n in range(3)]
#: [api] drain_grace_period of the test's host.
GRACE = 1.5
#: The requests held: one per worker, and one queued.
WORKERS = 2

pytestmark = [pytest.mark.slow, pytest.mark.needs('postgresql')]


@pytest.fixture(params=['uwsgi', pytest.param(
    'behind-nginx', marks=pytest.mark.needs('nginx'))])
def line(request):
    """(uwsgi instance, the port clients use, database URL) of one shipped
    line, on a fresh PostgreSQL database."""
    url = harness.create_postgres_database(
        'graceful_%s' % request.param.replace('-', '_'), migrated=True)
    server = servers.Uwsgi(url, section=request.param, processes=WORKERS,
                           drain_grace_period=GRACE)
    front = None
    if request.param == 'behind-nginx':
        front = servers.Nginx([server.port])
    try:
        yield server, (front.port if front else server.port), url
    finally:
        if front:
            front.stop()
        server.cleanup()


def _put_inventory(port, provider):
    return servers.request(
        port, 'PUT', '/resource_providers/%s/inventories' % provider,
        {'resource_provider_generation': 0,
         'inventories': {'VCPU': {'total': 8}}})


def test_sigterm_answers_every_request_accepted_then_refuses(line):
    server, port, url = line
    for provider in PROVIDERS:
        assert servers.request(port, 'POST', '/resource_providers', {
            'name': 'held-' + provider, 'uuid': provider})[0] == 200
    engine = sa.create_engine(url)
    with engine.connect() as locker, \
            concurrent.futures.ThreadPoolExecutor(len(PROVIDERS)) as pool:
        with locker.begin():
            locker.execute(sa.text(
                'SELECT id FROM resource_providers WHERE uuid IN :uuids '
                'FOR UPDATE').bindparams(sa.bindparam('uuids', expanding=True)),
                {'uuids': PROVIDERS})
            held = [pool.submit(_put_inventory, port, provider)
                    for provider in PROVIDERS[:WORKERS]]
            assert harness.wait_for(
                lambda: harness.postgres_lock_waits(engine) == WORKERS,
                timeout=30)
            queued = pool.submit(_put_inventory, port, PROVIDERS[WORKERS])
            time.sleep(0.5)
            stopped_at = time.monotonic()
            server.process.terminate()
            time.sleep(GRACE + 0.5)
            assert server.process.poll() is None, server.log_text()
            assert not queued.done()
        answers = [request.result(timeout=30) for request in held + [queued]]
        server.process.wait(timeout=30)
        stopped_after = time.monotonic() - stopped_at
    with engine.connect() as conn:
        totals = conn.execute(sa.text(
            'SELECT i.total FROM inventories i JOIN resource_providers p '
            'ON p.id = i.resource_provider_id')).scalars().all()
    engine.dispose()
    print('\nthe requests in hand and queued answered %s; uwsgi gone %.1f s '
          'after SIGTERM' % ([status for status, _ in answers], stopped_after))
    assert [status for status, _ in answers] == [200] * len(PROVIDERS)
    assert totals == [8] * len(PROVIDERS)
    if server.section == 'uwsgi':
        with pytest.raises(ConnectionRefusedError):
            servers.request(port, 'GET', '/')
    assert server.problems_in_log() == []


def test_the_grace_period_serves_while_readiness_fails():
    url = harness.create_postgres_database('graceful_readiness',
                                           migrated=True)
    server = servers.Uwsgi(url, processes=WORKERS, drain_grace_period=3)
    try:
        assert servers.request(server.port, 'GET', '/healthcheck') == (
            200, {'detailed': False, 'reasons': ['OK']})
        stopped_at = time.monotonic()
        server.process.terminate()
        assert harness.wait_for(lambda: servers.request(
            server.port, 'GET', '/healthcheck')[0] == 503, timeout=2)
        assert servers.request(server.port, 'GET', '/healthcheck') == (
            503, {'detailed': False, 'reasons': [
                'Stopping: serving the requests it accepted, then refusing '
                'new connections.']})
        assert servers.request(server.port, 'GET', '/resource_providers'
                               ) == (200, {'resource_providers': []})
        assert time.monotonic() - stopped_at < 3
        server.process.wait(timeout=30)
        with pytest.raises(ConnectionRefusedError):
            servers.request(server.port, 'GET', '/')
        assert server.problems_in_log() == []
    finally:
        server.cleanup()
