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

Both check that no inventory is over-committed.

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


def send(port, operation, method, path, body=None, timeout=60,
         version=servers.VERSION):
    """An Answer for one request, whatever happens to it."""
    try:
        status, payload = servers.request(port, method, path, body,
                                          version=version, timeout=timeout)
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
    """A thread of the load; an exception it raises is kept in ``crash``
    for :func:`finish` to report, instead of ending it unseen."""

    def __init__(self):
        super().__init__(daemon=True)
        self.crash = None

    def run(self):
        try:
            self.work()
        except Exception as exc:  # noqa: reported by finish()
            self.crash = exc
            raise


class Client(_Load):
    """Claims, moves and releases resources, and keeps a ledger.

    It sends at most ``requests`` requests (no bound when None) and none
    after ``deadline`` (a ``time.monotonic()`` value).
    """

    def __init__(self, port, providers, seed, deadline, requests=None,
                 timeout=60, version=servers.VERSION):
        super().__init__()
        self.port = port
        self.providers = providers
        self.random = random.Random(seed)
        self.deadline = deadline
        self.requests = requests
        self.timeout = timeout
        self.version = version
        self.requested = {}   # consumer -> every allocation asked for it
        self.live = {}        # consumer -> allocation, acknowledged
        self.released = set()  # consumers whose release was acknowledged
        self.uncertain = set()  # consumers an unanswered request touched
        self.answers = []     # Answer of every request
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

    def _send(self, operation, method, path, body, consumers):
        """Send one request; its status, or None when no answer came."""
        answer = send(self.port, operation, method, path, body, self.timeout,
                      self.version)
        self.answers.append(answer)
        if answer.status is None or answer.status >= 300:
            self.uncertain.update(consumers)
        return answer.status

    def claim_one(self):
        consumer, allocation = str(uuid.uuid4()), self.random_allocation()
        self.requested[consumer] = allocation
        self.claims += 1
        if self._send('put', 'PUT', '/allocations/' + consumer,
                      self._body(allocation), [consumer]) == 204:
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
                new: self._body(allocation)}, [old, new]) == 204:
            self.winners += 1
            del self.live[old]
            self.released.add(old)
            self.live[new] = allocation

    def release_one(self, consumer):
        if self._send('delete', 'DELETE', '/allocations/' + consumer, None,
                      [consumer]) == 204:
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
               version=servers.VERSION):
    """(writers, readers): Clients and Readers, not yet started, that run
    for ``seconds`` from now."""
    deadline = time.monotonic() + seconds
    return ([Client(port, providers, seed, deadline, version=version)
             for seed in range(writers)],
            [Reader(port, providers, deadline, version=version)
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
                 version=servers.VERSION):
        super().__init__()
        self.port = port
        self.providers = providers
        self.deadline = deadline
        self.timeout = timeout
        self.version = version
        self.answers = []

    def work(self):
        paths = [
            '/allocation_candidates?resources=VCPU:1,MEMORY_MB:256&limit=5',
            '/resource_providers/%s/usages' % self.providers[0],
            '/resource_providers',
        ]
        turn = 0
        while time.monotonic() < self.deadline:
            self.answers.append(send(self.port, 'read', 'GET',
                                     paths[turn % len(paths)],
                                     timeout=self.timeout,
                                     version=self.version))
            turn += 1


class ProviderMaker(_Load):
    """Creates providers and gives each INVENTORIES until ``deadline``;
    keeps a ledger of the providers whose creation was acknowledged, and
    of those given their inventories."""

    def __init__(self, port, deadline, timeout=60, version=servers.VERSION):
        super().__init__()
        self.port = port
        self.deadline = deadline
        self.timeout = timeout
        self.version = version
        self.answers = []
        self.created = set()
        self.stocked = set()

    def work(self):
        while time.monotonic() < self.deadline:
            provider = str(uuid.uuid4())
            created = send(self.port, 'create', 'POST', '/resource_providers',
                           {'name': 'made-' + provider, 'uuid': provider},
                           self.timeout, self.version)
            self.answers.append(created)
            if created.status != 200:
                continue
            self.created.add(provider)
            stocked = send(
                self.port, 'inventories', 'PUT',
                '/resource_providers/%s/inventories' % provider,
                {'resource_provider_generation': 0,
                 'inventories': INVENTORIES}, self.timeout, self.version)
            self.answers.append(stocked)
            if stocked.status == 200:
                self.stocked.add(provider)


def assert_providers_made(db, makers):
    """Every provider whose creation was acknowledged is there, with
    INVENTORIES when that was acknowledged too."""
    providers = tables.resource_providers
    inventories = tables.inventories
    with db.reader() as conn:
        found = set(conn.execute(sa.select(providers.c.uuid)).scalars())
        with_totals = {uuid_: total for uuid_, total in conn.execute(
            sa.select(providers.c.uuid, sa.func.sum(inventories.c.total))
            .select_from(providers.join(
                inventories,
                inventories.c.resource_provider_id == providers.c.id))
            .group_by(providers.c.uuid))}
    expected_total = sum(inventory['total']
                         for inventory in INVENTORIES.values())
    for maker in makers:
        assert maker.created <= found, maker.created - found
        for provider in maker.stocked:
            assert with_totals.get(provider) == expected_total, provider


def answers(threads):
    """Every Answer the given clients and readers got, in no order."""
    return [answer for thread in threads for answer in thread.answers]


def allocations_in_database(db):
    """{consumer: {provider uuid: {class: amount}}}, read from ``db``."""
    allocations = tables.allocations
    classes = tables.resource_classes
    providers = tables.resource_providers
    query = (sa.select(allocations.c.consumer_id, providers.c.uuid,
                       classes.c.name, allocations.c.used)
             .select_from(allocations
                          .join(providers, allocations.c.resource_provider_id
                                == providers.c.id)
                          .join(classes, allocations.c.resource_class_id
                                == classes.c.id)))
    held = {}
    with db.reader() as conn:
        for consumer, provider, resource_class, used in conn.execute(query):
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
