"""Where a named query's time and a process's memory go, in-process.

    python -m tests.bench.profile --hosts 50000 --queries nova_flavor limit50
    python -m tests.bench.profile --hosts 50000 --queries nova_flavor --memory

Writes the benchmark's cloud in bulk (tests/bench/builder.py) into a
database of the throwaway PostgreSQL and serves it in this process
(tests.harness.Environment, the garbage collector set as a served process
sets it). For each query: the first request (what a worker that has
served nothing pays) under cProfile, then ``--repetitions`` warm requests
under cProfile; each profile's top functions by own time and by
cumulative time are printed, the SQL statements by the time the request
waited for them, and the garbage collector's passes. ``--claim-between``
claims an instance before each request, as in a storm; ``--warm-with``
sends other queries first. With ``--memory``, the first requests of the
queries run under tracemalloc instead, and what the process still holds
afterwards is printed by line of code, with its RSS. With ``--split``,
``--repetitions`` warm requests of the queries, in turns and without
cProfile (which triples the time of Python code), are timed whole and
split into the SQL statements, the search, the engine's combining, the
provider summaries, the rendering and the rest (see Phases).
"""

import argparse
import collections
import cProfile
import gc
import io
import os
import pstats
import time
import tracemalloc

from sqlalchemy import event

from placement_lite import app
from placement_lite import engine
from placement_lite.engine import search
from placement_lite.handlers import allocation_candidates
from tests import harness
from tests.bench import builder
from tests.bench import cloud as bench_cloud
from tests.bench import queries as bench_queries


#: The section of docs/benchmark.md (python -m tests.bench writes it after
#: the others): the figures this module and the side-by-side run gave, pasted.
SECTION = """## member_of and isolate without a limit

Issue 43 found two candidates queries short of 8x at 1,000 hosts.
`python -m tests.bench --hosts 1000 --modes queries --queries
member_of_100 isolate_all --repetitions 31 --warmup 8` (both services
under uwsgi, 4 processes each, one PostgreSQL; 2026-11-27 23:36 UTC) and
`python -m tests.bench.profile --hosts 1000 --queries NAME --split`
(in-process, warm):

| query | placement_lite p50 | reference p50 | ratio | in-process, at rest | in-process, a claim committed before each request |
|---|---:|---:|---:|---|---|
| isolate_all (21,600 candidates, 8 MB) | 231.7 ms | 2,231.7 ms | 9.6x (was 5.9x) | | |
| member_of_100 (264 candidates) | 16.3 ms | 107.0 ms | 6.5x (was 6.1x) | 6.1 ms: SQL 1.3, search 1.1, combining 0.9, summaries 0.5, rendering 1.2, rest 1.0 | 25.5 ms: SQL 14.5 |

isolate_all went from combining and rendering each candidate's own
dicts to candidates sharing what a provider gives in a slot, each
rendered once, summaries joined in one pass, and a garbage collector
pass every 200,000 allocations. member_of_100 narrows an unbounded search
to the trees of its aggregates' providers (117 trees), its lookups kept
while the cloud is at rest, the lists sent as arrays. Its floor is what a
request reads when something committed since the whole cloud was read:
those 117 trees (6.4 ms), the sharing providers' trees (3 ms), the
aggregates' providers (1.6 ms). The served run lies between the two
in-process figures (the workers' request logs: 12 to 17 ms), as commits
elsewhere on the PostgreSQL server end a worker's rest; the reference
reads all of it on every request.
"""

def _rss_mb():
    with open('/proc/self/status') as status:
        return int(status.read().split('VmRSS:')[1].split()[0]) / 1024


def _print_profile(profiler, title, top):
    """The top functions by own time, and placement_lite's by cumulative
    time (the middleware wrapping every request left out)."""
    ours = 'placement_lite/(engine|db|handlers)/'
    for order, only in (('tottime', ''), ('cumulative', ours)):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(
            only, top)
        print('---- %s, by %s' % (title, order))
        print(out.getvalue().split('\n\n', 2)[-1].rstrip())


class Statements:
    """The SQL statements run on ``db``'s engines: seconds and count by
    statement (its first line)."""

    def __init__(self, db):
        self.seconds = collections.Counter()
        self.counts = collections.Counter()
        #: False while what runs is not profiled.
        self.counting = True
        for db_engine in {db.engine, db.read_engine}:
            event.listen(db_engine, 'before_cursor_execute', self._before)
            event.listen(db_engine, 'after_cursor_execute', self._after)

    def _before(self, conn, _cursor, _statement, *_args):
        conn.info['bench_started'] = time.perf_counter()

    def _after(self, conn, _cursor, statement, *_args):
        started = conn.info.pop('bench_started')
        if self.counting:
            key = ' '.join(statement.split())[:160]
            self.seconds[key] += time.perf_counter() - started
            self.counts[key] += 1

    def report(self, top):
        """Print the ``top`` statements, and forget them all."""
        print('---- SQL statements by total time')
        for key, seconds in self.seconds.most_common(top):
            print('%8.1f ms %5d x  %s' % (1000 * seconds, self.counts[key],
                                          key))
        self.seconds.clear()
        self.counts.clear()


