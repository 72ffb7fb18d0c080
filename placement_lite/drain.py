"""A uwsgi worker told to stop drains: it fails nothing it accepted and
refuses, in a way a proxy retries, what it can no longer serve.

Left to itself, uwsgi ends a worker that is told to stop (SIGHUP from
its master, on SIGTERM to the master: ``gracefully_kill_them_all`` in
etc/uwsgi.ini) as soon as it has no request in hand. Connections a proxy
opened in the meantime wait in the listening socket's queue, and are
reset when the last process holding the socket exits: nginx answers
every POST among them 502. So instead, in each worker:

1. etc/uwsgi.ini makes SIGHUP and SIGTERM call Python's own signal entry
   point (``hook-accepting = unix_signal:1 PyErr_SetInterruptEx``, run
   once uwsgi has set its own handlers), which wakes :func:`_drain`'s
   thread through a pipe (``signal.set_wakeup_fd``) whatever uwsgi's
   loop is doing in C. (SIGTERM reaches the workers themselves when a
   service manager signals every process of the unit.)
2. From that moment /healthcheck answers 503 here (:class:`DrainCheck`),
   and the worker keeps serving for ``[api] drain_grace_period`` seconds:
   health-checking proxies and orchestrators take the host out of
   rotation meanwhile.
3. Then each listening TCP socket clients connect to drops new SYNs (a
   socket filter: :func:`_refuse_new_connections`). A connection whose
   handshake was done stays in the queue and is served; a client whose SYN
   was dropped sends it again a second later, finds the socket closed and
   is refused, and a proxy sends a refused request to another host
   whatever its method: nothing of it was sent. Recent kernels attach a
   filter to a TCP socket only for a process with CAP_NET_ADMIN: without
   it (uwsgi run as another user than root, or in a container) the worker
   goes on to step 4 as it is.
4. The worker waits until no connection to those ports is being set up,
   queued, or open (:func:`connections_to`): every request accepted has
   been answered. At most ``[api] drain_timeout`` seconds.
5. It lets uwsgi end it as uwsgi would have at step 1 (``gracefully_kill``
   on the worker's main thread). The master exits after its last worker,
   and the sockets close with it.

On the uwsgi router line the router, not the workers, accepts clients'
connections, on a socket the master shares with every process
(``shared-socket``): that one is filtered, and the workers wait until the
router has taken every connection from its queue and passed on every
request it read (each is a connection to a worker's own socket). A
client's idle keep-alive connection to the router is closed when the
router ends, after the workers.

A graceful reload (SIGHUP to the master) drains the same way; each worker
that starts removes the filter (:func:`_welcome_new_connections`).
"""

import collections
import contextlib
import ctypes
import logging
import os
import signal
import socket
import struct
import threading
import time

from oslo_middleware.healthcheck import pluginbase

LOG = logging.getLogger(__name__)

#: The name of :class:`DrainCheck` among oslo.middleware's healthcheck
#: backends (pyproject.toml's entry point).
HEALTHCHECK_BACKEND = 'placement_lite_drain'

#: Set once this process has been told to stop.
_STOPPING = threading.Event()

#: The signals that start a drain.
_STOP_SIGNALS = (signal.SIGHUP, signal.SIGTERM)

#: How often the connections are counted while the worker waits.
_POLL = 0.02

#: setsockopt names (linux/socket.h), which Python's socket module lacks.
_SO_ATTACH_FILTER = 26
_SO_DETACH_FILTER = 27

#: A classic BPF program for a listening TCP socket, which sees each
#: packet from its TCP header on: drop a packet whose flags have SYN set
#: and ACK clear (a new connection), keep every other one (the last
#: packet of a handshake already begun, and any data).
_DROP_NEW_CONNECTIONS = (
    (0x30, 0, 0, 13),          # load the byte of the TCP flags
    (0x54, 0, 0, 0x12),        # keep only SYN and ACK
    (0x15, 0, 1, 0x02),        # SYN alone?
    (0x06, 0, 0, 0),           # yes: drop the packet
    (0x06, 0, 0, 0xffffffff),  # no: keep all of it
)

