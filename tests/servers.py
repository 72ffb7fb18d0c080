"""placement_lite served the way the README tells operators to serve it.

:class:`Uwsgi` starts one uwsgi instance from a section of ``etc/uwsgi.ini``
and :class:`Nginx` an nginx from ``etc/nginx-placement.conf``. Each works
on a copy of the shipped file in which only addresses, file locations, the
configuration directory, the number of processes and ``lazy-apps`` differ,
so the tests exercise the lines operators run. :class:`DevServer` runs
``placement-lite serve``.
"""

import collections
import concurrent.futures
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

from tests import harness
from tests import provision

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
BIN = os.path.dirname(sys.executable)
NGINX_CONF = os.path.join(REPO, 'etc', 'nginx-placement.conf')
HAPROXY_CONF = os.path.join(REPO, 'etc', 'haproxy-placement-galera.cfg')
HAPROXY_API_CONF = os.path.join(REPO, 'etc', 'haproxy-placement.cfg')
#: The microversion the helpers ask for unless told otherwise.
VERSION = '1.28'


#: A request's line in the log: the worker's pid, then the request id (%s,
#: after the global request id).
_LOGGED = r'^\S+ \S+ (\d+) INFO placement_lite\.requestlog \[\S+ %s '


def request(port, method, path, body=None, version=VERSION, timeout=60,
            connection=None):
    """(status, body) of one request to 127.0.0.1:``port``: the body is
    decoded JSON when it is JSON, text when it is something else (a proxy's
    error page), None when empty.

    On a connection of its own, closed afterwards, unless ``connection``
    (an ``http.client.HTTPConnection`` the caller keeps open) is given.
    """
    status, _headers, decoded = exchange(port, method, path, body, version,
                                         timeout, connection)
    return status, decoded


def exchange(port, method, path, body=None, version=VERSION, timeout=60,
             connection=None):
    """request(), with the answer's headers: (status, {lowercase name:
    value}, body)."""
    conn = connection or http.client.HTTPConnection('127.0.0.1', port,
                                                    timeout=timeout)
    try:
        headers = {'x-auth-token': 'admin', 'accept': 'application/json',
                   'openstack-api-version': 'placement %s' % version}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers['content-type'] = 'application/json'
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        answered = {name.lower(): value
                    for name, value in response.getheaders()}
        if not raw:
            return response.status, answered, None
        if response.getheader('content-type', '').startswith(
                'application/json'):
            return response.status, answered, json.loads(raw)
        return response.status, answered, raw.decode(errors='replace')
    finally:
        if connection is None:
            conn.close()


def write_placement_conf(directory, db_url, extra=''):
    """A noauth2 placement.conf on ``db_url`` in ``directory``; ``extra``
    is appended as it is (more sections or options)."""
    with open(os.path.join(directory, 'placement.conf'), 'w') as conf:
        conf.write('[api]\nauth_strategy = noauth2\n'
                   '[placement_database]\nconnection = %s\n%s'
                   % (db_url, extra))


def db_sync(workdir):
    """``placement-lite db sync`` with the placement.conf in ``workdir``,
    as the README tells operators to run it: the finished process."""
    return subprocess.run(
        [os.path.join(BIN, 'placement-lite'), 'db', 'sync'],
        capture_output=True, text=True, cwd=REPO,
        env=dict(os.environ, OS_PLACEMENT_CONFIG_DIR=workdir))


