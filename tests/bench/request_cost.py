"""Where the CPU of a small request goes, route by route, in-process.

    python -m tests.bench.request_cost --hosts 1000
    python -m tests.bench.request_cost --hosts 1000 --routes in_tree traits
    python -m tests.bench.request_cost --hosts 1000 --cprofile traits

Writes the benchmark's cloud in bulk (tests/bench/builder.py) into a
database of the throwaway PostgreSQL and builds the application as
``placement_lite.wsgi`` does (the request log set up, on standard error
as under uwsgi, which this sends to a file; the garbage collector tuned), then calls it as uwsgi would, with the
headers nova's report client sends (tests/bench/steady.py), for every
route of the steady mix and ``GET /``: ``--repetitions`` warm requests of
each, the routes in turns. Each moment of a request is charged to the
innermost of the parts below it is in (Parts); the process's CPU is read
from its clock, the PostgreSQL backend's from /proc. Printed per route:
the time per request by part, the process's CPU, the statements and the
database's CPU per request. With ``--cprofile ROUTE...``, those routes'
requests under cProfile instead, the top functions by own time.

What this cannot see is uwsgi's own share (reading the request, writing
the answer, the socket): the bare falcon app of tests/bench/steady.py
measures that floor.
"""

import argparse
import collections
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time

import falcon
import sqlalchemy as sa
from sqlalchemy import event

from placement_lite import app
from placement_lite import heap
from placement_lite import policy
from placement_lite import request_body
from placement_lite import requestlog
from placement_lite import routes
from placement_lite import worker_death
from placement_lite.handlers import dates
from placement_lite.handlers import responses
from tests import harness
from tests.bench import builder
from tests.bench import cloud as bench_cloud
from tests.bench import profile as bench_profile
from tests.bench import steady
from tests.bench import storm


def _middleware():
    """(class, part) of each WSGI layer, outside in."""
    return (
        (heap.TrimAfterGrowth, 'heap trim check'),
        (worker_death.ResetIfTheWorkerDies, 'worker death'),
        (app.Healthcheck, 'healthcheck'),
        (request_body.RequestBody, 'request body'),
        (app.RequestId, 'request id'),
        (requestlog.RequestLog, 'request log'),
        (app.AcceptJson, 'accept json'),
        (app.NoAuth, 'auth (noauth2)'),
        (app.ContextMiddleware, 'request context'),
        (app.OmitHeaders, 'omit headers'),
        (app.Microversion, 'microversion'),
        (app.FaultWrapper, 'fault wrapper'),
        (falcon.App, 'falcon'))


class Parts(bench_profile.Charging):
    """Time charged by part: each moment to the innermost part whose code
    runs then. The clock is the wall clock (the thread's CPU clock is a
    system call, which would cost more than the smaller parts): but for
    'sql driver', which waits for the database, that is the process's
    CPU time on a machine doing nothing else (on a busy one, each part is
    longer by its share of what the others took). What the charging
    itself costs shows as the difference between the process's CPU
    charged and uncharged (``active`` False). The handlers' own code (parsing, the domain and db
    functions' Python, making statements) is 'handler'; SQLAlchemy's
    compiling of a statement (or finding it in its cache) 'sql compile';
    the rest of running one, its rows made and read 'sql execute'; the
    driver's call (sending the statement, waiting for the database's
    answer, parsing it) 'sql driver'; checking a connection out of the pool and back
    in 'pool'; the JSON and headers written 'rendering'."""

    def __init__(self):
        super().__init__()
        self.statements = 0
        for cls, part in _middleware():
            self._charge_method(cls, '__call__', part)
        for _path, resource in routes.served(True):
            for name in vars(resource):
                if name.startswith('on_'):
                    self._charge_method(resource, name, 'handler')
        self._charge_method(policy.Enforcer, 'authorize', 'policy')
        for module, name in ((responses, 'render'),
                             (responses, 'render_json_bytes'),
                             (dates, 'set_last_modified')):
            setattr(module, name, self._charged(getattr(module, name),
                                                'rendering'))
        self._charge_method(sa.sql.elements.ClauseElement,
                            '_compile_w_cache', 'sql compile')
        self._charge_method(sa.engine.Connection, 'execute', 'sql execute')
        self._charge_method(sa.engine.Engine, 'connect', 'pool')
        self._charge_method(sa.engine.Connection, 'close', 'pool')
        event.listen(sa.engine.Engine, 'before_cursor_execute',
                     self._driver)
        event.listen(sa.engine.Engine, 'after_cursor_execute',
                     lambda *_args: self._leave())

    def _driver(self, *_args):
        self.statements += 1
        self._enter('sql driver')

    def _charge_method(self, owner, name, part):
        function = owner.__dict__[name]
        charged = self._charged(
            lambda this, *args, **kwargs: function.__get__(this, owner)(
                *args, **kwargs), part)
        setattr(owner, name, charged)


