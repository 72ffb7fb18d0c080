"""How the candidates queries without a limit grow with the cloud, served,
every size timed in turns.

    python -m tests.bench.growth --hosts 5000 20000 --repetitions 15

Writes the benchmark's cloud of each size in bulk (tests/bench/builder.py)
into a database of its own in the throwaway PostgreSQL, serves each with
placement_lite under uwsgi as the benchmark does (4 processes of 1
thread), all at once, and sends each query to every size in turn, request
by request, warm. Whatever else the machine does slows every size alike:
on a shared host two runs of `python -m tests.bench`, which times one
size after the other minutes apart, differ by a tenth, as much as the
growth it would judge. Prints each query's p50 at each size and its
growth against the hosts' (issue 49's goal: no worse than linear);
docs/benchmark.md shows the table.
"""

import argparse
import os
import time

from tests import harness
from tests.bench import builder
from tests.bench import cloud as bench_cloud
from tests.bench import queries as bench_queries
from tests.bench import services


def unbounded(cloud):
    """The candidates queries of ``cloud`` without a limit, by name (not
    the explain variants; the wide trees are bounded)."""
    return {query.name: query for query in bench_queries.named_queries(cloud)
            if query.candidates and not query.bounded
            and not query.explains and not query.wide}


def _p50(times):
    ordered = sorted(times)
    return ordered[(len(ordered) - 1) // 2]


def timed_in_turns(clients, queries, repetitions):
    """{size: p50 seconds} of ``queries`` ({size: that size's Query}), one
    request to each size in turn, after one warm-up each."""
    taken = {size: [] for size in clients}
    for run in range(1 + repetitions):
        for size, client in clients.items():
            query = queries[size]
            status, raw, seconds = client.fetch('GET', query.path,
                                                version=query.version)
            assert status == 200, raw[:500]
            if run:
                taken[size].append(seconds)
    return {size: _p50(times) for size, times in taken.items()}


def table(hosts, p50s):
    """The markdown table of ``p50s`` ({query: {size: seconds}})."""
    smallest, largest = hosts[0], hosts[-1]
    lines = ['| query | %s | growth, %.1fx the hosts |' % (' | '.join(
        '{:,} hosts'.format(size) for size in hosts),
        largest / smallest), '|---|%s---:|' % ('---:|' * len(hosts))]
    for name, by_size in p50s.items():
        lines.append('| %s | %s | %.2fx |' % (name, ' | '.join(
            '%.1f ms' % (1000 * by_size[size]) for size in hosts),
            by_size[largest] / by_size[smallest]))
    return '\n'.join(lines)


def main():
    parser = argparse.ArgumentParser(prog='python -m tests.bench.growth',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, nargs='+',
                        default=[5000, 20000])
    parser.add_argument('--repetitions', type=int, default=15)
    parser.add_argument('--queries', nargs='*',
                        help='names (default: every unbounded candidates '
                        'query)')
    args = parser.parse_args()
    hosts = sorted(args.hosts)
    named = {size: unbounded(bench_cloud.build(size)) for size in hosts}
    names = args.queries or list(named[hosts[0]])
    running = {}
    try:
        for size in hosts:
            url, seconds = builder.new_database('growth_%d_%d' % (
                size, os.getpid()), bench_cloud.build(size))
            print('%d hosts written in %.0f s' % (size, seconds), flush=True)
            service = running[size] = services.placement_lite(
                harness._free_port(), url, os.path.join(
                    services.BENCH_DIR, 'growth-%d' % size),
                processes=4, threads=1)
            service.start()
        clients = {size: services.HttpClient(service.port)
                   for size, service in running.items()}
        started = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
        p50s = {}
        for name in names:
            p50s[name] = timed_in_turns(
                clients, {size: named[size][name] for size in hosts},
                args.repetitions)
            print(name, ', '.join('%d: %.1f ms' % (size, 1000 * seconds)
                                  for size, seconds in p50s[name].items()),
                  flush=True)
        print('\n%s, %d repetitions, from %s\n' % (
            ' and '.join(map(str, hosts)), args.repetitions, started))
        print(table(hosts, p50s))
    finally:
        for service in running.values():
            service.stop()


if __name__ == '__main__':
    main()
