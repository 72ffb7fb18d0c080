"""Benchmark placement_lite against the reference: allocation candidates,
listings, and the other routes clients read and write; a boot storm and a
region restart.

    python -m tests.bench                      # N=1000 and N=5000, both services
    python -m tests.bench --hosts 1000         # one size
    python -m tests.bench --quick              # smoke run: 40 hosts, 2 repetitions
    python -m tests.bench --only placement_lite --hosts 200
    python -m tests.bench --modes queries --hosts 1000 5000 20000 50000
    python -m tests.bench --modes storm --storm-hosts 1000 50000
    python -m tests.bench --modes storm --storm-variants lite-order \\
        lite-dispersed --storm-dispersion 16 64 256
    python -m tests.bench --modes steady --steady-hosts 1000 20000

For each size it starts a throwaway PostgreSQL (one database per service),
both services under uwsgi with the same settings, loads the same cloud into
both through the API (or, with ``--reference-from-lite``, copies
placement_lite's rows into the reference's database when it is not cached
from an earlier load), then times every named query (``--warmup`` untimed
runs, then ``--repetitions`` timed ones) and prints p50/p95 per service with
the ratio reference/placement_lite, and whether the candidate counts agree;
then rounds of the writes nova's report client sends (``writes``).
Results go to ``reports/bench-<N>.json``. Then (``--modes``) the boot
storm (tests/bench/storm.py, ``reports/storm-<N>.json``) and the region
restart (tests/bench/restart.py, ``reports/restart-<N>.json``) and the
steady load of nova-compute's periodic reads and writes
(tests/bench/steady.py, ``reports/steady-<N>.json``) at their own
sizes. ``docs/benchmark.md`` and the chart beside it
(tests/bench/scaling.py) are regenerated from every full (non
``--quick``) report present.
"""

import argparse
import concurrent.futures
import datetime
import glob
import hashlib
import json
import os
import platform
import signal
import sys
import time

from tests import harness
from tests.bench import builder
from tests.bench import claiming as bench_claiming
from tests.bench import cloud as bench_cloud
from tests.bench import growth as bench_growth
from tests.bench import mixed_fleet as bench_mixed_fleet
from tests.bench import profile as bench_profile
from tests.bench import queries as bench_queries
from tests.bench import ranked as bench_ranked
from tests.bench import restart as bench_restart
from tests.bench import scaling
from tests.bench import scrape as bench_scrape
from tests.bench import services
from tests.bench.services import percentile
from tests.bench import split as bench_split
from tests.bench import steady as bench_steady
from tests.bench import storm as bench_storm
from tests.bench import writes as bench_writes

