"""A region restart: every nova-compute starting at once.

    python -m tests.bench.restart --hosts 5000 50000 --clients 64

``--clients`` concurrent clients (threads in ``--client-processes``
processes) replay nova-compute's start-up for the compute hosts, one host
after another each, as nova's report client does it: read the host's
provider tree (``GET /resource_providers?in_tree=``), each provider's
inventories, traits and aggregates and the sharing providers of the
host's aggregates, then write each provider's inventories, traits and
aggregates back with the generations read (``PUT``; the same contents).
A 409 re-reads what was refused and writes again (up to ``RETRIES``).

Each service runs on a fresh copy of the same cloud (tests/bench/
builder.py), 4 uwsgi workers. ``--max-hosts`` replays that many hosts
spread over the cloud instead of all of them (at 50,000 hosts all of them
is 2.3 million requests). Reported: requests per second, p50/p99 per
route, 409s, 5xx (must be none), and the ratio to the reference.
"""

import argparse
import collections
import datetime
import json
import multiprocessing
import os
import sys
import threading
import time
import urllib.parse

from tests.bench import cloud as bench_cloud
from tests.bench import services

VERSION = '1.39'
RETRIES = 5
REPORTS = os.path.join(services.REPO, 'reports')


class Failed(Exception):
    """A request was answered with an unexpected status."""


class NovaCompute:
    """The start-up of one nova-compute after another, through one client;
    ``samples`` gets {route: [seconds]}, ``statuses`` {status: count}."""

    def __init__(self, client):
        self.client = client
        self.samples = collections.defaultdict(list)
        self.statuses = collections.Counter()

    def _call(self, route, method, path, body=None, expected=(200,)):
        status, raw, seconds = self.client.fetch(method, path, body,
                                                 version=VERSION)
        self.samples[route].append(seconds)
        self.statuses[status] += 1
        if status == 409 and 409 not in expected:
            return None
        if status not in expected:
            raise Failed('%s %s -> %d %s' % (method, path, status, raw[:200]))
        return json.loads(raw) if raw else None

    def start(self, root):
        """What one nova-compute asks and writes when it starts."""
        tree = self._call('GET in_tree', 'GET',
                          '/resource_providers?in_tree=%s' % root)
        for provider in tree['resource_providers']:
            base = '/resource_providers/%s' % provider['uuid']
            inventories = self._call('GET inventories', 'GET',
                                     base + '/inventories')
            traits = self._call('GET traits', 'GET', base + '/traits')
            aggregates = self._call('GET aggregates', 'GET',
                                    base + '/aggregates')
            if provider['uuid'] == root and aggregates['aggregates']:
                self._call('GET sharing', 'GET', '/resource_providers?'
                           + urllib.parse.urlencode({
                               'member_of': 'in:' + ','.join(
                                   aggregates['aggregates']),
                               'required': 'MISC_SHARES_VIA_AGGREGATE'}))
            generation = aggregates['resource_provider_generation']
            for member, shown in (('inventories', inventories),
                                  ('traits', traits),
                                  ('aggregates', aggregates)):
                generation = self._put(base, member, shown[member],
                                       generation)

    def _put(self, base, member, wanted, generation):
        """PUT ``wanted`` with the provider's last known generation (as
        the report client keeps it); on a 409, read it again and retry.
        Returns the new generation."""
        for _attempt in range(RETRIES):
            written = self._call('PUT ' + member, 'PUT',
                                 '%s/%s' % (base, member), {
                                     'resource_provider_generation':
                                         generation, member: wanted})
            if written is not None:
                return written['resource_provider_generation']
            generation = self._call('GET ' + member, 'GET', '%s/%s' % (
                base, member))['resource_provider_generation']
        raise Failed('PUT %s/%s: still 409 after %d tries'
                     % (base, member, RETRIES))


