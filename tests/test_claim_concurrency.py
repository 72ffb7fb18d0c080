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
import time
import urllib.parse

import pytest

from tests import claims
from tests import harness
from tests import servers

#: Run on MariaDB too (see tests/conftest.py).
pytestmark = [pytest.mark.mysql, pytest.mark.slow]

PROCESSES = 4
CLIENTS = 16
PROVIDERS = 6
RUN_TIMEOUT = 240.0


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


def test_concurrent_claims_never_overcommit_nor_refuse_what_fits(backend):
    db = harness.fresh_database(backend)
    db.dispose()
    server = servers.Uwsgi(db.url, processes=PROCESSES)
    try:
        racks = claims.put_in_racks(server.port, claims.create_providers(
            server.port, count=PROVIDERS))
        deadline = time.monotonic() + RUN_TIMEOUT
        clients = [claims.AllocationClaimer(server.port, seed, deadline)
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
