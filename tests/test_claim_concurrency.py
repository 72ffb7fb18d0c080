"""Claims (1.43) under concurrency, against a real server.

placement_lite runs under uwsgi with several processes on one database
(tests/test_concurrency.py's set-up). Many client threads claim with
``POST /allocation_claims`` on the same few providers at once (in two
aggregates, racks), single claims, batches on distinct trees and batches
in one aggregate, asking together for far more than the providers hold,
until nothing fits. Afterwards:

- no inventory is over-committed (usage <= capacity, read from the
  database), and the project's usages equal its allocations;
- every claim answered 200 is recorded, exactly as answered, and nothing
  else is; each batch claimed with trees=same_aggregate is within one
  rack;
- every other answer is a 409 "nothing fits", and each is true: claims
  only add usage, so the same query still finds no candidate at the end
  (none was refused while capacity remained for it).

Loops are bounded in count and in time; only 127.0.0.1 is used.
"""

import collections
import random
import threading
import time
import urllib.parse
import uuid

import pytest

from placement_lite import errors
from tests import claims
from tests import harness
from tests import servers

#: Run on MariaDB too (see tests/conftest.py).
pytestmark = [pytest.mark.mysql, pytest.mark.slow]

VERSION = '1.43'
PROCESSES = 4
CLIENTS = 16
PROVIDERS = 6
#: The providers' aggregates: the first half in one, the rest in another.
RACKS = 2
REQUESTS_PER_CLIENT = 30
RUN_TIMEOUT = 240.0


def _query(rng):
    resources = 'VCPU:%d' % rng.randint(1, 4)
    if rng.random() < 0.5:
        resources += ',MEMORY_MB:%d' % (256 * rng.randint(1, 8))
    pairs = [('resources', resources)]
    if rng.random() < 0.5:
        pairs.append(('rank_by', rng.choice(['spread:MEMORY_MB',
                                             'pack:VCPU'])))
    return urllib.parse.urlencode(pairs)


class Claimer(threading.Thread):
    """Claims until nothing fits, the requests bounded; keeps a ledger."""

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
        for _request in range(REQUESTS_PER_CLIENT):
            if time.monotonic() > self.deadline:
                return
            query = _query(self.random)
            batch = self.random.choice([1, 1, 1, 2, 3])
            body = {'consumers': {str(uuid.uuid4()): dict(
                claims.PROJECT, consumer_generation=None,
                consumer_type='INSTANCE') for _ in range(batch)}}
            if batch > 1:
                body['trees'] = self.random.choice(['distinct',
                                                    'same_aggregate'])
            status, answer = servers.request(
                self.port, 'POST', '/allocation_claims?' + query, body,
                version=VERSION)
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


def _by_class(held):
    """{class: amount} of every allocation in ``held``."""
    total = collections.Counter()
    for allocation in held.values():
        for resources in allocation.values():
            total.update(resources)
    return dict(total)


def _still_nothing_fits(port, racks, query, trees, batch):
    """Whether ``query`` still finds nothing for the batch: too few trees
    for a distinct one; no rack (``racks``: sets of provider uuids) whose
    providers hold the batch between them for a same_aggregate one (each
    provider is a tree of one candidate, which the consumers take while it
    has room: a rack holds as many consumers as its providers' room for
    one adds up to); no candidate otherwise."""
    status, answer = servers.request(
        port, 'GET', '/allocation_candidates?' + query, version='1.42')
    assert status == 200, answer
    summaries = answer['provider_summaries']
    roots = {summaries[provider]['root_provider_uuid']
             for request in answer['allocation_requests']
             for provider in request['allocations']}
    if trees == 'distinct':
        return len(roots) < batch
    if trees == 'same_aggregate':
        asked = dict(urllib.parse.parse_qsl(query))['resources']
        amounts = {name: int(amount) for name, amount
                   in (part.split(':') for part in asked.split(','))}
        room = {root: min((summaries[root]['resources'][name]['capacity']
                           - summaries[root]['resources'][name]['used'])
                          // amount for name, amount in amounts.items())
                for root in roots}
        return all(sum(room[root] for root in roots & rack) < batch
                   for rack in racks)
    return not roots


def _put_in_racks(port, providers):
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


def test_concurrent_claims_never_overcommit_nor_refuse_what_fits(backend):
    db = harness.fresh_database(backend)
    db.dispose()
    server = servers.Uwsgi(db.url, processes=PROCESSES)
    try:
        racks = _put_in_racks(server.port, claims.create_providers(
            server.port, count=PROVIDERS))
        deadline = time.monotonic() + RUN_TIMEOUT
        clients = [Claimer(server.port, seed, deadline)
                   for seed in range(CLIENTS)]
        elapsed = claims.run(clients, RUN_TIMEOUT + 5)

        assert [client.unexpected for client in clients
                if client.unexpected] == []
        held = claims.allocations_in_database(db)
        claims.assert_not_overcommitted(held)
        claimed = {consumer: allocation for client in clients
                   for consumer, allocation in client.claimed.items()}
        assert held == claimed
        packed = [providers for client in clients
                  for providers in client.packed]
        assert [providers for providers in packed
                if not any(providers <= rack for rack in racks)] == []
        status, usages = servers.request(
            server.port, 'GET', '/usages?project_id=%s'
            % claims.PROJECT['project_id'], version='1.9')
        assert status == 200
        assert usages['usages'] == _by_class(held)
        refused = [refusal for client in clients
                   for refusal in client.nothing_fit]
        wrongly = [refusal for refusal in refused
                   if not _still_nothing_fits(server.port, racks, *refusal)]
        assert wrongly == []
        print('\n[%s] %d processes, %d clients in %.1fs: %d consumers '
              'claimed (%d batches in one rack), %d claims answered '
              'nothing fits'
              % (backend, PROCESSES, CLIENTS, elapsed, len(claimed),
                 len(packed), len(refused)))
        # The run filled the providers: some claims found nothing; and some
        # batches were packed into a rack before it did.
        assert claimed and refused and packed
    finally:
        server.cleanup()