def claim(environment, cloud, number):
    """A new instance on the busy host, as a claim of a storm: its
    providers' generations move, and what a process keeps of them is
    stale."""
    marks = cloud.landmarks
    status, _headers, body = environment.request(
        'PUT', '/allocations/%s' % bench_cloud.make_uuid(
            'profile-instance-%d' % number), {
            'allocations': {marks['busy_numa']: {'resources': {
                'VCPU': 1, 'MEMORY_MB': 16}}},
            'project_id': marks['project'], 'user_id': marks['user'],
            'consumer_generation': None}, version='1.36')
    assert status == 204, body


class Collections:
    """The garbage collector's passes while counting: how many and how
    long, by generation. (cProfile charges a pass to whatever function
    allocated when it began.)"""

    def __init__(self):
        self.seconds = collections.Counter()
        self.counts = collections.Counter()
        self._started = None
        gc.callbacks.append(self._callback)

    def _callback(self, phase, info):
        if phase == 'start':
            self._started = time.perf_counter()
        elif self._started is not None:
            generation = info['generation']
            self.seconds[generation] += time.perf_counter() - self._started
            self.counts[generation] += 1

    def report(self):
        print('---- garbage collector: %s' % (', '.join(
            'generation %d: %d passes, %.0f ms' % (
                generation, self.counts[generation],
                1000 * self.seconds[generation])
            for generation in sorted(self.counts)) or 'no pass'))
        self.seconds.clear()
        self.counts.clear()


def _timed(environment, query):
    path = query.path
    started = time.perf_counter()
    status, _headers, _raw = environment.respond('GET', path,
                                                 version=query.version)
    assert status == 200, status
    return time.perf_counter() - started


