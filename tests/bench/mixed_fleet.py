"""A rolling takeover: the reference and placement_lite serving one
database at once (issue 40), and what it costs.

    python -m tests.bench.mixed_fleet                  # PostgreSQL and MariaDB
    python -m tests.bench.mixed_fleet --backends postgresql --bursts 4
    python -m tests.bench.mixed_fleet --scenarios mixed reference

A :class:`Fleet` is the reference (openstack-placement 16.0.0 under uwsgi,
2 processes, run as tests/bench/services.py runs it) and placement_lite
(the shipped etc/uwsgi.ini, 4 processes, run as tests/servers.py runs it)
on one new database of the harness's PostgreSQL or MariaDB server, made
as an operator taking over makes it: the reference's ``placement-manage
db sync``, the reference serving, then ``placement-lite db sync``.

A burst (:func:`burst`) creates a new host, MEMORY_MB on its root provider
and VCPU on a child, with room for :data:`FITS` of :data:`CLAIMS` claims,
and sends the claims at one instant (a thread each, released together by
a barrier): ``PUT /allocations/{new consumer}`` at 1.36 with
consumer_generation null, the child listed first in the body, through the
services as a scenario (:data:`SCENARIOS`) splits them: ``mixed``, 2
through the reference and 6 through placement_lite; ``reference`` and
``placement_lite``, all 8 through that service alone. Each scenario runs
on a fleet of its own, only its services started.

Reported per burst: each side's statuses and the burst's seconds (the
barrier's release to the last answer); per scenario: each side's claims,
409s and 5xx, the database's deadlocks, the bursts' p50 and max seconds,
and the checks (:func:`check`). Results go to
reports/mixed-fleet-<backend>.json.

Deadlocks are PostgreSQL's ``pg_stat_database.deadlocks`` of the database,
or MariaDB's ``Innodb_deadlocks`` (the server's: the harness's server
serves nothing else meanwhile), read before the fleet starts and once it
has stopped (:meth:`Fleet.deadlocks`). On MariaDB placement_lite connects
as a user of its own, and InnoDB's dump of each deadlock tells those with
a transaction of placement_lite's in them (:meth:`Fleet.lite_deadlocks`):
the reference deadlocks alone there, on the gap locks REPEATABLE READ
takes when it deletes a new consumer's (no) allocations before inserting
them.
"""

import argparse
import collections
import datetime
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import uuid

import sqlalchemy as sa

from placement_lite.db import api as db_api
from placement_lite.db import tables
from tests import claims
from tests import harness
from tests import servers
from tests.bench import cloud as bench_cloud
from tests.bench import services
from tests.bench import storm as bench_storm


#: The section of docs/benchmark.md (python -m tests.bench writes it after
#: the storms): the table this module printed, pasted.
SECTION = """## Mixed fleet: the reference and placement_lite on one database

`python -m tests.bench.mixed_fleet --backends postgresql mysql --bursts 12`
(tests/bench/mixed_fleet.py): the reference (2 uwsgi processes) and
placement_lite (4) on one database after both `db sync`s; one host with
MEMORY_MB on its root and VCPU on a child, the child first in each claim's
body, as both services' candidates list it; 12 bursts of 2 claims through
the reference and 6 through placement_lite at one instant ("mixed"), and
the same 8 claims per burst through either service alone. Deadlocks are
those the database logged (on MariaDB, those naming a statement of
placement_lite counted apart). 2026-11-27 21:05 UTC.

| backend | scenario | side | claims | 204 | 409 | 5xx or none | deadlocks | burst p50 | burst max | checks |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|
| postgresql | mixed | reference | 24 | 22 | 2 | 0 | 0 | 0.2 s | 0.3 s | over capacity: 5 providers, all by the reference's retried claims |
| postgresql | mixed | placement_lite | 72 | 44 | 28 | 0 | 0 | 0.2 s | 0.3 s | over capacity: 5 providers, all by the reference's retried claims |
| postgresql | reference | reference | 96 | 61 | 35 | 0 | 0 | 0.2 s | 0.2 s | over capacity: 1 providers, all by the reference's retried claims |
| postgresql | placement_lite | placement_lite | 96 | 60 | 36 | 0 | 0 | 0.1 s | 0.2 s | ok |
| mysql | mixed | reference | 24 | 22 | 2 | 0 | 2 (0 with placement_lite) | 0.2 s | 1.1 s | over capacity: 1 providers, all by the reference's retried claims |
| mysql | mixed | placement_lite | 72 | 39 | 33 | 0 | 2 (0 with placement_lite) | 0.2 s | 1.1 s | over capacity: 1 providers, all by the reference's retried claims |
| mysql | reference | reference | 96 | 61 | 35 | 0 | 1 (0 with placement_lite) | 0.3 s | 1.1 s | over capacity: 1 providers, all by the reference's retried claims |
| mysql | placement_lite | placement_lite | 96 | 60 | 36 | 0 | 0 (0 with placement_lite) | 0.2 s | 0.4 s | ok |

Neither service answers 5xx in any run, and placement_lite is never one
side of a deadlock: its transactions lock with `FOR UPDATE NOWAIT` and
never wait while holding a lock ([databases.md](databases.md)). The
MariaDB deadlocks are between two of the reference's own claims (its
gap locks), as in the reference-alone run. Before this design
(placement_lite locking every provider of a claim in id order at the
start of its transaction) the same bursts gave 12 deadlocks on
PostgreSQL, with 3 of the reference's claims answered 500, and 7 on
MariaDB (6 with placement_lite).

The providers over capacity are the reference's doing: each excess is
at most what the reference's claims that retried after a conflict can
add on that host (the bench checks it, tests/bench/mixed_fleet.py
unexplained_overages), in a fleet of its own as in a mixed one (1
provider alone, 5 mixed on PostgreSQL, where placement_lite's quicker
claims give it more conflicts to retry). placement_lite alone leaves none.
"""

