"""Memory of each service's uwsgi tree on the benchmark's cloud, side by
side: RSS, PSS and USS of the master and of every worker.

    python -m tests.bench.memory --hosts 1000 5000 20000 50000
    python -m tests.bench.memory --hosts 50000 --services placement_lite \\
        --lines prefork --phases --soak-minutes 30

For each size the cloud (tests/bench/cloud.py) is written in bulk
(tests/bench/builder.py) and copied into the reference's schema
(services.cloud_templates); each service then runs, one at a time, on a
fresh copy of it, 4 processes (``--processes``), on each line:

- placement_lite ``prefork``: ``uwsgi --ini etc/uwsgi.ini`` as shipped
  (tests/servers.py): the master builds the application and warms its
  caches, then forks the workers; uwsgi's HTTP router in front.
  ``lazy``: the same file with ``lazy-apps = true``, each worker builds
  its own.
- the reference ``lazy``: as the other benchmarks run it
  (tests/bench/services.py: ``--lazy-apps``, its workers answering HTTP
  themselves); ``prefork``: the same without ``--lazy-apps`` (its master
  loads the application, oslo.db reconnects in each worker).

Phases, each followed by a reading of ``/proc/<pid>/smaps_rollup`` of
every process of the tree: ``at rest`` (started, nothing served);
``after queries`` (every named query of tests/bench/queries.py that both
services answer: the explain variants, placement_lite's own, and the wide
trees, which the reference does not answer in minutes, are left out; each
sent in batches of as many concurrent requests as there are workers,
again until uwsgi's request log shows that every worker answered it);
``after claims`` (``--claims`` instances claimed with ``PUT
/allocations/{consumer}`` at 1.36 as nova claims, by ``--storm-clients``
clients, each on a host the flavor of tests/bench/storm.py fits, in the
same order for both services, while ``--storm-readers`` clients send
nova's candidates request, limit=1000, until the claims are done);
``after claims + queries`` (the queries again).

A worker is a child of the master other than uwsgi's gateways (the HTTP
router, which uwsgi logs as ``spawned uWSGI http``). USS is Private_Clean
+ Private_Dirty. The tree's PSS adds up every process of the tree, the
router included (it is forked from the master and shares its pages).
Before each reading every request sent has been logged as answered.

``--soak-minutes M`` then keeps claiming for M minutes (past ``--soak-keep``
instances held, each claim deletes the oldest, so that the cloud does not
fill), with the readers, and reads every worker's memory every
``--soak-interval`` seconds: each worker's USS against its reading after
the first minute.

Printed: a table per size, the growth of the largest worker per 1,000
hosts between sizes, the soak; written: reports/memory.json
(``--into-report`` keeps the sizes of an earlier report that this run does
not measure; ``--from-report`` prints the tables of one).
"""

import argparse
import collections
import concurrent.futures
import datetime
import http.client
import json
import os
import platform
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from tests import harness
from tests import servers
from tests.bench import cloud as bench_cloud
from tests.bench import queries as bench_queries
from tests.bench import services
from tests.bench import storm as bench_storm

REPORT = os.path.join(services.REPO, 'reports', 'memory.json')
SERVICES = ('placement_lite', 'reference')
LINES = ('prefork', 'lazy')
PHASES = ('queries', 'claims')
AT_REST = 'at rest'
AFTER_QUERIES = 'after queries'
AFTER_CLAIMS = 'after claims'
AFTER_BOTH = 'after claims + queries'

#: ``[pid: N|app: 0|req: 1/2] 127.0.0.1 () {..} [date] GET /uri => ...``:
#: a request uwsgi's worker ``N`` answered. uwsgi writes ``- -`` for the
#: method and URI of a request whose variables take more than 4 KB.
_ANSWERED = re.compile(r'^\[pid: (\d+)\|app: -?\d+\|req: [^\]]*\] [^\[]*'
                       r'\[[^\]]*\] (?:([A-Z]+) (\S+)|- -)', re.M)
#: The URIs uwsgi may log as ``- -``.
_LONG_URI = 2000
#: uwsgi's gateways (its HTTP router and the like): not workers.
_GATEWAY = re.compile(r'^spawned uWSGI (?!worker |master )\w+ \d+ '
                      r'\(pid: (\d+)\)', re.M)


