"""A boot storm with the scheduler in the loop.

    python -m tests.bench.storm --hosts 1000 --schedulers 8 32 --instances 1000

S scheduler processes (processes, so that parsing the answers does not
share one GIL) place M instances between them as nova does: each asks
``GET /allocation_candidates?resources=...&required=!COMPUTE_STATUS_DISABLED
&limit=1000`` at 1.36, weighs the hosts by their free memory (MEMORY_MB
capacity less usage, summed over the host's tree from the provider
summaries), and claims the best host with ``PUT /allocations/{consumer}``
(consumer_generation null) using that host's first allocation request. On
a 409 it claims the next host (up to ``ALTERNATES``), then asks again (up
to ``REASKS``); an instance is a failure after that.

Each storm runs on a fresh copy of the same cloud (tests/bench/builder.py;
the reference's a copy of its rows), one service at a time, 4 uwsgi
workers. Reported: instances per second, time to place (p50, p99), the
candidates requests' and the claims' times, 409s by reason (from their
bodies: a generation conflict, or which class would exceed the capacity of
which kind of provider), re-asks and failures, the CPU time of uwsgi (its
master and workers) and of the database's PostgreSQL backends per placed
instance (from /proc/<pid>/stat before and after), and where each claimed
instance's VCPU went (the first NUMA node of its host or the second).
Afterwards it checks that no provider is over capacity and that the
project's usages are the instances' allocations.
"""

import argparse
import collections
import datetime
import glob
import json
import multiprocessing
import os
import re
import sys
import time
import urllib.parse

import sqlalchemy as sa

from tests import harness
from tests.bench import cloud as bench_cloud
from tests.bench import services

VERSION = '1.36'
FLAVOR = {'VCPU': 4, 'MEMORY_MB': 8192, 'DISK_GB': 80}
ALTERNATES = 3
REASKS = 3
PROJECT = bench_cloud.make_uuid('storm-project')
USER = bench_cloud.make_uuid('storm-user')
CANDIDATES = '/allocation_candidates?' + urllib.parse.urlencode({
    'resources': ','.join('%s:%d' % item for item in FLAVOR.items()),
    'required': '!COMPUTE_STATUS_DISABLED', 'limit': '1000'})
REPORTS = os.path.join(services.REPO, 'reports')


def weighed_hosts(answer):
    """[(host, its first allocation request)], the host with the most free
    memory first (ties in the order of the answer), as nova's RAM weigher
    ranks them."""
    summaries = answer['provider_summaries']
    free = collections.Counter()
    for summary in summaries.values():
        memory = summary['resources'].get('MEMORY_MB')
        if memory:
            free[summary['root_provider_uuid']] += (memory['capacity']
                                                    - memory['used'])
    first = {}
    for request in answer['allocation_requests']:
        for uuid in request['allocations']:
            summary = summaries[uuid]
            if 'MISC_SHARES_VIA_AGGREGATE' not in summary['traits']:
                first.setdefault(summary['root_provider_uuid'], request)
                break
    return sorted(first.items(), key=lambda item: -free[item[0]])


def conflict_reason(body, kinds):
    """Why a claim got a 409, from its body: 'generation conflict', or
    'capacity: <class> on <kind of provider>'."""
    error = json.loads(body)['errors'][0]
    if error.get('code') == 'placement.concurrent_update':
        return 'generation conflict'
    detail = error.get('detail', '')
    found = re.search(r"for '(\w+)' on resource provider '([0-9a-f-]{36})'",
                      detail)
    if found:
        return 'capacity: %s on %s' % (found.group(1),
                                       kinds.get(found.group(2), '?'))
    return 'other: ' + detail[:100]


def provider_kinds(cloud):
    """{uuid: kind}: 'host', 'numa0', 'numa1', 'pf', 'sharing', ..."""
    kinds = {}
    for provider in cloud.providers:
        if 'MISC_SHARES_VIA_AGGREGATE' in provider.traits:
            kinds[provider.uuid] = 'sharing'
        elif provider.parent is None:
            kinds[provider.uuid] = 'host'
        else:
            kinds[provider.uuid] = re.sub(r'^pf\d+$', 'pf',
                                          provider.name.rsplit('-', 1)[1])
    return kinds


