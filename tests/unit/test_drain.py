"""The drain's pieces on a socket of the test's own
(tests/test_serving_graceful_stop.py and tests/test_rolling_restart.py
drain real uwsgi hosts): the filter refuses new connections and keeps
those queued; the counts see queued, accepted and finished connections."""

import socket

import pytest

from placement_lite import drain


@pytest.fixture
def listener():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    sock.listen(8)
    yield sock
    sock.close()


def _connect(port, timeout=2.0):
    return socket.create_connection(('127.0.0.1', port), timeout=timeout)


def test_the_filter_keeps_queued_connections_and_drops_new_ones(listener):
    port = listener.getsockname()[1]
    queued = _connect(port)
    queued.sendall(b'asked before')
    drain._refuse_new_connections(listener.fileno())
    with pytest.raises(TimeoutError):
        _connect(port, timeout=0.5)
    accepted, _address = listener.accept()
    assert accepted.recv(100) == b'asked before'
    accepted.sendall(b'answered')
    assert queued.recv(100) == b'answered'
    accepted.close()
    queued.close()
    drain._welcome_new_connections(listener.fileno())
    _connect(port).close()


def test_a_listener_refused_after_it_closes(listener):
    port = listener.getsockname()[1]
    drain._refuse_new_connections(listener.fileno())
    listener.close()
    with pytest.raises(ConnectionRefusedError):
        _connect(port)


def test_connections_are_counted_from_queued_until_answered(listener):
    port = listener.getsockname()[1]
    assert (drain.connections_to({port}), drain._queued(listener.fileno())
            ) == (0, 0)
    client = _connect(port)
    assert (drain.connections_to({port}), drain._queued(listener.fileno())
            ) == (1, 1)
    accepted, _address = listener.accept()
    assert (drain.connections_to({port}), drain._queued(listener.fileno())
            ) == (1, 0)
    accepted.close()
    assert drain.connections_to({port}) == 0
    client.close()


def test_only_listening_tcp_sockets_are_found(listener):
    unix = socket.socket(socket.AF_UNIX)
    connected = _connect(listener.getsockname()[1])
    try:
        assert drain.Listener(listener.fileno(), listener.getsockname()[1]
                              ) in drain._listeners()
        found = {found.fd for found in drain._listeners()}
        assert unix.fileno() not in found
        assert connected.fileno() not in found
    finally:
        unix.close()
        connected.close()