def log(message):
    print('[%s] %s' % (time.strftime('%H:%M:%S'), message), flush=True)


def smaps(pid):
    """{'rss', 'pss', 'uss', 'swap'} of process ``pid`` in kB, from
    /proc/<pid>/smaps_rollup (USS: Private_Clean + Private_Dirty); None
    when it is gone."""
    try:
        with open('/proc/%d/smaps_rollup' % pid) as rollup:
            text = rollup.read()
    except OSError:
        return None
    fields = dict(re.findall(r'^(\w+):\s+(\d+) kB', text, re.M))
    return {'rss': int(fields['Rss']), 'pss': int(fields['Pss']),
            'uss': int(fields['Private_Clean'])
            + int(fields['Private_Dirty']),
            'swap': int(fields.get('Swap', 0))}


class Line:
    """One service under uwsgi on one line (``prefork`` or ``lazy``), on
    a new database ``run`` copied from ``template``."""

    def __init__(self, service, line, template, run, venv, processes):
        self.service = service
        self.line = line
        self.processes = processes
        self.database = run
        self.workdir = None
        url = harness.postgres_server().create_database(run,
                                                        template=template)
        started = time.monotonic()
        try:
            if service == 'placement_lite':
                self.server = servers.Uwsgi(url, processes=processes,
                                            lazy=line == 'lazy')
            else:
                self.workdir = os.path.join(services.BENCH_DIR, run)
                self.server = services.reference(
                    harness._free_port(), url, self.workdir, venv,
                    processes=processes, lazy=line == 'lazy',
                    request_log=True)
                self.server.start(timeout=600)
        except BaseException:
            if self.workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
            _drop(run)
            raise
        self.start_seconds = time.monotonic() - started
        self.port = self.server.port
        self.master = self.server.process.pid
        self._offset = 0
        #: {URI of a GET: {worker pid: times logged answering it}}
        self.answered = collections.defaultdict(collections.Counter)
        self._count = 0  # requests logged as answered
        self.read_log()
        self.sent = self._count  # the start-up's own checks
        with open(self.server.log_path, errors='replace') as handle:
            self.gateways = {int(pid)
                             for pid in _GATEWAY.findall(handle.read())}

    def workers(self):
        return sorted(services.children(self.master) - self.gateways)

    def read_log(self):
        """Take in the requests logged as answered since the last call."""
        with open(self.server.log_path, 'rb') as handle:
            handle.seek(self._offset)
            text = handle.read()
        text = text[:text.rfind(b'\n') + 1]  # whole lines only
        self._offset += len(text)
        for pid, method, uri in _ANSWERED.findall(
                text.decode(errors='replace')):
            if method in ('GET', ''):
                self.answered[uri or None][int(pid)] += 1
            self._count += 1

    def answered_by(self, path):
        """{worker pid: times} logged answering ``path``; for a long
        ``path``, counting the requests logged without their URI."""
        self.read_log()
        found = collections.Counter(self.answered.get(path, ()))
        if len(path) > _LONG_URI:
            found.update(self.answered.get(None, ()))
        return found

    def settle(self, timeout):
        """Wait until every request sent has been logged as answered (a
        worker may still be computing one its client gave up on); whether
        it was, within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            self.read_log()
            if self._count >= self.sent:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)

    def fetch(self, method, path, body=None, version='1.39', timeout=600):
        """(status, body, seconds); the status is 'timeout' or 'error'
        when no answer came."""
        self.sent += 1
        try:
            return services.HttpClient(self.port, timeout).fetch(
                method, path, body, version=version)
        except TimeoutError:
            return 'timeout', b'', timeout
        except (OSError, http.client.HTTPException) as error:
            return 'error', str(error).encode(), 0.0

    def memory(self):
        """The tree's memory now: master, workers, gateways (each {'pid',
        'rss', 'pss', 'uss', 'swap'}, kB) and the tree's PSS."""
        gateways = self.gateways
        kids = services.children(self.master)
        reading = {'master': dict(pid=self.master, **smaps(self.master)),
                   'workers': [], 'gateways': []}
        for pid in sorted(kids):
            measured = smaps(pid)
            if measured is None:
                continue
            kind = 'gateways' if pid in gateways else 'workers'
            reading[kind].append(dict(pid=pid, **measured))
        reading['tree_pss'] = sum(
            process['pss'] for process in [reading['master']]
            + reading['workers'] + reading['gateways'])
        return reading

    def stop(self):
        try:
            if self.service == 'placement_lite':
                self.server.cleanup()
            else:
                self.server.stop()
        finally:
            if self.workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
            _drop(self.database)


