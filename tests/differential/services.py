"""The two services a differential run talks to, behind one interface.

Both are called at the WSGI level with the same environ, built here the
way uwsgi builds it (PATH_INFO percent-decoded and tunnelled as latin-1,
QUERY_STRING as sent), so the comparison is of the applications, not of
two HTTP servers:

- the reference (openstack-placement 16.0.0) runs in a subprocess under
  its own virtual environment's interpreter (``reference_child.py``),
  started once and emptied between worlds;
- placement_lite runs in this process, with ``[api] enable_extensions =
  false``, on a fresh database per world.
"""

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import urllib.parse

from tests import harness
from tests.bench import services as bench_services

_CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      'reference_child.py')


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
    # A server sends no body in answer to HEAD.
    return Response(int(status.split()[0]), [tuple(h) for h in headers],
                    b'' if method == 'HEAD' else body)


class Reference:
    """The reference's application in a subprocess of its own virtual
    environment, on one database of ``backend`` for the whole run."""

    def __init__(self, backend):
        venv = bench_services.reference_venv(log=lambda _message: None)
        self.workdir = tempfile.mkdtemp(prefix='differential-reference-')
        url = harness.empty_database_url(backend)
        with open(os.path.join(self.workdir, 'placement.conf'), 'w') as conf:
            conf.write('[api]\nauth_strategy = noauth2\n'
                       '[placement_database]\nconnection = %s\n'
                       'sync_on_startup = True\n' % url)
        read_end, write_end = os.pipe()
        self._log = open(os.path.join(self.workdir, 'reference.log'), 'wb')
        self.process = subprocess.Popen(
            [os.path.join(venv, 'bin', 'python'), '-I', _CHILD, str(write_end)],
            stdin=subprocess.PIPE, stdout=self._log, stderr=self._log,
            pass_fds=(write_end,), cwd=self.workdir,
            env=dict(os.environ, OS_PLACEMENT_CONFIG_DIR=self.workdir,
                     DIFFERENTIAL_DATABASE_URL=url))
        os.close(write_end)
        self._answers = os.fdopen(read_end, 'r')
        self._receive()

    def _receive(self):
        line = self._answers.readline()
        if not line:
            self._log.flush()
            with open(self._log.name, errors='replace') as log:
                raise RuntimeError('the reference exited:\n' + log.read())
        return json.loads(line)

    def _send(self, message):
        self.process.stdin.write(json.dumps(message).encode() + b'\n')
        self.process.stdin.flush()
        return self._receive()

    def reset(self):
        """Forget the last world."""
        self._send({'op': 'reset'})

    def call(self, request, refused_leaves_no_consumer=False):
        """The reference's answer to ``request``; with
        ``refused_leaves_no_consumer``, an error answer leaves no consumer
        it created behind."""
        answer = self._send({'op': 'call', 'environ': environ_for(request),
                             'body': request.body.decode('latin-1'),
                             'refused_leaves_no_consumer':
                                 refused_leaves_no_consumer})
        return _response(answer['status'], answer['headers'],
                         answer['body'].encode('latin-1'), request.method)

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self._answers.close()
        self._log.close()


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
        import io
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
