"""The metrics themselves (prometheus_client), the middleware that counts
requests and serves ``/metrics``, and the capacity gauges computed at
each scrape. Imported by ``placement_lite.metrics.wrap`` only, once the
multiprocess directory is set."""

import glob
import http
import ipaddress
import json
import logging
import os
import re
import threading
import time

from falcon import routing
import prometheus_client
from prometheus_client import core
from prometheus_client import multiprocess
import sqlalchemy as sa

from placement_lite import errors
from placement_lite import metrics
from placement_lite import observe
from placement_lite import requestlog
from placement_lite.db import api as db_api
from placement_lite.db import capacity as capacity_db

LOG = logging.getLogger(__name__)

PATH = '/metrics'
#: The route label of a path no route has.
UNMATCHED = 'unmatched'
#: Methods counted by name; any other is counted as OTHER_METHOD.
METHODS = frozenset(('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE',
                     'OPTIONS'))
OTHER_METHOD = 'other'
#: The microversion label of an answer without one (a 401 before it is
#: read, for example).
NO_MICROVERSION = 'none'

#: Seconds, for request latency: from a request served from memory (1 ms)
#: to a whole-cloud candidates answer at region scale (tens of seconds).
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                   1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
#: Database statements one request ran.
STATEMENT_BUCKETS = (0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89)
#: Candidates returned and trees searched by one candidates request.
COUNT_BUCKETS = (0, 1, 10, 50, 100, 500, 1000, 5000, 10000, 50000, 100000)

#: The claims counted: (route template, method).
CLAIM_ROUTES = frozenset((('/allocations/{consumer_uuid}', 'PUT'),
                          ('/allocations', 'POST')))
CLAIMED = 'claimed'
GENERATION_CONFLICT = 'generation_conflict'
CAPACITY = 'capacity'

#: The gauges of capacity per resource class, computed at every scrape:
#: (name, help, position in db.capacity.class_totals rows). The inventories'
#: total is not ``placement_inventory_total``: Prometheus keeps a ``_total``
#: suffix for counters (promtool refuses it on a gauge).
CAPACITY_GAUGES = (
    ('placement_inventory_total_amount', 'Inventory total of every '
     'provider, added up per resource class.', 1),
    ('placement_inventory_reserved', 'Inventory reserved of every '
     'provider, added up per resource class.', 2),
    ('placement_inventory_capacity', 'Capacity, (total - reserved) * '
     'allocation_ratio of each inventory, added up per resource class.', 3),
    ('placement_inventory_used', 'Amounts allocated, added up per resource '
     'class.', 4),
)


