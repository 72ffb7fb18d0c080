"""The cost of a /metrics scrape, in-process.

    python -m tests.bench.scrape --hosts 5000 --repetitions 21

Writes the benchmark's cloud in bulk (tests/bench/builder.py) into a
database of the throwaway PostgreSQL, serves it in this process with
``[metrics] enabled`` in prometheus_client's multiprocess mode (as under
uwsgi), sends every named candidates query of the benchmark once (so that
the request counters hold a realistic number of series), then times
scrapes: the whole answer, and the capacity gauges' statement alone.
Prints a markdown table (docs/benchmark.md shows one).
"""

import argparse
import io
import os
import tempfile
import time

from tests import harness
from tests.bench import builder
from tests.bench import cloud as bench_cloud
from tests.bench import queries as bench_queries

#: The section of docs/benchmark.md (python -m tests.bench writes it after
#: the others): the table this module printed, pasted.
SECTION = """## Scraping /metrics

`python -m tests.bench.scrape --hosts 5000 --repetitions 21` (in-process,
the throwaway PostgreSQL, the benchmark's cloud written in bulk, metrics in
multiprocess mode as under uwsgi, after every named candidates query was
sent once; a shared 2-core machine) times a scrape of `/metrics`
([operations.md](operations.md#metrics)); the goal is 50 ms:

| 5000 hosts (36824 providers) | p50 | max |
|---|---:|---:|
| a whole scrape of /metrics (series: 121) | 25.9 ms | 27.6 ms |
| of which the capacity gauges (one statement) | 23.5 ms | 24.4 ms |

Nearly all of it is the database adding up every inventory and allocation
per class (`db/capacity.py`); the counters, read from the workers' files,
cost about 2 ms.
"""


def _scrape(application):
    environ = {'REQUEST_METHOD': 'GET', 'PATH_INFO': '/metrics',
               'QUERY_STRING': '', 'REMOTE_ADDR': '127.0.0.1',
               'SERVER_NAME': 'localhost', 'SERVER_PORT': '80',
               'SERVER_PROTOCOL': 'HTTP/1.1', 'wsgi.url_scheme': 'http',
               'wsgi.input': io.BytesIO(b''), 'wsgi.errors': io.StringIO()}
    started = time.perf_counter()
    body = b''.join(application(environ, lambda *_args: None))
    return time.perf_counter() - started, body.decode()


def _capacity_seconds(text):
    for line in text.splitlines():
        if line.startswith('placement_capacity_read_seconds '):
            return float(line.split()[1])
    raise AssertionError('no placement_capacity_read_seconds in the scrape')


def main():
    parser = argparse.ArgumentParser(prog='python -m tests.bench.scrape',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=5000)
    parser.add_argument('--repetitions', type=int, default=21)
    args = parser.parse_args()
    # Before anything imports prometheus_client: multiprocess mode.
    os.environ['PROMETHEUS_MULTIPROC_DIR'] = tempfile.mkdtemp(
        prefix='placement-lite-metrics-')
    cloud = bench_cloud.build(args.hosts)
    url, seconds = builder.new_database('scrape_%d_%d' % (
        args.hosts, os.getpid()), cloud)
    print('%d hosts written in %.0f s' % (args.hosts, seconds))
    environment = harness.Environment('postgresql', database_url=url,
                                      **{'metrics.enabled': True})
    for query in bench_queries.named_queries(cloud):
        if query.path.startswith('/allocation_candidates'):
            environment.respond('GET', query.path, version=query.version)
    whole, capacity = [], []
    for _i in range(args.repetitions):
        seconds, text = _scrape(environment.app)
        whole.append(seconds)
        capacity.append(_capacity_seconds(text))
    series = sum(1 for line in text.splitlines()
                 if line and not line.startswith('#'))
    providers = sum(len(level) for level in cloud.levels())
    print('| %d hosts (%d providers) | p50 | max |' % (args.hosts, providers))
    print('|---|---:|---:|')
    print('| a whole scrape of /metrics (series: %d) | %.1f ms | %.1f ms |'
          % (series, 1000 * _p50(whole), 1000 * max(whole)))
    print('| of which the capacity gauges (one statement) | %.1f ms | '
          '%.1f ms |' % (1000 * _p50(capacity), 1000 * max(capacity)))
    environment.close()


def _p50(times):
    ordered = sorted(times)
    return ordered[(len(ordered) - 1) // 2]


if __name__ == '__main__':
    main()