#: /proc/net/tcp states of a connection a server has not finished with:
#: its handshake under way (SYN_RECV), established (whether accepted or
#: queued), or closed by the client only (CLOSE_WAIT).
_UNFINISHED = {0x01, 0x03, 0x08}
_HANDSHAKE = {0x03}

#: A listening TCP socket of this process: its file descriptor (uwsgi's,
#: never closed here) and port.
Listener = collections.namedtuple('Listener', 'fd port')


class DrainCheck(pluginbase.HealthcheckBaseExtension):
    """oslo.middleware's healthcheck backend for readiness: unavailable
    from the moment this process drains."""

    def healthcheck(self, server_port):
        if stopping():
            return pluginbase.HealthcheckResult(
                available=False,
                reason='Stopping: serving the requests it accepted, then '
                       'refusing new connections.')
        return pluginbase.HealthcheckResult(available=True, reason='OK')


def stopping():
    """Whether this process has been told to stop."""
    return _STOPPING.is_set()


def install_under_uwsgi(grace_period, timeout):
    """Make every uwsgi worker drain when told to stop (see the module's
    documentation): this one at once, or each worker the master forks
    from now on. Outside uwsgi, nothing to do."""
    try:
        # Importable only inside uwsgi.
        import uwsgi
    except ImportError:
        return
    if not _hooked(uwsgi.opt):
        LOG.warning(
            'uwsgi does not hand SIGHUP and SIGTERM to Python in its '
            'workers (etc/uwsgi.ini: hook-accepting = unix_signal:1 '
            'PyErr_SetInterruptEx): a worker told to stop will not drain.')
        return
    if uwsgi.worker_id() > 0:
        _start(grace_period, timeout)
        return
    earlier = getattr(uwsgi, 'post_fork_hook', None)

    def after_fork():
        if earlier is not None:
            earlier()
        if uwsgi.worker_id() > 0:
            _start(grace_period, timeout)
    uwsgi.post_fork_hook = after_fork


def _hooked(options):
    """Whether uwsgi's options hand the stop signals to Python."""
    hooks = options.get('hook-accepting', [])
    if not isinstance(hooks, list):
        hooks = [hooks]
    return any(b'PyErr_SetInterruptEx' in hook for hook in hooks)


def _start(grace_period, timeout):
    """In this worker's main thread: remove a drain's filter left on the
    sockets (a reload), and wait for the stop signals in a thread."""
    for listener in _listeners():
        _welcome_new_connections(listener.fd)
    wakeup, woken = os.pipe()
    os.set_blocking(woken, False)
    signal.set_wakeup_fd(woken, warn_on_full_buffer=False)
    for number in _STOP_SIGNALS:
        # Python's handler runs on the main thread between bytecodes; the
        # wake-up byte is what starts the drain.
        signal.signal(number, _ignore)
    threading.Thread(target=_drain, args=(wakeup, grace_period, timeout),
                     name='drain', daemon=True).start()


def _ignore(_number, _frame):
    pass


def _drain(wakeup, grace_period, timeout):
    while os.read(wakeup, 1)[0] not in _STOP_SIGNALS:
        pass
    _STOPPING.set()
    LOG.info('Told to stop: serving for %.1f s more while /healthcheck '
             'answers 503.', grace_period)
    time.sleep(grace_period)
    listeners = _listeners()
    routed = _routed(listeners)
    for listener in routed or listeners:
        try:
            _refuse_new_connections(listener.fd)
        except PermissionError:
            LOG.warning(
                'The kernel refuses this process a socket filter (recent '
                'kernels want CAP_NET_ADMIN for one on a TCP socket): new '
                'connections are not refused while the accepted ones are '
                'answered; only a front that took the host out during '
                'the grace period sends none.')
            break
    deadline = time.monotonic() + timeout
    while _unanswered(listeners, routed) and time.monotonic() < deadline:
        time.sleep(_POLL)
    left = _unanswered(listeners, routed)
    if left:
        LOG.warning('Stopping with %d connections unanswered after %.1f s.',
                    left, timeout)
    else:
        LOG.info('Every accepted request answered: stopping.')
    _let_uwsgi_stop_this_worker()


