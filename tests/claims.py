"""A claim load against a real server, and what must hold after it.

Client threads claim, move and release resources on a few providers at
once, asking together for far more than the providers hold. Each keeps a
ledger: what it asked for, what it was told succeeded (2xx), and which
consumers it cannot be sure of (any other answer, or none). Afterwards:

- :func:`assert_exact`: nothing went wrong on the way, so the database
  holds exactly the claims that were acknowledged;
- :func:`assert_whole`: some answers were lost (a server killed, the
  database restarted), so a claim without an answer may or may not be
  there, but each consumer holds exactly what one claim asked for (nothing
  half-written) and every acknowledged claim is there.

Both check that no inventory is over-committed. Each client also keeps
every write it sent, with its answer, and :func:`write_problems` checks
each of them in the database, whatever its answer (the rolling restarts:
tests/rolling_restart.py); :func:`conflict_by_design` tells the 409s the
load provokes from the others.

:class:`AllocationClaimer` claims with ``POST /allocation_claims`` (1.43)
instead, on providers :func:`put_in_racks` puts in two aggregates.
"""

import collections
import random
import threading
import time
import urllib.parse
import uuid

import sqlalchemy as sa

from placement_lite import errors
from placement_lite.db import tables
from tests import servers

#: Provider inventories: VCPU 24 (ratio 1), MEMORY_MB (4096 - 512) * 1.5.
INVENTORIES = {
    'VCPU': {'total': 24},
    'MEMORY_MB': {'total': 4096, 'reserved': 512, 'allocation_ratio': 1.5,
                  'step_size': 256, 'max_unit': 2048},
}
CAPACITY = {'VCPU': 24, 'MEMORY_MB': (4096 - 512) * 1.5}
PROJECT = {'project_id': 'project', 'user_id': 'user'}

#: One request's outcome: ``status`` is None when no answer came;
#: ``error`` is the error document's first error, if any; ``at`` is the
#: ``time.monotonic()`` of the answer.
Answer = collections.namedtuple('Answer', 'operation status error at')


#: One write a client sent: its Answer, and ``after``, what each consumer
#: it names holds once it is applied ({consumer: {provider: {class:
#: amount}}}, None for nothing).
Write = collections.namedtuple('Write', 'answer after')


def send(port, operation, method, path, body=None, timeout=60,
         version=servers.VERSION, connection=None):
    """An Answer for one request, whatever happens to it: on its own
    connection, or on ``connection`` (a servers.KeptConnection)."""
    try:
        if connection is None:
            status, payload = servers.request(
                port, method, path, body, version=version, timeout=timeout)
        else:
            status, _headers, payload = connection.exchange(
                method, path, body, version=version)
    except OSError as exc:
        status, payload = None, {'errors': [{'detail': str(exc)}]}
    error = payload['errors'][0] if isinstance(payload, dict) and (
        'errors' in payload) else None
    return Answer(operation, status, error, time.monotonic())


def create_providers(port, count=3, prefix='cn'):
    """``count`` providers with INVENTORIES; their uuids."""
    uuids = []
    for index in range(count):
        provider = str(uuid.uuid4())
        status, payload = servers.request(
            port, 'POST', '/resource_providers',
            {'name': '%s%d-%s' % (prefix, index, provider[:8]),
             'uuid': provider})
        assert status in (200, 201), payload
        status, payload = servers.request(
            port, 'PUT', '/resource_providers/%s/inventories' % provider,
            {'resource_provider_generation': 0, 'inventories': INVENTORIES})
        assert status == 200, payload
        uuids.append(provider)
    return uuids