class Scheduler:
    """One scheduler process: places instances until none is left."""

    def __init__(self, client, kinds):
        self.client = client
        self.kinds = kinds

    def _fetch(self, record, what, *args, **kwargs):
        """The client's answer, or None when none came in time: the
        instance's error (at 50,000 hosts, with 8 schedulers, the
        reference answers a candidates request in 111 s at p50, and some
        not within the client's 120 s)."""
        try:
            return self.client.fetch(*args, **kwargs)
        except TimeoutError:
            record['error'] = '%s: no answer within %d s' % (
                what, self.client.timeout)
            return None

    def place(self, consumer):
        """The record of one instance: placed or not, seconds, the
        candidates and claim times, the 409s' reasons, re-asks, where its
        VCPU went."""
        record = {'candidates': [], 'claims': [], 'conflicts': [],
                  'reasks': 0, 'placed': False, 'vcpu_on': None}
        started = time.perf_counter()
        for ask in range(1 + REASKS):
            record['reasks'] = ask
            answer = self._fetch(record, 'candidates', 'GET', CANDIDATES,
                                 version=VERSION)
            if answer is None:
                break
            status, raw, seconds = answer
            record['candidates'].append(seconds)
            if status != 200:
                record['error'] = 'candidates: %d' % status
                break
            for _host, request in weighed_hosts(json.loads(raw))[
                    :1 + ALTERNATES]:
                answer = self._fetch(
                    record, 'claim', 'PUT', '/allocations/%s' % consumer, {
                        'allocations': request['allocations'],
                        'project_id': PROJECT, 'user_id': USER,
                        'consumer_generation': None}, version=VERSION)
                if answer is None:
                    return record
                status, body, seconds = answer
                record['claims'].append(seconds)
                if status == 204:
                    record['placed'] = True
                    record['vcpu_on'] = next(
                        self.kinds.get(uuid) for uuid, held
                        in request['allocations'].items()
                        if 'VCPU' in held['resources'])
                    record['seconds'] = time.perf_counter() - started
                    return record
                if status != 409:
                    record['error'] = 'claim: %d %s' % (status, body[:200])
                    return record
                record['conflicts'].append(conflict_reason(body, self.kinds))
        record['seconds'] = time.perf_counter() - started
        return record


def _scheduler(port, kinds, next_instance, instances, deadline, start,
               results, scheduler_class):
    scheduler = scheduler_class(services.HttpClient(port, timeout=120),
                                kinds)
    records = []
    start.wait()
    while time.monotonic() < deadline:
        with next_instance.get_lock():
            number = next_instance.value
            next_instance.value += 1
        if number >= instances:
            break
        records.append(scheduler.place(bench_cloud.make_uuid(
            'storm-instance-%d' % number)))
    results.put(records)


def cpu_seconds(pids):
    """{pid: user + system CPU seconds} of the processes still there."""
    ticks = os.sysconf('SC_CLK_TCK')
    found = {}
    for pid in pids:
        try:
            with open('/proc/%d/stat' % pid) as stat:
                fields = stat.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        found[pid] = (int(fields[11]) + int(fields[12])) / ticks
    return found


def backends(database):
    """The pids of PostgreSQL's backends serving ``database``."""
    pids = []
    for path in glob.glob('/proc/[0-9]*/cmdline'):
        try:
            with open(path, 'rb') as cmdline:
                title = cmdline.read()
        except OSError:
            continue
        if title.startswith(b'postgres: ') and (
                b' %s ' % database.encode()) in title:
            pids.append(int(path.split('/')[2]))
    return pids


def _server_pids(service):
    return [service.process.pid] + service.worker_pids()


def over_capacity(conn):
    """[provider, class, used, capacity] of each inventory over capacity,
    read on ``conn`` (PostgreSQL or MySQL/MariaDB)."""
    return [list(row) for row in conn.execute(sa.text(
        'SELECT rp.name, rc.name, u.used, (i.total - i.reserved) '
        '* i.allocation_ratio FROM (SELECT resource_provider_id, '
        'resource_class_id, sum(used) AS used FROM allocations '
        'GROUP BY 1, 2) u JOIN inventories i USING '
        '(resource_provider_id, resource_class_id) '
        'JOIN resource_providers rp ON rp.id = u.resource_provider_id '
        'JOIN resource_classes rc ON rc.id = u.resource_class_id '
        'WHERE u.used > (i.total - i.reserved) * i.allocation_ratio '
        'ORDER BY 1, 2'))]


def allocated_to(conn, project):
    """{class: amount} the consumers of ``project`` hold, read on
    ``conn`` (MySQL's sums are decimals: made ints)."""
    return {name: int(used) for name, used in conn.execute(sa.text(
        'SELECT rc.name, sum(a.used) FROM allocations a '
        'JOIN consumers c ON c.uuid = a.consumer_id '
        'JOIN projects p ON p.id = c.project_id '
        'JOIN resource_classes rc ON rc.id = a.resource_class_id '
        'WHERE p.external_id = :project GROUP BY rc.name'),
        {'project': project})}