def _client_process(port, roots, threads, start, results):
    """``threads`` clients, each starting its share of ``roots`` in turn."""
    computes = [NovaCompute(services.HttpClient(port, timeout=120))
                for _ in range(threads)]
    errors = []

    def replay(compute, share):
        for root in share:
            try:
                compute.start(root)
            except Failed as failed:
                errors.append(str(failed))

    workers = [threading.Thread(target=replay, args=(
        compute, roots[index::threads])) for index, compute
        in enumerate(computes)]
    start.wait()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    samples = collections.defaultdict(list)
    statuses = collections.Counter()
    for compute in computes:
        for route, seconds in compute.samples.items():
            samples[route].extend(seconds)
        statuses.update(compute.statuses)
    results.put((dict(samples), dict(statuses), errors))


def replay(port, roots, clients, processes):
    """Start every host of ``roots`` through ``clients`` concurrent
    clients; (wall seconds, {route: [seconds]}, {status: count},
    [errors])."""
    context = multiprocessing.get_context('fork')
    start = context.Event()
    results = context.Queue()
    per_process = clients // processes
    workers = [context.Process(target=_client_process, args=(
        port, roots[index::processes], per_process, start, results))
        for index in range(processes)]
    for worker in workers:
        worker.start()
    started = time.monotonic()
    start.set()
    gathered = [results.get() for _ in workers]
    wall = time.monotonic() - started
    for worker in workers:
        worker.join()
    samples = collections.defaultdict(list)
    statuses = collections.Counter()
    errors = []
    for each_samples, each_statuses, each_errors in gathered:
        for route, seconds in each_samples.items():
            samples[route].extend(seconds)
        statuses.update(each_statuses)
        errors += each_errors
    return wall, dict(samples), dict(statuses), errors


def hosts_replayed(cloud, max_hosts):
    """The compute hosts' root uuids, or ``max_hosts`` of them spread
    evenly over the cloud."""
    roots = [provider.uuid for provider in cloud.providers
             if provider.parent is None and provider.name.startswith('cn')]
    if max_hosts and max_hosts < len(roots):
        step = len(roots) / max_hosts
        roots = [roots[int(index * step)] for index in range(max_hosts)]
    return roots


def run(hosts, clients, processes, max_hosts, names, venv, quick=False,
        log=print):
    """The restart at one size, each service on a fresh copy of the cloud;
    the report, also written to reports/restart-<hosts>.json
    (restart-quick-<hosts>.json for a smoke run)."""
    cloud = bench_cloud.build(hosts)
    roots = hosts_replayed(cloud, max_hosts)
    templates, seconds = services.cloud_templates(cloud, names, venv,
                                                  'restart', log)
    report = {'hosts': hosts, 'providers': len(cloud.providers),
              'replayed': len(roots), 'clients': clients,
              'build_seconds': round(seconds, 1), 'services': {},
              'date': datetime.datetime.now(datetime.timezone.utc).strftime(
                  '%Y-%m-%d %H:%M UTC'), 'load': os.getloadavg()[0]}
    for name in names:
        run_name = 'restart_%s_%d_%d' % (name, hosts, os.getpid())
        service = services.start_on_copy(name, templates[name], run_name,
                                         venv)
        try:
            log('%s: %d clients starting %d of %d hosts'
                % (name, clients, len(roots), hosts))
            wall, samples, statuses, errors = replay(
                service.port, roots, clients, processes)
        finally:
            service.stop()
        requests = sum(statuses.values())
        report['services'][name] = {
            'wall_seconds': wall, 'requests': requests,
            'per_second': requests / wall, 'statuses': statuses,
            'errors': errors[:20], 'error_count': len(errors),
            'p50': {route: services.percentile(seconds, 0.5)
                    for route, seconds in samples.items()},
            'p99': {route: services.percentile(seconds, 0.99)
                    for route, seconds in samples.items()},
            'count': {route: len(seconds) for route, seconds
                      in samples.items()}}
        log('%s: %d requests in %.0f s, %.0f/s, statuses %s, %d errors'
            % (name, requests, wall, requests / wall, statuses, len(errors)))
    report['load_after'] = os.getloadavg()[0]
    os.makedirs(REPORTS, exist_ok=True)
    file_name = 'restart-quick-%d.json' if quick else 'restart-%d.json'
    with open(os.path.join(REPORTS, file_name % hosts), 'w') as out:
        json.dump(report, out, indent=1)
    return report


