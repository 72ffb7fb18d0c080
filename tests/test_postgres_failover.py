"""PostgreSQL: the primary dies under load and its replica is promoted.

placement_lite runs under uwsgi (etc/uwsgi.ini, 4 workers) with a
connection naming both servers, as docs/deploying.md tells operators to
(libpq's ``host=a,b`` and ``target_session_attrs=read-write``, through
psycopg2): it connects to whichever of them takes writes. The replica is
synchronous (``synchronous_standby_names``), so a commit is acknowledged
only once the replica has it. While clients write and read, the primary is
killed (an immediate shutdown, as a crash) and, a second later, the
replica is promoted (``pg_ctl promote``, as a failover tool does). Then:

- while there is no primary, requests get a 503 in Placement's format
  (never a 500, never a dropped connection);
- once the replica is promoted, the same uwsgi processes write to it: no
  request answered a second after the promotion fails;
- every acknowledged write is on the new primary, nothing is
  half-written, nothing over-committed.
"""

import time

import pytest

from placement_lite.db import api as db_api
from placement_lite.db import migrate
from tests import claims
from tests import harness
from tests import servers

pytestmark = [pytest.mark.needs('postgresql'), pytest.mark.slow]

BEFORE = 2.0
#: From the crash to the promotion: a failover tool's detection time.
DETECTION = 1.0
AFTER = 4.0


def _multi_host_url(servers_, database):
    """The URL of ``database`` on whichever of ``servers_`` takes writes."""
    hosts = '&'.join('host=127.0.0.1:%d' % server.port for server in servers_)
    return ('postgresql+psycopg2://postgres@/%s?%s'
            '&target_session_attrs=read-write' % (database, hosts))


def test_replica_promoted_under_load_loses_no_acknowledged_write():
    primary = harness.PostgresServer(synchronous_commit=True)
    primary.create_database('placement')
    replica = harness.PostgresServer(primary=primary, synchronous_commit=True)
    primary.wait_for_synchronous_standby()
    url = _multi_host_url([primary, replica], 'placement')
    database = db_api.Database(url)
    migrate.upgrade(database)
    server = servers.Uwsgi(url, processes=4)
    try:
        providers = claims.create_providers(server.port)
        writers, readers = claims.mixed_load(server.port, providers, 60)
        claims.start(writers + readers)
        time.sleep(BEFORE)
        primary.stop('immediate')
        killed_at = time.monotonic()
        time.sleep(DETECTION)
        replica.promote()
        promoted_at = time.monotonic()
        for client in writers + readers:
            client.deadline = promoted_at + AFTER
        claims.finish(writers + readers, AFTER + 60)

        answers = claims.answers(writers + readers)
        unavailable = [answer for answer in answers if answer.status == 503]
        written = [answer.at - promoted_at for answer in answers
                   if answer.at > promoted_at and answer.status == 204]
        print('\n%d requests, statuses %s; %d answered 503; first write '
              'acknowledged %.0f ms after the promotion (%.0f ms after the '
              'primary died)' % (
                  len(answers), sorted({answer.status for answer in answers}),
                  len(unavailable), 1000 * min(written),
                  1000 * (min(written) + promoted_at - killed_at)))
        assert {answer.status for answer in answers} <= {200, 204, 409, 503}
        assert unavailable
        assert {(answer.error['status'], answer.error['title'])
                for answer in unavailable} == {(503, 'Service Unavailable')}
        assert [answer for answer in unavailable
                if answer.at > promoted_at + 1.0] == []
        assert written
        claims.assert_whole(database, writers)
        log = server.log_text()
        assert 'Traceback' not in log
        assert '(HTTP/1.1 500)' not in log
    finally:
        server.cleanup()
        database.dispose()
        replica.destroy()
        primary.destroy()
