"""The two services a differential run talks to, behind one interface.

- The reference (openstack-placement 16.0.0) runs under uwsgi from its own
  virtual environment, started once (as the benchmark starts it) and
  emptied between worlds by deleting the world's rows. It is sent each
  request over HTTP, as the bytes the request is made of.
- placement_lite runs in this process, with ``[api] enable_extensions =
  false``, on a fresh database per world, called at the WSGI level with
  the environ uwsgi builds for those bytes (PATH_INFO percent-decoded and
  tunnelled as latin-1, QUERY_STRING as sent).
"""

import dataclasses
import http.client
import io
import json
import socket
import tempfile
import urllib.parse

import sqlalchemy as sa

from tests import harness
from tests.bench import services as bench_services

#: Tables a world writes, children first (providers are deleted apart).
_WORLD_TABLES = ('allocations', 'inventories', 'resource_provider_traits',
                 'resource_provider_aggregates', 'placement_aggregates',
                 'consumers', 'projects', 'users', 'consumer_types')
#: Seconds the reference may take to answer one request.
_TIMEOUT = 60


@dataclasses.dataclass(frozen=True)
class Request:
    """One HTTP request: ``path`` holds the raw query string too."""

    method: str
    path: str
    headers: tuple = ()  # (name, value) pairs
    body: bytes = b''

    def line(self):
        """The request on one line, as curl-like text."""
        text = '%s %s' % (self.method, self.path)
        for name, value in self.headers:
            if name.lower() != 'accept':
                text += ' -H %r' % ('%s: %s' % (name, value))
        if self.body:
            text += ' -d %r' % self.body.decode('utf-8', 'replace')
        return text


@dataclasses.dataclass
class Response:
    status: int
    headers: list  # [(name, value)]
    body: bytes

    def header(self, name):
        values = [v for k, v in self.headers if k.lower() == name.lower()]
        return ', '.join(values) if values else None

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None


def environ_for(request):
    """The WSGI environ (without input and errors streams) a server
    builds for ``request``."""
    path, _sep, query = request.path.partition('?')
    environ = {
        'REQUEST_METHOD': request.method, 'SCRIPT_NAME': '',
        'PATH_INFO': urllib.parse.unquote_to_bytes(path).decode('latin-1'),
        'QUERY_STRING': query, 'SERVER_NAME': 'localhost',
        'SERVER_PORT': '80', 'SERVER_PROTOCOL': 'HTTP/1.1',
        'wsgi.url_scheme': 'http', 'wsgi.multithread': False,
        'wsgi.multiprocess': False, 'wsgi.run_once': False,
        'wsgi.version': [1, 0], 'REMOTE_ADDR': '127.0.0.1',
        'HTTP_HOST': 'localhost',
        'CONTENT_LENGTH': str(len(request.body)) if request.body else '',
    }
    for name, value in request.headers:
        key = name.upper().replace('-', '_')
        if key not in ('CONTENT_TYPE', 'CONTENT_LENGTH'):
            key = 'HTTP_' + key
        environ[key] = value
    return environ


def _response(status, headers, body, method):
    """``status`` is an int or WSGI's ``'200 OK'``."""
    # A server sends no body in answer to HEAD.
    return Response(int(str(status).split()[0]), [tuple(h) for h in headers],
                    b'' if method == 'HEAD' else body)


class Reference:
    """The reference under uwsgi (one process), on one database of
    ``backend`` for the whole run."""

    def __init__(self, backend):
        venv = bench_services.reference_venv(log=lambda _message: None)
        url = harness.empty_database_url(backend)
        self.service = bench_services.reference(
            harness._free_port(), url,
            tempfile.mkdtemp(prefix='differential-reference-'), venv,
            processes=1)
        self.service.start()
        #: The reference's database, read and emptied from here: the
        #: reference keeps no names between requests (its caches live in
        #: each request's context), so rows deleted behind its back leave
        #: nothing stale.
        self.engine = sa.create_engine(url)

    def reset(self):
        """Forget the last world: delete every row it added, keeping the
        standard names the reference synced at start."""
        with self.engine.begin() as conn:
            for table in _WORLD_TABLES:
                conn.execute(sa.text('DELETE FROM %s' % table))
            # Children before parents: a provider's parent and root are
            # foreign keys.
            while conn.execute(sa.text(
                    'DELETE FROM resource_providers WHERE id NOT IN '
                    '(SELECT parent_provider_id FROM resource_providers '
                    ' WHERE parent_provider_id IS NOT NULL) AND id NOT IN '
                    '(SELECT root_provider_id FROM resource_providers '
                    ' WHERE root_provider_id IS NOT NULL AND '
                    ' root_provider_id != id)')).rowcount:
                pass
            conn.execute(sa.text('DELETE FROM resource_classes '
                                 'WHERE id >= 10000'))
            conn.execute(sa.text("DELETE FROM traits "
                                 "WHERE name LIKE 'CUSTOM\\_%' ESCAPE '\\'"))

    def call(self, request, refused_leaves_no_consumer=False):
        """The reference's answer to ``request``; with
        ``refused_leaves_no_consumer``, an error answer leaves no consumer
        it created behind (what placement_lite does; see runner.py)."""
        before = self._consumers() if refused_leaves_no_consumer else None
        answer = self._send(request)
        if before is not None and answer.status >= 400:
            with self.engine.begin() as conn:
                for uuid in self._consumers() - before:
                    conn.execute(sa.text(
                        'DELETE FROM consumers WHERE uuid = :uuid'),
                        {'uuid': uuid})
        return answer

    def _send(self, request):
        """``request`` as its bytes on a connection of its own (its path
        and headers exactly as given, which an HTTP client library would
        check or complete)."""
        lines = ['%s %s HTTP/1.1' % (request.method, request.path),
                 # The host placement_lite's environ names (Location).
                 'Host: localhost',
                 'Connection: close']
        lines += ['%s: %s' % pair for pair in request.headers]
        if request.body:
            lines.append('Content-Length: %d' % len(request.body))
        data = ('\r\n'.join(lines) + '\r\n\r\n').encode() + request.body
        with socket.create_connection(('127.0.0.1', self.service.port),
                                      timeout=_TIMEOUT) as sock:
            sock.sendall(data)
            answer = http.client.HTTPResponse(sock, method=request.method)
            answer.begin()
            return _response(answer.status, answer.getheaders(),
                             answer.read(), request.method)

    def _consumers(self):
        with self.engine.connect() as conn:
            return set(conn.execute(sa.text('SELECT uuid FROM consumers'))
                       .scalars())

    def close(self):
        self.service.stop()
        self.engine.dispose()


class Lite:
    """placement_lite in this process, on a fresh database per world."""

    def __init__(self, backend):
        self.backend = backend
        self.environment = None

    def reset(self):
        self.close()
        self.environment = harness.Environment(
            self.backend, **{'api.enable_extensions': False})

    def call(self, request):
        environ = environ_for(request)
        environ['wsgi.input'] = io.BytesIO(request.body)
        environ['wsgi.errors'] = io.StringIO()
        captured = {}

        def start_response(status, headers, exc_info=None):
            captured['status'], captured['headers'] = status, headers

        body = b''.join(self.environment.app(environ, start_response))
        return _response(captured['status'], captured['headers'], body,
                         request.method)

    def close(self):
        if self.environment is not None:
            self.environment.close()
            self.environment = None