ROUTES = ('GET in_tree', 'GET inventories', 'GET traits', 'GET aggregates',
          'GET sharing', 'PUT inventories', 'PUT traits', 'PUT aggregates')
SERVICES = ('placement_lite', 'reference')


def _ms(seconds):
    return '%.1f ms' % (1000 * seconds)


def table(report):
    """One size's restart, as markdown: the totals, then each route."""
    measured = report['services']
    lines = ['| service | requests | seconds | requests/s | 409s | 5xx '
             '| failed hosts |', '|---|---:|---:|---:|---:|---:|---:|']
    for name in SERVICES:
        if name not in measured:
            continue
        result = measured[name]
        statuses = {int(status): count for status, count
                    in result['statuses'].items()}
        lines.append('| %s | %d | %.0f | %.0f | %d | %d | %d |' % (
            name, result['requests'], result['wall_seconds'],
            result['per_second'], statuses.get(409, 0),
            sum(count for status, count in statuses.items()
                if status >= 500), result['error_count']))
    lines += ['', '| route | requests | placement_lite p50 | p99 '
              '| reference p50 | p99 | ratio (p50) |',
              '|---|---:|---:|---:|---:|---:|---:|']
    for route in ROUTES:
        cells = []
        for name in SERVICES:
            result = measured.get(name)
            for key in ('p50', 'p99'):
                cells.append(_ms(result[key][route]) if result and route
                             in result[key] else '-')
        lite, ref = (measured.get(name) for name in SERVICES)
        both = lite and ref and route in lite['p50'] and route in ref['p50']
        count = (lite or ref)['count'].get(route, 0)
        lines.append('| %s | %d | %s | %s |' % (
            route, count, ' | '.join(cells),
            '%.1fx' % (ref['p50'][route] / lite['p50'][route]) if both
            else '-'))
    return '\n'.join(lines)


DESCRIPTION = (
    '`python -m tests.bench.restart` (tests/bench/restart.py): concurrent '
    "clients replay nova-compute's start-up for the compute hosts, one "
    'host after another each, as its report client does: the provider '
    "tree (`GET /resource_providers?in_tree=`), each provider's "
    'inventories, traits and aggregates, the sharing providers of the '
    "host's aggregates, then each provider's inventories, traits and "
    'aggregates written back (`PUT`, the same contents) with the '
    'generations read; a 409 is read again and retried. Each service '
    'runs on a fresh copy of the same cloud, 4 uwsgi workers, the clients '
    'on the same machine.')


def markdown(reports):
    """The restarts of every size, for docs/benchmark.md."""
    parts = ['## Region restart', '', DESCRIPTION]
    for report in reports:
        parts += ['', '### %s compute hosts (%s providers)' % (
            '{:,}'.format(report['hosts']),
            '{:,}'.format(report['providers'])), '',
            '%s of the %s hosts replayed by %d concurrent clients; %s; load '
            'average %.1f before, %.1f after.' % (
                '{:,}'.format(report['replayed']),
                '{:,}'.format(report['hosts']), report['clients'],
                report['date'], report['load'], report['load_after']), '',
            table(report)]
    return '\n'.join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m tests.bench.restart',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, nargs='+', default=[5000])
    parser.add_argument('--clients', type=int, default=64)
    parser.add_argument('--client-processes', type=int, default=8)
    parser.add_argument('--max-hosts', type=int,
                        help='replay this many hosts, spread over the cloud')
    parser.add_argument('--only', choices=SERVICES)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    names = [args.only] if args.only else list(SERVICES)
    venv = services.reference_venv() if 'reference' in names else None
    for hosts in args.hosts:
        run(hosts, args.clients, args.client_processes, args.max_hosts,
            names, venv)


if __name__ == '__main__':
    main()