def check(service):
    """([provider, class, used, capacity] of each inventory over capacity,
    whether the project's usages equal its allocations, the allocations)
    after a storm, read from the service's database."""
    engine = sa.create_engine(harness.postgres_server().url(service.database))
    try:
        with engine.connect() as conn:
            over = over_capacity(conn)
            allocated = allocated_to(conn, PROJECT)
    finally:
        engine.dispose()
    status, raw, _seconds = services.HttpClient(service.port).fetch(
        'GET', '/usages?project_id=%s' % PROJECT, version=VERSION)
    usages = json.loads(raw)['usages'] if status == 200 else None
    return over, usages == allocated, allocated


def storm(service, kinds, schedulers, instances, seconds=None,
          scheduler=Scheduler):
    """Run one storm against a started service; its results. With
    ``seconds``, no instance is begun after that many seconds (the slow
    service at the largest sizes): the rate is that of the instances
    begun. ``scheduler``: the class of the schedulers (Scheduler, nova's
    loop; tests/bench/claiming.py's ClaimingScheduler claims instead)."""
    context = multiprocessing.get_context('fork')
    next_instance = context.Value('i', 0)
    start = context.Event()
    results = context.Queue()
    deadline = time.monotonic() + (seconds or float('inf'))
    workers = [context.Process(target=_scheduler, args=(
        service.port, kinds, next_instance, instances, deadline, start,
        results, scheduler))
        for _ in range(schedulers)]
    for worker in workers:
        worker.start()
    servers = _server_pids(service)
    before = cpu_seconds(servers + backends(service.database))
    started = time.monotonic()
    start.set()
    records = [record for _ in workers for record in results.get()]
    wall = time.monotonic() - started
    after = cpu_seconds(servers + backends(service.database))
    for worker in workers:
        worker.join()
    over, usages_match, allocated = check(service)
    spent = {pid: seconds - before.get(pid, 0.0)
             for pid, seconds in after.items()}
    placed = [record for record in records if record['placed']]
    return {
        'schedulers': schedulers, 'instances': len(records),
        'placed': len(placed), 'failed': len(records) - len(placed),
        'wall_seconds': wall, 'per_second': len(placed) / wall,
        'place_seconds': [record['seconds'] for record in placed],
        'candidates_seconds': [s for record in records
                               for s in record['candidates']],
        'claim_seconds': [s for record in records for s in record['claims']],
        'conflicts': dict(collections.Counter(
            reason for record in records for reason in record['conflicts'])),
        'reasks': sum(record['reasks'] for record in records),
        'errors': sorted({record['error'] for record in records
                          if 'error' in record}),
        'vcpu_on': dict(collections.Counter(
            record['vcpu_on'] for record in placed)),
        'server_cpu': sum(spent[pid] for pid in servers if pid in spent),
        'database_cpu': sum(seconds for pid, seconds in spent.items()
                            if pid not in servers),
        'over_capacity': len(over), 'over': over,
        'usages_match': usages_match,
        'allocated': allocated,
    }


def run(hosts, schedulers, instances, names, venv, quick=False, seconds=None,
        log=print):
    """Every storm at one size, each service on a fresh copy of the
    cloud; the report, also written to reports/storm-<hosts>.json
    (storm-quick-<hosts>.json for a smoke run)."""
    cloud = bench_cloud.build(hosts)
    kinds = provider_kinds(cloud)
    templates, build_seconds = services.cloud_templates(cloud, names, venv,
                                                        'storm', log)
    report = {'hosts': hosts, 'providers': len(cloud.providers),
              'build_seconds': round(build_seconds, 1), 'storms': [],
              'date': datetime.datetime.now(datetime.timezone.utc).strftime(
                  '%Y-%m-%d %H:%M UTC'), 'load': os.getloadavg()[0]}
    for count in schedulers:
        for name in names:
            run_name = 'storm_%s_%d_%d_%d' % (name, hosts, count, os.getpid())
            service = services.start_on_copy(name, templates[name], run_name,
                                             venv)
            try:
                log('%s: %d schedulers placing %d instances on %d hosts'
                    % (name, count, instances, hosts))
                result = storm(service, kinds, count, instances, seconds)
            finally:
                service.stop()
            result['service'] = name
            report['storms'].append(result)
            log(summary(result))
    report['load_after'] = os.getloadavg()[0]
    os.makedirs(REPORTS, exist_ok=True)
    file_name = 'storm-quick-%d.json' if quick else 'storm-%d.json'
    with open(os.path.join(REPORTS, file_name % hosts), 'w') as out:
        json.dump(report, out, indent=1)
    return report


def _ms(seconds):
    return '-' if seconds is None else '%.0f ms' % (1000 * seconds)