SERVICES = ('placement_lite', 'reference')
MODES = ('queries', 'storm', 'restart', 'steady')
REPORTS = os.path.join(services.REPO, 'reports')
MARKDOWN = os.path.join(services.REPO, 'docs', 'benchmark.md')


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='python -m tests.bench',
        description=' '.join(__doc__.split('\n')[:2]))
    parser.add_argument('--hosts', type=int, nargs='+', default=[1000, 5000],
                        help='cloud sizes (compute hosts) to run, in turn')
    parser.add_argument('--quick', action='store_true',
                        help='smoke run: 40 hosts, 1 warm-up, 2 repetitions, '
                             '10 s timeout, small storm and restart, no '
                             'docs/benchmark.md update')
    parser.add_argument('--modes', nargs='+', choices=MODES, default=MODES,
                        help='what to run (default: all)')
    parser.add_argument('--storm-hosts', type=int, nargs='+', default=[1000])
    parser.add_argument('--storm-schedulers', type=int, nargs='+',
                        default=[8, 32])
    parser.add_argument('--storm-instances', type=int, default=1000)
    parser.add_argument('--storm-seconds', type=float,
                        help='begin no instance after this many seconds '
                             'of a storm')
    parser.add_argument('--storm-variants', nargs='+',
                        choices=bench_storm.VARIANTS,
                        default=list(bench_storm.VARIANTS),
                        help=bench_storm.VARIANTS_HELP)
    parser.add_argument('--storm-dispersion', type=int, nargs='+',
                        default=[bench_storm.DISPERSION],
                        help=bench_storm.DISPERSION_HELP)
    parser.add_argument('--restart-hosts', type=int, nargs='+',
                        default=[5000])
    parser.add_argument('--restart-clients', type=int, default=64)
    parser.add_argument('--restart-max-hosts', type=int,
                        help='replay this many hosts, spread over the cloud, '
                             'instead of all')
    parser.add_argument('--steady-hosts', type=int, nargs='+',
                        default=[1000, 20000])
    parser.add_argument('--steady-tracked', type=int, default=300,
                        help='hosts whose periodic reads the steady mix '
                             'sends')
    parser.add_argument('--steady-clients', type=int, default=8)
    parser.add_argument('--repetitions', type=int, default=10)
    parser.add_argument('--warmup', type=int, default=2)
    parser.add_argument('--only', choices=SERVICES,
                        help='run one service only')
    parser.add_argument('--queries', nargs='+', metavar='NAME',
                        help='run only these named queries')
    parser.add_argument('--processes', type=int, default=4,
                        help='uwsgi processes per service')
    parser.add_argument('--threads', type=int, default=1,
                        help='uwsgi threads per process')
    parser.add_argument('--load-threads', type=int, default=8,
                        help='parallel loading requests per service')
    parser.add_argument('--timeout', type=float, default=120.0,
                        help='seconds before a request counts as "timeout"')
    parser.add_argument('--query-budget', type=float, default=600.0,
                        help='seconds of requests (warm-up included) per '
                             'query and service after which its remaining '
                             'repetitions are skipped')
    parser.add_argument('--no-cache', action='store_true',
                        help="load the reference through its API even when "
                             "its database is cached in .bench/cache")
    parser.add_argument('--load', choices=('bulk', 'api'), default='bulk',
                        help="bulk (default): write the cloud into "
                             "placement_lite's database "
                             "(tests/bench/builder.py) and give the "
                             "reference a copy of its rows; api: load it "
                             "through each service's API (see --no-cache, "
                             "--reference-from-lite)")
    parser.add_argument('--reference-from-lite', action='store_true',
                        help="when the reference's database is not cached, "
                             "give it a copy of placement_lite's rows once "
                             "placement_lite is loaded (the same schema), "
                             "instead of loading it through its API (about "
                             "1.5 h for 5000 hosts on 2 cores)")
    parser.add_argument('--rewrite-docs', action='store_true',
                        help='only write docs/benchmark.md and its chart '
                             'again from the reports present')
    parser.add_argument('--into-report', action='store_true',
                        help='with --only: put what this run measured of '
                             'the service into the existing report of the '
                             'size, in place of its results there (queries, '
                             'first requests, memory), keeping the other '
                             "service's")
    parser.add_argument('--note', default='',
                        help='a remark on the conditions of this run, kept '
                             'with its results (e.g. a busy machine)')
    parser.add_argument('--ports', type=int, nargs=2,
                        metavar=('LITE', 'REFERENCE'),
                        help='ports on 127.0.0.1 (default: free ones)')
    args = parser.parse_args(argv)
    if args.quick:
        args.hosts = args.storm_hosts = args.restart_hosts = [40]
        args.warmup, args.repetitions, args.timeout = 1, 2, 10.0
        args.storm_schedulers, args.storm_instances = [4], 20
        args.restart_clients = 16
        args.steady_hosts, args.steady_tracked = [40], 20
    return args


def log(message):
    print('[%s] %s' % (time.strftime('%H:%M:%S'), message), flush=True)


def time_query(contestants, args):
    """Warm-up, then timed repetitions, bounded in count and time, of each
    of ``contestants`` ({key: (client, service, query)}): the results by
    key.

    The contestants (the services, and placement_lite answering a query's
    explain variant) take turns request by request, so that whatever else
    the machine is doing slows them alike.
    """
    results = {key: {'status': None, 'count': None, 'samples': []}
               for key in contestants}
    # Seconds each contestant's requests took: one slow service does not
    # cut the other's repetitions.
    spent = dict.fromkeys(contestants, 0.0)
    for run in range(args.warmup + args.repetitions):
        pending = [key for key, result in results.items()
                   if result['status'] in (None, 200)
                   and spent[key] <= args.query_budget]
        if not pending:
            break
        for key in pending:
            client, service, query = contestants[key]
            started = time.monotonic()
            _measure(client, service, query, args, results[key],
                     timed=run >= args.warmup)
            spent[key] += time.monotonic() - started
    for result in results.values():
        if result['samples']:
            result['p50'] = percentile(result['samples'], 0.5)
            result['p95'] = percentile(result['samples'], 0.95)
    return results


def _measure(client, service, query, args, result, timed):
    try:
        status, raw, seconds = client.fetch('GET', query.path,
                                            version=query.version,
                                            timeout=args.timeout)
    except TimeoutError:
        result['status'] = 'timeout'
        # The worker may compute for a long time yet: restart the service
        # so that it does not slow down what is measured next.
        service.restart()
        return
    result['status'] = status
    if status != 200:
        result['error'] = raw.decode(errors='replace')[:500]
        return
    payload = json.loads(raw)
    count = bench_queries.count(payload)
    if result['count'] is None:
        result['count'] = count
        result['hosts'] = bench_queries.hosts(payload)
        result['body'] = raw
    elif count != result['count']:
        result['other_counts'] = sorted(
            set(result.get('other_counts', [])) | {count})
    if timed:
        result['samples'].append(seconds)


