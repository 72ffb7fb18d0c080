"""Request bodies as the WSGI servers deliver them, made whole.

Two things a server may leave to the application:

- A body sent in chunks (``Transfer-Encoding: chunked``) has no length.
  nginx reads it whole and passes its length; uwsgi's HTTP router
  (``http-chunked-input``) passes the chunks on, to be read with
  ``uwsgi.chunked_read()``; wsgiref (the development server) passes the
  raw stream. Such a body is read here, before the application sees the
  request, and handed on with its length: the application then refuses a
  body over ``[api] max_request_body_size`` (413) from its length, as
  for any other.
- A body the application answered without reading (413 from its length,
  401, 404...). A server that closes a connection with unread bytes in
  it resets it (TCP RST): a client still sending its body gets an error
  instead of the answer, and nginx in front answers 502. What is left of
  the body is read and dropped before the answer goes out.

Either way at most :data:`DISCARD_LIMIT` bytes are read: a client that
sends more has its connection closed (uwsgi's router and wsgiref then
reset it), rather than a worker reading for as long as it sends.
"""

import io
import re

from placement_lite import errors

#: Bytes of a body read at most, to keep or to drop. Reading 64 MiB from
#: nginx or a local client takes tens of milliseconds.
DISCARD_LIMIT = 64 * 1024 * 1024
_PIECE = 64 * 1024
#: The longest chunk-size line, and the longest trailer section, accepted.
_MAX_LINE = 4096
_CHUNK_SIZE = re.compile(rb'([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?\r?\n\Z')
_LINE_END = (b'\r\n', b'\n')


class RequestBody:
    """Read chunked bodies the server passed on undecoded; drop what the
    application left unread of any body."""

    def __init__(self, application, max_body_size):
        self.application = application
        self.max_body_size = max_body_size

    def __call__(self, environ, start_response):
        if (not environ.get('CONTENT_LENGTH') and 'chunked' in environ.get(
                'HTTP_TRANSFER_ENCODING', '').lower()):
            _read_chunked(environ, self.max_body_size)
        try:
            length = int(environ.get('CONTENT_LENGTH', ''))
        except ValueError:
            length = -1
        if length <= 0:
            return self.application(environ, start_response)
        body = _BoundedInput(environ['wsgi.input'], length)
        environ['wsgi.input'] = body
        try:
            return self.application(environ, start_response)
        finally:
            body.discard()


class _BoundedInput:
    """``wsgi.input`` giving at most the ``length`` bytes the client
    announced (PEP 3333: reading more may block, as on wsgiref's socket),
    and knowing how many are left."""

    def __init__(self, stream, length):
        self._stream = stream
        self.unread = length

    def read(self, size=-1):
        return self._take(self._stream.read, size)

    def readline(self, size=-1):
        return self._take(self._stream.readline, size)

    def readlines(self, hint=-1):
        return list(self)

    def __iter__(self):
        return iter(self.readline, b'')

    def _take(self, reader, size):
        if size is None or size < 0 or size > self.unread:
            size = self.unread
        data = reader(size) if size else b''
        self.unread -= len(data)
        return data

    def discard(self):
        """Read and drop what is left, unless it is over DISCARD_LIMIT."""
        if self.unread > DISCARD_LIMIT:
            return
        try:
            while self.unread and self.read(_PIECE):
                pass
        except OSError:
            # The client went away, or stalled past uwsgi's socket-timeout:
            # the connection is closed either way.
            pass


def _read_chunked(environ, limit):
    """Give the request its chunked body's length and (up to ``limit`` + 1
    bytes, enough to refuse it) content; a body that cannot be read is
    left for the application to refuse (errors.BODY_ERROR_ENVIRON)."""
    kept = io.BytesIO()
    length = 0
    try:
        for piece in _chunks(environ):
            if kept.tell() <= limit:
                kept.write(piece[:limit + 1 - kept.tell()])
            length += len(piece)
            if length > DISCARD_LIMIT:
                break
    except (ValueError, OSError) as exc:
        environ[errors.BODY_ERROR_ENVIRON] = (
            'The chunked request body could not be read: %s' % exc)
    del environ['HTTP_TRANSFER_ENCODING']
    environ['CONTENT_LENGTH'] = str(length)
    environ['wsgi.input'] = io.BytesIO(kept.getvalue())


def _chunks(environ):
    """The content of a chunked body, piece by piece."""
    if 'uwsgi.version' in environ:
        # Importable only inside uwsgi, which parses the chunks itself.
        import uwsgi
        return iter(uwsgi.chunked_read, b'')
    return _parse_chunks(environ['wsgi.input'])


def _parse_chunks(stream):
    """The content of the chunked body on ``stream`` (RFC 9112, 7.1),
    which is read up to its end and no further."""
    while True:
        match = _CHUNK_SIZE.match(stream.readline(_MAX_LINE))
        if match is None:
            raise ValueError('malformed chunk size line')
        size = int(match.group(1), 16)
        if size == 0:
            break
        while size:
            piece = stream.read(min(size, _PIECE))
            if not piece:
                raise ValueError('the body ends inside a chunk')
            size -= len(piece)
            yield piece
        if stream.readline(_MAX_LINE) not in _LINE_END:
            raise ValueError('a chunk is longer than its size')
    trailer = 0
    while True:
        line = stream.readline(_MAX_LINE)
        if line in _LINE_END:
            return
        trailer += len(line)
        if not line.endswith(b'\n') or trailer > _MAX_LINE:
            raise ValueError('malformed trailer section')