def _drop(database):
    with harness.postgres_server().admin_engine().connect() as conn:
        conn.exec_driver_sql('DROP DATABASE IF EXISTS %s WITH (FORCE)'
                             % database)


def chosen_queries(cloud, names=None):
    """The named queries both services answer: neither the explain
    variants (placement_lite's 1.41) nor the wide trees (the reference
    enumerates every combination for minutes)."""
    found = [query for query in bench_queries.named_queries(cloud)
             if not query.explains and not query.wide]
    if names:
        unknown = set(names) - {query.name for query in found}
        if unknown:
            raise SystemExit('unknown queries: %s' % ', '.join(
                sorted(unknown)))
        found = [query for query in found if query.name in names]
    return found


def serve_every_worker(line, queries, timeout, max_batches):
    """Send each query in batches of one request per worker, at once,
    until the request log shows that every worker has answered it (at most
    ``max_batches``): {query: {'statuses': {status: n}, 'batches': n,
    'unserved': [worker pids that did not answer it]}}."""
    workers = set(line.workers())
    results = {}

    def served(before):
        now = line.answered_by(query.path)
        return {pid for pid, times in now.items()
                if times > before.get(pid, 0)}

    with concurrent.futures.ThreadPoolExecutor(line.processes) as pool:
        for query in queries:
            statuses = collections.Counter()
            before = line.answered_by(query.path)
            batches = 0
            started = time.monotonic()
            while batches < max_batches and not workers <= served(before):
                batches += 1
                for status, _raw, _seconds in pool.map(
                        lambda _n: line.fetch('GET', query.path,
                                              version=query.version,
                                              timeout=timeout),
                        range(line.processes)):
                    statuses[str(status)] += 1
                if statuses['timeout']:
                    # Sending more would pile them up: wait for the
                    # workers to finish those they are computing.
                    line.settle(timeout)
                    break
                if not workers <= served(before):
                    # uwsgi logs a request once its answer is sent.
                    time.sleep(0.2)
            results[query.name] = {
                'statuses': dict(statuses), 'batches': batches,
                'seconds': round(time.monotonic() - started, 1),
                'unserved': sorted(workers - served(before))}
    return results


