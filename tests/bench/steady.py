"""A region's steady load: the periodic reads every nova-compute sends all
day, and the writes it sends when something changes, timed against the
reference and a bare falcon app under the same uwsgi line.

    python -m tests.bench --modes steady --steady-hosts 1000 20000
    python -m tests.bench.steady --hosts 1000 --tracked 300 --clients 8

The periodic mix is what nova's report client sends for each compute host
(nova/scheduler/client/report.py; the reads of a NUMA host's tree):

- every 60 s, the resource tracker's ``GET
  /resource_providers/{root}/allocations`` (no microversion: 1.0);
- every ``resource_provider_association_refresh`` (300 s), the tree
  read afresh: ``GET /resource_providers?in_tree={root}`` (1.14); for
  each of its providers ``GET .../inventories`` (1.0), ``GET
  .../aggregates`` (1.19) and ``GET .../traits`` (1.6); for each provider
  in aggregates (the root) the sharing providers, ``GET
  /resource_providers?member_of=in:...&required=MISC_SHARES_VIA_AGGREGATE``
  (1.18); and for each sharing provider found, its inventories,
  aggregates and traits.

One period of that mix for ``--tracked`` hosts spread over the cloud, in
a shuffled order, is sent by ``--clients`` client processes (each request
on a connection of its own, as the other benchmarks do: uwsgi binds a
worker to a kept-alive connection). Each contestant is measured in turn
on the same requests: the reference, placement_lite and the bare falcon
app (tests/bench/bare_falcon.py), each under uwsgi with ``--processes``
workers, each service on its own copy of the same cloud on one
PostgreSQL. Measured: requests per second, and the CPU time of uwsgi (its
master and workers) and of the database's PostgreSQL backends per
request (/proc/<pid>/stat before and after). Then each route of the mix
alone, ``GET /`` alone, and the writes (WRITES): rounds over hosts of
their own per client, each write's generation the one the previous
answer gave. Every request must be answered 2xx; the first answer of
each route of the mix is compared between the services, byte for byte.
Results go to reports/steady-<hosts>.json.
"""

import argparse
import dataclasses
import datetime
import json
import multiprocessing
import os
import random
import signal
import socket
import sys
import time
import uuid as uuidlib

from tests.bench import cloud as bench_cloud
from tests.bench import services
from tests.bench import storm

REPORTS = os.path.join(services.REPO, 'reports')
#: Seconds between the periodic reads: the resource tracker's, and
#: ``[compute] resource_provider_association_refresh``'s default.
ALLOCATIONS_EVERY = 60
REFRESH_EVERY = 300
SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'
#: The routes of the mix: (kind, what it is, microversion; None: nova
#: sends none, so 1.0).
READS = (
    ('allocations', 'GET /resource_providers/{root}/allocations', None),
    ('in_tree', 'GET /resource_providers?in_tree={root}', '1.14'),
    ('inventories', 'GET /resource_providers/{uuid}/inventories', None),
    ('aggregates', 'GET /resource_providers/{uuid}/aggregates', '1.19'),
    ('traits', 'GET /resource_providers/{uuid}/traits', '1.6'),
    ('sharing', 'GET /resource_providers?member_of=in:{aggregates}'
                '&required=MISC_SHARES_VIA_AGGREGATE', '1.18'),
)
VERSIONS = {kind: version for kind, _what, version in READS}
#: The writes: (kind, what it is, microversion).
WRITES = (
    ('put_inventories', "PUT a NUMA node's inventories (MEMORY_MB "
                        'reserved one more, then back)', '1.26'),
    ('put_traits', "PUT a host's traits (COMPUTE_STATUS_DISABLED added, "
                   'then removed)', '1.6'),
    ('put_aggregates', "PUT a host's aggregates (one added, then removed)",
     '1.19'),
    ('reshape', 'POST /reshaper: VGPU moved between the GPU and its NUMA '
                "node, the host's allocations given again; then the two "
                "providers' GET .../inventories for their generations",
     '1.30'),
)
#: The consumers' generation in a reshape's body needs 1.28 to be read.
CONSUMER_VERSION = '1.28'
#: An aggregate no provider of the cloud is in.
EXTRA_AGGREGATE = bench_cloud.aggregate('steady-extra')
#: Contestants, in the order each phase measures them.
CONTESTANTS = ('reference', 'placement_lite', 'bare_falcon')


@dataclasses.dataclass(frozen=True)
class Request:
    kind: str
    method: str
    path: str
    version: 'str | None'
    body: 'dict | None' = None


def _raw(request, port, request_id):
    """The bytes of ``request`` as keystoneauth sends it (token, Accept,
    the microversion, nova's global request id), closing the connection;
    the roles are those of nova's service user (the reshaper's policy
    wants ``service``)."""
    lines = ['%s %s HTTP/1.1' % (request.method, request.path),
             'Host: 127.0.0.1:%d' % port, 'Accept: application/json',
             'User-Agent: nova-compute keystoneauth1',
             'X-Auth-Token: admin', 'X-Roles: admin,service',
             'X-OpenStack-Request-ID: ' + request_id,
             'Connection: close']
    if request.version:
        lines.append('OpenStack-API-Version: placement ' + request.version)
    data = b''
    if request.body is not None:
        data = json.dumps(request.body).encode()
        lines += ['Content-Type: application/json',
                  'Content-Length: %d' % len(data)]
    return ('\r\n'.join(lines) + '\r\n\r\n').encode() + data