class Metrics:
    """Every metric, and the registry a scrape reads: in multiprocess mode
    the counts of every process of the server (their files), otherwise
    this process's own."""

    def __init__(self, multiprocess_dir, db):
        # A series per label set is enough: its _created twin (the time it
        # was first counted) is not written in multiprocess mode either.
        prometheus_client.disable_created_metrics()
        self.multiprocess_dir = multiprocess_dir
        self.registry = prometheus_client.CollectorRegistry()
        # In multiprocess mode each metric writes to this process's files,
        # which the registry reads back; registered here too, they would
        # be counted twice.
        owner = None if multiprocess_dir else self.registry
        if multiprocess_dir:
            multiprocess.MultiProcessCollector(self.registry,
                                               path=multiprocess_dir)

        def counter(name, text, labels=()):
            return prometheus_client.Counter(name, text, labels,
                                             registry=owner)

        def histogram(name, text, buckets, labels=()):
            return prometheus_client.Histogram(name, text, labels,
                                               buckets=buckets,
                                               registry=owner)

        self.requests = counter(
            'placement_requests', 'Requests answered, by route template, '
            'method, status and microversion.',
            ('route', 'method', 'status', 'microversion'))
        self.latency = histogram(
            'placement_request_duration_seconds', 'Seconds from a request '
            'to its answer, by route template, method and microversion.',
            LATENCY_BUCKETS, ('route', 'method', 'microversion'))
        self.statements = histogram(
            'placement_db_statements_per_request', 'Database statements '
            'one request ran, by route template.', STATEMENT_BUCKETS,
            ('route',))
        self.candidates = histogram(
            'placement_candidates_returned', 'Allocation candidates one '
            'request returned.', COUNT_BUCKETS)
        self.trees = histogram(
            'placement_candidates_trees_searched', 'Trees one allocation '
            'candidates request found a provider in for some group.',
            COUNT_BUCKETS)
        self.empty = counter(
            'placement_candidates_empty', 'Allocation candidates requests '
            'answered 200 with no candidate.')
        self.emptied = counter(
            'placement_candidates_emptied', 'Empty allocation candidates '
            'answers with explain, by the step that left nothing.',
            ('step',))
        self.windows = counter(
            'placement_candidates_windows', 'Windows of trees searched by '
            'bounded allocation candidates requests.')
        self.claims = counter(
            'placement_claims', 'Allocation writes (PUT '
            '/allocations/{consumer_uuid}, POST /allocations) by outcome: '
            'claimed (204), generation_conflict or capacity (409).',
            ('outcome',))
        self.claim_retries = counter(
            'placement_claim_retries', 'Allocation writes started again in '
            'a new transaction after a concurrent change.')
        self.lock_waits = counter(
            'placement_db_lock_waits', 'Writes that found rows they lock '
            'held by another transaction, were rolled back and waited for '
            'them (a writer of another service, during a takeover, or of '
            'this one).')
        self.replica_reads = counter(
            'placement_db_replica_reads', 'Reads served by the replica '
            '([placement_database] slave_connection).')
        self.cloud_reads = counter(
            'placement_cache_cloud_reads', 'Whole-cloud reads by how the '
            "process's last read served: as_is, patched, read_whole.",
            ('how',))
        self.stocks = counter(
            'placement_cache_stock_lookups', "Providers placed from the "
            "process's kept stock (hit) or read from the database (miss).",
            ('result',))
        self.checked_out = prometheus_client.Gauge(
            'placement_db_connections_checked_out', 'Pooled database '
            'connections in use, by pool (write, read, replica).',
            ('pool',), registry=owner, multiprocess_mode='livesum')
        self.registry.register(CapacityCollector(db))
        self._counting = threading.local()
        #: The series a request's labels count in, found once per label
        #: set: prometheus_client's ``labels()`` checks and locks on every
        #: call. (The labels are bounded: route templates, methods,
        #: statuses and microversions.)
        self._series = {}
        _watch_database(self, db)
        observe.watch(_Watcher(self))

    def start_request(self):
        self._counting.statements = 0

    def statement(self):
        self._counting.statements = getattr(self._counting, 'statements',
                                            0) + 1

    def request_done(self, environ, route, status, microversion, seconds):
        method = environ.get('REQUEST_METHOD', '')
        if method not in METHODS:
            method = OTHER_METHOD
        counted = self._series.get((route, method, status, microversion))
        if counted is None:
            counted = self._series[route, method, status, microversion] = (
                self.requests.labels(route, method, status, microversion),
                self.latency.labels(route, method, microversion),
                self.statements.labels(route))
        requests, latency, statements = counted
        requests.inc()
        latency.observe(seconds)
        statements.observe(getattr(self._counting, 'statements', 0))
        if requestlog.CANDIDATES in environ:
            self._candidates_done(environ, status)
        if (route, method) in CLAIM_ROUTES:
            self._claim_done(environ, status)

    def _candidates_done(self, environ, status):
        returned, trees = environ[requestlog.CANDIDATES]
        self.candidates.observe(returned)
        self.trees.observe(trees)
        if returned or status != '200':
            return
        self.empty.inc()
        explanation = environ.get(metrics.EXPLANATION)
        if explanation is not None:
            self.emptied.labels(_emptied_by(explanation)).inc()

    def _claim_done(self, environ, status):
        if status == '204':
            self.claims.labels(CLAIMED).inc()
        elif status == '409':
            self.claims.labels(
                GENERATION_CONFLICT
                if environ.get(metrics.ERROR_CODE) == errors.CONCURRENT_UPDATE
                else CAPACITY).inc()

    def exposition(self):
        """(content type, body) of a scrape."""
        if self.multiprocess_dir:
            _forget_dead_processes(self.multiprocess_dir)
        return (prometheus_client.CONTENT_TYPE_LATEST,
                prometheus_client.generate_latest(self.registry))


def _emptied_by(explanation):
    """The name of the step that left an empty answer with nothing: a
    group's, the first group's that emptied, else the trees'."""
    for group in explanation.groups:
        if group.emptied_by is not None:
            return group.emptied_by.step
    if explanation.trees_emptied_by is not None:
        return explanation.trees_emptied_by.step
    return 'none'


class _Watcher(observe.Watcher):
    """The engine's, the database's and the domain's reports, counted."""

    def __init__(self, counted):
        self.cloud_reads = {how: counted.cloud_reads.labels(how) for how in (
            observe.CLOUD_AS_IS, observe.CLOUD_PATCHED,
            observe.CLOUD_READ_WHOLE)}
        self.hits = counted.stocks.labels('hit')
        self.misses = counted.stocks.labels('miss')
        self.windows = counted.windows
        self.retries = counted.claim_retries
        self.lock_waits = counted.lock_waits

    def cloud_read(self, how):
        self.cloud_reads[how].inc()

    def stocks(self, kept, read):
        if kept:
            self.hits.inc(kept)
        if read:
            self.misses.inc(read)

    def window_searched(self):
        self.windows.inc()

    def allocation_write_retried(self):
        self.retries.inc()

    def write_waited_for_rows(self):
        self.lock_waits.inc()