class _Load(threading.Thread):
    """A thread of the load, sending to ``port`` until ``deadline`` (a
    ``time.monotonic()`` value) and keeping the Answer of every request;
    an exception it raises is kept in ``crash`` for :func:`finish` to
    report, instead of ending it unseen.

    Each request has a connection of its own, or, with ``keep_alive``,
    the thread keeps one open from one request to the next
    (servers.KeptConnection)."""

    def __init__(self, port, deadline, timeout=60, version=servers.VERSION,
                 keep_alive=False):
        super().__init__(daemon=True)
        self.port = port
        self.deadline = deadline
        self.timeout = timeout
        self.version = version
        self.connection = (servers.KeptConnection(port, timeout)
                           if keep_alive else None)
        self.answers = []
        self.crash = None

    def run(self):
        try:
            self.work()
        except Exception as exc:  # noqa: reported by finish()
            self.crash = exc
            raise
        finally:
            if self.connection is not None:
                self.connection.close()

    def request(self, operation, method, path, body=None):
        """Send one request; its Answer, kept in :attr:`answers`."""
        answer = send(self.port, operation, method, path, body, self.timeout,
                      self.version, self.connection)
        self.answers.append(answer)
        return answer

    @property
    def resent(self):
        """Requests sent again after their kept connection was found
        closed."""
        return 0 if self.connection is None else self.connection.resent


class Client(_Load):
    """Claims, moves and releases resources, and keeps a ledger.

    It sends at most ``requests`` requests (no bound when None) and none
    after ``deadline`` (a ``time.monotonic()`` value).
    """

    def __init__(self, port, providers, seed, deadline, requests=None,
                 timeout=60, version=servers.VERSION, keep_alive=False):
        super().__init__(port, deadline, timeout, version, keep_alive)
        self.providers = providers
        self.random = random.Random(seed)
        self.requests = requests
        self.requested = {}   # consumer -> every allocation asked for it
        self.live = {}        # consumer -> allocation, acknowledged
        self.released = set()  # consumers whose release was acknowledged
        # Consumers a write not answered 2xx touched: never written again.
        self.uncertain = set()
        self.writes = []      # every Write, in the order sent
        self.claims = 0       # consumers asked for (new allocations)
        self.winners = 0      # of those, acknowledged

    def random_allocation(self):
        chosen = self.random.sample(self.providers, self.random.choice([1, 2]))
        allocation = {}
        for provider in chosen:
            resources = {'VCPU': self.random.randint(1, 4)}
            if self.random.random() < 0.5:
                resources['MEMORY_MB'] = 256 * self.random.randint(1, 8)
            allocation[provider] = resources
        return allocation

    def _body(self, allocation, generation=None):
        body = dict(PROJECT, allocations={
            rp: {'resources': resources}
            for rp, resources in allocation.items()},
            consumer_generation=generation)
        if _at_least(self.version, CONSUMER_TYPES):
            body['consumer_type'] = 'INSTANCE'
        return body

    def _send(self, operation, method, path, body, after):
        """Send one write, which leaves each consumer as ``after`` says
        once applied; its status, or None when no answer came."""
        answer = self.request(operation, method, path, body)
        self.writes.append(Write(answer, after))
        if answer.status is None or answer.status >= 300:
            self.uncertain.update(after)
        return answer.status

    def claim_one(self):
        consumer, allocation = str(uuid.uuid4()), self.random_allocation()
        self.requested[consumer] = allocation
        self.claims += 1
        if self._send('put', 'PUT', '/allocations/' + consumer,
                      self._body(allocation), {consumer: allocation}) == 204:
            self.winners += 1
            self.live[consumer] = allocation

    def claim_two(self):
        claims = {str(uuid.uuid4()): self.random_allocation() for _ in range(2)}
        self.requested.update(claims)
        self.claims += 2
        if self._send('post', 'POST', '/allocations', {
                consumer: self._body(allocation)
                for consumer, allocation in claims.items()}, claims) == 204:
            self.winners += 2
            self.live.update(claims)

    def move_one(self, old):
        """Release ``old`` and claim for a new consumer, atomically."""
        new, allocation = str(uuid.uuid4()), self.random_allocation()
        self.requested[new] = allocation
        self.claims += 1
        if self._send('move', 'POST', '/allocations', {
                old: self._body({}, generation=1),
                new: self._body(allocation)},
                {old: None, new: allocation}) == 204:
            self.winners += 1
            del self.live[old]
            self.released.add(old)
            self.live[new] = allocation

    def release_one(self, consumer):
        if self._send('delete', 'DELETE', '/allocations/' + consumer, None,
                      {consumer: None}) == 204:
            del self.live[consumer]
            self.released.add(consumer)

    def work(self):
        sent = 0
        while self.requests is None or sent < self.requests:
            if time.monotonic() > self.deadline:
                return
            sent += 1
            roll = self.random.random()
            live = sorted(set(self.live) - self.uncertain)
            if roll < 0.15 and live:
                self.release_one(self.random.choice(live))
            elif roll < 0.30 and live:
                self.move_one(self.random.choice(live))
            elif roll < 0.55:
                self.claim_two()
            else:
                self.claim_one()


