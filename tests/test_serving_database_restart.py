"""PostgreSQL (or MariaDB) restarted under load: the service recovers by
itself.

placement_lite runs under uwsgi (etc/uwsgi.ini, 4 workers) on a PostgreSQL
(or MariaDB) server of its own. While clients write and read, the server is stopped as
an operator's restart does (fast shutdown: sessions are ended) and started
again a few seconds later. Then:

- every request got an answer: 2xx, 409, or, while the database was away,
  a 503 in Placement's error format with its request id (never a 500,
  never a dropped connection);
- once the database is back, the same uwsgi processes serve again: no
  request sent a second after it is back fails;
- nothing is half-written and nothing is over-committed.
"""

import time

import pytest

from placement_lite.db import api as db_api
from placement_lite.db import migrate
from tests import claims
from tests import harness
from tests import servers

BEFORE = 2.0
DOWN = 2.0
AFTER = 4.0

#: Database servers, which restart (an SQLite file does not).
SERVERS = {'postgresql': harness.PostgresServer,
           'mysql': harness.MariaDBServer}
pytestmark = [pytest.mark.mysql, pytest.mark.only_backends(*SERVERS),
              pytest.mark.slow]


def test_service_recovers_from_a_database_restart(backend):
    db_server = SERVERS[backend]()
    url = db_server.create_database('placement')
    database = db_api.Database(url)
    migrate.upgrade(database)
    server = servers.Uwsgi(url, processes=4)
    try:
        providers = claims.create_providers(server.port)
        writers, readers = claims.mixed_load(server.port, providers,
                                             BEFORE + DOWN + AFTER)
        claims.start(writers + readers)
        time.sleep(BEFORE)
        db_server.stop('fast')
        time.sleep(DOWN)
        db_server.start()
        back_at = time.monotonic()
        for client in writers + readers:  # however long the restart took
            client.deadline = back_at + AFTER
        claims.finish(writers + readers, AFTER + 60)

        answers = claims.answers(writers + readers)
        unavailable = [answer for answer in answers if answer.status == 503]
        served_again = [answer.at - back_at for answer in answers
                        if answer.at > back_at and answer.status in (200, 204)]
        print('\n%d requests, statuses %s; %d answered 503; first success '
              '%.0f ms after the database was back' % (
                  len(answers), sorted({answer.status for answer in answers}),
                  len(unavailable), 1000 * min(served_again)))
        assert {answer.status for answer in answers} <= {200, 204, 409, 503}
        assert unavailable
        for answer in unavailable:
            assert answer.error['status'] == 503
            assert answer.error['title'] == 'Service Unavailable'
            assert answer.error['request_id'].startswith('req-')
        assert not [answer for answer in answers
                    if answer.at > back_at + 1.0 and answer.status == 503]
        assert served_again

        claims.assert_whole(database, writers)
        log = server.log_text()
        assert 'Traceback' not in log
        assert '(HTTP/1.1 500)' not in log
    finally:
        server.cleanup()
        database.dispose()
        db_server.destroy()


def test_service_started_while_the_database_is_down_waits_for_it(backend):
    """uwsgi started while the database is down: the application tries
    again every retry_interval (here 1 s) instead of failing to load, and
    serves once the database is up, without a restart."""
    db_server = SERVERS[backend]()
    url = db_server.create_database('placement')
    database = db_api.Database(url)
    migrate.upgrade(database)
    database.dispose()
    db_server.stop('fast')
    server = servers.Uwsgi(
        url, processes=2, start=False,
        extra_conf='max_retries = 30\nretry_interval = 1\n')
    retrying = ('The placement database is unavailable (OperationalError); '
                'retry 1 of 30 in 1 s.')
    try:
        server.launch()
        # The database comes back only once the application has found it
        # down (however long a loaded machine takes to get there).
        assert harness.wait_for(lambda: retrying in server.log_text(),
                                timeout=120)
        db_server.start()
        server.wait_ready()

        status, body = servers.request(server.port, 'GET',
                                       '/resource_providers')
        assert (status, body) == (200, {'resource_providers': []})
    finally:
        server.stop()
        db_server.destroy()


def test_service_gives_up_after_max_retries(backend):
    """With max_retries = 0 a database that is down at start-up fails the
    application at once, as before: uwsgi (need-app) exits."""
    db_server = SERVERS[backend]()
    url = db_server.create_database('placement')
    db_server.stop('fast')
    server = servers.Uwsgi(url, processes=1, start=False,
                           extra_conf='max_retries = 0\n')
    try:
        server.launch()
        assert server.process.wait(60) != 0
        assert 'The placement database is unavailable' not in (
            server.log_text())
    finally:
        server.stop()
        db_server.destroy()