class Uwsgi:
    """One uwsgi instance: ``section`` ``uwsgi`` answers HTTP on
    :attr:`port`; ``behind-nginx`` speaks the uwsgi protocol there."""

    def __init__(self, db_url, section='uwsgi', processes=4, lazy=False,
                 extra_conf='', start=True, tree=REPO, port=None,
                 settings=None, drain_grace_period=0):
        """``tree``: the source tree whose code and etc/uwsgi.ini are
        served (another release's, extracted from git: tests/releases.py).
        ``port``: the one to serve on (another host's, taking its place);
        a free one by default. ``settings``: more options of etc/uwsgi.ini
        changed, as :func:`ini_with` takes them.
        ``drain_grace_period``: [api] drain_grace_period; 0 by default,
        so that tests that do not restart hosts under load stop them at
        once; None leaves placement.conf's default."""
        self.tree = tree
        self.section = section
        self.processes = processes
        self.lazy = lazy
        self.settings = settings or {}
        self.workdir = tempfile.mkdtemp(prefix='placement-lite-uwsgi-')
        self.port = port or harness._free_port()
        if drain_grace_period is not None:
            # After extra_conf, whose first lines may belong to the
            # [placement_database] section write_placement_conf ends with.
            extra_conf = '%s\n[api]\ndrain_grace_period = %s\n' % (
                extra_conf, drain_grace_period)
        write_placement_conf(self.workdir, db_url, extra_conf)
        self.ini = self._copy_ini()
        self.log_path = os.path.join(self.workdir, 'uwsgi.log')
        self.process = None
        if start:
            self.start()

    def _copy_ini(self):
        with open(os.path.join(self.tree, 'etc', 'uwsgi.ini')) as handle:
            shipped = handle.read()
        settings = {'placement': {
            'env': 'OS_PLACEMENT_CONFIG_DIR=%s' % self.workdir,
            'processes': str(self.processes)}}
        if self.lazy:
            settings['placement']['lazy-apps'] = 'true'
        address = '127.0.0.1:%d' % self.port
        if self.section == 'uwsgi':
            # The router's socket: shared by the master (this release's
            # file) or the router's own (earlier releases').
            router = ('shared-socket' if '\nshared-socket = ' in shipped
                      else 'http')
            settings['uwsgi'] = {router: address}
        else:
            settings[self.section] = {'socket': address}
        for section, options in self.settings.items():
            settings.setdefault(section, {}).update(options)
        path = os.path.join(self.workdir, 'uwsgi.ini')
        with open(path, 'w') as handle:
            handle.write(ini_with(shipped, settings))
        return path

    def start(self):
        """Start the instance and wait until every worker can answer."""
        self.launch()
        self.wait_ready()

    def launch(self):
        """Start the instance; return at once."""
        with open(self.log_path, 'a') as log:
            self.process = subprocess.Popen(
                [os.path.join(BIN, 'uwsgi'), '--ini',
                 '%s:%s' % (self.ini, self.section)],
                cwd=self.tree, stdout=log, stderr=subprocess.STDOUT,
                env=dict(os.environ, PYTHONPATH=self.tree),
                start_new_session=True)

    def wait_ready(self):
        """Wait until every worker can answer."""
        if not harness.wait_for(self._ready, timeout=90):
            self.stop()
            raise RuntimeError('uwsgi did not start:\n' + self.log_text())

    def _ready(self):
        if self.process.poll() is not None:
            raise RuntimeError('uwsgi exited:\n' + self.log_text())
        text = self.log_text()
        apps = text.count("WSGI app 0 (mountpoint='') ready")
        if len(self.worker_pids()) < self.processes or apps < (
                self.processes if self.lazy else 1):
            return False
        if self.section != 'uwsgi':
            return True
        try:
            return request(self.port, 'GET', '/', timeout=5)[0] == 200
        except OSError:
            return False

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def log_text(self):
        with open(self.log_path, errors='replace') as log:
            return log.read()

    def worker_pids(self):
        """Pids of the workers spawned so far, respawned ones included."""
        return set(re.findall(r'(?:spawned uWSGI worker \d+ \(pid: '
                              r'|Respawned uWSGI worker \d+ \(new pid: )(\d+)',
                              self.log_text()))

    def workers_port(self):
        """The port the workers take requests on: the socket uwsgi binds
        for its router's requests (the router line), or :attr:`port`."""
        if self.section != 'uwsgi':
            return self.port
        return int(re.search(
            r'uwsgi socket 0 bound to TCP address 127\.0\.0\.1:(\d+)',
            self.log_text()).group(1))

    def workers_in_a_request(self):
        """Pids of the workers holding a request's connection."""
        return holding_connections(self.worker_pids(), self.workers_port())

    def answering_pids(self):
        """Pids of the workers that have answered a request."""
        return set(re.findall(r'^\[pid: (\d+)\|app: 0\|req:',
                              self.log_text(), re.M))

    def answers_of_every_worker(self, path, version='1.39', rounds=20):
        """{worker pid: [(status, body)]}: the answers to ``GET path``,
        from every running worker.

        Rounds of twice as many concurrent requests as workers, until
        every worker has answered; which worker answered a request is read
        from its line in the log, which names the worker's pid and the
        request id the answer carries."""
        workers = {int(pid) for pid in self.worker_pids()
                   if os.path.exists('/proc/%s' % pid)}
        found = collections.defaultdict(list)
        with concurrent.futures.ThreadPoolExecutor(2 * len(workers)) as pool:
            for _round in range(rounds):
                answers = list(pool.map(
                    lambda _: exchange(self.port, 'GET', path,
                                       version=version),
                    range(2 * len(workers))))
                log = self.log_text()
                for status, headers, body in answers:
                    logged = re.search(
                        _LOGGED % re.escape(headers['x-openstack-request-id']),
                        log, re.M)
                    found[int(logged.group(1))].append((status, body))
                if workers <= found.keys():
                    return dict(found)
        raise RuntimeError('%d rounds reached the workers %s of %s'
                           % (rounds, sorted(found), sorted(workers)))

    def problems_in_log(self):
        return problems_in(self.log_text())

    def stop(self):
        """Stop the instance as an operator would (SIGTERM), if launched."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                # A drain: [api] drain_grace_period, then the requests in
                # hand (at most drain_timeout).
                self.process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self):
        """Kill the master and every worker at once, as a crash would."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=30)

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


