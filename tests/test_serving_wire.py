"""Every line the README documents answers what comes over the wire.

The three lines: uwsgi's own HTTP router (``etc/uwsgi.ini``), nginx
(``etc/nginx-placement.conf``) in front of ``etc/uwsgi.ini:behind-nginx``,
and ``placement-lite serve``. Each is started once for the module, on
SQLite (the database plays no part here), and sent requests as raw bytes:
bodies up to and over ``[api] max_request_body_size`` (with a length or
in chunks), long URLs, many headers, headers holding bytes that are not
UTF-8. Each test asserts the exact answer per line: who answers (the
application, in Placement's error format with its request id, or the
front: nginx, http.server, in the same format without one), its status,
and that the connection was not reset; and, after each test, that no
worker died (the uwsgi master's children are the same processes, and its
log tells of no crash).

The router cannot answer a request whose line and headers do not fit the
64 KB packet it passes to a worker (a URL over about 32 KB): it closes the
connection, as the tests assert (docs/deploying.md).
"""

import http.client
import json
import socket
import uuid

import pytest

from placement_lite import conf as config
from tests import harness
from tests import servers

LIMIT = config.DEFAULT_MAX_BODY_SIZE
#: Over nginx's client_max_body_size (2m): nginx refuses it itself.
HUGE = 3_000_000
pytestmark = pytest.mark.slow

LINES = ('router', pytest.param('nginx', marks=pytest.mark.needs('nginx')),
         'dev')

APP = 'application'
FRONT = 'front'
#: The connection closed without an answer.
CLOSED = None


class Line:
    """One serving line: the port clients use, and its processes."""

    def __init__(self, name, db_url):
        self.name = name
        self.uwsgi = None
        self.nginx = None
        self.dev = None
        if name == 'router':
            self.uwsgi = servers.Uwsgi(db_url, processes=2)
            self.port = self.uwsgi.port
        elif name == 'nginx':
            self.uwsgi = servers.Uwsgi(db_url, section='behind-nginx',
                                       processes=2)
            self.nginx = servers.Nginx([self.uwsgi.port])
            self.port = self.nginx.port
        else:
            self.dev = servers.DevServer(db_url)
            self.port = self.dev.port
        self.processes = self._processes()

    def _processes(self):
        """The uwsgi master's children (workers and router), or the
        development server."""
        if self.dev:
            alive = self.dev.process.poll() is None
            return {self.dev.process.pid} if alive else set()
        pid = self.uwsgi.process.pid
        with open('/proc/%d/task/%d/children' % (pid, pid)) as children:
            return set(children.read().split())

    def assert_nothing_died(self):
        assert self._processes() == self.processes
        if self.uwsgi:
            log = self.uwsgi.log_text()
            for sign in ('Segmentation Fault', 'signal 11', 'DAMN ! worker',
                         'Respawned'):
                assert sign not in log

    def stop(self):
        if self.nginx:
            self.nginx.stop()
        if self.uwsgi:
            self.uwsgi.cleanup()
        if self.dev:
            self.dev.stop()


@pytest.fixture(scope='module', params=LINES)
def line(request):
    db = harness.fresh_database('sqlite')
    db.dispose()
    started = Line(request.param, db.url)
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def _nothing_died(line):
    yield
    line.assert_nothing_died()


class Answer:
    """What came back for one request sent as raw bytes."""

    def __init__(self, status, headers, body, reset):
        self.status = status
        self.headers = headers
        self.body = body
        #: The connection was reset (sending, or after the answer): a
        #: client still sending its body loses the answer.
        self.reset = reset

    @property
    def error(self):
        assert self.headers['content-type'] == 'application/json'
        return json.loads(self.body)['errors'][0]


def exchange(port, head, body=b''):
    """Send ``head`` (request line and headers, ending with the blank
    line) and ``body``; the Answer, or CLOSED when the server closed the
    connection without answering."""
    with socket.create_connection(('127.0.0.1', port), timeout=60) as sock:
        reset = False
        try:
            sock.sendall(head + body)
        except ConnectionError:
            reset = True
        response = http.client.HTTPResponse(sock)
        try:
            response.begin()
            content = response.read()
        except ConnectionError:
            return CLOSED
        try:
            assert sock.recv(1) == b'', 'bytes after the answer'
        except ConnectionError:
            reset = True
        headers = {name.lower(): value
                   for name, value in response.getheaders()}
        return Answer(response.status, headers, content, reset)


def request_head(method, target, length=None, chunked=False, extra=b''):
    head = (b'%s %s HTTP/1.1\r\nHost: placement\r\nX-Auth-Token: admin\r\n'
            b'OpenStack-API-Version: placement 1.28\r\n'
            b'Accept: application/json\r\n' % (method, target))
    if length is not None or chunked:
        head += b'Content-Type: application/json\r\n'
    if length is not None:
        head += b'Content-Length: %d\r\n' % length
    if chunked:
        head += b'Transfer-Encoding: chunked\r\n'
    return head + extra + b'Connection: close\r\n\r\n'