def summary(result):
    return ('%s S=%d: %d/%d placed, %.2f/s, p50 %s p99 %s, 409s %s, '
            're-asks %d, over capacity %d, usages match %s' % (
                result['service'], result['schedulers'], result['placed'],
                result['instances'], result['per_second'],
                _ms(services.percentile(result['place_seconds'], 0.5)),
                _ms(services.percentile(result['place_seconds'], 0.99)),
                result['conflicts'], result['reasks'],
                result['over_capacity'], result['usages_match']))


def _percentiles(result, key):
    """'p50 | p99' of ``result[key]``, in ms."""
    return '%s | %s' % (_ms(services.percentile(result[key], 0.5)),
                        _ms(services.percentile(result[key], 0.99)))


def _checks(result):
    if result['over_capacity'] == 0 and result['usages_match']:
        return 'ok'
    over = ', '.join('%s %s %d > %g' % tuple(row)
                     for row in result.get('over', [])[:3])
    return '**%d over capacity%s, usages %s**' % (
        result['over_capacity'], ' (%s)' % over if over else '',
        'match' if result['usages_match'] else 'differ')


def table(report):
    """The storms of one size, as markdown."""
    lines = ['| service | schedulers | placed / begun | instances/s '
             '| place p50 | p99 | candidates p50 | p99 | claim p50 | p99 '
             '| 409s | re-asks | failed | server CPU / instance '
             '| database CPU / instance | checks |',
             '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:'
             '|---:|---:|---:|---|']
    for result in report['storms']:
        placed = max(result['placed'], 1)
        lines.append('| %s | %d | %d / %d | %.2f | %s | %s | %s | %d | %d '
                     '| %d | %s | %s | %s |' % (
                         result['service'], result['schedulers'],
                         result['placed'], result['instances'],
                         result['per_second'],
                         _percentiles(result, 'place_seconds'),
                         _percentiles(result, 'candidates_seconds'),
                         _percentiles(result, 'claim_seconds'),
                         sum(result['conflicts'].values()), result['reasks'],
                         result['failed'],
                         _ms(result['server_cpu'] / placed),
                         _ms(result['database_cpu'] / placed),
                         _checks(result)))
    return '\n'.join(lines)


def reasons_table(report):
    """The 409s by reason, and where the placed instances' VCPU went."""
    lines = ['| service | schedulers | 409s by reason | VCPU of the placed '
             'instances on |', '|---|---:|---|---|']
    for result in report['storms']:
        lines.append('| %s | %d | %s | %s |' % (
            result['service'], result['schedulers'],
            ', '.join('%s: %d' % item for item in sorted(
                result['conflicts'].items())) or '-',
            ', '.join('%s: %d' % item for item in sorted(
                result['vcpu_on'].items()))))
    return '\n'.join(lines)


DESCRIPTION = (
    '`python -m tests.bench.storm` (tests/bench/storm.py): S scheduler '
    'processes place M instances between them as nova does: `GET '
    '/allocation_candidates?resources=VCPU:4,MEMORY_MB:8192,DISK_GB:80'
    '&required=!COMPUTE_STATUS_DISABLED&limit=1000` at 1.36, the hosts '
    'weighed by their free memory (summed over the tree from the provider '
    'summaries), the best claimed with `PUT /allocations/{consumer}` using '
    "that host's first allocation request; on a 409 the next host (3 "
    'alternates), then a new request (3 re-asks). Each storm runs on a '
    'fresh copy of the same cloud, one service at a time (4 uwsgi workers), '
    'the schedulers on the same machine. Times are what the schedulers '
    'saw; CPU is that of uwsgi (master and workers) and of the '
    "database's PostgreSQL backends, per placed instance. Checks: no "
    "provider over capacity, and the project's usages (`GET /usages`) "
    'equal the allocations in the database.')


def markdown(reports):
    """The storms of every size, for docs/benchmark.md."""
    parts = ['## Boot storm, the scheduler in the loop', '', DESCRIPTION]
    for report in reports:
        parts += ['', '### %s compute hosts (%s providers)' % (
            '{:,}'.format(report['hosts']),
            '{:,}'.format(report['providers'])), '',
            '%s; load average %.1f before, %.1f after.' % (
                report['date'], report['load'], report['load_after']), '',
            table(report), '', reasons_table(report)]
    return '\n'.join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m tests.bench.storm',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, nargs='+', default=[1000])
    parser.add_argument('--schedulers', type=int, nargs='+', default=[8, 32])
    parser.add_argument('--instances', type=int, default=1000)
    parser.add_argument('--seconds', type=float,
                        help='begin no instance after this many seconds')
    parser.add_argument('--only', choices=('placement_lite', 'reference'))
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    names = [args.only] if args.only else ['placement_lite', 'reference']
    venv = services.reference_venv() if 'reference' in names else None
    for hosts in args.hosts:
        run(hosts, args.schedulers, args.instances, names, venv,
            seconds=args.seconds)


if __name__ == '__main__':
    main()