#: Seconds a request may take before it counts as failed (status 0).
TIMEOUT = 60.0


def exchange(port, raw):
    """Send ``raw`` on a new connection; (status, body, seconds): status
    0 when no whole answer came within TIMEOUT. The answer ends where
    its Content-Length says (uwsgi keeps the connection open a while
    after it, whatever the request asked)."""
    started = time.perf_counter()
    try:
        with socket.create_connection(('127.0.0.1', port),
                                      timeout=TIMEOUT) as sock:
            sock.sendall(raw)
            answer = b''
            while b'\r\n\r\n' not in answer:
                chunk = sock.recv(262144)
                if not chunk:
                    return 0, answer, time.perf_counter() - started
                answer += chunk
            head, _sep, body = answer.partition(b'\r\n\r\n')
            length = _content_length(head)
            chunks, received = [body], len(body)
            while received < length:
                chunk = sock.recv(262144)
                if not chunk:
                    return 0, body, time.perf_counter() - started
                chunks.append(chunk)
                received += len(chunk)
            body = b''.join(chunks)
    except OSError:
        return 0, b'', time.perf_counter() - started
    status = int(head[9:12]) if head[:5] == b'HTTP/' else 0
    return status, body, time.perf_counter() - started


def _content_length(head):
    for line in head.split(b'\r\n')[1:]:
        name, _sep, value = line.partition(b':')
        if name.strip().lower() == b'content-length':
            return int(value)
    return 0