def mixed_load(port, providers, seconds, writers=8, readers=4,
               version=servers.VERSION, keep_alive=False):
    """(writers, readers): Clients and Readers, not yet started, that run
    for ``seconds`` from now."""
    deadline = time.monotonic() + seconds
    return ([Client(port, providers, seed, deadline, version=version,
                    keep_alive=keep_alive)
             for seed in range(writers)],
            [Reader(port, providers, deadline, version=version,
                    keep_alive=keep_alive)
             for _ in range(readers)])


#: The microversion from which allocations carry a consumer type.
CONSUMER_TYPES = '1.38'


def _at_least(version, other):
    return tuple(map(int, version.split('.'))) >= tuple(
        map(int, other.split('.')))


def start(threads):
    for thread in threads:
        thread.start()


def finish(threads, timeout):
    """Wait for ``threads`` (at most ``timeout`` seconds in all); fail if
    one is still running or crashed."""
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(timeout=max(1.0, deadline - time.monotonic()))
    assert not any(thread.is_alive() for thread in threads), 'load hung'
    assert [thread.crash for thread in threads if thread.crash] == []


def run(threads, timeout):
    """Run ``threads`` to their end (at most ``timeout`` seconds); return
    the elapsed time."""
    started = time.monotonic()
    start(threads)
    finish(threads, timeout)
    return time.monotonic() - started


class Reader(_Load):
    """Reads what schedulers and operators read, in turn, until
    ``deadline``: allocation candidates, a provider's usages, the provider
    listing."""

    def __init__(self, port, providers, deadline, timeout=60,
                 version=servers.VERSION, keep_alive=False):
        super().__init__(port, deadline, timeout, version, keep_alive)
        self.providers = providers

    def work(self):
        paths = [
            '/allocation_candidates?resources=VCPU:1,MEMORY_MB:256&limit=5',
            '/resource_providers/%s/usages' % self.providers[0],
            '/resource_providers',
        ]
        turn = 0
        while time.monotonic() < self.deadline:
            self.request('read', 'GET', paths[turn % len(paths)])
            turn += 1


class ProviderMaker(_Load):
    """Creates providers and gives each INVENTORIES until ``deadline``;
    keeps every write it sent (``writes``: (provider, Answer) of each
    creation, and ``stocks``: of each inventory write)."""

    def __init__(self, port, deadline, timeout=60, version=servers.VERSION,
                 keep_alive=False):
        super().__init__(port, deadline, timeout, version, keep_alive)
        self.writes = []
        self.stocks = []

    def work(self):
        while time.monotonic() < self.deadline:
            provider = str(uuid.uuid4())
            created = self.request(
                'create', 'POST', '/resource_providers',
                {'name': 'made-' + provider, 'uuid': provider})
            self.writes.append((provider, created))
            if created.status != 200:
                continue
            stocked = self.request(
                'inventories', 'PUT',
                '/resource_providers/%s/inventories' % provider,
                {'resource_provider_generation': 0,
                 'inventories': INVENTORIES})
            self.stocks.append((provider, stocked))