def environ_of(request):
    """The WSGI environ uwsgi makes of ``request`` (tests/bench/steady.py)
    with the headers nova's report client sends."""
    path, _sep, query = request.path.partition('?')
    environ = {
        'REQUEST_METHOD': request.method, 'SCRIPT_NAME': '',
        'PATH_INFO': path, 'QUERY_STRING': query,
        'REQUEST_URI': request.path, 'SERVER_NAME': '127.0.0.1',
        'SERVER_PORT': '8778', 'SERVER_PROTOCOL': 'HTTP/1.1',
        'REMOTE_ADDR': '127.0.0.1', 'REMOTE_PORT': '40000',
        'HTTP_HOST': '127.0.0.1:8778', 'HTTP_ACCEPT': 'application/json',
        'HTTP_USER_AGENT': 'nova-compute keystoneauth1',
        'HTTP_X_AUTH_TOKEN': 'admin', 'HTTP_X_ROLES': 'admin,service',
        'HTTP_X_OPENSTACK_REQUEST_ID':
            'req-6f0c1b55-3a4e-4f3b-9a51-2f6d1f8c1e0a',
        'HTTP_CONNECTION': 'close', 'CONTENT_LENGTH': '',
        'wsgi.version': (1, 0), 'wsgi.url_scheme': 'http',
        'wsgi.input': io.BytesIO(b''), 'wsgi.errors': sys.stderr,
        'wsgi.multithread': False, 'wsgi.multiprocess': True,
        'wsgi.run_once': False}
    if request.version:
        environ['HTTP_OPENSTACK_API_VERSION'] = (
            'placement ' + request.version)
    return environ


def call(application, request):
    """One request, its answer read whole and closed as uwsgi does; its
    status."""
    statuses = []
    answer = application(environ_of(request),
                         lambda status, headers, exc_info=None:
                         statuses.append(status))
    for _piece in answer:
        pass
    close = getattr(answer, 'close', None)
    if close is not None:
        close()
    return int(statuses[0].split()[0])


def served_application(url, log_file):
    """The application as placement_lite.wsgi builds it, on ``url``, its
    request log on standard error as under uwsgi (here ``log_file``); and
    its Parts, installed before it is built (falcon keeps the responders
    it was given)."""
    parts = Parts()
    conf = harness.make_conf(**{'api.auth_strategy': 'noauth2',
                                'placement_database.connection': url})
    with open(log_file, 'w') as log:
        os.dup2(log.fileno(), sys.stderr.fileno())
    requestlog.setup(conf)
    application = heap.TrimAfterGrowth(worker_death.ResetIfTheWorkerDies(
        app.build_app(conf)))
    app.tune_garbage_collector()
    return application, parts


def routes_of(tracked):
    """{kind: the mix's requests of it}, and GET / ('root')."""
    requests = collections.defaultdict(list)
    for request in tracked.mix():
        requests[request.kind].append(request)
    requests['root'] = [steady.Request('root', 'GET', '/', None)]
    return requests


def _backend_cpu(database):
    return sum(storm.cpu_seconds(storm.backends(database)).values())


