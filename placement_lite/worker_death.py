"""A uwsgi worker that dies in the middle of a request resets its connection.

uwsgi's HTTP router (``etc/uwsgi.ini``, ``http-keepalive``) takes the end
of a worker's connection for the end of an answer, whether or not one
came, and keeps the client's connection open for its next request. A
worker killed while it handled a request (SIGKILL, the OOM killer, a
segmentation fault) closed its connection as after an answer: its client
waited for an answer that never came until the router's ``http-timeout``
closed the connection, 60 s later. A connection that is reset is an error
to the router, which closes the client's connection at once (it has no
way to answer it).

So while a worker has a request in hand its connection lingers for 0 s:
should the process die, the kernel resets the connection. Once the answer
is written (uwsgi calls the response's ``close()`` after its last write)
the connection lingers as by default again, and uwsgi's close sends what
is left of the answer before it ends the connection.

Behind nginx either end is an error: nginx answers 502 at once.
"""

import functools
import socket
import struct

from placement_lite import closing

_RESET_ON_CLOSE = struct.pack('ii', 1, 0)
_DEFAULT = struct.pack('ii', 0, 0)


class ResetIfTheWorkerDies:
    """WSGI middleware: under uwsgi, the request's connection is reset if
    the worker dies before the answer is written. Elsewhere it does
    nothing."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        if 'uwsgi.version' not in environ:
            return self.application(environ, start_response)
        # Importable only inside uwsgi.
        import uwsgi
        fd = uwsgi.connection_fd()
        _linger(fd, _RESET_ON_CLOSE)
        try:
            answer = self.application(environ, start_response)
        except BaseException:
            _linger(fd, _DEFAULT)
            raise
        return closing.Answer(answer,
                              functools.partial(_linger, fd, _DEFAULT))


def _linger(fd, value):
    """Set SO_LINGER on the connection ``fd``, which stays open."""
    connection = socket.socket(fileno=fd)
    try:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, value)
    finally:
        connection.detach()
