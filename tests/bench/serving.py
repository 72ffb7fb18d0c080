"""The production line under the benchmark's cloud: memory and throughput.

    python -m tests.bench.serving memory --hosts 1000 5000
    python -m tests.bench.serving throughput --hosts 1000 --processes 2 4 8

``memory`` is ``python -m tests.bench.memory --hosts ... --processes N``
(tests/bench/memory.py): both services, each line, side by side.

``throughput`` starts the production line (``uwsgi --ini etc/uwsgi.ini``,
pre-forked, see tests/servers.py) on a database of the throwaway
PostgreSQL, loads the benchmark's cloud through the API
(tests/bench/cloud.py), restarts uwsgi with each number of processes in
turn and has ``--clients`` threads send the scheduler-like queries
(limit50, member_of, in_tree, in turn) for ``--seconds``: requests per
second and latency percentiles.
"""

import argparse
import os
import threading
import time

from tests import harness
from tests import servers
from tests.bench import cloud as bench_cloud
from tests.bench import memory as bench_memory
from tests.bench import queries as bench_queries
from tests.bench import services

#: Queries a scheduler sends all day, small answers (throughput).
SCHEDULER_QUERIES = ('limit50', 'member_of', 'in_tree')


def _loaded_cloud(hosts, processes):
    """(cloud, database URL, running Uwsgi) with the cloud loaded."""
    cloud = bench_cloud.build(hosts)
    url = harness.create_postgres_database(
        'serving_%d_%d' % (hosts, os.getpid()), migrated=True)
    server = servers.Uwsgi(url, processes=processes)
    bench_cloud.Loader(services.HttpClient(server.port), threads=8).load(
        cloud)
    harness.postgres_server().vacuum(url.rsplit('/', 1)[1])
    return cloud, url, server


def memory(args):
    """tests/bench/memory.py at the sizes and number of processes asked."""
    bench_memory.main(['--hosts', *map(str, args.hosts),
                       '--processes', str(args.processes[0])])


def _percentile(ordered, fraction):
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def throughput(args):
    print('| hosts | processes | clients | requests/s | p50 | p95 | p99 |')
    print('|---|---|---|---|---|---|---|')
    for hosts in args.hosts:
        cloud, url, server = _loaded_cloud(hosts, args.processes[0])
        named = {query.name: query
                 for query in bench_queries.named_queries(cloud)}
        paths = [(named[name].path, named[name].version)
                 for name in SCHEDULER_QUERIES]
        try:
            for processes in args.processes:
                if processes != server.processes:
                    server.cleanup()
                    server = servers.Uwsgi(url, processes=processes)
                rate, durations = _drive(server.port, paths, args)
                durations.sort()
                print('| %d | %d | %d | %.1f | %.1f ms | %.1f ms | %.1f ms |'
                      % (hosts, processes, args.clients, rate,
                         1000 * _percentile(durations, 0.5),
                         1000 * _percentile(durations, 0.95),
                         1000 * _percentile(durations, 0.99)), flush=True)
        finally:
            server.cleanup()


def _drive(port, paths, args):
    """(requests per second, [durations]) of ``args.clients`` threads
    sending ``paths`` in turn for ``args.seconds`` (after a warm-up)."""
    client = services.HttpClient(port)
    for path, version in paths * 8:
        client.fetch('GET', path, version=version)
    durations = []
    deadline = time.monotonic() + args.seconds

    def send(offset):
        turn = offset
        while time.monotonic() < deadline:
            path, version = paths[turn % len(paths)]
            status, _raw, seconds = client.fetch('GET', path, version=version)
            assert status == 200, status
            durations.append(seconds)
            turn += 1

    threads = [threading.Thread(target=send, args=(offset,))
               for offset in range(args.clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(durations) / (time.monotonic() - started), durations


def main():
    parser = argparse.ArgumentParser(prog='python -m tests.bench.serving',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('measure', choices=('memory', 'throughput'))
    parser.add_argument('--hosts', type=int, nargs='+', default=[1000])
    parser.add_argument('--processes', type=int, nargs='+', default=[4],
                        help='uwsgi processes (throughput: each in turn)')
    parser.add_argument('--clients', type=int, default=16,
                        help='throughput: concurrent clients')
    parser.add_argument('--seconds', type=float, default=20.0,
                        help='throughput: seconds measured per setting')
    args = parser.parse_args()
    {'memory': memory, 'throughput': throughput}[args.measure](args)


if __name__ == '__main__':
    main()