VERSION = '1.36'
REFERENCE_PROCESSES = 2
LITE_PROCESSES = 4
SIDES = ('reference', 'placement_lite')
#: Claims through each service in a burst, by scenario.
SCENARIOS = {'mixed': {'reference': 2, 'placement_lite': 6},
             'reference': {'reference': 8},
             'placement_lite': {'placement_lite': 8}}
CLAIMS = 8
#: What each claim asks, the child's class first.
CLAIM = (('VCPU', 1), ('MEMORY_MB', 512))
#: A host's child holds VCPU for this many claims; its root MEMORY_MB
#: for all of them.
FITS = 5
PROJECT = bench_cloud.make_uuid('mixed-fleet-project')
USER = bench_cloud.make_uuid('mixed-fleet-user')
REPORTS = os.path.join(services.REPO, 'reports')
#: placement_lite's database user on MariaDB (the reference's is root).
LITE_USER = 'placement_lite'
_DEADLOCK_DUMP = 'InnoDB: Transactions deadlock detected'
#: A transaction in InnoDB's dump of a deadlock: its user, and the lock
#: it waits for (index, table, mode).
_DUMPED_WAIT = re.compile(
    r'MariaDB thread id \d+, OS thread handle \d+, query id \d+ \S+ \S+ '
    r'(\S+).*?WAITING FOR THIS LOCK TO BE GRANTED:\s+\w+ LOCKS .*?'
    r'index (\S+) of table `[^`]+`\.`(\w+)` trx id \d+ ([^\n]*)', re.S)


