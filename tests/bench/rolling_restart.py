"""Rolling restarts under load, placement_lite beside the reference.

    python -m tests.bench.rolling_restart                    # the table
    python -m tests.bench.rolling_restart --runs 5 --services placement_lite
    python -m tests.bench.rolling_restart --fronts nginx --ways sigterm

Each run is tests/rolling_restart.py's: two API hosts (2 uwsgi processes
each) on one new PostgreSQL database, behind a front, twelve clients at
1.39 keeping their connections open, every host restarted three times in
turn (``--rounds``), a host stopped only once the one restarted before
answers again. Fronts:

- ``nginx``: etc/nginx-placement.conf in front of ``etc/uwsgi.ini:
  behind-nginx``;
- ``nginx-no-resending``: the same file, but sending no request to
  another host (``uwsgi_next_upstream off``);
- ``nginx-idempotent``: the same file, but sending to another host only
  what it could not send and idempotent requests (``uwsgi_next_upstream
  error timeout``, nginx's default: not a POST it had sent);
- ``nginx-buffered``: the same file, but buffering the hosts' answers
  (``uwsgi_buffering on``, as shipped before);
- ``nginx-previous``: the same hosts behind the previous release's
  etc/nginx-placement.conf (tests/releases.py), as operators ran it;
- ``haproxy``: etc/haproxy-placement.cfg in front of the uwsgi router
  (``etc/uwsgi.ini``), checking /healthcheck (the reference has none: /).

Ways: those of rolling_restart.WAYS, and ``nginx-reloads`` (nginx fronts
only): no host restarted, nginx reloaded twenty times, with 2,000
providers listed from the start (a listing of megabytes in flight).
``--lazy`` serves the ``lazy-apps`` line instead of the pre-forked one.

The reference (openstack-placement 16.0.0, its own venv, tests/bench/
services.py) is served by the same lines, but for placement_lite's drain
(the hooks that hand the stop signals to it: the reference's workers
would never stop) and its module.

Reported per service, front and way: each run's requests by outcome
(rolling_restart.OUTCOMES; a failure is another 4xx, a 5xx or no
answer), the requests the clients sent again after their kept connection
was found closed, and what the database check found of every write
(rolling_restart.database_problems). Results go to
reports/rolling-restart.json (``--report``).
"""

import argparse
import datetime
import json
import os
import subprocess
import tempfile

from placement_lite.db import api as db_api
from tests import harness
from tests import releases
from tests import rolling_restart
from tests import servers
from tests.bench import services

SERVICES = ('placement_lite', 'reference')
FRONTS = ('nginx', 'nginx-no-resending', 'nginx-idempotent', 'nginx-buffered',
          'nginx-previous', 'haproxy')
WAYS = rolling_restart.WAYS + ('nginx-reloads',)
REPORTS = os.path.join(services.REPO, 'reports')
#: Providers listed from the start in an ``nginx-reloads`` run.
LISTED = 2000


def previous_nginx_file(directory):
    """The previous release's etc/nginx-placement.conf, in ``directory``."""
    text = subprocess.run(
        ['git', '-C', services.REPO, 'show',
         '%s:etc/nginx-placement.conf' % releases.PREVIOUS.commit],
        capture_output=True, text=True, check=True).stdout
    path = os.path.join(directory, 'nginx-placement-previous.conf')
    with open(path, 'w') as handle:
        handle.write(text)
    return path


def _variant(which):
    return lambda directory: rolling_restart.nginx_variant(directory, which)


NGINX_FILES = {'nginx': lambda _directory: servers.NGINX_CONF,
               'nginx-no-resending': _variant('no-resending'),
               'nginx-idempotent': _variant('idempotent'),
               'nginx-buffered': _variant('buffered'),
               'nginx-previous': previous_nginx_file}


def reference_settings(venv):
    """etc/uwsgi.ini's options changed to serve the reference."""
    return {'placement': {'module': 'placement.wsgi.api:application',
                          'home': venv, 'hook-accepting': None,
                          'enable-threads': None}}


def new_database(service, venv, workdir):
    """A new database's URL, its schema made by ``service``."""
    if service == 'placement_lite':
        return harness.create_postgres_database(
            'rolling_%d_%d' % (os.getpid(), next(_numbers)), migrated=True)
    url = harness.create_postgres_database(
        'rolling_ref_%d_%d' % (os.getpid(), next(_numbers)))
    # A directory of its own: the reference reads every *.conf of it.
    services.reference(0, url, tempfile.mkdtemp(dir=workdir), venv)
    return url