class Claims:
    """The instances claimed, in one order for every service: the flavor
    of tests/bench/storm.py on the hosts it fits, taken in a shuffled
    order (the same for every run of a size) in turns, each claim on the
    next host that still has room (storm.Hosts keeps the usage). With
    ``keep``, past that many instances held each :meth:`next` deletes the
    oldest whose claim was answered (a claim, then a deletion, in turns).
    :meth:`answered` is told each answer: a claim refused is forgotten."""

    def __init__(self, cloud, model=None, order=None):
        """``model``: a storm.Hosts of ``cloud`` (copied), ``order``: the
        hosts in the order they are taken (both made when not given)."""
        self.model = (model or bench_storm.Hosts(cloud)).copy()
        self.hosts = order or Claims.order(cloud, self.model)
        self.turn = 0
        self.number = 0
        self.held = collections.OrderedDict()  # {consumer: allocation}
        self.claimed = set()  # consumers whose claim was answered 204
        self.keep = None
        self._lock = threading.Lock()
        self._deleting = False

    @staticmethod
    def order(cloud, model):
        """The hosts the flavor fits, shuffled as for every run of the
        size."""
        hosts = model.fitting()
        random.Random(cloud.hosts).shuffle(hosts)
        return hosts

    def next(self):
        """('PUT', consumer, body) or ('DELETE', consumer, None)."""
        with self._lock:
            oldest = next(iter(self.held), None)
            if (self.keep is not None and len(self.held) > self.keep
                    and not self._deleting and oldest in self.claimed):
                self._deleting = True
                self._release(oldest)
                return 'DELETE', oldest, None
            self._deleting = False
            for _tried in range(len(self.hosts)):
                root = self.hosts[self.turn % len(self.hosts)]
                self.turn += 1
                allocation = self.model.allocation(root)
                if allocation is None:
                    continue
                self.model.claim(root)
                consumer = bench_cloud.make_uuid('memory-claim-%d'
                                                 % self.number)
                self.number += 1
                self.held[consumer] = allocation
                return 'PUT', consumer, {
                    'allocations': {uuid: {'resources': resources}
                                    for uuid, resources
                                    in allocation.items()},
                    'project_id': bench_storm.PROJECT,
                    'user_id': bench_storm.USER,
                    'consumer_generation': None}
            raise RuntimeError('the flavor fits no host any more')

    def answered(self, method, consumer, status):
        with self._lock:
            if method != 'PUT':
                return
            if status == 204:
                self.claimed.add(consumer)
            elif consumer in self.held:
                self._release(consumer)

    def _release(self, consumer):
        self.claimed.discard(consumer)
        for uuid, resources in self.held.pop(consumer).items():
            for name, amount in resources.items():
                self.model.used[uuid, name] -= amount


def storm(line, claims, count=None, seconds=None, clients=4, readers=1,
          timeout=600, every=None, tick=None):
    """``clients`` threads send ``claims.next()`` (``count`` of them, or
    for ``seconds``) while ``readers`` threads send nova's candidates
    request until they are done; ``tick()`` is called every ``every``
    seconds meanwhile. Returns what was sent and how it was answered."""
    done = threading.Event()
    lock = threading.Lock()
    outcome = {'claims': 0, 'deletions': 0, 'reads': 0,
               'statuses': collections.Counter(),
               'read_statuses': collections.Counter()}
    deadline = None if seconds is None else time.monotonic() + seconds

    def claimer():
        while not done.is_set():
            with lock:
                if count is not None and outcome['claims'] >= count:
                    return
                if deadline is not None and time.monotonic() >= deadline:
                    return
                method, consumer, body = claims.next()
                outcome['claims' if method == 'PUT' else 'deletions'] += 1
            status, _raw, _seconds = line.fetch(
                method, '/allocations/%s' % consumer, body,
                version=bench_storm.VERSION, timeout=timeout)
            claims.answered(method, consumer, status)
            with lock:
                outcome['statuses']['%s %s' % (method, status)] += 1

    def reader():
        while not done.is_set():
            status, _raw, _seconds = line.fetch(
                'GET', bench_storm.CANDIDATES, version=bench_storm.VERSION,
                timeout=timeout)
            with lock:
                outcome['reads'] += 1
                outcome['read_statuses'][str(status)] += 1

    started = time.monotonic()
    writers = [threading.Thread(target=claimer) for _n in range(clients)]
    reading = [threading.Thread(target=reader) for _n in range(readers)]
    for thread in writers + reading:
        thread.start()
    try:
        while any(thread.is_alive() for thread in writers):
            time.sleep(0.2 if every is None else min(every, 0.2))
            if tick is not None:
                tick()
    finally:
        done.set()
        for thread in writers + reading:
            thread.join()
    outcome['seconds'] = round(time.monotonic() - started, 1)
    outcome['statuses'] = dict(outcome['statuses'])
    outcome['read_statuses'] = dict(outcome['read_statuses'])
    return outcome