def time_writes(clients, cloud, args):
    """Rounds of writes (tests/bench/writes.py), the services taking turns
    round by round: ``--warmup`` untimed, then ``--repetitions`` timed. A
    service that answers a write with an error is not asked again.

    Returns {service: {'status': 200 or the error, 'samples': {step:
    [seconds]}, 'p50': {step: seconds}, 'p95': ...}}."""
    results = {name: {'status': 200, 'samples': {}} for name in clients}
    for number in range(args.warmup + args.repetitions):
        for name, client in clients.items():
            result = results[name]
            if result['status'] != 200:
                continue
            try:
                seconds = bench_writes.Round(client, cloud, number).run()
            except bench_writes.WriteFailed as failed:
                result['status'] = failed.status
                result['error'] = '%s: %s' % (failed.step, failed.body[:500])
                log('%s: %s' % (name, result['error']))
                continue
            if number >= args.warmup:
                for step, taken in seconds.items():
                    result['samples'].setdefault(step, []).append(taken)
    for result in results.values():
        for key, fraction in (('p50', 0.5), ('p95', 0.95)):
            result[key] = {step: percentile(samples, fraction)
                           for step, samples in result['samples'].items()}
    return results


def writes_table(report):
    """The writes' p50/p95 per service and the ratio, by step."""
    timed = report.get('writes') or {}
    if not timed:
        return ''
    lines = ['| write | what it does | placement_lite p50 | p95 '
             '| reference p50 | p95 | ratio (p50) |',
             '|---|---|---:|---:|---:|---:|---:|']
    for step, description in bench_writes.STEPS:
        cells = []
        for name in SERVICES:
            result = timed.get(name)
            for key in ('p50', 'p95'):
                if result is None:
                    cells.append('-')
                elif step in result[key]:
                    cells.append(_ms(result[key][step]))
                else:
                    cells.append(str(result['status']))
        lite, ref = (timed.get(name) for name in SERVICES)
        both = lite and ref and step in lite['p50'] and step in ref['p50']
        lines.append('| %s | %s | %s | %s |' % (
            step, description, ' | '.join(cells),
            '%.1fx' % (ref['p50'][step] / lite['p50'][step]) if both
            else '-'))
    return '\n'.join(lines)


def reference_cache(cloud):
    """Where the reference's database holding ``cloud`` is kept.

    The reference never changes, so once it has been loaded through its API
    its database is dumped and later runs restore it; the name changes with
    the cloud's content (with ``--load api``).
    """
    digest = hashlib.sha1(''.join(services.REFERENCE_PACKAGES).encode())
    digest.update(cloud.fingerprint().encode())
    return os.path.join(services.BENCH_DIR, 'cache', 'reference-%d-%s.dump'
                        % (cloud.hosts, digest.hexdigest()[:12]))


def start_services(cloud, args, names, venv, report):
    """Start the services on fresh databases; returns ``{name: (service,
    database, source)}``: how the database gets its cloud, 'bulk' (written
    by tests/bench/builder.py before the service starts), 'api' (loaded
    through the service's API), 'cache' (restored from the cache, already
    done) or 'copy' (placement_lite's rows, copied once it has them)."""
    hosts = cloud.hosts
    workdir = os.path.join(services.BENCH_DIR, 'run-%d' % hosts)
    settings = {'processes': args.processes, 'threads': args.threads}
    ports = args.ports or [harness._free_port(), harness._free_port()]
    bulk = args.load == 'bulk' and 'placement_lite' in names
    started = {}
    try:
        for name, port in zip(SERVICES, ports):
            if name not in names:
                continue
            database = 'bench_%s_%d_%d' % (name, hosts, os.getpid())
            source = 'api'
            if name == 'placement_lite' and bulk:
                log('writing %d hosts (%d providers, %d consumers) in bulk'
                    % (hosts, len(cloud.providers), len(cloud.consumers)))
                url, seconds = builder.new_database(
                    database, cloud, lambda message: log('builder: '
                                                         + message))
                report['load_seconds']['placement_lite, in bulk'] = round(
                    seconds, 1)
                source = 'bulk'
            else:
                url = harness.create_postgres_database(
                    database, migrated=name == 'placement_lite')
            if name == 'placement_lite':
                service = services.placement_lite(
                    port, url, os.path.join(workdir, name), **settings)
            else:
                cache = reference_cache(cloud)
                if os.path.exists(cache) and not args.no_cache and not bulk:
                    harness.postgres_server().restore(database, cache)
                    log('reference database restored from %s' % cache)
                    source = 'cache'
                elif ((args.reference_from_lite or bulk)
                      and 'placement_lite' in names):
                    source = 'copy'
                service = services.reference(
                    port, url, os.path.join(workdir, name), venv, **settings)
                if bulk:
                    services.copy_to_reference(started['placement_lite'][1],
                                               database)
                    report['reference_rows'] = "a copy of placement_lite's"
            if _loaded_before_start(source, bulk) and source != 'bulk':
                # (The builder vacuums what it writes.)
                harness.postgres_server().vacuum(database)
            service.start()
            started[name] = (service, database, source)
            log('%s on http://127.0.0.1:%d/ (log %s)'
                % (name, port, service.log_path))
    except Exception:
        for service, _database, _loaded in started.values():
            service.stop()
        raise
    return started