def _counter():
    number = 0
    while True:
        number += 1
        yield number


_numbers = _counter()


def one_run(service, front, way, rounds, lazy, venv, workdir):
    """rolling_restart.summary() of one run, with 'database': the
    problems the database check found (none: [])."""
    url = new_database(service, venv, workdir)
    db = db_api.Database(url)
    if way == 'nginx-reloads':
        rolling_restart.add_providers(db, LISTED)
    fleet = rolling_restart.Fleet(
        url, 'haproxy' if front == 'haproxy' else 'nginx',
        settings=(reference_settings(venv) if service == 'reference'
                  else None),
        check_path='/' if service == 'reference' else None,
        nginx_source=NGINX_FILES.get(front, NGINX_FILES['nginx'])(workdir),
        lazy=lazy)
    try:
        if way == 'nginx-reloads':
            def action():
                fleet.reload_nginx(times=20)
        else:
            def action():
                fleet.roll(way, rounds)
        outcome = rolling_restart.under_load(fleet, action)
        result = rolling_restart.summary(outcome)
        result['database'] = rolling_restart.database_problems(db, outcome)
        result['logs'] = fleet.problems_in_logs()[:20]
        return result
    finally:
        fleet.close()
        db.dispose()


def table(results):
    """Markdown rows: service, front, way, each run's failed of requests
    (what failed), the requests sent again on a new connection, what the
    database check found."""
    lines = ['| service | front | way | failed of requests, each run '
             '| sent again after a closed keep-alive connection '
             '| the database check |',
             '|---|---|---|---|---|---|']
    for (service, front, way), runs in results.items():
        lines.append('| %s | %s | %s | %s | %s | %s |' % (
            service, front, way, '; '.join(map(_failed, runs)),
            ', '.join(str(run['resent']) for run in runs),
            '; '.join(_database(run) for run in runs)))
    return '\n'.join(lines)


def _failed(run):
    """'n of m' and what the n were, for one run."""
    what = ', '.join('%d x %s' % (count, failure)
                     for failure, count in run['failures'].items())
    return '%d of %d%s' % (run['failed'], run['requests'],
                          ' (%s)' % what if what else '')


def _database(run):
    if not run['database']:
        return 'every write as answered'
    return '%d problems: %s' % (len(run['database']), run['database'][0])


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m tests.bench.rolling_restart')
    parser.add_argument('--services', nargs='+', choices=SERVICES,
                        default=list(SERVICES))
    parser.add_argument('--fronts', nargs='+', choices=FRONTS,
                        default=['nginx', 'haproxy'])
    parser.add_argument('--ways', nargs='+', choices=WAYS,
                        default=['sigterm', 'drain'])
    parser.add_argument('--lazy', action='store_true',
                        help='the lazy-apps line')
    parser.add_argument('--runs', type=int, default=2)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--report', default='rolling-restart.json',
                        help='its file name under reports/')
    args = parser.parse_args(argv)
    venv = services.reference_venv() if 'reference' in args.services \
        else None
    workdir = tempfile.mkdtemp(prefix='placement-lite-rolling-')
    results = {}
    for service in args.services:
        for front in args.fronts:
            for way in args.ways:
                if way == 'nginx-reloads' and front == 'haproxy':
                    continue
                runs = results.setdefault((service, front, way), [])
                for run in range(args.runs):
                    runs.append(one_run(service, front, way, args.rounds,
                                        args.lazy, venv, workdir))
                    print(service, front, way, run, runs[-1], flush=True)
    print(table(results))
    os.makedirs(REPORTS, exist_ok=True)
    with open(os.path.join(REPORTS, args.report), 'w') as out:
        json.dump({'at': datetime.datetime.now(datetime.timezone.utc)
                   .isoformat(timespec='minutes'),
                   'rounds': args.rounds, 'lazy': args.lazy,
                   'results': [dict(service=service, front=front, way=way,
                                    runs=runs)
                               for (service, front, way), runs
                               in results.items()]}, out, indent=1)


if __name__ == '__main__':
    main()
