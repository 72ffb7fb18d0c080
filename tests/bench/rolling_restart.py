"""Rolling restarts under load, placement_lite beside the reference.

    python -m tests.bench.rolling_restart                    # everything
    python -m tests.bench.rolling_restart --runs 5 --services placement_lite
    python -m tests.bench.rolling_restart --fronts nginx --ways sigterm

Each run is tests/rolling_restart.py's: two API hosts (2 uwsgi processes
each) on one new PostgreSQL database, behind a front, twelve clients at
1.39, every host restarted three times in turn (``--rounds``), a host
stopped only once the one restarted before answers again. Fronts:

- ``nginx``: etc/nginx-placement.conf in front of ``etc/uwsgi.ini:
  behind-nginx``;
- ``nginx-previous``: the same hosts behind the previous release's
  etc/nginx-placement.conf (tests/releases.py), as operators ran it;
- ``haproxy``: etc/haproxy-placement.cfg in front of the uwsgi router
  (``etc/uwsgi.ini``), checking /healthcheck (the reference has none: /).

The reference (openstack-placement 16.0.0, its own venv, tests/bench/
services.py) is served by the same lines, but for placement_lite's drain
(the hooks that hand the stop signals to it: the reference's workers
would never stop) and its module. Ways: ``sigterm`` (SIGTERM alone) and
``drain`` (the front told first, as docs/deploying.md says).

Reported per service, front and way: the runs' failed requests (no
answer, or a 5xx) and requests, and whether every acknowledged write was
found in the database. Results go to reports/rolling-restart.json.
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
FRONTS = ('nginx', 'nginx-previous', 'haproxy')
WAYS = ('sigterm', 'drain')
REPORTS = os.path.join(services.REPO, 'reports')


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


def one_run(service, front, way, rounds, venv, workdir):
    """{'requests', 'failed', statuses..., 'whole': bool} of one run."""
    url = new_database(service, venv, workdir)
    source = servers.NGINX_CONF
    if front == 'nginx-previous':
        source = previous_nginx_file(workdir)
    fleet = rolling_restart.Fleet(
        url, 'haproxy' if front == 'haproxy' else 'nginx',
        settings=(reference_settings(venv) if service == 'reference'
                  else None),
        check_path='/' if service == 'reference' else None,
        nginx_source=source)
    db = db_api.Database(url)
    try:
        outcome = rolling_restart.under_load(
            fleet, lambda: fleet.roll(way, rounds))
        result = rolling_restart.summary(outcome.answers)
        try:
            rolling_restart.assert_nothing_lost(db, outcome)
            result['whole'] = True
        except AssertionError as exc:
            result['whole'] = False
            result['lost'] = str(exc).splitlines()[0][:120]
        return result
    finally:
        fleet.close()
        db.dispose()


def table(results):
    """Markdown rows: service, front, way, failed of requests per run (by
    status), what the database checks found."""
    lines = ['| service | front | way | failed of requests, each run '
             '| every acknowledged write there, none over capacity |',
             '|---|---|---|---|---|']
    for (service, front, way), runs in results.items():
        lines.append('| %s | %s | %s | %s | %s |' % (
            service, front, way, ', '.join(_failed(run) for run in runs),
            '; '.join('yes' if run['whole'] else run['lost']
                      for run in runs)))
    return '\n'.join(lines)


def _failed(run):
    """'n of m' and the statuses of the n, for one run."""
    statuses = ', '.join('%s x %s' % (count, status)
                         for status, count in run.items()
                         if status == 'none' or status.startswith('5'))
    return '%d of %d%s' % (run['failed'], run['requests'],
                          ' (%s)' % statuses if statuses else '')


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m tests.bench.rolling_restart')
    parser.add_argument('--services', nargs='+', choices=SERVICES,
                        default=list(SERVICES))
    parser.add_argument('--fronts', nargs='+', choices=FRONTS,
                        default=list(FRONTS))
    parser.add_argument('--ways', nargs='+', choices=WAYS,
                        default=list(WAYS))
    parser.add_argument('--runs', type=int, default=2)
    parser.add_argument('--rounds', type=int, default=3)
    args = parser.parse_args(argv)
    venv = services.reference_venv() if 'reference' in args.services \
        else None
    workdir = tempfile.mkdtemp(prefix='placement-lite-rolling-')
    results = {}
    for service in args.services:
        for front in args.fronts:
            for way in args.ways:
                runs = results.setdefault((service, front, way), [])
                for run in range(args.runs):
                    runs.append(one_run(service, front, way, args.rounds,
                                        venv, workdir))
                    print(service, front, way, run, runs[-1], flush=True)
    print(table(results))
    os.makedirs(REPORTS, exist_ok=True)
    with open(os.path.join(REPORTS, 'rolling-restart.json'), 'w') as out:
        json.dump({'at': datetime.datetime.now(datetime.timezone.utc)
                   .isoformat(timespec='minutes'),
                   'rounds': args.rounds,
                   'results': [dict(service=service, front=front, way=way,
                                    runs=runs)
                               for (service, front, way), runs
                               in results.items()]}, out, indent=1)


if __name__ == '__main__':
    main()