def _loaded_before_start(source, bulk):
    """Whether a database from ``source`` (see start_services) has its
    cloud before its service starts: it is then vacuumed and analyzed
    first, as an operator's database is long before a restart, and the
    whole cloud each worker reads at start-up stays as it is (nothing
    commits) until the benchmark writes."""
    return source in ('bulk', 'cache') or source == 'copy' and bulk


def run_size(hosts, args, names, venv):
    cloud = bench_cloud.build(hosts)
    named = bench_queries.named_queries(cloud)
    if args.queries:
        named = [query for query in named if query.name in args.queries]
    report = {'hosts': hosts, 'providers': len(cloud.providers),
              'consumers': len(cloud.consumers), 'load_seconds': {},
              'queries': []}
    started = start_services(cloud, args, names, venv, report)
    running = {name: service for name, (service, _db, _loaded)
               in started.items()}
    try:
        clients = {name: services.HttpClient(service.port)
                   for name, service in running.items()}
        to_load = [name for name, (_service, _db, source) in started.items()
                   if source == 'api']
        log('loading %d hosts (%d providers, %d consumers) into %s'
            % (hosts, len(cloud.providers), len(cloud.consumers),
               ' and '.join(to_load) or 'nothing'))

        def load(name):
            loader = bench_cloud.Loader(clients[name],
                                        threads=args.load_threads)
            seconds = loader.load(
                cloud, progress=lambda message: log('%s: %s' % (name,
                                                                 message)))
            log('%s loaded in %.0f s' % (name, seconds))
            if name == 'reference':
                cache = reference_cache(cloud)
                os.makedirs(os.path.dirname(cache), exist_ok=True)
                harness.postgres_server().dump(started[name][1], cache)
                with open(cache + '.json', 'w') as out:
                    json.dump({'load_seconds': round(seconds, 1)}, out)
            return name, round(seconds, 1)

        if to_load:
            with concurrent.futures.ThreadPoolExecutor(len(to_load)) as pool:
                report['load_seconds'] = dict(pool.map(load, to_load))
        source = started.get('reference', (None, None, None))[2]
        if source == 'cache':
            with open(reference_cache(cloud) + '.json') as cached:
                report['load_seconds']['reference, when cached'] = json.load(
                    cached)['load_seconds']
        elif source == 'copy' and 'reference_rows' not in report:
            log("copying placement_lite's rows into the reference")
            running['reference'].stop()
            services.copy_to_reference(started['placement_lite'][1],
                                       started['reference'][1])
            running['reference'].start()
            report['reference_rows'] = "a copy of placement_lite's"
        bulk = args.load == 'bulk' and 'placement_lite' in started
        loaded = [database for _service, database, source in started.values()
                  if not _loaded_before_start(source, bulk)]
        if loaded:
            log('vacuuming and analyzing the databases loaded')
        for database in loaded:
            harness.postgres_server().vacuum(database)
        names = {query.name for query in named}
        variants = {query.explains: query for query in named
                    if query.explains in names}
        for query in named:
            if query.explains in names:
                continue  # timed in turns with the query it explains
            if query.wide and 'memory' not in report:
                # Before the wide queries: the reference is restarted
                # after each of its timeouts, which empties its workers.
                report['memory'] = _worker_memory(running)
            contestants = {name: (client, running[name], query)
                           for name, client in clients.items()
                           if not query.explains or name == 'placement_lite'}
            variant = variants.get(query.name)
            if variant and 'placement_lite' in clients:
                contestants[variant.name] = (clients['placement_lite'],
                                             running['placement_lite'],
                                             variant)
            timed = time_query(contestants, args)
            measured = [(query, {name: timed[name] for name in clients
                                 if name in timed})]
            if variant and variant.name in timed:
                measured.append((variant,
                                 {'placement_lite': timed[variant.name]}))
            for each, results in measured:
                entry = _entry(each)
                entry.update(results)
                save_if_different(hosts, each, entry, args.quick)
                for name in results:
                    log('%-16s %-14s %s' % (each.name, name,
                                            _summary(entry[name])))
                report['queries'].append(entry)
        report.setdefault('memory', _worker_memory(running))
        report['writes'] = time_writes(clients, cloud, args)
        report['first_requests'] = first_requests(running, clients, named,
                                                  report, args)
    finally:
        for service in running.values():
            service.stop()
    return report


