"""Ranked candidates (1.42) against unranked ones, in-process.

    python -m tests.bench.ranked --hosts 5000 --repetitions 21

Writes the benchmark's cloud in bulk (tests/bench/builder.py) into a
database of the throwaway PostgreSQL and serves it in this process, as
tests/bench/profile.py does. Each pair of queries is timed in turns (one
request of each, again and again), warm, and their p50 compared with the
goals of issue 31:

* nova's flavor request, limit=1000, ranked by spread on MEMORY_MB: at
  most 1.5x the unranked request's p50;
* explain on that ranked request: at most 15% more;
* two prioritized alternatives: at most the two alternatives asked
  separately, added.

Then it checks that the 1,000 candidates of the ranked request are exactly
the first 1,000 of the same request without a limit (every tree walked,
every candidate generated and sorted by the key: the brute-force order),
and that along the answer the round never decreases and, within a round,
the free MEMORY_MB never grows.
Prints a markdown table (docs/benchmark.md shows one).
"""

import argparse
import json
import os
import time
import urllib.parse

from placement_lite import app
from tests import harness
from tests.bench import builder
from tests.bench import cloud as bench_cloud
from tests.bench import queries as bench_queries


#: The section of docs/benchmark.md (python -m tests.bench writes it after
#: the others): the table this module printed, pasted.
SECTION = """## Ranked candidates

`python -m tests.bench.ranked --hosts 5000 --repetitions 21` (in-process,
the throwaway PostgreSQL, the benchmark's cloud written in bulk; each
group of queries timed in turns, request by request, warm; a shared
2-core machine) times placement_lite's ranked requests (1.42,
[api-ref/extensions.md](../api-ref/extensions.md#142-ranked-candidates))
against the unranked ones, and checks that the 1,000 candidates of the
ranked request are exactly the first 1,000 of the same request without a
limit (every tree walked, every candidate generated and sorted by the
key):

| query, 5000 hosts | p50 | |
|---|---:|---|
| nova_flavor (unranked, limit=1000) | 179 ms |  |
| nova_flavor_ranked (spread:MEMORY_MB) | 185 ms | 1.03x unranked (goal 1.5x); top 1000 = brute force (18000 candidates sorted), 1000 trees, 1000 trees walked |
| nova_flavor_ranked_explain | 185 ms | +0% (goal 15%) |
| alternative_fpga_ranked | 249 ms |  |
| alternative_vf_ranked | 381 ms |  |
| alternatives_ranked (_ACCEL, else _NET) | 391 ms | 0.62x the two alone added (goal 1.0x) |

An earlier run (15 repetitions) gave 0.96x, +16% for explain and 0.56x:
explain's overhead is within the noise of this machine, around the 15%
goal. The ranked request searches the whole cloud (the unranked one
windows of trees in creation order) and, with its optimistic keys exact
here, walks exactly the 1,000 best trees.
"""


def _get(environment, path, version):
    started = time.perf_counter()
    status, _headers, raw = environment.respond('GET', path, version=version)
    assert status == 200, raw
    return time.perf_counter() - started, raw


def _p50(times):
    ordered = sorted(times)
    return ordered[(len(ordered) - 1) // 2]


def timed_in_turns(environment, queries, repetitions):
    """{query name: p50 seconds}, one request of each query in turn."""
    taken = {query.name: [] for query in queries}
    for query in queries:
        _get(environment, query.path, query.version)
    for _ in range(repetitions):
        for query in queries:
            taken[query.name].append(
                _get(environment, query.path, query.version)[0])
    return {name: _p50(times) for name, times in taken.items()}


def check_top(environment, query):
    """(candidates returned, trees they name, candidates without the
    limit, trees walked): the limited answer is the head of the unlimited
    one, in the order of (round, spread on MEMORY_MB)."""
    params = [(name, value) for name, value in query.params
              if name != 'limit']
    limit = int(dict(query.params)['limit'])
    _seconds, raw = _get(environment, query.path + '&explain=true',
                         query.version)
    bounded = json.loads(raw)
    _seconds, raw = _get(
        environment, query.route + '?' + urllib.parse.urlencode(params),
        query.version)
    every = json.loads(raw)['allocation_requests']
    returned = bounded['allocation_requests']
    assert len(returned) == min(limit, len(every))
    assert returned == every[:limit], 'not the top %d' % limit
    keys = [(c['round'], -c['free']['MEMORY_MB'])
            for c in bounded['explain']['ranking']['candidates']]
    assert keys == sorted(keys)
    trees = {c['tree'] for c in bounded['explain']['ranking']['candidates']}
    return len(returned), len(trees), len(every), bounded['explain'][
        'ranking']['walked']


def main():
    parser = argparse.ArgumentParser(prog='python -m tests.bench.ranked',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=5000)
    parser.add_argument('--repetitions', type=int, default=21)
    args = parser.parse_args()
    cloud = bench_cloud.build(args.hosts)
    named = {query.name: query for query in
             bench_queries.named_queries(cloud)
             + bench_queries.ranked_queries()}
    url, seconds = builder.new_database('ranked_%d_%d' % (
        args.hosts, os.getpid()), cloud)
    print('%d hosts written in %.0f s' % (args.hosts, seconds))
    app.tune_garbage_collector()
    environment = harness.Environment('postgresql', database_url=url)
    pairs = [('nova_flavor', 'nova_flavor_ranked', 'nova_flavor_packed'),
             ('nova_flavor_ranked', 'nova_flavor_ranked_explain'),
             ('alternative_fpga_ranked', 'alternative_vf_ranked',
              'alternatives_ranked')]
    p50 = {}
    for names in pairs:
        p50.update(timed_in_turns(environment, [named[name] for name in names],
                                  args.repetitions))
    returned, trees, every, walked = check_top(environment,
                                               named['nova_flavor_ranked'])
    separate = p50['alternative_fpga_ranked'] + p50['alternative_vf_ranked']
    rows = [
        ('nova_flavor (unranked, limit=1000)', p50['nova_flavor'], ''),
        ('nova_flavor_ranked (spread:MEMORY_MB)', p50['nova_flavor_ranked'],
         '%.2fx unranked (goal 1.5x); top %d = brute force (%d candidates '
         'sorted), %d trees, %d trees walked'
         % (p50['nova_flavor_ranked'] / p50['nova_flavor'], returned, every,
            trees, walked)),
        ('nova_flavor_packed (pack:MEMORY_MB)', p50['nova_flavor_packed'],
         '%.2fx unranked (goal 1.5x)'
         % (p50['nova_flavor_packed'] / p50['nova_flavor'])),
        ('nova_flavor_ranked_explain', p50['nova_flavor_ranked_explain'],
         '+%.0f%% (goal 15%%)' % (100 * (p50['nova_flavor_ranked_explain']
                                         / p50['nova_flavor_ranked'] - 1))),
        ('alternative_fpga_ranked', p50['alternative_fpga_ranked'], ''),
        ('alternative_vf_ranked', p50['alternative_vf_ranked'], ''),
        ('alternatives_ranked (_ACCEL, else _NET)',
         p50['alternatives_ranked'],
         '%.2fx the two alone added (goal 1.0x)'
         % (p50['alternatives_ranked'] / separate)),
    ]
    print('| query, %d hosts | p50 | |' % args.hosts)
    print('|---|---:|---|')
    for name, seconds, note in rows:
        print('| %s | %.0f ms | %s |' % (name, 1000 * seconds, note))


if __name__ == '__main__':
    main()
