"""Integrity of allocation writes under concurrency, against a real server.

placement_lite runs under uwsgi with several processes on one database
(PostgreSQL, and SQLite where writers are serialised), started from the
README's etc/uwsgi.ini. Many client threads claim, move and release
resources on the same few providers at once, asking together for far more
than the providers hold (tests/claims.py). Afterwards:

- no inventory is over-committed (usage <= capacity, read from the database);
- every claim that got a 2xx is recorded, exactly, and nothing else is
  (allocations read back through the API equal the clients' own ledger);
- no request got anything but 204 or 409 (no 500, no deadlock surfacing).

Loops are bounded in count (requests per client) and in time (timeouts on
every request and on the whole run). Only 127.0.0.1 is used.
"""

import time

import pytest

from tests import claims
from tests import harness
from tests import servers

#: Run on MariaDB too (see tests/conftest.py).
pytestmark = [pytest.mark.mysql, pytest.mark.slow]

PROCESSES = 4
CLIENTS = 16
REQUESTS_PER_CLIENT = 25
RUN_TIMEOUT = 240.0


def test_concurrent_claims_never_overcommit(backend):
    db = harness.fresh_database(backend)
    db.dispose()
    server = servers.Uwsgi(db.url, processes=PROCESSES)
    try:
        providers = claims.create_providers(server.port)
        deadline = time.monotonic() + RUN_TIMEOUT
        clients = [claims.Client(server.port, providers, seed, deadline,
                                 requests=REQUESTS_PER_CLIENT)
                   for seed in range(CLIENTS)]
        elapsed = claims.run(clients, RUN_TIMEOUT + 5)

        answers = claims.answers(clients)
        unexpected = [answer for answer in answers
                      if answer.status not in (204, 409)
                      or (answer.operation == 'delete'
                          and answer.status != 204)]
        assert not unexpected, unexpected[:5]
        claims.assert_exact(db, server.port, providers, clients)

        claimed = sum(client.claims for client in clients)
        winners = sum(client.winners for client in clients)
        losers = sum(1 for answer in answers if answer.status == 409)
        conflict_details = {
            answer.error['detail'].split('\n\n ')[-1].split("'")[0].strip()
            for answer in answers if answer.status == 409}
        usage = claims.allocations_in_database(db)
        print('\n[%s] %d processes, %d clients, %d requests in %.1fs: '
              '%d claims, %d winners, %d requests answered 409 %s; '
              '%d consumers hold resources'
              % (backend, PROCESSES, CLIENTS, len(answers), elapsed,
                 claimed, winners, losers, sorted(conflict_details),
                 len(usage)))
        # The run must have fought over capacity: some claims lost, some won.
        assert winners > 0 and losers > 0
    finally:
        server.cleanup()