def first_requests(running, clients, named, report, args):
    """{query: {service: seconds, or the status}}: each kind of candidates
    query sent first after its service has restarted, so that a worker
    that has served nothing answers it. A query the reference timed out
    on at this size is not sent to it again ('timeout')."""
    timed_out = {entry['name'] for entry in report['queries']
                 if entry.get('reference', {}).get('status') == 'timeout'}
    results = {}
    for query in named:
        if not query.candidates or query.explains or query.wide:
            continue
        for name, client in clients.items():
            if name == 'reference' and query.name in timed_out:
                result = 'timeout'
            else:
                running[name].restart()
                try:
                    status, _raw, result = client.fetch(
                        'GET', query.path, version=query.version,
                        timeout=args.timeout)
                    if status != 200:
                        result = status
                except TimeoutError:
                    result = 'timeout'
            results.setdefault(query.name, {})[name] = result
            log('%-16s %-14s first request %s' % (
                query.name, name, _ms(result) if isinstance(result, float)
                else result))
    return results


def first_requests_table(report):
    """The first request of each kind after a restart, beside the p50."""
    first = report.get('first_requests') or {}
    if not first:
        return ''
    by_name = {entry['name']: entry for entry in report['queries']}
    lines = ['| query | placement_lite first | p50 | reference first '
             '| p50 |', '|---|---:|---:|---:|---:|']
    for query, results in first.items():
        cells = []
        for name in SERVICES:
            result = results.get(name, '-')
            cells += [_ms(result) if isinstance(result, float) else
                      str(result),
                      _cell(by_name.get(query, {}).get(name), 'p50')]
        lines.append('| %s | %s |' % (query, ' | '.join(cells)))
    return '\n'.join(lines)


def into_report(existing, measured, service):
    """``existing`` (a report) with ``service``'s results of the queries,
    first requests and memory replaced by those of ``measured``, a run of
    that service alone; the run's description noted."""
    by_name = {entry['name']: entry for entry in measured['queries']}
    for entry in existing['queries']:
        if entry['name'] in by_name:
            entry[service] = by_name[entry['name']][service]
    for name, first in measured.get('first_requests', {}).items():
        existing.setdefault('first_requests', {}).setdefault(name, {})[
            service] = first[service]
    existing.setdefault('memory', {})[service] = measured['memory'][service]
    existing['note'] = ' '.join(filter(None, [
        existing.get('note'), "%s's results of %s are those of a run of it "
        'alone (%s, commit %s, load average %.1f before, %.1f after).' % (
            service, ', '.join(sorted(by_name)), measured['date'],
            measured['commit'], *measured['load'])]))
    return existing


def _entry(query):
    """The report entry of ``query``, before its results."""
    entry = {'name': query.name, 'description': query.description,
             'path': query.path, 'version': query.version}
    if query.explains:
        entry['explains'] = query.explains
    return entry


def _worker_memory(running):
    return {name: service.worker_memory() for name, service in running.items()}


def save_if_different(hosts, query, entry, quick):
    """Keep both responses when the candidate counts differ, to compare."""
    bodies = {name: entry[name].pop('body', None) for name in SERVICES
              if name in entry}
    counts = {entry[name]['count'] for name in bodies}
    if len(bodies) < 2 or None in counts or len(counts) == 1:
        return
    for name, body in bodies.items():
        path = os.path.join(REPORTS, 'response-%s%d-%s-%s.json' % (
            'quick-' if quick else '', hosts, query.name, name))
        with open(path, 'wb') as out:
            out.write(body)
        log('%s differs; %s response saved in %s' % (query.name, name, path))


def _summary(result):
    if result['status'] != 200 or not result['samples']:
        return str(result['status'])
    summary = 'p50 %s  p95 %s' % (_ms(result['p50']), _ms(result['p95']))
    if result['count'] is None:
        return summary
    return '%s  (%d results)' % (summary, result['count'])


def _ms(seconds):
    return '%.1f ms' % (seconds * 1000) if seconds < 10 else '%.1f s' % seconds


def _cell(result, key):
    if result is None:
        return '-'
    if result['status'] != 200 or not result['samples']:
        return str(result['status'])
    return _ms(result[key])


def ratio(entry, timeout):
    lite, ref = entry.get('placement_lite'), entry.get('reference')
    if not lite or not ref or lite['status'] != 200:
        return '-'
    if ref['status'] == 'timeout':
        return '> %.0fx' % (timeout / lite['p50'])
    if ref['status'] != 200:
        return '-'
    return '%.1fx' % (ref['p50'] / lite['p50'])


