"""Ranked candidates (1.42) against unranked ones, in-process.

    python -m tests.bench.ranked --hosts 5000 --repetitions 21

Writes the benchmark's cloud in bulk (tests/bench/builder.py) into a
database of the throwaway PostgreSQL and serves it in this process, as
tests/bench/profile.py does. Each ranked variant is timed in turns with
its unranked twin (one request of each, again and again), warm, and their
p50 compared with issue 49's goal: at most 1.5x the twin. The variants:
nova's flavor request, limit=1000, ranked by spread and by pack on
MEMORY_MB, with explain, preferring a trait half the hosts have, keyed by
a class sharing providers hold too, kept to one host by in_tree, and two
prioritized alternatives (whose twin is the unranked first alternative;
they are also compared with the two asked alone, added).

Then it checks that the answer of each is exactly the head of the same
request without a limit (every tree walked, every candidate generated
and sorted by the key: the brute-force order).
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

`python -m tests.bench.ranked --hosts N` (in-process, the throwaway
PostgreSQL, the benchmark's cloud written in bulk; each group of queries
timed in turns, request by request, warm, 21 repetitions; a 2-core
machine, 2026-11-27 23:05 to 23:33 UTC) times placement_lite's
ranked requests (1.42,
[api-ref/extensions.md](../api-ref/extensions.md#142-ranked-candidates))
against the unranked ones, and checks that the 1,000 candidates of the
ranked request are exactly the first 1,000 of the same request without a
limit (every tree walked, every candidate generated and sorted by the
key). Issue 41's goal: spread and pack at most 1.5x the unranked request
at every size, at most 100 ms at 50,000 hosts.

| query, 1000 hosts | p50 | |
|---|---:|---|
| nova_flavor (unranked, limit=1000) | 32 ms |  |
| nova_flavor_ranked (spread:MEMORY_MB) | 37 ms | 1.16x unranked (goal 1.5x); top 1000 = brute force (3600 candidates sorted), 900 trees, 900 trees walked |
| nova_flavor_packed (pack:MEMORY_MB) | 37 ms | 1.14x unranked (goal 1.5x) |
| nova_flavor_ranked_explain | 72 ms | +94% (goal 15%) |
| alternative_fpga_ranked | 42 ms |  |
| alternative_vf_ranked | 154 ms |  |
| alternatives_ranked (_ACCEL, else _NET) | 116 ms | 0.59x the two alone added (goal 1.0x) |

| query, 5000 hosts | p50 | |
|---|---:|---|
| nova_flavor (unranked, limit=1000) | 37 ms |  |
| nova_flavor_ranked (spread:MEMORY_MB) | 38 ms | 1.03x unranked (goal 1.5x); top 1000 = brute force (18000 candidates sorted), 1000 trees, 1000 trees walked |
| nova_flavor_packed (pack:MEMORY_MB) | 46 ms | 1.25x unranked (goal 1.5x) |
| nova_flavor_ranked_explain | 123 ms | +223% (goal 15%) |
| alternative_fpga_ranked | 110 ms |  |
| alternative_vf_ranked | 68 ms |  |
| alternatives_ranked (_ACCEL, else _NET) | 216 ms | 1.21x the two alone added (goal 1.0x) |

| query, 20000 hosts | p50 | |
|---|---:|---|
| nova_flavor (unranked, limit=1000) | 63 ms |  |
| nova_flavor_ranked (spread:MEMORY_MB) | 59 ms | 0.94x unranked (goal 1.5x); top 1000 = brute force (72000 candidates sorted), 1000 trees, 1000 trees walked |
| nova_flavor_packed (pack:MEMORY_MB) | 87 ms | 1.38x unranked (goal 1.5x) |
| nova_flavor_ranked_explain | 502 ms | +748% (goal 15%) |
| alternative_fpga_ranked | 135 ms |  |
| alternative_vf_ranked | 103 ms |  |
| alternatives_ranked (_ACCEL, else _NET) | 908 ms | 3.81x the two alone added (goal 1.0x) |

| query, 50000 hosts | p50 | |
|---|---:|---|
| nova_flavor (unranked, limit=1000) | 39 ms |  |
| nova_flavor_ranked (spread:MEMORY_MB) | 58 ms | 1.48x unranked (goal 1.5x); top 1000 = brute force (180000 candidates sorted), 1000 trees, 1000 trees walked |
| nova_flavor_packed (pack:MEMORY_MB) | 57 ms | 1.46x unranked (goal 1.5x) |
| nova_flavor_ranked_explain | 1054 ms | +1710% (goal 15%) |
| alternative_fpga_ranked | 127 ms |  |
| alternative_vf_ranked | 82 ms |  |
| alternatives_ranked (_ACCEL, else _NET) | 1712 ms | 8.19x the two alone added (goal 1.0x) |

A request ranked by free amounts only (`rank_by` without preferred
traits or alternatives, no `in_tree`, no sharing provider holding a class
of the key) walks the trees in the order of what they keep free
(db/cloud/orders.py), a window at a time, until `limit` trees gave their
first candidate: 1,000 trees walked of 50,000, whatever the size. The
others still search every tree before walking the best:

- **explain** counts, for every step, what it kept among every tree, so
  a ranked request with explain costs a whole search (1,054 ms at 50,000
  hosts): the 15% goal of issue 31 held when the ranked request searched
  the whole cloud too, and no longer does. Explain is a diagnostic, asked
  by an operator, not by a scheduler.
- **alternatives and preferred traits** put in the key what a candidate
  takes, not only what its tree keeps free; the tree order cannot rank
  them (1.7 s at 50,000 hosts, 8x the two alternatives asked alone, which
  each walk the tree order).
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
    one (every tree searched, every candidate keyed and sorted)."""
    params = [(name, value) for name, value in query.params
              if name not in ('limit', 'explain')]
    limit = int(dict(query.params)['limit'])
    _seconds, raw = _get(environment, query.route + '?' + urllib.parse.urlencode(
        params + [('limit', str(limit)), ('explain', 'true')]), query.version)
    bounded = json.loads(raw)
    _seconds, raw = _get(
        environment, query.route + '?' + urllib.parse.urlencode(params),
        query.version)
    every = json.loads(raw)['allocation_requests']
    returned = bounded['allocation_requests']
    assert len(returned) == min(limit, len(every))
    assert returned == every[:limit], '%s: not the top %d' % (query.name,
                                                               limit)
    ranking = bounded['explain']['ranking']
    trees = {c['tree'] for c in ranking['candidates']}
    return len(returned), len(trees), len(every), ranking['walked']


