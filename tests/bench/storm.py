"""A boot storm with the scheduler in the loop.

    python -m tests.bench.storm --hosts 1000 --schedulers 8 32 --instances 1000
    python -m tests.bench.storm --variants lite-order lite-dispersed \\
        --dispersion 16 64 256

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
workers, under the settings of a variant (``--variants``, VARIANTS):
placement_lite's defaults, its rank key (the best hosts of the region
first), that key with dispersion (``--dispersion``: each answer starts at
another of the best N), the reference's defaults, and the reference
randomizing its candidates. Reported: instances per second, time to place
(p50, p99), the candidates requests' and the claims' times, 409s by reason
(from their bodies: a generation conflict, or which class would exceed the
capacity of which kind of provider), re-asks and failures, the CPU time of
uwsgi (its master and workers) and of the database's PostgreSQL backends
per placed instance (from /proc/<pid>/stat before and after), and where
each claimed instance's VCPU went (the first NUMA node of its host or the
second), refused claims per placed instance, and the spread achieved: the
largest share of memory used on a host, against the ideal's
(:func:`spread`). Afterwards it checks that no provider is over capacity
and that the project's usages are the instances' allocations.
"""

import argparse
import collections
import copy
import dataclasses
import datetime
import glob
import heapq
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
#: The traits the storm's query forbids on a host.
FORBIDDEN = ('COMPUTE_STATUS_DISABLED',)

#: placement_lite's rank key in the variants with the order.
RANK_BY = 'spread:MEMORY_MB,VCPU'
DISPERSION = 64
_ORDER = (('allocation_candidates_rank_by', RANK_BY),)
#: {variant: (service, its [placement] settings, what they are)};
#: 'lite-dispersed' also sets allocation_candidates_dispersion, one
#: variant per value asked for (:func:`variants`).
VARIANTS = {
    'lite': ('placement_lite', (), "placement_lite's defaults: the "
             "reference's order, the first hosts found"),
    'lite-order': ('placement_lite', _ORDER,
                   '`allocation_candidates_rank_by = %s`: every answer '
                   "the region's hosts with the most free memory, in order"
                   % RANK_BY),
    'lite-dispersed': ('placement_lite', _ORDER,
                       'lite-order and `allocation_candidates_dispersion '
                       '= N` (the N in its name): each answer starts at '
                       'an offset 0 to N into that order, another for '
                       'each request'),
    'reference': ('reference', (), "the reference's defaults"),
    'reference-randomized': (
        'reference', (('randomize_allocation_candidates', 'true'),),
        '`randomize_allocation_candidates = true`: the reference picks '
        'its `limit` candidates at random among all'),
}


@dataclasses.dataclass(frozen=True)
class Variant:
    """A service under named settings of its placement.conf's
    ``[placement]`` section."""
    name: str
    service: str
    settings: tuple = ()

    def config(self):
        """The settings as placement.conf lines ('' for none)."""
        if not self.settings:
            return ''
        return '[placement]\n' + ''.join('%s = %s\n' % setting
                                         for setting in self.settings)


VARIANTS_HELP = 'the settings to run each service under (default: all)'
DISPERSION_HELP = ('allocation_candidates_dispersion of lite-dispersed: one '
                   'variant per value (default: %d)' % DISPERSION)


def variants(names, dispersions=(DISPERSION,), only=None):
    """The :class:`Variant` of each of ``names`` (keys of VARIANTS), in
    order, of the service ``only`` when given; 'lite-dispersed' gives one
    per dispersion, named 'lite-dispersed-<N>'."""
    found = []
    for name in names:
        service, settings, _what = VARIANTS[name]
        if only not in (None, service):
            continue
        if name != 'lite-dispersed':
            found.append(Variant(name, service, settings))
            continue
        found += [Variant('%s-%d' % (name, dispersion), service, settings + (
            ('allocation_candidates_dispersion', dispersion),))
            for dispersion in dispersions]
    return found


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


def _capacity(inventory):
    return ((inventory['total'] - inventory['reserved'])
            * inventory['allocation_ratio'])


