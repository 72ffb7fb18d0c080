"""Which MySQL/MariaDB errors say the database is unavailable (503, and a
retry at start-up) and which say the request or the code is wrong (500).

PyMySQL raises OperationalError for connection failures and also for every
server error it does not map, so placement_lite tells them apart by number.
"""

import pymysql
import pytest
import sqlalchemy as sa

from placement_lite.db import api as db_api
from placement_lite.db import locks
from placement_lite.db import tables


def _wrapped(error_class, code, message='x'):
    orig = error_class(code, message)
    return sa.exc.DBAPIError.instance('SELECT 1', {}, orig,
                                      pymysql.err.Error)


@pytest.mark.parametrize('code', [
    2003,  # cannot connect (server down)
    2006,  # server has gone away
    2013,  # lost connection during query
    1040,  # too many connections
    1053,  # server shutdown in progress
    1213,  # deadlock
    1927,  # connection killed
])
def test_connection_and_server_state_errors_are_unavailable(code):
    assert db_api.is_unavailable(
        _wrapped(pymysql.err.OperationalError, code))


@pytest.mark.parametrize('error_class, code', [
    (pymysql.err.OperationalError, 1366),  # incorrect string value
    (pymysql.err.OperationalError, 1054),  # unknown column, say
    (pymysql.err.ProgrammingError, 1064),  # syntax error
    (pymysql.err.IntegrityError, 1062),  # duplicate entry
])
def test_errors_of_the_request_or_the_code_are_not(error_class, code):
    assert not db_api.is_unavailable(_wrapped(error_class, code))


def test_is_mysql_error_matches_numbers_only_of_mysql_errors():
    deadlock = _wrapped(pymysql.err.OperationalError, 1213)
    assert db_api.is_mysql_error(deadlock, 1213, 1062)
    assert not db_api.is_mysql_error(deadlock, 1062)
    assert not db_api.is_mysql_error(ValueError(1213), 1213)


def test_a_wait_for_rows_ended_as_a_deadlock_is_over(tmp_path, monkeypatch):
    """On a Galera node, the statement waiting for a row another node's
    transaction held is ended with 1213 once that transaction's write is
    applied (seen under load: a claim answered 503). The rows are free:
    the write runs again, once, and succeeds."""
    database = db_api.Database('sqlite:///%s' % (tmp_path / 'db.sqlite'))
    attempts = []
    waited = []

    def work(conn):
        attempts.append(conn)
        if len(attempts) == 1:
            raise locks.Busy(tables.resource_providers.c.id, [1])
        return 'written'

    def ended_as_a_deadlock(engine, busy):
        waited.append(busy.values)
        raise _wrapped(pymysql.err.OperationalError, 1213,
                       'Deadlock found when trying to get lock')

    monkeypatch.setattr(locks, 'wait_until_free', ended_as_a_deadlock)
    try:
        assert database.write(work) == 'written'
    finally:
        database.dispose()
    assert (len(attempts), waited) == (2, [[1]])
