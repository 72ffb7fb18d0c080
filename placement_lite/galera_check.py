"""``placement-lite galera-check``: HAProxy's health check of a MariaDB
Galera node.

HAProxy's ``mysql-check`` only logs in, and a Galera node that is up but
not Synced (joining, catching up, a donor, cut off from the cluster's
primary component) accepts logins and refuses queries (1047, "WSREP has
not yet prepared node for application use"). So this serves HTTP beside
the node, as the clustercheck scripts operators run from xinetd do: each
request connects to the node and is answered 200 when the node is Synced
and ready, 503 when it is anything else or does not answer.
``etc/haproxy-placement-galera.cfg`` checks it with ``option httpchk``.
"""

import http.server

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from placement_lite.db import galera


def node_is_synced(engine):
    """(whether the node is Synced and ready, a line saying its state)."""
    try:
        with engine.connect() as conn:
            state, name, ready = galera.node_state(conn)
    except sa.exc.SQLAlchemyError as exc:
        reason = str(getattr(exc, 'orig', exc)).strip().splitlines()[0]
        return False, 'Galera node does not answer: %s' % reason
    if state is None:
        return False, 'Not a Galera node (wsrep is off).'
    if state == galera.SYNCED and ready == 'ON':
        return True, 'Galera node is Synced.'
    return False, 'Galera node is not Synced: %s (ready: %s).' % (name, ready)


def check_engine(url, timeout):
    """An engine on the node: a new connection for each check, given up
    after ``timeout`` seconds."""
    return sa.create_engine(url, poolclass=NullPool, connect_args={
        'connect_timeout': timeout, 'read_timeout': timeout})


class _Handler(http.server.BaseHTTPRequestHandler):
    engine = None  # set on the subclass made by serve()

    def _answer(self, body=True):
        synced, line = node_is_synced(self.engine)
        payload = (line + '\r\n').encode()
        self.send_response(200 if synced else 503)
        self.send_header('Content-Type', 'text/plain')
        self.send_header('Content-Length', str(len(payload)))
        self.send_header('Connection', 'close')
        self.end_headers()
        if body:
            self.wfile.write(payload)

    def do_GET(self):
        self._answer()

    def do_OPTIONS(self):
        self._answer()

    def do_HEAD(self):
        self._answer(body=False)

    def log_message(self, format, *args):
        """Nothing: HAProxy asks every second or so."""


def serve(url, host, port, timeout=2.0):
    """Answer health checks of the node at ``url`` on ``host``:``port``
    until interrupted."""
    handler = type('Handler', (_Handler,), {
        'engine': check_engine(url, timeout)})
    server = http.server.ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