class Fleet:
    """A database taken over: a new database of ``backend`` made by the
    reference's ``placement-manage db sync`` and served by the reference
    (running once the fleet is made), then ``placement-lite db sync``;
    :meth:`start` starts placement_lite beside the reference.

    The reference serves the database before placement_lite first starts
    on it, as in any deployment taken over: its start-up adds the standard
    resource classes with their fixed ids. (On MariaDB, placement_lite
    adding them first, to the reference's schema, where ids are
    AUTO_INCREMENT, stores VCPU's id 0 as the next id and loses
    MEMORY_MB.) The reference logs its allocation writes at debug level,
    which tells the claims it tried again (:func:`reference_retries`).
    """

    def __init__(self, backend, venv):
        self.backend = backend
        self.url = harness.empty_database_url(backend)
        self.database = sa.engine.make_url(self.url).database
        self._workdir = tempfile.mkdtemp(prefix='placement-lite-fleet-')
        self.reference = services.reference(
            harness._free_port(), self.url, self._workdir, venv,
            extra_config=('[DEFAULT]\ndefault_log_levels = '
                          'placement.objects.allocation=DEBUG\n'),
            processes=REFERENCE_PROCESSES)
        self.lite = servers.Uwsgi(self._lite_url(), processes=LITE_PROCESSES,
                                  start=False)
        self.db = db_api.Database(self.url)
        self.clients = {
            'reference': services.HttpClient(self.reference.port),
            'placement_lite': services.HttpClient(self.lite.port)}
        self.running = set()
        try:
            self.start(['reference'])
            synced = servers.db_sync(self.lite.workdir)
            if synced.returncode:
                raise RuntimeError('placement-lite db sync: ' + synced.stderr)
        except BaseException:
            self.close()
            raise
        self._deadlocks = deadlock_count(backend, self.database)
        self._dumped = _innodb_dumps_from() if backend == 'mysql' else None

    def _lite_url(self):
        """placement_lite's database URL: on MariaDB as another user than
        the reference's, to tell them apart in InnoDB's deadlock dumps."""
        if self.backend != 'mysql':
            return self.url
        return sa.engine.make_url(self.url).set(
            username=LITE_USER).render_as_string(hide_password=False)

    def start(self, names=SIDES):
        """Start the services ``names`` not running, together; return once
        each answers."""
        names = set(names) - self.running
        if 'placement_lite' in names:
            self.lite.launch()
        if 'reference' in names:
            self.reference.start()
        if 'placement_lite' in names:
            self.lite.wait_ready()
        self.running.update(names)

    def stop(self, names=SIDES):
        """Stop the services ``names``; once none runs, wait until the
        database has no session left."""
        for name in set(names) & self.running:
            if name == 'reference':
                self.reference.stop()
            else:
                self.lite.stop()
            self.running.discard(name)
        if not self.running:
            self.db.dispose()
            if not harness.wait_for(lambda: not self._sessions(),
                                    timeout=30):
                raise RuntimeError('sessions of %s still open after its '
                                   'services stopped' % self.database)

    def _sessions(self):
        if self.backend == 'mysql':
            statement = ('SELECT count(*) FROM information_schema.processlist'
                         ' WHERE db = :name')
            server = harness.mariadb_server()
        else:
            statement = ('SELECT count(*) FROM pg_stat_activity '
                         'WHERE datname = :name')
            server = harness.postgres_server()
        with server.admin_engine().connect() as conn:
            return conn.execute(sa.text(statement),
                                {'name': self.database}).scalar()

    def deadlocks(self):
        """Deadlocks the database saw since the fleet was made; exact once
        :meth:`stop` has stopped every service: a PostgreSQL backend
        reports its counts when it exits, and while it lives only when
        idle, at most once a second (then after ten seconds idle)."""
        return deadlock_count(self.backend, self.database) - self._deadlocks

    def lite_deadlocks(self):
        """On MariaDB, the deadlocks of :meth:`deadlocks` with a
        transaction of placement_lite's in them, each as what each of its
        transactions waited for (:func:`dumped_deadlocks`); None on
        PostgreSQL."""
        if self._dumped is None:
            return None
        path = os.path.join(harness.mariadb_server().datadir, 'server.log')
        with open(path, errors='replace') as log:
            log.seek(self._dumped)
            text = log.read()
        return [waits for waits in dumped_deadlocks(text, self.database)
                if any(wait.startswith(LITE_USER + ' ') for wait in waits)]

    def lite_workers(self):
        """The pids of placement_lite's running workers."""
        return {int(pid) for pid in self.lite.worker_pids()
                if os.path.exists('/proc/%s' % pid)}

    def lite_answers(self, path, version='1.39'):
        """{worker pid: [(status, body)]}: placement_lite's answers to
        ``GET path``, from every one of its workers."""
        return self.lite.answers_of_every_worker(path, version)

    def close(self):
        self.stop()
        for workdir in (self.lite.workdir, self._workdir):
            shutil.rmtree(workdir, ignore_errors=True)


def every_row_paths(db):
    """GET paths showing every provider, inventory, trait, aggregate,
    usage, allocation, consumer and class in ``db``."""
    paths = ['/resource_providers', '/resource_classes', '/traits']
    with db.reader() as conn:
        providers = conn.execute(sa.select(
            tables.resource_providers.c.uuid).order_by(
            tables.resource_providers.c.uuid)).scalars().all()
        consumers = conn.execute(sa.select(
            tables.consumers.c.uuid).order_by(
            tables.consumers.c.uuid)).scalars().all()
    for provider in providers:
        paths += ['/resource_providers/%s%s' % (provider, what) for what in (
            '', '/inventories', '/traits', '/aggregates', '/usages',
            '/allocations')]
    return paths + ['/allocations/%s' % consumer for consumer in consumers]