def soak(line, claims, minutes, interval=30.0, baseline=60.0, keep=1000,
         clients=4, readers=1, timeout=600):
    """Claims (and deletions past ``keep`` instances held) for ``minutes``
    with the readers, every worker's memory read every ``interval``
    seconds: the samples, and each worker's USS against its reading at
    ``baseline`` seconds (the first at or after it)."""
    claims.keep = keep
    samples = []
    started = time.monotonic()
    next_sample = [started]

    def sample():
        now = time.monotonic()
        if now < next_sample[0]:
            return
        next_sample[0] += interval
        samples.append({'seconds': round(now - started, 1), 'workers': {
            str(process['pid']): process['uss']
            for process in line.memory()['workers']}})

    outcome = storm(line, claims, seconds=60 * minutes, clients=clients,
                    readers=readers, timeout=timeout,
                    every=min(1.0, interval), tick=sample)
    next_sample[0] = 0
    sample()
    outcome.update(soak_changes(samples, baseline))
    outcome.update({'minutes': minutes, 'interval': interval,
                    'baseline': baseline, 'keep': keep, 'samples': samples})
    return outcome


def soak_changes(samples, baseline):
    """{'workers': {pid: {'first', 'last', 'max', 'change', 'largest
    change'}}} of the samples from the first at or after ``baseline``
    seconds (USS in kB; changes as fractions of 'first')."""
    after = [sample for sample in samples if sample['seconds'] >= baseline]
    if not after:
        return {'workers': {}}
    first = after[0]['workers']
    found = {}
    for pid, uss in first.items():
        seen = [sample['workers'][pid] for sample in after
                if pid in sample['workers']]
        found[pid] = {
            'first': uss, 'last': seen[-1], 'max': max(seen),
            'change': (seen[-1] - uss) / uss if uss else None,
            'largest change': max((abs(value - uss) / uss for value in seen),
                                  default=0) if uss else None}
    gone = sorted({pid for sample in after for pid in sample['workers']}
                  - set(first))
    return {'workers': found, 'respawned': gone}


def measure_line(service, line_name, cloud, template, venv, args, claims,
                 queries, run):
    """The phases on one line of one service: its report."""
    started = time.monotonic()
    line = Line(service, line_name, template, run, venv, args.processes)
    report = {'service': service, 'line': line_name,
              'processes': args.processes,
              'start_seconds': round(line.start_seconds, 1), 'phases': []}
    log('%s %s: started in %.0f s, workers %s' % (
        service, line_name, line.start_seconds, line.workers()))

    def reading(phase, since, **more):
        settled = line.settle(args.timeout)
        time.sleep(1.0)
        measured = line.memory()
        measured.update(phase=phase, seconds=round(time.monotonic() - since,
                                                   1), settled=settled,
                        load=os.getloadavg()[0], **more)
        report['phases'].append(measured)
        log('%s %s %s: %s' % (service, line_name, phase, _brief(measured)))

    def queries_pass(phase):
        since = time.monotonic()
        served = serve_every_worker(line, queries, args.timeout,
                                    args.max_batches)
        reading(phase, since, queries=served)

    try:
        reading(AT_REST, started)
        if 'queries' in args.phases:
            queries_pass(AFTER_QUERIES)
        if 'claims' in args.phases:
            since = time.monotonic()
            outcome = storm(line, claims, count=args.claims,
                            clients=args.storm_clients,
                            readers=args.storm_readers, timeout=args.timeout)
            reading(AFTER_CLAIMS, since, storm=outcome)
            if 'queries' in args.phases:
                queries_pass(AFTER_BOTH)
        if args.soak_minutes:
            log('%s %s: soaking %g minutes' % (service, line_name,
                                               args.soak_minutes))
            report['soak'] = soak(
                line, claims, args.soak_minutes, args.soak_interval,
                args.soak_baseline, args.soak_keep, args.storm_clients,
                args.storm_readers, args.timeout)
    finally:
        line.stop()
    report['seconds'] = round(time.monotonic() - started, 1)
    return report


def _brief(measured):
    largest = _largest(measured)
    return ('master %s, largest worker %s, tree PSS %s MB'
            % ('/'.join(_mb(measured['master'][key])
                        for key in ('rss', 'pss', 'uss')),
               '/'.join(_mb(largest[key]) for key in ('rss', 'pss', 'uss'))
               if largest else '-', _mb(measured['tree_pss'])))


