"""placement_lite on a three-node MariaDB Galera cluster, measured: the
numbers of docs/deploying.md ("Highly available databases").

    python -m tests.bench.clusters --claimers 24 --seconds 60 --rounds 10

- claims: one uwsgi server (``--workers`` processes) on each node,
  ``--claimers`` clients spread over them claiming, moving and releasing
  for ``--seconds``: the answers by status, the writes tried again after a
  certification conflict (from the servers' logs), whether anything is
  over-committed or differs from what was acknowledged, and whether the
  three nodes hold the same rows; the 409s by error code (a claim over
  capacity, a generation that moved, a write still conflicting after its
  retries);
- start-up: ``--rounds`` times, one server of ``--workers`` lazy workers
  on each node started at once on an empty database with
  ``sync_on_startup``: how many serve.

The cluster, the servers and the clients share the machine.
"""

import argparse
import collections
import time

import os_traits

from placement_lite.db import api as db_api
from tests import claims
from tests import harness
from tests import servers
from tests import test_galera


def measure_claims(cluster, claimers, seconds, workers):
    urls = test_galera.new_database(cluster, 'bench_claims')
    hosts = [servers.Uwsgi(url, processes=workers) for url in urls]
    database = db_api.Database(urls[0])
    try:
        providers = claims.create_providers(hosts[0].port)
        deadline = time.monotonic() + seconds
        clients = [claims.Client(hosts[seed % 3].port, providers, seed,
                                 deadline) for seed in range(claimers)]
        elapsed = claims.run(clients, seconds + 120)
        answers = claims.answers(clients)
        statuses = collections.Counter(answer.status for answer in answers)
        refusals = collections.Counter(
            answer.error.get('code') for answer in answers
            if answer.status == 409)
        try:
            claims.assert_exact(database, hosts[0].port, providers, clients)
            exact = True
        except AssertionError:
            exact = False
        checksums = [test_galera.checksums(node, 'bench_claims')
                     for node in cluster.nodes]
        return {'claimers': claimers, 'seconds': round(elapsed, 1),
                'statuses': dict(sorted(statuses.items())),
                '409_by_code': dict(sorted(refusals.items())),
                'retried_conflicts': test_galera.retried(hosts),
                'exact_and_not_overcommitted': exact,
                'nodes_identical': checksums.count(checksums[0]) == 3}
    finally:
        database.dispose()
        for host in hosts:
            host.cleanup()


def _serves(host):
    try:
        host.wait_ready()
        status, body = servers.request(host.port, 'GET', '/traits')
    except (RuntimeError, OSError):
        return False
    return status == 200 and sorted(body['traits']) == sorted(
        os_traits.get_traits())


def measure_startup(cluster, rounds, workers):
    serving = []
    for round_ in range(rounds):
        urls = cluster.create_database('bench_startup_%d' % round_)
        hosts = [servers.Uwsgi(url, processes=workers, lazy=True,
                               start=False,
                               extra_conf='sync_on_startup = true\n')
                 for url in urls]
        try:
            for host in hosts:
                host.launch()
            serving.append(sum(_serves(host) for host in hosts))
        finally:
            for host in hosts:
                host.cleanup()
        print('start-up round %d: %d of 3 servers serve'
              % (round_ + 1, serving[-1]), flush=True)
    return {'rounds': rounds, 'workers_per_server': workers,
            'servers_serving_per_round': serving}


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m tests.bench.clusters')
    parser.add_argument('--claimers', type=int, default=24)
    parser.add_argument('--seconds', type=float, default=60)
    parser.add_argument('--rounds', type=int, default=10)
    parser.add_argument('--workers', type=int, default=4)
    args = parser.parse_args(argv)
    cluster = harness.GaleraCluster()
    try:
        print(measure_claims(cluster, args.claimers, args.seconds,
                             args.workers), flush=True)
        print(measure_startup(cluster, args.rounds, args.workers),
              flush=True)
    finally:
        cluster.destroy()


if __name__ == '__main__':
    main()