class Hosts:
    """The compute hosts of a cloud as the storm's query and nova's RAM
    weigher see them: where the flavor fits, and each host's memory
    (MEMORY_MB used and capacity, summed over its tree).

    The fit is placement's for the storm's request at 1.36, one
    unsuffixed group: no forbidden trait on the host (its root), and each
    class of the flavor from one provider with room for it (within its
    min_unit, max_unit and step_size), a provider of the host's tree or a
    sharing provider in an aggregate of one of them. :meth:`claim` takes
    each class from the first such provider, the tree's before sharing
    ones, as the storm's first allocation request of a host mostly does.
    """

    def __init__(self, cloud, flavor=FLAVOR, forbidden=FORBIDDEN):
        self.flavor = flavor
        self.inventories = {(provider.uuid, name): inventory
                            for provider in cloud.providers
                            for name, inventory in
                            provider.inventories.items()}
        self.used = collections.Counter()
        for consumer in cloud.consumers:
            for uuid, resources in consumer.allocations.items():
                for name, amount in resources.items():
                    self.used[uuid, name] += amount
        sharing = collections.defaultdict(list)
        for provider in cloud.providers:
            if 'MISC_SHARES_VIA_AGGREGATE' in provider.traits:
                for aggregate in provider.aggregates:
                    sharing[aggregate].append(provider.uuid)
        #: {root uuid: [uuid of each provider of its tree, root first]},
        #: in creation order.
        self.trees = {}
        #: {root uuid: [uuid of each sharing provider serving it]}.
        self.sharing = {}
        root_of = {}
        for provider in cloud.providers:
            root = provider
            while root.parent is not None:
                root = root.parent
            root_of[provider.uuid] = root.uuid
            if ('MISC_SHARES_VIA_AGGREGATE' in root.traits
                    or set(forbidden) & set(root.traits)):
                continue
            self.trees.setdefault(root.uuid, []).append(provider.uuid)
            serving = self.sharing.setdefault(root.uuid, [])
            for aggregate in provider.aggregates:
                serving += [uuid for uuid in sharing[aggregate]
                            if uuid not in serving]

        #: {root uuid: the consumers holding memory of its tree}, before
        #: the storm.
        self.instances = collections.Counter(
            root for root in (
                next((root_of[uuid] for uuid, resources
                      in consumer.allocations.items()
                      if 'MEMORY_MB' in resources), None)
                for consumer in cloud.consumers) if root is not None)

    def copy(self):
        """Another model of the same cloud, its usage changed apart."""
        other = copy.copy(self)
        other.used = collections.Counter(self.used)
        return other

    def _room(self, uuid, name, amount):
        inventory = self.inventories.get((uuid, name))
        if inventory is None:
            return False
        return (inventory['min_unit'] <= amount <= inventory['max_unit']
                and amount % inventory['step_size'] == 0
                and self.used[uuid, name] + amount <= _capacity(inventory))

    def allocation(self, root):
        """{provider uuid: {class: amount}} the flavor would take on host
        ``root``, or None where it does not fit."""
        allocation = {}
        for name, amount in self.flavor.items():
            uuid = next((uuid for uuid in self.trees[root] + self.sharing[
                root] if self._room(uuid, name, amount)), None)
            if uuid is None:
                return None
            allocation.setdefault(uuid, {})[name] = amount
        return allocation

    def claim(self, root):
        """Take the flavor on host ``root``; whether it fitted."""
        allocation = self.allocation(root)
        for uuid, resources in (allocation or {}).items():
            for name, amount in resources.items():
                self.used[uuid, name] += amount
        return allocation is not None

    def fitting(self):
        """The hosts where the flavor fits, in creation order."""
        return [root for root in self.trees
                if self.allocation(root) is not None]

    def memory(self, root):
        """(MEMORY_MB used, capacity) of host ``root``, over its tree."""
        used = capacity = 0
        for uuid in self.trees[root]:
            inventory = self.inventories.get((uuid, 'MEMORY_MB'))
            if inventory is not None:
                used += self.used[uuid, 'MEMORY_MB']
                capacity += _capacity(inventory)
        return used, capacity

    def place(self, count):
        """Place ``count`` instances one by one, each on the host with the
        most free memory where the flavor fits (ties: the first created);
        the instances placed on each host chosen (a Counter)."""
        order = {root: number for number, root in enumerate(self.trees)}
        heap = []
        for root in self.fitting():
            used, capacity = self.memory(root)
            heap.append((used - capacity, order[root], root))
        heapq.heapify(heap)
        chosen = collections.Counter()
        while count and heap:
            _free, number, root = heapq.heappop(heap)
            if not self.claim(root):
                continue
            count -= 1
            chosen[root] += 1
            used, capacity = self.memory(root)
            heapq.heappush(heap, (used - capacity, number, root))
        return chosen


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