def run_size(hosts, args, names, venv):
    """Every line of every service at ``hosts``: the size's report."""
    started = time.monotonic()
    cloud = bench_cloud.build(hosts)
    queries = chosen_queries(cloud, args.queries)
    report = {'hosts': hosts, 'providers': len(cloud.providers),
              'consumers': len(cloud.consumers),
              'queries': [query.name for query in queries],
              'commit': _commit(), 'date': _now(),
              'load': [os.getloadavg()[0]], 'runs': []}
    templates, seconds = services.cloud_templates(
        cloud, names, venv, 'memory', log)
    report['build_seconds'] = round(seconds, 1)
    model = bench_storm.Hosts(cloud)
    order = Claims.order(cloud, model)
    try:
        for service in names:
            for line_name in (args.lines if service == 'placement_lite'
                              else args.reference_lines):
                run = 'memory_%s_%s_%d_%d' % (service, line_name, hosts,
                                              os.getpid())
                report['runs'].append(measure_line(
                    service, line_name, cloud, templates[service], venv,
                    args, Claims(cloud, model, order), queries, run))
    finally:
        for database in templates.values():
            _drop(database)
            # The reference's template synced its schema from here.
            shutil.rmtree(os.path.join(services.BENCH_DIR, database),
                          ignore_errors=True)
    report['load'].append(os.getloadavg()[0])
    report['seconds'] = round(time.monotonic() - started, 1)
    return report


def _commit():
    try:
        found = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'],
                               cwd=services.REPO, capture_output=True,
                               text=True, check=True).stdout.strip()
        dirty = subprocess.run(['git', 'status', '--porcelain',
                                '--untracked-files=no'], cwd=services.REPO,
                               capture_output=True, text=True).stdout
        return found + ('+changes' if dirty.strip() else '')
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%d %H:%M UTC')


# The tables.

def _mb(kilobytes):
    return '%.0f' % (kilobytes / 1024)


def _largest(measured):
    """The worker with the largest USS (ties: the largest RSS)."""
    return max(measured['workers'], key=lambda worker: (worker['uss'],
                                                        worker['rss']),
               default=None)


def size_table(size):
    """The markdown table of one size's report."""
    lines = ['%s hosts (%s providers); %s, commit %s; %s s in all.' % (
        format(size['hosts'], ','), format(size['providers'], ','),
        size['date'], size['commit'], format(round(size['seconds']), ',')),
        '',
        '| service | line | phase | master RSS | PSS | USS | largest worker '
        'RSS | PSS | USS | tree PSS |',
        '|---|---|---|---:|---:|---:|---:|---:|---:|---:|']
    for run in size['runs']:
        for phase in run['phases']:
            largest = _largest(phase) or dict(rss=0, pss=0, uss=0)
            lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |'
                         % (run['service'], run['line'], phase['phase'],
                            *(_mb(phase['master'][key])
                              for key in ('rss', 'pss', 'uss')),
                            *(_mb(largest[key])
                              for key in ('rss', 'pss', 'uss')),
                            _mb(phase['tree_pss'])))
    return '\n'.join(lines + [''] + _notes(size))


def _notes(size):
    """What a reader of the table must know: gateways, workers that did
    not answer a query, answers other than those expected, timings."""
    notes = []
    for run in size['runs']:
        name = '%s %s' % (run['service'], run['line'])
        timing = ['started in %s s' % run['start_seconds']]
        for phase in run['phases']:
            timing.append('%s %s s' % (phase['phase'], phase['seconds']))
            if phase['gateways'] and phase['phase'] == AT_REST:
                notes.append('- %s: the tree PSS includes uwsgi\'s HTTP '
                             'router, PSS %s MB at rest.' % (
                                 name, _mb(sum(g['pss'] for g in
                                               phase['gateways']))))
            if not phase['settled']:
                notes.append('- %s %s: read before every request sent was '
                             'answered.' % (name, phase['phase']))
            if len(phase['workers']) != run['processes']:
                notes.append('- %s %s: %d workers.' % (
                    name, phase['phase'], len(phase['workers'])))
            for query, served in phase.get('queries', {}).items():
                odd = {status: n for status, n in served['statuses'].items()
                       if status != '200'}
                if odd or served['unserved']:
                    notes.append('- %s %s, %s: %s%s' % (
                        name, phase['phase'], query,
                        'answers %s; ' % odd if odd else '',
                        'not answered by %d worker(s)'
                        % len(served['unserved']) if served['unserved']
                        else 'every worker answered'))
            if 'storm' in phase:
                outcome = phase['storm']
                notes.append('- %s: %d claims in %s s (%s), %d candidates '
                             'reads meanwhile (%s).' % (
                                 name, outcome['claims'], outcome['seconds'],
                                 _counts(outcome['statuses']),
                                 outcome['reads'],
                                 _counts(outcome['read_statuses'])))
        notes.append('- %s: %s; %s s in all.' % (name, ', '.join(timing),
                                                 run['seconds']))
    return notes


