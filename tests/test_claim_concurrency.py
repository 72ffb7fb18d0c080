"""Claims (1.43) under concurrency, against a real server.

placement_lite runs under uwsgi with several processes on one database
(tests/test_concurrency.py's set-up). Many client threads claim with
``POST /allocation_claims`` on the same few providers at once, single
claims and batches on distinct trees, asking together for far more than
the providers hold, until nothing fits. Afterwards:

- no inventory is over-committed (usage <= capacity, read from the
  database), and the project's usages equal its allocations;
- every claim answered 200 is recorded, exactly as answered, and nothing
  else is;
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
                body['trees'] = 'distinct'
            status, answer = servers.request(
                self.port, 'POST', '/allocation_claims?' + query, body,
                version=VERSION)
            if status == 200:
                self.claimed.update(
                    (consumer, {provider: given['resources'] for provider,
                                given in claimed['allocations'].items()})
                    for consumer, claimed in answer['claims'].items())
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


def _still_nothing_fits(port, query, trees, batch):
    status, answer = servers.request(
        port, 'GET', '/allocation_candidates?' + query, version='1.42')
    assert status == 200, answer
    roots = {answer['provider_summaries'][provider]['root_provider_uuid']
             for request in answer['allocation_requests']
             for provider in request['allocations']}
    return len(roots) < batch if trees == 'distinct' else not roots


def test_concurrent_claims_never_overcommit_nor_refuse_what_fits(backend):
    db = harness.fresh_database(backend)
    db.dispose()
    server = servers.Uwsgi(db.url, processes=PROCESSES)
    try:
        claims.create_providers(server.port, count=PROVIDERS)
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
        status, usages = servers.request(
            server.port, 'GET', '/usages?project_id=%s'
            % claims.PROJECT['project_id'], version='1.9')
        assert status == 200
        assert usages['usages'] == _by_class(held)
        refused = [refusal for client in clients
                   for refusal in client.nothing_fit]
        wrongly = [refusal for refusal in refused
                   if not _still_nothing_fits(server.port, *refusal)]
        assert wrongly == []
        print('\n[%s] %d processes, %d clients in %.1fs: %d consumers '
              'claimed, %d claims answered nothing fits'
              % (backend, PROCESSES, CLIENTS, elapsed, len(claimed),
                 len(refused)))
        # The run filled the providers: some claims found nothing.
        assert claimed and refused
    finally:
        server.cleanup()