def _maybe_applied(answer):
    """Whether a write with this answer may or may not have been applied:
    no answer came from the service (none at all, or the front's 502 or
    504, or another 5xx)."""
    return answer.status is None or answer.status >= 500


def _acknowledged(answer):
    return answer.status is not None and 200 <= answer.status < 300


def _check_write(what, answer, applied, untouched):
    """The problem with a write, if any, given whether the database shows
    it ``applied`` or ``untouched``."""
    if applied and untouched:
        return None
    if not applied and not untouched:
        return '%s: half applied (answered %s)' % (what, answer.status)
    if applied and not _acknowledged(answer) and not _maybe_applied(answer):
        return '%s: applied, but answered %s %s' % (
            what, answer.status, (answer.error or {}).get('code'))
    if untouched and _acknowledged(answer):
        return '%s: answered %s, but not applied' % (what, answer.status)
    return None


def provider_problems(found, stocked, makers):
    """What the database shows of the makers' writes that their answers
    did not say: a provider created or given inventories that was
    answered otherwise, or the other way round; inventories other than
    INVENTORIES. ``found``: the uuids of the providers in the database;
    ``stocked``: inventories_in_database()."""
    expected = {resource_class: inventory['total']
                for resource_class, inventory in INVENTORIES.items()}
    problems = []
    for maker in makers:
        for provider, answer in maker.writes:
            exists = provider in found
            problems.append(_check_write(
                'create %s' % provider, answer, exists, not exists))
        for provider, answer in maker.stocks:
            held = stocked.get(provider, {})
            if held not in ({}, expected):
                problems.append('inventories of %s: %s' % (provider, held))
            problems.append(_check_write(
                'inventories of %s' % provider, answer, held == expected,
                held == {}))
    return [problem for problem in problems if problem]


def providers_in_database(db):
    """The uuids of the providers in ``db``."""
    with db.reader() as conn:
        return set(conn.execute(
            sa.select(tables.resource_providers.c.uuid)).scalars())


def inventories_in_database(db):
    """{provider uuid: {class: total}}, read from ``db``."""
    held = {}
    for provider, resource_class, total in _named_rows(
            db, tables.inventories, tables.inventories.c.total):
        held.setdefault(provider, {})[resource_class] = int(total)
    return held


def _named_rows(db, table, *columns):
    """(provider uuid, class name, ``columns``...) of every row of
    ``table`` (allocations, inventories), read from ``db``."""
    providers = tables.resource_providers
    classes = tables.resource_classes
    query = (sa.select(providers.c.uuid, classes.c.name, *columns)
             .select_from(table
                          .join(providers, table.c.resource_provider_id
                                == providers.c.id)
                          .join(classes, table.c.resource_class_id
                                == classes.c.id)))
    with db.reader() as conn:
        return conn.execute(query).all()


def answers(threads):
    """Every Answer the given clients and readers got, in no order."""
    return [answer for thread in threads for answer in thread.answers]


#: The 409s the Clients' writes provoke by design, as (error code, words
#: of its detail), and why:
CONFLICTS_BY_DESIGN = (
    # Over capacity: the clients ask together for far more than the
    # providers hold (placement.undefined_code, as the reference answers).
    (errors.DEFAULT, 'Unable to allocate inventory'),
    # Every try of the write met another write bumping one of its
    # providers' generations ([placement]
    # allocation_conflict_retry_count): six writers on four providers.
    (errors.CONCURRENT_UPDATE, 'concurrently updated the resource provider'),
)
#: Not among them, the consumer generation conflicts (also
#: placement.concurrent_update): each consumer is written by one client
#: only, never again after a write that was not acknowledged, so the
#: generation it sends is always the consumer's. Such a 409 is a write
#: sent twice (a proxy's resend meeting its own committed first try) or a
#: bug. Nor anything of the other writes: a provider's creation or
#: inventories answered 409 were sent twice too.
ALLOCATION_WRITES = ('put', 'post', 'move')