def _counts(counter):
    return ', '.join('%s: %d' % item for item in sorted(counter.items())) \
        or 'none'


def growth(sizes):
    """{(service, line, phase): [(from hosts, to hosts, {'rss', 'pss',
    'uss', 'tree_pss'}: MB per 1,000 hosts)]} of the largest worker
    between consecutive sizes, and between the first and the last."""
    points = collections.defaultdict(dict)
    for size in sizes:
        for run in size['runs']:
            for phase in run['phases']:
                largest = _largest(phase)
                if largest is None:
                    continue
                points[run['service'], run['line'], phase['phase']][
                    size['hosts']] = dict(
                        rss=largest['rss'], pss=largest['pss'],
                        uss=largest['uss'], tree_pss=phase['tree_pss'])
    found = {}
    for key, by_hosts in points.items():
        ordered = sorted(by_hosts)
        pairs = list(zip(ordered, ordered[1:]))
        if len(ordered) > 2:
            pairs.append((ordered[0], ordered[-1]))
        found[key] = [(low, high, {
            measure: (by_hosts[high][measure] - by_hosts[low][measure])
            / 1024 / ((high - low) / 1000)
            for measure in ('rss', 'pss', 'uss', 'tree_pss')})
            for low, high in pairs]
    return found


def growth_table(sizes):
    found = growth(sizes)
    if not any(found.values()):
        return ''
    pairs = []
    for steps in found.values():
        for low, high, _each in steps:
            if (low, high) not in pairs:
                pairs.append((low, high))
    lines = ['Growth per 1,000 hosts (MB): the largest worker\'s RSS / PSS '
             '/ USS, and the tree\'s PSS.', '',
             '| service | line | phase | %s |' % ' | '.join(
                 '%s to %s' % (format(low, ','), format(high, ','))
                 for low, high in pairs),
             '|---|---|---|%s' % ('---|' * len(pairs))]
    for (service, line, phase), steps in found.items():
        cells = {(low, high): '%.1f / %.1f / %.1f; tree %.1f' % (
            each['rss'], each['pss'], each['uss'], each['tree_pss'])
            for low, high, each in steps}
        lines.append('| %s | %s | %s | %s |' % (
            service, line, phase, ' | '.join(cells.get(pair, '-')
                                             for pair in pairs)))
    return '\n'.join(lines)


def soak_table(sizes):
    lines = []
    for size in sizes:
        for run in size['runs']:
            soaked = run.get('soak')
            if not soaked:
                continue
            if not lines:
                lines = ['| hosts | service | line | minutes | claims / '
                         'deletions / reads | worker | USS after %g s | at '
                         'the end | largest | change at the end | largest '
                         'change |' % soaked['baseline'],
                         '|---:|---|---|---:|---|---:|---:|---:|---:|---:|'
                         '---:|']
            for pid, each in sorted(soaked['workers'].items()):
                lines.append(
                    '| %s | %s | %s | %g | %d / %d / %d | %s | %s | %s | %s '
                    '| %s | %s |' % (
                        format(size['hosts'], ','), run['service'],
                        run['line'], soaked['minutes'], soaked['claims'],
                        soaked['deletions'], soaked['reads'], pid,
                        _mb(each['first']), _mb(each['last']),
                        _mb(each['max']), _percent(each['change']),
                        _percent(each['largest change'])))
    return '\n'.join(lines)


def _percent(fraction):
    return '-' if fraction is None else '%+.1f%%' % (100 * fraction)