class Tracked:
    """The hosts whose periodic reads the mix sends: ``count`` spread
    over ``cloud``, each with its tree and the sharing providers of its
    aggregates."""

    def __init__(self, cloud, count):
        roots = [provider for provider in cloud.providers
                 if provider.parent is None
                 and provider.name.startswith('cn')]
        step = max(1, len(roots) // count)
        self.roots = roots[::step][:count]
        self.trees = {root.uuid: [] for root in self.roots}
        for provider in cloud.providers:
            top = provider
            while top.parent is not None:
                top = top.parent
            if top.uuid in self.trees:
                self.trees[top.uuid].append(provider)
        self.sharing = {}
        sharing = [provider for provider in cloud.providers
                   if SHARING_TRAIT in provider.traits]
        for root in self.roots:
            self.sharing[root.uuid] = [
                provider for provider in sharing
                if set(provider.aggregates) & set(root.aggregates)]
        self.consumers = {root.uuid: [] for root in self.roots}
        tree_of = {provider.uuid: root for root, tree in self.trees.items()
                   for provider in tree}
        for consumer in cloud.consumers:
            roots = {tree_of.get(uuid) for uuid in consumer.allocations}
            for root in roots - {None}:
                self.consumers[root].append(consumer)

    def mix(self):
        """One period (REFRESH_EVERY seconds) of the reads of every
        tracked host."""
        requests = []
        for root in self.roots:
            base = '/resource_providers/%s' % root.uuid
            requests += [Request('allocations', 'GET', base + '/allocations',
                                 VERSIONS['allocations'])] * (
                REFRESH_EVERY // ALLOCATIONS_EVERY)
            requests.append(Request(
                'in_tree', 'GET', '/resource_providers?in_tree=' + root.uuid,
                VERSIONS['in_tree']))
            for provider in self.trees[root.uuid]:
                requests += self._associations(provider)
                if provider.aggregates:
                    requests.append(Request(
                        'sharing', 'GET',
                        '/resource_providers?member_of=in:%s&required=%s' % (
                            ','.join(provider.aggregates), SHARING_TRAIT),
                        VERSIONS['sharing']))
            for provider in self.sharing[root.uuid]:
                requests += self._associations(provider)
        random.Random(len(requests)).shuffle(requests)
        return requests

    @staticmethod
    def _associations(provider):
        base = '/resource_providers/%s/' % provider.uuid
        return [Request(kind, 'GET', base + kind, VERSIONS[kind])
                for kind in ('inventories', 'aggregates', 'traits')]


# The clients: processes, so that they share no GIL. Each runs its own
# share of the requests as fast as it is answered.

def _run_clients(contestant, clients, prepared):
    """``clients`` processes, each running ``prepared(index)()`` (made
    before the clock starts: the callable it returns is what is timed,
    and returns (failures by status, seconds of each request)); all
    released at once. Returns their figures, with the CPU the
    contestant's server and database spent meanwhile."""
    context = multiprocessing.get_context('fork')
    ready, start, results = (context.Queue(), context.Event(),
                             context.Queue())

    def client(index):
        timed = prepared(index)
        ready.put(index)
        start.wait()
        results.put(timed())

    workers = [context.Process(target=client, args=(index,))
               for index in range(clients)]
    for worker in workers:
        worker.start()
    for _worker in workers:
        ready.get()
    servers, backends = contestant.pids()
    before = storm.cpu_seconds(servers + backends)
    started = time.monotonic()
    start.set()
    gathered = [results.get() for _ in workers]
    wall = time.monotonic() - started
    # A backend started meanwhile (a pool that grew) counts whole.
    after = storm.cpu_seconds(servers + sorted(
        set(backends) | set(contestant.pids()[1])))
    for worker in workers:
        worker.join()
    spent = {pid: seconds - before.get(pid, 0.0)
             for pid, seconds in after.items()}
    failed, seconds = {}, []
    for client_failed, client_seconds in gathered:
        failed.update(client_failed)
        seconds += client_seconds
    return {
        'requests': len(seconds), 'wall_seconds': wall,
        'per_second': len(seconds) / wall,
        'server_cpu': sum(spent.get(pid, 0.0) for pid in servers),
        'database_cpu': sum(value for pid, value in spent.items()
                            if pid not in servers),
        'p50': services.percentile(seconds, 0.5),
        'p95': services.percentile(seconds, 0.95),
        'failed': {str(status): body for status, body in failed.items()},
        'load': os.getloadavg()[0]}


def cpu_per_request(figures):
    return (figures['server_cpu'] + figures['database_cpu']) / figures[
        'requests']


class Contestant:
    """A started uwsgi service, with the database it reads (None for the
    bare app)."""

    def __init__(self, name, service, database):
        self.name = name
        self.service = service
        self.database = database

    def pids(self):
        servers = [self.service.process.pid] + self.service.worker_pids()
        backends = storm.backends(self.database) if self.database else []
        return servers, backends


def measure(contestant, requests, clients):
    """``requests`` sent by ``clients`` processes to ``contestant``, in
    turns; its figures."""
    port = contestant.service.port

    def prepared(index):
        request_id = 'req-%s' % uuidlib.uuid4()
        raws = [_raw(request, port, request_id)
                for request in requests[index::clients]]

        def timed():
            failed, seconds = {}, []
            for raw in raws:
                status, body, took = exchange(port, raw)
                seconds.append(took)
                if not 200 <= status < 300:
                    failed.setdefault(status,
                                      body[:300].decode(errors='replace'))
            return failed, seconds
        return timed

    return _run_clients(contestant, clients, prepared)


def answers_agree(contestants, requests):
    """{kind: 'same bytes', 'same, in another order' or what differs}:
    the first request of each kind of the mix, answered by each service.
    (The reference lists providers in the order its query plan meets
    them: it asks for none.)"""
    firsts = {}
    for request in requests:
        firsts.setdefault(request.kind, request)
    agreed = {}
    for kind, request in firsts.items():
        bodies = {}
        for contestant in contestants:
            port = contestant.service.port
            status, body, _seconds = exchange(port, _raw(
                request, port, 'req-%s' % uuidlib.uuid4()))
            bodies[contestant.name] = (status, body)
        if len(set(bodies.values())) == 1:
            agreed[kind] = 'same bytes'
        elif len({(status, _in_order(body))
                  for status, body in bodies.values()}) == 1:
            agreed[kind] = 'same, in another order'
        else:
            agreed[kind] = 'DIFFER: %s' % {
                name: '%d %s' % (status, body[:200].decode(errors='replace'))
                for name, (status, body) in bodies.items()}
    return agreed


def _in_order(body):
    """A listing's JSON with its providers sorted by uuid."""
    document = json.loads(body)
    document.get('resource_providers', []).sort(
        key=lambda provider: provider['uuid'])
    return json.dumps(document, sort_keys=True)


# The writes. Each client owns hosts of its own and writes them in turn,
# round after round; an even number of rounds leaves them as they were.

class _Writer:
    """One client's writes of one kind on its hosts of ``tracked``."""

    def __init__(self, port, tracked, roots, kind):
        self.port = port
        self.tracked = tracked
        self.roots = roots
        self.kind = kind
        self.request_id = 'req-%s' % uuidlib.uuid4()
        self.generations = {}
        self.consumer_generations = {}
        self.seconds = []
        self.failed = {}

    def _send(self, request, timed=True):
        status, body, seconds = exchange(self.port, _raw(
            request, self.port, self.request_id))
        if timed:
            self.seconds.append(seconds)
        if not 200 <= status < 300:
            self.failed.setdefault(status, '%s %s: %s' % (
                request.method, request.path,
                body[:300].decode(errors='replace')))
            return None
        return json.loads(body) if body else {}

    def prepare(self):
        """The generations the writes start from (untimed)."""
        for root in self.roots:
            answer = self._send(Request(
                'setup', 'GET', '/resource_providers?in_tree=' + root.uuid,
                '1.14'), timed=False)
            for provider in answer['resource_providers']:
                self.generations[provider['uuid']] = provider['generation']
            if self.kind == 'reshape':
                for consumer in self.tracked.consumers[root.uuid]:
                    answer = self._send(Request(
                        'setup', 'GET', '/allocations/' + consumer.uuid,
                        CONSUMER_VERSION), timed=False)
                    self.consumer_generations[consumer.uuid] = answer[
                        'consumer_generation']

    def write(self, root, parity):
        getattr(self, '_' + self.kind)(root, parity)

    def _tree(self, root, suffix):
        return next(provider for provider in self.tracked.trees[root.uuid]
                    if provider.name.endswith(suffix))

    def _put(self, provider, what, body, version):
        body['resource_provider_generation'] = self.generations[
            provider.uuid]
        answer = self._send(Request(
            self.kind, 'PUT', '/resource_providers/%s/%s' % (provider.uuid,
                                                             what),
            version, body))
        if answer is not None:
            self.generations[provider.uuid] = answer[
                'resource_provider_generation']

    def _put_inventories(self, root, parity):
        numa = self._tree(root, '-numa0')
        inventories = dict(numa.inventories)
        memory = dict(inventories['MEMORY_MB'])
        memory['reserved'] += parity
        inventories['MEMORY_MB'] = memory
        self._put(numa, 'inventories', {'inventories': inventories}, '1.26')

    def _put_traits(self, root, parity):
        traits = list(root.traits) + ['COMPUTE_STATUS_DISABLED'] * parity
        self._put(root, 'traits', {'traits': traits}, '1.6')

    def _put_aggregates(self, root, parity):
        aggregates = list(root.aggregates) + [EXTRA_AGGREGATE] * parity
        self._put(root, 'aggregates', {'aggregates': aggregates}, '1.19')

    def _reshape(self, root, parity):
        numa, gpu = self._tree(root, '-numa1'), self._tree(root, '-gpu')
        on_numa = dict(numa.inventories)
        on_gpu = dict(gpu.inventories)
        if parity:
            on_numa['VGPU'] = on_gpu.pop('VGPU')
        body = {'inventories': {
            numa.uuid: {'inventories': on_numa,
                        'resource_provider_generation':
                            self.generations[numa.uuid]},
            gpu.uuid: {'inventories': on_gpu,
                       'resource_provider_generation':
                           self.generations[gpu.uuid]}},
            'allocations': {consumer.uuid: {
                'allocations': {uuid: {'resources': resources}
                                for uuid, resources
                                in consumer.allocations.items()},
                'project_id': consumer.project_id,
                'user_id': consumer.user_id,
                'consumer_generation': self.consumer_generations[
                    consumer.uuid]}
                for consumer in self.tracked.consumers[root.uuid]}}
        if self._send(Request(self.kind, 'POST', '/reshaper', '1.30',
                              body)) is None:
            return
        for consumer in self.tracked.consumers[root.uuid]:
            self.consumer_generations[consumer.uuid] += 1
        for provider in (numa, gpu):
            answer = self._send(Request(
                self.kind, 'GET',
                '/resource_providers/%s/inventories' % provider.uuid, None))
            if answer is not None:
                self.generations[provider.uuid] = answer[
                    'resource_provider_generation']


def _reshapeable(tracked, root):
    """Whether a reshape of ``root``'s tree writes only its own providers:
    it has a GPU and its instances' disk is its own (a sharing provider's
    generation would make concurrent reshapes conflict)."""
    tree = {provider.uuid for provider in tracked.trees[root.uuid]}
    return (any(provider.name.endswith('-gpu')
                for provider in tracked.trees[root.uuid])
            and all(uuid in tree for consumer in tracked.consumers[root.uuid]
                    for uuid in consumer.allocations))


def measure_writes(contestant, tracked, kind, clients, rounds):
    """``rounds`` rounds of ``kind`` writes over the tracked hosts (those
    a reshape can take), each client its own; the figures, with
    ``writes`` and ``cpu_per_write`` (a reshape round sends three
    requests)."""
    roots = tracked.roots
    if kind == 'reshape':
        roots = [root for root in roots if _reshapeable(tracked, root)]
    port = contestant.service.port

    def prepared(index):
        writer = _Writer(port, tracked, roots[index::clients], kind)
        writer.prepare()

        def timed():
            for number in range(rounds):
                for root in writer.roots:
                    writer.write(root, (number + 1) % 2)
            return writer.failed, writer.seconds
        return timed

    figures = _run_clients(contestant, clients, prepared)
    figures['writes'] = len(roots) * rounds
    figures['cpu_per_write'] = (figures['server_cpu']
                                + figures['database_cpu']) / figures['writes']
    return figures


def _bare_falcon(workdir, processes):
    """The bare falcon app under the services' uwsgi line."""
    return services.UwsgiService(
        'bare_falcon', services.harness._free_port(), sys.prefix,
        os.path.join(os.path.dirname(sys.executable), 'uwsgi'),
        'tests.bench.bare_falcon:application', '', workdir,
        processes=processes, pythonpath=services.REPO)


def _metrics_config(workdir):
    return '[metrics]\nenabled = true\nmultiprocess_dir = %s\n' % (
        os.path.join(workdir, 'metrics'))


def start(cloud, venv, processes, with_metrics, baseline, log):
    """The contestants started, each service on a copy of the cloud:
    the reference, placement_lite, with ``with_metrics`` placement_lite
    with [metrics] enabled, with ``baseline`` (the path of another
    checkout of placement_lite) placement_lite from there, and the bare
    falcon app."""
    templates, _seconds = services.cloud_templates(
        cloud, ['placement_lite', 'reference'], venv, 'steady', log)
    wanted = [('reference', 'reference', '', None),
              ('placement_lite', 'placement_lite', '', services.REPO)]
    if with_metrics:
        wanted.append(('placement_lite, metrics', 'placement_lite',
                       _metrics_config(os.path.join(
                           services.BENCH_DIR, 'steady-metrics-%d-%d' % (
                               cloud.hosts, os.getpid()))), services.REPO))
    if baseline:
        wanted.append(('placement_lite at %s' % os.path.basename(
                           os.path.normpath(baseline)),
                       'placement_lite', '', baseline))
    started = []
    try:
        for number, (name, service_name, config, checkout) in enumerate(
                wanted):
            run = 'steady_%d_%d_%d' % (number, cloud.hosts, os.getpid())
            service = services.start_on_copy(
                service_name, templates[service_name], run, venv, processes,
                config, checkout)
            started.append(Contestant(name, service, service.database))
        bare = _bare_falcon(os.path.join(services.BENCH_DIR, 'steady-bare'),
                            processes)
        bare.start()
        started.append(Contestant('bare_falcon', bare, None))
    except Exception:
        for contestant in started:
            contestant.service.stop()
        raise
    return started


def _in_turns(contestants, requests, clients, repeat):
    """Each contestant's figures, measured ``repeat`` times in turns:
    {name: [figures]}."""
    measured = {contestant.name: [] for contestant in contestants}
    for _number in range(repeat):
        for contestant in contestants:
            measured[contestant.name].append(
                measure(contestant, requests, clients))
    return measured


def _at_least(requests, count):
    """``requests`` repeated until there are ``count`` or more."""
    return requests * max(1, -(-count // len(requests)))


def run(hosts, tracked_count=300, clients=8, processes=4, repeat=3,
        rounds=4, minimum=2000, with_metrics=False, baseline=None,
        venv=None, log=None, quick=False):
    """Every phase at one size; the report, also written to
    reports/steady-<hosts>.json (steady-quick-<hosts>.json for a smoke
    run, which docs/benchmark.md leaves out)."""
    log = log or _log
    cloud = bench_cloud.build(hosts)
    tracked = Tracked(cloud, tracked_count)
    mix = tracked.mix()
    report = {'hosts': hosts, 'providers': len(cloud.providers),
              'tracked': len(tracked.roots), 'clients': clients,
              'processes': processes, 'repeat': repeat, 'rounds': rounds,
              'mix': {kind: sum(1 for request in mix if request.kind == kind)
                      for kind, _what, _version in READS},
              'date': datetime.datetime.now(datetime.timezone.utc).strftime(
                  '%Y-%m-%d %H:%M UTC'),
              'commit': services.commit(), 'load': os.getloadavg()[0]}
    contestants = start(cloud, venv, processes, with_metrics, baseline, log)
    services_only = [contestant for contestant in contestants
                     if contestant.database]
    try:
        log('warming up: %d requests to each' % (len(mix) // 5))
        for contestant in contestants:
            measure(contestant, mix[:len(mix) // 5], clients)
        report['answers'] = answers_agree(services_only, mix)
        log('answers: %s' % report['answers'])
        log('the mix: %d requests of %d hosts, %d times each in turns'
            % (len(mix), len(tracked.roots), repeat))
        report['steady'] = _in_turns(contestants, mix, clients, repeat)
        root = [Request('root', 'GET', '/', None)] * minimum
        report['root'] = _in_turns(contestants, root, clients, repeat)
        report['routes'] = {}
        for kind, _what, _version in READS:
            alone = _at_least([request for request in mix
                               if request.kind == kind], minimum)
            log('%s alone: %d requests' % (kind, len(alone)))
            report['routes'][kind] = _in_turns(services_only, alone,
                                               clients, 1)
        report['writes'] = {}
        for kind, _what, _version in WRITES:
            log('%s: %d rounds' % (kind, rounds))
            report['writes'][kind] = {
                contestant.name: measure_writes(contestant, tracked, kind,
                                                clients, rounds)
                for contestant in services_only}
    finally:
        for contestant in contestants:
            contestant.service.stop()
    report['load_after'] = os.getloadavg()[0]
    os.makedirs(REPORTS, exist_ok=True)
    file_name = 'steady-quick-%d.json' if quick else 'steady-%d.json'
    with open(os.path.join(REPORTS, file_name % hosts), 'w') as out:
        json.dump(report, out, indent=1)
    for failure in _failures(report):
        log('FAILED: %s' % failure)
    return report


def _failures(report):
    for phase in ('steady', 'root'):
        for name, runs in report[phase].items():
            for figures in runs:
                if figures['failed']:
                    yield '%s %s: %s' % (phase, name, figures['failed'])
    for kind, results in list(report['routes'].items()) + list(
            report['writes'].items()):
        for name, figures in results.items():
            figures = figures[0] if isinstance(figures, list) else figures
            if figures['failed']:
                yield '%s %s: %s' % (kind, name, figures['failed'])


def _log(message):
    print('[%s] %s' % (time.strftime('%H:%M:%S'), message), flush=True)


def _ms(seconds):
    return '%.2f ms' % (1000 * seconds)


def _combined(runs):
    """The runs of one contestant added up, and the range of their CPU
    per request."""
    total = {key: sum(figures[key] for figures in runs)
             for key in ('requests', 'wall_seconds', 'server_cpu',
                         'database_cpu')}
    each = [cpu_per_request(figures) for figures in runs]
    total.update(per_second=total['requests'] / total['wall_seconds'],
                 low=min(each), high=max(each),
                 p50=services.percentile([f['p50'] for f in runs], 0.5))
    return total


def _range(low, high):
    if abs(high - low) < 0.005e-3:
        return _ms(low)
    return '%.2f-%.2f ms' % (1000 * low, 1000 * high)


def steady_table(report):
    """The mix and GET /, per contestant: requests/s, CPU per request,
    the ratios, and the cores 10,000 hosts' periodic reads need."""
    per_host = sum(report['mix'].values()) / report['tracked']
    rate = 10000 * per_host / REFRESH_EVERY
    lines = ['| load | contestant | requests/s | server CPU / request '
             '| database CPU / request | server + database CPU / request '
             '(range of %d runs) | reference / this | this / bare falcon '
             '| cores per 10,000 hosts |' % report['repeat'],
             '|---|---|---:|---:|---:|---:|---:|---:|---:|']
    for phase, label in (('steady', 'the mix'), ('root', 'GET /')):
        combined = {name: _combined(runs)
                    for name, runs in report[phase].items()}
        reference = cpu_per_request(combined['reference'])
        bare = cpu_per_request(combined['bare_falcon'])
        for name, total in combined.items():
            cpu = cpu_per_request(total)
            lines.append('| %s | %s | %.0f | %s | %s | %s | %.1fx | %.1fx '
                         '| %s |' % (
                             label, name, total['per_second'],
                             _ms(total['server_cpu'] / total['requests']),
                             _ms(total['database_cpu'] / total['requests']),
                             '%s (%s)' % (_ms(cpu), _range(total['low'],
                                                           total['high'])),
                             reference / cpu, cpu / bare,
                             '%.2f' % (rate * cpu) if phase == 'steady'
                             else '-'))
    return '\n'.join(lines)


def routes_table(report):
    """Each route of the mix alone: the CPU per request of every service
    measured (placement_lite with metrics, or at another commit, when the
    run had them)."""
    names = list(report['routes'][READS[0][0]])
    others = [name for name in names
              if name not in ('reference', 'placement_lite')]
    lines = ['| route | microversion | requests per host per %d s '
             '| reference CPU / request | placement_lite | ratio%s '
             '| reference p50 | placement_lite p50 | answers |'
             % (REFRESH_EVERY, ''.join(' | %s' % name for name in others)),
             '|---|---|---:|---:|---:|---:|%s---:|---:|---|'
             % ('---:|' * len(others))]
    for kind, what, version in READS:
        results = {name: runs[0] for name, runs
                   in report['routes'][kind].items()}
        reference, lite = results['reference'], results['placement_lite']
        lines.append('| `%s` | %s | %.2f | %s | %s | %.1fx |%s %s | %s | %s |'
                     % (what, version or '1.0',
                        report['mix'][kind] / report['tracked'],
                        _ms(cpu_per_request(reference)),
                        _ms(cpu_per_request(lite)),
                        cpu_per_request(reference) / cpu_per_request(lite),
                        ''.join(' %s |' % _ms(cpu_per_request(results[name]))
                                for name in others),
                        _ms(reference['p50']), _ms(lite['p50']),
                        report['answers'].get(kind, '-')))
    return '\n'.join(lines)


def writes_table(report):
    lines = ['| write | microversion | writes | reference writes/s '
             '| CPU / write | placement_lite writes/s | CPU / write '
             '| ratio |', '|---|---|---:|---:|---:|---:|---:|---:|']
    for kind, what, version in WRITES:
        results = report['writes'][kind]
        reference, lite = results['reference'], results['placement_lite']
        lines.append('| %s | %s | %d | %.0f | %s | %.0f | %s | %.1fx |' % (
            what, version, lite['writes'],
            reference['writes'] / reference['wall_seconds'],
            _ms(reference['cpu_per_write']),
            lite['writes'] / lite['wall_seconds'],
            _ms(lite['cpu_per_write']),
            reference['cpu_per_write'] / lite['cpu_per_write']))
    return '\n'.join(lines)


def describe(report):
    mix = ', '.join('%s %d' % item for item in report['mix'].items())
    return ('%s compute hosts (%s providers); the periodic reads of %d of '
            'them (one %d-s period: %s), from %d clients, %d uwsgi '
            'processes per contestant; %s, commit %s; load average %.1f '
            'before, %.1f after.' % (
                '{:,}'.format(report['hosts']),
                '{:,}'.format(report['providers']), report['tracked'],
                REFRESH_EVERY, mix, report['clients'], report['processes'],
                report['date'], report['commit'], report['load'],
                report['load_after']))


TITLE = "## A region's steady load: nova-compute's periodic reads"

DESCRIPTION = """Most of a region's requests are not candidates requests but
the periodic reads of every nova-compute (issue 60): its allocations
every 60 s, its tree, each provider's inventories, aggregates and traits
and the sharing providers of its aggregates every 300 s, about 3,300
requests per second at 50,000 hosts. `python -m tests.bench --modes
steady --steady-hosts 1000 20000` (or `python -m tests.bench.steady
--hosts 1000 --with-metrics --baseline DIR`, DIR an export of another
commit) sends one period of that mix for 300 hosts from 8 clients to the
reference, placement_lite and a bare falcon app answering one fixed body
under the same uwsgi line (4 processes), each service on its own copy of
the cloud on one PostgreSQL, in turns, and counts the CPU of uwsgi and of
the PostgreSQL backends per request (`tests/bench/steady.py`). CPU per
request is the figure to read on a shared machine: wall times and
requests/s move with what else runs, CPU per request much less (it still
grows with the load: caches and cores are shared)."""

PROFILE = """### Where a small request's CPU goes

`python -m tests.bench.request_cost --hosts 1000` builds the application
as `placement_lite.wsgi` does, on the same cloud in the throwaway
PostgreSQL, and calls it in-process with the headers nova sends, 2,000
times per route in turns; each moment is charged to the innermost layer
or part running (`--cprofile ROUTE` for functions instead). The figures
below are microseconds per request of `GET .../traits` (1.6), the
sharing providers' listing and `GET /`. Before: commit 0f032fd (CPU
charged, load average 4.9 to 5.7); after: commit 54b1f95 (wall clock
charged, load average 11.4 to 13.0, which about doubles each part: read
the shares and the statements, not the microseconds).

| part | traits before | after | sharing before | after | GET / before | after |
|---|---:|---:|---:|---:|---:|---:|
| the handler's own code | 234 | 273 | 1182 | 713 | 75 | 41 |
| SQLAlchemy running statements | 238 | 429 | 914 | 876 | 0 | 0 |
| SQLAlchemy compiling (its cache) | 46 | 104 | 680 | 161 | 0 | 0 |
| the driver (waiting for PostgreSQL) | 202 | 5353 | 449 | 11257 | 0 | 0 |
| the pool | 141 | 265 | 132 | 339 | 0 | 0 |
| the request log (oslo.log's line) | 260 | 734 | 287 | 873 | 181 | 1117 |
| policy | 203 | 153 | 174 | 160 | 0 | 0 |
| microversion | 156 | 24 | 164 | 22 | 115 | 20 |
| request id | 124 | 70 | 115 | 59 | 98 | 60 |
| falcon | 78 | 131 | 74 | 152 | 57 | 107 |
| request context, rendering, the thin layers | 167 | 231 | 172 | 241 | 133 | 159 |
| **the process's CPU, uncharged** | 2049 | 1434 | 5181 | 2957 | 494 | 290 |
| statements per request | 2.0 | 1.0 | 5.0 | 3.0 | 0 | 0 |
| PostgreSQL backend CPU per request | 815 | 575 | 3070 | 2205 | 0 | 0 |

What was taken, by number:

- **round trips**: a provider's read (its inventories, traits,
  aggregates, allocations) is one statement with its generation, not a
  lookup and a read; the sharing listing checks that a filter finds
  something only when a later one could still refuse the request.
- **statements built once**: the provider listing's statement per shape
  (its values bound), the trait and aggregate id lookups.
- **policy**: oslo.policy's look for changed files on every check (its
  file searched for in every configuration directory, each rule walked)
  cost more than the read's SQL; it is asked again only when a path it
  reads changed (8 `stat` calls, 30 to 50 us on this machine: most of
  what is left of the policy's part; a check at most once a second would
  let a request be decided by rules changed before it).
- **middleware**: the request id and the microversion without webob's
  request and response around each answer; the microversion, and
  whether an Accept header takes JSON, worked out once per header value;
  the version document made once.
- **metrics**: a request's series found once per label set (prometheus_
  client's `labels()` checks and locks on every call). What is left is
  about 5 increments to mmapped files per request, each asking
  `os.getpid()` (a system call, 0.3 us: about 2 us a request). A pid kept
  across requests would need a hook after uwsgi's fork, which uwsgi calls
  only with `py-call-osafterfork`; not worth the risk of two workers
  writing one file. With metrics on, the mix measured within noise of
  without (commit 54b1f95: 2.64 ms against 2.67 per request).

Then the reads prepared (`db/prepared.py`): before, commit 4b23c09;
after, commit 7354d2a; the same command, 1,000 requests per route, wall
clock charged, load average 3.7 to 5.7 (the process's CPU and the
backend's are the figures to compare).

| per request (us) | aggregates | allocations | inventories | traits | in_tree | sharing | GET / |
|---|---:|---:|---:|---:|---:|---:|---:|
| PostgreSQL backend CPU, before | 440 | 710 | 510 | 410 | 560 | 1780 | 0 |
| after | 90 | 140 | 90 | 140 | 140 | 2170 | 0 |
| the process's CPU, uncharged, before | 915 | 1064 | 1063 | 865 | 1188 | 1995 | 200 |
| after | 520 | 596 | 491 | 589 | 558 | 2210 | 148 |
| SQLAlchemy running and compiling, before | 208 | 218 | 220 | 240 | 220 | 608 | 0 |
| after (an EXECUTE runs as the driver's text, charged to the handler) | 0 | 0 | 0 | 0 | 0 | 257 | 0 |
| the handler's own code, before | 149 | 161 | 180 | 177 | 311 | 414 | 29 |
| after | 194 | 209 | 229 | 230 | 303 | 473 | 20 |

- **PostgreSQL planning each statement** was most of the database's
  CPU per request (`EXPLAIN ANALYZE` of the provider reads: planning
  0.17 to 0.42 ms, execution 0.04 to 0.06 ms). psycopg2 prepares
  nothing, so the reads of one provider (its inventories, traits,
  aggregates, allocations), the listings without filters (`in_tree`)
  and the trait and aggregate id lookups are prepared once per
  connection and run by name: the backend's CPU for them is a fifth to a
  quarter of what it was, and SQLAlchemy's compiling and result set-up
  for them are gone. The sharing listing's own statement has filters
  and is not prepared (its shapes are many, and a generic plan of a
  capacity filter could be far worse than one made for the values): it
  costs what it did.

What is left, and what would take it:

- **the request log**, the largest part after the database (about 200
  us): the reference logs the same line; oslo.log's formatter (its
  context, an ISO time through dateutil) and one write. Only a formatter
  of our own would take it, and the line's format is the operator's
  (`logging_context_format_string`).
- **SQLAlchemy per statement and the pool** (about 200 us): a connection
  checked out and in, an execution context and a result per statement.
  The driver's cursor used straight would take most of it, but then
  SQLAlchemy's error handling (a lost connection answered 503, the pool
  emptied) and the statement events the metrics count would have to be
  made again by hand.
- **the sharing listing** (3 statements, about 2 ms of the backend):
  one statement with the lookups folded in, or its filtered statements
  prepared per shape with a bound on how many a connection keeps.
- **kept state**: the goal, a tenth of the reference's CPU (1.1 ms per
  request in the run above), is below what one round trip costs the
  process (SQLAlchemy, the pool, the driver: about 0.5 ms) plus the WSGI
  stack and the request log (about 0.6 ms) plus uwsgi (0.13 ms). A read
  answered from what a process keeps still needs one round trip to know
  it is current (another service may write the database: "Which writes
  a cache must see" in docs/architecture.md; on PostgreSQL, the
  transactions logged since), and that round trip costs what a prepared
  read now costs: kept answers would save the rows and their rendering,
  not the round trip. A process could know without a round trip only if
  every writer told it (LISTEN/NOTIFY from the triggers), and a
  notification reaches a listener after the writer's commit has
  returned, so a read right after another service's write could miss
  it: not correct."""


def section(reports):
    """The steady load at every size, and the profile, for
    docs/benchmark.md."""
    parts = [TITLE, '', DESCRIPTION]
    for report in reports:
        parts += ['', '### %s compute hosts' % '{:,}'.format(report['hosts']),
                  '', markdown(report)]
    return '\n'.join(parts + ['', PROFILE])


def markdown(report):
    return '\n\n'.join([describe(report), steady_table(report),
                        routes_table(report), writes_table(report)])


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m tests.bench.steady',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, nargs='+', default=[1000])
    parser.add_argument('--tracked', type=int, default=300,
                        help='hosts whose periodic reads the mix sends')
    parser.add_argument('--clients', type=int, default=8)
    parser.add_argument('--processes', type=int, default=4)
    parser.add_argument('--repeat', type=int, default=3,
                        help='runs of the mix and of GET /, in turns')
    parser.add_argument('--rounds', type=int, default=4,
                        help='rounds of each write (even: the hosts are '
                             'left as they were)')
    parser.add_argument('--minimum', type=int, default=2000,
                        help='requests of GET / and of each route alone')
    parser.add_argument('--with-metrics', action='store_true',
                        help="also placement_lite with [metrics] enabled")
    parser.add_argument('--baseline', metavar='CHECKOUT',
                        help='also placement_lite from this directory, '
                             'named for it (an export of another commit: '
                             'git archive COMMIT | tar -x -C DIR/COMMIT), '
                             'run with the same packages')
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    # Stopped with SIGTERM, still stop the services and PostgreSQL.
    signal.signal(signal.SIGTERM, lambda *_args: sys.exit(143))
    venv = services.reference_venv()
    for hosts in args.hosts:
        report = run(hosts, args.tracked, args.clients, args.processes,
                     args.repeat, args.rounds, args.minimum,
                     args.with_metrics, args.baseline, venv)
        print(markdown(report))


if __name__ == '__main__':
    main()
