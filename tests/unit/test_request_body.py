"""request_body.RequestBody: chunked bodies a server passed on undecoded
are read and handed on with their length; what the application left
unread of a body is read and dropped before the answer goes out.
(tests/test_serving_wire.py sends both over the wire to every line.)"""

import io

import pytest

from placement_lite import errors
from placement_lite import request_body

LIMIT = 100


def _call(environ, reads=-1):
    """Run RequestBody around an application that reads ``reads`` bytes
    (-1: all, 0: none); (the environ the application saw, what it read)."""
    seen = {}

    def application(environ, start_response):
        seen['environ'] = dict(environ)
        seen['read'] = environ['wsgi.input'].read(reads) if reads else b''
        start_response('200 OK', [])
        return [b'']

    request_body.RequestBody(application, LIMIT)(environ,
                                                 lambda *args: None)
    return seen['environ'], seen['read']


def _chunked(stream):
    return {'HTTP_TRANSFER_ENCODING': 'chunked', 'wsgi.input': stream}


def test_chunks_are_handed_on_with_their_length():
    """Chunk extensions and trailer fields are allowed (RFC 9112, 7.1);
    the stream is read up to the body's end and no further."""
    stream = io.BytesIO(b'5;name=value\r\nhello\r\n6\r\n world\r\n0\r\n'
                    b'Trailer: yes\r\n\r\nNEXT REQUEST')
    environ, read = _call(_chunked(stream))
    assert read == b'hello world'
    assert environ['CONTENT_LENGTH'] == '11'
    assert 'HTTP_TRANSFER_ENCODING' not in environ
    assert errors.BODY_ERROR_ENVIRON not in environ
    assert stream.read() == b'NEXT REQUEST'


def test_chunks_over_the_limit_are_read_whole_and_kept_up_to_it():
    """The application refuses the body from its length (413); only
    LIMIT + 1 bytes of it are kept."""
    piece = b'x' * 64
    stream = io.BytesIO(b''.join(b'40\r\n%s\r\n' % piece for _ in range(10))
                    + b'0\r\n\r\n')
    environ, read = _call(_chunked(stream))
    assert environ['CONTENT_LENGTH'] == '640'
    assert read == b'x' * (LIMIT + 1)
    assert stream.read() == b''


@pytest.mark.parametrize('body,reason', [
    (b'zz\r\nhello\r\n0\r\n\r\n', 'malformed chunk size line'),
    (b'5\r\nhelloEXTRA\r\n0\r\n\r\n', 'a chunk is longer than its size'),
    (b'10\r\nhello', 'the body ends inside a chunk'),
    (b'0\r\nTrailer: yes', 'malformed trailer section'),
    (b'0\r\n' + b'T: x\r\n' * 1000 + b'\r\n', 'malformed trailer section'),
    (b'1_0\r\n' + b'x' * 16 + b'\r\n0\r\n\r\n', 'malformed chunk size line'),
])
def test_chunks_that_do_not_parse_are_left_for_the_application_to_refuse(
        body, reason):
    """The application answers 400 with the reason (app._BodyGuard)."""
    environ, _read = _call(_chunked(io.BytesIO(body)))
    assert environ[errors.BODY_ERROR_ENVIRON] == (
        'The chunked request body could not be read: %s' % reason)


def test_a_body_left_unread_is_read_before_the_answer():
    stream = io.BytesIO(b'x' * 1000 + b'NEXT REQUEST')
    environ = {'CONTENT_LENGTH': '1000', 'wsgi.input': stream}
    _call(environ, reads=0)
    assert stream.tell() == 1000


def test_the_application_reads_no_more_than_the_length():
    stream = io.BytesIO(b'x' * 10 + b'NEXT REQUEST')
    _environ, read = _call({'CONTENT_LENGTH': '10', 'wsgi.input': stream})
    assert read == b'x' * 10
    assert stream.read() == b'NEXT REQUEST'


def test_a_body_over_the_discard_limit_is_left_unread(monkeypatch):
    """The server closes the connection instead of a worker reading for
    as long as the client sends."""
    monkeypatch.setattr(request_body, 'DISCARD_LIMIT', 500)
    stream = io.BytesIO(b'x' * 1000)
    _call({'CONTENT_LENGTH': '1000', 'wsgi.input': stream}, reads=0)
    assert stream.tell() == 0


@pytest.mark.parametrize('length', ['', '0', 'abc', '-5'])
def test_no_length_or_a_bad_one_leaves_the_input_alone(length):
    """The application answers a bad length itself (400)."""
    stream = io.BytesIO(b'body')
    environ, _read = _call({'CONTENT_LENGTH': length, 'wsgi.input': stream},
                           reads=0)
    assert environ['wsgi.input'] is stream
    assert stream.tell() == 0