class Nginx:
    """An nginx from a file of etc/ (etc/nginx-placement.conf unless
    ``source`` says otherwise) in front of the given uwsgi ports: the
    shipped file, with only its upstream's ``server`` lines, the address
    it listens on and the paths of its logs and temporary files changed."""

    def __init__(self, upstream_ports=(), source=NGINX_CONF, upstream=None):
        """``upstream``: the upstream block's ``server`` lines, in place of
        the shipped ones; by default the shipped ones for a host on each
        port of ``upstream_ports`` (:func:`upstream_for`)."""
        self.workdir = tempfile.mkdtemp(prefix='placement-lite-nginx-')
        # nginx's workers run as an unprivileged user when started as root.
        os.chmod(self.workdir, 0o777)
        self.port = harness._free_port()
        with open(source) as handle:
            self.shipped = handle.read()
        if upstream is None:
            upstream = upstream_for(self.shipped, upstream_ports)
        conf = self._copy_conf(upstream)
        for name in ('uwsgi_params',):
            shutil.copy(os.path.join('/etc/nginx', name), self.workdir)
        self.process = subprocess.Popen(
            [provision.require('nginx')['nginx'], '-p', self.workdir, '-c', conf, '-g',
             'daemon off; pid %s/nginx.pid; error_log %s/main-error.log;'
             % (self.workdir, self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if not harness.wait_for(self._answers, timeout=30):
            self.stop()
            raise RuntimeError('nginx did not start: %s' % self.error_log())

    def _copy_conf(self, upstream):
        shipped = upstream_lines(self.shipped)
        text = self.shipped.replace(shipped[0], '\n'.join(upstream), 1)
        for line in shipped[1:]:
            text = text.replace(line + '\n', '', 1)
        text = text.replace('listen 8778;', 'listen 127.0.0.1:%d;' % self.port)
        text = re.sub(r'/var/log/nginx/', self.workdir + '/', text)
        temp_paths = ''.join(
            '    %s_temp_path %s/%s;\n' % (kind, self.workdir, kind)
            for kind in ('client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'))
        text = text.replace('http {\n', 'http {\n' + temp_paths, 1)
        path = os.path.join(self.workdir, 'nginx.conf')
        with open(path, 'w') as handle:
            handle.write(text)
        return path

    def reload(self, upstream):
        """``nginx -s reload`` with ``upstream`` as the upstream block's
        ``server`` lines: new requests follow them once new workers take
        connections, the old workers finish what they are passing on."""
        self._copy_conf(upstream)
        self.process.send_signal(signal.SIGHUP)

    def _answers(self):
        return _reachable(self.process, 'nginx',
                          lambda: request(self.port, 'GET', '/', timeout=5))

    def error_log(self):
        path = os.path.join(self.workdir, 'placement-error.log')
        if not os.path.exists(path):
            return ''
        with open(path, errors='replace') as log:
            return log.read()

    def stop(self):
        _terminate(self.process, self.workdir)


class GaleraCheck:
    """``placement-lite galera-check`` of one Galera node, on a port of
    its own."""

    def __init__(self, node):
        self.port = harness._free_port()
        self.process = subprocess.Popen(
            [os.path.join(BIN, 'placement-lite'), 'galera-check',
             '--node', node.url(''), '--port', str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if not harness.wait_for(self._answers, timeout=30):
            self.stop()
            raise RuntimeError('galera-check did not start')

    def status(self):
        """(HTTP status, text) of one check."""
        conn = http.client.HTTPConnection('127.0.0.1', self.port, timeout=10)
        try:
            conn.request('GET', '/')
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()

    def _answers(self):
        return _reachable(self.process, 'galera-check', self.status)

    def stop(self):
        _terminate(self.process)


class _HAProxyProcess:
    """An haproxy run from ``text`` (a shipped file, edited), listening on
    :attr:`port`."""

    def _launch(self, text):
        path = os.path.join(self.workdir, 'haproxy.cfg')
        with open(path, 'w') as handle:
            handle.write(text)
        self.process = subprocess.Popen(
            [provision.require('haproxy')['haproxy'], '-db', '-f', path],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if not harness.wait_for(self._listens, timeout=30):
            self.stop()
            raise RuntimeError('haproxy did not start')

    def _listens(self):
        return _reachable(self.process, 'haproxy',
                          lambda: socket.create_connection(
                              ('127.0.0.1', self.port), 2).close())

    def stop(self):
        _terminate(self.process, self.workdir)


class HAProxy(_HAProxyProcess):
    """etc/haproxy-placement-galera.cfg in front of Galera nodes, each
    checked by its GaleraCheck: the shipped file with only the addresses
    and ports changed."""

    def __init__(self, nodes, checks):
        self.workdir = tempfile.mkdtemp(prefix='placement-lite-haproxy-')
        self.port = harness._free_port()
        with open(HAPROXY_CONF) as handle:
            text = handle.read()
        text = text.replace('bind 127.0.0.1:3306',
                            'bind 127.0.0.1:%d' % self.port)
        for index, (node, check) in enumerate(zip(nodes, checks), 1):
            text = re.sub(
                r'(server node%d )\S+( check)' % index,
                r'\g<1>127.0.0.1:%d\g<2> port %d' % (node.port, check.port),
                text)
        self._launch(text)

    def url(self, database):
        return 'mysql+pymysql://root@127.0.0.1:%d/%s?charset=utf8mb4' % (
            self.port, database)


class HAProxyFront(_HAProxyProcess):
    """An HAProxy file of etc/ for API hosts (etc/haproxy-placement.cfg
    unless ``source`` says otherwise) in front of hosts answering HTTP on
    the ports of ``hosts`` ({name of a shipped ``server`` line: port}; the
    other ``server`` lines left out): the shipped file with only those
    lines, the address it listens on and its admin socket changed."""

    def __init__(self, hosts, check_path=None, source=HAPROXY_API_CONF):
        """``check_path``: the path each host's check asks for, in place
        of the shipped one."""
        self.workdir = tempfile.mkdtemp(prefix='placement-lite-haproxy-')
        self.port = harness._free_port()
        self.admin_socket = os.path.join(self.workdir, 'admin.sock')
        self.names = list(hosts)
        with open(source) as handle:
            text = handle.read()

        def at_its_port(line):
            lead, name, rest = line.groups()
            if name not in hosts:
                return ''
            return '%s%s 127.0.0.1:%d%s\n' % (lead, name, hosts[name], rest)
        text = re.sub(r'^( *server )(\S+) \S+(.*)\n', at_its_port, text,
                      flags=re.M)
        text = text.replace('bind :8778', 'bind 127.0.0.1:%d' % self.port)
        text = text.replace('/run/haproxy/placement.sock', self.admin_socket)
        if check_path:
            text = re.sub(r'(http-check send meth GET uri )\S+',
                          r'\g<1>' + check_path, text)
        self._launch(text)

    def admin(self, command):
        """The runtime API's answer to ``command`` (what ``echo COMMAND |
        socat stdio SOCKET`` prints)."""
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(self.admin_socket)
            sock.sendall(command.encode() + b'\n')
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b''.join(chunks).decode()

    def servers(self):
        """{server name: its row of ``show stat``, as {column: value}}."""
        header, *rows = self.admin('show stat').splitlines()
        columns = header.lstrip('# ').split(',')
        rows = [dict(zip(columns, row.split(','))) for row in rows if row]
        return {row['svname']: row for row in rows
                if row['pxname'] == 'placement' and row['svname'] in
                self.names}


class DevServer:
    """``placement-lite serve`` (the development server) on ``db_url``."""

    def __init__(self, db_url):
        self.workdir = tempfile.mkdtemp(prefix='placement-lite-serve-')
        write_placement_conf(self.workdir, db_url)
        self.port = harness._free_port()
        self.log_path = os.path.join(self.workdir, 'serve.log')
        with open(self.log_path, 'w') as log:
            self.process = subprocess.Popen(
                [os.path.join(BIN, 'placement-lite'), '--config-file',
                 os.path.join(self.workdir, 'placement.conf'), 'serve',
                 '--port', str(self.port)],
                cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        if not harness.wait_for(self._serving, timeout=60):
            self.stop()
            raise RuntimeError('placement-lite serve did not start:\n'
                               + self.log_text())

    def _serving(self):
        if self.process.poll() is not None:
            raise RuntimeError('placement-lite serve exited:\n'
                               + self.log_text())
        return 'serving on' in self.log_text()

    def log_text(self):
        with open(self.log_path, errors='replace') as log:
            return log.read()

    def stop(self):
        _terminate(self.process, self.workdir)


def holding_connections(pids, port):
    """Those of ``pids`` (alive or not) that hold an open TCP connection
    accepted on ``port``: a server process in the middle of a request."""
    accepted = set()
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        with open(table) as rows:
            next(rows)
            for row in rows:
                fields = row.split()
                local_port = int(fields[1].rsplit(':', 1)[1], 16)
                if local_port == port and fields[3] == _ESTABLISHED:
                    accepted.add('socket:[%s]' % fields[9])
    holding = set()
    for pid in pids:
        directory = '/proc/%s/fd' % pid
        try:
            descriptors = os.listdir(directory)
        except FileNotFoundError:
            continue
        for descriptor in descriptors:
            try:
                target = os.readlink(os.path.join(directory, descriptor))
            except FileNotFoundError:
                continue
            if target in accepted:
                holding.add(str(pid))
    return holding


#: The state of an established connection in /proc/net/tcp.
_ESTABLISHED = '01'


def problems_in(log):
    """The lines of a uwsgi instance's ``log`` telling of an error: a
    traceback, a 5xx (but a stopping host's readiness, /healthcheck's
    503), a failed app."""
    pattern = re.compile(r'Traceback|ERROR|no python application'
                         r'|\(HTTP/1\.\d 5\d\d\)')
    return [line for line in log.splitlines()
            if pattern.search(line) and ' /healthcheck => ' not in line]


def ini_with(text, settings):
    """The ini file ``text`` with ``settings`` ({section: {option:
    value}}) set: each option's line replaced, or added at the end of its
    section; every line of an option whose value is None removed.
    Everything else stays as it is, repeated options (uwsgi's hooks) and
    comments included."""
    lines = text.splitlines()
    out = []
    pending, removed = {}, set()

    def close_section():
        out.extend('%s = %s' % item for item in pending.items())

    for line in lines:
        header = re.match(r'\[(.+)\]$', line.strip())
        if header:
            close_section()
            section = header.group(1)
            removed = {name for name, value in settings.get(section, {})
                       .items() if value is None}
            pending = {name: value for name, value in settings.get(
                section, {}).items() if value is not None}
        else:
            option = re.match(r'([\w-]+)\s*=', line)
            name = option and option.group(1)
            if name in removed:
                continue
            if name in pending:
                line = '%s = %s' % (name, pending.pop(name))
        out.append(line)
    close_section()
    return '\n'.join(out) + '\n'


def upstream_lines(text):
    """The ``server`` lines of an nginx file's upstream block, as they are."""
    return re.findall(r'^[ \t]*server [^{\n]*;$', text, re.M)


def upstream_for(text, ports, down=None):
    """The ``server`` lines of the nginx file ``text``'s upstream block for
    hosts on ``ports``: each shipped line naming the first host's address
    (its line, its backup line) once per port, in the shipped order. The
    host at index ``down`` (None: none) is marked ``down`` and left out
    of the backups, as docs/deploying.md drains a host by hand."""
    shipped = upstream_lines(text)
    address = re.search(r' (\S+:\d+)', shipped[0]).group(1)
    lines = []
    for template in shipped:
        if ' %s' % address not in template:
            continue
        backup = ' backup' in template
        for index, port in enumerate(ports):
            if index == down and backup:
                continue
            line = template.replace(address, '127.0.0.1:%d' % port)
            if index == down:
                line = line[:-1] + ' down;'
            lines.append(line)
    return lines


def _reachable(process, name, connect):
    """Whether ``connect()`` reaches the server ``process`` runs; an error
    naming ``name`` with what it wrote when it exited."""
    if process.poll() is not None:
        written = process.stderr.read()
        if isinstance(written, bytes):
            written = written.decode(errors='replace')
        raise RuntimeError('%s exited: %s' % (name, written))
    try:
        connect()
        return True
    except OSError:
        return False


def _terminate(process, workdir=None):
    """Stop a server's process and remove its working directory."""
    if process.poll() is None:
        process.terminate()
        process.wait(timeout=30)
    if workdir is not None:
        shutil.rmtree(workdir, ignore_errors=True)