def _unanswered(listeners, routed):
    """Connections whose requests may still need a worker: on the
    workers' own sockets, every one the server side has not finished with;
    on the router's, those it has not accepted yet (being set up or
    queued): once it has, each request it passes on is a connection to a
    worker's socket, and a client's idle keep-alive connection, which the
    router may hold for long, needs nothing."""
    own = {listener.port for listener in listeners if listener not in routed}
    return (connections_to(own)
            + connections_to({listener.port for listener in routed},
                             _HANDSHAKE)
            + sum(_queued(listener.fd) for listener in routed))


def _listeners():
    """This process's listening TCP sockets."""
    found = []
    for name in os.listdir('/proc/self/fd'):
        fd = int(name)
        try:
            if not os.readlink('/proc/self/fd/%d' % fd).startswith('socket:'):
                continue
            with _borrowed(fd) as sock:
                if (sock.family in (socket.AF_INET, socket.AF_INET6)
                        and sock.type == socket.SOCK_STREAM
                        and sock.getsockopt(socket.SOL_SOCKET,
                                            socket.SO_ACCEPTCONN)):
                    found.append(Listener(fd, sock.getsockname()[1]))
        except OSError:
            continue
    return found


@contextlib.contextmanager
def _borrowed(fd):
    """A socket object for ``fd`` that leaves it open when done with."""
    sock = socket.socket(fileno=fd)
    try:
        yield sock
    finally:
        sock.detach()


def _routed(listeners):
    """The listening sockets the uwsgi router accepts clients on: those
    the master shares with it (``shared-socket``). Without a router
    (behind nginx) clients connect to the workers' own."""
    import uwsgi
    shared = uwsgi.opt.get('shared-socket', [])
    if not isinstance(shared, list):
        shared = [shared]
    ports = {int(address.rsplit(b':', 1)[1]) for address in shared}
    return [listener for listener in listeners if listener.port in ports]


def _queued(fd):
    """Connections waiting in the listening socket ``fd``'s queue (for a
    listening socket, TCP_INFO's tcpi_unacked)."""
    with _borrowed(fd) as sock:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 32)
    return struct.unpack_from('I', info, 24)[0]


def _refuse_new_connections(fd):
    program = b''.join(struct.pack('HBBI', *instruction)
                       for instruction in _DROP_NEW_CONNECTIONS)
    code = ctypes.create_string_buffer(program)
    with _borrowed(fd) as sock:
        sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, struct.pack(
            'HL', len(_DROP_NEW_CONNECTIONS), ctypes.addressof(code)))


def _welcome_new_connections(fd):
    with _borrowed(fd) as sock:
        try:
            sock.setsockopt(socket.SOL_SOCKET, _SO_DETACH_FILTER, 0)
        except OSError:
            pass  # no filter on it


def connections_to(ports, states=None):
    """How many TCP connections to local ``ports`` the server side has
    not finished with (any process's: the kernel's queue, a worker's, the
    router's), on this host; only those in ``states`` when given."""
    states = states or _UNFINISHED
    count = 0
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(table) as rows:
                next(rows)
                for row in rows:
                    local, _remote, state = row.split(None, 4)[1:4]
                    if (int(state, 16) in states
                            and int(local.rsplit(':', 1)[1], 16) in ports):
                        count += 1
        except FileNotFoundError:
            continue
    return count


def _let_uwsgi_stop_this_worker():
    """Give SIGHUP back to uwsgi's own handler and send it to the main
    thread: uwsgi ends the worker there, at once when it is idle, else
    after the request in hand."""
    binary = ctypes.CDLL(None)
    binary.uwsgi_unix_signal(
        signal.SIGHUP, ctypes.cast(binary.gracefully_kill, ctypes.c_void_p))
    signal.pthread_kill(threading.main_thread().ident, signal.SIGHUP)