def counts(entry):
    lite, ref = entry.get('placement_lite'), entry.get('reference')
    if not lite or not ref:
        return '-'
    if lite['count'] is None or ref['count'] is None:
        return 'n/a'
    if lite['count'] == ref['count'] and not (
            lite.get('other_counts') or ref.get('other_counts')):
        return 'same (%d)' % lite['count']
    return 'DIFFER: %s vs %s' % (_counts(lite), _counts(ref))


def _counts(result):
    """The count, and any other count a repetition returned."""
    others = result.get('other_counts')
    if not others:
        return str(result['count'])
    return '%d (also %s)' % (result['count'],
                             ', '.join(str(count) for count in others))


def _hosts(entry):
    """Distinct hosts in each service's answer (candidate queries)."""
    found = [entry[name].get('hosts') for name in SERVICES if name in entry]
    if all(hosts is None for hosts in found):
        return '-'
    return ' / '.join('-' if hosts is None else str(hosts) for hosts in found)


def table(report):
    lines = ['| query | placement_lite p50 | p95 | reference p50 | p95 '
             '| ratio (p50) | results | hosts (lite / ref) |',
             '|---|---:|---:|---:|---:|---:|---|---|']
    for entry in report['queries']:
        lite, ref = entry.get('placement_lite'), entry.get('reference')
        lines.append('| %s | %s | %s | %s | %s | %s | %s | %s |' % (
            entry['name'], _cell(lite, 'p50'), _cell(lite, 'p95'),
            _cell(ref, 'p50'), _cell(ref, 'p95'), ratio(entry, report['timeout']),
            counts(entry), _hosts(entry)))
    return '\n'.join(lines)


def explain_overhead(report):
    """What explain=true adds to each query timed with and without it:
    placement_lite's p50 of both, and the difference in percent."""
    by_name = {entry['name']: entry for entry in report['queries']}
    lines = []
    for entry in report['queries']:
        plain = by_name.get(entry.get('explains'))
        if plain is None:
            continue
        with_explain = entry.get('placement_lite')
        without = plain.get('placement_lite')
        if not (_timed(with_explain) and _timed(without)):
            continue
        lines.append('| %s | %s | %s | %+.0f%% |' % (
            plain['name'], _ms(without['p50']), _ms(with_explain['p50']),
            100 * (with_explain['p50'] / without['p50'] - 1)))
    if not lines:
        return ''
    return '\n'.join(['| query | p50 | p50 with explain=true | overhead |',
                      '|---|---:|---:|---:|'] + lines)


def _timed(result):
    return bool(result and result['status'] == 200 and result['samples'])


def memory(report):
    """The workers' resident memory once every query but the wide ones
    has run, per service."""
    parts = []
    for name, workers in sorted(report.get('memory', {}).items()):
        if workers:
            parts.append('%s %d MB in %d workers (largest %d MB)' % (
                name, sum(workers) / 1024, len(workers), max(workers) / 1024))
    if not parts:
        return ''
    return ('Resident memory of the workers, measured before the wide '
            'queries: %s.' % '; '.join(parts))


def describe(report):
    loads = ', '.join('%s s (%s)' % (seconds, name) for name, seconds
                      in report['load_seconds'].items())
    if report.get('reference_rows'):
        loads += "; the reference's rows are %s" % report['reference_rows']
    return ('N=%d compute hosts: %d providers, %d consumers; loaded in '
            '%s. %d warm-up + %d timed requests per query; '
            'uwsgi %d process(es) x %d thread(s) each; PostgreSQL %s; '
            'timeout %.0f s; whole run %.0f min; %s, %s, commit %s.' % (
                report['hosts'], report['providers'], report['consumers'],
                loads,
                report['warmup'], report['repetitions'],
                report['processes'], report['threads'],
                report['postgresql'], report['timeout'],
                report['total_seconds'] / 60, report['machine'],
                report['date'], report['commit'])) + (
                    ' Load average %.1f before, %.1f after.' % tuple(
                        report['load']) if 'load' in report else '')


REGION = (
    'The same cloud at every size, from 1,000 to 50,000 compute hosts '
    '(`--hosts 1000 5000 20000 50000`); a 50,000-host cloud has about '
    '370,000 providers. The chart shows the p50 of each '
    "candidates query against hosts (placement_lite's solid, the "
    "reference's dashed, its timeouts left out) and the largest worker's "
    'resident memory after the queries; the table, where placement_lite '
    "stands against issue 33's goals (candidates queries only: bounded "
    'ones have a limit; the wide trees are bounded). `python -m '
    'tests.bench.profile --hosts 50000 --queries nova_flavor` shows where '
    "a query's time goes (cProfile, its SQL statements, the garbage "
    'collector), in-process on the same cloud; `--claim-between` as in a '
    'storm. The queries are timed on a cloud at rest: nothing commits '
    'while they run, so each worker takes the windows and trees it '
    'searches, the holders of a class and the trees each sharing '
    'provider serves from the whole cloud it read when it started '
    '([architecture](architecture.md#what-a-process-keeps-in-detail)); '
    'the boot storm measures the same engine while claims commit all '
    'the time. Sizes timed minutes apart drift with the machine: how the '
    'unbounded queries grow, every size timed in turns, is in [Growth '
    'without a limit](#growth-without-a-limit).')

