"""Two API hosts behind nginx, one of them killed under load.

nginx (etc/nginx-placement.conf) runs in front of two uwsgi instances
(``etc/uwsgi.ini:behind-nginx``) on one database. While clients claim,
move and release resources and others read, one instance dies: its master
and workers are killed at once, as when a host fails. Afterwards:

- every read was answered 200: nginx asked the other host;
- a write the dead host was handling may have had no answer (502), or
  been refused when nginx sent it again to the other host, but none is
  half-applied: each consumer holds exactly what one claim asked
  for, every acknowledged claim is there, nothing is over-committed, and
  the usages the API reports are the sums of the allocations;
- the surviving host takes writes.
"""

import time

import pytest

from tests import claims
from tests import harness
from tests import servers

pytestmark = [pytest.mark.slow, pytest.mark.needs('nginx')]

LOAD_SECONDS = 6.0
KILL_AFTER = 2.0


def test_reads_survive_a_dead_host_and_no_write_is_half_applied(backend):
    db = harness.fresh_database(backend)
    hosts = [servers.Uwsgi(db.url, section='behind-nginx', processes=2)
             for _ in range(2)]
    nginx = servers.Nginx([host.port for host in hosts])
    try:
        providers = claims.create_providers(nginx.port)
        writers, readers = claims.mixed_load(nginx.port, providers,
                                             LOAD_SECONDS)
        claims.start(writers + readers)
        time.sleep(KILL_AFTER)
        hosts[0].kill()
        killed_at = time.monotonic()
        claims.finish(writers + readers, LOAD_SECONDS + 60)

        reads = claims.answers(readers)
        writes = claims.answers(writers)
        after_kill = [answer for answer in writes + reads
                      if answer.at > killed_at]
        print('\n[%s] %d reads, %d writes (%d after the kill); write '
              'statuses %s' % (
                  backend, len(reads), len(writes), len(after_kill),
                  sorted({answer.status for answer in writes})))
        assert after_kill
        assert {answer.status for answer in reads} == {200}
        # nginx sends a PUT or DELETE the dead host was handling to the
        # other host; when the dead host had applied it, the second try is
        # refused: 409 (generation) or, for a DELETE, 404.
        assert {answer.status for answer in writes
                if answer.operation != 'delete'} <= {204, 409, 502}
        assert {answer.status for answer in writes
                if answer.operation == 'delete'} <= {204, 404, 502}

        claims.assert_whole(db, writers)
        held = claims.allocations_in_database(db)
        for provider in providers:
            status, usages = servers.request(
                nginx.port, 'GET', '/resource_providers/%s/usages' % provider)
            assert status == 200
            summed = {}
            for allocation in held.values():
                for resource_class, amount in allocation.get(
                        provider, {}).items():
                    summed[resource_class] = summed.get(
                        resource_class, 0) + amount
            assert {rc: used for rc, used in usages['usages'].items()
                    if used} == summed
        # The surviving host takes writes.
        claims.create_providers(nginx.port, count=1, prefix='after')
        assert hosts[1].problems_in_log() == []
    finally:
        nginx.stop()
        for host in hosts:
            host.cleanup()
        db.dispose()
