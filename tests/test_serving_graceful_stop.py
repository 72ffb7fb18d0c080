"""Stopping uwsgi (SIGTERM: systemd's stop, a container runtime's, a
rolling restart) lets each worker finish the request it is handling.

A request is held in the middle of its transaction: the test locks the
provider row its write must update, so the request is inside the worker,
its transaction open, when SIGTERM arrives. The lock is released a moment
later. The request must then be answered in full (200, its write
committed), and uwsgi must exit by itself. Both shipped lines: uwsgi's
HTTP router, and the uwsgi socket behind nginx.
"""

import concurrent.futures
import time

import pytest
import sqlalchemy as sa

from tests import harness
from tests import servers

PROVIDER = '5a7e3c8e-2f4b-4c1d-9a0e-6b3f2d1c0e9a'
#: How long the provider row stays locked after SIGTERM.
HELD = 1.5

pytestmark = [pytest.mark.slow, pytest.mark.needs('postgresql')]


@pytest.fixture(params=['uwsgi', pytest.param(
    'behind-nginx', marks=pytest.mark.needs('nginx'))])
def line(request):
    """(uwsgi instance, the port clients use) of one shipped line, on a
    fresh PostgreSQL database."""
    url = harness.create_postgres_database(
        'graceful_%s' % request.param.replace('-', '_'), migrated=True)
    server = servers.Uwsgi(url, section=request.param, processes=2)
    front = None
    if request.param == 'behind-nginx':
        front = servers.Nginx([server.port])
    try:
        yield server, (front.port if front else server.port), url
    finally:
        if front:
            front.stop()
        server.cleanup()


def test_sigterm_lets_the_request_in_hand_finish(line):
    server, port, url = line
    status, _body = servers.request(port, 'POST', '/resource_providers',
                                    {'name': 'held', 'uuid': PROVIDER})
    assert status == 200
    engine = sa.create_engine(url)
    with engine.connect() as locker, \
            concurrent.futures.ThreadPoolExecutor(1) as pool:
        with locker.begin():
            locker.execute(sa.text(
                'SELECT id FROM resource_providers WHERE uuid = :uuid '
                'FOR UPDATE'), {'uuid': PROVIDER})
            held = pool.submit(
                servers.request, port, 'PUT',
                '/resource_providers/%s/inventories' % PROVIDER,
                {'resource_provider_generation': 0,
                 'inventories': {'VCPU': {'total': 8}}})
            assert harness.wait_for(
                lambda: harness.postgres_lock_waits(engine), timeout=30)
            stopped_at = time.monotonic()
            server.process.terminate()
            time.sleep(HELD)
            assert server.process.poll() is None, server.log_text()
            assert not held.done()
        status, body = held.result(timeout=30)
        server.process.wait(timeout=30)
        stopped_after = time.monotonic() - stopped_at
    with engine.connect() as conn:
        totals = conn.execute(sa.text(
            'SELECT i.total FROM inventories i JOIN resource_providers p '
            'ON p.id = i.resource_provider_id WHERE p.uuid = :uuid'),
            {'uuid': PROVIDER}).scalars().all()
    engine.dispose()
    print('\nthe request in hand answered %d; uwsgi gone %.1f s after '
          'SIGTERM (%.1f s of it waiting for the lock)'
          % (status, stopped_after, HELD))
    assert status == 200, body
    assert body['inventories']['VCPU']['total'] == 8
    assert totals == [8]
    assert 'Traceback' not in server.log_text()