QUERIES = (
    'Every query side by side, one panel per cloud size: the p50 of '
    "placement_lite and of the reference (a query the reference did not "
    'answer within the timeout is drawn hatched at the timeout; the '
    "explain variants, placement_lite's alone, are left out).")

#: The page's section on the other benchmark, which this one does not run.
BULK_BODIES = """## Bulk bodies

`python -m tests.bench.bulk_bodies` (`--backend sqlite postgresql`,
`--only NAME...`, `--repetitions N`, `--profile NAME`) times the largest
body `[api] max_request_body_size` admits (1 MiB) for each route that
takes a bulk body and each kind of answer it can give: inventories,
`POST /allocations`, `PUT /allocations/{consumer_uuid}`, the reshaper,
provider traits and aggregates, refused (schema errors in every entry,
unknown names, over capacity, in use, stale generations, NUL characters,
deep nesting) or accepted (tens of thousands of rows written). The bodies
and the world they are sent to (42,000 custom classes, 78,000 custom
traits, 16,000 providers) are `tests/bulk_bodies.py`, whose answers
`tests/test_bulk_bodies.py` checks. The application runs in-process, on
SQLite or the harness's throwaway PostgreSQL, with the garbage
collector set as a served process sets it; each body is sent
`--repetitions` times (3 by default) and the table gives the fastest and
median wall time of the request alone, and the least CPU time the
process spent on it (on SQLite all of the work, so the difference from
the wall time is what the machine gave to other processes). The latest
numbers are in [bulk-bodies.md](bulk-bodies.md)."""


def _reports(mode):
    """The full reports of a mode ('bench', 'storm', 'restart'), by
    hosts."""
    reports = []
    for path in glob.glob(os.path.join(REPORTS, '%s-[0-9]*.json' % mode)):
        with open(path) as source:
            reports.append(json.load(source))
    return sorted(reports, key=lambda report: report['hosts'])


