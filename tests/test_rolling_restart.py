"""API hosts restarted, reloaded and upgraded one at a time under load, on
the documented lines, fail no request (tests/rolling_restart.py has the
fleet, the load and the ways of restarting).

- SIGTERM alone, three rounds over two hosts, behind nginx and behind
  HAProxy: a stopping host drains (placement_lite/drain.py), so nginx
  meets only refused connections, which it sends to the other host, and
  HAProxy's readiness check takes the host out before it stops taking
  connections: HAProxy never has to send a request again. The same, one
  round each, on the ``lazy-apps`` line; with SIGTERM to every process of
  the host at once (systemd's default ``KillMode=control-group``); behind
  nginx, a graceful reload (SIGHUP) instead. Behind nginx these three run
  with nginx sending to another host only what it could not send and
  idempotent requests (``uwsgi_next_upstream error timeout``, nginx's
  default), so that a POST a host accepted and lost fails.
- The drain done by hand first (the front told, then SIGTERM); behind
  nginx, also with nginx sending nothing to another host
  (``uwsgi_next_upstream off``): what nginx's old workers still send the
  host after the reload, the host serves. (SIGTERM alone, with nothing
  sent again, fails by design: nginx, which has no active checks, meets
  a refused connection before it leaves the host out.) And SIGTERM alone
  behind nginx resending that way.
- nginx reloaded twenty times under load, nothing changed, with a
  provider listing of megabytes in flight.
- A rolling upgrade from the previous release (tests/releases.py), this
  release's migration applied while the previous one serves: its hosts do
  not drain, and the fronts send what they reset to the other host.

Every request is counted by outcome: a 2xx, a 409 the load provokes by
design, another 4xx, a 5xx or no answer; none of the last three may
happen. Every write is checked in the database, whatever its answer
(rolling_restart.database_problems), and no host's log, nor nginx's, has
an error.
"""

import pytest

from placement_lite.db import api as db_api
from placement_lite.db import migrate
from tests import harness
from tests import releases
from tests import rolling_restart

pytestmark = [pytest.mark.slow, pytest.mark.needs('postgresql')]

FRONTS = [pytest.param('nginx', marks=pytest.mark.needs('nginx')),
          pytest.param('haproxy', marks=pytest.mark.needs('haproxy'))]


@pytest.fixture
def database():
    db = harness.fresh_database('postgresql')
    yield db
    db.dispose()


@pytest.fixture
def strict_nginx(tmp_path):
    """The nginx file sending to another host only what it could not send
    and idempotent requests: nginx's resending of every write a host
    failed would hide a host that fails it. Ignored behind HAProxy."""
    return rolling_restart.nginx_variant(str(tmp_path), 'idempotent')


def _assert_no_request_failed(db, fleet, outcome):
    print('\n%s' % rolling_restart.summary(outcome))
    assert rolling_restart.failed(outcome.answers) == []
    assert rolling_restart.database_problems(db, outcome) == []
    assert fleet.problems_in_logs() == []


def _haproxy_sent_again(fleet):
    """Requests HAProxy sent again (to the same host or another)."""
    return sum(int(row['wretr']) + int(row['wredis'])
               for row in fleet.front.servers().values())


def _roll(db, front, how, rounds=3, **fleet_options):
    """Every host restarted ``how``, ``rounds`` times, under load: no
    request failed; behind HAProxy, none sent again."""
    fleet = rolling_restart.Fleet(db.url, front, **fleet_options)
    try:
        outcome = rolling_restart.under_load(
            fleet, lambda: fleet.roll(how, rounds))
        _assert_no_request_failed(db, fleet, outcome)
        if front == 'haproxy' and how != 'drain':
            # /healthcheck took each stopping host out during its grace
            # period: nothing reached a host that refused it.
            assert _haproxy_sent_again(fleet) == 0
    finally:
        fleet.close()


@pytest.mark.parametrize('front', FRONTS)
def test_sigterm_alone_restarts_every_host_three_times(database, front):
    _roll(database, front, 'sigterm')


@pytest.mark.parametrize('front', FRONTS)
def test_the_lazy_apps_line(database, front, strict_nginx):
    _roll(database, front, 'sigterm', rounds=1, lazy=True,
          nginx_source=strict_nginx)


@pytest.mark.parametrize('front', FRONTS)
def test_sigterm_to_every_process_of_the_host(database, front, strict_nginx):
    _roll(database, front, 'sigterm-every-process', rounds=1,
          nginx_source=strict_nginx)


@pytest.mark.needs('nginx')
def test_a_graceful_reload_by_sighup(database, strict_nginx):
    # Not on the router's line: uwsgi's reload kills the router first
    # (docs/deploying.md).
    _roll(database, 'nginx', 'sighup', rounds=1, nginx_source=strict_nginx)


@pytest.mark.parametrize('front', FRONTS)
def test_the_documented_drain(database, front):
    _roll(database, front, 'drain', rounds=1)


@pytest.mark.needs('nginx')
def test_the_documented_drain_behind_nginx_sending_nothing_again(
        database, tmp_path):
    _roll(database, 'nginx', 'drain', rounds=1,
          nginx_source=rolling_restart.nginx_variant(
              str(tmp_path), 'no-resending'))


@pytest.mark.needs('nginx')
def test_sigterm_alone_behind_nginx_sending_again_only_what_it_could(
        database, strict_nginx):
    # No POST a host took is sent again: one reset in a host's queue would
    # fail. What a draining host refuses was never sent, and goes to the
    # other host.
    _roll(database, 'nginx', 'sigterm', nginx_source=strict_nginx)


@pytest.mark.needs('nginx')
def test_nginx_reloaded_under_load(database):
    # A listing of about 1.6 MB from the start, which the makers grow.
    rolling_restart.add_providers(database, 2000)
    fleet = rolling_restart.Fleet(database.url, 'nginx')
    try:
        outcome = rolling_restart.under_load(
            fleet, lambda: fleet.reload_nginx(times=20))
        _assert_no_request_failed(database, fleet, outcome)
    finally:
        fleet.close()


@pytest.mark.parametrize('front', FRONTS)
def test_a_rolling_upgrade_from_the_previous_release(tmp_path, front):
    previous = releases.extract(releases.PREVIOUS, str(tmp_path))
    url = harness.empty_database_url('postgresql')
    releases.upgrade_with(previous, url)
    db = db_api.Database(url)
    # The previous release has no /healthcheck: HAProxy checks / until
    # every host runs this one (docs/deploying.md).
    fleet = rolling_restart.Fleet(url, front, tree=previous,
                                  check_path='/')
    try:
        def upgrade():
            migrate.upgrade(db)
            fleet.upgrade()
        outcome = rolling_restart.under_load(fleet, upgrade)
        assert migrate.current_revision(db) == migrate.head_revision()
        _assert_no_request_failed(db, fleet, outcome)
    finally:
        fleet.close()
        db.dispose()