def conflict_by_design(answer):
    """Whether ``answer`` is a 409 of CONFLICTS_BY_DESIGN to a Client's
    allocation write."""
    if answer.status != 409 or answer.operation not in ALLOCATION_WRITES:
        return False
    error = answer.error or {}
    code, detail = error.get('code'), error.get('detail', '')
    return any(code == expected and words in detail
               for expected, words in CONFLICTS_BY_DESIGN)


def write_problems(held, clients):
    """What the database shows of the clients' writes that their answers
    did not say, each write checked whatever its answer; ``held``:
    allocations_in_database().

    An acknowledged write (2xx) is there, unless a later acknowledged
    write of the same consumer changed it. A write answered otherwise is
    not there at all; one that got no answer from the service
    (_maybe_applied) is there whole or not at all. Whole: every consumer
    it names (both of a two-consumer POST, the old and the new of a move)
    holds what the write gave it; not at all: every one holds what it
    held before. A consumer no client asked for is a problem too, and so
    is an over-committed inventory."""
    problems = ['over capacity: %s %s used %d' % (provider, resource_class,
                                                  used)
                for (provider, resource_class), used
                in _usage(held.values()).items()
                if used > CAPACITY[resource_class]]
    known = set()
    for client in clients:
        expected, last, checks = {}, set(), []
        for write in client.writes:
            known.update(write.after)
            # Client.work never writes a consumer again after a write of
            # it that was not acknowledged: that write's is the last word.
            assert not last & write.after.keys(), write
            if _acknowledged(write.answer):
                expected.update(write.after)
            else:
                checks.append((write, {consumer: expected.get(consumer)
                                       for consumer in write.after}))
                last.update(write.after)
        for consumer, allocation in expected.items():
            if consumer not in last and held.get(consumer) != allocation:
                problems.append('%s: holds %s, acknowledged %s' % (
                    consumer, held.get(consumer), allocation))
        for write, before in checks:
            found = {consumer: held.get(consumer) for consumer in write.after}
            problems.append(_check_write(
                '%s of %s' % (write.answer.operation, sorted(write.after)),
                write.answer, found == write.after, found == before))
    problems.extend('%s: no client wrote it' % consumer
                    for consumer in held.keys() - known)
    return [problem for problem in problems if problem]


def allocations_in_database(db):
    """{consumer: {provider uuid: {class: amount}}}, read from ``db``."""
    allocations = tables.allocations
    held = {}
    for provider, resource_class, consumer, used in _named_rows(
            db, allocations, allocations.c.consumer_id, allocations.c.used):
        held.setdefault(consumer, {}).setdefault(provider, {})[
            resource_class] = int(used)
    return held


def _usage(allocations):
    usage = {}
    for allocation in allocations:
        for provider, resources in allocation.items():
            for resource_class, amount in resources.items():
                key = (provider, resource_class)
                usage[key] = usage.get(key, 0) + amount
    return usage


def assert_not_overcommitted(held):
    for (provider, resource_class), used in _usage(held.values()).items():
        assert used <= CAPACITY[resource_class], (provider, resource_class,
                                                  used)


def assert_exact(db, port, providers, clients):
    """The database holds exactly the acknowledged claims, and the API
    shows each provider's allocations as they are."""
    held = allocations_in_database(db)
    assert_not_overcommitted(held)
    live = {consumer: allocation for client in clients
            for consumer, allocation in client.live.items()}
    assert held == live
    for provider in providers:
        status, payload = servers.request(
            port, 'GET', '/resource_providers/%s/allocations' % provider)
        assert status == 200
        assert {consumer: entry['resources'] for consumer, entry
                in payload['allocations'].items()} == {
            consumer: allocation[provider]
            for consumer, allocation in live.items() if provider in allocation}