def write_markdown():
    reports = _reports('bench')
    if not reports:
        return
    parts = [
        '# Benchmark: allocation candidates, listings and other routes',
        '',
        'This page is written by `python -m tests.bench` (`tox -e bench -- '
        '--hosts 1000 5000`; `--quick` for a smoke run, `--help` for the '
        'options). It creates a virtual environment with '
        'openstack-placement 16.0.0 under `.bench/` (once), starts a '
        'throwaway PostgreSQL and both services under uwsgi with the same '
        'settings, gives both the same cloud (`tests/bench/cloud.py`: '
        'written into placement_lite\'s database by `tests/bench/builder.py`, '
        'the rows the API would leave, and copied into the reference\'s, '
        'the schemas being the same; with `--load api` loaded through each '
        'API), vacuums and analyzes both databases (`vacuumdb --analyze`: '
        'a database in service has statistics and a visibility map, and '
        'autovacuum then stays out of the measurements; before the '
        'services start, or once loaded through the API), '
        'then times the named queries '
        '(`tests/bench/queries.py`), the services taking turns request by '
        'request.',
        '',
        'Times are client-side wall times of the request (`GET '
        '/allocation_candidates`, `GET /resource_providers` for the '
        '`rp_` listings, the route named for the other reads) on '
        '127.0.0.1; ratio is reference p50 / placement_lite p50 ("> Nx" when '
        'the reference timed out); "results" compares the number of '
        'allocation requests (providers, inventories, traits, ...) each '
        'service returned (when they '
        'differ, both responses are kept in `reports/`); "hosts" is the '
        'number of distinct trees the candidates take resources from, '
        'sharing providers left out: what a scheduler, which weighs hosts, '
        'gets to choose from.',
        '',
        '| query | what it asks |', '|---|---|']
    for entry in reports[-1]['queries']:
        parts.append('| %s | %s |' % (entry['name'], entry['description']))
    chart = os.path.join(os.path.dirname(MARKDOWN), scaling.CHART)
    scaling.chart(reports, chart)
    log('wrote %s' % chart)
    queries_chart = os.path.join(os.path.dirname(MARKDOWN),
                                 scaling.QUERIES_CHART)
    scaling.queries_chart(reports, queries_chart)
    log('wrote %s' % queries_chart)
    parts += ['', '## Region scale', '', REGION, '',
              '![p50 and memory against hosts](%s)' % scaling.CHART, '',
              scaling.goals_table(reports), '', QUERIES, '',
              '![p50 of each query per cloud size, placement_lite against '
              'the reference](%s)' % scaling.QUERIES_CHART]
    for report in reports:
        parts += ['', '## %d compute hosts' % report['hosts'], '',
                  describe(report), '']
        if memory(report):
            parts += [memory(report), '']
        if report.get('note'):
            parts += [report['note'], '']
        parts.append(table(report))
        if explain_overhead(report):
            parts += ['', 'Explain (placement_lite\'s 1.41): each '
                      '`<query>_explain` is that query with `explain=true`, '
                      'placement_lite answering both in turns, request by '
                      'request.', '', explain_overhead(report)]
        if first_requests_table(report):
            parts += ['', 'The first request after a restart: each service '
                      'restarted (every worker loaded, none has served a '
                      'request) before each kind of candidates query, '
                      'beside that query\'s p50 above.', '',
                      first_requests_table(report)]
        if writes_table(report):
            parts += ['', 'Writes (`tests/bench/writes.py`): rounds of what '
                      "nova's report client writes, on a host running "
                      'instances, the services taking turns round by round '
                      '(%d warm-up + %d timed rounds).' % (
                          report['warmup'], report['repetitions']),
                      '', writes_table(report)]
    for module, mode in ((bench_storm, 'storm'), (bench_restart, 'restart')):
        if _reports(mode):
            parts += ['', module.markdown(_reports(mode))]
    if _reports('steady'):
        parts += ['', bench_steady.section(_reports('steady'))]
    parts += ['', bench_claiming.SECTION, bench_mixed_fleet.SECTION,
              bench_ranked.SECTION, bench_split.SECTION,
              bench_growth.SECTION,
              bench_profile.SECTION,
              bench_scrape.SECTION, BULK_BODIES]
    os.makedirs(os.path.dirname(MARKDOWN), exist_ok=True)
    with open(MARKDOWN, 'w') as out:
        out.write('\n'.join(parts) + '\n')
    log('wrote %s' % MARKDOWN)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.rewrite_docs:
        write_markdown()
        return
    # Stopped with SIGTERM, still stop the services and PostgreSQL.
    signal.signal(signal.SIGTERM, lambda *_args: sys.exit(143))
    names = [args.only] if args.only else list(SERVICES)
    venv = services.reference_venv(log) if 'reference' in names else None
    server = harness.postgres_server()
    with server.admin_engine().connect() as connection:
        postgresql = connection.exec_driver_sql(
            'SHOW server_version').scalar()
    os.makedirs(REPORTS, exist_ok=True)
    for hosts in args.hosts if 'queries' in args.modes else []:
        started = time.monotonic()
        load = os.getloadavg()[0]
        report = run_size(hosts, args, names, venv)
        report.update({
            'load': [load, os.getloadavg()[0]],
            'quick': args.quick, 'note': args.note, 'warmup': args.warmup,
            'repetitions': args.repetitions, 'processes': args.processes,
            'threads': args.threads, 'timeout': args.timeout,
            'postgresql': postgresql, 'commit': services.commit(),
            'machine': '%s, %d cores' % (platform.machine(), os.cpu_count()),
            'date': datetime.datetime.now(datetime.timezone.utc).strftime(
                '%Y-%m-%d %H:%M UTC'),
            'total_seconds': round(time.monotonic() - started, 1)})
        name = 'bench-quick-%d.json' if args.quick else 'bench-%d.json'
        path = os.path.join(REPORTS, name % hosts)
        if args.only and args.into_report and os.path.exists(path):
            with open(path) as source:
                report = into_report(json.load(source), report, args.only)
        with open(path, 'w') as out:
            json.dump(report, out, indent=2)
        print()
        print(describe(report))
        print(memory(report))
        print(table(report))
        print(explain_overhead(report))
        print(writes_table(report))
        print(first_requests_table(report))
        print()
        log('N=%d took %.0f s; wrote %s' % (hosts, report['total_seconds'],
                                            path))
    for hosts in args.storm_hosts if 'storm' in args.modes else []:
        bench_storm.run(hosts, args.storm_schedulers, args.storm_instances,
                        bench_storm.variants(args.storm_variants,
                                             args.storm_dispersion,
                                             args.only),
                        venv, args.quick, args.storm_seconds, log)
    for hosts in args.restart_hosts if 'restart' in args.modes else []:
        bench_restart.run(hosts, args.restart_clients,
                          min(8, args.restart_clients),
                          args.restart_max_hosts, names, venv, args.quick, log)
    for hosts in args.steady_hosts if 'steady' in args.modes else []:
        report = bench_steady.run(
            hosts, args.steady_tracked, args.steady_clients, args.processes,
            repeat=1 if args.quick else 3, minimum=200 if args.quick
            else 2000, venv=venv or services.reference_venv(log), log=log,
            quick=args.quick)
        print(bench_steady.markdown(report))
    if not args.quick:
        write_markdown()


if __name__ == '__main__':
    main()