def provider_body(size):
    """A valid provider, padded with blanks to ``size`` bytes; its uuid."""
    provider = str(uuid.uuid4())
    document = json.dumps({'name': 'wire-' + provider, 'uuid': provider})
    padded = document[:-1] + ' ' * (size - len(document)) + '}'
    return padded.encode(), provider


def in_chunks(data, size):
    pieces = [data[at:at + size] for at in range(0, len(data), size)]
    return b''.join(b'%x\r\n%s\r\n' % (len(piece), piece)
                    for piece in pieces) + b'0\r\n\r\n'


def post_provider(port, size, chunk=None):
    """POST a provider whose body is ``size`` bytes, with its length, or
    in chunks of ``chunk`` bytes."""
    body, provider = provider_body(size)
    if chunk:
        head = request_head(b'POST', b'/resource_providers', chunked=True)
        return exchange(port, head, in_chunks(body, chunk)), provider
    head = request_head(b'POST', b'/resource_providers', length=len(body))
    return exchange(port, head, body), provider


def provider_exists(port, provider):
    status, _body = servers.request(port, 'GET',
                                    '/resource_providers/%s' % provider)
    return status == 200


def assert_answer(answer, status, source):
    """``answer`` is ``status`` from ``source`` (APP or FRONT), complete,
    its connection not reset; an error in Placement's format."""
    assert answer is not CLOSED
    assert (answer.status, answer.reset) == (status, False)
    if status < 400:
        return
    error = answer.error
    assert error['status'] == status
    assert error['title'] == http.HTTPStatus(status).phrase
    if source == APP:
        assert error['request_id'].startswith('req-')
        assert error['code'] == 'placement.undefined_code'
    else:
        assert set(error) == {'status', 'title', 'detail'}


@pytest.mark.parametrize('size,chunk', [
    (70_000, None), (500_000, None), (LIMIT, None), (500_000, 64 * 1024),
    (LIMIT, LIMIT)],
    ids=['70KB', '500KB', 'limit', 'chunked-500KB', 'limit-in-one-chunk'])
def test_a_body_up_to_the_limit_is_served(line, size, chunk):
    """A provider whose body is up to max_request_body_size, with its
    length or in chunks, is created (200): the router reset every body
    over about 64 KB, and threw chunked bodies away (400)."""
    answer, provider = post_provider(line.port, size, chunk)
    assert_answer(answer, 200, APP)
    assert json.loads(answer.body)['uuid'] == provider
    assert provider_exists(line.port, provider)


#: Who refuses a body over the limit, on each line: nginx refuses those
#: over its client_max_body_size (2m) before passing them on.
OVER_THE_LIMIT = {
    'router': {'length': APP, 'huge': APP},
    'nginx': {'length': APP, 'huge': FRONT},
    'dev': {'length': APP, 'huge': APP},
}


@pytest.mark.parametrize('size,chunk', [
    (LIMIT + 1, None), (HUGE, None), (LIMIT + 1, 64 * 1024),
    (HUGE, 64 * 1024)],
    ids=['limit+1', '3MB', 'chunked-limit+1', 'chunked-3MB'])
def test_a_body_over_the_limit_is_a_413(line, size, chunk):
    """A body over max_request_body_size, with its length or in chunks,
    is answered 413 in Placement's format, whole and without a reset
    (the router and nginx's hosts read the rest of the body first), and
    creates nothing. Before, the router reset most of them and nginx
    answered 502 to some."""
    answer, provider = post_provider(line.port, size, chunk)
    source = OVER_THE_LIMIT[line.name]['huge' if size == HUGE else 'length']
    assert_answer(answer, 413, source)
    if source == APP:
        assert answer.error['detail'].endswith(
            'The request body is larger than the %d bytes this service '
            'accepts.  ' % LIMIT)
    assert not provider_exists(line.port, provider)


def test_a_body_answered_unread_does_not_reset(line):
    """A request refused before its body is read (no token: 401) with a
    500 KB body gets its answer, and the connection closes cleanly."""
    body, _provider = provider_body(500_000)
    head = request_head(b'POST', b'/resource_providers', length=len(body))
    head = head.replace(b'X-Auth-Token: admin\r\n', b'')
    answer = exchange(line.port, head, body)
    assert (answer.status, answer.reset) == (401, False)


#: A chunked body with a chunk longer than its size: the application's
#: 400 (nginx's, which reads the chunks itself).
MALFORMED_CHUNKS = {'router': APP, 'nginx': FRONT, 'dev': APP}


