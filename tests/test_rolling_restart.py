"""API hosts restarted and upgraded one at a time under load, on the
documented lines, fail no request (tests/rolling_restart.py has the
fleet, the load and the ways of restarting).

- SIGTERM alone, three rounds over two hosts, behind nginx and behind
  HAProxy: a stopping host drains (placement_lite/drain.py), so nginx
  meets only refused connections, which it sends to the other host, and
  HAProxy's readiness check takes the host out before it stops taking
  connections: HAProxy never has to send a request again.
- The drain done by hand first (the front told, then SIGTERM).
- A rolling upgrade from the previous release (tests/releases.py), this
  release's migration applied while the previous one serves: its hosts do
  not drain, and the fronts send what they reset to the other host.

Every request is counted by outcome, none may fail (no answer, or a 5xx),
and every acknowledged write is in the database, none half-applied.
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


def _assert_no_request_failed(db, fleet, outcome):
    print('\n%s' % rolling_restart.summary(outcome.answers))
    assert rolling_restart.failed(outcome.answers) == []
    rolling_restart.assert_nothing_lost(db, outcome)
    assert fleet.problems_in_logs() == []


def _haproxy_sent_again(fleet):
    """Requests HAProxy sent again (to the same host or another)."""
    return sum(int(row['wretr']) + int(row['wredis'])
               for row in fleet.front.servers().values())


@pytest.mark.parametrize('front', FRONTS)
def test_sigterm_alone_restarts_every_host_three_times(database, front):
    fleet = rolling_restart.Fleet(database.url, front)
    try:
        outcome = rolling_restart.under_load(
            fleet, lambda: fleet.roll('sigterm', rounds=3))
        _assert_no_request_failed(database, fleet, outcome)
        if front == 'haproxy':
            # /healthcheck took each stopping host out during its grace
            # period: nothing reached a host that refused it.
            assert _haproxy_sent_again(fleet) == 0
    finally:
        fleet.close()


@pytest.mark.parametrize('front', FRONTS)
def test_the_documented_drain(database, front):
    fleet = rolling_restart.Fleet(database.url, front)
    try:
        outcome = rolling_restart.under_load(
            fleet, lambda: fleet.roll('drain'))
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