def memory_of_hosts(conn):
    """{root uuid: (MEMORY_MB used, capacity)} of each tree with memory,
    summed over the tree, read on ``conn``."""
    return {root: (int(used), capacity) for root, used, capacity in
            conn.execute(sa.text(
                'SELECT root.uuid, sum(coalesce(u.used, 0)), '
                'sum((i.total - i.reserved) * i.allocation_ratio) '
                'FROM inventories i '
                'JOIN resource_classes rc ON rc.id = i.resource_class_id '
                'JOIN resource_providers rp ON rp.id = i.resource_provider_id '
                'JOIN resource_providers root '
                'ON root.id = rp.root_provider_id '
                'LEFT JOIN (SELECT resource_provider_id, resource_class_id, '
                'sum(used) AS used FROM allocations GROUP BY 1, 2) u '
                'ON u.resource_provider_id = i.resource_provider_id '
                'AND u.resource_class_id = i.resource_class_id '
                "WHERE rc.name = 'MEMORY_MB' GROUP BY root.uuid"))}


def hosts_of(conn, project):
    """{root: how many consumers of ``project`` hold its tree's memory}
    (a Counter), read on ``conn``."""
    return collections.Counter(root for root, _consumer in conn.execute(
        sa.text(
        'SELECT DISTINCT root.uuid, c.uuid FROM allocations a '
        'JOIN consumers c ON c.uuid = a.consumer_id '
        'JOIN projects p ON p.id = c.project_id '
        'JOIN resource_classes rc ON rc.id = a.resource_class_id '
        'JOIN resource_providers rp ON rp.id = a.resource_provider_id '
        'JOIN resource_providers root ON root.id = rp.root_provider_id '
        "WHERE p.external_id = :project AND rc.name = 'MEMORY_MB'"),
        {'project': project}))


def spread(before, memory, chosen, placed):
    """The spread a storm achieved, and the ideal one: shares of a host's
    memory used (MEMORY_MB used over capacity, over its tree).

    ``before`` is the :class:`Hosts` of the cloud before the storm,
    ``memory`` {root: (used, capacity)} after it (:func:`memory_of_hosts`),
    ``chosen`` {host: instances} the storm placed, ``placed`` how many.
    Counted are the hosts where the flavor fitted before the storm: the
    hosts it cannot go to (a full one's memory may be a third used) would
    set the largest share whatever the storm did. Returns

    - largest_share: the largest share of those hosts after the storm;
    - ideal_share: the same after ``placed`` instances placed one by one,
      each on the host with the most free memory (:meth:`Hosts.place`);
    - instance_share: one instance's share (the flavor's memory over a
      host's capacity), the largest of those hosts';
    - chosen_share, ideal_chosen_share: the largest share of the hosts
      the storm placed on, and of those the ideal placed on (None when
      none): a storm that puts an instance on a host fuller than the rest
      shows here even when a host already fuller hides it in the first;
    - most_instances, ideal_most_instances: the most instances one of
      those hosts holds (those it held before and those placed), after
      the storm and after the ideal;
    - hosts: how many hosts the flavor fitted.
    """
    hosts = before.fitting()
    ideal = before.copy()
    ideal_chosen = ideal.place(placed)

    def share(used_capacity):
        used, capacity = used_capacity
        return used / capacity

    def largest(shares):
        return max(shares, default=None)

    return {
        'hosts': len(hosts),
        'largest_share': largest(share(memory[root]) for root in hosts),
        'ideal_share': largest(share(ideal.memory(root)) for root in hosts),
        'instance_share': largest(before.flavor['MEMORY_MB']
                                  / before.memory(root)[1] for root in hosts),
        'chosen_share': largest(share(memory[root]) for root in chosen),
        'ideal_chosen_share': largest(share(ideal.memory(root))
                                      for root in ideal_chosen),
        'most_instances': max(
            (before.instances[root] + chosen[root] for root in hosts),
            default=0),
        'ideal_most_instances': max(
            (before.instances[root] + ideal_chosen[root] for root in hosts),
            default=0),
    }


def check(service):
    """([provider, class, used, capacity] of each inventory over capacity,
    whether the project's usages equal its allocations, the allocations,
    each host's memory (:func:`memory_of_hosts`), the hosts the storm
    placed on) after a storm, read from the service's database."""
    engine = sa.create_engine(harness.postgres_server().url(service.database))
    try:
        with engine.connect() as conn:
            over = over_capacity(conn)
            allocated = allocated_to(conn, PROJECT)
            memory = memory_of_hosts(conn)
            chosen = hosts_of(conn, PROJECT)
    finally:
        engine.dispose()
    status, raw, _seconds = services.HttpClient(service.port).fetch(
        'GET', '/usages?project_id=%s' % PROJECT, version=VERSION)
    usages = json.loads(raw)['usages'] if status == 200 else None
    return over, usages == allocated, allocated, memory, chosen