def test_a_malformed_chunked_body_is_a_400(line):
    """Chunks that do not parse are refused with 400, and create
    nothing."""
    body, provider = provider_body(1000)
    head = request_head(b'POST', b'/resource_providers', chunked=True)
    answer = exchange(line.port, head,
                      b'10\r\n' + body + b'\r\n0\r\n\r\n')
    assert_answer(answer, 400, MALFORMED_CHUNKS[line.name])
    if line.name != 'nginx':
        assert 'The chunked request body could not be read' in (
            answer.error['detail'])
    assert not provider_exists(line.port, provider)


#: (status, who answers) per line; CLOSED: the router cannot pass the
#: request on (its packet would be over 64 KB) nor answer it.
HEADS = {
    'url-20KB': {'router': (200, APP), 'nginx': (200, APP),
                 'dev': (200, APP)},
    'url-60KB': {'router': CLOSED, 'nginx': (414, FRONT),
                 'dev': (200, APP)},
    '10000-params': {'router': CLOSED, 'nginx': (414, FRONT),
                     'dev': (414, FRONT)},
    '2000-headers': {'router': (200, APP), 'nginx': (431, FRONT),
                     'dev': (431, FRONT)},
}


def _head(case):
    if case.startswith('url-'):
        return request_head(b'GET', b'/resource_providers?name='
                            + b'x' * int(case[4:-2]) * 1000)
    if case == '10000-params':
        return request_head(b'GET', b'/resource_providers?' + b'&'.join(
            b'p%d=1' % number for number in range(10_000)))
    return request_head(b'GET', b'/resource_providers', extra=b''.join(
        b'X-Header-%d: value\r\n' % number for number in range(2000)))


@pytest.mark.parametrize('case', list(HEADS))
def test_long_urls_and_many_headers(line, case):
    """A URL of 20 KB is served everywhere. A URL of 60 KB, 10,000 query
    parameters, 2,000 headers: answered as each line can, never a 500
    (nginx passed a 60 KB URL on in a packet uwsgi cannot take: 500) and
    never dropped by a worker (uwsgi dropped requests with more than
    about 100 headers)."""
    answer = exchange(line.port, _head(case))
    expected = HEADS[case][line.name]
    if expected is CLOSED:
        assert answer is CLOSED
    else:
        assert_answer(answer, *expected)


@pytest.mark.parametrize('value', [
    b'\xff', b'\xc3', b'\x80abc', b'\xed\xa0\x80', b'https\xff'],
    ids=['ff', 'truncated', 'continuation', 'surrogate', 'https-ff'])
def test_x_forwarded_proto_that_is_not_utf8_kills_no_worker(line, value):
    """uwsgi 2.0.31 makes wsgi.url_scheme of X-Forwarded-Proto with
    PyUnicode_FromStringAndSize, and a worker segfaulted on one that is
    not UTF-8 (nginx: 502; router: no answer). Now the request is served
    and no worker dies (checked after each test)."""
    head = request_head(b'GET', b'/resource_providers',
                        extra=b'X-Forwarded-Proto: %s\r\n' % value)
    assert_answer(exchange(line.port, head), 200, APP)


@pytest.mark.parametrize('name', [
    b'X-Forwarded-For', b'X-Forwarded-Host', b'X-Forwarded-Ssl',
    b'X-Real-IP', b'Forwarded', b'Host', b'Accept',
    b'OpenStack-API-Version', b'X-OpenStack-Request-Id', b'User-Agent'])
def test_other_headers_that_are_not_utf8_are_served(line, name):
    """The other headers uwsgi or placement_lite look at, holding a byte
    that is not UTF-8: served (none of them crashed uwsgi)."""
    head = request_head(b'GET', b'/resource_providers')
    head = b'\r\n'.join(
        part for part in head.split(b'\r\n')
        if not part.lower().startswith(name.lower() + b':'))
    head = head.replace(b'Connection: close',
                        b'%s: \xff\r\nConnection: close' % name)
    assert_answer(exchange(line.port, head), 200, APP)


def test_x_forwarded_proto_does_not_change_the_scheme(line):
    """The scheme of the URLs placement_lite gives (Location) is the one
    the client used with the front, whatever X-Forwarded-Proto says:
    placement_lite follows that header only with [oslo_middleware]
    enable_proxy_headers_parsing (off here). uwsgi followed it itself."""
    body, provider = provider_body(200)
    head = request_head(b'POST', b'/resource_providers', length=len(body))
    head = head.replace(b'placement 1.28', b'placement 1.20').replace(
        b'Connection: close', b'X-Forwarded-Proto: https\r\nConnection: close')
    answer = exchange(line.port, head, body)
    assert_answer(answer, 200, APP)
    assert answer.headers['location'].startswith('http://')
    assert answer.headers['location'].endswith(provider)