def dumped_deadlocks(text, database):
    """[['<user> waits for <table>.<index>: <lock mode>' of each
    transaction]] of the deadlocks in ``database`` InnoDB dumped in
    ``text`` (a MariaDB server's log, innodb_print_all_deadlocks)."""
    found = []
    for dump in text.split(_DEADLOCK_DUMP)[1:]:
        if '`%s`.' % database in dump:
            found.append(['%s waits for %s.%s: %s' % (
                user, table, index, mode) for user, index, table, mode
                in _DUMPED_WAIT.findall(dump)])
    return found


def _innodb_dumps_from():
    """Where the MariaDB server's log stands, InnoDB made to dump every
    deadlock there from now on."""
    server = harness.mariadb_server()
    with server.admin_engine().connect() as conn:
        conn.exec_driver_sql('SET GLOBAL innodb_print_all_deadlocks = ON')
    return os.path.getsize(os.path.join(server.datadir, 'server.log'))


def deadlock_count(backend, database):
    """The deadlocks PostgreSQL counted in ``database``, or MariaDB in the
    whole server."""
    if backend == 'mysql':
        with harness.mariadb_server().admin_engine().connect() as conn:
            return int(conn.exec_driver_sql(
                "SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'").one()[1])
    with harness.postgres_server().admin_engine().connect() as conn:
        return conn.execute(sa.text(
            'SELECT deadlocks FROM pg_stat_database WHERE datname = :name'),
            {'name': database}).scalar() or 0


def create_host(client, name):
    """A new host through ``client``: (root, child), MEMORY_MB for every
    claim of a burst on the root, VCPU for FITS of them on the child."""
    root, child = str(uuid.uuid4()), str(uuid.uuid4())
    amounts = dict(CLAIM)
    for provider, body, inventory in (
            (root, {'name': name}, {'MEMORY_MB': CLAIMS * amounts[
                'MEMORY_MB']}),
            (child, {'name': name + '-numa0', 'parent_provider_uuid': root},
             {'VCPU': FITS * amounts['VCPU']})):
        status, raw, _seconds = client.fetch(
            'POST', '/resource_providers', dict(body, uuid=provider),
            version=VERSION)
        if status != 200:
            raise RuntimeError('creating %s: %d %s' % (name, status, raw))
        status, raw, _seconds = client.fetch(
            'PUT', '/resource_providers/%s/inventories' % provider,
            {'resource_provider_generation': 0, 'inventories': {
                rc: {'total': total} for rc, total in inventory.items()}},
            version=VERSION)
        if status != 200:
            raise RuntimeError('inventory of %s: %d %s' % (name, status, raw))
    return root, child


def claim_body(root, child):
    """The allocations of one claim, the child first."""
    (child_class, child_amount), (root_class, root_amount) = CLAIM
    return {child: {child_class: child_amount},
            root: {root_class: root_amount}}


