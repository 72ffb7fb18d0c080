#!/usr/bin/env python3
"""The container image's HEALTHCHECK: GET /healthcheck of the line the
container serves, exit 0 on 200.

The line is read from the arguments of uwsgi, PID 1
(etc/container/entrypoint.sh): the router (``--shared-socket ADDRESS``)
is asked over HTTP, the behind-nginx line (``--socket ADDRESS``) in the
uwsgi protocol, as nginx asks it.
"""

import http.client
import socket
import struct
import sys

TIMEOUT = 4


def address(bound):
    """Where to reach what uwsgi bound at ``bound`` (``:8778`` is every
    address)."""
    host, _colon, port = bound.rpartition(':')
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
    with open('/proc/1/cmdline', 'rb') as cmdline:
        arguments = cmdline.read().decode().split('\0')
    for option, ask in (('--shared-socket', over_http),
                        ('--socket', over_uwsgi)):
        if option in arguments:
            bound = arguments[arguments.index(option) + 1]
            break
    else:
        print('PID 1 serves no line of the image: %s' % ' '.join(arguments))
        return 1
    status = ask(*address(bound))
    print('GET /healthcheck: %d' % status)
    return 0 if status == 200 else 1


if __name__ == '__main__':
    sys.exit(main())