def _watch_database(counted, db):
    """Count the statements of each request, the pooled connections in
    use, and the reads the replica serves."""
    pools = {db.engine: 'write'}
    pools.setdefault(db.read_engine, 'read')
    pools.setdefault(db.replica_engine, 'replica')
    for engine, pool in pools.items():
        sa.event.listen(engine, 'before_cursor_execute',
                        lambda *_args: counted.statement())
        gauge = counted.checked_out.labels(pool)
        sa.event.listen(engine, 'checkout', lambda *_args, gauge=gauge:
                        gauge.inc())
        sa.event.listen(engine, 'checkin', lambda *_args, gauge=gauge:
                        gauge.dec())
    if db.replica_engine is not db.read_engine:
        sa.event.listen(db.replica_engine, 'checkout',
                        lambda *_args: counted.replica_reads.inc())


_PID_OF_LIVE_GAUGE = re.compile(r'gauge_live\w+_(\d+)\.db$')


def _forget_dead_processes(directory):
    """Drop the live gauges (connections in use) of the processes that are
    gone: a worker killed or recycled uses none any more. Their counters
    and histograms stay, so that totals never go backwards."""
    for path in glob.glob(os.path.join(directory, 'gauge_live*.db')):
        pid = int(_PID_OF_LIVE_GAUGE.search(path).group(1))
        if not _alive(pid):
            multiprocess.mark_process_dead(pid, directory)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class CapacityCollector:
    """The capacity gauges, read at each scrape: one statement on the
    replica (the primary without one) that adds up every inventory and
    allocation per class (db.capacity.class_totals), whichever process
    answers the scrape. A database that cannot be reached leaves them out
    of that scrape (the request counters are still served)."""

    def __init__(self, db):
        self.db = db

    def collect(self):
        started = time.perf_counter()
        try:
            with self.db.replica_reader() as conn:
                totals = capacity_db.class_totals(conn)
        except sa.exc.SQLAlchemyError as exc:
            if not db_api.is_unavailable(exc):
                raise
            LOG.warning('capacity gauges left out of a scrape: %s', exc)
            return
        for name, text, position in CAPACITY_GAUGES:
            gauge = core.GaugeMetricFamily(name, text,
                                           labels=('resource_class',))
            for row in totals:
                gauge.add_metric((row[0],), row[position])
            yield gauge
        yield core.GaugeMetricFamily(
            'placement_capacity_read_seconds', 'Seconds the capacity gauges '
            'of this scrape took to read.', time.perf_counter() - started)


class Middleware:
    """Counts each request by route template, and answers ``/metrics`` to
    the allowed networks (403 to any other address), before auth."""

    def __init__(self, application, counted, routes, allowed_networks):
        self.application = application
        self.metrics = counted
        self.router = routing.CompiledRouter()
        for path, resource in routes:
            self.router.add_route(path, resource())
        self.allowed = [_network(network) for network in allowed_networks]

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO') == PATH:
            return self._scrape(environ, start_response)
        started = time.perf_counter()
        self.metrics.start_request()
        answer = {}

        def recording_start_response(status, headers, exc_info=None):
            answer['status'] = status.split(' ', 1)[0]
            for name, value in headers:
                if name.lower() == 'openstack-api-version':
                    answer['microversion'] = value.split(' ')[-1]
            return start_response(status, headers, exc_info)

        body = self.application(environ, recording_start_response)
        self.metrics.request_done(
            environ, self._route(environ.get('PATH_INFO', '')),
            answer.get('status', ''),
            answer.get('microversion', NO_MICROVERSION),
            time.perf_counter() - started)
        return body

    def _route(self, path):
        try:
            found = self.router.find(path)
        except (ValueError, UnicodeError):
            return UNMATCHED
        return UNMATCHED if found is None else found[3]

    def _scrape(self, environ, start_response):
        if environ.get('REQUEST_METHOD') not in ('GET', 'HEAD'):
            return _error(start_response, 405, 'Use GET.', [('Allow', 'GET')])
        if not self._allowed(environ.get('REMOTE_ADDR', '')):
            return _error(start_response, 403, '/metrics is served only to '
                          '[metrics] allowed_networks.')
        content_type, body = self.metrics.exposition()
        start_response('200 OK', [('Content-Type', content_type),
                                  ('Content-Length', str(len(body)))])
        return [b''] if environ['REQUEST_METHOD'] == 'HEAD' else [body]

    def _allowed(self, address):
        try:
            address = ipaddress.ip_address(address)
        except ValueError:
            return False
        address = getattr(address, 'ipv4_mapped', None) or address
        return any(address in network for network in self.allowed)


def _network(text):
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError as exc:
        raise ValueError('[metrics] allowed_networks: %s' % exc) from None


def _error(start_response, status, detail, headers=()):
    phrase = http.HTTPStatus(status).phrase
    body = json.dumps({'errors': [{'status': status, 'title': phrase,
                                   'detail': detail}]}).encode()
    start_response('%d %s' % (status, phrase), [
        ('Content-Type', 'application/json'),
        ('Content-Length', str(len(body)))] + list(headers))
    return [body]