def render(report, each_size=True):
    """The tables of a report: each size's (unless not ``each_size``), the
    growth between sizes, the soak."""
    parts = []
    for size in sorted(report['sizes'], key=lambda size: size['hosts']):
        if each_size:
            parts += ['### %s hosts' % format(size['hosts'], ','), '',
                      size_table(size), '']
    sizes = sorted(report['sizes'], key=lambda size: size['hosts'])
    table = growth_table(sizes)
    if table:
        parts += [table, '']
    table = soak_table(sizes)
    if table:
        parts += ['Soak: each worker\'s USS (MB).', '', table, '']
    return '\n'.join(parts)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog='python -m tests.bench.memory',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, nargs='+', default=[1000])
    parser.add_argument('--services', nargs='+', choices=SERVICES,
                        default=list(SERVICES))
    parser.add_argument('--lines', nargs='+', choices=LINES,
                        default=list(LINES), help="placement_lite's lines")
    parser.add_argument('--reference-lines', nargs='+', choices=LINES,
                        default=['lazy', 'prefork'],
                        help="the reference's lines")
    parser.add_argument('--processes', type=int, default=4)
    parser.add_argument('--phases', nargs='*', choices=PHASES,
                        default=list(PHASES),
                        help='what is done after the reading at rest')
    parser.add_argument('--queries', nargs='+',
                        help='only these named queries')
    parser.add_argument('--max-batches', type=int, default=8,
                        help='batches of a query sent at most, waiting for '
                             'every worker to answer it')
    parser.add_argument('--claims', type=int, default=400)
    parser.add_argument('--storm-clients', type=int, default=4)
    parser.add_argument('--storm-readers', type=int, default=1)
    parser.add_argument('--timeout', type=float, default=600.0,
                        help='seconds a client waits for an answer')
    parser.add_argument('--soak-minutes', type=float, default=0)
    parser.add_argument('--soak-interval', type=float, default=30.0)
    parser.add_argument('--soak-baseline', type=float, default=60.0,
                        help='seconds into the soak of the reading each '
                             "worker's USS is compared with")
    parser.add_argument('--soak-keep', type=int, default=1000,
                        help='instances held in the soak: past them each '
                             'claim deletes the oldest')
    parser.add_argument('--report', default=REPORT)
    parser.add_argument('--into-report', action='store_true',
                        help="keep the sizes of the report's earlier runs "
                             'that this one does not measure')
    parser.add_argument('--from-report', action='store_true',
                        help='print the tables of --report, measure '
                             'nothing')
    return parser.parse_args(argv)


def run(args, argv=()):
    """Measure as ``args`` (parsed from ``argv``) say; the report (also
    written to ``args.report``)."""
    names = [name for name in SERVICES if name in args.services]
    venv = services.reference_venv(log) if 'reference' in names else None
    report = {'sizes': []}
    if args.into_report and os.path.exists(args.report):
        with open(args.report) as source:
            report = json.load(source)
        report['sizes'] = [size for size in report['sizes']
                           if size['hosts'] not in args.hosts]
    report.update(machine='%s, %d cores, %.0f GB' % (
        platform.machine(), os.cpu_count(),
        os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2 ** 30),
        command=' '.join(['python -m tests.bench.memory', *argv]))
    os.makedirs(os.path.dirname(os.path.abspath(args.report)), exist_ok=True)
    for hosts in args.hosts:
        log('%d hosts' % hosts)
        size = run_size(hosts, args, names, venv)
        report['sizes'] = sorted(report['sizes'] + [size],
                                 key=lambda size: size['hosts'])
        with open(args.report, 'w') as out:
            json.dump(report, out, indent=1)
        print()
        print(size_table(size), flush=True)
        print()
        log('%d hosts took %.0f s; wrote %s' % (hosts, size['seconds'],
                                                args.report))
    print()
    print(render(report, each_size=False), flush=True)
    return report


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.from_report:
        with open(args.report) as source:
            print(render(json.load(source)))
        return
    # Stopped with SIGTERM, still stop the services and PostgreSQL.
    signal.signal(signal.SIGTERM, lambda *_args: sys.exit(143))
    run(args, argv)


if __name__ == '__main__':
    main()
