"""Slow clients cannot hold the workers of the production line.

Fifty clients each send the headers of a POST and half its body, then
stall. nginx (etc/nginx-placement.conf) reads requests whole before it
passes them to a uwsgi worker (etc/uwsgi.ini:behind-nginx, four workers),
so the stalled bodies hold nginx connections only: a normal client is
answered at once.
"""

import socket
import time

import pytest

from tests import harness
from tests import servers

pytestmark = [pytest.mark.slow, pytest.mark.needs('nginx')]

STALLED_CLIENTS = 50


def _stall(port):
    """A connection that sent half of a POST body and then nothing."""
    body = b'{"name": "slow", "uuid": "%s"}' % (b'0' * 200)
    stalled = socket.create_connection(('127.0.0.1', port))
    stalled.sendall(
        b'POST /resource_providers HTTP/1.1\r\nHost: placement\r\n'
        b'X-Auth-Token: admin\r\nContent-Type: application/json\r\n'
        b'Content-Length: %d\r\n\r\n' % len(body) + body[:len(body) // 2])
    return stalled


def test_half_sent_bodies_do_not_hold_workers():
    db = harness.fresh_database('sqlite')
    host = servers.Uwsgi(db.url, section='behind-nginx', processes=4)
    nginx = servers.Nginx([host.port])
    stalled = []
    try:
        # Every worker has answered once (opened its database connection).
        for _ in range(8):
            assert servers.request(nginx.port, 'GET',
                                   '/resource_providers')[0] == 200
        stalled = [_stall(nginx.port) for _ in range(STALLED_CLIENTS)]
        time.sleep(0.5)
        started = time.monotonic()
        status, _body = servers.request(nginx.port, 'GET',
                                        '/resource_providers', timeout=60)
        waited = time.monotonic() - started
        print('\n%d stalled clients; a normal client waited %.3f s'
              % (STALLED_CLIENTS, waited))
        assert status == 200
        assert waited < 1.0
    finally:
        for connection in stalled:
            connection.close()
        nginx.stop()
        host.cleanup()
        db.dispose()