#: (ranked variant, its unranked twin): issue 49's goal, each variant at
#: most 1.5x its twin, the request with the same limit.
VARIANTS = (('nova_flavor_ranked', 'nova_flavor'),
            ('nova_flavor_packed', 'nova_flavor'),
            ('nova_flavor_ranked_explain', 'nova_flavor_explain'),
            ('nova_flavor_preferred', 'nova_flavor'),
            ('nova_flavor_shared_key', 'nova_flavor'),
            ('nova_flavor_in_tree_ranked', 'nova_flavor_in_tree'),
            ('alternatives_ranked', 'alternative_fpga'))


def main():
    parser = argparse.ArgumentParser(prog='python -m tests.bench.ranked',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=5000)
    parser.add_argument('--repetitions', type=int, default=21)
    args = parser.parse_args()
    cloud = bench_cloud.build(args.hosts)
    named = {query.name: query for query in
             bench_queries.named_queries(cloud)
             + bench_queries.ranked_queries(cloud)}
    url, seconds = builder.new_database('ranked_%d_%d' % (
        args.hosts, os.getpid()), cloud)
    print('%d hosts written in %.0f s' % (args.hosts, seconds))
    app.tune_garbage_collector()
    environment = harness.Environment('postgresql', database_url=url)
    p50 = {}
    for variant, twin in VARIANTS:
        p50.update(timed_in_turns(environment, [named[twin], named[variant]],
                                  args.repetitions))
    p50.update(timed_in_turns(
        environment, [named['alternative_fpga_ranked'],
                      named['alternative_vf_ranked']], args.repetitions))
    print('| query, %d hosts | p50 | unranked twin | p50 | ratio (goal '
          '1.5x) | top = brute force |' % args.hosts)
    print('|---|---:|---|---:|---:|---|')
    for variant, twin in VARIANTS:
        returned, trees, every, walked = check_top(environment,
                                                   named[variant])
        print('| %s | %.0f ms | %s | %.0f ms | %.2fx | top %d of %d '
              'sorted; %d trees, %d walked |' % (
                  variant, 1000 * p50[variant], twin, 1000 * p50[twin],
                  p50[variant] / p50[twin], returned, every, trees, walked))
    separate = p50['alternative_fpga_ranked'] + p50['alternative_vf_ranked']
    print()
    print('alternatives_ranked %.0f ms: %.2fx the two alone added (%.0f and '
          '%.0f ms)' % (1000 * p50['alternatives_ranked'],
                        p50['alternatives_ranked'] / separate,
                        1000 * p50['alternative_fpga_ranked'],
                        1000 * p50['alternative_vf_ranked']))


if __name__ == '__main__':
    main()