def storm(service, kinds, fresh, schedulers, instances, seconds=None,
          scheduler=Scheduler):
    """Run one storm against a started service, on the cloud ``fresh``
    (its :class:`Hosts` before the storm); its results. With
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
    over, usages_match, allocated, memory, chosen = check(service)
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
        'spread': spread(fresh, memory, chosen, len(placed)),
    }


def run(hosts, schedulers, instances, chosen, venv, quick=False,
        seconds=None, log=print):
    """Every storm at one size, each variant (``chosen``: :class:`Variant`
    s) on a fresh copy of the cloud; the report, also written to
    reports/storm-<hosts>.json (storm-quick-<hosts>.json for a smoke
    run)."""
    cloud = bench_cloud.build(hosts)
    kinds = provider_kinds(cloud)
    fresh = Hosts(cloud)
    names = sorted({variant.service for variant in chosen})
    templates, build_seconds = services.cloud_templates(cloud, names, venv,
                                                        'storm', log)
    report = {'hosts': hosts, 'providers': len(cloud.providers),
              'build_seconds': round(build_seconds, 1), 'storms': [],
              'date': datetime.datetime.now(datetime.timezone.utc).strftime(
                  '%Y-%m-%d %H:%M UTC'), 'load': os.getloadavg()[0]}
    for count in schedulers:
        for variant in chosen:
            run_name = 'storm_%s_%d_%d_%d' % (variant.name.replace('-', '_'),
                                              hosts, count, os.getpid())
            service = services.start_on_copy(
                variant.service, templates[variant.service], run_name, venv,
                extra_config=variant.config())
            try:
                log('%s: %d schedulers placing %d instances on %d hosts'
                    % (variant.name, count, instances, hosts))
                result = storm(service, kinds, fresh, count, instances,
                               seconds)
            finally:
                service.stop()
            result.update(variant=variant.name, service=variant.service,
                          settings=dict(variant.settings))
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


def _variant(result):
    """A storm's row name: its variant (a report of before the variants:
    its service)."""
    return result.get('variant', result['service'])


def refused_per_placed(result):
    """Refused claims (409s) per placed instance; None of none placed."""
    if not result['placed']:
        return None
    return sum(result['conflicts'].values()) / result['placed']


def _ratio(value):
    return '-' if value is None else '%.2f' % value


def _share(value):
    return '-' if value is None else '%.1f%%' % (100 * value)


def summary(result):
    spread_of = result.get('spread', {})
    return ('%s S=%d: %d/%d placed, %.2f/s, p50 %s p99 %s, 409s %s '
            '(%s per placed), re-asks %d, largest memory share %s (ideal '
            '%s, one instance %s), over capacity %d, usages match %s' % (
                _variant(result), result['schedulers'], result['placed'],
                result['instances'], result['per_second'],
                _ms(services.percentile(result['place_seconds'], 0.5)),
                _ms(services.percentile(result['place_seconds'], 0.99)),
                result['conflicts'], _ratio(refused_per_placed(result)),
                result['reasks'], _share(spread_of.get('largest_share')),
                _share(spread_of.get('ideal_share')),
                _share(spread_of.get('instance_share')),
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
    lines = ['| variant | schedulers | placed / begun | instances/s '
             '| place p50 | p99 | candidates p50 | p99 | claim p50 | p99 '
             '| 409s | 409s / placed | re-asks | failed '
             '| server CPU / instance | database CPU / instance | checks |',
             '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:'
             '|---:|---:|---:|---:|---|']
    for result in report['storms']:
        placed = max(result['placed'], 1)
        lines.append('| %s | %d | %d / %d | %.2f | %s | %s | %s | %d | %s '
                     '| %d | %d | %s | %s | %s |' % (
                         _variant(result), result['schedulers'],
                         result['placed'], result['instances'],
                         result['per_second'],
                         _percentiles(result, 'place_seconds'),
                         _percentiles(result, 'candidates_seconds'),
                         _percentiles(result, 'claim_seconds'),
                         sum(result['conflicts'].values()),
                         _ratio(refused_per_placed(result)), result['reasks'],
                         result['failed'],
                         _ms(result['server_cpu'] / placed),
                         _ms(result['database_cpu'] / placed),
                         _checks(result)))
    return '\n'.join(lines)


def spread_table(report):
    """The spread each storm achieved against the ideal (:func:`spread`),
    as markdown; '' when no storm of the report has it."""
    lines = ['| variant | schedulers | hosts it fits | largest memory share '
             "| ideal | one instance's | at most ideal + one "
             '| fullest host chosen | ideal | most instances on a host '
             '| ideal |',
             '|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|']
    for result in report['storms']:
        found = result.get('spread')
        if found is None:
            continue
        within = (found['largest_share'] is not None
                  and found['largest_share'] <= found['ideal_share']
                  + found['instance_share'] + 1e-9)
        lines.append('| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s '
                     '| %s |' % (
            _variant(result), result['schedulers'], found['hosts'],
            _share(found['largest_share']), _share(found['ideal_share']),
            _share(found['instance_share']), 'yes' if within else '**no**',
            _share(found['chosen_share']),
            _share(found['ideal_chosen_share']),
            found.get('most_instances', '-'),
            found.get('ideal_most_instances', '-')))
    return '\n'.join(lines) if len(lines) > 2 else ''


def reasons_table(report):
    """The 409s by reason, and where the placed instances' VCPU went."""
    lines = ['| variant | schedulers | 409s by reason | VCPU of the placed '
             'instances on |', '|---|---:|---|---|']
    for result in report['storms']:
        lines.append('| %s | %d | %s | %s |' % (
            _variant(result), result['schedulers'],
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
    'the schedulers on the same machine, each service under the settings '
    'of a variant (`--variants`, `--dispersion N...`; in the `[placement]` '
    'section of its placement.conf):')

SPREAD = (
    'Times are what the schedulers saw; CPU is that of uwsgi (master and '
    "workers) and of the database's PostgreSQL backends, per placed "
    'instance; 409s / placed is the refused claims per placed instance. '
    "Checks: no provider over capacity, and the project's usages (`GET "
    '/usages`) equal the allocations in the database.\n\n'
    "The spread: a host's memory share is its MEMORY_MB used over its "
    'capacity, summed over its tree (as nova\'s RAM weigher sees a host), '
    'of the hosts the flavor fits before the storm (VCPU, MEMORY_MB and '
    'DISK_GB, from the host\'s tree or a sharing provider, no forbidden '
    'trait: the full hosts, which no storm can choose, are left out). '
    '"largest memory share" is the largest after the storm; "ideal" the '
    'largest after as many instances placed one by one, each on the host '
    'with the most free memory; "one instance\'s" the flavor\'s memory over '
    "a host's capacity. The goal: the largest share at most the ideal's "
    "plus one instance's. A host that was fuller before the storm than "
    'the storm makes any (a busy host of the cloud) sets both figures; '
    '"fullest host chosen", the largest share of the hosts the storm '
    "placed on, beside the ideal's, shows the storm's choices then. "
    'Schedulers claiming the same host are all accepted while it has room '
    "(a host's own disk takes 11 of these instances): a collision is a 409 "
    'only once the host is full, before that it shows in the spread.')


def _variants_list():
    return '\n'.join('- `%s`: %s.' % (name, what)
                     for name, (_service, _settings, what)
                     in VARIANTS.items())


def markdown(reports):
    """The storms of every size, for docs/benchmark.md."""
    parts = ['## Boot storm, the scheduler in the loop', '', DESCRIPTION, '',
             _variants_list(), '', SPREAD]
    for report in reports:
        parts += ['', '### %s compute hosts (%s providers)' % (
            '{:,}'.format(report['hosts']),
            '{:,}'.format(report['providers'])), '',
            '%s; load average %.1f before, %.1f after.' % (
                report['date'], report['load'], report['load_after']), '',
            table(report)]
        if spread_table(report):
            parts += ['', spread_table(report)]
        parts += ['', reasons_table(report)]
    return '\n'.join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m tests.bench.storm',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, nargs='+', default=[1000])
    parser.add_argument('--schedulers', type=int, nargs='+', default=[8, 32])
    parser.add_argument('--instances', type=int, default=1000)
    parser.add_argument('--seconds', type=float,
                        help='begin no instance after this many seconds')
    parser.add_argument('--variants', nargs='+', choices=VARIANTS,
                        default=list(VARIANTS), help=VARIANTS_HELP)
    parser.add_argument('--dispersion', type=int, nargs='+',
                        default=[DISPERSION], help=DISPERSION_HELP)
    parser.add_argument('--only', choices=('placement_lite', 'reference'),
                        help="run only this service's variants")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    chosen = variants(args.variants, args.dispersion, args.only)
    venv = (services.reference_venv() if any(
        variant.service == 'reference' for variant in chosen) else None)
    for hosts in args.hosts:
        run(hosts, args.schedulers, args.instances, chosen, venv,
            seconds=args.seconds)


if __name__ == '__main__':
    main()