def assert_whole(db, clients):
    """Each consumer holds exactly what one claim asked for; every
    acknowledged claim is there and every acknowledged release is not,
    unless a later unanswered request touched that consumer."""
    held = allocations_in_database(db)
    assert_not_overcommitted(held)
    requested = {consumer: allocation for client in clients
                 for consumer, allocation in client.requested.items()}
    uncertain = set().union(*(client.uncertain for client in clients))
    for consumer, allocation in held.items():
        assert allocation == requested.get(consumer), consumer
    for client in clients:
        for consumer in set(client.live) - uncertain:
            assert consumer in held, consumer
        for consumer in client.released - uncertain:
            assert consumer not in held, consumer


#: The microversion of POST /allocation_claims, and the claims an
#: AllocationClaimer sends at most.
CLAIMS_VERSION = '1.43'
CLAIMS_PER_CLIENT = 30
#: The aggregates put_in_racks makes: the first half of the providers in
#: one, the rest in another.
RACKS = 2


def _claim_query(rng):
    """A random query of a claim: VCPU, maybe MEMORY_MB, maybe ranked."""
    resources = 'VCPU:%d' % rng.randint(1, 4)
    if rng.random() < 0.5:
        resources += ',MEMORY_MB:%d' % (256 * rng.randint(1, 8))
    pairs = [('resources', resources)]
    if rng.random() < 0.5:
        pairs.append(('rank_by', rng.choice(['spread:MEMORY_MB',
                                             'pack:VCPU'])))
    return urllib.parse.urlencode(pairs)


class AllocationClaimer(threading.Thread):
    """Claims with POST /allocation_claims (1.43) until nothing fits, the
    requests bounded: single claims, batches on distinct trees and batches
    in one aggregate; keeps a ledger."""

    def __init__(self, port, seed, deadline):
        super().__init__(daemon=True)
        self.port = port
        self.random = random.Random(seed)
        self.deadline = deadline
        #: {consumer: {provider: resources}} answered 200.
        self.claimed = {}
        #: The providers of each batch claimed with trees=same_aggregate.
        self.packed = []
        #: Queries answered 409 nothing fits.
        self.nothing_fit = []
        #: Answers that were neither.
        self.unexpected = []
        self.crash = None

    def run(self):
        try:
            self.work()
        except Exception as exc:  # noqa: reported by the test
            self.crash = exc
            raise

    def work(self):
        for _request in range(CLAIMS_PER_CLIENT):
            if time.monotonic() > self.deadline:
                return
            query = _claim_query(self.random)
            batch = self.random.choice([1, 1, 1, 2, 3])
            body = {'consumers': {str(uuid.uuid4()): dict(
                PROJECT, consumer_generation=None,
                consumer_type='INSTANCE') for _ in range(batch)}}
            if batch > 1:
                body['trees'] = self.random.choice(['distinct',
                                                    'same_aggregate'])
            status, answer = servers.request(
                self.port, 'POST', '/allocation_claims?' + query, body,
                version=CLAIMS_VERSION)
            if status == 200:
                given = {consumer: {provider: allocation['resources']
                                    for provider, allocation
                                    in claimed['allocations'].items()}
                         for consumer, claimed in answer['claims'].items()}
                self.claimed.update(given)
                if body.get('trees') == 'same_aggregate':
                    self.packed.append(set().union(*given.values()))
            elif status == 409 and answer['errors'][0]['code'] == (
                    errors.CLAIM_NOTHING_FITS):
                self.nothing_fit.append((query, body.get('trees'), batch))
            else:
                self.unexpected.append((status, answer))


def put_in_racks(port, providers):
    """The providers in RACKS aggregates, by equal parts in order; the
    racks, each a set of provider uuids."""
    size = len(providers) // RACKS
    racks = [set(providers[index:index + size])
             for index in range(0, len(providers), size)]
    for rack in racks:
        aggregate = str(uuid.uuid4())
        for provider in rack:
            status, answer = servers.request(
                port, 'PUT', '/resource_providers/%s/aggregates' % provider,
                {'resource_provider_generation': 1,
                 'aggregates': [aggregate]}, version='1.19')
            assert status == 200, answer
    return racks
