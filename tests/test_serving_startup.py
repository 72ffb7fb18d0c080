"""The production line (etc/uwsgi.ini) starting on a fresh database.

uwsgi builds the application in its master and forks the workers from it
(its default, like ``gunicorn --preload``), or builds it in every worker
(``lazy-apps``). Either way each worker must use database connections of
its own, and start-up work (the schema with ``sync_on_startup``, the
standard resource classes and traits) must be safe when many processes, on
several hosts, do it at once on one database.
"""

import os
import subprocess
import time

import os_resource_classes
import os_traits
import pytest

from placement_lite.db import api as db_api
from placement_lite.db import migrate
from tests import claims
from tests import harness
from tests import servers

#: Run on MariaDB too (see tests/conftest.py).
pytestmark = [pytest.mark.mysql, pytest.mark.slow]

WRITERS = 32
LOAD_SECONDS = 4.0


def _sync_with_the_cli(server):
    """``placement-lite db sync`` with the server's placement.conf, as the
    README tells operators to run it."""
    subprocess.run(
        [os.path.join(servers.BIN, 'placement-lite'), 'db', 'sync'],
        check=True, capture_output=True, cwd=servers.REPO,
        env=dict(os.environ, OS_PLACEMENT_CONFIG_DIR=server.workdir))


@pytest.mark.parametrize('lazy', [False, True], ids=['pre-forked', 'lazy'])
def test_every_worker_serves_concurrent_writers(backend, lazy):
    url = harness.empty_database_url(backend)
    server = servers.Uwsgi(url, processes=4, lazy=lazy, start=False)
    database = db_api.Database(url)
    try:
        _sync_with_the_cli(server)
        server.start()
        providers = claims.create_providers(server.port)
        deadline = time.monotonic() + LOAD_SECONDS
        clients = [claims.Client(server.port, providers, seed, deadline)
                   for seed in range(WRITERS)]
        elapsed = claims.run(clients, LOAD_SECONDS + 60)

        answered = [answer.status for answer in claims.answers(clients)]
        print('\n[%s, %s] %d writers, %.1fs: %d requests, %d answered 204, '
              '%d answered 409, workers answering: %d of %d'
              % (backend, 'lazy' if lazy else 'pre-forked', WRITERS, elapsed,
                 len(answered), answered.count(204), answered.count(409),
                 len(server.answering_pids()), len(server.worker_pids())))
        assert set(answered) <= {204, 409}
        assert answered.count(204) > 0
        claims.assert_exact(database, server.port, providers, clients)
        assert server.answering_pids() == server.worker_pids()
        assert len(server.worker_pids()) == 4
        assert server.problems_in_log() == []
    finally:
        database.dispose()
        server.cleanup()


def test_hosts_starting_together_on_an_empty_database(backend):
    """Three API hosts, two lazy workers each, start at once on a database
    with no schema and ``sync_on_startup``: six processes migrate it and
    add the standard names at the same moment."""
    url = harness.empty_database_url(backend)
    hosts = [servers.Uwsgi(url, processes=2, lazy=True, start=False,
                           extra_conf='sync_on_startup = true\n')
             for _ in range(3)]
    try:
        for host in hosts:
            host.launch()
        for host in hosts:
            host.wait_ready()
        for host in hosts:
            status, classes = servers.request(host.port, 'GET',
                                              '/resource_classes')
            assert status == 200
            assert [rc['name'] for rc in classes['resource_classes']] == list(
                os_resource_classes.STANDARDS)
            status, traits = servers.request(host.port, 'GET', '/traits')
            assert status == 200
            assert sorted(traits['traits']) == sorted(os_traits.get_traits())
            assert host.problems_in_log() == []
        database = db_api.Database(url)
        try:
            assert migrate.current_revision(database) == (
                migrate.head_revision())
        finally:
            database.dispose()
    finally:
        for host in hosts:
            host.cleanup()
