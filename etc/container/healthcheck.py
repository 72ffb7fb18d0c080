#!/usr/bin/env python3
"""The container image's HEALTHCHECK: GET /healthcheck of the line the
container serves (etc/container/entrypoint.sh), exit 0 on 200.

The router answers HTTP on $PLACEMENT_LITE_HTTP_ADDRESS; when nothing
listens there, the behind-nginx line is asked on
$PLACEMENT_LITE_UWSGI_ADDRESS in the uwsgi protocol, as nginx asks it.
"""

import http.client
import os
import socket
import struct
import sys

TIMEOUT = 4


def address(variable, default):
    host, _colon, port = os.environ.get(variable, default).rpartition(':')
    host = host.strip('[]')
    if host in ('', '0.0.0.0', '::'):
        host = '127.0.0.1' if host != '::' else '::1'
    return host, int(port)


def over_http(host, port):
    connection = http.client.HTTPConnection(host, port, timeout=TIMEOUT)
    try:
        connection.request('GET', '/healthcheck')
        return connection.getresponse().status
    finally:
        connection.close()


def over_uwsgi(host, port):
    """The status of GET /healthcheck in one uwsgi packet: a 4-byte header
    (modifier 0, the size of the variables, modifier 0), then each variable
    as its length-prefixed name and value."""
    variables = {'REQUEST_METHOD': 'GET', 'PATH_INFO': '/healthcheck',
                 'REQUEST_URI': '/healthcheck', 'QUERY_STRING': '',
                 'SERVER_PROTOCOL': 'HTTP/1.1', 'SERVER_NAME': host,
                 'SERVER_PORT': str(port), 'HTTP_HOST': host,
                 'UWSGI_SCHEME': 'http'}
    body = b''.join(
        struct.pack('<H', len(part)) + part
        for name, value in variables.items()
        for part in (name.encode(), value.encode()))
    with socket.create_connection((host, port), timeout=TIMEOUT) as sock:
        sock.sendall(struct.pack('<BHB', 0, len(body), 0) + body)
        answer = sock.makefile('rb').readline()
    return int(answer.split()[1])


def main():
    try:
        status = over_http(*address('PLACEMENT_LITE_HTTP_ADDRESS', ':8778'))
    except ConnectionRefusedError:
        status = over_uwsgi(*address('PLACEMENT_LITE_UWSGI_ADDRESS', ':8779'))
    print('GET /healthcheck: %d' % status)
    return 0 if status == 200 else 1


if __name__ == '__main__':
    sys.exit(main())