def split(application, parts, database, requests, repetitions):
    """{kind: {part: CPU seconds per request}, with 'statements',
    'charged' (the parts' sum) and per request}: the routes in turns,
    request by request, so that what else the machine does slows them
    alike; then each alone, uncharged, for the process's CPU ('total')
    and its database's ('database', read in clock ticks)."""
    kinds = list(requests)
    for kind in kinds:
        for request in requests[kind][:20]:
            call(application, request)
    charged = {kind: collections.Counter() for kind in kinds}
    totals = dict.fromkeys(kinds, 0.0)
    statements = dict.fromkeys(kinds, 0)
    for number in range(repetitions):
        for kind in kinds:
            request = requests[kind][number % len(requests[kind])]
            parts.seconds = charged[kind]
            parts.statements = 0
            started = time.thread_time()
            status = call(application, request)
            totals[kind] += time.thread_time() - started
            statements[kind] += parts.statements
            assert 200 <= status < 300, (request, status)
    parts.active = False
    results = {}
    for kind in kinds:
        database_before = _backend_cpu(database)
        started = time.thread_time()
        for number in range(repetitions):
            call(application, requests[kind][number % len(requests[kind])])
        uncharged = time.thread_time() - started
        figures = {part: seconds / repetitions
                   for part, seconds in charged[kind].items()}
        figures.update(
            charged=totals[kind] / repetitions,
            total=uncharged / repetitions,
            statements=statements[kind] / repetitions,
            database=(_backend_cpu(database) - database_before)
            / repetitions)
        results[kind] = figures
    return results


def table(results):
    """The split as markdown: a column per route, a row per part."""
    kinds = list(results)
    named = sorted({part for figures in results.values() for part in figures}
                   - {'total', 'charged', 'statements', 'database'},
                   key=lambda part: -sum(results[kind].get(part, 0.0)
                                         for kind in kinds))
    lines = ['| part (us per request) | %s |' % ' | '.join(kinds),
             '|---|%s|' % '|'.join('---:' for _ in kinds)]
    for part in named:
        lines.append('| %s | %s |' % (part, ' | '.join(
            '%.0f' % (1e6 * results[kind].get(part, 0.0)) for kind in kinds)))
    for row, key, scale, form in (
            ('placement_lite process CPU, charged', 'charged', 1e6,
             '%.0f'),
            ('**placement_lite process CPU**', 'total', 1e6, '%.0f'),
            ('statements per request', 'statements', 1, '%.1f'),
            ('PostgreSQL backend CPU per request (us)', 'database', 1e6,
             '%.0f')):
        lines.append('| %s | %s |' % (row, ' | '.join(
            form % (scale * results[kind][key]) for kind in kinds)))
    return '\n'.join(lines)


def profile(application, requests, kinds, repetitions, top):
    for kind in kinds:
        profiler = cProfile.Profile()
        for number in range(repetitions):
            profiler.runcall(call, application,
                             requests[kind][number % len(requests[kind])])
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats('tottime').print_stats(
            top)
        print('---- %s: %d requests, by own time' % (kind, repetitions))
        print(out.getvalue().split('\n\n', 2)[-1].rstrip())


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m tests.bench.request_cost',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--tracked', type=int, default=300)
    parser.add_argument('--routes', nargs='+', metavar='KIND',
                        help='the routes of the mix to time (default: all, '
                             'and root: GET /)')
    parser.add_argument('--repetitions', type=int, default=2000)
    parser.add_argument('--cprofile', nargs='+', metavar='KIND')
    parser.add_argument('--top', type=int, default=30)
    parser.add_argument('--database-url',
                        help="a database already holding the benchmark's "
                             'cloud of --hosts')
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    cloud = bench_cloud.build(args.hosts)
    url = args.database_url
    if url is None:
        url, seconds = builder.new_database('cost_%d_%d' % (
            args.hosts, os.getpid()), cloud)
        print('%d hosts written in %.0f s' % (args.hosts, seconds))
    database = sa.engine.make_url(url).database
    log_file = os.path.join(tempfile.gettempdir(),
                            'request-cost-%d.log' % os.getpid())
    application, parts = served_application(url, log_file)
    requests = routes_of(steady.Tracked(cloud, args.tracked))
    if args.cprofile:
        profile(application, requests, args.cprofile, args.repetitions,
                args.top)
        return
    kinds = args.routes or list(requests)
    chosen = {kind: requests[kind] for kind in kinds}
    print('load average %.1f' % os.getloadavg()[0])
    print(table(split(application, parts, database, chosen, args.repetitions)))
    print('load average %.1f' % os.getloadavg()[0])


if __name__ == '__main__':
    main()