def burst(fleet, split, name):
    """One burst on a new host (made through the first service of
    ``split``): {'host': [root, child], 'seconds', 'statuses': {side:
    [status]}, 'errors': [[side, status, body]], 'claimed': {consumer:
    allocation}, 'reference_claims': the request ids of the reference's
    204s}. A claim that got no answer in time has the status None."""
    root, child = create_host(fleet.clients[next(iter(split))], name)
    allocation = claim_body(root, child)
    sides = [side for side, count in split.items() for _ in range(count)]
    barrier = threading.Barrier(len(sides) + 1)
    answers = [None] * len(sides)

    def claim(index, side):
        consumer = str(uuid.uuid4())
        body = {'allocations': {provider: {'resources': resources}
                                for provider, resources in allocation.items()},
                'project_id': PROJECT, 'user_id': USER,
                'consumer_generation': None}
        barrier.wait()
        try:
            status, headers, raw, _seconds = fleet.clients[side].exchange(
                'PUT', '/allocations/%s' % consumer, body, version=VERSION)
        except (OSError, TimeoutError) as error:
            status, headers, raw = None, {}, str(error).encode()
        answers[index] = (side, consumer, status, raw, time.perf_counter(),
                          headers.get('x-openstack-request-id'))

    threads = [threading.Thread(target=claim, args=(index, side))
               for index, side in enumerate(sides)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    record = {'host': [root, child],
              'seconds': max(answer[4] for answer in answers) - started,
              'statuses': {side: [] for side in split},
              'errors': [], 'claimed': {}, 'reference_claims': []}
    for side, consumer, status, raw, _at, request_id in answers:
        record['statuses'][side].append(status)
        if status == 204:
            record['claimed'][consumer] = allocation
            if side == 'reference':
                record['reference_claims'].append(request_id)
        elif status != 409:
            record['errors'].append(
                [side, status, raw.decode(errors='replace')[:300]])
    return record


def bursts(fleet, split, count, log=None):
    """``count`` bursts one after the other; their records."""
    records = []
    for number in range(count):
        records.append(burst(fleet, split, 'fleet-%s-%d' % (
            uuid.uuid4().hex[:8], number)))
        if log:
            log('burst %d: %.1f s, %s' % (number, records[-1]['seconds'], {
                side: dict(collections.Counter(statuses))
                for side, statuses in records[-1]['statuses'].items()}))
    return records


def reference_retries(fleet):
    """The request ids of the claims the reference tried again after a
    provider generation conflict, by its log (debug lines).

    Such a claim can over-commit: the reference tries it again in the same
    transaction, where on PostgreSQL it counts the failed attempt's rows
    as usage already there (and lets the claim through as leaving the
    overage no worse), and on MariaDB, at REPEATABLE READ, it checks
    capacity in the snapshot taken before the conflict (api-ref/
    divergences.md, "Retries run in fresh transactions"). It does this
    alone too."""
    with open(fleet.reference.log_path, errors='replace') as log:
        return set(re.findall(
            r'(req-[0-9a-f-]{36})[^\n]*\] Retrying allocations write',
            log.read()))


def _usage(allocations):
    """{provider: {class: amount}} of {consumer: allocation}."""
    usage = collections.defaultdict(collections.Counter)
    for allocation in allocations.values():
        for provider, resources in allocation.items():
            usage[provider].update(resources)
    return usage


def check(fleet, records):
    """What must hold after ``records``' bursts, read from the database
    and from every running service: {'over_capacity': [[provider, class,
    used, capacity, claims the reference acknowledged on its host after
    trying them again (:func:`reference_retries`)]], 'exact': the hosts'
    allocations are the claims acknowledged, 'usages_differ': [[service,
    path]] whose usages are not those allocations}."""
    claimed = {consumer: allocation for record in records
               for consumer, allocation in record['claimed'].items()}
    retried = reference_retries(fleet)
    retried_on = {provider: len(retried & set(record['reference_claims']))
                  for record in records for provider in record['host']}
    with fleet.db.reader() as conn:
        over = bench_storm.over_capacity(conn)
        project = bench_storm.allocated_to(conn, PROJECT)
        uuids = dict(conn.execute(sa.select(
            tables.resource_providers.c.name,
            tables.resource_providers.c.uuid)).all())
    over = [[name, rc, int(used), float(capacity),
             retried_on.get(uuids[name], 0)]
            for name, rc, used, capacity in over]
    held = {consumer: allocation for consumer, allocation
            in claims.allocations_in_database(fleet.db).items()
            if retried_on.keys() & allocation.keys()}
    usage = _usage(claimed)
    expected = {'/usages?project_id=%s' % PROJECT: dict(
        sum(usage.values(), collections.Counter()))}
    for provider in retried_on:
        expected['/resource_providers/%s/usages' % provider] = dict(
            usage.get(provider, {}))
    differ = []
    for side in sorted(fleet.running):
        for path, usages in sorted(expected.items()):
            status, raw, _seconds = fleet.clients[side].fetch(
                'GET', path, version=VERSION)
            if status != 200 or {rc: amount for rc, amount in json.loads(
                    raw)['usages'].items() if amount} != usages:
                differ.append([side, path])
    if project != expected['/usages?project_id=%s' % PROJECT]:
        differ.append(['database', 'allocations of %s' % PROJECT])
    return {'over_capacity': over, 'exact': held == claimed,
            'usages_differ': differ}


def unexplained_overages(checked):
    """The rows of ``checked['over_capacity']`` whose excess is more than
    the reference's retried claims on the host can have made: each adds
    what a claim asks of the class, at most."""
    return [row for row in checked['over_capacity']
            if row[2] - row[3] > row[4] * dict(CLAIM).get(row[1], 0)]


def summary(records, deadlocks, with_lite, checked):
    """A scenario's numbers: per side, claims, 204s, 409s, 5xx (and
    claims without an answer); the deadlocks, and on MariaDB those with
    placement_lite in them (``with_lite``: :meth:`Fleet.lite_deadlocks`);
    the bursts' seconds, p50 and max; the checks."""
    sides = {}
    for record in records:
        for side, statuses in record['statuses'].items():
            counts = sides.setdefault(side, collections.Counter())
            counts['claims'] += len(statuses)
            for status in statuses:
                key = ('5xx' if status and status >= 500 else
                       'no answer' if status is None else str(status))
                counts[key] += 1
    seconds = [record['seconds'] for record in records]
    return {'bursts': len(records),
            'sides': {side: dict(counts) for side, counts in sides.items()},
            'deadlocks': deadlocks, 'deadlocks_with_lite': with_lite,
            'burst_p50': services.percentile(seconds, 0.5),
            'burst_max': max(seconds),
            'errors': [error for record in records
                       for error in record['errors']],
            'checks': checked,
            'records': [{key: record[key] for key in
                         ('host', 'seconds', 'statuses')}
                        for record in records]}


def run_scenario(backend, scenario, count, venv, log=print):
    """``count`` bursts of ``scenario`` on a fleet of its own; its
    :func:`summary`."""
    split = SCENARIOS[scenario]
    fleet = Fleet(backend, venv)
    try:
        fleet.stop(set(SIDES) - set(split))
        fleet.start(split)
        log('%s, %s: %d bursts' % (backend, scenario, count))
        records = bursts(fleet, split, count, log)
        checked = check(fleet, records)
        fleet.stop()
        return summary(records, fleet.deadlocks(), fleet.lite_deadlocks(),
                       checked)
    finally:
        fleet.close()


def _verdict(checks):
    """The checks of a scenario, in a few words."""
    over = checks['over_capacity']
    unexplained = unexplained_overages(checks)
    words = []
    if over:
        words.append('over capacity: %d providers, %s' % (len(over), (
            "**%d not by the reference's retried claims**" % len(
                unexplained)) if unexplained else
            "all by the reference's retried claims"))
    if not checks['exact']:
        words.append('**allocations are not the claims acknowledged**')
    if checks['usages_differ']:
        words.append('**usages differ: %d**' % len(checks['usages_differ']))
    return '; '.join(words) or 'ok'


def table(results):
    """{backend: {scenario: summary}} as markdown."""
    lines = ['| backend | scenario | side | claims | 204 | 409 | 5xx or none '
             '| deadlocks | burst p50 | burst max | checks |',
             '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|']
    for backend, scenarios in results.items():
        for scenario, result in scenarios.items():
            deadlocks = str(result['deadlocks'])
            if result['deadlocks_with_lite'] is not None:
                deadlocks += ' (%d with placement_lite)' % len(
                    result['deadlocks_with_lite'])
            for side, counts in result['sides'].items():
                lines.append('| %s | %s | %s | %d | %d | %d | %d | %s '
                             '| %.1f s | %.1f s | %s |' % (
                                 backend, scenario, side, counts['claims'],
                                 counts.get('204', 0), counts.get('409', 0),
                                 counts.get('5xx', 0)
                                 + counts.get('no answer', 0),
                                 deadlocks, result['burst_p50'],
                                 result['burst_max'],
                                 _verdict(result['checks'])))
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m tests.bench.mixed_fleet',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--backends', nargs='+', default=['postgresql',
                                                          'mysql'],
                        choices=('postgresql', 'mysql'))
    parser.add_argument('--scenarios', nargs='+', default=list(SCENARIOS),
                        choices=list(SCENARIOS))
    parser.add_argument('--bursts', type=int, default=12)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    venv = services.reference_venv()
    results = {}
    for backend in args.backends:
        results[backend] = {}
        for scenario in args.scenarios:
            results[backend][scenario] = result = run_scenario(
                backend, scenario, args.bursts, venv, log)
            for error in result['errors'][:5]:
                log('  %s %s: %s' % tuple(error))
        os.makedirs(REPORTS, exist_ok=True)
        with open(os.path.join(REPORTS, 'mixed-fleet-%s.json' % backend),
                  'w') as out:
            json.dump({'date': datetime.datetime.now(
                datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
                'load': os.getloadavg()[0], 'scenarios': results[backend]},
                out, indent=1)
    print(table(results))


def log(message):
    print('[%s] %s' % (time.strftime('%H:%M:%S'), message), flush=True)


if __name__ == '__main__':
    main()