def profile(environment, queries, repetitions, top, before=None):
    """Profile each of ``queries``; ``before()``, when given, runs before
    each request (outside the profile)."""
    statements = Statements(environment.db)
    passes = Collections()
    before = before or (lambda: None)
    for query in queries:
        statements.counting = False
        before()
        statements.counting = True
        profiler = cProfile.Profile()
        seconds = profiler.runcall(_timed, environment, query)
        _print_profile(profiler, '%s: first request, %.3f s'
                       % (query.name, seconds), top)
        statements.report(top)
        passes.report()
        profiler = cProfile.Profile()
        taken = []
        for _ in range(repetitions):
            statements.counting = False
            before()
            statements.counting = True
            taken.append(profiler.runcall(_timed, environment, query))
        _print_profile(profiler, '%s: %d warm requests, median %.3f s' % (
            query.name, repetitions, sorted(taken)[len(taken) // 2]), top)
        statements.report(top)
        passes.report()


class Charging:
    """Seconds charged by phase (``seconds``), each moment of the wall
    clock to the innermost phase entered and not yet left; nothing while
    ``active`` is False."""

    def __init__(self):
        self.seconds = collections.Counter()
        self.active = True
        #: [phase, when it was last entered or resumed]
        self._stack = []

    def _charged(self, function, phase):
        def charged(*args, **kwargs):
            self._enter(phase)
            try:
                return function(*args, **kwargs)
            finally:
                self._leave()
        return charged

    def _enter(self, phase):
        if not self.active:
            return
        now = time.perf_counter()
        if self._stack:
            outer = self._stack[-1]
            self.seconds[outer[0]] += now - outer[1]
        self._stack.append([phase, now])

    def _leave(self):
        if not self.active:
            return
        now = time.perf_counter()
        phase, since = self._stack.pop()
        self.seconds[phase] += now - since
        if self._stack:
            self._stack[-1][1] = now


class Phases(Charging):
    """Where a request's wall time goes, each moment charged to one phase:
    the innermost of the functions below it is in (so the search's SQL is
    SQL, not search), and what none holds to ``rest`` (the WSGI stack,
    parsing, the policy check).

    - sql: the statements, from sending each until the database's answer
      is in (psycopg2 reads every row then);
    - search: finding who can serve each group (search.Searcher: the
      names read, each group's filters and capacities);
    - combining: the rest of engine.find_candidates, where the
      allocation requests are generated (combine.Combiner) and chosen;
    - summaries: the provider summaries of the trees returned;
    - rendering: the answer's JSON.
    """

    NAMES = ('sql', 'search', 'combining', 'summaries', 'rendering', 'rest')
    #: (owner, attribute, phase) of the functions timed.
    TIMED = ((engine, 'find_candidates', 'combining'),
             (search.Searcher, '__init__', 'search'),
             (search.Searcher, 'search', 'search'),
             (search.Searcher, 'check_unreached_names', 'search'),
             (engine, '_with_summaries', 'summaries'),
             (allocation_candidates, 'render', 'rendering'))

    def __init__(self, db):
        super().__init__()
        for owner, attribute, phase in self.TIMED:
            setattr(owner, attribute, self._charged(
                getattr(owner, attribute), phase))
        for engine_ in {db.engine, db.read_engine}:
            event.listen(engine_, 'before_cursor_execute',
                         lambda *_args: self._enter('sql'))
            event.listen(engine_, 'after_cursor_execute',
                         lambda *_args: self._leave())

    def request(self, environment, query):
        """{phase: seconds} of one request of ``query``, the whole request
        under 'total', and the CPU time this process spent on it under
        'cpu' (on a busy machine, steadier than the wall time)."""
        self.seconds.clear()
        cpu = time.process_time()
        taken = _timed(environment, query)
        cpu = time.process_time() - cpu
        split = dict(self.seconds)
        split['rest'] = taken - sum(split.values())
        split.update(total=taken, cpu=cpu)
        return split


def split(environment, queries, repetitions, before=None):
    """Time ``repetitions`` warm requests of each of ``queries``, the
    queries in turns, and print each one's p50 and the median of each
    phase (see Phases), and the garbage collector's passes."""
    phases = Phases(environment.db)
    passes = Collections()
    before = before or (lambda: None)
    for query in queries:
        _timed(environment, query)
    taken = {query.name: [] for query in queries}
    for _ in range(repetitions):
        for query in queries:
            before()
            taken[query.name].append(phases.request(environment, query))
    for query in queries:
        splits = taken[query.name]
        print('---- %s: %d warm requests, p50 %.1f ms (CPU %.1f ms); '
              'median by phase:' % (query.name, repetitions, *(
                  1000 * _median([each[key] for each in splits])
                  for key in ('total', 'cpu'))))
        print('  ' + ', '.join('%s %.1f ms' % (name, 1000 * _median(
            [each.get(name, 0.0) for each in splits]))
            for name in Phases.NAMES))
    passes.report()


def _median(values):
    return sorted(values)[len(values) // 2]


def memory(environment, queries, top):
    before = _rss_mb()
    tracemalloc.start(1)
    for query in queries:
        print('%s: first request %.3f s (under tracemalloc)'
              % (query.name, _timed(environment, query)))
    snapshot = tracemalloc.take_snapshot()
    tracemalloc.stop()
    print('RSS %.0f MB before the queries, %.0f MB after; held by line:'
          % (before, _rss_mb()))
    for stat in snapshot.statistics('lineno')[:top]:
        print('%8.1f MB %9d blocks  %s' % (stat.size / 2**20, stat.count,
                                           stat.traceback))


def main():
    parser = argparse.ArgumentParser(prog='python -m tests.bench.profile',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=50000)
    parser.add_argument('--queries', nargs='+', default=['nova_flavor'])
    parser.add_argument('--repetitions', type=int, default=5)
    parser.add_argument('--top', type=int, default=25)
    parser.add_argument('--memory', action='store_true')
    parser.add_argument('--split', action='store_true',
                        help='time the requests without cProfile, split '
                             'into SQL, search, combining, summaries, '
                             'rendering and the rest')
    parser.add_argument('--warm-with', nargs='+', default=[], metavar='NAME',
                        help='queries sent once first, unprofiled (e.g. '
                             'simple: a whole-cloud read fills what the '
                             'process keeps)')
    parser.add_argument('--claim-between', action='store_true',
                        help='claim an instance before each request, as '
                             'in a boot storm')
    parser.add_argument('--database-url',
                        help="a database already holding the benchmark's "
                             'cloud of --hosts (written by builder.write), '
                             'to profile again without writing it')
    args = parser.parse_args()
    cloud = bench_cloud.build(args.hosts)
    named = {query.name: query for query in
             bench_queries.named_queries(cloud)
             + bench_queries.ranked_queries(cloud)}
    url = args.database_url
    if url is None:
        url, seconds = builder.new_database('profile_%d_%d' % (
            args.hosts, os.getpid()), cloud)
        print('%d hosts written in %.0f s' % (args.hosts, seconds))
    environment = harness.Environment('postgresql', database_url=url)
    # As placement_lite.wsgi does, once the application (and what it
    # keeps from start-up) is built.
    app.tune_garbage_collector()
    queries = [named[name] for name in args.queries]
    for name in args.warm_with:
        print('%s first: %.3f s' % (name, _timed(environment, named[name])))
    if args.memory:
        memory(environment, queries, args.top)
        return
    claims = iter(range(1 << 30))
    before = ((lambda: claim(environment, cloud, next(claims)))
              if args.claim_between else None)
    if args.split:
        split(environment, queries, args.repetitions, before)
        return
    profile(environment, queries, args.repetitions, args.top, before)


if __name__ == '__main__':
    main()
